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
  turn out good can grow faster than likely ones shrink: slower entropy collapse;
* **token-level loss** (update): ``token-mean``, every token weighs the same,
  so long answers are not diluted;
* **KL** (constraint): off by default, with an optional stage schedule;
* **entropy monitor**: when entropy falls below a threshold, add an entropy
  bonus or raise the sampling temperature, and log that it fired.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .. import core
from ..rollout import Rollout
from .grpo import GRPO, GRPOConfig

DYNAMIC_SAMPLING = ("resample", "filter", "downweight", "off")


@dataclass
class DAPOConfig(GRPOConfig):
    """GRPO plus the DAPO switches, with DAPO's values as defaults."""

    clip_high: float = 0.28
    """Clip-higher: the upper bound is 1 + 0.28, wider than the lower 1 - 0.2. Like any clip it acts only once the policy moves inside a rollout: set minibatches or epochs > 1 (DAPO itself takes many minibatch steps per rollout)."""
    loss_agg: str = "token-mean"
    """Token-level loss: sum over all tokens / all tokens in the batch."""
    kl_coef: float = 0.0
    """No KL to the reference by default."""
    kl_stages: str = ""
    """KL schedule as STEP:COEF pairs, e.g. ``0:0.0,40:0.02`` (from step 40 on, beta = 0.02); empty = constant kl_coef."""
    dynamic_sampling: str = "resample"
    """``resample``: drop all-equal groups and sample more; ``filter``: drop, no refill; ``downweight``: keep, weight ``degenerate_weight``; ``off``."""
    max_resample_rounds: int = 3
    """At most this many extra sampling rounds per step; then train on what there is."""
    degenerate_weight: float = 0.1
    """With ``downweight``: weight of an all-equal group's tokens in the loss."""
    overlong_penalty: bool = True
    """Add DAPO's soft overlong penalty to the reward."""
    overlong_buffer: int = 8
    """L_c: the penalty ramps from 0 to -1 over the last this many tokens before max_new_tokens."""
    overlong_filter: bool = False
    """Mask truncated answers (no EOS) out of the loss."""
    entropy_threshold: float = 0.0
    """Entropy monitor: act when the mean entropy (nats/token) falls below this; 0 = only log it."""
    entropy_action: str = "bonus"
    """What the monitor does: ``bonus`` (add entropy_coef * entropy to the objective) or ``temperature`` (raise it)."""
    entropy_coef: float = 0.01
    """Entropy bonus weight while the monitor is firing."""
    temperature_step: float = 0.1
    """Temperature increase per firing (``temperature`` action), up to max_temperature."""
    max_temperature: float = 1.5
    """Ceiling for the sampling temperature."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        if self.dynamic_sampling not in DYNAMIC_SAMPLING:
            raise ValueError(f"unknown dynamic_sampling {self.dynamic_sampling!r}; use one of {', '.join(DYNAMIC_SAMPLING)}")
        if self.max_resample_rounds < 0 or not 0 <= self.degenerate_weight <= 1:
            raise ValueError("max_resample_rounds must be >= 0 and degenerate_weight in [0, 1]")
        if self.overlong_buffer < 1:
            raise ValueError(f"overlong_buffer must be >= 1, got {self.overlong_buffer}")
        if self.entropy_action not in ("bonus", "temperature"):
            raise ValueError(f"unknown entropy_action {self.entropy_action!r}; use bonus or temperature")
        if self.entropy_threshold < 0 or self.entropy_coef < 0 or self.temperature_step < 0:
            raise ValueError("entropy_threshold, entropy_coef and temperature_step must be >= 0")
        parse_stages(self.kl_stages)


def parse_stages(text: str) -> list[tuple[int, float]]:
    """``"0:0.0,40:0.02"`` -> ``[(0, 0.0), (40, 0.02)]`` (sorted by step)."""
    if not text.strip():
        return []
    out = []
    for part in text.split(","):
        try:
            step, coef = part.split(":")
            out.append((int(step), float(coef)))
        except ValueError:
            raise ValueError(f"bad kl_stages entry {part!r}; write STEP:COEF pairs like 0:0.0,40:0.02") from None
        if out[-1][1] < 0:
            raise ValueError(f"kl_stages coefficients must be >= 0, got {part!r}")
    return sorted(out)


class DAPO(GRPO):
    name = "dapo"
    Config = DAPOConfig

    def __init__(self, policy, cfg: DAPOConfig, ref_model=None, tokenizer=None):
        super().__init__(policy, cfg, ref_model, tokenizer)
        self.stages = parse_stages(cfg.kl_stages)
        self.entropy_firing = False

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
        mode, G = self.cfg.dynamic_sampling, None
        first = sample(num_prompts, temperature=self.temperature)
        G = first.group_size
        if mode in ("off", "downweight"):
            return first, {"sampling_temperature": self.temperature}
        seen, kept, extra_rounds = [first], [self._informative(first)], 0
        n_kept = len(kept[0]) // G
        while mode == "resample" and n_kept < num_prompts and extra_rounds < self.cfg.max_resample_rounds:
            keep_rate = max(n_kept / sum(len(r) // G for r in seen), 0.1)
            ro = sample(min(num_prompts, math.ceil((num_prompts - n_kept) / keep_rate)), temperature=self.temperature)
            seen.append(ro)
            kept.append(self._informative(ro))
            n_kept += len(kept[-1]) // G
            extra_rounds += 1
        sampled = sum(len(r) // G for r in seen)
        info = Rollout.concat(seen).stats()  # what the policy did on everything it sampled
        info.update({
            "ds_sampled_groups": sampled,
            "ds_dropped_frac": 1.0 - n_kept / sampled,
            "ds_extra_rounds": extra_rounds,
            "ds_batch_groups": min(n_kept, num_prompts),
            "ds_short": float(n_kept < num_prompts),
            "sampling_temperature": self.temperature,
        })
        if n_kept == 0:  # every group degenerate: nothing to learn from, train on the plain batch
            info["ds_batch_groups"] = num_prompts
            return first, info
        batch = Rollout.concat([k for k in kept if len(k)])
        return batch.select(torch.arange(min(n_kept, num_prompts) * G)), info

    @staticmethod
    def _informative(ro: Rollout) -> Rollout:
        """The groups whose rewards are not all equal."""
        keep = (ro.group_std() > 0).repeat_interleave(ro.group_size)  # (N,)
        return ro.select(torch.nonzero(keep).flatten())

    # ---- reward shaping and loss mask --------------------------------------- #

    def advantages(self, ro: Rollout) -> torch.Tensor:
        if self.cfg.dynamic_sampling == "downweight":  # per row, while the whole groups are at hand
            ro.extras["loss_weight"] = self._group_weights(ro)
        if self.cfg.overlong_penalty and self.max_new_tokens:
            pen = core.overlong_penalty(ro.lengths, self.max_new_tokens, min(self.cfg.overlong_buffer, self.max_new_tokens))
            self._overlong = pen.mean().item()
            ro = ro.with_rewards(ro.rewards + pen)
        return super().advantages(ro)

    def _group_weights(self, ro: Rollout) -> torch.Tensor:
        """(N,) degenerate_weight for rows of zero-variance groups, 1 elsewhere."""
        degenerate = (ro.group_std() == 0).repeat_interleave(ro.group_size)
        return torch.where(degenerate, self.cfg.degenerate_weight, 1.0).to(ro.completion_mask.dtype)

    def loss_mask(self, mb: Rollout) -> torch.Tensor:
        mask = mb.completion_mask
        if self.cfg.overlong_filter:
            mask = mask * (~mb.truncated).unsqueeze(-1).to(mask.dtype)
        if self.cfg.dynamic_sampling == "downweight":
            w = mb.extras["loss_weight"] if "loss_weight" in mb.extras else self._group_weights(mb)  # (N,)
            mask = mask * w.unsqueeze(-1)
        return mask

    # ---- loss: GRPO's, minus the entropy bonus while the monitor fires ------ #

    def wants_entropy_grad(self) -> bool:
        return self.entropy_firing and self.cfg.entropy_action == "bonus" and self.cfg.entropy_coef > 0

    def loss(self, mb, out, adv, old_logp):
        loss, m = super().loss(mb, out, adv, old_logp)
        if self.wants_entropy_grad():
            loss = loss - self.cfg.entropy_coef * core.aggregate_loss(out["entropy"], self.loss_mask(mb), self.cfg.loss_agg, self.max_len)
        return loss, m

    # ---- entropy monitor ------------------------------------------------------ #

    def state_dict(self) -> dict:
        return {**super().state_dict(), "entropy_firing": self.entropy_firing}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.entropy_firing = state.get("entropy_firing", False)

    def update(self, ro: Rollout) -> dict:
        self._overlong = 0.0
        m = super().update(ro)
        m["overlong_penalty"] = self._overlong
        m["entropy_bonus_active"] = float(self.entropy_firing and self.cfg.entropy_action == "bonus")
        fired = self.cfg.entropy_threshold > 0 and m.get("entropy", math.inf) < self.cfg.entropy_threshold
        m["entropy_monitor_fired"] = float(fired)
        self.entropy_firing = fired
        if fired and self.cfg.entropy_action == "temperature":
            self.temperature = min(self.temperature + self.cfg.temperature_step, self.cfg.max_temperature)
        return m
