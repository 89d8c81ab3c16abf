"""The exercises of notebooks 09, 09b, 10, 12 and 13: exploration, pass@k, the engines' losses, where reasoning comes from, expert iteration."""

from __future__ import annotations

from typing import Callable

import torch

from ... import core
from .judging import exercise, same, which_higher

# --------------------------------------------------------------------------- #
# 09 · Exploration
# --------------------------------------------------------------------------- #

_LOGITS_09 = torch.tensor([2.0, 0.0, 0.0, 0.0])


def entropy_after_step(logits: torch.Tensor, advantages: torch.Tensor, lr: float = 0.1) -> tuple[float, float]:
    """(Cov_pi(log pi, A), entropy change) for one natural policy-gradient step ``z += lr * A``
    on a softmax over ``logits`` (Cui et al. 2025's first-order setting)."""
    p, logp = logits.softmax(0), logits.log_softmax(0)
    cov = float((p * (logp - (p * logp).sum()) * (advantages - (p * advantages).sum())).sum())
    H = lambda z: float(-(z.softmax(0) * z.log_softmax(0)).sum())  # noqa: E731
    return cov, H(logits + lr * advantages) - H(logits)


@exercise(
    "09.1",
    "the sign of the entropy change",
    "the entropy change is about -lr x Cov(log pi, A): is the rewarded token above or below the average log-probability?",
)
def _entropy_sign(answer):
    out = []
    for rewarded in (0, 3):  # the likely token, then a rare one
        A = torch.full((4,), -1.0)
        A[rewarded] = 1.0
        cov, dH = entropy_after_step(_LOGITS_09, A)
        out.append(("rise" if dH > 0 else "fall", cov, dH))
    if not isinstance(answer, (list, tuple)) or len(answer) != 2:
        return False, "answer a pair like ('fall', 'rise'): (reward token 0, reward token 3)"
    got = [str(a).strip().lower() for a in answer]
    if any(g not in ("rise", "fall") for g in got):
        return False, f"answer 'rise' or 'fall' for each; you wrote {answer!r}"
    ev = "; ".join(f"reward token {t}: Cov {c:+.3f}, entropy {d:+.4f}" for t, (_, c, d) in zip((0, 3), out))
    return got == [o[0] for o in out], f"logits [2, 0, 0, 0], one natural step lr 0.1: {ev}"


@exercise(
    "09.2",
    "how far the upper clip lets a rare token rise",
    "a token's own gradient stops once its ratio passes 1 + clip_high, i.e. once p_new > p_old (1 + clip_high)",
)
def _rare_rise(answer):
    want = torch.tensor([0.05 * 1.2, 0.05 * 1.28])
    return same(
        answer, want, "p_old 0.05 under clip_high 0.2 and 0.28 (the largest p_new that still gets its own gradient)"
    )


@exercise(
    "09.3",
    "did clip-higher grow the rare strategy?",
    "compare clip_higher with vanilla on eval_scratchpad_frac/hard, paired by seed; 'noise' if the interval contains 0",
)
def _clip_higher_share(answer, runs):
    return which_higher(answer, runs, "vanilla", "clip_higher", "eval_scratchpad_frac/hard")


# --------------------------------------------------------------------------- #
# 09b · pass@k, and which of DAPO's switches
# --------------------------------------------------------------------------- #


@exercise(
    "09b.1",
    "pass@k from 256 samples with 2 right",
    "pass@k = 1 - C(n - c, k) / C(n, k): the chance that k of the n samples, drawn without replacement, include a right one",
)
def _pass_at_k(answer):
    want = torch.tensor([core.pass_at_k(256, 2, k) for k in (1, 64, 256)], dtype=torch.float64)
    return same(answer, want, "n = 256 samples, c = 2 right, k = 1, 64 and 256 (rlalgos.core.pass_at_k)", atol=1e-3)


@exercise(
    "09b.2",
    "are DAPO's extra samples its gain?",
    "compare dapo with vanilla_36_prompts (as many sampled answers per step) on eval_accuracy, paired by seed; 'noise' if the interval contains 0",
)
def _matched_samples(answer, runs):
    return which_higher(answer, runs, "vanilla_36_prompts", "dapo", "eval_accuracy")


# --------------------------------------------------------------------------- #
# 10 · What the engines do now
# --------------------------------------------------------------------------- #


def gradient_weight(loss_fn: Callable, ratio: float, advantage: float, **kwargs) -> float:
    """``-d loss / d logp`` of one token at ``ratio`` and ``advantage`` through ``loss_fn``
    (:func:`rlalgos.core.policy_loss`, :func:`~rlalgos.core.cispo_loss`, :func:`~rlalgos.core.sapo_loss`):
    the factor by which that token's log-prob is pushed (REINFORCE's is the advantage itself)."""
    logp = torch.tensor([[float(torch.tensor(ratio).log())]], dtype=torch.float64, requires_grad=True)
    loss, _ = loss_fn(
        logp,
        torch.zeros(1, 1, dtype=torch.float64),
        torch.tensor([[advantage]], dtype=torch.float64),
        torch.ones(1, 1),
        **kwargs,
    )
    loss.backward()
    return -logp.grad.item() + 0.0  # + 0.0: a zero weight prints as 0.0, not -0.0


