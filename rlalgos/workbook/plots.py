"""Side-by-side curves from metric tables (one DataFrame per run)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from ..engine.runs import load_metrics, run_config, run_dir_of
from .stats import is_share

DEFAULT_KEYS = ("reward_mean", "eval_accuracy", "entropy", "kl")
TITLES = {
    "reward_mean": "train reward",
    "accuracy": "train accuracy",
    "eval_accuracy": "eval accuracy (sampled pass@1)",
    "eval_greedy_accuracy": "eval accuracy (greedy)",
    "entropy": "entropy (nats / token)",
    "kl": "KL to reference (k3, measured)",
    "kl_loss": "KL term in the loss (k3, beta x this is added)",
    "completion_len": "completion length (tokens)",
    "clip_frac": "clip fraction",
    "zero_std_frac": "zero-variance groups",
    "truncated_frac": "truncated completions",
    "eval_scratchpad_frac": "eval: share using the scratchpad",
    "eval_pass@4": "eval pass@4",
    "reward/rm": "reward model score (the proxy)",
    "reward/correct": "rule reward (correct)",
    "eval_pass@8": "eval pass@8",
    "eval_completion_len": "eval completion length",
    "eval_entropy": "eval entropy (same test prompts)",
    "ds_dropped_frac": "dynamic sampling: groups dropped",
    "ds_extra_rounds": "dynamic sampling: extra rounds",
    "step_seconds": "seconds per step",
    "update_seconds": "update seconds per step",
    "explained_variance": "critic explained variance",
    "value_loss": "value loss",
    "pg_loss": "policy-gradient loss",
    "grad_norm": "gradient norm",
    "clip_frac_high": "clip fraction (high side)",
    "clip_frac_low": "clip fraction (low side)",
    "clip_frac_dual": "clip fraction (dual clip, A < 0)",
}


YLABELS = {
    "entropy": "nats / token",
    "eval_entropy": "nats / token",
    "kl": "nats / token",
    "kl_loss": "nats / token",
    "completion_len": "tokens",
    "eval_completion_len": "tokens",
    "step_seconds": "seconds",
    "update_seconds": "seconds",
    "grad_norm": "L2 norm",
}
"""y-axis units; accuracies, rewards and fractions are unitless (0..1)."""

COUNT_KEYS = frozenset({"completion_len", "eval_completion_len", "ds_extra_rounds", "step_seconds", "update_seconds"})
"""Counts and durations: their axis starts at 0."""

NONNEGATIVE = frozenset({"entropy", "eval_entropy", "kl", "kl_loss", "grad_norm"})
"""Quantities that cannot go below 0: a panel whose axis does not reach 0 says "(y zoomed)"."""


def eval_sample_count(df: pd.DataFrame, key: str) -> int | None:
    """How many answers an evaluation accuracy in ``df`` averages (test prompts x samples,
    or prompts alone for greedy), from the run's config.json; None if unknown."""
    train = run_config(df).get("train")
    if not train or not key.startswith("eval_") or "accuracy" not in key:
        return None
    prompts = train["eval_prompts"] or run_config(df).get("task", {}).get("test_rows")
    if not prompts:
        return None
    return int(prompts) * (1 if "greedy" in key else int(train["eval_samples"]))


def is_binary(values) -> bool:
    """Whether a logged metric is a 0/1 flag (e.g. entropy_monitor_fired): such curves are not smoothed."""
    v = pd.Series(values).dropna()
    return len(v) > 0 and bool(v.isin([0.0, 1.0]).all())


def run_label(df: pd.DataFrame) -> str:
    """The algorithm name from the run folder's config.json, else the folder name."""
    run_dir = run_dir_of(df) or Path("run")
    cfg = run_dir / "config.json"
    if cfg.exists():
        return json.loads(cfg.read_text())["train"]["algo"]
    return run_dir.name


def group_runs(runs: Sequence[pd.DataFrame | str | Path]) -> dict[str, list[pd.DataFrame]]:
    """Runs (DataFrames or run folders) grouped by label: seeds of one algorithm together."""
    groups: dict[str, list[pd.DataFrame]] = {}
    for r in runs:
        df = r if isinstance(r, pd.DataFrame) else load_metrics(r)
        groups.setdefault(run_label(df), []).append(df)
    return groups


