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
KNOWN = {("00_task_and_base_model.ipynb", 5), ("09_exploration.ipynb", 26)}


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