@exercise(
    "10.1",
    "what the hard clip and CISPO do to a token that has moved",
    "inside [0.8, 1.2] both weights are r x A; outside, on the side A pushes toward, PPO's clipped term is a constant (weight 0) while CISPO's weight is the bound times A",
)
def _cispo_weight(answer):
    want = torch.tensor(
        [
            gradient_weight(core.policy_loss, 1.5, 1.0),
            gradient_weight(core.cispo_loss, 1.5, 1.0),
            gradient_weight(core.policy_loss, 0.5, -1.0),
            gradient_weight(core.cispo_loss, 0.5, -1.0),
        ]
    )
    return same(
        answer, want, "(PPO, CISPO) at r = 1.5, A = +1, then (PPO, CISPO) at r = 0.5, A = -1, clip 0.2 each side"
    )


@exercise(
    "10.2",
    "did CISPO beat the hard clip under the push?",
    "compare cispo with grpo on eval_accuracy, paired by seed; 'noise' if the interval contains 0",
)
def _cispo_push(answer, runs):
    return which_higher(answer, runs, "grpo", "cispo", "eval_accuracy")


@exercise(
    "10.3",
    "did the truncated importance weight recover what the stale sampler cost?",
    "compare stale_tis with stale on eval_accuracy, paired by seed; 'noise' if the interval contains 0",
)
def _tis_recovers(answer, runs):
    return which_higher(answer, runs, "stale", "stale_tis", "eval_accuracy")


# --------------------------------------------------------------------------- #
# 12 · Where reasoning comes from
# --------------------------------------------------------------------------- #


# q, d and p are this run's measurements, typed back from their printed digits: within 0.01 + 1% each.
_RUN = dict(atol=0.01, rtol=0.01, against="this run")


@exercise(
    "12.1",
    "the ceiling of a strategy switch",
    "a policy that only changes its choice has accuracy p q + (1 - p) d; put p = 1, then p = 0",
)
def _ceiling(answer, q, d):
    return same(
        answer,
        torch.tensor([q, d]),
        "accuracy at p = 1 (the scratchpad's competence q) and at p = 0 (the direct answer's d)",
        **_RUN,
    )


@exercise(
    "12.2",
    "how often a group of 16 carries the rare strategy's signal",
    "a group misses it when none of its 16 answers is a right scratchpad: (1 - p q)^16",
)
def _signal_chance(answer, p, q):
    c = 1 - (1 - p * q) ** 16
    return same(
        answer,
        torch.tensor([c, 16 * c]),
        f"1 - (1 - p q)^16 with p = {p:.4f}, q = {q:.3f}, and 16 groups times that",
        **_RUN,
    )


@exercise(
    "12.3",
    "group size or prompts",
    "the chance that a step's batch holds a right scratchpad answer is 1 - (1 - p q)^(G x prompts)",
)
def _group_or_prompts(answer):
    got = str(answer).strip().lower()
    if got not in ("g", "prompts", "same"):
        return False, f"answer 'G', 'prompts' or 'same'; you wrote {answer!r}"
    return got == "same", "1 - (1 - p q)^(G x prompts) depends on the product only: 8 x 32 = 16 x 16"


# --------------------------------------------------------------------------- #
# 13 · Expert iteration
# --------------------------------------------------------------------------- #


@exercise(
    "13.1",
    "what a group with one outcome gives each rung",
    "expert iteration weighs each kept answer 1; RLOO's and GRPO's weights are rewards minus a baseline that equals them when all agree",
)
def _uniform_groups(answer):
    totals = []
    for value in (0.0, 1.0):
        r = torch.full((8,), value)
        totals.append(
            (
                float((r >= 1).sum()),
                float((r - core.leave_one_out_baseline(r, 8)).sum()),
                float(core.group_advantages(r, 8).sum()),
            )
        )
    try:
        got = [tuple(float(x) for x in t) for t in answer]
    except (TypeError, ValueError):
        return False, "answer two triples: ((ei, rloo, grpo) all wrong, (ei, rloo, grpo) all right)"
    ok = len(got) == 2 and all(
        len(g) == 3 and all(abs(a - b) < 1e-6 for a, b in zip(g, w)) for g, w in zip(got, totals)
    )
    return ok, f"(ei, rloo, grpo) totals: all wrong {totals[0]}, all right {totals[1]}"


@exercise(
    "13.2",
    "which ends with the higher test entropy from the shipped model",
    "compare ei with grpo on eval_entropy, paired by seed; 'noise' if the interval contains 0",
)
def _ei_entropy(answer, runs):
    return which_higher(answer, runs, "grpo", "ei", "eval_entropy")
