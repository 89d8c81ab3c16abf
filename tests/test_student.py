"""The student edition (``rlalgos student OUT_DIR``): the notebooks without their worked
solutions, and the solution cells of the notebooks themselves collapsed, output too."""

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from rlalgos.tools import cli
from rlalgos.workbook.student import (
    SOLUTION_SENTENCE,
    SOLUTIONS_HEADING,
    STUDENT_SENTENCE,
    hide_solution_outputs,
    hide_solution_outputs_in_file,
    is_exercise,
    is_solution,
    solutions_at_end,
    student_notebook,
    write_student_edition,
)

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NB01 = NOTEBOOKS / "01_reinforce.ipynb"


def test_the_student_notebook_drops_the_solutions_and_the_exercise_outputs_and_keeps_the_rest():
    nb = nbformat.read(NB01, as_version=4)
    before = json.dumps(nb, sort_keys=True)
    student = student_notebook(nb)
    assert json.dumps(nb, sort_keys=True) == before  # the notebook given is not changed
    nbformat.validate(student)

    kept = [c for c in nb.cells if not is_solution(c)]
    assert len(kept) < len(nb.cells) and len(student.cells) == len(kept)
    assert not any("solution" in c.metadata.get("tags", []) for c in student.cells)
    exercise_code = [c for c in student.cells if is_exercise(c) and c.cell_type == "code"]
    assert len(exercise_code) == 3
    assert all(c.outputs == [] and c.execution_count is None for c in exercise_code)
    for old, new in zip(kept, student.cells):  # the same cells in the same order
        assert old.id == new.id and old.cell_type == new.cell_type
        if old.cell_type == "code" and not is_exercise(old):
            assert (
                new.outputs == old.outputs and new.execution_count == old.execution_count
            )  # the lesson's figures stay
    assert sum(1 for c in student.cells if c.cell_type == "code" and c.outputs) > 5
    text = "\n".join(c.source for c in student.cells)
    assert SOLUTION_SENTENCE not in text and STUDENT_SENTENCE in text  # no pointer to solutions that are not there
    assert (
        student_notebook(json.loads(NB01.read_text(encoding="utf-8"))).cells == student.cells
    )  # a plain dict works the same


def test_the_cli_refuses_a_folder_with_files_and_overwrite_keeps_them(tmp_path, capsys):
    out = tmp_path / "class"
    out.mkdir()
    mine = out / "my_notes.md"
    mine.write_bytes(b"teacher's notes\n\xe2\x9c\x93 keep me\n")
    stale = out / NB01.name
    stale.write_text("{}")

    p = subprocess.run(
        [sys.executable, "-m", "rlalgos.tools.cli", "student", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert p.returncode == 2, p.stderr
    err = p.stderr.strip()
    assert "\n" not in err and err.startswith("rlalgos: error: ") and "--overwrite" in err, err
    assert sorted(x.name for x in out.iterdir()) == [NB01.name, mine.name] and stale.read_text() == "{}"

    assert cli.main(["student", str(out), "--overwrite"]) == 0
    assert f"student edition of {len(list(NOTEBOOKS.glob('[0-9][0-9]*_*.ipynb')))} notebooks" in capsys.readouterr().out
    assert mine.read_bytes() == b"teacher's notes\n\xe2\x9c\x93 keep me\n"  # the user's file, byte for byte
    names = sorted(x.name for x in out.iterdir())
    assert names == sorted([mine.name] + [p.name for p in NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb")])
    assert (
        nbformat.read(stale, as_version=4).cells == student_notebook(nbformat.read(NB01, as_version=4)).cells
    )  # replaced


def test_write_student_edition_refuses_before_writing(tmp_path):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    (nbs / NB01.name).write_bytes(NB01.read_bytes())
    with pytest.raises(ValueError, match="the notebooks themselves"):
        write_student_edition(nbs, notebooks_dir=nbs, overwrite=True)  # never over the notebooks with their solutions
    assert (nbs / NB01.name).read_bytes() == NB01.read_bytes()
    (tmp_path / "f").write_text("x")
    with pytest.raises(FileExistsError, match="is a file"):
        write_student_edition(tmp_path / "f")
    with pytest.raises(FileNotFoundError, match="no notebooks"):
        write_student_edition(tmp_path / "new", notebooks_dir=tmp_path)
    assert not (tmp_path / "new").exists()
    assert cli.main(["student", str(tmp_path / "f")]) == 2


def test_a_student_notebook_runs_and_its_checks_say_not_answered(tmp_path, monkeypatch):
    """The student 01 runs top to bottom in fast mode with no solution cell before it:
    nothing later needs a solution, and every check prints its not-answered line."""
    from nbclient import NotebookClient

    monkeypatch.setenv("RLALGOS_FAST", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    folder = tmp_path / "student"  # its runs go to tmp_path/runs, as the repo's go to runs/
    folder.mkdir()
    nb = student_notebook(nbformat.read(NB01, as_version=4))
    NotebookClient(nb, timeout=600, resources={"metadata": {"path": str(folder)}}).execute()  # raises on a cell's error

    checks = [c for c in nb.cells if is_exercise(c) and c.cell_type == "code"]
    lines = [
        "".join(o.get("text", "") for o in c.outputs if o.output_type == "stream").replace("\n    ", " ")
        for c in checks
    ]
    assert len(lines) == 3 and all("not answered yet" in line and "Hint:" in line for line in lines), lines
    assert not any(o.output_type == "error" for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert (tmp_path / "runs").is_dir()


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb")), ids=lambda p: p.stem)
def test_every_solution_cell_hides_its_code_and_its_output(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for i, cell in enumerate(c for c in cells if is_solution(c) and c["cell_type"] == "code"):
        assert cell["metadata"].get("jupyter") == {"outputs_hidden": True, "source_hidden": True}, (
            f"{path.name}: solution {i}"
        )


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb")), ids=lambda p: p.stem)
def test_solutions_are_kept_apart_at_the_end(path):
    """Every worked solution is tagged (so the student edition drops it) and sits in the closing Solutions
    section, after every exercise and lesson cell, as a textbook keeps them."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    untagged = [
        i
        for i, c in enumerate(cells)
        if c["cell_type"] == "code" and "".join(c["source"]).lstrip().startswith("# Solution") and not is_solution(c)
    ]
    assert not untagged, f"{path.name}: solution cells {untagged} are not tagged 'solution'"
    tail = [i for i, c in enumerate(cells) if is_solution(c)]
    if tail:
        assert tail == list(range(len(cells) - len(tail), len(cells))), (
            f"{path.name}: solutions {tail} are not the last cells"
        )
        assert "".join(cells[tail[0]]["source"]).startswith(SOLUTIONS_HEADING)
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert solutions_at_end(nb) == len(tail) - bool(tail) and nb["cells"] == cells  # already in place: nothing moves


def test_hide_solution_outputs_changes_only_those_lines(tmp_path):
    nb = json.loads(NB01.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if is_solution(cell) and cell["cell_type"] == "code":
            del cell["metadata"]["jupyter"]["outputs_hidden"]
    copy = tmp_path / NB01.name
    copy.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert hide_solution_outputs_in_file(copy) == 3
    assert copy.read_bytes() == NB01.read_bytes()  # the committed file, byte for byte
    assert hide_solution_outputs_in_file(copy) == 0 and copy.read_bytes() == NB01.read_bytes()
    assert hide_solution_outputs(nb) == 3 and hide_solution_outputs(nb) == 0
