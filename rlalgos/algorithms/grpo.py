"""Vanilla GRPO (DeepSeekMath): PPO's clipped ratio, but no critic.

The diff from PPO (``ppo.py``; the class shares PPO's :class:`~rlalgos.algorithms.ppo.Clipped`
objective, not its critic):

* **no critic**: no value model, no GAE. Sample G answers per prompt; the
  other answers are the baseline: ``A_i = (r_i - mean_group) / (std_group + eps)``,
  one advantage per answer shared by all its tokens;
* **KL in the loss**: the k3 estimate of KL(pi || pi_ref) is a term of the
  loss (beta ~0.04), no longer a penalty folded into the reward;
* **aggregation**: per answer (mean over its tokens), then over answers.

With ``epochs = 1`` and ``minibatches = 1`` (the defaults here) the ratio is
exactly 1 and the clip never fires; raise either to see it act. Because the
group advantages sum to zero and the ratio is 1, the policy-gradient loss is ~0
at every step: that is expected, not a bug.

``drgrpo`` is this file with two defaults changed (no std division, a constant
length normaliser), ``dualclip`` with ``clip_c = 3`` (dual-clip PPO), and
``clipcov``, ``klcov``, ``cispo``, ``sapo`` with ``loss_mode`` clip_cov, kl_cov, cispo, sapo:
see ``rlalgos.config.ALGORITHMS``.
Hyperparameters: :class:`rlalgos.config.GRPOConfig`.
"""

from __future__ import annotations

import torch

from .. import core
from ..config import GRPOConfig
from ..record import Rollout
from .base import Advantages
from .ppo import Clipped


class GRPO(Clipped):
    Config = GRPOConfig

    def advantages(self, ro: Rollout) -> Advantages:
        adv = core.group_advantages(ro.rewards, ro.group_size, self.cfg.adv_scale, self.cfg.adv_eps)  # (N,)
        return Advantages(
            adv.unsqueeze(-1), ro.completion_mask
        )  # (N, 1): one advantage per answer, shared by its tokens

    def kl_coef_now(self) -> float:
        """beta for this step (constant here; DAPO can schedule it)."""
        return self.cfg.kl_coef

    def loss(self, mb: Rollout, out: dict, adv: Advantages, old_logp: torch.Tensor):
        pg, m = self.policy_loss(out, adv, old_logp)
        loss, beta = pg, self.kl_coef_now()
        if beta > 0:  # k3 KL to the reference, inside the loss
            kl = core.kl_estimate(out["logprobs"], mb.ref_logprobs, self.cfg.kl_estimator)  # (N, T)
            kl_loss = core.aggregate_loss(kl, adv.mask, self.cfg.loss_agg, self.max_len)
            loss = loss + beta * kl_loss
            m["kl_loss"] = kl_loss.item()
        m["pg_loss"], m["kl_coef"] = pg.item(), beta
        return loss, m
