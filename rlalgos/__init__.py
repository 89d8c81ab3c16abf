"""rlalgos: reinforcement learning for LLM reasoning, by running it.

REINFORCE, PPO with a critic, vanilla GRPO and improved GRPO (DAPO) share one
rollout record (:mod:`rlalgos.rollout`), one reward interface (:mod:`rlalgos.tasks`)
and one training loop (:mod:`rlalgos.train`). The maths lives in :mod:`rlalgos.core`.
"""

from transformers.utils import logging as _hf_logging

# weight loading/saving bars of a 3 MB model are noise next to the training bar
_hf_logging.disable_progress_bar()

__version__ = "0.1.0"
