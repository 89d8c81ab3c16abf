"""The exercises of notebooks 04-07: DAPO's fixes, the four side by side, troubleshooting, a learned reward model."""

from __future__ import annotations

import torch

from ... import core
from .judging import call, choice, exercise, noise_verdict, same, which_higher

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
    return same(
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
    return same(answer, core.overlong_penalty(lengths, 64, 8), "lengths [40, 56, 60, 64] with L_max 64, L_c 8")


CLIP_RATIOS = (0.60, 0.75, 0.85, 1.00, 1.15, 1.25, 1.35)
"""The seven token ratios of notebook 04's section 3b."""


def clip_fraction(A: float, clip_high: float, clip_low: float = 0.2, ratios=CLIP_RATIOS) -> float:
    """The share of ``ratios`` whose gradient the clip stops, every token with advantage ``A``:
    from ``core.policy_loss`` itself."""
    r = torch.tensor(ratios)
    ones = torch.ones(1, len(r))
    _, m = core.policy_loss(r.log()[None], 0 * ones, A * ones, ones, clip_low=clip_low, clip_high=clip_high)
    return m["clip_frac"]


@exercise(
    "04.4",
    "a still wider ceiling",
    "with A > 0 a token is clipped where its ratio exceeds 1 + clip_high; with A < 0 where it is below 1 - clip_low, which clip_high does not move",
)
def _wider_ceiling(answer):
    want = torch.tensor([clip_fraction(+1.0, 0.36), clip_fraction(-1.0, 0.36)])
    return same(answer, want, "the seven ratios 0.60..1.35 of section 3b with clip_high 0.36, as (A = +1, A = -1)")


@exercise(
    "04.3",
    "what the KL coefficient does to entropy",
    "a KL term pulls the policy back toward the reference (the SFT model), which is less sharp; 'noise' is the right answer when the seeds disagree",
)
def _kl_entropy(answer, runs):
    return which_higher(answer, runs, "kl_off", "kl_0.4", "eval_entropy")


# --------------------------------------------------------------------------- #
# 05 · Side by side
# --------------------------------------------------------------------------- #


@exercise(
    "05.1",
    "RLOO's advantage is Dr. GRPO's (the mean-centred reward), rescaled",
    "r - mean_others = (G/(G-1)) (r - mean_group): write out mean_others = (G mean_group - r)/(G-1)",
)
def _rloo_scale(answer):
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    loo = r - core.leave_one_out_baseline(r, 8)
    centred = core.group_advantages(r, 8, scale="none")
    factor = (loo / centred).mean()
    return same(
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
    return choice(
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
        side, evidence = noise_verdict(by_algo["grpo"], dfs, "eval_accuracy", "grpo", name)
        ev.append(f"{name}: {side if side != 'noise' else 'within noise'}")
        if side == name:
            winners.append(name)
    return choice(answer, set(winners) or {"none"}, [*[n for n in by_algo if n != "grpo"], "none"], "; ".join(ev))


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
    return same(
        torch.as_tensor(float(call(fn, r.clone(), 4))),
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
    return which_higher(answer, runs, "a_concise", "a_concise_kl", "eval_accuracy")


# --------------------------------------------------------------------------- #
# 07 · Reward model
# --------------------------------------------------------------------------- #


@exercise(
    "07.1",
    "the AUC of a reward model",
    "over every (correct, wrong) pair, count 1 when the correct one scores higher and 0.5 on a tie; divide by the number of pairs",
)
def _auc(fn):
    from ..reward_model import auc

    scores, labels = [0.9, 0.2, 0.4, 0.4, 0.8, 0.1], [1, 0, 1, 0, 0, 1]
    return same(
        torch.as_tensor(float(call(fn, scores, labels))),
        torch.tensor(auc(scores, labels)),
        "scores [.9,.2,.4,.4,.8,.1], labels [1,0,1,0,0,1]",
    )


@exercise(
    "07.2", "which fix kept accuracy higher", "both fixes beat 'rm only'; compare them with each other, paired by seed"
)
def _rm_fix(answer, runs):
    return which_higher(answer, runs, "rm + KL", "rm + rule", "eval_accuracy")
