"""Exercises that check themselves.

Notebooks 01 to 07, 09, 10 and 12 have a few exercises each. Each is either a small piece
of code to write (a function the package already has, so the check compares
yours with it on fixed inputs) or a prediction about a run the notebook just
made (the check compares your answer with *that run's* measurements, so the
right answer is whatever this machine measured, including "within noise").

In a notebook::

    def my_group_advantages(rewards, group_size):
        ...                                   # your code

    check("03.1", my_group_advantages)

``check`` prints one line and returns ``True``/``False``: a tick and what was
measured, or a cross with what went wrong and a hint. A wrong answer, an
unanswered one (``...`` or ``None``) or code that raises all give that one line,
never a traceback. Each exercise's worked solution is the collapsed cell right
after it in the notebook (click to open); CI runs the notebooks with those
solution cells, so the checks and the solutions cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from .. import core
from .stats import paired_effect


class NotAnswered(Exception):
    """The learner has not written an answer yet."""


@dataclass(frozen=True)
class Exercise:
    """One exercise: its id (``"NN.k"``, notebook NN), a title, a hint, and the judge.

    ``judge(answer, **measured) -> (right, detail)``: ``detail`` says what was
    compared (the measured numbers for a prediction, the offending input for code).
    """

    id: str
    title: str
    hint: str
    judge: Callable[..., tuple[bool, str]]


EXERCISES: dict[str, Exercise] = {}
"""exercise id -> :class:`Exercise`, in notebook order."""


def exercise(id: str, title: str, hint: str):
    """Register ``judge`` as the exercise ``id``."""

    def register(judge):
        EXERCISES[id] = Exercise(id, title, hint, judge)
        return judge

    return register


def judge(exercise_id: str, answer: Any, **measured) -> tuple[bool, str]:
    """``(right, one line)`` for ``answer``; never raises for a learner's mistake."""
    if exercise_id not in EXERCISES:
        raise ValueError(f"no exercise {exercise_id!r}; the exercises are {', '.join(EXERCISES)}")
    ex = EXERCISES[exercise_id]
    try:
        if _unanswered(answer):
            raise NotAnswered
        ok, detail = ex.judge(answer, **measured)
    except NotAnswered:
        return False, f"… {ex.id} {ex.title}: not answered yet (replace the ... above). Hint: {ex.hint}"
    except Exception as e:  # the learner's code raised: say what, not where
        ok, detail = False, f"your answer raised {type(e).__name__}: {e}"
    line = (
        f"✓ {ex.id} {ex.title}: right. {detail}" if ok else f"✗ {ex.id} {ex.title}: not yet. {detail}. Hint: {ex.hint}"
    )
    return ok, " ".join(line.split())  # one line, whatever the detail held


def _unanswered(answer) -> bool:
    """``None``, ``...``, or a list/tuple/dict still holding a ``...``."""
    if answer is None or answer is Ellipsis:
        return True
    if isinstance(answer, (list, tuple)):
        return any(_unanswered(a) for a in answer)
    if isinstance(answer, dict):
        return any(_unanswered(a) for a in answer.values())
    return False


def check(exercise_id: str, answer: Any, **measured) -> bool:
    """Print the one-line verdict on ``answer`` and return whether it was right."""
    ok, line = judge(exercise_id, answer, **measured)
    print(line)
    return ok


# --------------------------------------------------------------------------- #
# How answers are compared
# --------------------------------------------------------------------------- #


def _call(fn, *args):
    """Call the learner's function; ``None`` back means the body is still ``...``."""
    if not callable(fn):
        raise TypeError(f"expected a function, got {type(fn).__name__}")
    out = fn(*args)
    if out is None:
        raise NotAnswered
    return out


def _fmt(t: torch.Tensor) -> str:
    return str([round(v, 4) for v in t.flatten().tolist()])


