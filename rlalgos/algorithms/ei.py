"""Expert iteration (rejection-sampling fine-tuning): keep the right answers, fine-tune on them.

STaR (Zelikman et al. 2022, arXiv:2203.14465) and RAFT (Dong et al. 2023,
arXiv:2304.06767): sample G answers per prompt, keep those whose reward reaches
``keep_threshold`` (on the 0/1 task: the right ones), maximise their log-likelihood.
It is REINFORCE with a 0/1 reward, no baseline and no negatives; the diff from
``reinforce.py``:

* **the reward is 0/1**: 1 for a kept answer, 0 for the rest (``keep="best"``: only
  the answers with the group's highest reward, RAFT's best-of-G);
* **no baseline, no negatives**: the rest leave the loss mask, so a wrong answer is
  never pushed down and a group with no kept answer adds nothing;
* **SFT's normalisation**: with ``token-mean`` the loss divides by the kept answers'
  tokens, not all tokens, so its gradient is SFT's mean NLL over the kept answers
  and the step does not shrink with the share kept.

An optional KL penalty is REINFORCE's, taken off each kept answer's weight of 1.
Xiong et al. 2025 (arXiv:2504.11343) find it close to GRPO early, with entropy
collapsing faster: the negatives GRPO keeps help it explore. The logged ``pg_loss``
is -1 whenever an answer is kept (the ratio is 1): its gradient, not its value, is
the NLL's; watch ``ei_kept_frac`` and ``ei_empty_groups`` (prompts with no kept answer).
Hyperparameters: :class:`rlalgos.config.EIConfig`.
"""

from __future__ import annotations

import torch

from ..config import EIConfig
from ..engine import batch
from ..record import Rollout
from .base import Advantages
from .reinforce import Reinforce


class ExpertIteration(Reinforce):
    Config = EIConfig

    def advantages(self, ro: Rollout) -> Advantages:
        kept = self.kept(ro)  # (N,) 1.0 kept, 0.0 not
        adv = super().advantages(
            ro.with_rewards(kept)
        )  # REINFORCE on the 0/1 reward, no baseline: 1 (- the KL penalty)
        empty = kept.view(-1, ro.group_size).sum(-1) == 0  # (N / G,) prompts with no kept answer
        metrics = {"ei_kept_frac": batch.mean(kept), "ei_empty_groups": float(batch.total(int(empty.sum())))}
        return Advantages(
            adv.values * kept.unsqueeze(-1), adv.mask * kept.unsqueeze(-1), metrics=metrics
        )  # the rest: out of the loss

    def kept(self, ro: Rollout) -> torch.Tensor:
        """(N,) 1.0 for the answers trained on: reward >= keep_threshold (and, for ``best``, the group's highest)."""
        r = ro.rewards  # (N,)
        keep = r >= self.cfg.keep_threshold
        if self.cfg.keep == "best":
            keep &= r == r.view(-1, ro.group_size).amax(-1).repeat_interleave(ro.group_size)
        return keep.to(r.dtype)
