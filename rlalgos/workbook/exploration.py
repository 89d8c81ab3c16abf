"""Exploration, measured: pass@k up to large k, the rare strategy's share, and
distinct right answers, from many samples per prompt (notebooks 09 and 09b).

"Does RL expand what the model can do, or only sharpen it?" (Yue et al. 2025,
arXiv:2504.13837) is answered by pass@k at large k: RL that only sharpens wins
at k = 1 and loses at k = 256, because prompts the base model solved now and then
are no longer solved at all. pass@k uses the unbiased estimator of Chen et al.
2021 (arXiv:2107.03374) from n >= k samples per prompt
(:func:`rlalgos.core.pass_at_k`); its error bar here is the standard error over
prompts (the prompts are the independent units; the n samples of one prompt are
not).

The exploration sweep's regime and arms are :mod:`rlalgos.workbook.experiments`'
``TRAP_SHARED``, ``TRAP_GRPO`` and ``TRAP_ARMS`` (``benchmarks/exploration.py`` runs them,
notebooks 09 and 09b read them). The regime (fixed before any arm was run; vanilla-only pilots on seeds 100 and 101,
never used for a claim, chose the learning rate: at 3e-5 nothing moved in 40 steps,
at 5e-5 the easy answers eroded without the scratchpad growing, at 1e-4 the
scratchpad took over the hard prompts): ``--task trap`` from ``data/trap_model``,
16 prompts x 8 answers per step, 8 minibatches per rollout (8 optimizer steps, the
regime where clips act), lr 1e-4, no KL, 30 steps, evaluation every 10 steps on 200 test prompts x 4 samples,
the entropy probe on, the doctor's stop off. Seeds 0-5 for every arm of notebook 09, 0-2 for notebook 09b's
ablations and pass@k. Each arm changes one thing:

* ``vanilla``: GRPO (clip 0.2 / 0.2, per-answer loss, no KL);
* ``clip_higher``: clip_high 0.28;
* ``clip_cov`` / ``kl_cov``: verl's loss modes with their defaults;
* ``entropy_bonus``: DAPO's entropy bonus (coefficient 0.01), always on;
* ``temperature``: DAPO's temperature monitor (fires below 0.3 nats/token, about 3/4
  of the base model's 0.396, +0.1 per firing up to 1.5);
* ``kl``: the k3 KL term at beta 0.04;
* ``dapo`` (added after an earlier 3-seed sweep of the seven arms above was read): DAPO with
  all its defaults, at the same lr and minibatches.
* ``dynamic_only`` and ``dapo_no_dynamic`` (notebook 09b): the DAPO class with only dynamic
  sampling on, and DAPO with only dynamic sampling off;
* ``vanilla_36_prompts`` (notebook 09b): vanilla drawing 36 prompts per step, about as many
  answers as DAPO draws, so that "more informative groups" and "more samples" are told apart.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch

from .. import core
from ..engine.runs import IGNORED, finished  # noqa: F401  (notebooks and claims read them from here)
from ..engine.sampler import SamplingConfig
from ..rollout import rollout
from ..tasks import Task, extract_hash_answer, uses_scratchpad

KS = (1, 4, 16, 64, 256)

BASE_EVAL_ENTROPY = (
    0.396  # nats/token: the trap model's eval entropy on the test prompts (step 0 of every run; notebook 09 prints it)
)


@torch.no_grad()
def sample_many(
    policy,
    tokenizer,
    task: Task,
    rows: Sequence[dict],
    n: int = 256,
    seed: int = 0,
    temperature: float = 1.0,
    prompts_per_call: int = 4,
) -> pd.DataFrame:
    """``n`` sampled answers for each row: one line per answer with ``prompt`` (the row's
    index), the task's ``breakdown`` key if any (``level``), ``correct``, ``scratchpad``
    and ``answer`` (the number after ``#``). Sampling runs in a forked RNG seeded with
    ``seed``, ``prompts_per_call`` prompts (x n answers) at a time."""
    sampling = SamplingConfig(
        max_new_tokens=task.max_new_tokens, temperature=temperature, batch_size=max(n, 1) * prompts_per_call
    )
    parts = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for start in range(0, len(rows), prompts_per_call):
            chunk = list(rows[start : start + prompts_per_call])
            ro = rollout(
                policy, tokenizer, chunk, n, task.rewards, sampling, old_logprobs=False, correct_key=task.correct_key
            )
            df = pd.DataFrame(
                {
                    "prompt": [start + i // n for i in range(len(ro))],
                    "correct": ro.correct.tolist(),
                    "scratchpad": uses_scratchpad(ro.completions),
                    "answer": [extract_hash_answer(c) for c in ro.completions],
                }
            )
            if task.breakdown:
                df[task.breakdown] = [r[task.breakdown] for r in ro.rows]
            parts.append(df)
    return pd.concat(parts, ignore_index=True)


def per_prompt(samples: pd.DataFrame, ks: Sequence[int] = KS, by: str | None = None) -> pd.DataFrame:
    """One line per prompt: ``n``, ``c`` (right answers), ``pass@k`` for each k <= n,
    ``scratchpad`` (its share of the prompt's answers), ``distinct_right`` (how many
    different right answers: 1 at most on addition) and ``distinct`` (different final
    answers, right or wrong: how spread the policy still is)."""
    keys = ["prompt"] + ([by] if by else [])
    g = samples.groupby(keys, sort=True)
    out = g.agg(
        n=("correct", "size"), c=("correct", "sum"), scratchpad=("scratchpad", "mean"), distinct=("answer", "nunique")
    ).reset_index()
    right = samples[samples["correct"] > 0].groupby(keys)["answer"].nunique().rename("distinct_right")
    out = out.merge(right, on=keys, how="left").fillna({"distinct_right": 0})
    for k in ks:
        out[f"pass@{k}"] = [
            core.pass_at_k(int(n), int(c), k) if k <= n else math.nan for n, c in zip(out["n"], out["c"])
        ]
    return out


def pass_at_k_curve(prompts: pd.DataFrame, ks: Sequence[int] = KS, by: str | None = None) -> pd.DataFrame:
    """Mean pass@k over prompts with its standard error, one line per k (and per value
    of ``by``): columns ``k``, ``pass``, ``se``, ``prompts``."""
    groups = [("all", prompts)] + ([(v, d) for v, d in prompts.groupby(by)] if by else [])
    lines = []
    for name, d in groups:
        for k in ks:
            x = d[f"pass@{k}"].dropna()
            se = float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan
            lines.append({"group": name, "k": k, "pass": float(x.mean()), "se": se, "prompts": len(x)})
    return pd.DataFrame(lines)


def run_or_reuse(runs: Sequence[tuple], jobs: int = 2, progress: bool = True) -> list[str]:
    """Train the runs that are not :func:`finished` (side by side, :func:`rlalgos.tools.sweep.run_many` with
    ``reuse``) and return every run's folder: rerunning a notebook reuses what it already trained."""
    from ..tools.sweep import run_many

    for r in run_many(list(runs), jobs=jobs, progress=progress, reuse=True):
        if isinstance(r, Exception):
            raise r
    return [cfg.out_dir for cfg, _ in runs]


def cached_samples(path: Path, make) -> pd.DataFrame:
    """``make()``'s DataFrame, saved to ``path`` (CSV) the first time and read back after."""
    path = Path(path)
    if path.exists():
        return pd.read_csv(path, dtype={"answer": str})
    df = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)
    return df


