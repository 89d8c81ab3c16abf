"""Mechanisms, measured directly: what an improved-GRPO trick does to one batch.

At this scale, end-to-end accuracy differences of a few points drown in the
noise between seeds. But each trick acts through a mechanism that can be
measured on real rollouts of the shipped model, with little or no noise:

* :func:`aggregation_push`: how hard each loss aggregation pushes down a long
  wrong answer against a short one (token-level vs per-answer loss, DAPO /
  Dr. GRPO vs GRPO), per token and per answer, exactly (autograd on the log-probs),
  and what one real optimizer step then does to their probabilities;
* :func:`truncation_census`: what the overlong filter would remove at a given
  generation budget, and whether it removes correct answers;
* :func:`signal_census`: how many groups carry any signal (dynamic sampling),
  and which problems the filter keeps (its difficulty bias).

``benchmarks/mechanisms.py`` runs them over several seeds and prints JSON.
"""

from __future__ import annotations

import copy
from typing import Sequence

import pandas as pd
import torch

from .. import core
from ..config import LOSS_AGG_MODES
from ..engine.forward import forward_logprobs
from ..record import Rollout, completion_mask_from_ids, pad_cat
from ..rollout import rollout
from ..engine.sampler import SamplingConfig
from ..tasks import RewardSet, reward_columns


def score_completions(
    tokenizer,
    rows: Sequence[dict],
    completions: Sequence[str],
    group_size: int,
    rewards: RewardSet,
    max_new_tokens: int,
) -> Rollout:
    """A :class:`Rollout` of given completion texts, as if the policy had sampled
    them: each ``rows[i // group_size]`` answered by ``completions[i]``, tokenised
    with EOS appended and cut at ``max_new_tokens`` (then it is truncated)."""
    rows = [r for r in rows for _ in range(group_size)]
    assert len(rows) == len(completions), "give group_size completions per row"
    enc = tokenizer([r["prompt"] for r in rows], return_tensors="pt", padding=True)
    ids = [
        (tokenizer(c, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id])[:max_new_tokens]
        for c in completions
    ]
    completion_ids = pad_cat([torch.tensor([x]) for x in ids], False, tokenizer.pad_token_id)  # (N, T)
    mask, truncated = completion_mask_from_ids(completion_ids, tokenizer.eos_token_id)
    texts = tokenizer.batch_decode(completion_ids, skip_special_tokens=True)
    total, parts = rewards([r["prompt"] for r in rows], texts, reward_columns(rows))
    return Rollout(
        prompts=[r["prompt"] for r in rows],
        completions=texts,
        rows=rows,
        prompt_ids=enc["input_ids"],
        prompt_mask=enc["attention_mask"],
        completion_ids=completion_ids,
        completion_mask=mask,
        truncated=truncated,
        old_logprobs=None,
        ref_logprobs=None,
        rewards=torch.tensor(total),
        reward_parts={k: torch.tensor(v) for k, v in parts.items()},
        group_size=group_size,
        pad_token_id=tokenizer.pad_token_id,
    )


