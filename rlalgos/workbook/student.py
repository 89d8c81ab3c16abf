"""The student edition: the notebooks without their worked solutions.

In the notebooks the worked solutions are kept apart from their exercises, as a textbook's
are: a closing **Solutions** section (:func:`solutions_at_end`), each solution a code cell
tagged ``exercise`` and ``solution`` with its code collapsed (``metadata.jupyter``:
``source_hidden`` and ``outputs_hidden``). For a class, :func:`student_notebook`
takes the solutions out altogether and clears the outputs of the exercise cells
themselves (a committed check line tells what the run expected); every other
cell keeps its outputs, so the lesson's figures stay. :func:`write_student_edition`
(``rlalgos student OUT_DIR``, ``make student``) writes every notebook that way.

The notebooks import rlalgos for their data and models and write their runs to
``../runs``, so a student folder needs no other file: its runs land beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

NOTEBOOKS_DIR = Path("notebooks")
"""The notebooks of the checkout the command runs in (a wheel ships none): pass another folder to read elsewhere."""

NOTEBOOKS = "[0-9][0-9]*_*.ipynb"

# The exercises' introduction points at the solutions; the edition has none.
SOLUTION_SENTENCE = (
    "Worked solutions are in the **Solutions** section at the end of this notebook (collapsed); try first."
)
SOLUTIONS_HEADING = "## Solutions"
STUDENT_SENTENCE = "This edition leaves the worked solutions out."


def _tags(cell) -> list:
    return cell.get("metadata", {}).get("tags", [])


def is_solution(cell) -> bool:
    """A worked solution: a cell tagged ``solution``."""
    return "solution" in _tags(cell)


def is_exercise(cell) -> bool:
    """An exercise's own cell (its text or the code the learner fills in), not its solution."""
    return "exercise" in _tags(cell) and not is_solution(cell)


def student_notebook(nb) -> nbformat.NotebookNode:
    """The student version of ``nb`` (an nbformat NotebookNode or the dict of an .ipynb);
    ``nb`` itself is not changed.

    Solution cells are removed; the exercise code cells lose their outputs and
    execution counts; the sentence that points at the collapsed solutions says there
    are none; every other cell is kept as it is, outputs included.
    """
    out = nbformat.reads(json.dumps(nb), as_version=4)  # a copy, each source one string as nbformat.read gives it
    cells = []
    for cell in out.cells:
        if is_solution(cell):
            continue
        if is_exercise(cell) and cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        if cell.cell_type == "markdown":
            cell.source = cell.source.replace(SOLUTION_SENTENCE, STUDENT_SENTENCE)
        cells.append(cell)
    out.cells = cells
    return out


def write_student_edition(
    out_dir: str | Path, notebooks_dir: str | Path = NOTEBOOKS_DIR, overwrite: bool = False
) -> list[Path]:
    """Write the student version of every ``notebooks_dir/NN_*.ipynb`` into ``out_dir``; the paths written.

    ``out_dir`` must be new or empty; with ``overwrite`` an existing one is used and
    only the notebook files written here are replaced (nothing else in it is touched).
    Everything is checked before the first file is written.
    """
    out, src = Path(out_dir), Path(notebooks_dir)
    sources = sorted(src.glob(NOTEBOOKS)) if src.is_dir() else []
    if not sources:
        raise FileNotFoundError(
            f"no notebooks ({NOTEBOOKS}) in {src}; pass the notebooks/ folder of a checkout (--notebooks-dir)"
        )
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} is a file, not a folder; pick another OUT_DIR")
    if out.exists() and out.resolve() == src.resolve():
        raise ValueError(f"{out} holds the notebooks themselves; write the student edition to another folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(
            f"{out} is not empty; pass --overwrite to replace its student notebooks (its other files are kept), or pick another OUT_DIR"
        )
    targets = [out / p.name for p in sources]
    for t in targets:
        if t.is_dir():
            raise FileExistsError(f"{t} is a folder; rlalgos never deletes it: pick another OUT_DIR")
    out.mkdir(parents=True, exist_ok=True)
    for p, t in zip(sources, targets):
        nbformat.write(student_notebook(nbformat.read(p, as_version=4)), t)
    return targets


# --------------------------------------------------------------------------- #
# Solutions collapsed, outputs too (the notebooks themselves)
# --------------------------------------------------------------------------- #


def hide_solution_outputs(nb) -> int:
    """Collapse the output of every solution cell as well as its code
    (``metadata.jupyter.outputs_hidden`` and ``source_hidden``), in place; how many cells changed.

    ``nb`` may be the plain dict of an .ipynb (keys keep their sorted order, as
    Jupyter writes them, so the file's diff is the new lines only)."""
    changed = 0
    for cell in nb["cells"]:
        if not is_solution(cell) or cell["cell_type"] != "code":  # the Solutions heading has no code to hide
            continue
        meta = cell.setdefault("metadata", {})
        jupyter = meta.get("jupyter", {})
        if jupyter.get("outputs_hidden") is True and jupyter.get("source_hidden") is True:
            continue
        meta["jupyter"] = dict(sorted({**jupyter, "outputs_hidden": True, "source_hidden": True}.items()))
        changed += 1
    return changed


def hide_solution_outputs_in_file(path: str | Path) -> int:
    """:func:`hide_solution_outputs` on the notebook file ``path``, written back in its own
    format (``indent=1``, non-ASCII kept, a final newline) only if a cell changed."""
    path = Path(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    changed = hide_solution_outputs(nb)
    if changed:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


# --------------------------------------------------------------------------- #
# Solutions kept apart: one closing section
# --------------------------------------------------------------------------- #


def solutions_at_end(nb) -> int:
    """Move every solution cell, in order, into one closing section headed ``## Solutions`` (a markdown
    cell tagged ``solution`` too, so the student edition drops it with them), in place; how many moved.

    A solution needs only what ran before it, so running it last changes nothing it prints. ``nb`` may be
    the plain dict of an .ipynb."""
    cells = nb["cells"]
    solutions = [c for c in cells if is_solution(c) and c["cell_type"] == "code"]
    if not solutions:
        return 0
    rest = [c for c in cells if not is_solution(c)]
    kept = [c for c in cells if is_solution(c) and c["cell_type"] == "markdown"]  # a heading made before is kept
    heading = (
        kept[0]
        if kept
        else {
            "cell_type": "markdown",
            "id": "solutions",  # nbformat 4.5 gives every cell an id
            "metadata": {"tags": ["exercise", "solution"]},
            "source": [
                f"{SOLUTIONS_HEADING}\n",
                "\n",
                "The worked solution of each exercise above, in order (each cell is collapsed: click to open it, after you\n",
                "have tried). Each one runs the same `check` as its exercise, with the answer filled in.",
            ],
        }
    )
    nb["cells"] = rest + [heading] + solutions
    return len(solutions)
