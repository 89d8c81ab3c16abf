"""A newcomer's first hour, as tests: what a fresh user tried and what must hold.

resume never rewrites a run folder it does not train; the summary names the steps of its
evaluations; the Python API example runs as a script (every runnable code block in the docs
does) and a missing ``__main__`` guard is one line before any run starts; ``eval`` takes a run
folder; a cheap ``claims run`` says it is one; ``--help`` fits two screens with ``--steps`` in the
first; a typo or a misplaced option gets the nearest name of *this* command; ``compare`` with 3
seeds prints paired verdicts; ``plot`` writes next to the run.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rlalgos.config import ALGORITHMS
from rlalgos.tools import cli, cli_claims, commands
from rlalgos.workbook.stats import paired_effect, paired_values, verdict_line

REPO = Path(__file__).resolve().parents[1]
TINY = [
    "--steps",
    "2",
    "--prompts-per-step",
    "2",
    "--group-size",
    "2",
    "--max-new-tokens",
    "6",
    "--eval-prompts",
    "2",
    "--eval-samples",
    "2",
    "--no-progress",
]


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("rlalgos: error: ") and "\n" not in err, err
    return err


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, tiny_dir):
    """A finished 2-step run of the tiny model (checkpoint at step 2)."""
    run = tmp_path_factory.mktemp("newcomer") / "run"
    assert cli.main(["train", "grpo", "--model", str(tiny_dir), *TINY, "--out-dir", str(run)]) == 0
    return run


def test_resume_to_fewer_steps_is_one_line_and_leaves_the_folder_untouched(small_run, capsys):
    before = {p.name: p.read_bytes() for p in small_run.iterdir() if p.is_file()}
    for steps in ("1", "2"):
        assert cli.main(["resume", str(small_run), "--steps", steps]) == 2
        assert (
            one_line(capsys)
            == f"rlalgos: error: {small_run} is at step 2; pass --steps > 2 to train on (the folder is untouched)"
        )
    assert cli.main(["resume", str(small_run)]) == 2  # finished: nothing to train without a larger --steps
    assert "pass --steps > 2" in one_line(capsys)
    assert {
        p.name: p.read_bytes() for p in small_run.iterdir() if p.is_file()
    } == before  # config.json still says what the run holds
    assert json.loads((small_run / "config.json").read_text())["train"]["steps"] == 2


def test_the_summary_names_the_steps_of_its_evaluations(capsys):
    df = pd.DataFrame(
        [
            {"step": 0, "eval_accuracy": 0.4, "eval_greedy_accuracy": 0.6},
            *({"step": s} for s in range(1, 10)),
            {"step": 10, "eval_accuracy": 0.5, "eval_greedy_accuracy": 0.7},
            {"step": 11},
            {"step": 12},
        ]
    )
    df.run_dir = "runs/x"
    commands.print_run_summary(df)
    out = capsys.readouterr().out
    assert "eval accuracy 0.400 (step 0) -> 0.500 (step 10); greedy 0.600 -> 0.700" in out and "12" not in out


def test_eval_takes_a_run_folder_and_says_no_such_folder(small_run, tmp_path, capsys):
    assert (
        cli.main(
            ["eval", "--model", str(small_run), "--prompts", "2", "--samples", "1", "--show", "0", "--device", "cpu"]
        )
        == 0
    )
    out, err = capsys.readouterr()
    assert f"{small_run} is a run folder; loading its checkpoint" in err
    numbers = json.loads(out[out.index("{") :])
    assert "eval_accuracy" in numbers and all(
        v == round(v, 4) for v in numbers.values() if isinstance(v, float)
    )  # not 0.44999998807907104
    for missing in (tmp_path / "nothere", "./nothere"):
        assert cli.main(["eval", "--model", str(missing)]) == 2
        assert "no such folder" in one_line(capsys)


def test_help_fits_two_screens_with_the_common_options_first(capsys):
    for name in ALGORITHMS:
        with pytest.raises(SystemExit):
            cli.main(["train", name, "--help"])
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) <= 125, (name, len(lines))
        first = "\n".join(lines[:25])
        assert "run options" in first and "--steps INT" in first and "--out-dir" in first, name
        text = "\n".join(lines)
        assert (
            "algorithm." not in text and "--dtype {auto,float32,bfloat16" in text and "--sampler {compact,hf}" in text
        ), name
        order = [
            text.index(t)
            for t in (" run options", f" {name} options", " sampling, evaluation and logging", " engine (")
        ]
        assert order == sorted(order), name
    with pytest.raises(SystemExit):
        cli.main(["resume", "--help"])
    out = capsys.readouterr().out
    assert "{None}" not in out and "RUN_DIR" in out


def test_every_option_is_two_sentences_at_most_and_its_links_resolve():
    """A field's docstring says what the option is and why its default; the longer story is a
    section of docs/knobs.md that the docstring names, and that section exists."""
    import dataclasses

    from rlalgos import config
    from rlalgos.tools.cli_help import field_docs
    from rlalgos.workbook import configs

    sentence_end = re.compile(r"(?<!\bal)(?<!e\.g)(?<!i\.e)(?<!\bsec)(?<!\bv2)\. (?=[A-Z`0-9(-])")
    knobs = (Path(__file__).resolve().parents[1] / "docs" / "knobs.md").read_text()
    headings = set(re.findall(r"^## (\S+)$", knobs, flags=re.M))
    classes = [
        c
        for mod in (config, configs)
        for c in vars(mod).values()
        if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__.startswith(mod.__name__)
    ]
    assert config.TrainConfig in classes and configs.SFTConfig in classes
    for cls in classes:
        for name, doc in field_docs(cls).items():
            assert len(sentence_end.split(doc.rstrip("."))) <= 2, (cls.__name__, name, doc)
            for anchor in re.findall(r"docs/knobs\.md#(\w+)", doc):
                assert anchor in headings, (cls.__name__, name, anchor)


def test_typos_get_the_nearest_name_of_this_command(capsys):
    cases = [
        (
            ["train", "grpo", "--step", "5"],
            "rlalgos train grpo has no option --step; did you mean --steps? (rlalgos train grpo --help lists them)",
        ),
        (["train", "--steps", "5", "grpo"], "name the algorithm before its options: rlalgos train grpo --steps 5"),
        (
            ["compare", "--algos", "dapo:minibatch=4"],
            "dapo has no option 'minibatch' in 'dapo:minibatch=4'; did you mean minibatches?",
        ),
        (["eval", "--sample", "3"], "rlalgos eval has no option --sample; did you mean --samples?"),
        (
            ["claims", "run", "lr-collapse", "--job", "2"],
            "rlalgos claims run has no option --job; did you mean --jobs?",
        ),
        (["resume", "runs/x", "--step", "3"], "rlalgos resume has no option --step; did you mean --steps?"),
    ]
    for argv, message in cases:
        assert cli.main(argv) == 2, argv
        assert message in one_line(capsys), argv
    assert cli.misplaced_option(["train", "grpo", "--steps", "3", "--no-progress", "--lr=1e-3"]) is None


def test_run_many_without_a_main_guard_stops_before_any_run(tmp_path):
    script = tmp_path / "example.py"
    script.write_text(
        "from rlalgos.config import TrainConfig, make_config\nfrom rlalgos.tools.sweep import run_many\n"
        "run_many([(TrainConfig(algo='grpo', out_dir=f'runs/s{s}', seed=s), make_config('grpo')) for s in (0, 1)], jobs=2)\n"
    )
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and 'outside `if __name__ == "__main__":`' in proc.stderr and "line 3" in proc.stderr, (
        proc.stderr
    )
    assert not (tmp_path / "runs").exists()


def test_a_failed_run_is_named_not_a_type_error():
    ok = pd.DataFrame([{"step": 0, "eval_accuracy": 0.4}])
    failed = RuntimeError("boom")
    failed.run_index, failed.run_dir = 1, "runs/api/grpo/seed1"  # what run_many attaches to a failed run's exception
    with pytest.raises(ValueError, match=re.escape("run 1 (runs/api/grpo/seed1) failed: RuntimeError: boom")):
        paired_effect([ok, failed], [ok, ok], "eval_accuracy")
    row = paired_values(pd.Series([0.40, 0.42, 0.41]), pd.Series([0.45, 0.46, 0.47]), "eval_accuracy")
    assert all(type(row[k]) is float for k in ("base_mean", "arm_mean", "diff", "ci_low", "ci_high", "detectable"))
    line = verdict_line(row, "dapo", "grpo")
    assert (
        line.startswith("eval_accuracy  dapo - grpo = +5.0 points (95% CI ")
        and "3 seeds; detectable >= " in line
        and line.endswith("-> shown")
    )
    null = verdict_line(
        paired_values(pd.Series([0.40, 0.42, 0.41]), pd.Series([0.45, 0.38, 0.43]), "eval_accuracy"), "dapo", "grpo"
    )
    assert "-> within noise (could see >= " in null


def test_a_cheap_claims_run_says_it_is_one(tmp_path, monkeypatch, capsys):
    from rlalgos.workbook import claims

    effect = {
        "arm": "hi",
        "base": "base",
        "metric": "eval_accuracy",
        "direction": -1,
        "headline": True,
        "arm_mean": 0.1,
        "base_mean": 0.5,
        "diff": -0.4,
        "ci_low": -0.5,
        "ci_high": -0.3,
        "verdict": "shown",
        "seeds": 3,
    }
    from rlalgos.workbook.claims import measure

    monkeypatch.setattr(measure, "_trained_effects", lambda *a, **k: [effect])
    record = claims.run_claim("lr-collapse", seeds="20,21,22", out_dir=tmp_path, steps=5, prompts_per_step=4)
    out = capsys.readouterr().out
    assert "cheap look (steps 5, prompts_per_step 4)" in out and "not comparable with the published verdict" in out
    assert record["cheap_look"] and "steps 5" in record["regime"] and "prompts_per_step 4" in record["regime"]
    assert json.loads((tmp_path / "lr-collapse.json").read_text())["cheap_look"] is True
    with pytest.raises(ValueError, match="--publish with a cheap look"):
        claims.run_claim("lr-collapse", seeds="20,21,22", out_dir=tmp_path, steps=5, publish=True)
    assert claims.run_claim.__defaults__[1] == 0 and cli_claims.ClaimsRun(claim="x").jobs == 0  # jobs: auto, as compare


def test_compare_with_three_seeds_prints_verdicts_and_plot_writes_next_to_the_run(tmp_path, tiny_dir, capsys):
    out = tmp_path / "cmp"
    argv = [
        "compare",
        "--algos",
        "grpo,rloo",
        "--seeds",
        "3",
        "--jobs",
        "1",
        "--model",
        str(tiny_dir),
        *TINY,
        "--steps",
        "1",
        "--out-dir",
        str(out),
    ]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith("training 6 runs, 1 at a time: about")
    assert (
        "paired by seed, each against grpo" in text
        and "eval_accuracy  rloo - grpo = " in text
        and "detectable >= " in text
    )
    assert cli.main(["plot", str(out / "grpo" / "seed0")]) == 0
    assert (out / "grpo" / "seed0" / "plot.png").is_file() and not Path("plot.png").exists()
    capsys.readouterr()
    assert cli.main(["plot", str(out)]) == 0 and (out / "plot.png").is_file()


def test_interrupt_hint_names_the_folder():
    args = cli.parse(["train", "grpo", "--out-dir", "runs/mine"])[1]
    assert "rlalgos resume runs/mine" in cli.interrupted_hint("train", args)
    assert "rlalgos resume runs/r " in cli.interrupted_hint("resume", cli.ResumeArgs(run_dir="runs/r")) + " "


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a Markdown page (each meant to run as a script)."""
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


