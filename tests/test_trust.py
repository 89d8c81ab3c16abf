"""Trust, tested the way a user meets it: through the ``rlalgos`` command, on real
folders whose every byte is hashed before and after. The command is its ``main(argv)``
with stderr captured, in this process (``rlalgos_here``) or, for the many failed starts,
in one child process; a subprocess where the process itself is the point (SIGKILL, the
``--jobs 2`` lanes, the command's entry point).

* nothing outside a run's own files is ever deleted, and no failed start changes a byte;
* a default run killed with SIGKILL resumes to the same rows as an uninterrupted run;
* bad input is one line on stderr and exit code 2;
* a GSM8K-style task never evaluates on its training rows.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlalgos.engine.runs import recover_checkpoint
from rlalgos.train import TrainConfig, load_metrics, resume, train

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
TIMING = ("seconds", "tokens_per_second")


def rlalgos(*args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rlalgos.tools.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout,
    )


def run_main(argv) -> tuple[int, str]:
    """``rlalgos.tools.cli.main(argv)`` (what the ``rlalgos`` command runs): its exit code and its stderr."""
    import torch

    from rlalgos.tools.cli import main

    err, threads = io.StringIO(), torch.get_num_threads()
    torch.set_num_threads(1)  # as the subprocesses here run (ENV): their rows must match this process's
    with contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as e:  # tyro's own usage errors
            code = e.code
        finally:
            torch.set_num_threads(threads)
    return code, err.getvalue()


def rlalgos_here(*args) -> subprocess.CompletedProcess:
    """The command in this process: no interpreter start (~8 s: torch and transformers load)."""
    code, err = run_main(args)
    return subprocess.CompletedProcess(list(args), code, "", err)


# Many failed starts in one child process: each is ``run_main(argv)`` with its own stderr,
# followed by a snapshot of the watched folder. One interpreter start instead of one per case.
_MANY = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from test_trust import run_main, snapshot
out = []
for case in json.load(sys.stdin):
    code, err = run_main(case["argv"])
    out.append({"returncode": code, "stderr": err, "after": snapshot(Path(case["watch"])) if case["watch"] else None})
print(json.dumps(out))
"""