def _curve(dfs: list[pd.DataFrame], key: str, smooth: int):
    """Mean and spread across seeds of one metric, on the steps where it was logged.
    Train metrics are smoothed; eval metrics and 0/1 flags are not."""
    series = []
    for df in dfs:
        if key not in df:
            continue
        s = df[["step", key]].dropna().set_index("step")[key].astype(float)
        if smooth > 1 and not key.startswith("eval") and not is_binary(s):
            s = s.rolling(smooth, min_periods=1).mean()
        series.append(s)
    if not series:
        return None
    table = pd.concat(series, axis=1)
    return table.index.values, table.mean(axis=1).values, table.min(axis=1).values, table.max(axis=1).values


PALETTE = {
    "reinforce": "#4c72b0",
    "rloo": "#64b5cd",
    "ppo": "#8172b3",
    "grpo": "#dd8452",
    "vanilla": "#dd8452",
    "baseline": "#dd8452",
    "fresh": "#dd8452",
    "dapo": "#55a868",
    "drgrpo": "#c44e52",
    "dualclip": "#937860",
    "gspo": "#da8bc3",
    "clipcov": "#8c8c8c",
    "klcov": "#ccb974",
    "cispo": "#2f2f2f",
    "sapo": "#17becf",
    "rm + rule": "#1f77b4",
}
"""One colour per algorithm in every figure of the course: vanilla GRPO (and the arm a notebook compares against,
``vanilla`` / ``baseline`` / ``fresh``) is always orange, DAPO always green; an arm that recurs under one name
(notebook 07's ``rm + rule``) has its own too."""
OTHER_COLORS = (
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#1f77b4",
    "#ff7f0e",
    "#d62728",
    "#aec7e8",
    "#ffbb78",
)
"""Colours for arms that are no algorithm name (``clip_higher``, ``kl_0.4``...): each label always gets the same one."""


def label_color(label: str) -> str:
    """The colour of a curve labelled ``label`` in every figure: the algorithm's own, else one fixed by the label's text."""
    return PALETTE.get(label) or OTHER_COLORS[zlib.crc32(label.encode()) % len(OTHER_COLORS)]


NEAR = 0.32
"""Two colours closer than this (Euclidean distance of their RGB values in [0, 1]) are hard to tell apart in one figure."""


def _near(a: str, b: str) -> bool:
    return float(np.linalg.norm(np.subtract(matplotlib.colors.to_rgb(a), matplotlib.colors.to_rgb(b)))) < NEAR


def figure_colors(labels: Sequence[str]) -> dict[str, str]:
    """:func:`label_color` of each label, except that a label that is no algorithm name, whose colour is the
    same as or :data:`NEAR` one another label of the same figure already has, takes the next free one (the
    curves of one figure stay apart; algorithm names always keep theirs)."""
    out: dict[str, str] = {}
    pool = list(dict.fromkeys([*PALETTE.values(), *OTHER_COLORS]))
    for label in sorted(labels, key=lambda lab: lab not in PALETTE):  # algorithm names keep theirs first
        color = label_color(label)
        clash = color in out.values() or (label not in PALETTE and any(_near(color, c) for c in out.values()))
        if clash:  # the next free colour of the pool, or (more curves than colours) one of a spread of hues
            free = [c for c in pool[pool.index(color) :] + pool if not any(_near(c, u) for u in out.values())]
            free = free or [c for c in pool if c not in out.values()]
            color = free[0] if free else matplotlib.colors.to_hex(plt.cm.hsv(len(out) / (len(labels) + 1)))
        out[label] = color
    return out


PROPORTION_LIMITS = (0.0, 1.0)
"""Rates and shares (accuracies, pass@k, fractions) are drawn inside these limits, bands included."""


COST = "cost"
"""The pseudo-metric of a cost panel: mean seconds per training step of each group, as bars."""

