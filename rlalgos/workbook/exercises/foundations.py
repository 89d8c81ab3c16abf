"""The exercises of notebooks 01-03: REINFORCE, PPO and GRPO."""

from __future__ import annotations

import torch

from ... import core
from .judging import call, choice, exercise, same

# --------------------------------------------------------------------------- #
# 01 · REINFORCE
# --------------------------------------------------------------------------- #

_R = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])  # two groups of 4 (the second all wrong)


@exercise(
    "01.1",
    "the leave-one-out baseline",
    "for each answer, average the rewards of the *other* G - 1 answers of its group: (group sum - own reward) / (G - 1)",
)
def _loo(fn):
    return same(call(fn, _R.clone(), 4), core.leave_one_out_baseline(_R, 4), "rewards [1,0,0,1 | 0,0,0,0], G=4")


@exercise(
    "01.2",
    "the REINFORCE surrogate loss",
    "loss = -(A * logp) summed over real tokens / number of real tokens; A is a constant per answer (broadcast it over the tokens with A[:, None])",
)
def _surrogate(fn):
    torch.manual_seed(1)
    logp = (-torch.rand(3, 4)).requires_grad_()  # (B=3, T=4)
    adv = torch.tensor([1.0, -0.5, 0.25])  # (B,)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.float32)
    loss = call(fn, logp, adv, mask)
    if not (torch.is_tensor(loss) and loss.dim() == 0 and loss.requires_grad):
        return False, "return a scalar tensor computed from logp (so it has a gradient)"
    (mine,) = torch.autograd.grad(loss, logp)
    ref, _ = core.policy_loss(logp, logp.detach(), adv[:, None], mask, None, None, "token-mean")
    (want,) = torch.autograd.grad(ref, logp)
    return same(mine, want, "the gradient w.r.t. logp of 3 answers (lengths 3, 2, 4)")


@exercise(
    "01.3",
    "which baseline a reward offset hurts",
    "a constant added to every reward multiplies every grad log-prob term that no baseline removes",
)
def _offset(answer, var_table):
    v = var_table["per_answer_var"]
    growth = {b: v[("r + 1", b)] / v[("r (0/1)", b)] for b in ("none", "batch", "rloo")}
    worst = max(growth, key=growth.get)
    return choice(
        answer,
        worst,
        ["none", "batch", "rloo"],
        "per-answer gradient variance grew "
        + ", ".join(f"{b} x{g:.2f}" for b, g in growth.items())
        + " when every reward got +1",
    )


# --------------------------------------------------------------------------- #
# 02 · PPO
# --------------------------------------------------------------------------- #

_RATIO = torch.tensor([1.5, 0.7, 1.5])
_ADV = torch.tensor([1.0, -1.0, -1.0])


@exercise(
    "02.1",
    "the clipped loss of 3 tokens, by hand",
    "per token the loss is max(-A r, -A clip(r, 0.8, 1.2)): the larger, more pessimistic, of the two",
)
def _clipped(answer):
    want = torch.stack(
        [
            core.policy_loss(
                torch.log(_RATIO[i : i + 1]).view(1, 1),
                torch.zeros(1, 1),
                _ADV[i].view(1, 1),
                torch.ones(1, 1),
                0.2,
                0.2,
            )[0]
            for i in range(3)
        ]
    )
    return same(answer, want, "ratios [1.5, 0.7, 1.5] with advantages [+1, -1, -1], eps 0.2")


@exercise(
    "02.2",
    "GAE",
    "walk backwards over t: delta_t = r_t + gamma V_{t+1} - V_t (V after the last real token is 0), A_t = delta_t + gamma lam A_{t+1}; zero on padding",
)
def _gae(fn):
    rewards = torch.tensor(
        [[0.0, 0.0, 0.0, 1.0, 0.0], [0.0, 0.0, -1.0, 0.0, 0.0]]
    )  # (B=2, T=5), score on the last real token
    values = torch.tensor([[0.3, 0.4, 0.6, 0.8, 0.0], [0.5, 0.2, 0.1, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]], dtype=torch.float32)
    for gamma, lam in ((1.0, 0.95), (0.9, 0.0)):
        ok, detail = same(
            call(fn, rewards, values, mask, gamma, lam),
            core.gae(rewards, values, mask, gamma, lam)[0],
            f"2 answers with gamma={gamma}, lam={lam}",
        )
        if not ok:
            return ok, detail
    return True, "matches core.gae for lam 0.95 and 0 (" + detail.split(": ", 1)[1] + ")"