def padded_working(row: dict, max_chars: int) -> str:
    """A long *wrong* answer to an addition row: its scratchpad steps repeated as
    often as ``max_chars`` allows, then a final answer that is off by one."""
    steps = row["target"].split("#")[0]
    reps = max(2, max_chars // (len(steps) + 1))
    text = ";".join([steps] * reps)
    while len(text) + len(row["answer"]) + 2 > max_chars and reps > 2:
        reps -= 1
        text = ";".join([steps] * reps)
    return f"{text}#{int(row['answer']) + 1}"


def plant_long_wrong(
    policy, tokenizer, task, rows: Sequence[dict], group_size: int, max_new_tokens: int, seed: int
) -> tuple[Rollout, torch.Tensor]:
    """Sample ``group_size - 1`` answers per row with the policy and add one long
    wrong answer (:func:`padded_working`) to each group. Returns the rollout and a
    (N,) bool marking the planted rows."""
    torch.manual_seed(seed)
    ro = rollout(
        policy,
        tokenizer,
        rows,
        group_size - 1,
        task.rewards,
        SamplingConfig(max_new_tokens=max_new_tokens),
        old_logprobs=False,
    )
    completions, planted = [], []
    for g, row in enumerate(rows):
        completions += ro.completions[g * (group_size - 1) : (g + 1) * (group_size - 1)] + [
            padded_working(row, max_new_tokens - 2)
        ]
        planted += [False] * (group_size - 1) + [True]
    return score_completions(tokenizer, rows, completions, group_size, task.rewards, max_new_tokens), torch.tensor(
        planted
    )


def aggregation_push(
    policy,
    ro: Rollout,
    planted: torch.Tensor,
    modes: Sequence[str] = LOSS_AGG_MODES,
    lr: float = 1e-4,
    max_len: int | None = None,
) -> pd.DataFrame:
    """For each loss aggregation mode, the push the GRPO policy-gradient loss
    gives each answer of ``ro``, and what one AdamW step does to it.

    The push on token t is ``dL/d logp_t`` (exact, by autograd on the token
    log-probs; positive = the step lowers that token's probability). One row per
    answer and mode: its length, advantage, whether it was planted, correct,
    the mean push per token and the total over its tokens, and the change of its
    mean token log-prob after one AdamW step (``lr``) from the same weights.
    """
    mask = ro.completion_mask  # (N, T)
    adv = core.group_advantages(ro.rewards, ro.group_size).unsqueeze(-1)  # (N, 1)
    out_rows = []
    with torch.no_grad():
        before = forward_logprobs(policy, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, mask)["logprobs"]  # (N, T)
    for mode in modes:
        model = copy.deepcopy(policy).train()
        logp = forward_logprobs(model, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, mask)["logprobs"]  # (N, T)
        logp.retain_grad()
        loss, _ = core.policy_loss(logp, logp.detach(), adv, mask, 0.2, 0.2, mode, max_len)
        loss.backward()
        push = logp.grad * mask  # (N, T) dL/dlogp_t
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
        opt.step()
        with torch.no_grad():
            after = forward_logprobs(model.eval(), ro.prompt_ids, ro.prompt_mask, ro.completion_ids, mask)["logprobs"]
        n = mask.sum(-1)  # (N,)
        for i in range(len(ro)):
            a = adv[i, 0].item()
            out_rows.append(
                {
                    "mode": mode,
                    "length": int(n[i]),
                    "advantage": a,
                    "planted": bool(planted[i]),
                    "correct": bool(ro.correct[i] > 0),
                    "push_per_token": (push[i].sum() / n[i]).item(),
                    "push_total": push[i].sum().item(),
                    # dL/dlogp = -A * weight: the weight the aggregation gives each token / the whole answer
                    "weight_per_token": (push[i].sum() / n[i]).item() / -a if a else float("nan"),
                    "weight_total": push[i].sum().item() / -a if a else float("nan"),
                    "dlogp_per_token": (((after[i] - before[i]) * mask[i]).sum() / n[i]).item(),
                }
            )
    return pd.DataFrame(out_rows)


def summarize_push(df: pd.DataFrame) -> pd.DataFrame:
    """Per mode, over wrong answers with a negative advantage: planted long ones
    against sampled short ones. ``per_token_ratio`` and ``per_answer_ratio`` compare
    the aggregation's weight per unit of advantage (long / short): a per-token ratio
    of 1 means every token weighs the same (token-mean, Dr. GRPO); a per-answer ratio
    of 1 means every answer weighs the same (GRPO's per-answer mean), so each token of
    a long answer counts less. ``dlogp_*`` is the mean change of token log-probs
    after one optimizer step (negative = pushed down)."""
    out = {}
    for mode, d in df.groupby("mode", sort=False):
        wrong = d[d["advantage"] < 0]
        long_, short = wrong[wrong["planted"]], wrong[~wrong["planted"]]
        out[mode] = {
            "long_len": long_["length"].mean(),
            "short_len": short["length"].mean(),
            "push_per_token_long": long_["push_per_token"].mean(),
            "push_per_token_short": short["push_per_token"].mean(),
            "per_token_ratio": long_["weight_per_token"].mean() / short["weight_per_token"].mean(),
            "per_answer_ratio": long_["weight_total"].mean() / short["weight_total"].mean(),
            "dlogp_long": long_["dlogp_per_token"].mean(),
            "dlogp_short": short["dlogp_per_token"].mean(),
            "dlogp_correct": d[d["correct"]]["dlogp_per_token"].mean(),
        }
    return pd.DataFrame(out).T


@torch.no_grad()
def truncation_census(policy, tokenizer, task, rows: Sequence[dict], group_size: int, budget: int, seed: int) -> dict:
    """Sample ``group_size`` answers per row with a ``budget``-token limit and count
    what the overlong filter (mask truncated answers out of the loss) would touch."""
    torch.manual_seed(seed)
    ro = rollout(
        policy, tokenizer, rows, group_size, task.rewards, SamplingConfig(max_new_tokens=budget), old_logprobs=False
    )
    trunc, correct = ro.truncated, ro.correct > 0
    mixed = (ro.group_std() > 0).repeat_interleave(group_size)  # (N,) rows whose group carries signal
    tokens = ro.completion_mask.sum(-1)
    return {
        "budget": budget,
        "answers": len(ro),
        "truncated_frac": trunc.float().mean().item(),
        "truncated_correct_frac": (trunc & correct).float().sum().item() / max(int(trunc.sum()), 1),
        "truncated_in_mixed_groups_frac": (trunc & mixed).float().mean().item(),
        "filtered_tokens_frac_of_signal": (tokens * (trunc & mixed)).sum().item()
        / max((tokens * mixed).sum().item(), 1.0),
        "accuracy": correct.float().mean().item(),
        "zero_std_frac": (ro.group_std() == 0).float().mean().item(),
    }


@torch.no_grad()
def signal_census(
    policy,
    tokenizer,
    task,
    rows: Sequence[dict],
    group_size: int,
    seed: int,
    max_new_tokens: int = 64,
    key: str = "n_terms",
) -> pd.DataFrame:
    """Sample ``group_size`` answers per row and report, per value of ``rows[i][key]``
    (e.g. the number of terms), how many groups there were and how many carry
    signal (not all rewards equal): what dynamic sampling keeps and drops."""
    torch.manual_seed(seed)
    ro = rollout(
        policy,
        tokenizer,
        rows,
        group_size,
        task.rewards,
        SamplingConfig(max_new_tokens=max_new_tokens),
        old_logprobs=False,
    )
    informative = (ro.group_std() > 0).tolist()
    acc = ro.correct.view(-1, group_size).mean(1).tolist()
    df = pd.DataFrame(
        {
            key: [r[key] for r in rows],
            "informative": informative,
            "accuracy": acc,
            "all_right": [a == 1.0 for a in acc],
            "all_wrong": [a == 0.0 for a in acc],
        }
    )
    return df.groupby(key).agg(
        groups=("informative", "size"),
        informative=("informative", "sum"),
        accuracy=("accuracy", "mean"),
        all_right=("all_right", "sum"),
        all_wrong=("all_wrong", "sum"),
    )
