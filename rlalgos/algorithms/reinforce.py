"""REINFORCE: the simplest policy gradient, and the base the others are diffs of.

    grad J = E[ (r(x, y) - b) * grad log pi(y | x) ]

Every token of an answer gets the same weight: the answer's reward minus a
baseline ``b``. The baseline does not change the expected gradient (because
``E[grad log pi] = 0``) but it can cut its variance a lot. One update per batch of
fresh samples (on-policy), so the importance ratio is exactly 1 and the logged
loss is not a measure of progress: watch reward and accuracy instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import core
from ..rollout import Rollout, batched_logprobs
from .base import AlgoConfig, Algorithm

BASELINES = ("none", "batch", "rloo")


@dataclass
class ReinforceConfig(AlgoConfig):
    """REINFORCE with an optional baseline and an optional KL penalty in the reward."""

    baseline: str = "rloo"
    """``none`` (r), ``batch`` (r - mean of the batch) or ``rloo`` (r - mean of the other answers to the same prompt)."""
    kl_coef: float = 0.0
    """beta in ``r - beta * sum_t KL_t``: a per-answer KL penalty to the reference, taken off the reward."""
    kl_estimator: str = "k1"
    """Which per-token KL estimate the penalty sums: k1 (log-ratio, classic RLHF), k2 or k3."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        if self.baseline not in BASELINES:
            raise ValueError(f"unknown baseline {self.baseline!r}; use one of {', '.join(BASELINES)}")
        if self.baseline == "rloo" and group_size < 2:
            raise ValueError("baseline 'rloo' needs group_size >= 2; raise group_size or use baseline 'batch'")
        if self.kl_estimator not in ("k1", "k2", "k3"):
            raise ValueError(f"unknown kl_estimator {self.kl_estimator!r}; use k1, k2 or k3")


class Reinforce(Algorithm):
    name = "reinforce"
    Config = ReinforceConfig

    def shaped_rewards(self, ro: Rollout) -> torch.Tensor:
        """Sequence rewards minus the KL penalty (when ``kl_coef`` > 0). Returns (N,)."""
        r = ro.rewards
        if self.cfg.kl_coef > 0:
            # the sampling policy's log-probs: the rollout's, or one no-grad pass now
            logp = ro.old_logprobs if ro.old_logprobs is not None else batched_logprobs(self.policy, ro)
            kl = core.kl_estimate(logp, ro.ref_logprobs, self.cfg.kl_estimator)  # (N, T)
            r = r - self.cfg.kl_coef * core.masked_sum(kl, ro.completion_mask, dim=-1)
        return r

    def advantages(self, ro: Rollout) -> torch.Tensor:
        r = self.shaped_rewards(ro)  # (N,)
        if self.cfg.baseline == "batch":
            r = r - r.mean()
        elif self.cfg.baseline == "rloo":
            r = r - core.leave_one_out_baseline(r, ro.group_size)
        return r.unsqueeze(-1)  # (N, 1): the same advantage for every token of an answer

    def loss(self, mb: Rollout, out: dict, adv: torch.Tensor, old_logp: torch.Tensor):
        # no clipping: -A * ratio, whose gradient at ratio = 1 is -A * grad log pi
        loss, m = core.policy_loss(out["logprobs"], old_logp, adv, mb.completion_mask, clip_low=None, clip_high=None, agg=self.cfg.loss_agg, max_len=self.max_len)
        m["pg_loss"] = loss.item()
        return loss, m
