"""What every algorithm shares: the optimizer, the update step, the checkpoint.

An algorithm subclasses :class:`Algorithm` and writes two methods:

* ``advantages(ro) -> Advantages``: once per rollout, everything its loss needs
  per row (the advantages, the loss mask, anything else), as explicit values;
* ``loss(mb, out, adv, old_logp) -> (loss, metrics)``: for one micro-batch.

The training loop (:mod:`rlalgos.train`) calls, once per step::

    ro, info = algo.collect(sample, num_prompts)   # usually just sample(num_prompts)
    metrics = algo.update(ro)

A few hooks have defaults that an algorithm may change: ``collect`` (which
samples make the batch: DAPO's dynamic sampling), ``needs_ref`` (whether a
reference model is needed), ``wants_entropy_grad`` (an entropy bonus), and
``update`` itself (to log or adapt something around the step: DAPO's entropy
monitor). The optimizer steps themselves, with micro-batches, length buckets and
several processes, are one named line: :func:`rlalgos.engine.update.minibatch_updates`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import torch

from .. import core
from ..config import AlgoConfig
from ..engine import batch
from ..engine.settings import EngineSettings
from ..engine.update import EntropyProbe, minibatch_updates
from ..losses.common import aggregate
from ..record import Rollout


@dataclass(frozen=True)
class Advantages:
    """What an algorithm's ``advantages`` hands to its ``loss``, row-aligned with the rollout."""

    values: torch.Tensor  # (N, T) one per token, or (N, 1) one per answer shared by its tokens
    mask: torch.Tensor  # (N, T) weight of each token in the loss: the completion mask, times any per-row weight
    extras: dict[str, torch.Tensor] = field(
        default_factory=dict
    )  # other (N, ...) tensors the loss reads (PPO: old values, returns)
    metrics: dict[str, float] = field(default_factory=dict)  # logged once per step (PPO: explained_variance)
    is_weights: torch.Tensor | None = (
        None  # (N, T) the rollout correction's weights (Algorithm.with_rollout_correction); None = none
    )

    def rows(self, idx: torch.Tensor, T: int) -> "Advantages":
        """Rows ``idx``, per-token tensors cut to the first ``T`` columns (a trimmed micro-batch)."""
        cut = lambda t: t[idx][:, :T] if t.dim() == 2 else t[idx]  # noqa: E731
        # the mask contiguous: float sums over it (token counts, weighted means) then add in one fixed order
        weights = None if self.is_weights is None else cut(self.is_weights)
        return Advantages(
            cut(self.values),
            cut(self.mask).contiguous(),
            {k: cut(v) for k, v in self.extras.items()},
            self.metrics,
            weights,
        )


