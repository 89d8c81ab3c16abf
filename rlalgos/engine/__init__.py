"""The engine: what runs under the loop without changing its numbers.

Several processes (:mod:`.distributed`) and the whole-batch statistics they need
(:mod:`.batch`), forward passes with chunked logits (:mod:`.forward`), length
buckets (:mod:`.buckets`), the sampler (:mod:`.sampler`), LoRA (:mod:`.lora`),
device and precision (:mod:`.precision`), a run's settings for all of these
(:mod:`.settings`), run folders and checkpoints (:mod:`.runs`, :mod:`.resume`),
experiment trackers (:mod:`.trackers`) and the run doctor that reads each step's
metrics (:mod:`.doctor`, while training :mod:`.watch`). A learner can read
the algorithms without opening this folder.
"""
