"""The claims measured on the base model's own rollouts, with no training arms (notebook 04,
sections 4 and 5; ``benchmarks/mechanisms.py``), as functions of the seeds.

Each measure samples from the shipped base model at notebook 04's sizes (64 prompts x 8
answers per seed; the planted long answer on 32 prompts) and returns, per *arm* and metric,
one number per seed. :func:`rlalgos.workbook.claims.run_claim` pairs them by seed under the
one verdict rule of the scorecard, as it does for trained arms. An arm here is what is
compared: two loss aggregations on the same rollout, the groups dynamic sampling keeps
against all it sampled, or the truncated answers against "a truncated answer is wrong" (0).

    measure(seeds) -> {arm: {metric: [value per seed]}}

A *fit* is the other kind of number here: one computed from a claim's trained runs as a whole
rather than paired by seed. :data:`FITS` holds those, as functions of the runs' metrics by arm
returning effect rows whose interval is the fit's own 95% interval: the entropy-covariance law
over every step (notebook 09, section 3), and pass@k of the trained checkpoints against the base
model, paired by prompt (notebook 09b).
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import pandas as pd

from ..tasks import get_task, make_addition_split

PROBE_PROMPTS = 64  # prompts per seed in notebook 04's censuses (half of them for the planted long answer)
PROBE_G = 8  # answers per prompt
TASK = "addition:terms=2-6"  # notebook 04's task
BUDGET = 24  # the truncation census's budget where truncated answers are most often right
SIGNAL_ONLY = "kept by dynamic sampling"
SAMPLED = "sampled batch"

Values = dict[str, dict[str, list[float]]]


def _base():
    from ..model import (
        load_policy,
    )  # torch and transformers load here, not when the claims registry imports this module

    policy, tokenizer = load_policy(None, device="cpu")
    return policy, tokenizer, get_task(TASK)


def aggregation(seeds: Sequence[int]) -> Values:
    """Per loss aggregation, the change of a planted long wrong answer's mean token log-prob
    after one AdamW step on the same rollout (``dlogp_long``; more negative = pushed down harder)."""
    from . import mechanisms

    policy, tokenizer, task = _base()
    out: Values = {}
    for s in seeds:
        rows = make_addition_split(PROBE_PROMPTS // 2, seed=100 + s, terms=(2, 3))
        ro, planted = mechanisms.plant_long_wrong(policy, tokenizer, task, rows, PROBE_G, 48, seed=s)
        table = mechanisms.summarize_push(mechanisms.aggregation_push(policy, ro, planted, max_len=48))
        for mode in table.index:
            out.setdefault(mode, {}).setdefault("dlogp_long", []).append(float(table.loc[mode, "dlogp_long"]))
    return out


def signal(seeds: Sequence[int]) -> Values:
    """Per seed, over 64 prompts of 2-6 terms: the share of groups that carry signal (not every
    reward equal) and the mean number of terms, in the sampled batch and in what dynamic
    sampling keeps of it (its signal share is 1 by construction)."""
    from . import mechanisms

    policy, tokenizer, task = _base()
    out: Values = {SAMPLED: {"signal_frac": [], "mean_terms": []}, SIGNAL_ONLY: {"signal_frac": [], "mean_terms": []}}
    for s in seeds:
        c = mechanisms.signal_census(
            policy,
            tokenizer,
            task,
            make_addition_split(PROBE_PROMPTS, seed=300 + s, terms=(2, 3, 4, 5, 6)),
            PROBE_G,
            seed=s,
            max_new_tokens=task.max_new_tokens,
        )
        terms = c.index.to_series().astype(float)
        out[SAMPLED]["signal_frac"].append(float(c["informative"].sum() / c["groups"].sum()))
        out[SAMPLED]["mean_terms"].append(float((terms * c["groups"]).sum() / c["groups"].sum()))
        out[SIGNAL_ONLY]["signal_frac"].append(1.0)
        out[SIGNAL_ONLY]["mean_terms"].append(float((terms * c["informative"]).sum() / max(c["informative"].sum(), 1)))
    return out


def truncation(seeds: Sequence[int]) -> Values:
    """Per seed, over 64 prompts of 3-4 terms at a 24-token budget: the share of truncated
    answers that are right all the same (``truncated_correct_frac``), and the share truncated."""
    from . import mechanisms

    policy, tokenizer, task = _base()
    arm = f"truncated at {BUDGET} tokens"
    out: Values = {arm: {"truncated_correct_frac": [], "truncated_frac": []}}
    for s in seeds:
        r = mechanisms.truncation_census(
            policy,
            tokenizer,
            task,
            make_addition_split(PROBE_PROMPTS, seed=200 + s, terms=(3, 4)),
            PROBE_G,
            BUDGET,
            seed=s,
        )
        out[arm]["truncated_correct_frac"].append(r["truncated_correct_frac"])
        out[arm]["truncated_frac"].append(r["truncated_frac"])
    out["if truncated meant wrong"] = {"truncated_correct_frac": [0.0] * len(seeds)}
    return out


MEASURES: dict[str, Callable[[Sequence[int]], Values]] = {
    "aggregation": aggregation,
    "signal": signal,
    "truncation": truncation,
}


NO_RELATION = "no relation (slope 0)"
SLOPE = "slope of entropy_change on entropy_cov"


def entropy_fit(groups: Mapping[str, Sequence[pd.DataFrame]]) -> list[dict]:
    """Cui et al.'s first-order law (:func:`rlalgos.workbook.exploration.mechanism_fit`) over every
    step of every run (the headline row, as notebook 09 pools its arms), then arm by arm: the slope
    of the measured entropy change on the covariance term, with its 95% interval; the law predicts
    a negative slope."""
    from .exploration import mechanism_fit

    def row(arm: str, dfs: Sequence[pd.DataFrame], headline: bool) -> dict:
        f = mechanism_fit(dfs)
        return {
            "arm": arm,
            "base": NO_RELATION,
            "metric": SLOPE,
            "headline": headline,
            "arm_mean": f["slope"],
            "base_mean": 0.0,
            "diff": f["slope"],
            "ci_low": f["slope_low"],
            "ci_high": f["slope_high"],
            "fit": {k: round(v, 4) if isinstance(v, float) else v for k, v in f.items()},
        }

    rows = [row("all arms (pooled)", [df for dfs in groups.values() for df in dfs], True)]
    return rows + [row(arm, dfs, False) for arm, dfs in groups.items()]


PASSK_N = 256  # samples per prompt for pass@k (notebook 09b); pass@k for every k <= n from the same samples
PASSK_PROMPTS = 32  # test prompts, the first of the split (half easy, half hard on the trap task)
BASE_MODEL = "the base model"


def passk_effect(arm_prompts: Sequence[pd.DataFrame], base_prompts: Sequence[pd.DataFrame], k: int) -> dict:
    """Arm minus base pass@k, paired by prompt, each side first averaged over its seeds' tables
    (:func:`rlalgos.workbook.exploration.per_prompt`, the same prompts in each): the mean over
    prompts and its 95% normal interval over prompts (notebook 09b's pass@k verdict lines)."""
    import math

    def pooled(tables):
        return pd.concat([t.set_index("prompt")[f"pass@{k}"] for t in tables]).groupby(level=0).mean()

    arm, base = pooled(arm_prompts), pooled(base_prompts)
    d = arm - base
    half = 1.96 * float(d.std(ddof=1)) / math.sqrt(len(d)) if len(d) > 1 else math.nan
    return {
        "arm_mean": float(arm.mean()),
        "base_mean": float(base.mean()),
        "diff": float(d.mean()),
        "ci_low": float(d.mean()) - half,
        "ci_high": float(d.mean()) + half,
        "prompts": len(d),
    }


def passk(groups: Mapping[str, Sequence[pd.DataFrame]]) -> list[dict]:
    """Yue et al.'s question of each trained arm: its checkpoints' pass@1 and pass@n against the base
    model's on the same :data:`PASSK_PROMPTS` test prompts, :data:`PASSK_N` samples each (cached next to
    each model, under the names notebook 09b uses, so its samples are read back), paired by prompt
    (:func:`passk_effect`). RL that sharpens raises pass@1 (the headline) and does not raise pass@n."""
    from pathlib import Path

    from ..engine.runs import run_config
    from .exploration import balanced_rows, model_samples, per_prompt

    rows, bases = (
        [],
        {},
    )  # (model, task) -> the base model's per-prompt table: sampled once, whichever arm's folder holds the cache
    for arm, dfs in groups.items():
        train = run_config(dfs[0])["train"]
        task = get_task(train["task"])
        prompts = balanced_rows(task, PASSK_PROMPTS)
        name = f"passk_n{PASSK_N}_p{len(prompts)}.csv"
        ks = (1, PASSK_N)
        key = (train["model"], train["task"])
        if key not in bases:
            bases[key] = per_prompt(
                model_samples(
                    train["model"] or None, Path(dfs[0].run_dir).parent / f"base_{name}", task, prompts, PASSK_N
                ),
                ks,
            )
        base = bases[key]
        trained = [
            per_prompt(
                model_samples(Path(df.run_dir) / "checkpoint", Path(df.run_dir) / name, task, prompts, PASSK_N), ks
            )
            for df in dfs
        ]
        for k, direction in ((1, +1), (PASSK_N, -1)):
            e = passk_effect(trained, [base], k)
            rows.append(
                {
                    "arm": arm,
                    "base": BASE_MODEL,
                    "metric": f"pass@{k}",
                    "direction": direction,
                    "headline": k == 1,
                    **e,
                    "fit": {
                        "prompts": e["prompts"],
                        "samples_per_prompt": PASSK_N,
                        "interval": "95% normal, over prompts (seeds pooled)",
                    },
                }
            )
    return rows


FITS: dict[str, Callable[[Mapping[str, Sequence[pd.DataFrame]]], list[dict]]] = {
    "entropy_fit": entropy_fit,
    "passk": passk,
}