def rlalgos_many(
    cases: list[tuple[list, Path | None]], timeout=600
) -> list[tuple[subprocess.CompletedProcess, dict | None]]:
    """Run each ``(argv, watched folder)`` in one child interpreter; per case, its exit code and
    stderr (as a CompletedProcess) and the watched folder's snapshot right after it."""
    payload = json.dumps(
        [{"argv": [str(a) for a in argv], "watch": str(watch) if watch else None} for argv, watch in cases]
    )
    proc = subprocess.run(
        [sys.executable, "-c", _MANY, str(Path(__file__).parent)],
        input=payload,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    return [
        (subprocess.CompletedProcess(argv, r["returncode"], "", r["stderr"]), r["after"])
        for (argv, _), r in zip(cases, rows)
    ]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file and folder below ``folder``: relative path -> sha256 of its bytes (or 'dir')."""
    out = {}
    for p in sorted(folder.rglob("*")):
        out[str(p.relative_to(folder))] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def small_run(tiny_dir, out, *extra) -> list:
    return [
        "train",
        "grpo",
        "--model",
        tiny_dir,
        "--steps",
        "3",
        "--prompts-per-step",
        "2",
        "--group-size",
        "2",
        "--max-new-tokens",
        "6",
        "--eval-prompts",
        "2",
        "--eval-samples",
        "1",
        "--no-progress",
        "--out-dir",
        out,
        *extra,
    ]


def one_line_error(proc: subprocess.CompletedProcess, needle: str) -> None:
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert needle in err and "\n" not in err and "Traceback" not in err, err[-2000:]


@pytest.fixture(scope="module")
def finished_run(tiny_dir, tmp_path_factory):
    """A real finished run folder with a user's note inside it."""
    d = tmp_path_factory.mktemp("finished") / "run"
    proc = rlalgos_here(*small_run(tiny_dir, d))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (d / "notes.txt").write_text("my notes on this run\n")
    return d


def test_a_folder_that_is_not_a_run_is_never_touched(tmp_path, tiny_dir):
    d = tmp_path / "mine"
    (d / "old_run").mkdir(parents=True)
    (d / "notes.txt").write_text("keep me")
    (d / "old_run" / "metrics.csv").write_text("step,reward\n1,0.5\n")
    before = snapshot(d)
    for extra in ((), ("--overwrite",)):
        one_line_error(rlalgos_here(*small_run(tiny_dir, d, *extra)), "is not a run folder")
        assert snapshot(d) == before
    f = tmp_path / "a_file"
    f.write_text("x")
    one_line_error(rlalgos_here(*small_run(tiny_dir, f)), "is a file")
    assert f.read_text() == "x"


def test_an_existing_run_is_refused_without_overwrite(finished_run, tiny_dir):
    before = snapshot(finished_run)
    proc = rlalgos(*small_run(tiny_dir, finished_run))
    one_line_error(proc, "already holds a run")
    assert "rlalgos resume" in proc.stderr and "--overwrite" in proc.stderr
    assert snapshot(finished_run) == before


FAILED_STARTS = [
    (["--model", "missing/model-folder"], "cannot load a model"),
    (["--reward-model", "no/such/rm"], "no reward model in"),
    (["--device", "cuda"], "CUDA"),
    (["--task", "gsm8k:openai/gsm8k"], "pass a local jsonl"),
    (["--task", "chess"], "unknown task 'chess'"),
    (["--lr", "-1e-5"], "lr must be > 0"),
]


def many_once(built_once, name: str, cases) -> tuple[Path, list[tuple[subprocess.CompletedProcess, dict | None]]]:
    """:func:`rlalgos_many` of the cases that ``cases(folder)`` returns, run once per session
    (``built_once``; a module fixture would run once per xdist worker): the folder, and the
    results read back from its JSON."""

    def build(out: Path) -> None:
        res = rlalgos_many(cases(out))
        (out / "results.json").write_text(
            json.dumps(
                [
                    {"argv": [str(a) for a in p.args], "returncode": p.returncode, "stderr": p.stderr, "after": after}
                    for p, after in res
                ]
            )
        )

    out = built_once(name, build)
    rows = json.loads((out / "results.json").read_text())
    return out, [(subprocess.CompletedProcess(r["argv"], r["returncode"], "", r["stderr"]), r["after"]) for r in rows]


@pytest.fixture(scope="module")
def failed_starts(built_once, tiny_dir):
    """The folder's snapshot before, and each failed start's (result, snapshot right after it):
    on a finished run folder with a user's note inside it."""

    def cases(out: Path) -> list:
        run = out / "run"
        proc = rlalgos_here(*small_run(tiny_dir, run))
        assert proc.returncode == 0, proc.stderr[-2000:]
        (run / "notes.txt").write_text("my notes on this run\n")
        (out / "before.json").write_text(json.dumps(snapshot(run)))
        return [(small_run(tiny_dir, run, "--overwrite", *bad), run) for bad, _ in FAILED_STARTS]

    out, results = many_once(built_once, "failed_starts", cases)
    return json.loads((out / "before.json").read_text()), results


@pytest.mark.parametrize("case", range(len(FAILED_STARTS)), ids=[n for _, n in FAILED_STARTS])
def test_a_run_that_fails_to_start_leaves_the_folder_byte_identical(failed_starts, case):
    before, results = failed_starts
    proc, after = results[case]
    one_line_error(proc, FAILED_STARTS[case][1])
    assert after == before


def test_overwrite_replaces_only_the_runs_own_files(tmp_path, tiny_dir):
    d = tmp_path / "run"
    assert rlalgos_here(*small_run(tiny_dir, d)).returncode == 0
    (d / "notes.txt").write_text("keep me")
    old = json.loads((d / "config.json").read_text())
    proc = rlalgos_here(*small_run(tiny_dir, d, "--overwrite", "--seed", "5"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (d / "notes.txt").read_text() == "keep me"
    new = json.loads((d / "config.json").read_text())
    assert old["train"]["seed"] == 0 and new["train"]["seed"] == 5
    assert load_metrics(d)["step"].tolist() == [0, 1, 2, 3]


def test_compare_checks_every_run_folder_before_the_first_run(tmp_path, tiny_dir):
    out = tmp_path / "cmp"
    args = [
        "compare",
        "--algos",
        "grpo,rloo",
        "--seeds",
        "1",
        "--model",
        tiny_dir,
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
        "1",
        "--no-progress",
        "--out-dir",
        out,
    ]
    proc = rlalgos_here(*args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (out / "rloo" / "seed0" / "notes.txt").write_text("keep me")
    before = snapshot(out)
    one_line_error(rlalgos_here(*args), "already holds a run")
    assert snapshot(out) == before  # grpo/seed0 was not re-run and replaced before rloo/seed0 refused
    assert rlalgos_here(*args, "--overwrite").returncode == 0
    assert (out / "rloo" / "seed0" / "notes.txt").read_text() == "keep me"


def test_sft_never_overwrites_a_model_without_the_flag(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text("{}")
    before = snapshot(d)
    one_line_error(rlalgos("sft", "--steps", "1", "--out-dir", d), "already holds a model")
    assert snapshot(d) == before


def test_a_world_size_without_a_launcher_is_refused_clearly(tmp_path, tiny_dir):
    env = {**ENV, "WORLD_SIZE": "2"}
    proc = subprocess.run(
        [sys.executable, "-m", "rlalgos.tools.cli", *map(str, small_run(tiny_dir, tmp_path / "r"))],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    one_line_error(proc, "WORLD_SIZE=2")
    assert not (tmp_path / "r").exists()


ENVIRONMENT_ERRORS = [
    (["train", "grpo", "--device", "cuda"], "this torch build has no CUDA"),
    (["eval", "--model", "EMPTY"], "no config.json in"),
    (["eval", "--task", "gsm8k:openai/gsm8k", "--prompts", "1"], "pass a local jsonl"),
    (["eval", "--model", "some-org/not-downloaded", "--prompts", "1"], "pass the local folder"),
]


@pytest.fixture(scope="module")
def environment_errors(built_once):
    def cases(tmp: Path) -> list:
        (tmp / "empty").mkdir()
        out = []
        for argv, _ in ENVIRONMENT_ERRORS:
            argv = [str(tmp / "empty") if a == "EMPTY" else a for a in argv]
            out.append(([*argv, "--out-dir", tmp / "r"] if argv[0] == "train" else argv, None))
        return out

    return many_once(built_once, "environment_errors", cases)[1]


@pytest.mark.parametrize("case", range(len(ENVIRONMENT_ERRORS)), ids=[n for _, n in ENVIRONMENT_ERRORS])
def test_environment_errors_are_one_line(environment_errors, case):
    needle = ENVIRONMENT_ERRORS[case][1]
    if needle.startswith("this torch build") and __import__("torch").backends.cuda.is_built():
        pytest.skip("this torch build has CUDA")
    one_line_error(environment_errors[case][0], needle)


def test_kill_9_then_resume_matches_an_uninterrupted_run(tmp_path, tiny_dir):
    """A default-settings run (checkpoint every 10 steps) killed with SIGKILL during
    step 14 resumes from step 10 and then writes the same rows as a run that was never killed."""
    args = [
        "train",
        "dapo",
        "--model",
        tiny_dir,
        "--steps",
        "30",
        "--prompts-per-step",
        "4",
        "--group-size",
        "4",
        "--max-new-tokens",
        "8",
        "--eval-every",
        "0",
        "--eval-prompts",
        "2",
        "--eval-samples",
        "1",
        "--seed",
        "3",
        "--no-progress",
    ]
    assert rlalgos_here(*args, "--out-dir", tmp_path / "full").returncode == 0
    cut = tmp_path / "cut"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlalgos.tools.cli", *map(str, args), "--out-dir", str(cut)],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        rows = (cut / "metrics.jsonl").read_text().splitlines() if (cut / "metrics.jsonl").exists() else []
        if len(rows) >= 14:  # rows 0..13 written: step 14 is under way
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    killed_at = len((cut / "metrics.jsonl").read_text().splitlines())
    assert 14 <= killed_at < 31
    done = rlalgos_here("resume", cut)
    assert done.returncode == 0, done.stderr[-2000:]
    full, resumed = load_metrics(tmp_path / "full"), load_metrics(cut)
    assert resumed["step"].tolist() == list(range(31))
    keys = [k for k in full.columns if not k.endswith(TIMING)]
    assert full[keys].iloc[11:].reset_index(drop=True).equals(resumed[keys].iloc[11:].reset_index(drop=True))


def _cfg(tmp_path, tiny_dir, **kw):
    base = dict(
        model=str(tiny_dir),
        steps=4,
        prompts_per_step=2,
        group_size=2,
        max_new_tokens=6,
        eval_every=0,
        eval_prompts=2,
        eval_samples=1,
        out_dir=str(tmp_path / "run"),
        progress=False,
        save_every=2,
        seed=1,
    )
    base.update(kw)
    return TrainConfig(**base)


@pytest.mark.parametrize("kill_point", ["tmp_complete_old_gone", "old_complete_tmp_torn"])
def test_resume_recovers_a_checkpoint_cut_in_the_swap(tmp_path, tiny_dir, kill_point):
    """A kill inside save_checkpoint's swap leaves the last complete checkpoint under
    checkpoint.tmp or checkpoint.old; --resume puts it back and finishes the run."""
    full = train(_cfg(tmp_path / "a", tiny_dir))
    cfg = _cfg(tmp_path / "b", tiny_dir, steps=2)
    train(cfg)  # a run that stopped after its step-2 checkpoint
    run = Path(cfg.out_dir)
    if (
        kill_point == "tmp_complete_old_gone"
    ):  # killed after `checkpoint -> checkpoint.old` and removing it... before `tmp -> checkpoint`
        (run / "checkpoint").rename(run / "checkpoint.tmp")
    else:  # killed after `checkpoint -> checkpoint.old`, while the new checkpoint.tmp was half written
        (run / "checkpoint").rename(run / "checkpoint.old")
        (run / "checkpoint.tmp").mkdir()
        (run / "checkpoint.tmp" / "config.json").write_text("{")
    assert recover_checkpoint(run) == run / "checkpoint"
    assert not (run / "checkpoint.tmp").exists() and not (run / "checkpoint.old").exists()
    resumed = resume(run, steps=4)
    keys = ["reward_mean", "accuracy", "entropy", "kl", "grad_norm", "loss"]
    assert resumed[keys].iloc[1:].reset_index(drop=True).equals(full[keys].iloc[1:].reset_index(drop=True))


def test_resume_without_any_checkpoint_says_what_to_do(tmp_path, tiny_dir):
    cfg = _cfg(tmp_path, tiny_dir, steps=2)
    train(cfg)
    import shutil

    shutil.rmtree(Path(cfg.out_dir) / "checkpoint")
    with pytest.raises(FileNotFoundError, match="before its first checkpoint: start it again with --overwrite"):
        resume(cfg.out_dir)


def test_gsm8k_file_holds_out_a_test_split(tmp_path, tiny_dir):
    from rlalgos.tasks import get_task

    rows = [{"question": f"What is {i} + 1?", "answer": f"{i} + 1 = {i + 1}\n#### {i + 1}"} for i in range(40)]
    train_file, test_file = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    train_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    test_file.write_text("".join(json.dumps(r) + "\n" for r in rows[:3]))
    held = get_task(f"gsm8k:{train_file}")
    assert len(held.test) == 4 and len(held.train) == 36
    assert not {r["prompt"] for r in held.test} & {r["prompt"] for r in held.train}
    assert get_task(f"gsm8k:{train_file}").test == held.test  # the same rows every time
    both = get_task(f"gsm8k:{train_file},{test_file}")
    assert len(both.train) == 40 and len(both.test) == 3
    df = train(_cfg(tmp_path, tiny_dir, task=f"gsm8k:{train_file}", steps=1, max_new_tokens=4))
    saved = json.loads((Path(df.run_dir) / "config.json").read_text())["task"]
    assert saved["test_rows"] == 4 and saved["test_source"].startswith("held out 4 of the 40 rows")


def test_compare_jobs_2_gives_the_numbers_of_runs_one_at_a_time(tmp_path, tiny_dir):
    """Two worker processes (1 thread each) write exactly the rows that the same
    runs write one after another with 1 thread."""
    args = [
        "compare",
        "--algos",
        "grpo,reinforce",
        "--seeds",
        "1",
        "--model",
        tiny_dir,
        "--steps",
        "3",
        "--prompts-per-step",
        "2",
        "--group-size",
        "2",
        "--max-new-tokens",
        "6",
        "--eval-prompts",
        "2",
        "--eval-samples",
        "1",
        "--no-progress",
    ]
    assert (
        rlalgos_here(*args, "--jobs", "1", "--out-dir", tmp_path / "seq").returncode == 0
    )  # one thread, as make test's workers (and ENV) have
    par = rlalgos(*args, "--jobs", "2", "--out-dir", tmp_path / "par")
    assert par.returncode == 0, par.stderr[-2000:]
    for algo in ("grpo", "reinforce"):
        a, b = load_metrics(tmp_path / "seq" / algo / "seed0"), load_metrics(tmp_path / "par" / algo / "seed0")
        keys = [k for k in a.columns if not k.endswith(TIMING)]
        assert a[keys].equals(b[keys]), algo


def test_sweep_lanes_order_and_auto_jobs(tmp_path, tiny_dir, monkeypatch):
    """Longest runs start first; auto = one lane per core on CPU, one on a GPU; the
    caller's thread count is back after a sweep in which it was a lane."""
    import torch

    from rlalgos.tools import sweep
    from rlalgos.config import make_config

    base = TrainConfig(
        algo="grpo",
        model=str(tiny_dir),
        steps=2,
        prompts_per_step=2,
        group_size=2,
        max_new_tokens=4,
        eval_prompts=2,
        eval_samples=1,
        out_dir=str(tmp_path / "a"),
        progress=False,
    )
    runs = [
        (base, make_config("grpo")),
        (TrainConfig(**{**base.__dict__, "algo": "ppo"}), make_config("ppo")),
        (TrainConfig(**{**base.__dict__, "steps": 5}), make_config("grpo")),
        (TrainConfig(**{**base.__dict__, "algo": "dapo"}), make_config("dapo")),
    ]
    assert sweep.longest_first(runs) == [1, 2, 3, 0]  # ppo x3.99 x2 steps, grpo x5 steps, dapo x1.31 x2, grpo x2
    monkeypatch.setattr(sweep.os, "cpu_count", lambda: 2)
    assert sweep.auto_jobs(runs) == 2 and sweep.auto_jobs(runs[:1]) == 1
    assert sweep.auto_jobs([(TrainConfig(**{**base.__dict__, "device": "cuda:0"}), make_config("grpo"))] + runs) == 1
    monkeypatch.undo()
    before = torch.get_num_threads()
    runs = [
        (TrainConfig(**{**base.__dict__, "out_dir": str(tmp_path / f"r{i}"), "seed": i}), make_config("grpo"))
        for i in range(3)
    ]
    out = sweep.run_many(runs, jobs=2, progress=False)
    assert torch.get_num_threads() == before
    assert [df.run_dir for df in out] == [str(tmp_path / f"r{i}") for i in range(3)]  # in the given order


def test_a_failed_run_does_not_stop_the_others(tmp_path, tiny_dir):
    from rlalgos.tools.sweep import run_many

    good = TrainConfig(
        algo="grpo",
        model=str(tiny_dir),
        steps=1,
        prompts_per_step=2,
        group_size=2,
        max_new_tokens=4,
        eval_prompts=2,
        eval_samples=1,
        out_dir=str(tmp_path / "good"),
        progress=False,
    )
    bad = TrainConfig(**{**good.__dict__, "model": str(tmp_path / "no-model"), "out_dir": str(tmp_path / "bad")})
    from rlalgos.config import make_config

    for jobs in (1, 2):
        out = run_many([(bad, make_config("grpo")), (good, make_config("grpo"))], jobs=jobs, progress=False)
        assert isinstance(out[0], FileNotFoundError) and out[1]["step"].tolist() == [0, 1]
        assert out[0].run_index == 0 and out[0].run_dir == str(tmp_path / "bad")  # which run failed, for the report
        good = TrainConfig(**{**good.__dict__, "overwrite": True})
