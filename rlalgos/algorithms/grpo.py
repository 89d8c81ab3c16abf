"""Vanilla GRPO (DeepSeekMath): PPO's clipped ratio, but no critic.

The diff from PPO (``ppo.py``):

* advantage: no value model and no GAE. Sample G answers per prompt and use
  ``A_i = (r_i - mean_group) / (std_group + eps)`` for every token of answer i;
* KL: the k3 estimate of KL(pi || pi_ref) is a term of the loss (beta ~0.04),
  not a penalty folded into the per-token reward;
* aggregation: per answer (mean over its tokens), then over answers.

With ``epochs = 1`` (mu = 1, the default here) the ratio is exactly 1 and the
clip never fires; raise ``epochs`` (mu > 1) to see it act. Because the group
advantages sum to zero and the ratio is 1, the policy-gradient loss is ~0 at
every step: that is expected, not a bug.

Two one-line variants users ask for are registered from the same code:
``drgrpo`` (no std division, ``seq-mean-token-sum-norm``) and ``rloo``
(leave-one-out baseline, no std division).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import core
from ..rollout import Rollout
from .base import AlgoConfig
from .reinforce import Reinforce


@dataclass
class GRPOConfig(AlgoConfig):
    """Group-relative advantages, clipped ratio, k3 KL in the loss."""

    lr: float = 1e-4
    """AdamW learning rate of the policy."""
    clip_low: float = 0.2
    """Lower clip: the ratio is clipped at 1 - clip_low where A < 0."""
    clip_high: float = 0.2
    """Upper clip: the ratio is clipped at 1 + clip_high where A > 0 (symmetric in vanilla GRPO)."""
    kl_coef: float = 0.04
    """beta: weight of the k3 KL-to-reference term in the loss (0 = no reference needed)."""
    kl_estimator: str = "k3"
    """KL estimate used in the loss: k1, k2 or k3."""
    baseline: str = "group_mean"
    """``group_mean`` (GRPO) or ``leave_one_out`` (RLOO)."""
    adv_scale: str = "std"
    """``std``: divide by the group's unbiased std + eps (GRPO); ``none``: only centre (Dr. GRPO, RLOO)."""
    adv_eps: float = 1e-6
    """eps added to the group std (outside the square root), as in verl."""
    loss_agg: str = "seq-mean-token-mean"
    """Per answer then over answers (GRPO); ``token-mean`` (DAPO); ``seq-mean-token-sum-norm`` (Dr. GRPO)."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        if not (0 < self.clip_low < 1) or not (self.clip_high > 0):
            raise ValueError(f"clip_low must be in (0, 1) and clip_high > 0; got {self.clip_low} and {self.clip_high}")
        if self.baseline not in ("group_mean", "leave_one_out"):
            raise ValueError(f"unknown baseline {self.baseline!r}; use group_mean or leave_one_out")
        if self.adv_scale not in ("std", "none"):
            raise ValueError(f"unknown adv_scale {self.adv_scale!r}; use std or none")
        if self.kl_estimator not in ("k1", "k2", "k3"):
            raise ValueError(f"unknown kl_estimator {self.kl_estimator!r}; use k1, k2 or k3")


class GRPO(Reinforce):
    name = "grpo"
    Config = GRPOConfig
    min_group_size = 2

    def advantages(self, ro: Rollout) -> torch.Tensor:
        r = ro.rewards  # (N,)
        if self.cfg.baseline == "leave_one_out":
            adv = r - core.leave_one_out_baseline(r, ro.group_size)
            if self.cfg.adv_scale == "std":
                adv = adv / (r.view(-1, ro.group_size).std(1, keepdim=True).expand(-1, ro.group_size).reshape(-1) + self.cfg.adv_eps)
        else:
            adv = core.group_advantages(r, ro.group_size, self.cfg.adv_scale, self.cfg.adv_eps)
        return adv.unsqueeze(-1)  # (N, 1): one advantage per answer, shared by its tokens

    def kl_coef_now(self) -> float:
        """beta for this step (constant here; DAPO can schedule it)."""
        return self.cfg.kl_coef

    def loss(self, mb: Rollout, out: dict, adv: torch.Tensor, old_logp: torch.Tensor):
        logp, mask = out["logprobs"], self.loss_mask(mb)  # (N, T)
        pg, m = core.policy_loss(logp, old_logp, adv, mask, self.cfg.clip_low, self.cfg.clip_high, self.cfg.loss_agg, self.max_len)
        loss, beta = pg, self.kl_coef_now()
        if beta > 0:  # k3 KL to the reference, inside the loss
            kl = core.kl_estimate(logp, mb.ref_logprobs, self.cfg.kl_estimator)  # (N, T)
            kl_loss = core.aggregate_loss(kl, mask, self.cfg.loss_agg, self.max_len)
            loss = loss + beta * kl_loss
            m["kl_loss"] = kl_loss.item()
        m["pg_loss"], m["kl_coef"] = pg.item(), beta
        return loss, m


@dataclass
class DrGRPOConfig(GRPOConfig):
    """Dr. GRPO: GRPO without the std division and with a constant length normaliser."""

    adv_scale: str = "none"
    """Only centre the group rewards (no std division: no up-weighting of easy/hard prompts)."""
    loss_agg: str = "seq-mean-token-sum-norm"
    """sum(l * m) / (B * L_max): no length bias either way."""


class DrGRPO(GRPO):
    name = "drgrpo"
    Config = DrGRPOConfig


@dataclass
class RLOOConfig(GRPOConfig):
    """RLOO: the baseline of each answer is the mean reward of the other G-1."""

    baseline: str = "leave_one_out"
    """Leave-one-out baseline."""
    adv_scale: str = "none"
    """No std division."""
    loss_agg: str = "token-mean"
    """Every token weighs the same."""
    kl_coef: float = 0.0
    """No KL term by default."""


class RLOO(GRPO):
    name = "rloo"
    Config = RLOOConfig
