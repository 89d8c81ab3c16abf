"""Every benchmark runs from its one command and prints JSON lines that make sense
(tiny settings: these check the scripts, not the speed).

Each script runs as ``__main__`` in this process (``runpy``, with its own ``sys.argv``, working
folder and stdout), not in a new interpreter: a start loads torch and transformers, ~10 s of
CPU, longer than most of these runs. ``memory.py`` still starts its own child per measurement
(a peak is a process's own); ``step_throughput.py`` measures its one algorithm here (``--algo``,
the mode its per-algorithm children run in)."""

import contextlib
import io
import json
import os
import runpy
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


def patched_globals() -> list:
    """What the scripts patch while they measure (evaluation off, timers and profilers around passes):
    each must be the original again when a script returns, or the tests after it in this process would
    train without evaluation (seen: a finished run with no eval_accuracy)."""
    import rlalgos.rollout as rollout_mod
    import rlalgos.train as train_mod
    from rlalgos.algorithms.base import Algorithm

    return [train_mod.evaluate, rollout_mod.generate, Algorithm.update, torch.nn.Module.__call__, torch.Tensor.backward]


def run(script: str, *args: str, tmp_path: Path | None = None) -> list[dict]:
    """The JSON lines ``python benchmarks/<script> <args>`` prints, run from ``tmp_path`` (else the repository root)."""
    out, argv, cwd, threads, before = io.StringIO(), sys.argv, os.getcwd(), torch.get_num_threads(), patched_globals()
    sys.path.insert(0, str(BENCH))  # the scripts import their shared helpers (_common) from their own folder
    try:
        os.chdir(tmp_path or ROOT)
        sys.argv = [str(BENCH / script), *map(str, args)]
        with contextlib.redirect_stdout(out):
            try:
                runpy.run_path(str(BENCH / script), run_name="__main__")
            except SystemExit as e:  # argparse or the script's own exit
                assert e.code in (0, None), f"{script} exited with {e.code}"
    finally:
        sys.argv = argv
        os.chdir(cwd)
        sys.path.remove(str(BENCH))
        torch.set_num_threads(threads)
    assert patched_globals() == before, f"{script} left a patched function behind"
    return [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]


def test_step_throughput_splits_the_step():
    (row,) = run(
        "step_throughput.py",
        "--algo",
        "grpo",
        "--steps",
        "1",
        "--prompts",
        "2",
        "--group-size",
        "2",
        "--max-new-tokens",
        "8",
    )
    assert row["algo"] == "grpo" and row["step_seconds"] > 0
    # the stages are measured, not derived: each real stage took time, and together they fit in the step
    assert row["generate_seconds"] > 0 and row["update_seconds"] > 0
    assert sum(row[f"{s}_seconds"] for s in ("generate", "reward", "logprobs", "update")) <= row["step_seconds"] + 2e-3
    # 2 prompts x G=2, at most 8 tokens each: the token count is a batch's, and tokens/s is that over the step
    assert 4 <= row["completion_tokens"] <= 32
    assert row["tokens_per_second"] == pytest.approx(row["completion_tokens"] / row["step_seconds"], rel=0.02)
    assert 0 < row["model_share"] <= 1.05 and row["peak_memory_mb"] > 100  # a process with torch loaded holds > 100 MB


def test_memory_peak_follows_the_chunk_not_the_batch():
    # the update pass only (forward + backward, the larger peak; the score pass is the same chunked forward
    # without the graph): three measurements, each in its own process, instead of six
    rows = run(
        "memory.py",
        "--vocab",
        "50000",
        "--hidden",
        "32",
        "--length",
        "16",
        "--prompt-len",
        "4",
        "--unchunked-rows",
        "4",
        "--chunked-rows",
        "2,8",
        "--chunks",
        "8",
        "--passes",
        "update",
    )
    mem = {(r["pass"], r["logits_chunk"], r["rows"]): r for r in rows if r["measure"] == "memory"}
    assert set(mem) == {("update", c, n) for c, n in ((0, 4), (8, 2), (8, 8))}
    assert all(r["tokens"] == r["rows"] * 16 and r["peak_extra_mb"] >= 0 and r["seconds"] > 0 for r in mem.values())
    # twice the tokens of the unchunked pass, a fraction of its memory (50,000 x 64 fp32 logits: 12 MB a copy)
    assert mem["update", 8, 8]["peak_extra_mb"] < mem["update", 0, 4]["peak_extra_mb"] / 1.5
    growth = {r["pass"]: r for r in rows if r["measure"] == "memory_growth"}
    assert (
        set(growth) == {"update"} and growth["update"]["logits_chunk"] == 8 and growth["update"]["tokens"] == [32, 128]
    )