def mechanism_fit(dfs: Sequence[pd.DataFrame]) -> dict:
    """Cui et al.'s first-order law against the measurements, over every step of ``dfs``
    (runs with ``entropy_probe``): the covariance ``entropy_cov`` (x) and the measured
    ``entropy_change`` on the rollout's states (y). Returns ``steps``, ``corr`` (Pearson),
    ``slope`` of the least-squares line y = a + slope x with its 95% interval
    (``slope_low``, ``slope_high``), and ``sign_as_predicted``: the share of steps whose
    change has the sign opposite to the covariance, as the law predicts."""
    import numpy as np

    from .stats import t975

    d = pd.concat([df[df["step"] > 0][["entropy_cov", "entropy_change"]] for df in dfs]).dropna()
    x, y = d["entropy_cov"].to_numpy(), d["entropy_change"].to_numpy()
    n = len(d)
    xc, yc = x - x.mean(), y - y.mean()
    slope = float((xc * yc).sum() / (xc * xc).sum())
    resid = yc - slope * xc
    se = float(np.sqrt((resid**2).sum() / (n - 2) / (xc * xc).sum())) if n > 2 else float("nan")
    half = t975(n - 2) * se if n > 2 else float("nan")
    moved = (x != 0) & (y != 0)
    return {
        "steps": n,
        "corr": float(np.corrcoef(x, y)[0, 1]),
        "slope": slope,
        "slope_low": slope - half,
        "slope_high": slope + half,
        "sign_as_predicted": float((np.sign(y[moved]) == -np.sign(x[moved])).mean()),
        "cov_mean": float(x.mean()),
        "change_mean": float(y.mean()),
    }


