"""The per-token KL estimators against the exact KL, on real rollouts.

With a vocabulary of ~100 tokens the exact per-position KL(pi || pi_ref) =
sum_v pi(v) log(pi(v) / pi_ref(v)) (:func:`rlalgos.core.exact_kl`) costs nothing, so
the estimators that GRPO, PPO and the engines use in its place
(:func:`rlalgos.core.kl_estimate`, Schulman's k1, k2, k3 and verl's straight-through
k1+, k3+; :func:`rlalgos.core.bias_corrected_kl`, TRL's ``use_bias_correction_kl``)
can be measured against the thing they estimate, twice:

* as **values**: the mean of each per-token estimate over a rollout's tokens against
  the mean exact KL at the same positions (the bias), and how much it scatters over
  tokens and over answers (the variance);
* as **gradients**, when the estimate sits in the loss: the gradient, w.r.t. the
  policy's parameters, of the token-mean estimate against the gradient of the
  token-mean exact KL at the same positions (cosine and relative norm). The exact
  KL's gradient at the sampled states is what descending "the KL" means; k3's
  expected gradient is that of the *forward* KL(pi_ref || pi) instead (Tang & Munos
  2025, arXiv:2506.09477), so its cosine with the forward KL's exact gradient is
  measured too. Both sides hold the sampled answers (the states) fixed, as a per-token
  KL loss does; the sequence-level KL's full gradient also carries how an earlier token
  changes later states (the paper's second pitfall), which neither includes.

Notebook 03b (the appendix to 03) reads the table :func:`kl_estimator_table` returns.
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd
import torch

from .. import core
from ..engine.diagnostics import ratio_estimate
from ..engine.forward import completion_logits
from ..engine.sampler import SamplingConfig
from ..record import Rollout
from ..rollout import rollout
from .stats import paired_values

ESTIMATORS = ("k1", "k2", "k3", "k3 no clamp", "k1+", "k3+", "k3 x ratio")
"""The rows of the table besides the exact KL: ``kl_estimate``'s kinds, k3 without
verl's clamp at 10, and TRL's bias-corrected k3 (k3 times the token ratio, on-policy)."""

NEG_TOL = 1e-6
"""How far below 0 a per-token value must be to count as negative (``neg_frac``)."""

EXACT, FORWARD = "exact", "forward exact"
"""The two exact rows: KL(pi || pi_ref), which the estimators estimate, and KL(pi_ref || pi)."""

PER_ROLLOUT = ("grad_cos", "grad_cos_forward", "grad_rel_norm")
"""The gradient columns a :func:`summarize` table also keeps per rollout (:func:`per_rollout`)."""


def estimates(logp: torch.Tensor, ref_logp: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every name of :data:`ESTIMATORS` on the same sampled tokens, on-policy (TRL's old
    log-probs are the policy's own, detached). logp, ref_logp: (B, T); returns {name: (B, T)}."""

    def one(kind):
        if kind == "k3 x ratio":
            return core.bias_corrected_kl(logp, ref_logp, logp.detach())
        if kind == "k3 no clamp":
            return core.kl_estimate(logp, ref_logp, "k3", clamp=False)
        return core.kl_estimate(logp, ref_logp, kind)

    return {kind: one(kind) for kind in ESTIMATORS}


