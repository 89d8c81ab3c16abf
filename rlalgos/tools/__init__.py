"""Tools around the loop: the command line (:mod:`.cli`), export of a run's
settings to TRL and verl (:mod:`.export`) and sweeps of many runs (:mod:`.sweep`)."""
