"""The source listings notebook 04 prints: wrapped to the page, numbered as the source is, diffed
against the parent class, and the KL found where each algorithm computes it."""

import torch

from rlalgos.algorithms.base import Algorithm
from rlalgos.algorithms.dapo import DAPO
from rlalgos.algorithms.grpo import GRPO
from rlalgos.algorithms.ppo import PPO
from rlalgos.workbook.listing import (
    WIDTH,
    hand_rollout,
    kl_source,
    method_diff,
    numbered,
    overridden,
    source_of,
    wrapped,
)


def test_wrapped_moves_a_trailing_comment_above_its_code_and_keeps_short_lines():
    code = "    x = some_function(argument_one, argument_two)  # " + "a long comment " * 6
    out = wrapped("short = 1\n" + code, width=60).splitlines()
    assert out[0] == "short = 1"
    assert out[1].startswith("    # a long comment")
    assert out[-1] == "    x = some_function(argument_one, argument_two)"
    assert all(len(line) <= 60 for line in out)
    assert all(line.startswith("    # ") for line in out[1:-1])  # the comment's continuations stay comments


def test_wrapped_keeps_a_diff_mark_on_every_piece():
    line = "+    result = combine(" + ", ".join(f"argument_{i}" for i in range(12)) + ")"
    out = wrapped(line, width=50, diff=True).splitlines()
    assert len(out) > 1 and all(p.startswith("+") and len(p) <= 50 for p in out)
    assert out[1].startswith("+        ")  # a continuation is indented 4 more than its line
    assert wrapped(line, width=50).splitlines()[0][0] == "+"  # without diff=True the mark is plain text


def test_source_of_finds_the_defining_class_along_the_mro():
    src, owner = source_of(DAPO, "policy_loss")  # DAPO inherits it
    assert owner != "DAPO" and src.startswith("def policy_loss")
    src, owner = source_of(DAPO, "_informative")  # a static method: its function's source
    assert owner == "DAPO" and src.startswith("@staticmethod") and "group_std" in src
    assert source_of(GRPO, "collect")[1] == "Algorithm"


def test_overridden_splits_dapos_methods_into_overridden_and_new():
    over, new = overridden(DAPO, GRPO)
    assert {"advantages", "collect", "loss", "kl_coef_now"} <= set(over)
    assert new == ["_informative"]
    assert "name" not in over and "Config" not in over
    assert all(hasattr(GRPO, n) for n in over)


def test_method_diff_heads_with_both_classes_and_marks_dapos_lines():
    diff = method_diff(GRPO, DAPO, "advantages").splitlines()
    assert diff[:2] == ["--- GRPO.advantages", "+++ DAPO.advantages"]
    assert any(line.startswith("+") and "overlong_penalty" in line for line in diff)
    assert any(line.startswith("-") and "group_advantages" in line for line in diff)
    assert all(len(line) <= WIDTH for line in diff)


def test_numbered_keeps_the_sources_own_line_numbers():
    src = source_of(DAPO, "collect")[0]
    out = numbered(src).splitlines()
    heads = [line for line in out if line[:2].strip()]  # numbered lines; continuations start with spaces
    assert [int(line[:2]) for line in heads] == list(range(1, len(src.splitlines()) + 1))
    assert all(len(line) <= WIDTH for line in out)
    assert numbered("a\nb") == " 1 a\n 2 b"


def test_numbered_puts_the_number_on_the_code_not_on_a_moved_comment():
    src = "x = 1\n" + "y = compute(alpha, beta, gamma, delta)  # " + "why this line matters " * 5
    out = numbered(src, width=60).splitlines()
    assert out[0] == " 1 x = 1"
    assert out[1].startswith("   # why this line")  # the moved comment: unnumbered, above its code
    assert out[-1] == " 2 y = compute(alpha, beta, gamma, delta)"
    collect = source_of(DAPO, "collect")[0]
    (line_14,) = [line for line in numbered(collect).splitlines() if line.startswith("14 ")]
    assert "keep_rate =" in line_14


def test_numbered_prints_a_range_under_the_sources_own_numbers():
    src = "\n".join(f"line{i}" for i in range(1, 8))
    assert numbered(src, lines=(3, 5)) == " 3 line3\n 4 line4\n 5 line5"
    collect = source_of(DAPO, "collect")[0]
    out = numbered(collect, lines=(11, 21)).splitlines()
    assert out[0].startswith("11 ") and out[-1].startswith("21 ")


def test_kl_source_finds_where_each_algorithm_computes_its_kl():
    assert kl_source(GRPO)[:2] == ("GRPO", "loss")
    assert kl_source(DAPO)[:2] == ("GRPO", "loss")  # inherited
    assert kl_source(PPO)[:2] == ("PPO", "advantages")
    assert kl_source(Algorithm) is None


def test_hand_rollout_groups_its_rewards_and_dynamic_sampling_reads_them():
    ro = hand_rollout([1.0, 0.0, 1.0, 1.0, 0.0, 0.0], group_size=2)
    assert len(ro) == 6 and ro.num_groups == 3 and ro.prompts[:3] == ["p0", "p0", "p1"]
    assert ro.lengths.tolist() == [1.0] * 6 and not ro.truncated.any()
    kept = DAPO._informative(ro)  # only the mixed group has rewards that are not all equal
    assert kept.rewards.tolist() == [1.0, 0.0]
    mask = torch.tensor([[1.0, 1, 0], [1, 1, 1]])
    ro = hand_rollout(torch.tensor([1.0, 0.0]), 2, completion_mask=mask, truncated=[False, True])
    assert ro.lengths.tolist() == [2.0, 3.0] and ro.truncated.tolist() == [False, True]
    assert ro.completion_ids.shape == (2, 3)