def expected_gradients(logits: torch.Tensor, ref_logits: torch.Tensor) -> dict[str, torch.Tensor]:
    """What each estimator's gradient is on average, exactly, for one next-token distribution.

    For ``pi = softmax(logits)`` and ``pi_ref = softmax(ref_logits)`` (V,): the expectation
    over ``y ~ pi`` of the gradient w.r.t. ``logits`` of each estimate, the sampled token
    held fixed as in a loss (the sum over all V tokens of ``pi(y)`` times that gradient),
    for every name of :data:`ESTIMATORS`; and the exact gradients of the reverse
    KL(pi || pi_ref) (``"reverse"``) and of the forward KL(pi_ref || pi) (``"forward"``).

    logits, ref_logits: (V,); returns {name: (V,)}
    """
    z = logits.detach().double().requires_grad_(True)
    z_ref = ref_logits.detach().double()
    logp = torch.log_softmax(z, -1).view(1, -1)  # (1, V): every token once, as a sample
    ref_logp = torch.log_softmax(z_ref, -1).view(1, -1)
    weight = logp.detach().exp()  # (1, V) pi(y), a constant
    out = {
        k: torch.autograd.grad((weight * v).sum(), z, retain_graph=True)[0]
        for k, v in estimates(logp, ref_logp).items()
    }
    out["reverse"] = torch.autograd.grad(core.exact_kl(z.view(1, 1, -1), z_ref.view(1, 1, -1)).sum(), z)[0]
    zf = logits.detach().double().requires_grad_(True)
    out["forward"] = torch.autograd.grad(core.exact_kl(z_ref.view(1, 1, -1), zf.view(1, 1, -1)).sum(), zf)[0]
    return out


def per_token_kl(policy, ref_model, ro: Rollout) -> dict[str, torch.Tensor]:
    """Every estimate and both exact KLs at each completion position of ``ro``, as
    differentiable functions of the policy's parameters (the reference's are constants).

    The policy is put in eval mode (no dropout: its distribution is the sampling one).
    returns: {name: (N, T)} for ``EXACT``, ``FORWARD`` and every name in :data:`ESTIMATORS`.
    """
    args = (ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask)
    with torch.no_grad():
        ref_logits = completion_logits(ref_model.eval(), *args).float()  # (N, T, V)
    logits = completion_logits(policy.eval(), *args).float()  # (N, T, V), with grad
    logp = core.token_logprobs(logits, ro.completion_ids, ro.temperature)  # (N, T)
    ref_logp = core.token_logprobs(ref_logits, ro.completion_ids, ro.temperature)  # (N, T)
    return {
        EXACT: core.exact_kl(logits, ref_logits, ro.temperature),
        FORWARD: core.exact_kl(ref_logits, logits, ro.temperature),
        **estimates(logp, ref_logp),
    }


def _flat_grad(loss: torch.Tensor, params: Sequence[torch.Tensor]) -> torch.Tensor:
    """d loss / d params, flattened into one (P,) vector (0 for a parameter the loss does not reach)."""
    grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(params, grads)])


def _cos(a: torch.Tensor, b: torch.Tensor) -> float:
    """Cosine of two vectors, in float64; NaN when either is 0 (no direction to compare)."""
    a, b = a.double(), b.double()
    na, nb = a.norm().item(), b.norm().item()
    return float("nan") if na == 0 or nb == 0 else float(a @ b) / (na * nb)


def _ratio(a: torch.Tensor, b: torch.Tensor) -> float:
    nb = b.double().norm().item()
    return float("nan") if nb == 0 else a.double().norm().item() / nb


def measure_rollout(policy, ref_model, ro: Rollout) -> dict:
    """One rollout's raw material for :func:`kl_estimator_table`.

    returns: ``values`` {name: (n_tokens,) per-token values on the real tokens},
    ``answers`` {name: (N,) per-answer token sums}, ``lengths`` (N,) and ``grads``
    {name: (P,) gradient of the token-mean over the rollout, w.r.t. the trainable parameters}.
    """
    params = [p for p in policy.parameters() if p.requires_grad]
    was_training = policy.training
    per_token = per_token_kl(policy, ref_model, ro)
    policy.train(was_training)
    mask = ro.completion_mask  # (N, T)
    real = mask.bool()
    return {
        "values": {k: v.detach()[real] for k, v in per_token.items()},
        "answers": {k: core.masked_sum(v.detach(), mask, dim=-1) for k, v in per_token.items()},
        "lengths": mask.sum(-1),
        "grads": {k: _flat_grad(core.masked_mean(v, mask), params) for k, v in per_token.items()},
    }


