"""The committed outputs read as the course's figure and table conventions say: no table that pandas cut."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
# pandas' marks of a cut table: "[5 rows x 27 columns]", a row or column of "...", a cell cut to "text..."
CUT = re.compile(r"\[\d+ rows x \d+ columns\]|^\s*\.\.\.\s|\w\.\.\.(\s|$)")
# cuts in outputs committed before this check, each fixed by the notebook's next full run (notebook, cell)
KNOWN: set[tuple[str, int]] = set()


def text_outputs(nb: dict):
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            text = out.get("text") or ([] if "image/png" in data else data.get("text/plain", []))
            yield i, "".join(text)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name.split("_")[0])
def test_no_committed_table_is_cut(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    cut = [
        (i, line.strip()[:70])
        for i, text in text_outputs(nb)
        for line in text.splitlines()
        if CUT.search(line) and (path.name, i) not in KNOWN
    ]
    assert not cut, (
        f"{path.name}: pandas cut these outputs (print the table whole, e.g. pd.set_option('display.max_columns', None)): {cut}"
    )


COLUMN = 90
"""The book's text column in characters: a printed line wider than this wraps mid-row."""
# Lines wider than the column in each notebook's committed outputs. The count may only fall: a notebook re-run with
# narrower prints lowers its number here, and a notebook not listed must have none.
WIDE = {
    "00_task_and_base_model.ipynb": 0,
    "01_reinforce.ipynb": 10,  # its exercise checks, wrapped at 100 characters when it last ran (checks now wrap at 88)
    "02_ppo.ipynb": 9,  # likewise: only the exercise checks (their hint and answer lines)
    "03_grpo.ipynb": 11,  # its three verdict lines and the exercise checks (wrapped at 100 when it last ran)
    "03b_kl_estimators.ipynb": 11,
    "04_improved_grpo.ipynb": 0,
    "04b_dapo_where_it_helps.ipynb": 44,
    "05_side_by_side.ipynb": 0,
    "06_troubleshooting.ipynb": 62,
    "07_reward_model.ipynb": 22,
    "08_after_dapo.ipynb": 21,
    "09_exploration.ipynb": 66,  # its verdict lines (the course's one-line format, 110-150 characters)
    "09b_pass_at_k_and_dapo.ipynb": 81,  # likewise
    "10_engines.ipynb": 25,  # its verdict lines
    "12_where_reasoning_comes_from.ipynb": 17,
    "13_expert_iteration.ipynb": 44,
}


def wide_lines(nb: dict) -> list[tuple[int, int]]:
    return [(i, len(line)) for i, text in text_outputs(nb) for line in text.splitlines() if len(line) > COLUMN]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name.split("_")[0])
def test_printed_lines_fit_the_column(path):
    wide = wide_lines(json.loads(path.read_text(encoding="utf-8")))
    assert len(wide) <= WIDE.get(path.name, 0), (
        f"{path.name}: {len(wide)} printed lines are wider than {COLUMN} characters (cell, width): {wide[:8]}; "
        f"print narrower (one column per algorithm, shorter labels) or, if a re-run lowered the count, lower WIDE"
    )


# The paired-effect lines of the earlier format, "arm vs base, metric: 0.5 vs 0.4, paired diff +0.1 (...): verdict".
OLD_VERDICT = re.compile(r"^\S.* vs .*, \S+: \S+ vs \S+, paired diff ")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name.split("_")[0])
def test_every_verdict_line_is_in_the_course_format(path):
    """course.md: one verdict format everywhere, printed by the stats helpers
    ("metric  arm - base = +x points (means; 95% CI ..., n seeds; detectable >= d) -> verdict")."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    old = [(i, line[:70]) for i, text in text_outputs(nb) for line in text.splitlines() if OLD_VERDICT.match(line)]
    assert not old, f"{path.name}: lines in the old paired format (re-run the notebook): {old}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name.split("_")[0])
def test_every_cell_has_its_own_id(path):
    """nbformat 4.5 gives every cell a unique id (Jupyter and the book link cells by it)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    ids = [c.get("id") for c in nb["cells"]]
    assert None not in ids and len(set(ids)) == len(ids), f"{path.name}: cells without an id or sharing one"
