"""benchmarks/gpu_check.py, the one script a lent GPU runs, cannot rot: its ``--dry-run``
(every case at tiny sizes on the CPU, the world-2 cases on two gloo processes) runs here
in its own process and passes; without a GPU it refuses in one line; and its checks
catch what they are there to catch (bf16 outputs, a resumed run that differs)."""

from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
ENV.pop("WORLD_SIZE", None)


@pytest.fixture(scope="module")
def gpu_check():
    sys.path.insert(0, str(SCRIPT.parent))  # the script imports its helpers (_common) from its own folder
    try:
        yield importlib.import_module("gpu_check")
    finally:
        sys.path.remove(str(SCRIPT.parent))


def test_dry_run_passes_every_case(tmp_path, gpu_check):
    out = tmp_path / "results.json"
    # ~45 s on one free core (imports, 16 cases in this process, one launch of two processes)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--out", str(out)],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert json.loads(out.read_text()) == lines  # --out holds every line printed
    cases = {r["case"]: r for r in lines if r["measure"] == "gpu_check"}
    assert list(cases) == [c.name for c in gpu_check.plan(world2=True)]
    summary = lines[-1]
    assert (
        summary["measure"] == "gpu_check_summary"
        and summary["ok"]
        and summary["passed"] == list(cases)
        and not summary["failed"]
    )
    assert proc.stderr.strip().splitlines()[-1] == f"gpu_check: {len(cases)}/{len(cases)} passed"
    for name, row in cases.items():
        assert row["passed"] and row["device"] == "cpu" and row["peak_gpu_memory_mb"] is None, name
        assert row["linear_output_dtypes"] == {
            "torch.float32": row["linear_output_dtypes"]["torch.float32"]
        }  # dtype auto on the CPU: float32 throughout
        assert (
            row["step_seconds"] > 0
            and row["generate_seconds"] > 0
            and row["update_seconds"] > 0
            and row["tokens_per_second"] > 0
        ), name
        expected = (
            {"finite", "precision"}
            | ({"chunked_head"} if row["model"] != "tiny" else set())
            | ({"collective"} if "/world" in name else set())
        )
        assert set(row["checks"]) == expected | ({"resume"} if "resume_gap" in row else set()), name
    assert (
        cases["tiny/dapo"]["resume_gap"] == 0.0 and cases["tiny/dapo/world2"]["resume_gap"] == 0.0
    )  # on the CPU, the same rows bit for bit
    assert cases["qwen2-100m/dapo+lora"]["resume_gap"] == 0.0
    assert cases["tiny/dapo/world2"]["world"] == 2
    built = {r["model"]: r for r in lines if r["measure"] == "gpu_check_model"}
    assert set(built) == {"qwen2-100m", "qwen2-500m"} and all(r["vocab"] == 1000 for r in built.values())


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible: the script would run")
def test_without_a_gpu_it_refuses_in_one_line():
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, env=ENV, timeout=120)
    err = proc.stderr.strip()
    assert (
        proc.returncode == 2
        and proc.stdout == ""
        and "\n" not in err
        and "no CUDA device" in err
        and "--dry-run" in err
    ), err


def test_the_precision_watch_sees_autocast_and_the_chunked_head(gpu_check):
    head, original = torch.nn.Linear(4, 10), torch.nn.Linear.forward
    with gpu_check.LinearWatch(vocab=10) as watch:
        head(torch.randn(3, 4))  # a flat (tokens, hidden) input: a chunk
        with torch.autocast("cpu", dtype=torch.bfloat16):
            head(torch.randn(2, 5, 4))
    assert (
        watch.outputs == {"torch.float32": 1, "torch.bfloat16": 1}
        and watch.weights == {"torch.float32": 2}
        and watch.chunked_head == 1
    )
    assert torch.nn.Linear.forward is original  # put back


def test_the_resume_comparison_sees_any_difference(gpu_check):
    full = [
        {"step": 0, "eval_accuracy": 0.5},
        {"step": 1, "loss": 0.25, "kl": math.nan, "ds_extra_rounds": 1, "step_seconds": 1.0},
        {"step": 2, "loss": 0.5, "eval_accuracy": 0.75},
    ]
    resumed = [dict(r) for r in full]
    resumed[1] |= {
        "step_seconds": 2.0,
        "eval_accuracy": 0.5,
    }  # timings differ, and the cut run evaluated where it stopped
    assert gpu_check.resume_gap(full, resumed) == 0.0
    assert gpu_check.resume_gap(full, [*resumed[:2], {**resumed[2], "loss": 0.5 + 3e-4}]) == pytest.approx(2e-4)
    for changed, gap in (
        ({"ds_extra_rounds": 2}, 0.5),
        ({"kl": 0.0}, math.inf),
        ({"loss": None}, math.inf),
    ):  # a count, a NaN, a number gone
        assert gpu_check.resume_gap(full, [resumed[0], {**resumed[1], **changed}, resumed[2]]) == gap, changed
    assert gpu_check.resume_gap(full, resumed[:2]) == math.inf  # a step missing
    assert (
        gpu_check.resume_gap(full, [resumed[0], {k: v for k, v in resumed[1].items() if k != "loss"}, resumed[2]])
        == math.inf
    )