def summarize(measured: Sequence[dict]) -> pd.DataFrame:
    """The table of :func:`kl_estimator_table` from several :func:`measure_rollout` results.

    One row per name (``EXACT``, every estimator, ``FORWARD``; the last row's ``mean`` is
    the forward KL, so its ``bias`` is forward minus reverse); columns:

    * ``mean``: token-mean of the per-token value over every rollout's tokens; ``exact``:
      the same of the exact KL; ``bias`` = mean - exact, and ``bias_se`` its standard
      error, answers taken as the independent units (the ratio estimator of
      :func:`rlalgos.engine.diagnostics.ratio_estimate`);
    * ``sd_token``: standard deviation of the per-token value over all tokens;
      ``sd_answer``: of the per-answer token-mean over all answers; ``neg_frac``: share
      of tokens below 0 (below ``-NEG_TOL``: an exact KL of 0 comes out of float32 as
      +-1e-9, which is no sign);
    * ``grad_cos``: cosine between the gradient of the token-mean value and the exact
      KL's, per rollout, averaged over rollouts (``grad_cos_sd`` its spread);
      ``grad_cos_pooled``: the cosine of the two gradients summed over the rollouts (the
      noise averages out, a bias stays); ``grad_norm``: mean over rollouts of ``|grad|``;
      ``grad_rel_norm``: of ``|grad| / |exact grad|``; ``grad_cos_forward``: mean cosine with the gradient of
      the forward exact KL(pi_ref || pi) (``grad_cos_forward_sd`` its spread);
    * ``answers`` and ``rollouts``: how many of each the table is measured on.

    ``table.attrs["per_rollout"]`` keeps each rollout's own ``grad_cos``, ``grad_cos_forward`` and
    ``grad_rel_norm`` (read them with :func:`per_rollout`), for paired comparisons over rollouts
    (:func:`rollout_effect`). A cosine is NaN where a gradient is 0 (e.g. every row but k1's at pi == pi_ref).
    """
    names = [EXACT, *(k for k in measured[0]["values"] if k not in (EXACT, FORWARD)), FORWARD]
    lengths = torch.cat([m["lengths"] for m in measured])  # (answers,)
    exact_tokens = torch.cat([m["values"][EXACT] for m in measured])
    exact_answers = torch.cat([m["answers"][EXACT] for m in measured])
    rows, runs = [], {c: {} for c in PER_ROLLOUT}
    for k in names:
        tokens = torch.cat([m["values"][k] for m in measured]).double()  # (tokens,)
        answers = torch.cat([m["answers"][k] for m in measured]).double()  # (answers,)
        err, n = (answers - exact_answers).double(), lengths.double()  # per-answer summed error, tokens
        bias, bias_se = ratio_estimate(
            err.sum().item(),
            n.sum().item(),
            (err * err).sum().item(),
            (err * n).sum().item(),
            (n * n).sum().item(),
            len(n),
            math.inf,
        )  # the answers are a sample of all the policy could write
        grads = [(m["grads"][k], m["grads"][EXACT], m["grads"][FORWARD]) for m in measured]
        cos = torch.tensor([_cos(g, e) for g, e, _ in grads], dtype=torch.float64)
        cos_forward = torch.tensor([_cos(g, f) for g, _, f in grads], dtype=torch.float64)
        runs["grad_cos"][k], runs["grad_cos_forward"][k] = cos.tolist(), cos_forward.tolist()
        runs["grad_rel_norm"][k] = [_ratio(g, e) for g, e, _ in grads]
        rows.append(
            {
                "estimator": k,
                "mean": tokens.mean().item(),
                "exact": exact_tokens.double().mean().item(),
                "bias": bias,
                "bias_se": bias_se,
                "sd_token": tokens.std().item() if len(tokens) > 1 else 0.0,
                "sd_answer": (answers / n).std().item() if len(n) > 1 else 0.0,
                "neg_frac": (tokens < -NEG_TOL).double().mean().item(),
                "grad_cos": cos.mean().item(),
                "grad_cos_sd": cos.std().item() if len(cos) > 1 else 0.0,
                "grad_cos_pooled": _cos(sum(g for g, _, _ in grads), sum(e for _, e, _ in grads)),
                "grad_norm": sum(g.double().norm().item() for g, _, _ in grads) / len(grads),
                "grad_rel_norm": sum(_ratio(g, e) for g, e, _ in grads) / len(grads),
                "grad_cos_forward": cos_forward.mean().item(),
                "grad_cos_forward_sd": cos_forward.std().item() if len(cos_forward) > 1 else 0.0,
                "answers": len(n),
                "rollouts": len(measured),
            }
        )
    table = pd.DataFrame(rows).set_index("estimator")
    table.attrs["per_rollout"] = {c: pd.DataFrame(v).rename_axis("rollout") for c, v in runs.items()}
    return table


