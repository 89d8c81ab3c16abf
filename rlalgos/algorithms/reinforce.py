"""REINFORCE: the simplest policy gradient, and the base the others are diffs of.

    grad J = E[ (r(x, y) - b) * grad log pi(y | x) ]

Every token of an answer gets the same weight: the answer's reward minus a
baseline ``b``. The baseline does not change the expected gradient (because
``E[grad log pi] = 0``) but it can cut its variance a lot; the leave-one-out
baseline (the mean reward of the *other* answers to the same prompt) is RLOO.
One update per batch of fresh samples (on-policy), so the importance ratio is
exactly 1 and the logged loss is not a measure of progress: watch reward and
accuracy instead. Hyperparameters: :class:`rlalgos.config.ReinforceConfig`.
"""

from __future__ import annotations

import torch

from .. import core
from ..config import ReinforceConfig
from ..engine import batch
from ..losses.clip import clipped_token_loss
from ..record import Rollout
from .base import Advantages, Algorithm


class Reinforce(Algorithm):
    Config = ReinforceConfig

    def advantages(self, ro: Rollout) -> Advantages:
        r = ro.rewards  # (N,)
        if self.cfg.kl_coef > 0:  # KL penalty in the reward: r - beta * sum_t KL_t
            kl = core.kl_estimate(self.sampling_logprobs(ro), ro.ref_logprobs, self.cfg.kl_estimator)  # (N, T)
            r = r - self.cfg.kl_coef * core.masked_sum(kl, ro.completion_mask, dim=-1)
        r = r - batch.baseline(r, ro.group_size, self.cfg.baseline)  # (N,) batch_mean: the mean of the whole batch
        return Advantages(
            r.unsqueeze(-1), ro.completion_mask
        )  # (N, 1): the same advantage for every token of an answer

    def loss(self, mb: Rollout, out: dict, adv: Advantages, old_logp: torch.Tensor):
        # no clipping: -A * ratio, whose gradient at ratio = 1 is -A * grad log pi
        loss_mat, m = clipped_token_loss(
            out["logprobs"], old_logp, adv.values, adv.mask, clip_low=None, clip_high=None
        )  # (n, T)
        loss = self.aggregate(loss_mat, adv)
        m["pg_loss"] = loss.item()
        return loss, m