FEW_POINTS = 5
"""A curve with fewer evaluations than this is drawn as dots, and its seeds' range as a bar at each dot."""

LINESTYLES = ("-", "--", ":", "-.")
"""One per group in turn, so that groups whose curves coincide (e.g. three at clip fraction 0) all stay visible."""


def _cost_panel(ax, groups: Mapping[str, list[pd.DataFrame]], colors: Mapping[str, str]) -> None:
    """Bars of mean seconds per training step per group, with the seeds' range; the axis starts at 0."""
    labels, means, lows, highs = [], [], [], []
    for label, dfs in groups.items():
        per_run = [float(df.loc[df["step"] > 0, "step_seconds"].mean()) for df in dfs if "step_seconds" in df]
        if per_run:
            labels.append(label)
            means.append(np.mean(per_run))
            lows.append(np.mean(per_run) - min(per_run))
            highs.append(max(per_run) - np.mean(per_run))
    ax.bar(range(len(labels)), means, yerr=[lows, highs], capsize=3, color=[colors[lab] for lab in labels])
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(bottom=0)
    ax.set_title("cost: seconds per step", fontsize=10)
    ax.set_ylabel("seconds")


def _seeds_text(seeds: Sequence[int]) -> str:
    """``seed 0``, ``seeds 0-2`` (consecutive) or ``seeds 0, 3, 7``."""
    s = sorted(set(seeds))
    if len(s) == 1:
        return f"seed {s[0]}"
    if s == list(range(s[0], s[-1] + 1)):
        return f"seeds {s[0]}-{s[-1]}"
    return "seeds " + ", ".join(map(str, s))


def run_facts(groups: Mapping[str, list[pd.DataFrame]]) -> str:
    """What every run of a figure shares, read from the runs' config.json: the task, steps, answers per step,
    the learning rate, updates per rollout and the seeds (e.g. ``addition, 40 steps of 16 prompts x 8 answers,
    lr 0.0001, seeds 0-2``). A setting the groups differ in is the comparison itself and is left out; runs
    without a config.json give ``""``."""
    cfgs = [run_config(df) for dfs in groups.values() for df in dfs]
    if not cfgs or not all(c.get("train") for c in cfgs):
        return ""

    def common(section: str, key: str):
        values = {json.dumps(c.get(section, {}).get(key), sort_keys=True) for c in cfgs}
        return json.loads(values.pop()) if len(values) == 1 else None

    task, steps = common("train", "task"), common("train", "steps")
    prompts, group = common("train", "prompts_per_step"), common("train", "group_size")
    lr, epochs, minibatches = common("algo", "lr"), common("algo", "epochs"), common("algo", "minibatches")
    parts = [str(task)] if task else []
    if steps:
        batch = f" of {prompts} prompts x {group} answers" if prompts and group else ""
        parts.append(f"{steps} steps{batch}")
    if lr:
        parts.append(f"lr {lr:g}")
    if epochs and minibatches and epochs * minibatches > 1:
        parts.append(f"{epochs} epoch{'s' * (epochs > 1)} x {minibatches} minibatch{'es' * (minibatches > 1)}")
    parts.append(_seeds_text([c["train"].get("seed", 0) for c in cfgs]))
    return ", ".join(parts)


