"""The engine: what runs under the loop without changing its numbers.

Several processes (:mod:`.distributed`) and the whole-batch statistics they need
(:mod:`.batch`), forward passes with chunked logits (:mod:`.forward`), length
buckets (:mod:`.buckets`), the sampler (:mod:`.sampler`), LoRA (:mod:`.lora`),
device and precision (:mod:`.precision`), run folders and checkpoints
(:mod:`.runs`) and experiment trackers (:mod:`.trackers`). A learner can read
the algorithms without opening this folder.
"""
