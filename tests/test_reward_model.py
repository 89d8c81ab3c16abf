"""Learned reward models through the same reward interface as the rule rewards."""

import random

import pytest
import torch
from transformers import AutoModelForSequenceClassification

from rlalgos.model import load_policy
from rlalgos.config import REWARD_MODEL_DIR
from rlalgos.workbook.configs import RMConfig
from rlalgos.workbook.reward_model import (
    ModelReward,
    auc,
    evaluate_reward_model,
    make_pairs,
    sample_labelled,
    train_reward_model,
)
from rlalgos.tasks import RewardSet, addition_task, correctness_reward
from rlalgos.train import TrainConfig, train


@pytest.fixture(scope="module")
def tiny_rm_dir(tiny_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("rm")
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_dir, num_labels=1)
    model.config.pad_token_id = 0
    torch.nn.init.normal_(model.score.weight, std=0.5)
    model.save_pretrained(d)
    _, tok = load_policy(tiny_dir, device="cpu")
    tok.save_pretrained(d)
    return d


def test_save_reload_same_scores_and_batching_does_not_matter(tiny_rm_dir, tmp_path):
    rm = ModelReward.from_pretrained(tiny_rm_dir, device="cpu")
    prompts, completions = ["1+2=", "10+20+30=", "5+5="], ["#3", "10+20=30;30+30=60#60", ""]
    a = rm(prompts, completions)
    assert len(a) == 3 and all(isinstance(x, float) for x in a) and len(set(a)) == 3
    rm.model.save_pretrained(tmp_path)
    rm.tokenizer.save_pretrained(tmp_path)
    b = ModelReward.from_pretrained(tmp_path, device="cpu", batch_size=1)(prompts, completions)
    assert a == pytest.approx(b, abs=1e-5)


def test_reward_set_treats_model_and_rule_rewards_alike(tiny_rm_dir):
    rm = ModelReward.from_pretrained(tiny_rm_dir, device="cpu")
    rs = RewardSet([("correct", correctness_reward, 1.0), ("rm", rm, 0.5)])
    prompts, completions = ["1+2=", "1+2="], ["#3", "#4"]
    total, parts = rs(prompts, completions, {"answer": ["3", "3"]})
    assert set(parts) == {"correct", "rm"} and parts["correct"] == [1.0, 0.0]
    assert total == pytest.approx([1.0 + 0.5 * parts["rm"][0], 0.5 * parts["rm"][1]])


def test_training_with_a_reward_model_logs_each_part(tiny_dir, tiny_rm_dir, tmp_path):
    cfg = TrainConfig(
        model=str(tiny_dir),
        algo="grpo",
        steps=2,
        prompts_per_step=2,
        group_size=4,
        max_new_tokens=8,
        eval_every=0,
        eval_prompts=2,
        eval_samples=2,
        reward_model=str(tiny_rm_dir),
        rule_weight=0.0,
        out_dir=str(tmp_path / "r"),
        progress=False,
    )
    df = train(cfg)
    assert {"reward/rm", "reward/correct", "accuracy"} <= set(df)
    row = df.iloc[-1]
    assert row["reward_mean"] == pytest.approx(row["reward/rm"], abs=1e-5)  # rule weight 0: reward is the model's
    assert row["accuracy"] == pytest.approx(row["reward/correct"])  # accuracy is still the rule's


def test_auc_and_pairs_by_hand():
    assert auc([0.9, 0.8, 0.1, 0.8], [1, 1, 0, 0]) == pytest.approx((1 + 1 + 1 + 0.5) / 4)
    data = [{"prompt": "p", "completion": c, "label": y, "group": 0} for c, y in [("a", 1), ("b", 0), ("c", 0)]] + [
        {"prompt": "q", "completion": "d", "label": 1, "group": 1}
    ]
    assert sorted(make_pairs(data, random.Random(0))) == [("pa", "pb"), ("pa", "pc")]


def test_train_reward_model_smoke(tiny_dir, tmp_path):
    report = train_reward_model(
        RMConfig(
            base=str(tiny_dir),
            prompts=4,
            heldout_prompts=2,
            group_size=2,
            loss="bce",
            steps=2,
            batch_size=4,
            out_dir=str(tmp_path / "rm"),
            progress=False,
        )
    )
    assert (tmp_path / "rm" / "config.json").exists() and "heldout_auc" in report
    with pytest.raises(ValueError, match="unknown loss"):
        train_reward_model(RMConfig(loss="hinge"))


@pytest.mark.skipif(not (REWARD_MODEL_DIR / "config.json").exists(), reason="no shipped reward model")
def test_shipped_reward_model_ranks_correct_above_wrong():
    """On held-out prompts the shipped reward model clearly beats chance (0.5)."""
    policy, tok = load_policy()
    data = sample_labelled(policy, tok, addition_task().test[300:380], 8, seed=123)
    model = AutoModelForSequenceClassification.from_pretrained(REWARD_MODEL_DIR)
    from transformers import AutoTokenizer

    res = evaluate_reward_model(model.eval(), AutoTokenizer.from_pretrained(REWARD_MODEL_DIR), data)
    print(res)
    assert res["auc"] > 0.7 and res["pair_accuracy"] > 0.7
