"""The self-checking exercises: right answers pass, wrong ones get one line with a hint (never a traceback),
and prediction exercises take their truth from the measurements they are given, not from the exercise."""

import pandas as pd
import pytest
import torch

from rlalgos import core
from rlalgos.workbook.exercises import EXERCISES, check, judge, token_weight


def run(values, key="eval_accuracy"):
    """A metrics frame whose last 5 training rows average to ``values`` (no config.json: seeds pair by position)."""
    return pd.DataFrame({"step": range(6), key: [0.0] + [values] * 5})


def test_every_notebook_has_two_to_four_exercises():
    per_nb = pd.Series([k.split(".")[0] for k in EXERCISES]).value_counts()
    assert sorted(per_nb.index) == ["01", "02", "03", "04", "05", "06", "07", "09", "09b", "10", "12", "13"]
    assert per_nb.between(2, 4).all(), per_nb.to_dict()


def test_code_exercise_right_answer():
    def loo(rewards, group_size):
        r = rewards.view(-1, group_size)
        return ((r.sum(1, keepdim=True) - r) / (group_size - 1)).view(-1)

    ok, line = judge("01.1", loo)
    assert ok and line.startswith("✓ 01.1")


def test_wrong_answer_gives_one_line_with_a_hint(capsys):
    """A deliberately wrong group advantage (forgot the std division): one line, what differed, the hint."""

    def centred_only(rewards, group_size):
        r = rewards.view(-1, group_size)
        return (r - r.mean(1, keepdim=True)).view(-1)

    assert check("03.1", centred_only) is None and judge("03.1", centred_only)[0] is False
    out = capsys.readouterr().out
    lines = out.splitlines()  # one verdict, wrapped to the book's column: continuation lines are indented
    assert all(len(line) <= 90 for line in lines) and all(line.startswith("    ") for line in lines[1:])
    assert "Traceback" not in out
    out = " ".join(line.strip() for line in lines)
    assert out.startswith("✗ 03.1") and "expected" in out and "Hint: " in out and "std" in out


def test_raising_code_and_unanswered_give_one_line(capsys):
    def broken(rewards, group_size):
        return rewards.view(3, 5)  # 8 rewards do not reshape to 3 x 5

    def empty(rewards, group_size): ...

    for exercise, answer in (("01.1", broken), ("01.1", empty), ("02.1", [..., ..., ...])):
        check(exercise, answer)
        assert not judge(exercise, answer)[0]
    out = capsys.readouterr().out.replace("\n    ", " ")  # each verdict wraps onto indented lines: join them back
    lines = out.splitlines()
    assert len(lines) == 3 and all("Hint: " in line for line in lines)
    assert "raised RuntimeError" in lines[0] and "not answered yet" in lines[1] and "not answered yet" in lines[2]


def test_numeric_answers():
    assert judge("02.1", [-1.2, 0.8, 1.5])[0]
    assert not judge("02.1", [-1.2, 0.8, 1.2])[0]  # clipped the third token too: it is the pessimistic, unclipped one
    assert judge("04.1", (1 / 16, 1 / 10))[0] and not judge("04.1", (1 / 10, 1 / 10))[0]
    assert judge("04.2", [0, 0, -0.5, -1])[0]
    assert judge("04.4", (0.0, 2 / 7))[0] and not judge("04.4", (1 / 7, 2 / 7))[0]
    assert judge("05.1", 8 / 7)[0] and not judge("05.1", 1.0)[0]
    assert judge("09.1", ("fall", "rise"))[0] and not judge("09.1", ("rise", "rise"))[0]
    assert judge("09.2", (0.06, 0.064))[0] and not judge("09.2", (0.05, 0.05))[0]
    assert judge("10.1", (0.0, 1.2, 0.0, -0.8))[0] and not judge("10.1", (1.2, 1.2, -0.8, -0.8))[0]
    q_d = dict(q=0.5443, d=0.0587)  # a run's measurements: the answer typed from their printed digits passes
    assert judge("12.1", (0.544, 0.059), **q_d)[0] and not judge("12.1", (0.6, 0.059), **q_d)[0]
    ok, line = judge("05.1", "eight sevenths")
    assert not ok and "ValueError" in line