DOC_PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_every_python_block_in_the_docs_is_found():
    found = {p.name: len(python_blocks(p)) for p in DOC_PAGES if python_blocks(p)}
    assert found.get("README.md") == 1 and found.get("cli.md") == 1, found
    assert len(distinct_blocks()) == 1  # the API example, once in README and once in docs/cli.md


def distinct_blocks() -> list[str]:
    """Every ```python block of README.md and docs/, each distinct block once (a page may repeat another's)."""
    return list(dict.fromkeys(code for page in DOC_PAGES for code in python_blocks(page)))


@pytest.mark.slow
def test_the_docs_code_blocks_run_as_scripts(tmp_path):
    """Each block saved as a script and run with ``python`` from an empty folder (what a reader does)."""
    for i, code in enumerate(distinct_blocks()):
        page = "README.md or docs/"
        script = tmp_path / f"example{i}.py"
        script.write_text(code)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
        proc = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env
        )
        assert proc.returncode == 0, (page, i, proc.stderr[-3000:])
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


def test_the_pages_count_the_notebooks_right():
    """README and the book's front page say how many notebooks there are: the number in notebooks/."""
    words = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
    ]
    n = len(list((REPO / "notebooks").glob("[0-9][0-9]*_*.ipynb")))
    for page in (REPO / "README.md", REPO / "docs" / "index.md"):
        said = re.findall(r"\b(" + "|".join(words[2:]) + r"|\d+) notebooks\b", page.read_text(), flags=re.I)
        assert said and all(s.lower() in (words[n], str(n)) for s in said), (page.name, said, n)
