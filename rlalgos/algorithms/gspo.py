"""GSPO, Group Sequence Policy Optimization (Zheng et al. 2025, Qwen, arXiv:2507.18071).

The diff from GRPO (``grpo.py``):

* **one importance ratio per answer**: the reward and the advantage belong to
  the whole answer, so the ratio does too. ``s_i = (pi(y_i) / pi_old(y_i)) ** (1/|y_i|)
  = exp(mean_t (log pi - log pi_old))``, normalised by length so that long and
  short answers live on one scale. Every token of the answer takes ``s_i``
  (:func:`rlalgos.core.sequence_ratio`) instead of its own noisy token ratio;
* **the clip keeps or drops whole answers**: ``max(-A_i s_i, -A_i clip(s_i, 1 - 3e-4,
  1 + 4e-4))``, averaged over answers. The range is ~1000x narrower than GRPO's
  0.2 because a mean log-ratio moves far less than a single token's;
* **defaults** from the paper and TRL's GSPO recipe: no KL, per-answer
  aggregation, 4 minibatches per rollout.

Like any clip it acts only once the policy moves inside a rollout: on the first
minibatch ``s_i = 1`` and the gradient is GRPO's (``seq-mean-token-mean``); the
later three are off-policy. TRL: ``GRPOConfig(importance_sampling_level="sequence")``;
verl: ``policy_loss.loss_mode=gspo``. Hyperparameters: :class:`rlalgos.config.GSPOConfig`.
"""

from __future__ import annotations

import torch

from ..config import GSPOConfig
from .base import Advantages
from .grpo import GRPO


class GSPO(GRPO):
    Config = GSPOConfig

    def policy_loss(self, out: dict, adv: Advantages, old_logp: torch.Tensor):
        """GRPO's clipped surrogate on each answer's sequence ratio ``s_i`` instead of the token ratios."""
        return super().policy_loss(out, adv, old_logp, ratio_level="sequence")
