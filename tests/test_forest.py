"""Notebook 11's forest plot (rlalgos.workbook.forest): the counted paired lines, signed the way their claims expect."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from rlalgos.workbook import forest, matters_page  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]  # the checkout whose published records the plot reads


def lines() -> pd.DataFrame:
    """Two made-up lines: a share expected up, shown; a length expected down, within noise."""
    return pd.DataFrame(
        {
            "trick": ["a", "b"],
            "fires": ["common", "rare"],
            "claim": ["c1", "c2"],
            "regime": ["r1", "r2"],
            "metric": ["eval_accuracy", "completion_len"],
            "arm": ["x", "y"],
            "base": ["grpo", "grpo"],
            "verdict": ["shown", "within noise"],
            "diff": [5.0, -1.0],
            "ci_low": [1.0, -3.0],
            "ci_high": [9.0, 2.0],
            "seeds": [3, 6],
            "direction": [1, -1],
        }
    )


def test_signed_turns_the_expected_direction_right():
    s = forest.signed(lines())
    assert list(s.toward) == [5.0, 1.0]
    assert list(s.low) == [1.0, -2.0] and list(s.high) == [9.0, 3.0]
    assert list(s.detectable) == [4.0, 2.5]
    assert list(s.in_points) == [True, False]
    shown = s.toward > s.detectable  # right of the detectable tick <=> the interval excludes 0 the expected way
    assert list(shown) == [True, False]


def test_plot_has_one_bar_per_line_and_a_title_naming_regimes_and_seeds():
    fig = forest.plot_forest(forest.signed(lines()))
    axes = fig.axes
    assert len(axes) == 2
    assert [len(ax.get_yticklabels()) for ax in axes] == [1, 1]
    title = fig._suptitle.get_text()
    assert "2 counted paired lines in 2 regimes" in title and "3 or 6 seeds" in title
    matplotlib.pyplot.close(fig)


def test_rows_of_the_checkout_are_the_counted_paired_lines():
    rows = forest.forest_rows(ROOT)
    v = matters_page.verdict_rows(ROOT)
    assert len(rows) == ((v.metric != "") & v.counted).sum()
    assert set(rows.direction) <= {1, -1}
    assert set(rows.fires) <= set(forest.WORD_COLORS)
    # a verdict agrees with where its signed interval lies
    assert (rows[rows.verdict == "shown"].low > 0).all()
    assert (rows[rows.verdict == "opposite"].high < 0).all()
    noise = rows[rows.verdict == "within noise"]
    assert ((noise.low <= 0) & (noise.high >= 0)).all()


def test_trap_answer_counts_are_read_from_the_record_and_09b():
    from rlalgos.workbook import claims, matters_sources

    records = claims.load_published(claims.Layout(ROOT).json_dir)
    c = matters_sources.trap_answer_counts(records, ROOT)
    assert (c["group_size"], c["vanilla_prompts"], c["matched_prompts"]) == (8, 16, 36)
    assert 128 < c["dapo_drawn"] < 36 * 8 * 2 and c["cite"].startswith("notebooks/09b_pass_at_k_and_dapo.ipynb cell ")


def test_printed_cell_reads_a_right_aligned_column(tmp_path):
    import json

    table = pd.DataFrame({"groups drawn": [16.0, 34.8], "answers drawn": [128.0, 278.7], "x base": [1.0, 2.18]})
    text = "per step:\n" + table.set_axis(["vanilla", "dapo"]).to_string() + "\n"
    cell = {"cell_type": "code", "outputs": [{"output_type": "stream", "name": "stdout", "text": [text]}]}
    (tmp_path / "n.ipynb").write_text(json.dumps({"cells": [{"cell_type": "markdown"}, cell]}))
    from rlalgos.workbook.matters_sources import printed_cell

    assert printed_cell("n.ipynb", "dapo", "answers drawn", tmp_path) == (278.7, "n.ipynb cell 1")
    assert printed_cell("n.ipynb", "vanilla", "groups drawn", tmp_path) == (16.0, "n.ipynb cell 1")
