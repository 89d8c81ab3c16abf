"""Exploration, measured: pass@k up to large k, the rare strategy's share, and
distinct right answers, from many samples per prompt (notebook 09).

"Does RL expand what the model can do, or only sharpen it?" (Yue et al. 2025,
arXiv:2504.13837) is answered by pass@k at large k: RL that only sharpens wins
at k = 1 and loses at k = 256, because prompts the base model solved now and then
are no longer solved at all. pass@k uses the unbiased estimator of Chen et al.
2021 (arXiv:2107.03374) from n >= k samples per prompt
(:func:`rlalgos.core.pass_at_k`); its error bar here is the standard error over
prompts (the prompts are the independent units; the n samples of one prompt are
not).
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd
import torch

from .. import core
from ..engine.sampler import SamplingConfig
from ..rollout import rollout
from ..tasks import Task, extract_hash_answer, uses_scratchpad

KS = (1, 4, 16, 64, 256)


@torch.no_grad()
def sample_many(policy, tokenizer, task: Task, rows: Sequence[dict], n: int = 256, seed: int = 0, temperature: float = 1.0, prompts_per_call: int = 4) -> pd.DataFrame:
    """``n`` sampled answers for each row: one line per answer with ``prompt`` (the row's
    index), the task's ``breakdown`` key if any (``level``), ``correct``, ``scratchpad``
    and ``answer`` (the number after ``#``). Sampling runs in a forked RNG seeded with
    ``seed``, ``prompts_per_call`` prompts (x n answers) at a time."""
    sampling = SamplingConfig(max_new_tokens=task.max_new_tokens, temperature=temperature, batch_size=max(n, 1) * prompts_per_call)
    parts = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for start in range(0, len(rows), prompts_per_call):
            chunk = list(rows[start : start + prompts_per_call])
            ro = rollout(policy, tokenizer, chunk, n, task.rewards, sampling, old_logprobs=False, correct_key=task.correct_key)
            df = pd.DataFrame({"prompt": [start + i // n for i in range(len(ro))], "correct": ro.correct.tolist(),
                               "scratchpad": uses_scratchpad(ro.completions), "answer": [extract_hash_answer(c) for c in ro.completions]})
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
    out = g.agg(n=("correct", "size"), c=("correct", "sum"), scratchpad=("scratchpad", "mean"),
                distinct=("answer", "nunique")).reset_index()
    right = samples[samples["correct"] > 0].groupby(keys)["answer"].nunique().rename("distinct_right")
    out = out.merge(right, on=keys, how="left").fillna({"distinct_right": 0})
    for k in ks:
        out[f"pass@{k}"] = [core.pass_at_k(int(n), int(c), k) if k <= n else math.nan for n, c in zip(out["n"], out["c"])]
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
