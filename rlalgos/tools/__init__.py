"""Tools around the loop: the command line (:mod:`.cli`), export of a run's
settings to TRL and verl (:mod:`.export`), sweeps of many runs (:mod:`.sweep`) and
``rlalgos diagnose``, the run doctor on a finished run, TRL or verl logs (:mod:`.diagnose`)."""
