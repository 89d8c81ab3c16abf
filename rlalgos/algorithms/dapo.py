"""Improved GRPO (the DAPO family of fixes): every trick is its own switch.

The diff from vanilla GRPO (``grpo.py``), each aimed at one link of the chain
group sampling -> reward -> advantage -> update:

* **dynamic sampling** (sampling): a group whose answers all got the same reward
  has zero advantage everywhere and teaches nothing. Drop it and sample more
  prompts until the batch is full, with a bounded number of extra rounds;
  ``downweight`` keeps such groups but shrinks their share of the loss;
* **overlong shaping** (reward): a soft length penalty in the last
  ``overlong_buffer`` tokens before the limit, and/or truncated answers masked
  out of the loss (a cut-off answer is not necessarily a wrong one);
* **clip-higher** (update): ``1 - 0.2 .. 1 + 0.28``, so unlikely tokens that
  turn out good can grow faster than likely ones shrink: slower entropy collapse
  (a config default only: the clipped loss is PPO's);
* **token-level loss** (update): ``token-mean``, every token weighs the same,
  so long answers are not diluted (also a config default);
* **KL** (constraint): off by default, with an optional stage schedule;
* **entropy monitor**: when entropy falls below a threshold, add an entropy
  bonus or raise the sampling temperature, and log that it fired.

Hyperparameters: :class:`rlalgos.config.DAPOConfig`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from .. import core
from ..config import DAPOConfig, parse_stages
from ..engine import batch
from ..engine.settings import EngineSettings
from ..record import Rollout
from .base import Advantages
from .grpo import GRPO


class DAPO(GRPO):
    Config = DAPOConfig

    def __init__(self, policy, cfg: DAPOConfig, max_new_tokens: int = 0, engine: EngineSettings | None = None):
        super().__init__(policy, cfg, max_new_tokens, engine)
        self.stages = parse_stages(cfg.kl_stages)
        self.entropy_firing = False  # the monitor fired at the last step: the bonus is on for this one
        self.temperature: float | None = None  # None: the run's temperature, until the monitor raises it

    # ---- KL schedule -------------------------------------------------------- #

    def kl_coef_now(self) -> float:
        coef = self.cfg.kl_coef
        for step, c in self.stages:
            if self.step_count >= step:
                coef = c
        return coef

    @property
    def needs_ref(self) -> bool:
        return self.cfg.kl_coef > 0 or any(c > 0 for _, c in self.stages)

    # ---- dynamic sampling ---------------------------------------------------- #

    def collect(self, sample, num_prompts):
        """Drop the groups whose rewards are all equal and sample more until the batch is
        full again, at most ``max_resample_rounds`` extra rounds. Every count is over the
        whole batch (``batch.groups``): with several processes they take the same decisions."""
        mode = self.cfg.dynamic_sampling
        first = sample(num_prompts, temperature=self.temperature)
        G = first.group_size
        if mode in ("off", "downweight"):
            return first, {"sampling_temperature": first.temperature}
        target = batch.total(num_prompts)  # groups wanted in the whole batch
        seen, kept, extra_rounds = [first], [self._informative(first)], 0
        n_kept = batch.groups(kept)
        while mode == "resample" and n_kept < target and extra_rounds < self.cfg.max_resample_rounds:
            keep_rate = max(n_kept / batch.groups(seen), 0.1)  # share of sampled groups that carried signal
            ro = sample(
                min(num_prompts, math.ceil(batch.share((target - n_kept) / keep_rate))), temperature=self.temperature
            )
            seen.append(ro)
            kept.append(self._informative(ro))
            n_kept = batch.groups(kept)
            extra_rounds += 1
        sampled = batch.groups(seen)
        info = batch.rollout_stats(Rollout.concat(seen))  # what the policy did on everything it sampled
        info.update(
            {
                "ds_sampled_groups": sampled,
                "ds_dropped_frac": 1.0 - n_kept / sampled,
                "ds_extra_rounds": extra_rounds,
                "ds_batch_groups": min(n_kept, target),
                "ds_short": float(n_kept < target),
                "sampling_temperature": first.temperature,
            }
        )
        if n_kept == 0:  # every group degenerate: nothing to learn from, train on the plain batch
            info["ds_batch_groups"] = target
            return first, info
        mine = batch.allocate(
            sum(len(k) // G for k in kept), num_prompts
        )  # this process's groups of the batch (all of them in one process)
        kept_groups = Rollout.concat([k for k in kept if len(k)] or [first])
        return kept_groups.select(torch.arange(mine * G)), info

    @staticmethod
    def _informative(ro: Rollout) -> Rollout:
        """The groups whose rewards are not all equal."""
        keep = (ro.group_std() > 0).repeat_interleave(ro.group_size)  # (N,)
        return ro.select(torch.nonzero(keep).flatten())

    # ---- reward shaping and the loss mask ------------------------------------ #

    def advantages(self, ro: Rollout) -> Advantages:
        weight = torch.ones(
            len(ro), dtype=ro.completion_mask.dtype, device=ro.rewards.device
        )  # (N,) each answer's weight in the loss
        if self.cfg.dynamic_sampling == "downweight":  # all-equal groups count degenerate_weight
            weight = torch.where(
                (ro.group_std() == 0).repeat_interleave(ro.group_size), self.cfg.degenerate_weight, 1.0
            ).to(weight.dtype)
        if self.cfg.overlong_filter:  # truncated answers count 0
            weight = weight * (~ro.truncated).to(weight.dtype)
        penalty = 0.0
        if self.cfg.overlong_penalty and self.max_new_tokens:
            pen = core.overlong_penalty(
                ro.lengths, self.max_new_tokens, min(self.cfg.overlong_buffer, self.max_new_tokens)
            )  # (N,)
            penalty = batch.mean(pen)  # over the whole batch
            ro = ro.with_rewards(ro.rewards + pen)
        adv = super().advantages(ro)  # GRPO's group advantages of the shaped rewards
        return replace(
            adv, mask=adv.mask * weight.unsqueeze(-1), metrics={**adv.metrics, "overlong_penalty": penalty}
        )  # (N, T) mask

    # ---- loss: GRPO's, minus the entropy bonus while the monitor fires ------ #

    def wants_entropy_grad(self) -> bool:
        return self.entropy_firing and self.cfg.entropy_action == "bonus" and self.cfg.entropy_coef > 0

    def loss(self, mb, out, adv, old_logp):
        loss, m = super().loss(mb, out, adv, old_logp)
        if self.wants_entropy_grad():
            loss = loss - self.cfg.entropy_coef * core.aggregate_loss(
                out["entropy"], adv.mask, self.cfg.loss_agg, self.max_len
            )
        return loss, m

    # ---- entropy monitor ------------------------------------------------------ #

    def update(self, ro: Rollout) -> dict:
        m = super().update(ro)
        m["entropy_bonus_active"] = float(self.entropy_firing and self.cfg.entropy_action == "bonus")
        fired = self.cfg.entropy_threshold > 0 and m.get("entropy", math.inf) < self.cfg.entropy_threshold
        m["entropy_monitor_fired"] = float(fired)
        self.entropy_firing = fired
        if fired and self.cfg.entropy_action == "temperature":
            self.temperature = min(ro.temperature + self.cfg.temperature_step, self.cfg.max_temperature)
        return m

    def state_dict(self) -> dict:
        return {**super().state_dict(), "entropy_firing": self.entropy_firing, "temperature": self.temperature}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.entropy_firing = state.get("entropy_firing", False)
        self.temperature = state.get("temperature")
