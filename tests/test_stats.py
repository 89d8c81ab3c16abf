"""The noise test behind every "shown" / "within noise" verdict in the notebooks."""

import json
import math

import pandas as pd
import pytest

from rlalgos.workbook.stats import (
    binomial_se,
    by_seed,
    effect_lines,
    effect_table,
    final_value,
    paired_effect,
    paired_values,
    steps_to,
    t975,
)
from rlalgos.engine.runs import run_metrics
from rlalgos.workbook.claims import effect_lines_in


def _run(tmp_path, name, seed, acc_end, entropy):
    """A run folder with a config.json and metrics rows: eval at steps 0 and 10, entropy every step."""
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"train": {"seed": seed, "eval_prompts": 100, "eval_samples": 4}}))
    rows = [{"step": 0, "eval_accuracy": 0.3}] + [
        {"step": s, "entropy": entropy + 0.01 * (10 - s)} for s in range(1, 11)
    ]
    rows[-1]["eval_accuracy"] = acc_end
    return run_metrics(rows, d)


def test_final_value_eval_is_last_logged_and_train_is_tail_mean(tmp_path):
    df = _run(tmp_path, "a", 0, 0.5, 0.1)
    assert final_value(df, "eval_accuracy") == 0.5
    assert final_value(df, "entropy", tail=5) == pytest.approx(0.1 + 0.01 * (4 + 3 + 2 + 1 + 0) / 5)
    assert math.isnan(final_value(df, "missing"))
    assert steps_to(df, 0.4) == 10 and math.isnan(steps_to(df, 0.9))
    assert steps_to(df, 0.2) == 10  # step 0 (the base model, 0.3) does not count


def test_paired_effect_pairs_by_seed_and_uses_the_t_interval(tmp_path):
    base = [_run(tmp_path, f"b{s}", s, a, 0.1) for s, a in zip((0, 1, 2), (0.50, 0.40, 0.45))]
    # arm given in another order: pairing must follow the seed, not the list position
    arm = [_run(tmp_path, f"x{s}", s, a, 0.1) for s, a in zip((2, 0, 1), (0.47, 0.52, 0.43))]
    assert by_seed(arm, "eval_accuracy").to_dict() == {2: 0.47, 0: 0.52, 1: 0.43}
    e = paired_effect(base, arm, "eval_accuracy")
    diffs = [0.02, 0.03, 0.02]
    mean = sum(diffs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / 2)
    assert e["diff"] == pytest.approx(mean) and e["diff_sd"] == pytest.approx(sd) and e["seeds"] == 3
    assert e["ci_low"] == pytest.approx(mean - 4.303 * sd / math.sqrt(3))
    assert e["verdict"] == "shown"  # +2..3 points on every seed: consistent, so shown

    noisy = [_run(tmp_path, f"n{s}", s, a, 0.1) for s, a in zip((0, 1, 2), (0.55, 0.36, 0.47))]  # +5, -4, +2
    assert paired_effect(base, noisy, "eval_accuracy")["verdict"] == "within noise"
    assert paired_effect(base[:1], arm[1:2], "eval_accuracy")["verdict"] == "one seed"


def test_effect_table_has_a_row_per_arm_and_metric(tmp_path):
    groups = {
        "grpo": [_run(tmp_path, f"g{s}", s, 0.4, 0.2) for s in range(3)],
        "x": [_run(tmp_path, f"x{s}", s, 0.4 + 0.01 * s, 0.1) for s in range(3)],
    }
    t = effect_table(groups, "grpo", ["eval_accuracy", "entropy"])
    assert list(t.index) == [("x", "eval_accuracy"), ("x", "entropy")]
    assert t.loc[("x", "entropy"), "diff"] == pytest.approx(-0.1) and t.loc[("x", "entropy"), "verdict"] == "shown"


def test_t_quantiles_and_binomial_error():
    assert t975(2) == 4.303 and t975(1000) == 1.96
    assert binomial_se(0.5, 400) == pytest.approx(0.025)


def test_effect_lines_read_like_the_numbers(tmp_path):
    groups = {
        "grpo": [_run(tmp_path, f"g{s}", s, 0.40, 0.2) for s in range(3)],
        "x": [_run(tmp_path, f"x{s}", s, a, 0.2) for s, a in enumerate((0.45, 0.35, 0.41))],
    }
    (line,) = effect_lines(groups, "grpo", ["eval_accuracy"])
    # the course's verdict format, both means first (proportions), the difference in points
    assert line.startswith("eval_accuracy  x - grpo = +0.3 points (0.403 vs 0.400; 95% CI -"), line
    half = 4.303 * pd.Series([0.05, -0.05, 0.01]).std() / 3**0.5  # the interval's half-width: what 3 seeds could detect
    assert line.endswith(
        f"3 seeds; detectable >= {100 * half:.1f}) -> within noise (could see >= {100 * half:.1f} points)"
    )
    (row,) = effect_lines_in([line])  # the claims read the same line back, means included
    assert (row["arm_mean"], row["base_mean"], row["seeds"]) == (0.403, 0.4, 3) and row["diff"] == pytest.approx(0.003)


def test_one_seed_rows_have_the_same_columns_as_paired_ones():
    """A fast-mode table (one seed) can be sliced by the same columns as a full one ("detectable" included)."""
    one = paired_values(pd.Series({0: 0.2}), pd.Series({0: 0.3}), "eval_accuracy")
    three = paired_values(pd.Series({0: 0.2, 1: 0.25, 2: 0.3}), pd.Series({0: 0.3, 1: 0.3, 2: 0.4}), "eval_accuracy")
    assert set(three) <= set(one) and one["verdict"] == "one seed"