def plot_runs(
    runs: Mapping[str, list[pd.DataFrame]] | Sequence,
    keys: Sequence[str] = DEFAULT_KEYS,
    smooth: int = 5,
    ncols: int | None = None,
    title: str | None = "auto",
    log_keys: Sequence[str] = (),
    caption: bool = True,
    bands: bool = True,
    colors: Mapping[str, str] | None = None,
):
    """One panel per metric, one line per group (mean across its seeds) with a
    band from the lowest to the highest seed. Train metrics are smoothed with a
    rolling mean of ``smooth`` steps (0/1 flags are not); eval metrics are drawn
    as logged (markers only when there are fewer than 5 evaluations), and an eval accuracy of a single run carries its binomial
    standard error (sqrt(p (1 - p) / n), n = test prompts x samples from the
    run's config.json; answers to one prompt are correlated, so this is a lower
    bound on the noise). ``log_keys`` get a log y-axis with plain number ticks.
    The key ``"cost"`` is a bar panel of seconds per step. Each group has its own
    colour (:func:`label_color`: the same label, the same colour in every figure) and line style;
    rates and shares, bands and error bars included, stay inside [0, 1], and a share's panel whose axis does not
    start at 0 (and the train reward's, an entropy's, a KL's) says "(y zoomed)" in its title; counts and durations
    (completion length, seconds) start at 0. With several seeds and fewer than 5 evaluations the seeds' range is a
    bar at each dot, not a band. The legend collects
    every group from every panel; ``title`` is the figure's title: ``"auto"`` (the default) is :func:`run_facts`,
    what every run shares (task, steps, lr, seeds), and a notebook's own title gets those facts on a second line;
    ``None`` draws none. ``caption`` adds a line under the figure saying what the
    lines, bands and smoothing are. ``bands=False`` draws the means alone (many groups in one panel).
    ``colors`` (label -> colour) overrides :func:`figure_colors` for the labels it names, so that two figures of
    one notebook can share one assignment (e.g. ``figure_colors`` of every arm the notebook shows).

    runs: ``{label: [df, ...]}``, or a list of DataFrames / run folders (grouped by algorithm)
    Returns the matplotlib Figure.
    """
    groups = dict(runs) if isinstance(runs, Mapping) else group_runs(runs)
    ncols = ncols or min(len(keys), 4)
    nrows = int(np.ceil(len(keys) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.2 * nrows), squeeze=False)
    colors = {**figure_colors(list(groups)), **(colors or {})}
    errbars = False  # whether any eval accuracy carries its binomial error bars
    dots = False  # whether any curve is drawn as dots (an eval metric with fewer than 5 evaluations)
    range_bars = False  # whether any seeds' range is drawn as bars at those dots instead of a band
    for ax, key in zip(axes.flat, keys):
        if key == COST:
            _cost_panel(ax, groups, colors)
            ax.grid(alpha=0.3, axis="y")
            continue
        for i, (label, dfs) in enumerate(groups.items()):
            c = _curve(dfs, key, smooth)
            if c is None:
                continue
            x, mean, lo, hi = c
            color, name = colors[label], f"{label} (n={len(dfs)})" if len(dfs) > 1 else label
            if is_share(key):
                mean, lo, hi = (np.clip(v, *PROPORTION_LIMITS) for v in (mean, lo, hi))
            style = dict(ls=LINESTYLES[i % len(LINESTYLES)], lw=max(2.2 - 0.3 * i, 1.4))
            if key.startswith("eval"):
                style.update({"marker": "o", "ms": 3, **({"ls": "none", "ms": 5} if len(x) < FEW_POINTS else {})})
                dots = dots or len(x) < FEW_POINTS
            n = eval_sample_count(dfs[0], key) if len(dfs) == 1 else None
            if n:
                se = np.sqrt(np.clip(mean * (1 - mean), 0, None) / n)
                below, above = np.minimum(se, mean), np.minimum(se, 1 - mean)  # the bar stays inside [0, 1]
                ax.errorbar(x, mean, yerr=[below, above], color=color, label=name, capsize=2, **style)
                errbars = True
            else:
                ax.plot(x, mean, color=color, label=name, **style)
            if (
                len(dfs) > 1 and bands and len(x) < FEW_POINTS
            ):  # a band between 2-4 points would invent what lies between
                ax.vlines(x, lo, hi, color=color, alpha=0.5, lw=4)
                range_bars = True
            elif len(dfs) > 1 and bands:
                ax.fill_between(x, lo, hi, color=color, alpha=0.2)
        if key in COUNT_KEYS and key not in log_keys:
            ax.set_ylim(bottom=0)
        bottom, top = ax.get_ylim()
        zoomed = (  # the axis hides a visible part of the way down to 0 (a share's 0.02, or a tenth of its top)
            key not in log_keys
            and (is_share(key) or key == "reward_mean" or key in NONNEGATIVE)
            and bottom > min(0.02, 0.1 * top)
        )
        ax.set_title(TITLES.get(key, key) + (" (y zoomed)" if zoomed else ""), fontsize=10)
        ax.set_xlabel("step")
        if key in YLABELS:
            ax.set_ylabel(YLABELS[key])
        if key in log_keys:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    height = fig.get_figheight()  # inches: the legend takes the top 0.35 in, the title sits just above the figure
    fig.tight_layout(rect=(0, (0.3 / height) if caption else 0, 1, 1 - 0.35 / height))
    legend: dict[str, object] = {}  # every group from every panel, in order of first appearance
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(lab, h)
    handles, labels = list(legend.values()), list(legend.keys())
    if handles:
        fig.legend(
            handles, labels, loc="upper center", ncol=min(len(labels), 6), bbox_to_anchor=(0.5, 1.0), frameon=False
        )
    facts = run_facts(groups) if title else ""
    title = facts if title == "auto" else (f"{title}\n{facts}" if facts and facts not in title else title)
    if title:
        fig.suptitle(title, y=1 + 0.02 / height, va="bottom", fontsize=11)
    if caption:
        several = any(len(dfs) > 1 for dfs in groups.values())
        drawn = f"lines (dots where a metric has fewer than {FEW_POINTS} evaluations)" if dots else "lines"
        text = (
            (
                f"{drawn}: mean over seeds; {'bands (bars at dots)' if range_bars else 'bands'}: "
                "the seeds' range (lowest to highest); "
                if bands
                else f"{drawn}: mean over seeds (no bands); "
            )
            if several
            else f"{drawn}: one run each"
            + ("; eval accuracy: error bars of one binomial standard error" if errbars else "")
            + "; "
        )
        trained = [k for k in keys if k != COST and not k.startswith("eval")]
        if not trained:
            text += "eval metrics as measured"
        else:
            text += (
                f"train metrics smoothed over {smooth} steps, eval metrics as measured"
                if smooth > 1
                else "no smoothing"
            )
        fig.text(0.5, 0.0, text, ha="center", va="bottom", fontsize=9, color="0.3")
    return fig


