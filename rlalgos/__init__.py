"""rlalgos: reinforcement learning for LLM reasoning, by running it.

REINFORCE, PPO with a critic, vanilla GRPO and improved GRPO (DAPO) share one
rollout record (:mod:`rlalgos.record`, filled by :mod:`rlalgos.rollout`), one
reward interface (:mod:`rlalgos.tasks`) and one training loop
(:mod:`rlalgos.train`). The maths lives in :mod:`rlalgos.core`, every knob in
:mod:`rlalgos.config`. Importing the package imports neither torch nor
transformers; the modules that need them do.
"""

__version__ = "0.1.0"