def seed_band(dfs: Sequence[pd.DataFrame], key: str) -> pd.DataFrame:
    """Per step (where ``key`` was logged): the mean over runs and its 95% t-interval
    (``low``, ``high``; the mean alone with one run), from ``len(dfs)`` seeds."""
    from .stats import t975

    wide = pd.concat([df.set_index("step")[key].dropna().rename(i) for i, df in enumerate(dfs)], axis=1)
    n = wide.notna().sum(axis=1)
    mean, sd = wide.mean(axis=1), wide.std(axis=1, ddof=1)
    half = pd.Series([t975(int(k) - 1) if k > 1 else float("nan") for k in n], index=wide.index) * sd / n.pow(0.5)
    return pd.DataFrame({"mean": mean, "low": mean - half, "high": mean + half, "runs": n})


def start_effect(dfs: Sequence[pd.DataFrame], key: str) -> dict:
    """End of each run minus its own first evaluation (step 0: the base model, on the same test prompts and
    sampling seed), paired by seed: :func:`rlalgos.workbook.stats.paired_values`, the arm being the trained model."""
    from ..engine.runs import run_config
    from .stats import paired_values

    def seed_of(i, df):
        return run_config(df).get("train", {}).get("seed", i)

    start = pd.Series({seed_of(i, df): df[key].dropna().iloc[0] for i, df in enumerate(dfs)}, dtype=float)
    end = pd.Series({seed_of(i, df): df[key].dropna().iloc[-1] for i, df in enumerate(dfs)}, dtype=float)
    return paired_values(start, end, key)


def balanced_rows(task: Task, n_prompts: int) -> list[dict]:
    """The first ``n_prompts`` test rows, half from each value of the task's breakdown key
    (easy and hard on the trap task), or simply the first ``n_prompts`` without one."""
    if not task.breakdown:
        return task.test[:n_prompts]
    values = sorted({r[task.breakdown] for r in task.test})
    per = n_prompts // len(values)
    return [r for v in values for r in [x for x in task.test if x[task.breakdown] == v][:per]]


def model_samples(model_dir, cache: Path, task: Task, rows: Sequence[dict], n: int, seed: int = 1) -> pd.DataFrame:
    """:func:`sample_many` of the model in ``model_dir`` (None: the shipped base model), cached in ``cache``."""

    def make():
        from ..model import load_policy

        policy, tokenizer = load_policy(model_dir, device="cpu")
        return sample_many(policy, tokenizer, task, rows, n=n, seed=seed)

    return cached_samples(cache, make)


def verdict_lines(table: pd.DataFrame, base: str) -> str:
    """Every row of an :func:`rlalgos.workbook.stats.effect_table` against ``base`` as the course's verdict
    line (:func:`rlalgos.workbook.stats.verdict_line`), one per line: what the claims registry reads back."""
    from .stats import verdict_line

    return "\n".join(verdict_line({**row, "metric": metric}, arm, base) for (arm, metric), row in table.iterrows())
