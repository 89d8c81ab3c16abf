"""The mechanism measurements: exact where the maths gives a closed form, and in
agreement with a second way of computing the same thing elsewhere."""

import math

import pytest
import torch

from rlalgos.workbook.mechanisms import (
    aggregation_push,
    padded_working,
    plant_long_wrong,
    score_completions,
    signal_census,
    summarize_push,
    truncation_census,
)
from rlalgos.rollout import rollout
from rlalgos.engine.sampler import SamplingConfig
from rlalgos.tasks import correctness_reward, make_addition_split


def test_score_completions_rebuilds_what_the_sampler_recorded(base, task):
    policy, tok = base
    rows = make_addition_split(4, seed=5)
    torch.manual_seed(0)
    ro = rollout(policy, tok, rows, 4, task.rewards, SamplingConfig(max_new_tokens=48), old_logprobs=False)
    again = score_completions(tok, rows, ro.completions, 4, task.rewards, 48)
    T = ro.completion_ids.shape[1]
    assert torch.equal(again.completion_ids[:, :T], ro.completion_ids) and torch.equal(
        again.completion_mask[:, :T], ro.completion_mask
    )
    assert torch.equal(again.truncated, ro.truncated) and torch.equal(again.rewards, ro.rewards)


def test_padded_working_is_long_and_wrong(task):
    for row in make_addition_split(20, seed=1, terms=(2, 3)):
        text = padded_working(row, 46)
        assert len(text) <= 46 and len(text) > 1.8 * len(row["target"])
        assert correctness_reward([row["prompt"]], [text], answer=[row["answer"]]) == [0.0]


def test_aggregation_weights_follow_the_closed_forms(base, task):
    """Per unit of advantage, the loss weighs each token of answer i by
    1 / (all tokens) under token-mean, 1 / (B n_i) under seq-mean-token-mean and
    1 / (B L) under seq-mean-token-sum-norm; the measured autograd weights agree."""
    policy, tok = base
    rows = make_addition_split(6, seed=7, terms=(2, 3))
    ro, planted = plant_long_wrong(policy, tok, task, rows, 4, 48, seed=0)
    df = aggregation_push(policy, ro, planted, max_len=48)
    B, n_tokens = len(ro), ro.completion_mask.sum().item()
    checked = 0
    for _, r in df.dropna(subset=["weight_per_token"]).iterrows():
        want = {
            "token-mean": 1 / n_tokens,
            "seq-mean-token-mean": 1 / (B * r["length"]),
            "seq-mean-token-sum-norm": 1 / (B * 48),
        }[r["mode"]]
        assert r["weight_per_token"] == pytest.approx(want, rel=1e-4), r.to_dict()
        checked += 1
    assert checked >= 3 * 4  # at least four answers with a nonzero advantage, under each of the three modes
    table = summarize_push(df)
    assert table.loc["token-mean", "per_token_ratio"] == pytest.approx(1.0, rel=1e-4)
    assert table.loc["seq-mean-token-mean", "per_answer_ratio"] == pytest.approx(1.0, rel=1e-4)
    long_over_short = table.loc["seq-mean-token-mean", "long_len"] / table.loc["seq-mean-token-mean", "short_len"]
    assert table.loc["token-mean", "per_answer_ratio"] > 1.5 and math.isfinite(long_over_short)


def test_censuses_count_what_a_plain_rollout_shows(base, task):
    policy, tok = base
    rows = make_addition_split(8, seed=3, terms=(3, 4))
    c = truncation_census(policy, tok, task, rows, 4, budget=20, seed=11)
    torch.manual_seed(11)
    ro = rollout(policy, tok, rows, 4, task.rewards, SamplingConfig(max_new_tokens=20), old_logprobs=False)
    assert c["truncated_frac"] == pytest.approx(ro.truncated.float().mean().item())
    assert c["zero_std_frac"] == pytest.approx((ro.group_std() == 0).float().mean().item())
    rows = make_addition_split(12, seed=4, terms=(2, 5))
    table = signal_census(policy, tok, task, rows, 4, seed=2)
    assert (
        table["groups"].sum() == 12
        and (table["informative"] + table["all_right"] + table["all_wrong"] == table["groups"]).all()
    )
