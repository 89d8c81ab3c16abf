"""An install, tested the way a user makes one: a fresh venv, the CPU build of torch,
``pip install <repo>`` (not editable), then the ``rlalgos`` command run from a folder
outside the repo. It proves the task data and the tiny models ship in the wheel.

* ``RLALGOS_TRANSFORMERS=5.0.0`` installs that transformers (the lowest the package
  allows) instead of the newest, and then also runs the repo's fast tests against the
  installed package (``make test-transformers-range`` does both ends).
* torch comes from a local wheel (pip's find-links); with none, the test is skipped
  unless ``TORCH_INDEX_URL`` names an index to fetch it from, e.g.
  https://download.pytorch.org/whl/cpu. No package index reachable: skipped too.
* pip's cache is shared with the user's, so a second run downloads nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TORCH = os.environ.get("TORCH_SPEC", "torch==2.13.0")
FAST_TESTS = ["tests/test_foundation.py", "tests/test_speed_paths.py", "tests/test_reward_model.py"]
OFFLINE = (
    "from versions: none",
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
)


def _env() -> dict:
    # PYTHONDONTWRITEBYTECODE (set on these machines) dropped too: the install skips compiling (--no-compile), and the
    # first interpreter start writes .pyc for what it imports, which the later starts read (each paid ~5 s more without)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    }
    return {**env, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _run(cmd, cwd, timeout=900) -> subprocess.CompletedProcess:
    start = time.perf_counter()
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    print(
        f"{time.perf_counter() - start:6.1f} s  {' '.join(str(c) for c in cmd[1:4])}"
    )  # where the minutes go (pytest -s)
    return proc


def _ok(proc: subprocess.CompletedProcess, what: str) -> str:
    assert proc.returncode == 0, (
        f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout


def _pip(venv: Path, *args, cwd) -> subprocess.CompletedProcess:
    return _run(
        [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-compile", *args], cwd
    )  # .pyc only for what runs (see _env): ~1/3 faster


def test_every_package_is_in_pyproject():
    """pyproject.toml lists the packages by hand (data/ is mapped into rlalgos.data); a new subpackage must be added there."""
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    code = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "rlalgos").rglob("__init__.py")}
    data = {"rlalgos.data"} | {
        f"rlalgos.data.{p.name}" for p in (REPO / "data").iterdir() if p.is_dir() and not p.name.startswith((".", "__"))
    }
    assert code | data == listed


@pytest.mark.slow
def test_a_fresh_install_runs_from_anywhere(tmp_path):
    venv, elsewhere = tmp_path / "venv", tmp_path / "elsewhere"
    elsewhere.mkdir()
    py, cli = venv / "bin" / "python", venv / "bin" / "rlalgos"
    _ok(_run([sys.executable, "-m", "venv", venv], elsewhere), "python -m venv")

    index = os.environ.get("TORCH_INDEX_URL", "")
    if index:
        _ok(_pip(venv, TORCH, "--index-url", index, cwd=elsewhere), f"pip install {TORCH} --index-url {index}")
    else:  # only a local wheel: an index would hand out the multi-GB CUDA build
        proc = _pip(venv, "--no-index", "--no-deps", TORCH, cwd=elsewhere)
        if proc.returncode != 0:
            pytest.skip(
                f"no local wheel of {TORCH} in pip's find-links; set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu to fetch the CPU build"
            )
        _ok(_pip(venv, TORCH, cwd=elsewhere), f"pip install {TORCH} (its dependencies)")

    wanted = os.environ.get("RLALGOS_TRANSFORMERS", "")
    extra = [f"transformers{wanted if wanted[0] in '<>=!~' else '==' + wanted}"] if wanted else []
    proc = _pip(venv, REPO, *extra, cwd=elsewhere)
    if proc.returncode != 0 and any(s in proc.stderr for s in OFFLINE):
        pytest.skip(f"no package index reachable for rlalgos' dependencies: {proc.stderr.strip().splitlines()[-1]}")
    _ok(proc, f"pip install {REPO} {' '.join(extra)}")
    versions = _ok(
        _run([py, "-c", "import torch, transformers; print(torch.__version__, transformers.__version__)"], elsewhere),
        "import",
    )
    print(f"installed torch {versions.split()[0]}, transformers {versions.split()[1]}")
    if wanted and wanted[0].isdigit():
        assert versions.split()[1] == wanted

    # the package and its data come from the venv, not from the repo
    data_dir = Path(
        _ok(
            _run([py, "-c", "from rlalgos.config import BASE_MODEL_DIR; print(BASE_MODEL_DIR.parent)"], elsewhere),
            "import rlalgos",
        ).strip()
    )
    assert data_dir.is_relative_to(venv) and (data_dir / "addition_train.jsonl").is_file(), data_dir

    out = _ok(_run([cli, "eval", "--prompts", "5"], elsewhere), "rlalgos eval --prompts 5")
    assert 0 <= json.loads(out[out.index("{") :])["eval_accuracy"] <= 1

    _ok(
        _run(
            [
                cli,
                "train",
                "grpo",
                "--steps",
                "2",
                "--prompts-per-step",
                "2",
                "--group-size",
                "2",
                "--max-new-tokens",
                "24",
                "--eval-every",
                "2",
                "--eval-prompts",
                "2",
                "--eval-samples",
                "1",
                "--no-progress",
                "--out-dir",
                "runs/grpo",
            ],
            elsewhere,
        ),
        "rlalgos train grpo",
    )
    run = elsewhere / "runs" / "grpo"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert max(r["step"] for r in rows) == 2 and (run / "config.json").is_file() and (run / "checkpoint").is_dir()

    if wanted:  # the repo's fast tests against the installed package at this transformers
        _ok(_pip(venv, "pytest", cwd=elsewhere), "pip install pytest")
        _ok(
            _run(
                [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", *(REPO / t for t in FAST_TESTS)],
                elsewhere,
            ),
            f"the fast tests at transformers {wanted}",
        )

    # an editable install of the same repo reads and writes the repo's data/ (rlalgos sft / rm / data)
    _ok(_pip(venv, "--no-deps", "-e", REPO, cwd=elsewhere), f"pip install -e {REPO}")
    data_dir = _ok(
        _run([py, "-c", "from rlalgos.tasks import DATA_DIR; print(DATA_DIR)"], elsewhere), "import rlalgos (editable)"
    ).strip()
    assert Path(data_dir) == REPO / "data"
