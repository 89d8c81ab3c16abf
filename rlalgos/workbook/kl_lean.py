"""Which KL does k3's gradient lean toward, and where ``kl`` and ``kl_loss`` part: notebook 03b's
readings of :mod:`rlalgos.workbook.kl_estimators`' measurement that need more than its table keeps.

* :func:`kl_rollouts` is :func:`~rlalgos.workbook.kl_estimators.kl_estimator_table` (the same rollouts,
  seeds and numbers) plus what the table drops: each estimator's gradient summed over the rollouts against
  the summed *forward* KL's (``grad_cos_forward_pooled``), and every answer's kind (scratchpad or direct),
  length, summed k3 and summed exact KL, and the same at its first token (``table.attrs["answers"]``).
* The **lean** of a gradient (:func:`grad_lean`): its cosine with the exact forward KL's gradient minus its
  cosine with the exact reverse KL's, per rollout. Sampling noise that favours neither direction adds 0
  on average to both cosines' numerators and divides both by the same norm: it shrinks a lean toward 0
  but, averaged over rollouts, does not flip its sign. So a mean lean above 0 says the gradient's mean
  direction is nearer the forward KL's than the reverse KL's, however noisy the estimator, whereas one
  estimator's cosine with the forward KL's against another's mixes their noise with their direction.
  :func:`lean_effect` gives a lean (or a difference of two) as a verdict row.
* :func:`aggregation_split`: per rollout, the token-mean of k3 (how ``kl`` is logged), its
  seq-mean-token-mean (how ``kl_loss`` is formed) and the direct answers' share of each;
  :func:`answer_kinds` the same pooled over the rollouts, by kind of answer, token-weighted and
  answer-weighted, and at each answer's first token (where all answers to a prompt share the state).
* :func:`training_run` finds notebook 03's run whatever its evaluation settings: they change no number of
  its training (evaluation samples in a forked random stream, :func:`rlalgos.train.evaluate`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch

from ..tasks import uses_scratchpad
from .kl_estimators import EXACT, FORWARD, PER_ROLLOUT, _cos, measured_rollouts, per_rollout, summarize
from .stats import paired_values

EVAL_SETTINGS = ("eval_every", "eval_prompts", "eval_samples")
"""The TrainConfig fields that say only how a run is evaluated, never what it trains."""

MILLI = 1000.0
"""KL values in verdict lines are in thousandths of a nat (``KL_mnat``), so that they print as decimals."""


def training_run(cfg, algo_cfg) -> str:
    """The folder of the run ``(cfg, algo_cfg)``, trained only if ``cfg.out_dir`` does not already hold it
    finished (:func:`rlalgos.workbook.exploration.run_or_reuse`), where the saved run's evaluation settings
    (:data:`EVAL_SETTINGS`) are taken as they are: a run that evaluates every 5 steps instead of 10 is the
    same training run and is reused. Every other setting must match."""
    from .exploration import run_or_reuse

    saved = Path(cfg.out_dir) / "config.json"
    if saved.is_file():
        train = json.loads(saved.read_text(encoding="utf-8")).get("train", {})
        cfg = replace(cfg, **{k: train[k] for k in EVAL_SETTINGS if k in train})
    (run_dir,) = run_or_reuse([(cfg, algo_cfg)], jobs=1, progress=False)
    return run_dir


def kl_rollouts(*args, **kwargs) -> pd.DataFrame:
    """:func:`~rlalgos.workbook.kl_estimators.kl_estimator_table` of the same arguments (the same
    rollouts: seeds ``seed``, ``seed + 1``, ...; the same table), with two additions:

    * column ``grad_cos_forward_pooled``: the cosine of each gradient summed over the rollouts with the
      exact forward KL's gradient summed the same way (``grad_cos_pooled`` is the reverse KL's);
    * ``table.attrs["answers"]``: one row per answer, columns ``rollout``, ``scratchpad`` (it shows its
      working; else a direct ``#n`` answer), ``tokens``, ``k3``, ``k3_no_clamp`` and ``exact`` (the
      answer's summed clamped k3, unclamped k3 and exact KL over its tokens), and ``k3_first``,
      ``k3_no_clamp_first``, ``exact_first``: the same at its first token alone. At the first token the
      state is the prompt, so every answer to one prompt has the same exact KL there, whatever it sampled.
    """
    pairs = measured_rollouts(*args, **kwargs)
    measured, answers = [m for _, m in pairs], []
    for r, (ro, m) in enumerate(pairs):
        lengths = m["lengths"].long()  # (N,)
        first = torch.cumsum(lengths, 0) - lengths  # (N,) where each answer's first token sits in "values"
        answers.append(
            pd.DataFrame(
                {
                    "rollout": r,
                    "scratchpad": uses_scratchpad(ro.completions),
                    "tokens": m["lengths"].tolist(),
                    "k3": m["answers"]["k3"].tolist(),
                    "k3_no_clamp": m["answers"]["k3 no clamp"].tolist(),
                    "exact": m["answers"][EXACT].tolist(),
                    "k3_first": m["values"]["k3"][first].tolist(),
                    "k3_no_clamp_first": m["values"]["k3 no clamp"][first].tolist(),
                    "exact_first": m["values"][EXACT][first].tolist(),
                }
            )
        )
    table = summarize(measured)
    forward = sum(m["grads"][FORWARD] for m in measured)
    table["grad_cos_forward_pooled"] = [_cos(sum(m["grads"][k] for m in measured), forward) for k in table.index]
    table.attrs["answers"] = pd.concat(answers, ignore_index=True)
    return table


def grad_lean(table: pd.DataFrame) -> pd.DataFrame:
    """Per rollout (rows) and estimator (columns): the cosine of its gradient with the exact forward KL's
    minus its cosine with the exact reverse KL's. Above 0: nearer the forward KL's direction; the exact
    reverse KL's own lean is cos(forward, reverse) - 1, the forward KL's 1 - cos(forward, reverse)."""
    return per_rollout(table, "grad_cos_forward") - per_rollout(table, "grad_cos")


def lean_effect(table: pd.DataFrame, arm: str, base: str | None = None, column: str = "grad_lean") -> dict:
    """``arm`` minus ``base`` on ``column`` (``"grad_lean"``, :func:`grad_lean`, or one of
    :data:`~rlalgos.workbook.kl_estimators.PER_ROLLOUT`), paired by rollout; ``base`` None: ``arm``
    against 0. A :func:`~rlalgos.workbook.stats.paired_values` row: print it with
    ``verdict_line(row, arm, base or "0", units="rollouts")``."""
    if column not in (*PER_ROLLOUT, "grad_lean"):
        raise ValueError(f"column is 'grad_lean' or one of {PER_ROLLOUT}, not {column!r}")
    runs = grad_lean(table) if column == "grad_lean" else per_rollout(table, column)
    zero = pd.Series(0.0, index=runs.index)
    return paired_values(zero if base is None else runs[base], runs[arm], column)


def aggregation_split(table: pd.DataFrame) -> pd.DataFrame:
    """Per rollout of a :func:`kl_rollouts` table: ``answers`` and ``direct`` (how many of them are direct
    answers); ``kl``, the token-mean of the clamped k3 (every token weighs the same, as the logged ``kl``)
    and ``kl_loss``, its seq-mean-token-mean (each answer's mean, then the mean over answers, as GRPO's
    loss and the logged ``kl_loss``); ``direct_frac_kl`` and ``direct_frac_kl_loss``: the direct answers'
    share of each sum; ``k3_direct``, ``k3_scratchpad``, ``exact_direct``, ``exact_scratchpad``: the
    token-mean of k3 or of the exact KL over that kind's tokens (NaN where a rollout has none)."""
    a = table.attrs["answers"]
    a = a.assign(k3_mean=a.k3 / a.tokens, direct=~a.scratchpad.astype(bool))

    def token_mean(d, col):
        return d[col].sum() / d.tokens.sum() if len(d) else float("nan")

    rows = {}
    for r, d in a.groupby("rollout"):
        direct, pad = d[d.direct], d[~d.direct]
        rows[r] = {
            "answers": len(d),
            "direct": len(direct),
            "kl": d.k3.sum() / d.tokens.sum(),
            "kl_loss": d.k3_mean.mean(),
            "direct_frac_kl": direct.k3.sum() / d.k3.sum(),
            "direct_frac_kl_loss": direct.k3_mean.sum() / d.k3_mean.sum(),
            "k3_direct": token_mean(direct, "k3"),
            "k3_scratchpad": token_mean(pad, "k3"),
            "exact_direct": token_mean(direct, "exact"),
            "exact_scratchpad": token_mean(pad, "exact"),
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("rollout")


def in_millinats(row: dict) -> dict:
    """A verdict row of KL values (nats) in thousandths of a nat, named ``KL_mnat``: the same verdict,
    printed by :func:`~rlalgos.workbook.stats.verdict_line` as decimals instead of ``-2.23e-05``."""
    keys = ("base_mean", "base_sd", "arm_mean", "arm_sd", "diff", "diff_sd", "ci_low", "ci_high", "detectable")
    return {**row, **{k: row[k] * MILLI for k in keys if row.get(k) is not None}, "metric": "KL_mnat"}


def answer_kinds(table: pd.DataFrame) -> pd.DataFrame:
    """Every answer of a :func:`kl_rollouts` table, pooled over its rollouts, by kind (columns
    ``scratchpad`` and ``direct``), rows:

    * ``answers``, ``tokens per answer``;
    * ``k3, token-mean`` and ``exact KL, token-mean``: summed over the kind's tokens, divided by their
      number (every token weighs the same, as in ``kl``). Weighted by the kinds' token counts they
      recombine into the table's ``mean`` of k3 and of the exact KL;
    * ``k3, answer-mean``: each answer's mean over its tokens, averaged over the kind's answers (every
      answer weighs the same, as in ``kl_loss``);
    * ``k3, first token``, ``k3 no clamp, first token`` and ``exact KL, first token``: the mean over the
      kind's answers of the value at the answer's first token, where the state is the prompt;
    * ``share of kl`` and ``share of kl_loss``: the kind's share of the token-mean of k3 and of its
      seq-mean-token-mean.

    A kind with no answer (e.g. no direct answer in a small sample) gets NaN means and shares of 0.
    """
    a = table.attrs["answers"]
    k3_mean = a.k3 / a.tokens
    pad = a.scratchpad.astype(bool)
    return pd.DataFrame(
        {
            kind: {
                "answers": int(sel.sum()),
                "tokens per answer": a.tokens[sel].mean(),
                "k3, token-mean": a.k3[sel].sum() / a.tokens[sel].sum() if sel.any() else float("nan"),
                "exact KL, token-mean": a.exact[sel].sum() / a.tokens[sel].sum() if sel.any() else float("nan"),
                "k3, answer-mean": k3_mean[sel].mean(),
                "k3, first token": a.k3_first[sel].mean(),
                "k3 no clamp, first token": a.k3_no_clamp_first[sel].mean(),
                "exact KL, first token": a.exact_first[sel].mean(),
                "share of kl": a.k3[sel].sum() / a.k3.sum(),
                "share of kl_loss": k3_mean[sel].sum() / k3_mean.sum(),
            }
            for kind, sel in (("scratchpad", pad), ("direct", ~pad))
        }
    )
