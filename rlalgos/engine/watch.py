"""The run doctor while training (:mod:`rlalgos.engine.doctor` reads finished runs).

The loop (:mod:`rlalgos.train`) calls :func:`watch` after every step, on the rows so far: it
names what fires in the progress bar and says when a collapse has lasted long enough to stop
the run (the loop then raises :class:`~rlalgos.engine.doctor.RunCollapsed`). It only reads
rows, so a run's numbers are the same with or without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .doctor import COLLAPSE_STEPS, Finding, collapse_finding, collapse_mask, diagnose, streaks

WATCH_KEYS = (
    "step",
    "reward_mean",
    "kl",
    "entropy",
    "zero_std_frac",
    "completion_len",
    "truncated_frac",
    "clip_frac",
    "loss",
    "grad_norm",
    "nonfinite",
    "eval_accuracy",
    "eval_entropy",
)
"""The keys :func:`watch` copies out of the loop's rows."""


@dataclass(frozen=True)
class Watch:
    """What the doctor says after a step: the ``firing`` signatures' names, the collapse
    that should stop the run (``stop``, or None) and the length of the collapse streak
    that ends at the latest step (``pending``: 1 .. COLLAPSE_STEPS - 1 is not yet a stop)."""

    firing: tuple[str, ...]
    stop: Finding | None
    pending: int

    def postfix(self) -> str:
        """For the progress bar: the firing signatures, and a collapse under way as ``collapse 2/3``."""
        names = list(self.firing)
        if self.pending and "collapse" not in names:
            names.insert(0, f"collapse {self.pending}/{COLLAPSE_STEPS}")
        return ",".join(names)


def watch(rows: list[dict], max_new_tokens: int | None = None, nonfinite_now: bool = False) -> Watch:
    """The doctor on the rows so far (the loop calls it after each step, before the row is written).

    ``stop`` is the collapse once it has lasted COLLAPSE_STEPS steps, or as soon as a step goes
    non-finite (``nonfinite_now``) while a collapse is under way: the NaN comes after the collapse,
    at a step that differs between CPUs, so the collapse is what the run is stopped for."""
    df = pd.DataFrame.from_records([{k: r[k] for k in WATCH_KEYS if k in r} for r in rows])
    firing = tuple(f.name for f in diagnose(df, max_new_tokens))
    mask = collapse_mask(df)
    runs = streaks(mask)
    pending = runs[-1][1] if runs and mask.iloc[-1] else 0
    if nonfinite_now and not pending and len(mask) >= 2 and mask.iloc[-2]:  # the non-finite row's own values may be NaN
        pending = runs[-1][1]
    stop = None
    if runs and (pending >= COLLAPSE_STEPS or (nonfinite_now and pending)):
        stop = collapse_finding(df, runs[-1][0], runs[-1][1])
    return Watch(firing, stop, pending if pending < COLLAPSE_STEPS else 0)