def test_token_weight_is_the_aggregation_gradient():
    assert token_weight("seq-mean-token-mean") == pytest.approx(1 / 16)
    assert token_weight("token-mean") == pytest.approx(1 / 10)
    assert token_weight("seq-mean-token-mean", row=0) == pytest.approx(1 / 4)


def test_gae_and_k3_solutions_pass():
    def gae(rewards, values, mask, gamma, lam):
        B, T = rewards.shape
        adv, nv, na = torch.zeros(B, T), torch.zeros(B), torch.zeros(B)
        for t in reversed(range(T)):
            m = mask[:, t]
            adv[:, t] = (rewards[:, t] + gamma * nv - values[:, t] + gamma * lam * na) * m
            nv, na = values[:, t] * m, adv[:, t]
        return adv

    assert judge("02.2", gae)[0]
    assert judge("02.2", lambda r, v, m, g, lam: core.gae(r, v, m, g, 1.0)[0])[0] is False  # ignores lam
    assert judge("03.2", lambda logp, ref: torch.exp(ref - logp) - (ref - logp) - 1)[0]
    assert not judge("03.2", lambda logp, ref: logp - ref)[0]  # k1, not k3


def test_predictions_follow_the_measurements():
    """The same question has a different right answer when the runs say something different."""
    e = lambda v: run(v, "eval_entropy")  # noqa: E731
    clear = {"kl_off": [e(0.20), e(0.21), e(0.19)], "kl_0.4": [e(0.25), e(0.27), e(0.24)]}
    assert judge("04.3", "kl_0.4", runs=clear)[0] and not judge("04.3", "noise", runs=clear)[0]
    mixed = {"kl_off": [e(0.20), e(0.25), e(0.19)], "kl_0.4": [e(0.25), e(0.20), e(0.21)]}
    ok, line = judge("04.3", "noise", runs=mixed)
    assert ok and "within noise" in line
    one_seed = {"kl_off": [e(0.10)], "kl_0.4": [e(0.40)]}
    assert judge("04.3", "noise", runs=one_seed)[0]  # one seed is an anecdote


def test_prediction_option_checking():
    runs = {"a_concise": [run(0.2)] * 3, "a_concise_kl": [run(0.2)] * 3}
    ok, line = judge("06.3", "yes", runs=runs)
    assert not ok and "answer one of" in line


def test_table_predictions():
    var_table = pd.DataFrame(
        {"per_answer_var": [21.0, 34.0, 38.0, 210.0, 35.0, 38.5]},
        index=pd.MultiIndex.from_product([["r (0/1)", "r + 1"], ["none", "batch", "rloo"]]),
    )
    assert judge("01.3", "none", var_table=var_table)[0] and not judge("01.3", "rloo", var_table=var_table)[0]
    cost = pd.DataFrame({"update / reinforce": [1.0, 5.6]}, index=["reinforce", "ppo (2 epochs x 4 mb)"])
    assert judge("02.3", "4-8x", cost=cost)[0] and not judge("02.3", "2-3x", cost=cost)[0]
    sweep = pd.DataFrame(
        {"answers with signal": [49.5, 76.0, 102.0]},
        index=pd.MultiIndex.from_tuples([("fixed budget", g) for g in (2, 4, 8)]),
    )
    assert judge("03.3", "8", sweep=sweep)[0] and judge("03.3", 8, sweep=sweep)[0]
    timing = pd.DataFrame({"rollout s": [0.3, 0.5], "update s": [0.29, 0.28]}, index=["grpo", "dapo"])
    assert judge("05.2", "rollout", timing=timing)[0]


def test_unknown_exercise_is_a_one_line_error():
    with pytest.raises(ValueError, match="no exercise '9.9'"):
        check("9.9", 1)
