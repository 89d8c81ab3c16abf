"""Is a difference between two groups of runs bigger than the noise?

One seed is an anecdote: two runs that differ only in their random seed end a few
points apart on this task. So an ablation compares *paired* runs (the same seed
gives the same prompts and the same first rollout in both arms) and asks whether
the mean paired difference is further from zero than its own spread allows:
a t-interval on the paired differences. With 3 seeds the 95% interval is
mean ± 4.30 x sd / sqrt(3), about ± 2.5 sd: only effects that are large and
consistent across seeds count as shown.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..engine.runs import run_config

# two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (scipy is not a dependency)
_T975 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]


def t975(dof: int) -> float:
    """Two-sided 95% quantile of Student's t with ``dof`` degrees of freedom (1.96 beyond 30)."""
    return _T975[dof - 1] if 1 <= dof <= len(_T975) else 1.96


def final_value(df: pd.DataFrame, key: str, tail: int = 5) -> float:
    """A run's end-of-run value of one metric: the last logged value of an eval
    metric, the mean of the last ``tail`` training steps of anything else."""
    if key not in df:
        return float("nan")
    s = df[df["step"] > 0][key].dropna() if not key.startswith("eval") else df[key].dropna()
    if not len(s):
        return float("nan")
    return float(s.iloc[-1]) if key.startswith("eval") else float(s.tail(tail).mean())


def steps_to(df: pd.DataFrame, target: float, key: str = "eval_accuracy") -> float:
    """First training step (> 0: the model before training does not count) at which
    ``key`` reached ``target`` (NaN if it never did)."""
    hit = df[df["step"] > 0].dropna(subset=[key])
    hit = hit[hit[key] >= target]
    return float(hit["step"].iloc[0]) if len(hit) else float("nan")


def by_seed(dfs: Sequence[pd.DataFrame], key: str, tail: int = 5) -> pd.Series:
    """End-of-run value of ``key`` per seed (indexed by the seed in each run's config)."""
    out = {}
    for i, df in enumerate(dfs):
        if isinstance(df, BaseException):  # run_many's place for a failed run
            from ..tools.sweep import failure_text

            raise ValueError(failure_text(df, i))
        seed = run_config(df).get("train", {}).get("seed", i)
        out[seed] = final_value(df, key, tail)
    return pd.Series(out, dtype=float)


def paired_effect(base: Sequence[pd.DataFrame], arm: Sequence[pd.DataFrame], key: str, tail: int = 5) -> dict:
    """Arm minus base at the end of the runs, paired by seed.

    Returns the mean and sd over seeds of each side, the mean paired difference,
    its sd, the 95% t-interval, and ``verdict``: "shown" when the interval
    excludes 0, "within noise" when it does not, "one seed" when there is nothing
    to estimate the noise from.
    """
    return paired_values(by_seed(base, key, tail), by_seed(arm, key, tail), key)


def paired_values(a: pd.Series, b: pd.Series, key: str) -> dict:
    """:func:`paired_effect` of two sets of per-seed numbers (indexed by seed): ``b`` (the arm) minus ``a`` (the base)."""
    seeds = a.index.intersection(b.index)
    d = (b[seeds] - a[seeds]).dropna()
    n = len(d)
    out = {
        "metric": key,
        "base_mean": float(a.mean()),
        "base_sd": float(a.std(ddof=1)) if len(a) > 1 else np.nan,
        "arm_mean": float(b.mean()),
        "arm_sd": float(b.std(ddof=1)) if len(b) > 1 else np.nan,
        "diff": float(d.mean()) if n else np.nan,
        "seeds": n,
    }
    if n < 2:
        return {
            **out,
            "diff_sd": np.nan,
            "ci_low": np.nan,
            "ci_high": np.nan,
            "detectable": np.nan,
            "verdict": "one seed",
        }
    sd = float(d.std(ddof=1))
    half = t975(n - 1) * sd / math.sqrt(n)
    lo, hi = out["diff"] - half, out["diff"] + half
    return {
        **out,
        "diff_sd": sd,
        "ci_low": lo,
        "ci_high": hi,
        "detectable": half,
        "verdict": "shown" if lo > 0 or hi < 0 else "within noise",
    }