def test_scaling_reports_each_point_against_the_baseline():
    rows = run("scaling.py", "--sweep", "group_size", "--repeats", "1", "--prompts", "1")
    assert [r["group_size"] for r in rows] == [4, 8, 16]
    base = next(r for r in rows if r["group_size"] == 8)
    assert base["x_baseline"] == 1.0 and all(r["length"] == 64 for r in rows)


def test_learning_efficiency_summarises_runs(tmp_path):
    rows = run(
        "learning_efficiency.py",
        "--algos",
        "grpo,dapo",
        "--seeds",
        "0,1",
        "--steps",
        "2",
        "--eval-every",
        "1",
        "--eval-prompts",
        "4",
        "--prompts",
        "2",
        "--group-size",
        "2",
        "--thresholds",
        "0.0,1.01",
        "--out-dir",
        str(tmp_path / "le"),
        "--quiet",
        tmp_path=tmp_path,
    )
    runs = [r for r in rows if r["measure"] == "learning_run"]
    summary = {r["algo"]: r for r in rows if r["measure"] == "learning_efficiency"}
    assert len(runs) == 4 and set(summary) == {"grpo", "dapo"}
    grpo_runs = [r for r in runs if r["algo"] == "grpo"]
    assert all(
        r["eval_steps"] == [0, 1, 2] and r["samples"] == 2 * 2 * 2 for r in grpo_runs
    )  # 2 steps x 2 prompts x G=2, no extra rounds
    assert all(r["samples"] >= 8 for r in runs if r["algo"] == "dapo")  # dynamic sampling only adds samples
    finals = [r["eval_accuracy"][-1] for r in grpo_runs]
    assert summary["grpo"]["final_eval_accuracy"] == pytest.approx(sum(finals) / 2, abs=1e-4)
    assert summary["grpo"]["steps_to_0.00"] == 0.0  # reached before training
    assert summary["grpo"]["steps_to_1.01"] is None and summary["dapo"]["samples_to_1.01"] is None  # never reached
    assert (tmp_path / "le" / "learning_efficiency.png").exists()
    again = run(
        "learning_efficiency.py",
        "--algos",
        "grpo,dapo",
        "--seeds",
        "0,1",
        "--steps",
        "2",
        "--eval-every",
        "1",
        "--eval-prompts",
        "4",
        "--prompts",
        "2",
        "--group-size",
        "2",
        "--thresholds",
        "0.0,1.01",
        "--out-dir",
        str(tmp_path / "le"),
        "--quiet",
        "--reuse",
        tmp_path=tmp_path,
    )
    assert [r for r in again if r["measure"] == "learning_efficiency"] == list(summary.values())


def test_trl_side_by_side_runs_both():
    pytest.importorskip("trl")
    rows = run(
        "trl_side_by_side.py",
        "--rounds",
        "1",
        "--steps",
        "2",
        "--prompts",
        "2",
        "--group-size",
        "2",
        "--max-new-tokens",
        "8",
        "--learn-steps",
        "2",
        "--eval-prompts",
        "4",
    )
    summary = next(r for r in rows if r["measure"] == "trl_side_by_side")
    assert summary["trl_step_seconds"] > 0 and summary["rlalgos_step_seconds"] > 0 and summary["ratio_step_seconds"] > 0
    assert summary["ratio_step_seconds"] == pytest.approx(
        summary["rlalgos_step_seconds"] / summary["trl_step_seconds"], rel=0.05
    )
    learning = next(r for r in rows if r["measure"] == "learning")
    # 4 eval prompts x 4 samples: each accuracy is a count of right answers out of 16
    for key in ("eval_accuracy_before", "trl_eval_accuracy", "rlalgos_eval_accuracy"):
        assert 0 <= learning[key] <= 1 and learning[key] * 16 == pytest.approx(round(learning[key] * 16), abs=1e-3), key


