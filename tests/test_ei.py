"""Expert iteration (`ei`): the 0/1 advantage by hand, its gradient against SFT's on the kept
answers, and a few steps through the CLI on the tiny model, resumed and uninterrupted."""

import math

import pytest
import torch

from test_algorithms import MASK, NEW, fixed_rollout, make

from rlalgos.algorithms.ei import ExpertIteration
from rlalgos.config import make_config
from rlalgos.tools import cli
from rlalgos.train import load_metrics

# 2 prompts x G=2: prompt 0 has one right answer (row 0, 3 tokens), prompt 1 none
REWARDS = torch.tensor([1.0, 0.0, 0.0, 0.0])
TINY = [
    "--steps",
    "2",
    "--prompts-per-step",
    "2",
    "--group-size",
    "2",
    "--max-new-tokens",
    "6",
    "--eval-every",
    "0",
    "--eval-prompts",
    "2",
    "--eval-samples",
    "1",
    "--no-progress",
]


def test_advantage_is_1_on_kept_answers_and_the_rest_leave_the_loss():
    adv = make(ExpertIteration).advantages(fixed_rollout(rewards=REWARDS))
    assert adv.values.squeeze(-1).tolist() == [1.0, 0.0, 0.0, 0.0]
    torch.testing.assert_close(adv.mask, MASK * REWARDS.unsqueeze(-1))  # only row 0's tokens are in the loss
    assert adv.metrics == {"ei_kept_frac": 0.25, "ei_empty_groups": 1.0}


@pytest.mark.parametrize(
    "keep,threshold,kept",
    [
        ("correct", 0.4, [1, 1, 0, 0]),
        ("best", 0.4, [1, 0, 0, 0]),  # best: only the group's highest reward
        ("correct", 0.1, [1, 1, 1, 1]),
        ("best", 0.1, [1, 0, 1, 1]),  # ties at the group's highest are all kept
        ("best", 2.0, [0, 0, 0, 0]),  # the best must still reach the threshold
    ],
)
def test_keep_rules(keep, threshold, kept):
    ro = fixed_rollout(rewards=torch.tensor([1.0, 0.5, 0.2, 0.2]))
    assert make(ExpertIteration, keep=keep, keep_threshold=threshold).kept(ro).tolist() == kept


def test_gradient_is_sfts_mean_nll_over_the_kept_tokens():
    ro = fixed_rollout(rewards=torch.tensor([1.0, 1.0, 0.0, 0.0]))  # rows 0 and 1 kept: 3 + 2 tokens
    algo = make(ExpertIteration)
    logp = NEW.clone().requires_grad_()
    loss, _ = algo.loss(ro, {"logprobs": logp}, algo.advantages(ro), logp.detach())
    loss.backward()
    sft = NEW.clone().requires_grad_()
    kept = MASK * torch.tensor([1.0, 1.0, 0.0, 0.0]).unsqueeze(-1)
    (-(sft * kept).sum() / kept.sum()).backward()  # SFT: mean NLL over the kept answers' tokens
    torch.testing.assert_close(logp.grad, sft.grad)
    assert logp.grad[2:].abs().sum() == 0 and loss.item() == pytest.approx(-1.0)  # ratio 1: -A per kept token


def test_no_kept_answer_contributes_nothing():
    algo = make(ExpertIteration)
    ro = fixed_rollout(rewards=torch.zeros(4))
    adv = algo.advantages(ro)
    assert adv.mask.sum() == 0 and adv.metrics == {"ei_kept_frac": 0.0, "ei_empty_groups": 2.0}
    logp = NEW.clone().requires_grad_()
    loss, _ = algo.loss(ro, {"logprobs": logp}, adv, logp.detach())
    loss.backward()
    assert loss.item() == 0.0 and logp.grad.abs().sum() == 0


def test_kl_penalty_is_reinforces_on_the_kept_answers():
    adv = make(ExpertIteration, kl_coef=0.5, kl_estimator="k1").advantages(fixed_rollout(rewards=REWARDS))
    # row 0's k1 summed over its tokens is log 2 (as in test_algorithms.test_reinforce_kl_penalty_in_reward)
    assert adv.values.squeeze(-1).tolist() == pytest.approx([1 - 0.5 * math.log(2), 0.0, 0.0, 0.0])


@pytest.mark.parametrize(
    "bad,msg", [({"baseline": "leave_one_out"}, "ei has no baseline"), ({"keep": "all"}, "unknown keep 'all'")]
)
def test_config_errors_are_one_line(bad, msg):
    with pytest.raises(ValueError, match=msg):
        make_config("ei", **bad).validate(group_size=2, num_sequences=4)


def test_cli_runs_ei_and_resume_matches_the_uninterrupted_run(tmp_path, tiny_dir):
    """The random tiny model is never right: keep_threshold 0 keeps every answer, so the
    steps train (SFT on its own samples); the default keeps none and trains on nothing."""
    common = ["--model", str(tiny_dir), *TINY, "--keep-threshold", "0"]
    assert cli.main(["train", "ei", *common, "--steps", "3", "--out-dir", str(tmp_path / "full")]) == 0
    assert cli.main(["train", "ei", *common, "--out-dir", str(tmp_path / "cut")]) == 0
    assert cli.main(["resume", str(tmp_path / "cut"), "--steps", "3"]) == 0
    full, resumed = load_metrics(tmp_path / "full"), load_metrics(tmp_path / "cut")
    train_rows = lambda df: df[df["step"] > 0].reset_index(drop=True)  # noqa: E731
    assert (
        train_rows(full)["ei_kept_frac"].tolist() == [1.0] * 3
        and train_rows(full)["ei_empty_groups"].tolist() == [0.0] * 3
    )
    assert (train_rows(full)["grad_norm"] > 0).all()
    cols = ["reward_mean", "entropy", "grad_norm", "completion_len", "loss", "ei_kept_frac"]
    assert train_rows(full)[cols].equals(train_rows(resumed)[cols])
    assert cli.main(["train", "ei", "--model", str(tiny_dir), *TINY, "--out-dir", str(tmp_path / "none")]) == 0
    rows = train_rows(load_metrics(tmp_path / "none"))
    assert (
        rows["ei_kept_frac"].tolist() == [0.0, 0.0]
        and rows["ei_empty_groups"].tolist() == [2.0, 2.0]
        and rows["grad_norm"].tolist() == [0.0, 0.0]
    )


def test_export_says_in_one_line_that_ei_has_no_equivalent(tmp_path, capsys):
    for engine in ("trl", "verl"):
        assert cli.main(["export", "--to", engine, "--export-dir", str(tmp_path / engine), "ei"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "ei is not exported" in err and "rloo" in err
        assert not (tmp_path / engine).exists()