def effect_table(
    groups: Mapping[str, Sequence[pd.DataFrame]],
    baseline: str,
    keys: Sequence[str],
    arms: Sequence[str] | None = None,
    tail: int = 5,
) -> pd.DataFrame:
    """:func:`paired_effect` of every arm against ``baseline`` for every metric in
    ``keys``: one row per (arm, metric)."""
    rows = []
    for arm in arms or [k for k in groups if k != baseline]:
        for key in keys:
            rows.append({"arm": arm, **paired_effect(groups[baseline], groups[arm], key, tail)})
    return pd.DataFrame(rows).set_index(["arm", "metric"])


def effect_lines(
    groups: Mapping[str, Sequence[pd.DataFrame]],
    baseline: str,
    keys: Sequence[str],
    arms: Sequence[str] | None = None,
    tail: int = 5,
) -> list[str]:
    """:func:`effect_table` as the course's verdict lines (:func:`verdict_line` with both means), one per (arm, metric)."""
    table = effect_table(groups, baseline, keys, arms, tail)
    return [
        verdict_line({**row, "metric": metric}, arm, baseline, means=True) for (arm, metric), row in table.iterrows()
    ]


def is_share(key: str) -> bool:
    """Whether a metric is a rate or share in [0, 1] (accuracies, pass@k, fractions; ``metric/level`` as its metric):
    its differences read as points."""
    base = key.split("/")[0]
    return "accuracy" in base or "pass@" in base or base.endswith("_frac")


def verdict_line(row: Mapping, arm: str, base: str, means: bool = False, units: str = "seeds") -> str:
    """The course's one verdict format, from a :func:`paired_effect` row: e.g.
    ``eval_accuracy  dapo - grpo = +7.7 points (95% CI +1.9..+13.5, 6 seeds; detectable >= 5.8) -> shown``.
    "Detectable" is the interval's half-width: the smallest effect the comparison could tell from zero.
    ``means``: both ends first, in the metric's own units (``+4.3 points (0.680 vs 0.637; 95% CI ...``).
    ``units``: what ``row["seeds"]`` counts, plural (``"rollouts"``, ``"answers"`` where those are the
    independent units instead of training seeds)."""
    scale, unit, f = (
        (100.0, " points", ".1f") if is_share(row["metric"]) or row["metric"] == "reward_mean" else (1.0, "", ".3g")
    )
    head = f"{row['metric']}  {arm} - {base} = {row['diff'] * scale:+{f}}{unit}"
    m = ".3f" if unit else ".3g"  # both ends: a share as a proportion, any other metric to 3 significant digits
    ends = f"{row['arm_mean']:{m}} vs {row['base_mean']:{m}}; " if means else ""
    if row["seeds"] < 2 or row.get("ci_low") is None or row.get("ci_high") is None:
        n = f"{row['seeds']} {units if row['seeds'] != 1 else units.removesuffix('s')}"
        return f"{head} ({ends}{n}; no interval) -> {row.get('verdict', 'one seed')}"
    detect = (
        (row["ci_high"] - row["ci_low"]) / 2 * scale
    )  # the half-width (a record written before "detectable" existed has only the ends)
    tail = f"within noise (could see >= {detect:{f}}{unit})" if row["verdict"] == "within noise" else row["verdict"]
    return (
        f"{head} ({ends}95% CI {row['ci_low'] * scale:+{f}}..{row['ci_high'] * scale:+{f}}, {row['seeds']} {units}; "
        f"detectable >= {detect:{f}}) -> {tail}"
    )


def binomial_se(p: float, n: int) -> float:
    """Standard error of an accuracy ``p`` measured on ``n`` independent samples."""
    return math.sqrt(max(p * (1 - p), 0.0) / n) if n else float("nan")