_COST_BANDS = ["1x", "2-3x", "4-8x", ">8x"]


@exercise(
    "02.3",
    "what PPO's update costs",
    "count the passes: epochs x minibatches policy forward+backward passes, each over a slice of the batch, plus the critic's own forward+backward each time",
)
def _ppo_cost(answer, cost):
    x = float(cost.loc["ppo (2 epochs x 4 mb)", "update / reinforce"])
    band = "1x" if x < 1.5 else "2-3x" if x < 3.5 else "4-8x" if x < 8.5 else ">8x"
    return choice(answer, band, _COST_BANDS, f"PPO's update took {x:.2f}x REINFORCE's per step")


# --------------------------------------------------------------------------- #
# 03 · GRPO
# --------------------------------------------------------------------------- #


@exercise(
    "03.1",
    "the group-relative advantage",
    "view the rewards as (prompts, G); subtract each row's mean and divide by its unbiased std + 1e-6; a row of equal rewards gives 0, not NaN",
)
def _group_adv(fn):
    r = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    return same(
        call(fn, r.clone(), 4), core.group_advantages(r, 4), "rewards [1,0,0,0 | 1,1,0,1 | 0,0,0,0], G=4", atol=1e-3
    )


@exercise("03.2", "the k3 KL estimate", "with d = ref_logp - logp, k3 = exp(d) - d - 1 per token (never negative)")
def _k3(fn):
    logp = torch.tensor([[-0.1, -1.0, -2.0, -0.5]])
    ref = torch.tensor([[-0.3, -0.4, -2.0, -1.5]])
    return same(call(fn, logp, ref), core.kl_estimate(logp, ref, "k3"), "4 tokens")


@exercise(
    "03.3",
    "which group size leaves the most answers with signal",
    "a group carries signal only if its answers disagree; count the answers in such groups, for the same 128 answers per step",
)
def _group_size(answer, sweep):
    fixed = sweep.loc["fixed budget"]
    best = str(int(fixed["answers with signal"].idxmax()))
    return choice(
        answer,
        best,
        [str(g) for g in fixed.index],
        "answers with signal per step " + ", ".join(f"G={g}: {v:.1f}" for g, v in fixed["answers with signal"].items()),
    )


KL_TARGETS = ("reverse", "forward", "zero")
"""03.4's options: what an estimator's gradient in the loss descends, in expectation."""


@exercise(
    "03.4",
    "what each KL estimator's gradient descends",
    "per sampled token the gradient is grad log pi (k1), (log pi - log pi_ref) grad log pi (k2), "
    "(1 - pi_ref/pi) grad log pi (k3): average each over y ~ pi (sum_y pi(y) ...) and compare with the gradients of the two KLs",
)
def _kl_gradients(answer):
    from ..kl_estimators import expected_gradients  # the rollout machinery, only when this exercise is checked

    if not isinstance(answer, dict) or set(answer) != {"k1", "k2", "k3"}:
        raise ValueError('give a dict {"k1": ..., "k2": ..., "k3": ...}')
    bad = [f"{k}={v!r}" for k, v in answer.items() if str(v).strip().lower() not in KL_TARGETS]
    if bad:
        return False, f"answer each with one of {', '.join(repr(o) for o in KL_TARGETS)}; you wrote {', '.join(bad)}"
    g = expected_gradients(
        torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, -2.0]), torch.tensor([0.0, 0.5, 2.0, 0.5, 0.0, -0.5])
    )  # a 6-token pair ~1 nat apart
    target = {"reverse": g["reverse"], "forward": g["forward"], "zero": torch.zeros_like(g["k1"])}
    truth = {k: min(KL_TARGETS, key=lambda t: (g[k] - target[t]).norm().item()) for k in ("k1", "k2", "k3")}
    gap = ((g["forward"] - g["reverse"]).norm() / g["reverse"].norm()).item()
    evidence = (
        f"the expected gradients, exact over a 6-token distribution: k1 {truth['k1']}, k2 {truth['k2']}, k3 {truth['k3']} "
        f"(|E grad k1| = {g['k1'].norm().item():.1e}; the forward and reverse KL gradients differ by {gap:.0%} there)"
    )
    wrong = [k for k in truth if str(answer[k]).strip().lower() != truth[k]]
    return not wrong, evidence if not wrong else f"{', '.join(wrong)} not right; {evidence}"