class Algorithm:
    """Base class: owns the policy's optimizer and runs the update step.

    ``max_new_tokens`` is the sampling length limit (L_max of Dr. GRPO and of
    DAPO's overlong penalty). ``engine`` is the run's
    :class:`~rlalgos.engine.settings.EngineSettings`: how its forward passes run
    (memory and speed, never the maths), what it measures and the rollout
    correction; the defaults when None.
    """

    def __init__(self, policy, cfg: AlgoConfig, max_new_tokens: int = 0, engine: EngineSettings | None = None):
        self.policy, self.cfg = policy, cfg
        self.max_new_tokens = max_new_tokens
        self.engine = engine or EngineSettings()
        trainable = [p for p in policy.parameters() if p.requires_grad]  # all of them, or only the LoRA adapters
        self.optimizer = torch.optim.AdamW(trainable, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.step_count = 0  # updates done so far

    # ---- what the loop asks before sampling -------------------------------- #

    @property
    def needs_old_logprobs(self) -> bool:
        """Whether the rollout must record sampling-time log-probs. With one pass
        and one minibatch the policy has not moved yet, so ``logp.detach()`` is
        the same number and the extra forward pass is skipped. A ``rollout_correction``
        always needs them (the trainer's recompute, as TRL and verl make it)."""
        return self.cfg.epochs > 1 or self.cfg.minibatches > 1 or self.engine.rollout_correction != "none"

    @property
    def needs_ref(self) -> bool:
        return self.cfg.kl_coef > 0

    def collect(self, sample: Callable[..., Rollout], num_prompts: int) -> tuple[Rollout, dict]:
        """Get this step's training batch. ``sample(n_prompts, temperature=None)``
        returns fresh completions; the default calls it once."""
        return sample(num_prompts), {}

    # ---- the two methods an algorithm writes ------------------------------- #

    def advantages(self, ro: Rollout) -> Advantages:
        raise NotImplementedError

    def loss(self, mb: Rollout, out: dict, adv: Advantages, old_logp: torch.Tensor):
        """Scalar loss and metrics for one micro-batch. ``out`` is :func:`~rlalgos.engine.forward.forward_logprobs`'s dict."""
        raise NotImplementedError

    @property
    def max_len(self) -> int | None:
        """``L_max`` of ``seq-mean-token-sum-norm``: the generation budget, the same for every batch."""
        return self.max_new_tokens or None

    def wants_entropy_grad(self) -> bool:
        """Whether the loss differentiates the entropy (an entropy bonus)."""
        return False

    def sampling_logprobs(self, ro: Rollout) -> torch.Tensor:
        """(N, T) log-probs of the sampling policy: the rollout's, or one no-grad pass now
        (before the update the policy is still the one that sampled)."""
        if ro.old_logprobs is not None:
            return ro.old_logprobs
        return self.engine.logprobs(self.policy, ro)

    def with_rollout_correction(self, ro: Rollout, adv: Advantages) -> Advantages:
        """``adv`` with the rollout correction's (N, T) weights in ``is_weights``
        (:func:`rlalgos.core.rollout_correction_weights` of the trainer's and the sampler's
        log-probs; :meth:`aggregate` multiplies each token's policy loss by them) and their
        metrics; ``adv`` itself without a correction."""
        correction = self.engine.rollout_correction
        if correction == "none":
            return adv
        if ro.rollout_logprobs is None or ro.old_logprobs is None:
            raise ValueError(
                f"rollout_correction {correction} needs the sampler's and the trainer's log-probs: sample with rollout(..., rollout_logprobs=True, old_logprobs=True)"
            )
        w, m = core.rollout_correction_weights(
            ro.old_logprobs,
            ro.rollout_logprobs,
            ro.completion_mask,
            correction,
            self.engine.rollout_correction_threshold,
        )
        m = batch.token_weighted(m, float((ro.completion_mask > 0).sum()))  # several processes: the whole batch's
        return replace(adv, is_weights=w, metrics={**adv.metrics, **m})

    def aggregate(self, loss_mat: torch.Tensor, adv: Advantages) -> torch.Tensor:
        """A per-token policy loss (n, T) to the scalar the optimizer steps on: each token's loss
        times its rollout correction weight, if any, then ``loss_agg`` over ``adv.mask``
        (:func:`rlalgos.losses.common.aggregate`). Every policy loss goes through here, so none can
        leave the correction out."""
        return aggregate(loss_mat, adv.mask, self.cfg.loss_agg, self.max_len, adv.is_weights)

    # ---- the update ---------------------------------------------------------- #

    def parameters(self):
        return [p for g in self.optimizer.param_groups for p in g["params"]]

    def update(self, ro: Rollout) -> dict:
        """Advantages once, then ``epochs`` x ``minibatches`` optimizer steps on :meth:`loss`."""
        self.policy.train()
        adv = self.with_rollout_correction(ro, self.advantages(ro))
        probe = (
            EntropyProbe(self, ro, adv) if self.engine.entropy_probe else None
        )  # covariance and entropy before the step
        metrics = minibatch_updates(self, ro, adv)  # the engine: micro-batches, length buckets, processes
        metrics.update(adv.metrics)
        if probe is not None:
            metrics.update(probe.after())  # the entropy change the step made on the same states
        metrics["lr"] = self.optimizer.param_groups[0]["lr"]
        self.step_count += 1
        return metrics

    # ---- checkpointing ------------------------------------------------------ #

    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "step_count": self.step_count}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.step_count = state.get("step_count", 0)