def _same(got, want: torch.Tensor, what: str, atol: float = 1e-4) -> tuple[bool, str]:
    """Compare a learner's numbers with the package's: shape, finiteness, values."""
    got = torch.as_tensor(got, dtype=torch.float32).detach()
    want = want.detach().float()
    if got.numel() != want.numel():
        return False, f"for {what} you gave {got.numel()} numbers, expected {want.numel()} (shape {tuple(want.shape)})"
    got = got.reshape(want.shape)
    if not torch.isfinite(got).all():
        return False, f"for {what} you returned non-finite values {_fmt(got)}"
    if not torch.allclose(got, want, atol=atol, rtol=1e-3):
        return False, f"for {what} you returned {_fmt(got)}, expected {_fmt(want)}"
    return True, f"matches the package on {what}: {_fmt(want)}"


def _choice(answer, truth, options: list[str], evidence: str) -> tuple[bool, str]:
    """A multiple-choice prediction; ``truth`` is a string or a set of accepted strings."""
    a = str(answer).strip().lower()
    opts = [o.lower() for o in options]
    if a not in opts:
        return False, f"answer one of {', '.join(repr(o) for o in options)}; you wrote {answer!r}"
    accepted = {truth.lower()} if isinstance(truth, str) else {t.lower() for t in truth}
    return a in accepted, f"this run measured: {evidence}"


def _noise_verdict(base_runs, arm_runs, key: str, base: str, arm: str, digits: int = 3) -> tuple[str, str]:
    """Which side ended higher on ``key``, by the paired-over-seeds interval: ``arm``,
    ``base`` or ``noise`` (the interval contains 0, or there is one seed)."""
    e = paired_effect(base_runs, arm_runs, key)
    f = f".{digits}f"
    ci = f", 95% CI {e['ci_low']:+{f}}..{e['ci_high']:+{f}}" if e["seeds"] > 1 else ""
    evidence = f"{key} {arm} {e['arm_mean']:{f}} vs {base} {e['base_mean']:{f}}, paired diff {e['diff']:+{f}}{ci} over {e['seeds']} seed(s): {e['verdict']}"
    if e["verdict"] != "shown":
        return "noise", evidence
    return (arm if e["diff"] > 0 else base), evidence


def _which_higher(answer, runs, base: str, arm: str, key: str) -> tuple[bool, str]:
    """A prediction "which of two arms ended higher on ``key``, or noise", judged by their paired interval."""
    truth, evidence = _noise_verdict(runs[base], runs[arm], key, base, arm)
    return _choice(answer, truth, [base, arm, "noise"], evidence)


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
    return _same(_call(fn, _R.clone(), 4), core.leave_one_out_baseline(_R, 4), "rewards [1,0,0,1 | 0,0,0,0], G=4")


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
    loss = _call(fn, logp, adv, mask)
    if not (torch.is_tensor(loss) and loss.dim() == 0 and loss.requires_grad):
        return False, "return a scalar tensor computed from logp (so it has a gradient)"
    (mine,) = torch.autograd.grad(loss, logp)
    ref, _ = core.policy_loss(logp, logp.detach(), adv[:, None], mask, None, None, "token-mean")
    (want,) = torch.autograd.grad(ref, logp)
    return _same(mine, want, "the gradient w.r.t. logp of 3 answers (lengths 3, 2, 4)")


