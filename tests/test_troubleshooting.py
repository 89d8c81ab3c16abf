"""Notebook 06's broken tasks (rlalgos.workbook.troubleshooting), named by strings a TrainConfig
carries: what each one pays for, that a name resolves in any process, and that scoring the
medium pool leaves the caller's random numbers alone."""

import pytest
import torch

from rlalgos.tasks import get_task
from rlalgos.workbook import troubleshooting as ts

ANSWERS = ["46+76=122;122+82=204#204", "#204", "#205", "46+76=122;122+82=205#205"]


def _parts(task):
    return task.rewards(["46+76+82="] * 4, ANSWERS, {"answer": ["204"] * 4})[1]


def test_the_concise_reward_pays_a_short_wrong_answer_as_much_as_a_right_scratchpad():
    parts = _parts(get_task(ts.CONCISE))
    assert parts["correct"] == [1.0, 1.0, 0.0, 0.0] and parts["concise"] == [0.0, 1.0, 1.0, 0.0]


def test_the_length_judge_pays_length_and_never_correctness():
    task = get_task(ts.VERBOSE)
    parts = _parts(task)
    assert parts["length_judge"] == [len(a) / ts.L_MAX for a in ANSWERS] and task.max_new_tokens == ts.L_MAX
    assert dict((n, w) for n, _, w in task.rewards.fns) == {"length_judge": 1.0, "correct": 0.0}


def test_too_hard_trains_on_five_terms_and_tests_on_the_usual_split():
    task, default = get_task(ts.TOO_HARD), get_task("addition")
    assert (
        {r["n_terms"] for r in task.train} == {5}
        and task.test == default.test
        and task.max_new_tokens == ts.MEDIUM_MAX_TOKENS
    )


def test_the_medium_pool_keeps_the_sometimes_solved_prompts_and_leaves_the_rng_alone():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    task = get_task(f"{ts.MEDIUM}:pool=8:pool_g=2")
    assert torch.equal(torch.random.get_rng_state(), before)
    rows, rate = ts.medium_pool(0, 8, 2)
    kept = [r for r, p in zip(rows, rate) if 0 < p < 1] or rows
    assert task.train == kept and all(p in (0.0, 0.5, 1.0) for p in rate)


@pytest.mark.parametrize(
    "name, msg",
    [
        ("rlalgos.workbook.nope:task", "importable module"),
        ("rlalgos.workbook.troubleshooting:nope", "importable module"),
        ("rlalgos.workbook.troubleshooting:medium_task:pool", "key=value"),
        ("rlalgos.workbook.troubleshooting:medium_pool", "not a rlalgos.tasks.Task"),
    ],
)
def test_a_bad_task_name_is_one_clear_error(name, msg):
    with pytest.raises(ValueError, match=msg):
        get_task(name)