def test_regimes_pairs_arms_by_seed_and_reuses_finished_runs(tmp_path):
    args = [
        "--only",
        "truncation",
        "--seeds",
        "0,1",
        "--steps",
        "2",
        "--prompts",
        "2",
        "--group-size",
        "2",
        "--eval-every",
        "1",
        "--eval-prompts",
        "4",
        "--jobs",
        "1",
        "--out-dir",
        str(tmp_path / "runs"),
        "--fig-dir",
        str(tmp_path / "fig"),
        "--quiet",
    ]
    rows = run("regimes.py", *args, tmp_path=tmp_path)
    effects = [r for r in rows if r["measure"] == "regime_effect"]
    arms = {r["arm"]: r for r in rows if r["measure"] == "regime_arm"}
    assert set(arms) == {"grpo", "overlong_filter", "dapo"} and {r["arm"] for r in effects} == {
        "overlong_filter",
        "dapo",
    }
    assert all(r["seeds"] == 2 and r["verdict"] in ("shown", "within noise") for r in effects)
    acc = next(r for r in effects if r["arm"] == "dapo" and r["metric"] == "eval_accuracy")
    assert acc["diff"] == pytest.approx(acc["arm_mean"] - acc["base_mean"], abs=1e-3)  # paired over the same seeds
    assert acc["arm_mean"] == pytest.approx(sum(arms["dapo"]["final_per_seed"]) / 2, abs=1e-3)
    assert arms["grpo"]["steps_ratio_vs_grpo"] in (1.0, None)
    assert (tmp_path / "fig" / "regime_truncation.png").exists()
    mtimes = {p: p.stat().st_mtime for p in (tmp_path / "runs").rglob("metrics.jsonl")}
    assert len(mtimes) == 6  # 3 arms x 2 seeds
    assert run("regimes.py", *args, tmp_path=tmp_path) == rows  # finished runs are read back, not trained again
    assert {p: p.stat().st_mtime for p in mtimes} == mtimes


def test_sweep_speedup_times_both_ways(tmp_path):
    (row,) = run(
        "sweep_speedup.py",
        "--algos",
        "grpo",
        "--seeds",
        "2",
        "--steps",
        "1",
        "--prompts",
        "2",
        "--group-size",
        "2",
        "--eval-prompts",
        "4",
        "--repeats",
        "1",
        "--out-dir",
        str(tmp_path / "sweep"),
        tmp_path=tmp_path,
    )
    assert (
        row["runs"] == 2
        and row["jobs"] == 2
        and row["sequential_seconds"] > 0
        and row["parallel_seconds"] > 0
        and len(row["speedups"]) == row["repeats"] == 1
    )
    assert row["speedup"] == pytest.approx(row["sequential_seconds"] / row["parallel_seconds"], rel=0.05)
    assert all(
        (tmp_path / "sweep" / way / f"grpo_s{s}" / "metrics.jsonl").exists()
        for way in ("sequential", "parallel")
        for s in (0, 1)
    )


def test_kl_subsample_benchmark_compares_the_same_runs():
    (*seeds, row) = run(
        "kl_subsample.py", "--seeds", "0", "--steps", "3", "--prompts", "4", "--group-size", "4", "--rows", "4"
    )
    assert (
        row["measure"] == "kl_subsample"
        and row["rows_per_step"] == 16
        and row["kl_sample_rows"] == 4
        and row["steps_compared"] == 2
    )
    assert row["step_seconds_exact"] > 0 and row["logprobs_seconds_sampled"] > 0 and 0 <= row["coverage_1.96se"] <= 1
    assert seeds[0]["seed"] == 0 and seeds[0]["stderr_last"] >= 0


def test_step_profile_accounts_for_each_phase():
    rows = run("step_profile.py", "--steps", "1", "--prompts", "2", "--group-size", "2", "--max-new-tokens", "8")
    assert [r["phase"] for r in rows] == ["generate", "update"]
    for r in rows:
        shares = {k: v for k, v in r.items() if k.startswith("share_")}
        assert (
            r["seconds"] > 0 and shares["share_matmul"] > 0 and sum(shares.values()) == pytest.approx(1.0, abs=0.02)
        ), r
