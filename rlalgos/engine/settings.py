"""The engine's settings for one run: how its forward passes run, and what it measures and
corrects around the update. One frozen record, built once per run from its TrainConfig
(:meth:`EngineSettings.from_config`) and handed whole to the algorithm, the evaluation and
the sampler, so no call site passes these settings one by one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..config import TrainConfig
from .forward import batched_logprobs
from .precision import resolve_precision
from .sampler import SamplingConfig


@dataclass(frozen=True)
class EngineSettings:
    """What :class:`~rlalgos.config.TrainConfig`'s fields of the same names say (their one
    documentation: ``rlalgos train --help``), with ``dtype`` resolved to the autocast dtype of
    the forward passes. The first three change memory and speed, never the numbers;
    ``entropy_probe`` adds measurements; ``rollout_correction`` reweights each token's policy
    loss by the trainer's over the sampler's probability (the engine's mismatch)."""

    score_batch_size: int = 512
    """Rows per no-grad scoring pass (sampling-time, reference and evaluation log-probs)."""
    logits_chunk: int = -1
    """Positions per chunk of the logits (:mod:`rlalgos.engine.forward`): -1 auto, 0 off."""
    autocast_dtype: torch.dtype | None = None
    """The autocast half of ``dtype`` (:func:`rlalgos.engine.precision.resolve_precision`); None: no autocast."""
    entropy_probe: bool = False
    """Measure the entropy mechanism of every update (:class:`rlalgos.engine.update.EntropyProbe`)."""
    rollout_correction: str = "none"
    """The rollout-trainer mismatch correction (:func:`rlalgos.core.rollout_correction_weights`); ``none``: off."""
    rollout_correction_threshold: float = 2.0
    """C of ``rollout_correction``: the cap or the cut-off on the ratio trainer / sampler."""

    @classmethod
    def from_config(cls, cfg: TrainConfig, device: torch.device) -> "EngineSettings":
        """A run's settings: ``cfg``'s fields, with its ``dtype`` resolved on ``device``."""
        return cls(
            score_batch_size=cfg.score_batch_size,
            logits_chunk=cfg.logits_chunk,
            autocast_dtype=resolve_precision(cfg.dtype, device)[1],
            entropy_probe=cfg.entropy_probe,
            rollout_correction=cfg.rollout_correction,
            rollout_correction_threshold=cfg.rollout_correction_threshold,
        )

    def logprobs(self, model, ro, **kw):
        """:func:`~rlalgos.engine.forward.batched_logprobs` of ``model`` on rollout ``ro``, no grad, with
        these settings (``kw``: its other arguments, e.g. ``with_entropy``). Returns (N, T), or a pair."""
        return batched_logprobs(
            model, ro, self.score_batch_size, logits_chunk=self.logits_chunk, autocast_dtype=self.autocast_dtype, **kw
        )

    def sampling(self, **kw) -> SamplingConfig:
        """A :class:`~rlalgos.engine.sampler.SamplingConfig` whose sampling and scoring passes run with
        these settings; ``kw``: its other fields (``max_new_tokens``, ``temperature`` ...)."""
        return SamplingConfig(
            score_batch_size=self.score_batch_size,
            logits_chunk=self.logits_chunk,
            autocast_dtype=self.autocast_dtype,
            **kw,
        )