@exercise(
    "01.3",
    "which baseline a reward offset hurts",
    "a constant added to every reward multiplies every grad log-prob term that no baseline removes",
)
def _offset(answer, var_table):
    v = var_table["per_answer_var"]
    growth = {b: v[("r + 1", b)] / v[("r (0/1)", b)] for b in ("none", "batch", "rloo")}
    worst = max(growth, key=growth.get)
    return _choice(
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
    return _same(answer, want, "ratios [1.5, 0.7, 1.5] with advantages [+1, -1, -1], eps 0.2")


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
        ok, detail = _same(
            _call(fn, rewards, values, mask, gamma, lam),
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
    return _choice(answer, band, _COST_BANDS, f"PPO's update took {x:.2f}x REINFORCE's per step")


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
    return _same(
        _call(fn, r.clone(), 4), core.group_advantages(r, 4), "rewards [1,0,0,0 | 1,1,0,1 | 0,0,0,0], G=4", atol=1e-3
    )


@exercise("03.2", "the k3 KL estimate", "with d = ref_logp - logp, k3 = exp(d) - d - 1 per token (never negative)")
def _k3(fn):
    logp = torch.tensor([[-0.1, -1.0, -2.0, -0.5]])
    ref = torch.tensor([[-0.3, -0.4, -2.0, -1.5]])
    return _same(_call(fn, logp, ref), core.kl_estimate(logp, ref, "k3"), "4 tokens")


@exercise(
    "03.3",
    "which group size leaves the most answers with signal",
    "a group carries signal only if its answers disagree; count the answers in such groups, for the same 128 answers per step",
)
def _group_size(answer, sweep):
    fixed = sweep.loc["fixed budget"]
    best = str(int(fixed["answers with signal"].idxmax()))
    return _choice(
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
    from .kl_estimators import expected_gradients  # the rollout machinery, only when this exercise is checked

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


# --------------------------------------------------------------------------- #
# 04 · Improved GRPO
# --------------------------------------------------------------------------- #


def token_weight(mode: str, lengths: tuple[int, ...] = (2, 8), row: int = 1) -> float:
    """The gradient weight of one token of answer ``row`` under ``mode`` (d loss / d token
    loss), for a batch of answers with these lengths: from ``core.aggregate_loss`` itself."""
    T = max(lengths)
    mask = torch.tensor([[1.0] * n + [0.0] * (T - n) for n in lengths])  # (B, T)
    loss_mat = torch.zeros(len(lengths), T, requires_grad=True)
    (grad,) = torch.autograd.grad(core.aggregate_loss(loss_mat, mask, mode), loss_mat)
    return grad[row, 0].item()


@exercise(
    "04.1",
    "the weight of a long answer's token",
    "seq-mean-token-mean divides each answer's token sum by its own length, then averages over the B answers; token-mean divides by all tokens in the batch",
)
def _weights(answer):
    want = torch.tensor([token_weight("seq-mean-token-mean"), token_weight("token-mean")])
    return _same(
        answer,
        want,
        "one token of the 8-token answer (batch: a 2-token and an 8-token answer), as (seq-mean-token-mean, token-mean)",
    )


@exercise(
    "04.2",
    "the soft overlong penalty",
    "0 up to L_max - L_c tokens, then a straight line down to -1 at L_max: (L_max - L_c - L) / L_c",
)
def _overlong(answer):
    lengths = torch.tensor([40, 56, 60, 64])
    return _same(answer, core.overlong_penalty(lengths, 64, 8), "lengths [40, 56, 60, 64] with L_max 64, L_c 8")


@exercise(
    "04.3",
    "what the KL coefficient does to entropy",
    "a KL term pulls the policy back toward the reference (the SFT model), which is less sharp; 'noise' is the right answer when the seeds disagree",
)
def _kl_entropy(answer, runs):
    return _which_higher(answer, runs, "kl_off", "kl_0.4", "eval_entropy")


# --------------------------------------------------------------------------- #
# 05 · Side by side
# --------------------------------------------------------------------------- #


@exercise(
    "05.1",
    "RLOO's advantage is GRPO's, rescaled",
    "r - mean_others = (G/(G-1)) (r - mean_group): write out mean_others = (G mean_group - r)/(G-1)",
)
def _rloo_scale(answer):
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    loo = r - core.leave_one_out_baseline(r, 8)
    centred = core.group_advantages(r, 8, scale="none")
    factor = (loo / centred).mean()
    return _same(
        torch.as_tensor(float(answer)),
        factor,
        "the group of notebook 05, G=8 (RLOO advantage / mean-centred advantage)",
    )


@exercise(
    "05.2",
    "where DAPO's extra time goes",
    "dynamic sampling draws more groups than the batch keeps; the update trains on the same number of answers",
)
def _dapo_time(answer, timing):
    d = timing.loc["dapo"] - timing.loc["grpo"]
    grew = "rollout" if d["rollout s"] > d["update s"] else "update"
    return _choice(
        answer,
        grew,
        ["rollout", "update"],
        f"DAPO minus GRPO per step: rollout {d['rollout s']:+.3f} s, update {d['update s']:+.3f} s",
    )


@exercise(
    "05.3", "did anything beat GRPO?", "read the paired lines: an arm beats GRPO only if its interval lies above 0"
)
def _beat_grpo(answer, by_algo):
    winners, ev = [], []
    for name, dfs in by_algo.items():
        if name == "grpo":
            continue
        side, evidence = _noise_verdict(by_algo["grpo"], dfs, "eval_accuracy", "grpo", name)
        ev.append(f"{name}: {side if side != 'noise' else 'within noise'}")
        if side == name:
            winners.append(name)
    return _choice(answer, set(winners) or {"none"}, [*[n for n in by_algo if n != "grpo"], "none"], "; ".join(ev))


# --------------------------------------------------------------------------- #
# 06 · Troubleshooting
# --------------------------------------------------------------------------- #


@exercise(
    "06.1",
    "the share of zero-signal groups",
    "view the rewards as (prompts, G); a group has no signal when all its rewards are equal (max == min)",
)
def _zero_std(fn):
    r = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5])
    want = (r.view(-1, 4).std(dim=1) == 0).float().mean()
    return _same(
        torch.as_tensor(float(_call(fn, r.clone(), 4))),
        want,
        "rewards [1,1,1,1 | 0,1,0,0 | 0,0,0,0 | .5,.5,.5,.5], G=4",
    )


# three symptom patterns, written by hand for the quiz (not measured runs)
SYMPTOMS = {
    "X": "reward_mean climbs steadily; eval_accuracy falls; completions get shorter and the samples stop containing the answer",
    "Y": "within 3 steps reward_mean and eval_accuracy drop to ~0, kl jumps by orders of magnitude, entropy rises and zero_std_frac goes to 1",
    "Z": "completion_len climbs to max_new_tokens; truncated_frac rises toward 1; eval_accuracy falls",
}
_DIAGNOSES = {"X": "reward hacking", "Y": "step too large", "Z": "length runaway"}


@exercise(
    "06.2",
    "read the symptoms",
    "go down the checklist: does the reward agree with the eval? did the step size blow up? are answers hitting the length limit?",
)
def _diagnose(answer):
    if not isinstance(answer, dict):
        return False, "answer a dict like {'X': 'reward hacking', 'Y': ..., 'Z': ...}"
    options = sorted(set(_DIAGNOSES.values()))
    wrong = [k for k in _DIAGNOSES if str(answer.get(k, "")).strip().lower() != _DIAGNOSES[k]]
    bad = [v for v in answer.values() if str(v).strip().lower() not in options]
    if bad:
        return False, f"use the names {', '.join(repr(o) for o in options)}; you wrote {bad}"
    return not wrong, ("all three" if not wrong else f"{', '.join(wrong)} not matched")


@exercise(
    "06.3",
    "does a KL term rescue the gamed reward?",
    "compare a_concise_kl with a_concise on eval_accuracy, paired by seed; 'noise' if the interval contains 0",
)
def _kl_rescue(answer, runs):
    return _which_higher(answer, runs, "a_concise", "a_concise_kl", "eval_accuracy")


# --------------------------------------------------------------------------- #
# 07 · Reward model
# --------------------------------------------------------------------------- #


@exercise(
    "07.1",
    "the AUC of a reward model",
    "over every (correct, wrong) pair, count 1 when the correct one scores higher and 0.5 on a tie; divide by the number of pairs",
)
def _auc(fn):
    from .reward_model import auc

    scores, labels = [0.9, 0.2, 0.4, 0.4, 0.8, 0.1], [1, 0, 1, 0, 0, 1]
    return _same(
        torch.as_tensor(float(_call(fn, scores, labels))),
        torch.tensor(auc(scores, labels)),
        "scores [.9,.2,.4,.4,.8,.1], labels [1,0,1,0,0,1]",
    )


@exercise(
    "07.2", "which fix kept accuracy higher", "both fixes beat 'rm only'; compare them with each other, paired by seed"
)
def _rm_fix(answer, runs):
    return _which_higher(answer, runs, "rm + KL", "rm + rule", "eval_accuracy")


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
    return _same(
        answer, want, "p_old 0.05 under clip_high 0.2 and 0.28 (the largest p_new that still gets its own gradient)"
    )


@exercise(
    "09.3",
    "did clip-higher grow the rare strategy?",
    "compare clip_higher with vanilla on eval_scratchpad_frac/hard, paired by seed; 'noise' if the interval contains 0",
)
def _clip_higher_share(answer, runs):
    return _which_higher(answer, runs, "vanilla", "clip_higher", "eval_scratchpad_frac/hard")


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
    "inside [0.8, 1.2] the weight is r x A (PPO) or r x A (CISPO); outside, on the side A pushes toward, PPO's clipped term is a constant (weight 0) while CISPO's weight is the bound times A",
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
    return _same(
        answer, want, "(PPO, CISPO) at r = 1.5, A = +1, then (PPO, CISPO) at r = 0.5, A = -1, clip 0.2 each side"
    )


@exercise(
    "10.2",
    "did CISPO beat the hard clip under the push?",
    "compare cispo with grpo on eval_accuracy, paired by seed; 'noise' if the interval contains 0",
)
def _cispo_push(answer, runs):
    return _which_higher(answer, runs, "grpo", "cispo", "eval_accuracy")


@exercise(
    "10.3",
    "did the truncated importance weight recover what the stale sampler cost?",
    "compare stale_tis with stale on eval_accuracy, paired by seed; 'noise' if the interval contains 0",
)
def _tis_recovers(answer, runs):
    return _which_higher(answer, runs, "stale", "stale_tis", "eval_accuracy")


# --------------------------------------------------------------------------- #
# 12 · Where reasoning comes from
# --------------------------------------------------------------------------- #


def _close(answer, want: tuple[float, ...], what: str, tol: float = 0.01) -> tuple[bool, str]:
    """Numbers compared within ``tol`` each."""
    got = tuple(float(a) for a in (answer if isinstance(answer, (list, tuple)) else (answer,)))
    if len(got) != len(want):
        return False, f"answer {len(want)} number{'s' if len(want) > 1 else ''}: {what}"
    ok = all(abs(g - w) <= tol * max(1.0, abs(w)) for g, w in zip(got, want))
    return ok, f"{what}: {', '.join(f'{w:.3f}' for w in want)}"


@exercise(
    "12.1",
    "the ceiling of a strategy switch",
    "a policy that only changes its choice has accuracy p q + (1 - p) d; put p = 1, then p = 0",
)
def _ceiling(answer, q, d):
    return _close(
        answer, (q, d), "accuracy at p = 1 (the scratchpad's competence q) and at p = 0 (the direct answer's d)"
    )


@exercise(
    "12.2",
    "how often a group of 16 carries the rare strategy's signal",
    "a group misses it when none of its 16 answers is a right scratchpad: (1 - p q)^16",
)
def _signal_chance(answer, p, q):
    c = 1 - (1 - p * q) ** 16
    return _close(answer, (c, 16 * c), f"1 - (1 - p q)^16 with p = {p:.4f}, q = {q:.3f}, and 16 groups times that")


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
    return _which_higher(answer, runs, "grpo", "ei", "eval_entropy")