def summary_table(runs: Mapping[str, list[pd.DataFrame]] | Sequence) -> pd.DataFrame:
    """Per group: eval accuracy before/after, final entropy/KL/length, steps and time (mean over seeds)."""
    groups = dict(runs) if isinstance(runs, Mapping) else group_runs(runs)
    out = []
    for label, dfs in groups.items():
        recs = []
        for df in dfs:
            ev = df.dropna(subset=["eval_accuracy"]) if "eval_accuracy" in df else df.iloc[:0]
            train = df[df["step"] > 0]
            last = train.tail(5)
            recs.append(
                {
                    "eval_acc_start": ev["eval_accuracy"].iloc[0] if len(ev) else np.nan,
                    "eval_acc_end": ev["eval_accuracy"].iloc[-1] if len(ev) else np.nan,
                    "greedy_start": ev["eval_greedy_accuracy"].iloc[0]
                    if "eval_greedy_accuracy" in ev and len(ev)
                    else np.nan,
                    "greedy_end": ev["eval_greedy_accuracy"].iloc[-1]
                    if "eval_greedy_accuracy" in ev and len(ev)
                    else np.nan,
                    "steps": int(train["step"].max()) if len(train) else 0,
                    "seconds": train["step_seconds"].sum() if "step_seconds" in train else np.nan,
                    "entropy_end": last["entropy"].mean() if "entropy" in last else np.nan,
                    "kl_end": last["kl"].mean() if "kl" in last else np.nan,
                    "len_end": last["completion_len"].mean() if "completion_len" in last else np.nan,
                }
            )
        row = pd.DataFrame(recs).mean().to_dict()
        row["algo"], row["seeds"] = label, len(dfs)
        out.append(row)
    cols = [
        "algo",
        "seeds",
        "eval_acc_start",
        "eval_acc_end",
        "greedy_start",
        "greedy_end",
        "steps",
        "seconds",
        "entropy_end",
        "kl_end",
        "len_end",
    ]
    return pd.DataFrame(out)[cols].set_index("algo")