def per_rollout(table: pd.DataFrame, column: str = "grad_cos") -> pd.DataFrame:
    """Each rollout's own ``column`` (one of :data:`PER_ROLLOUT`) of a :func:`summarize` table: one row per
    rollout, one column per estimator (the table's ``grad_cos`` is this frame's mean over rollouts)."""
    return table.attrs["per_rollout"][column]


def rollout_effect(table: pd.DataFrame, base: str, arm: str, column: str = "grad_cos") -> dict:
    """``arm`` minus ``base`` on ``column``, paired by rollout (both measured on the same answers of each
    rollout): a :func:`rlalgos.workbook.stats.paired_values` row, the rollouts as the units (print it with
    ``verdict_line(row, arm, base, units="rollouts")``)."""
    runs = per_rollout(table, column)
    return paired_values(runs[base], runs[arm], column)


def bias_effect(table: pd.DataFrame, name: str, z: float = 1.96) -> dict:
    """``name``'s value minus the exact KL (the table's ``bias``) as a row for
    :func:`rlalgos.workbook.stats.verdict_line`: a normal 95% interval of ``z`` times ``bias_se``, the answers
    as the units (``seeds`` holds how many: print it with ``units="answers"``). The answers of a table share
    its prompts (each prompt answered ``group_size`` times per rollout), so the interval is about sampling
    on those prompts, not about other prompts."""
    r = table.loc[name]
    half = z * float(r["bias_se"])
    lo, hi = float(r["bias"]) - half, float(r["bias"]) + half
    return {
        "metric": "KL",
        "base_mean": float(r["exact"]),
        "arm_mean": float(r["mean"]),
        "diff": float(r["bias"]),
        "seeds": int(r["answers"]),
        "diff_sd": float("nan"),
        "ci_low": lo,
        "ci_high": hi,
        "detectable": half,
        "verdict": "shown" if lo > 0 or hi < 0 else "within noise",
    }


def kl_estimator_table(
    policy,
    ref_model,
    tokenizer,
    task,
    rows: Sequence[dict],
    group_size: int = 8,
    rollouts: int = 4,
    max_new_tokens: int | None = None,
    temperature: float = 1.0,
    seed: int = 0,
) -> pd.DataFrame:
    """k1, k2, k3, k1+, k3+ and TRL's bias-corrected k3 against the exact KL(policy || ref_model),
    as values and as gradients (:func:`summarize`'s table), over ``rollouts`` fresh rollouts
    of ``policy`` on the task ``rows`` (``group_size`` answers each, sampled at
    ``temperature``; seeds ``seed``, ``seed + 1``, ...). ``policy`` is not changed.
    """
    measured = measured_rollouts(
        policy,
        ref_model,
        tokenizer,
        task,
        rows,
        group_size,
        rollouts,
        max_new_tokens,
        temperature=temperature,
        seed=seed,
    )
    return summarize([m for _, m in measured])


def measured_rollouts(
    policy, ref_model, tokenizer, task, rows, group_size=8, rollouts=4, max_new_tokens=None, *, temperature=1.0, seed=0
) -> list[tuple]:
    """The rollouts behind :func:`kl_estimator_table` (same arguments), each with its
    :func:`measure_rollout`: ``[(rollout, measured), ...]``, rollout ``r`` sampled under seed ``seed + r``."""
    sampling = SamplingConfig(max_new_tokens=max_new_tokens or task.max_new_tokens, temperature=temperature)
    out = []
    for r in range(rollouts):
        torch.manual_seed(seed + r)
        ro = rollout(policy, tokenizer, rows, group_size, task.rewards, sampling, old_logprobs=False)
        out.append((ro, measure_rollout(policy, ref_model, ro)))
    return out
