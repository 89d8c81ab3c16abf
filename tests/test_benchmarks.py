"""Every benchmark runs from its one command and prints JSON lines that make sense
(tiny settings: these check the scripts, not the speed)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(script: str, *args: str, tmp_path: Path | None = None) -> list[dict]:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=tmp_path or ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def test_step_throughput_splits_the_step():
    (row,) = run("step_throughput.py", "--algos", "grpo", "--steps", "1", "--prompts", "2", "--group-size", "2", "--max-new-tokens", "8")
    assert row["algo"] == "grpo" and row["step_seconds"] > 0
    parts = sum(row[f"{s}_seconds"] for s in ("generate", "reward", "logprobs", "update"))
    assert parts == pytest.approx(row["step_seconds"] - row["other_seconds"], abs=2e-3)
    assert 0 < row["model_share"] <= 1.05 and row["peak_memory_mb"] > 0 and row["tokens_per_second"] > 0


def test_scaling_reports_each_point_against_the_baseline():
    rows = run("scaling.py", "--sweep", "group_size", "--repeats", "1", "--prompts", "1")
    assert [r["group_size"] for r in rows] == [4, 8, 16]
    base = next(r for r in rows if r["group_size"] == 8)
    assert base["x_baseline"] == 1.0 and all(r["length"] == 64 for r in rows)


def test_learning_efficiency_summarises_runs(tmp_path):
    rows = run("learning_efficiency.py", "--algos", "grpo,dapo", "--seeds", "0,1", "--steps", "2", "--eval-every", "1", "--eval-prompts", "4",
               "--prompts", "2", "--group-size", "2", "--thresholds", "0.0", "--out-dir", str(tmp_path / "le"), "--quiet", tmp_path=tmp_path)
    runs = [r for r in rows if r["measure"] == "learning_run"]
    summary = {r["algo"]: r for r in rows if r["measure"] == "learning_efficiency"}
    assert len(runs) == 4 and set(summary) == {"grpo", "dapo"}
    assert summary["grpo"]["steps_to_0.00"] == 0.0  # reached before training
    assert summary["dapo"]["samples_to_grpo_final"] is None or summary["dapo"]["samples_to_grpo_final"] >= 0
    assert (tmp_path / "le" / "learning_efficiency.png").exists()
    again = run("learning_efficiency.py", "--algos", "grpo,dapo", "--seeds", "0,1", "--steps", "2", "--eval-every", "1", "--eval-prompts", "4",
                "--prompts", "2", "--group-size", "2", "--thresholds", "0.0", "--out-dir", str(tmp_path / "le"), "--quiet", "--reuse", tmp_path=tmp_path)
    assert [r for r in again if r["measure"] == "learning_efficiency"] == list(summary.values())


def test_trl_side_by_side_runs_both():
    pytest.importorskip("trl")
    rows = run("trl_side_by_side.py", "--rounds", "1", "--steps", "2", "--prompts", "2", "--group-size", "2", "--max-new-tokens", "8", "--learn-steps", "2", "--eval-prompts", "4")
    summary = next(r for r in rows if r["measure"] == "trl_side_by_side")
    assert summary["trl_step_seconds"] > 0 and summary["rlalgos_step_seconds"] > 0 and summary["ratio_step_seconds"] > 0
    learning = next(r for r in rows if r["measure"] == "learning")
    assert 0 <= learning["trl_eval_accuracy"] <= 1 and 0 <= learning["rlalgos_eval_accuracy"] <= 1
