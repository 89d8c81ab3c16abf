"""The run doctor's signatures: notebook 06's failure modes, read off a run's metrics rows.

Each signature is one small pure function of a pandas DataFrame of metrics rows (the
project's names: ``step``, ``reward_mean``, ``entropy``, ``kl``, ``zero_std_frac``,
``completion_len``, ``truncated_frac``, ``clip_frac``, ``eval_accuracy``, ``eval_entropy`` ...;
step 0 is the evaluation before training) and returns a :class:`Finding` or None:

========================  ==================================================================
``nonfinite``             a NaN/inf loss, gradient norm, reward, KL or entropy
``collapse``              reward near 0 (from a start that was not) with KL to the reference far
                          above any healthy run's, for several steps in a row (notebook 06 b)
``zero_signal``           most groups all-equal (no advantage) for many steps (06 d)
``length_runaway``        answers cut off at the length limit, a share that was not there at the start (06 c)
``reward_up_accuracy_down``  train reward up while eval accuracy falls: a gamed reward (06 a)
``entropy_collapse``      eval entropy (else train entropy) far below its start while accuracy stalls (06 e)
``kl_drift``              KL to the reference above any healthy run's (06 a, e)
``clip_saturation``       a large share of tokens clipped, step after step (notebook 04)
========================  ==================================================================

Every threshold is a named constant measured on the workbook's own runs (notebook 06's broken
and healthy arms, the learning tests' cases and the demo, 3 seeds each):
``benchmarks/doctor_thresholds.py`` trains them, ``docs/bench/doctor_thresholds.json`` holds
each signal in every run, and ``docs/doctor.md`` the table and the confusion table.

The loop (:mod:`rlalgos.train`) runs them after every step (:func:`rlalgos.engine.watch.watch`):
it names what fires in the progress bar and stops a run that has collapsed (:class:`RunCollapsed`).
It only reads rows, so a run's numbers are the same with or without it. ``rlalgos diagnose``
(:mod:`rlalgos.tools.diagnose`) applies :func:`diagnose` to a finished run, a TRL output
folder or TensorBoard logs. Like :mod:`rlalgos.config`, this module imports no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

# --------------------------------------------------------------------------- #
# Thresholds (each from docs/bench/doctor_thresholds.json; docs/doctor.md has the table)
# --------------------------------------------------------------------------- #

COLLAPSE_REWARD_FRAC = 0.3
"""collapse: a step's reward at most this fraction of the first training step's (the base model's). Measured: the lowest
step of every run that did not collapse stayed at >= 0.39 of its first (notebook 06's pushed arms; healthy runs >= 0.63);
the lr 3e-3 runs fell to 0.00-0.21 of it at their first collapsed step."""
COLLAPSE_MIN_START_REWARD = 0.05
"""collapse: a run whose first reward is below this had nothing to lose (too-hard prompts start at 0.00: zero_signal's)."""
COLLAPSE_KL = 0.5
"""collapse: KL to the reference at least this (nats per token) on the same step. Measured: healthy runs <= 0.06 at any step,
notebook 06's other broken runs <= 0.16 except under the length judge (up to 1.2, with its reward up); the lr 3e-3 runs
0.75-1.4 at their first collapsed step and 4-6 later; --lr 10: 5.9."""
COLLAPSE_ENTROPY_FLOOR = 0.01
"""collapse without a logged KL: entropy at most this (a policy that emits one token sequence; --lr 10 gives 0.00)."""
COLLAPSE_STEPS = 3
"""collapse: this many steps in a row (fewer is a blip); the loop stops the run then. The lr 3e-3 runs stay collapsed for
all 29 steps after the first; nothing else has a single collapsed step."""

ZERO_SIGNAL_LEVEL = 0.85
"""zero_signal: the mean share of all-equal groups over ZERO_SIGNAL_STEPS steps at least this. Measured (highest 5-step
mean): healthy runs 0.26-0.49; too-hard prompts 1.00; under the length judge 0.72-0.90 (answers crowd at one length)."""
ZERO_SIGNAL_STEPS = 5
"""zero_signal: the window, in steps."""

TRUNCATED_LEVEL = 0.1
"""length_runaway: the mean share of cut-off answers over LENGTH_STEPS steps at least this ... Measured (highest 5-step
mean): healthy runs <= 0.006; under the length judge 0.26-0.38."""
TRUNCATED_RISE = 0.05
"""length_runaway: ... and at least this above the share at the start (the first LENGTH_STEPS steps): a budget that cuts
answers off from the first step is too small, not a runaway."""
LENGTH_STEPS = 5
"""length_runaway: the window, in steps."""

REWARD_RISE = 0.05
"""reward_up_accuracy_down: the train reward's mean over the last REWARD_STEPS steps at least this above the first REWARD_STEPS' ...
Measured: the gamed rewards rose 0.06-0.34 (the length judge with overlong shaping least)."""
ACCURACY_DROP = 0.05
"""reward_up_accuracy_down: ... while eval accuracy fell by at least this from its first evaluation. Measured: every healthy
run and both pushed arms of (e) gained +0.003..+0.17; the gamed rewards lost 0.14-0.41."""
REWARD_STEPS = 5
"""reward_up_accuracy_down: the window of train steps."""

ENTROPY_FRAC = 0.5
"""entropy_collapse: eval entropy (or the train entropy's last-window mean) at most this fraction of its start ...
Measured: every run here ended at >= 0.59 of its start (healthy 0.59-0.76; notebook 06 (e)'s push 0.62-0.67: no run
reproduces the collapse, as the notebook says), so this bound is set from the healthy side alone."""
ENTROPY_STALL = 0.02
"""entropy_collapse: ... while eval accuracy (or the train reward) gained less than this (healthy runs gain >= 0.07)."""
ENTROPY_STEPS = 5
"""entropy_collapse: the window of train steps when only the train entropy is logged."""

KL_DRIFT = 0.15
"""kl_drift: KL to the reference, mean over KL_STEPS steps, at least this (nats per token). Measured (highest 5-step mean):
healthy runs <= 0.032 (30-40 steps; KL grows with a run's length, hence the margin); notebook 06's pushed and gamed
arms 0.04-0.13; the length judge 0.19-0.98; the clip probe 0.23-0.25; collapsed runs 4.3-5.8."""
KL_STEPS = 5
"""kl_drift: the window, in steps."""

CLIP_LEVEL = 0.04
"""clip_saturation: the mean clip fraction over CLIP_STEPS steps at least this. Measured (highest 5-step mean): every run
here <= 0.017 (PPO's 2 epochs x 4 minibatches, GRPO's 4 minibatches); 32 optimizer steps per rollout at lr 3e-4 (the
clip probe) 0.058-0.077."""
CLIP_STEPS = 5
"""clip_saturation: the window, in steps."""

NONFINITE_KEYS = ("loss", "grad_norm", "reward_mean", "kl", "entropy")
"""nonfinite: the metrics whose NaN or inf means a broken step (with the row's own ``nonfinite`` flag)."""

SIGNALS = {
    "nonfinite": NONFINITE_KEYS,
    "collapse": ("reward_mean", "kl", "entropy", "zero_std_frac"),
    "zero_signal": ("zero_std_frac", "grad_norm", "reward_mean"),
    "length_runaway": ("completion_len", "truncated_frac", "eval_accuracy"),
    "reward_up_accuracy_down": ("reward_mean", "eval_accuracy"),
    "entropy_collapse": ("eval_entropy", "entropy", "eval_accuracy"),
    "kl_drift": ("kl", "eval_accuracy"),
    "clip_saturation": ("clip_frac",),
}
"""The metrics each signature reads (a report says which of them a source lacks; the plot draws them)."""


@dataclass(frozen=True)
class Finding:
    """What one signature saw: its ``name``, the ``step`` it was first seen at, the numbers
    (``evidence``; ``said`` puts them in a few words), the likely ``cause`` and the ``fix``
    notebook 06 shows."""

    name: str
    step: int
    said: str
    cause: str
    fix: str
    evidence: dict = field(default_factory=dict)

    def line(self) -> str:
        """One line: ``collapse at step 2: entropy 0.00, reward 0.00 (was 0.31), KL 5.9 -> lower the learning rate``."""
        return f"{self.name.replace('_', ' ')} at step {self.step}: {self.said} -> {self.fix}"


class RunCollapsed(FloatingPointError):
    """A run stopped because its policy collapsed (``stop_on_collapse``). A FloatingPointError, as the
    non-finite stop is, so every caller that keeps a stopped run's rows (the CLI's exit status 2,
    sweeps, the notebooks' run helpers) treats both stops alike."""

    def __init__(self, message: str, finding: Finding):
        super().__init__(message)
        self.finding = finding


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #


def _series(df: pd.DataFrame, key: str, train: bool = True) -> pd.Series:
    """``key`` by step (train rows only: step > 0), NaN dropped; empty if not logged."""
    if key not in df or "step" not in df:
        return pd.Series(dtype=float)
    rows = df[df["step"] > 0] if train else df
    s = pd.to_numeric(rows[key], errors="coerce")
    s.index = rows["step"].astype(int).values
    return s.dropna()


def _first_window(s: pd.Series, n: int, level: float) -> tuple[int, float] | None:
    """The first window of ``n`` consecutive values whose mean is >= ``level``: (the first step in it whose own
    value is >= ``level``, else its first step; the window's mean)."""
    if len(s) < n:
        return None
    means = s.rolling(n).mean()
    hit = means[means >= level]
    if hit.empty:
        return None
    end = s.index.get_loc(hit.index[0])
    window = s.iloc[end - n + 1 : end + 1]
    over = window[window >= level]
    return int(over.index[0] if len(over) else window.index[0]), float(hit.iloc[0])


def streaks(mask: pd.Series) -> list[tuple[int, int]]:
    """Runs of consecutive True values as (first step, length), in order."""
    out, start, length = [], None, 0
    for step, v in mask.items():
        if v:
            start, length = (step if length == 0 else start), length + 1
        else:
            if length:
                out.append((start, length))
            length = 0
    if length:
        out.append((start, length))
    return out


def _fmt(x: float) -> str:
    """A number in a report: 2 decimals below 1, 2 significant digits above."""
    return f"{x:.2f}" if abs(x) < 1 else f"{x:.2g}" if abs(x) < 10 else f"{x:.0f}"


# --------------------------------------------------------------------------- #
# The signatures
# --------------------------------------------------------------------------- #


def nonfinite(df: pd.DataFrame) -> Finding | None:
    """A NaN or inf in the loss, gradient norm, reward, KL or entropy of a train row, or a row flagged ``nonfinite``.
    A train row is one with a reward; a NaN counts only in a metric the run logs elsewhere as a number (else it was never logged)."""
    if "step" not in df:
        return None
    train = df[(df["step"] > 0) & (df["reward_mean"].notna() if "reward_mean" in df else True)]
    bad = pd.DataFrame(False, index=train.index, columns=[])
    for k in NONFINITE_KEYS:
        if k in train:
            v = pd.to_numeric(train[k], errors="coerce")
            if v.map(math.isfinite, na_action="ignore").fillna(False).astype(bool).any():
                bad[k] = ~v.map(math.isfinite, na_action="ignore").fillna(False).astype(bool)
    if "nonfinite" in train:
        bad["nonfinite"] = pd.to_numeric(train["nonfinite"], errors="coerce").fillna(0) > 0
    hit = bad[bad.any(axis=1)]
    if hit.empty:
        return None
    first = hit.iloc[0]
    names = [k for k in NONFINITE_KEYS if k in first.index and first[k]]
    return Finding(
        "nonfinite",
        int(train.loc[hit.index[0], "step"]),
        f"non-finite {', '.join(names) or 'loss or gradient'}",
        "a step too large (the weights blew up) or a reward that returned NaN/inf",
        "lower the learning rate and check the rewards",
        {"keys": names},
    )


def collapse_mask(df: pd.DataFrame) -> pd.Series:
    """Per train step, whether it looks collapsed: reward at most COLLAPSE_REWARD_FRAC of the first
    step's (which was at least COLLAPSE_MIN_START_REWARD) and KL >= COLLAPSE_KL (without a logged
    KL: entropy <= COLLAPSE_ENTROPY_FLOOR). Empty when the run has no reward."""
    reward = _series(df, "reward_mean")
    if reward.empty or reward.iloc[0] < COLLAPSE_MIN_START_REWARD:
        return pd.Series(False, index=reward.index, dtype=bool)
    low = reward <= COLLAPSE_REWARD_FRAC * reward.iloc[0]
    kl = _series(df, "kl").reindex(reward.index)
    if kl.notna().any():
        far = kl >= COLLAPSE_KL
    else:
        far = _series(df, "entropy").reindex(reward.index) <= COLLAPSE_ENTROPY_FLOOR
    return (low & far.fillna(False)).astype(bool)


def collapse_finding(df: pd.DataFrame, start: int, length: int) -> Finding:
    """The collapse that starts at step ``start`` and lasts ``length`` steps, with its numbers."""
    reward, kl, ent = _series(df, "reward_mean"), _series(df, "kl"), _series(df, "entropy")
    ev = {
        "reward": float(reward.get(start, math.nan)),
        "start_reward": float(reward.iloc[0]),
        "kl": float(kl.get(start, math.nan)),
        "entropy": float(ent.get(start, math.nan)),
        "start_entropy": float(ent.iloc[0]) if len(ent) else math.nan,
        "steps": length,
    }
    parts = [
        f"entropy {ev['entropy']:.2f}" if not math.isnan(ev["entropy"]) else None,
        f"reward {ev['reward']:.2f} (was {ev['start_reward']:.2f})",
        f"KL {_fmt(ev['kl'])}" if not math.isnan(ev["kl"]) else None,
    ]
    return Finding(
        "collapse",
        start,
        ", ".join(p for p in parts if p),
        "a step too large: the learning rate (or a loose clip with several minibatches, or a tiny G) moved the policy far from the reference in one update",
        "lower the learning rate",
        ev,
    )


def collapse(df: pd.DataFrame, min_steps: int = COLLAPSE_STEPS) -> Finding | None:
    """Reward near 0 with KL to the reference far above any healthy run's, for ``min_steps`` steps in a row (the first such run of steps)."""
    for start, length in streaks(collapse_mask(df)):
        if length >= min_steps:
            return collapse_finding(df, start, length)
    return None


def zero_signal(df: pd.DataFrame) -> Finding | None:
    """The share of all-equal groups (``zero_std_frac``) at least ZERO_SIGNAL_LEVEL on average over ZERO_SIGNAL_STEPS steps."""
    hit = _first_window(_series(df, "zero_std_frac"), ZERO_SIGNAL_STEPS, ZERO_SIGNAL_LEVEL)
    if hit is None:
        return None
    step, level = hit
    reward = _series(df, "reward_mean")
    r = float(reward.loc[step:].head(ZERO_SIGNAL_STEPS).mean()) if len(reward) else math.nan
    said = f"{level:.0%} of groups all-equal over {ZERO_SIGNAL_STEPS} steps" + (
        f", reward {r:.2f}" if not math.isnan(r) else ""
    )
    cause = (
        "prompts too hard (all wrong) or too easy (all right) for the policy, G too small, or the temperature too low"
    )
    return Finding(
        "zero_signal",
        step,
        said,
        cause,
        "train on prompts of medium difficulty, a larger G, or dynamic sampling",
        {"zero_std_frac": level, "reward": r},
    )


def length_runaway(df: pd.DataFrame, max_new_tokens: int | None = None) -> Finding | None:
    """Answers cut off at the length limit: the share of truncated answers, averaged over LENGTH_STEPS steps,
    at least TRUNCATED_LEVEL and TRUNCATED_RISE above the start's."""
    trunc = _series(df, "truncated_frac")
    if len(trunc) < LENGTH_STEPS:
        return None
    start = float(trunc.head(LENGTH_STEPS).mean())
    hit = _first_window(trunc, LENGTH_STEPS, max(TRUNCATED_LEVEL, start + TRUNCATED_RISE))
    if hit is None:
        return None
    step, level = hit
    length = _series(df, "completion_len")
    ev = {"truncated_frac": level, "start_truncated_frac": start, "max_new_tokens": max_new_tokens}
    said = f"{level:.0%} of answers cut off (start {start:.0%})"
    if len(length):
        ev["completion_len"], ev["start_completion_len"] = (
            float(length.loc[step:].head(LENGTH_STEPS).mean()),
            float(length.head(LENGTH_STEPS).mean()),
        )
        said += f", length {ev['start_completion_len']:.1f} -> {ev['completion_len']:.1f} tokens" + (
            f" of {max_new_tokens}" if max_new_tokens else ""
        )
    return Finding(
        "length_runaway",
        step,
        said,
        "the reward pays for length (a verbose judge, a length bias), or the policy is unstable",
        "a length penalty (overlong shaping) and masking cut-off answers; fix what pays for length",
        ev,
    )


def _eval(df: pd.DataFrame, key: str) -> pd.Series:
    return _series(df, key, train=False)


def reward_up_accuracy_down(df: pd.DataFrame) -> Finding | None:
    """The train reward's last REWARD_STEPS steps at least REWARD_RISE above its first, while eval accuracy
    fell at least ACCURACY_DROP below its first evaluation."""
    reward, acc = _series(df, "reward_mean"), _eval(df, "eval_accuracy")
    if len(reward) < 2 * REWARD_STEPS or len(acc) < 2:
        return None
    r0, r1 = float(reward.head(REWARD_STEPS).mean()), float(reward.tail(REWARD_STEPS).mean())
    fell = acc[acc <= acc.iloc[0] - ACCURACY_DROP]
    if r1 - r0 < REWARD_RISE or acc.iloc[-1] > acc.iloc[0] - ACCURACY_DROP or fell.empty:
        return None
    ev = {
        "reward_start": r0,
        "reward_end": r1,
        "eval_accuracy_start": float(acc.iloc[0]),
        "eval_accuracy_end": float(acc.iloc[-1]),
    }
    return Finding(
        "reward_up_accuracy_down",
        int(fell.index[0]),
        f"reward {r0:.2f} -> {r1:.2f}, eval accuracy {acc.iloc[0]:.2f} -> {acc.iloc[-1]:.2f}",
        "the reward pays for something the eval does not (a format, length or style term, an over-optimised reward model)",
        "make the reward pay for correctness (gate any extra term by it); a KL term only slows the slide",
        ev,
    )


def entropy_collapse(df: pd.DataFrame) -> Finding | None:
    """Eval entropy at most ENTROPY_FRAC of its first evaluation while eval accuracy gained less than ENTROPY_STALL;
    without eval entropy, the train entropy's last ENTROPY_STEPS steps against its first (and the train reward for the gain)."""
    ent, acc = _eval(df, "eval_entropy"), _eval(df, "eval_accuracy")
    if len(ent) >= 2 and len(acc) >= 2:
        e0, e1, gain, what, step_of = (
            float(ent.iloc[0]),
            float(ent.iloc[-1]),
            float(acc.iloc[-1] - acc.iloc[0]),
            "eval accuracy",
            ent,
        )
    else:
        ent, reward = _series(df, "entropy"), _series(df, "reward_mean")
        if len(ent) < 2 * ENTROPY_STEPS or len(reward) < 2 * ENTROPY_STEPS:
            return None
        e0, e1 = float(ent.head(ENTROPY_STEPS).mean()), float(ent.tail(ENTROPY_STEPS).mean())
        gain, what, step_of = (
            float(reward.tail(ENTROPY_STEPS).mean() - reward.head(ENTROPY_STEPS).mean()),
            "reward",
            ent.rolling(ENTROPY_STEPS).mean(),
        )
    if e0 <= 0 or e1 > ENTROPY_FRAC * e0 or gain >= ENTROPY_STALL:
        return None
    below = step_of[step_of <= ENTROPY_FRAC * e0]
    return Finding(
        "entropy_collapse",
        int(below.index[0]) if len(below) else int(step_of.index[-1]),
        f"entropy {e0:.3f} -> {e1:.3f} ({e1 / e0:.0%} of the start), {what} {gain:+.2f}",
        "sharpening on early winners: no KL, a learning rate on the high side, a symmetric clip",
        "an entropy monitor (bonus or temperature), clip-higher, a KL term, a lower learning rate",
        {"entropy_start": e0, "entropy_end": e1, "gain": gain},
    )


def kl_drift(df: pd.DataFrame) -> Finding | None:
    """KL to the reference, averaged over KL_STEPS steps, at least KL_DRIFT."""
    kl = _series(df, "kl")
    hit = _first_window(kl, KL_STEPS, KL_DRIFT)
    if hit is None:
        return None
    step, level = hit
    acc = _eval(df, "eval_accuracy")
    said = f"KL {_fmt(level)} over {KL_STEPS} steps, {_fmt(float(kl.iloc[-1]))} at the end" + (
        f"; eval accuracy {acc.iloc[0]:.2f} -> {acc.iloc[-1]:.2f}" if len(acc) >= 2 else ""
    )
    return Finding(
        "kl_drift",
        step,
        said,
        "nothing holds the policy near the reference (no or a weak KL term, a high learning rate), or the reward is being gamed",
        "a KL term (or a larger kl_coef) and a lower learning rate; check the eval rises with the KL",
        {"kl": level, "kl_end": float(kl.iloc[-1])},
    )


def clip_saturation(df: pd.DataFrame) -> Finding | None:
    """The clip fraction, averaged over CLIP_STEPS steps, at least CLIP_LEVEL."""
    hit = _first_window(_series(df, "clip_frac"), CLIP_STEPS, CLIP_LEVEL)
    if hit is None:
        return None
    step, level = hit
    return Finding(
        "clip_saturation",
        step,
        f"{level:.0%} of tokens clipped over {CLIP_STEPS} steps",
        "each rollout is used for too many optimizer steps (minibatches, epochs) at this learning rate: the ratio leaves the clip range",
        "fewer minibatches or epochs per rollout, or a lower learning rate",
        {"clip_frac": level},
    )


SIGNATURES = (
    nonfinite,
    collapse,
    zero_signal,
    length_runaway,
    reward_up_accuracy_down,
    entropy_collapse,
    kl_drift,
    clip_saturation,
)
"""Every signature, in the order a report lists them."""


def diagnose(df: pd.DataFrame, max_new_tokens: int | None = None) -> list[Finding]:
    """Every signature that fires on ``df``, in :data:`SIGNATURES`' order."""
    if df.empty or "step" not in df:
        return []
    out = []
    for sig in SIGNATURES:
        f = sig(df, max_new_tokens) if sig is length_runaway else sig(df)
        if f is not None:
            out.append(f)
    return out


WINDOWS = {
    "zero_signal": ZERO_SIGNAL_STEPS,
    "length_runaway": LENGTH_STEPS,
    "kl_drift": KL_STEPS,
    "clip_saturation": CLIP_STEPS,
    "entropy_collapse": 1,
    "reward_up_accuracy_down": 1,
    "nonfinite": 1,
}
"""Steps a finding's evidence spans from its first step (a window's length)."""


def split(findings: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(what went wrong, what followed from it): after a collapse, every other finding whose evidence reaches
    the collapse's first step (all-equal groups, cut-off answers, KL, a NaN) is its consequence, not a second failure."""
    first = next((f for f in findings if f.name == "collapse"), None)
    if first is None:
        return list(findings), []
    after = [f for f in findings if f is not first and f.step + WINDOWS.get(f.name, 1) - 1 >= first.step]
    return [first] + [f for f in findings if f is not first and f not in after], after
