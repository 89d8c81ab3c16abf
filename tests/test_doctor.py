"""The run doctor: each signature on hand-made metrics, the measured runs it was sized on
(docs/bench/doctor_runs.jsonl), the stop of a collapsed run from the command line, and
``rlalgos diagnose`` on an rlalgos run, a TRL trainer_state.json and TensorBoard logs."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rlalgos.engine import doctor as d
from rlalgos.engine.watch import watch
from rlalgos.tools.diagnose import diagnose_path, read_source

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "docs" / "bench" / "doctor_runs.jsonl"
TABLE = ROOT / "docs" / "bench" / "doctor_thresholds.json"
TRL_STATE = (
    Path(__file__).parent / "fixtures" / "trl_grpo_trainer_state.json"
)  # written by TRL 1.16 (rlalgos export --to trl grpo, 6 steps, eval every 3)
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def frame(steps: int = 30, evals: dict | None = None, **cols) -> pd.DataFrame:
    """A run of ``steps`` train steps after a step-0 evaluation: each column a constant, a list (one value per train
    step) or a function of the step; ``evals``: {step: {eval key: value}}."""
    healthy = {
        "reward_mean": 0.45,
        "kl": 0.01,
        "entropy": 0.16,
        "zero_std_frac": 0.25,
        "completion_len": 20.0,
        "truncated_frac": 0.0,
        "clip_frac": 0.001,
        "loss": 0.01,
        "grad_norm": 0.6,
    }
    healthy.update(cols)
    rows = [{"step": 0, "eval_accuracy": 0.40, "eval_entropy": 0.17}]
    for s in range(1, steps + 1):
        rows.append(
            {
                "step": s,
                **{k: (v[s - 1] if isinstance(v, list) else v(s) if callable(v) else v) for k, v in healthy.items()},
            }
        )
    for s, ev in (evals or {}).items():
        rows[s].update(ev)
    return pd.DataFrame(rows)


HEALTHY = frame(
    evals={15: {"eval_accuracy": 0.47, "eval_entropy": 0.14}, 30: {"eval_accuracy": 0.52, "eval_entropy": 0.12}}
)


@pytest.mark.parametrize("sig", d.SIGNATURES, ids=lambda s: s.__name__)
def test_a_healthy_run_fires_nothing(sig):
    assert sig(HEALTHY) is None
    assert d.diagnose(HEALTHY) == []


def test_collapse_needs_several_steps_of_low_reward_and_high_kl():
    crash = frame(8, reward_mean=[0.31] + [0.0] * 7, kl=[0.0] + [5.9] * 7, entropy=[0.14] + [0.0] * 7)
    f = d.collapse(crash)
    assert (
        f.step == 2
        and f.line() == "collapse at step 2: entropy 0.00, reward 0.00 (was 0.31), KL 5.9 -> lower the learning rate"
    )
    blip = frame(
        8, reward_mean=[0.31, 0.0, 0.0, 0.3, 0.3, 0.3, 0.3, 0.3], kl=[0.0, 3.0, 3.0, 0.02, 0.02, 0.02, 0.02, 0.02]
    )
    assert d.collapse(blip) is None  # two steps: a blip
    assert (
        d.collapse(frame(8, reward_mean=[0.31] + [0.0] * 7)) is None
    )  # reward 0 but the policy did not move (KL 0.01)
    assert (
        d.collapse(frame(8, reward_mean=0.001, kl=[0.0] + [5.0] * 7)) is None
    )  # nothing to lose: too-hard prompts are zero_signal's
    no_kl = frame(8, reward_mean=[0.31] + [0.0] * 7, entropy=[0.14] + [0.0] * 7).drop(columns="kl")
    assert d.collapse(no_kl).step == 2  # without a logged KL, an entropy of 0 stands in for it


def test_zero_signal_length_kl_clip_and_nonfinite_fire_on_their_metric():
    assert d.zero_signal(frame(zero_std_frac=0.98)).step == 1
    assert d.zero_signal(frame(zero_std_frac=lambda s: 1.0 if s in (5, 6) else 0.25)) is None  # two steps of it: noise
    f = d.length_runaway(
        frame(truncated_frac=lambda s: 0.0 if s < 10 else 0.4, completion_len=lambda s: 20.0 if s < 10 else 40.0),
        max_new_tokens=48,
    )
    assert f.step == 10 and "of 48" in f.said
    assert (
        d.length_runaway(frame(truncated_frac=0.3)) is None
    )  # cut off from the start: a budget too small, not a runaway
    assert (
        d.kl_drift(frame(kl=lambda s: d.KL_DRIFT * s / 15)).step == 15
    )  # KL rising steadily: it reaches the level at step 15
    assert d.clip_saturation(frame(clip_frac=0.3)).step == 1
    f = d.nonfinite(frame(grad_norm=lambda s: math.nan if s == 7 else 0.5))
    assert f.step == 7 and "grad_norm" in f.said


def test_reward_up_accuracy_down_needs_the_eval():
    gamed = frame(
        reward_mean=lambda s: 0.7 + 0.01 * s, evals={15: {"eval_accuracy": 0.30}, 30: {"eval_accuracy": 0.18}}
    )
    f = d.reward_up_accuracy_down(gamed)
    assert f.step == 15 and "eval accuracy 0.40 -> 0.18" in f.said
    assert d.reward_up_accuracy_down(gamed.drop(columns="eval_accuracy")) is None
    rising = frame(reward_mean=lambda s: 0.4 + 0.01 * s, evals={30: {"eval_accuracy": 0.55}})
    assert d.reward_up_accuracy_down(rising) is None


def test_entropy_collapse_from_eval_entropy_or_train_entropy():
    sharp = frame(
        evals={15: {"eval_entropy": 0.10, "eval_accuracy": 0.41}, 30: {"eval_entropy": 0.05, "eval_accuracy": 0.40}}
    )
    assert d.entropy_collapse(sharp).step == 30
    learning = frame(evals={30: {"eval_entropy": 0.05, "eval_accuracy": 0.55}})
    assert d.entropy_collapse(learning) is None  # entropy fell while accuracy rose: sharpening that paid
    train_only = frame(entropy=lambda s: 0.3 if s <= 5 else 0.05, reward_mean=0.4).drop(
        columns=["eval_accuracy", "eval_entropy"]
    )
    assert d.entropy_collapse(train_only) is not None


def test_watch_stops_a_collapse_after_three_steps_or_at_a_nan_after_it():
    rows = frame(8, reward_mean=[0.31] + [0.0] * 7, kl=[0.0] + [5.9] * 7, entropy=[0.14] + [0.0] * 7).to_dict("records")
    said = [watch(rows[: k + 1]) for k in range(1, 6)]
    assert [w.stop is not None for w in said] == [
        False,
        False,
        False,
        True,
        True,
    ]  # steps 1..5: the collapse from step 2 lasts 3 steps at step 4
    assert said[1].postfix() == "collapse 1/3" and said[3].stop.step == 2
    assert watch(rows[:3], nonfinite_now=True).stop.step == 2  # a NaN at step 2 of a collapse: stop now
    assert watch(HEALTHY.to_dict("records"), nonfinite_now=True).stop is None


# --------------------------------------------------------------------------- #
# The measured runs (trained by benchmarks/doctor_thresholds.py)
# --------------------------------------------------------------------------- #


def measured() -> list[dict]:
    return [json.loads(line) for line in RUNS.read_text().splitlines()]


def test_every_measured_run_is_diagnosed_as_committed_and_healthy_runs_never_stop():
    """Notebook 06's broken runs are named by their own failure, every healthy run (notebook 06's baseline and fixed
    prompts, the learning tests' cases, the demo's four runs) is healthy, and the confusion table is the committed one."""
    table = json.loads(TABLE.read_text())
    runs = measured()
    assert len(runs) == len(table["runs"])
    for rec, committed in zip(runs, table["runs"]):
        df = pd.DataFrame(rec["rows"])
        names = [f.name for f in d.diagnose(df, rec["max_new_tokens"])] or ["healthy"]
        assert names == committed["fired"], (rec["group"], rec["label"], rec["seed"])
        primary, _ = d.split(d.diagnose(df, rec["max_new_tokens"]))
        if rec["expected"] == "healthy":
            assert names == ["healthy"], (rec["group"], rec["label"], rec["seed"], names)
        elif rec["label"] not in table["misses"]:
            assert rec["expected"] in [f.name for f in primary], (rec["label"], rec["seed"], names)
        if rec["expected"] != "collapse":  # the loop would never have stopped it, at any step
            rows = df.to_dict("records")
            assert all(watch(rows[: k + 1]).stop is None for k in range(1, len(rows))), (
                rec["group"],
                rec["label"],
                rec["seed"],
            )


def test_the_thresholds_in_the_table_are_the_modules():
    table = json.loads(TABLE.read_text())
    for name, value in table["thresholds"].items():
        assert getattr(d, name) == value, name


# --------------------------------------------------------------------------- #
# While training, from the command line
# --------------------------------------------------------------------------- #


def test_lr_10_stops_with_one_line_exit_2_and_keeps_the_checkpoint(tmp_path):
    out = tmp_path / "lr10"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlalgos.tools.cli",
            "train",
            "grpo",
            "--lr",
            "10",
            "--prompts-per-step",
            "4",
            "--group-size",
            "4",
            "--steps",
            "8",
            "--eval-prompts",
            "4",
            "--eval-samples",
            "2",
            "--save-every",
            "1",
            "--out-dir",
            str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("rlalgos: error:")]
    assert len(errors) == 1 and errors[0].startswith("rlalgos: error: collapse at step "), proc.stderr[-2000:]
    assert "-> lower the learning rate" in errors[0] and "KL" in errors[0] and "entropy" in errors[0]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    onset = int(errors[0].split("collapse at step ")[1].split(":")[0])
    assert rows[-1]["stopped"].startswith(f"collapse at step {onset}:")
    assert [r["step"] for r in rows] == list(range(rows[-1]["step"] + 1))  # every row kept
    import torch

    state = torch.load(out / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert state["step"] < onset  # the last checkpoint from before the collapse, not overwritten by the stop
    assert f"last checkpoint kept: step {state['step']}" in errors[0]


# --------------------------------------------------------------------------- #
# rlalgos diagnose
# --------------------------------------------------------------------------- #


def write_run(folder: Path, df: pd.DataFrame) -> Path:
    folder.mkdir(parents=True)
    with open(folder / "metrics.jsonl", "w") as f:
        for r in df.to_dict("records"):
            f.write(json.dumps({k: v for k, v in r.items() if not (isinstance(v, float) and math.isnan(v))}) + "\n")
    return folder


def test_diagnose_command_prints_the_report_and_saves_the_plot(tmp_path, capsys):
    from rlalgos.tools.cli import main

    crash = frame(
        8,
        reward_mean=[0.31] + [0.0] * 7,
        kl=[0.0] + [5.9] * 7,
        entropy=[0.14] + [0.0] * 7,
        zero_std_frac=[0.25] + [1.0] * 7,
    )
    run = write_run(tmp_path / "crash", crash)
    assert main(["diagnose", str(run)]) == 0
    text = capsys.readouterr().out
    assert "collapse at step 2: entropy 0.00, reward 0.00 (was 0.31), KL 5.9 -> lower the learning rate" in text
    assert "what followed from it: zero_signal" in text and (run / "doctor.png").is_file()
    assert main(["diagnose", str(write_run(tmp_path / "ok", HEALTHY)), "--plot", "none"]) == 0
    out = capsys.readouterr().out
    assert "healthy" in out and not (tmp_path / "ok" / "doctor.png").exists()


def test_diagnose_reads_trl_trainer_state_and_says_what_it_lacks(tmp_path):
    folder = tmp_path / "trl_output" / "checkpoint-6"
    folder.mkdir(parents=True)
    (folder / "trainer_state.json").write_text(TRL_STATE.read_text())
    src, findings, text = diagnose_path(tmp_path / "trl_output")
    assert src.kind == "TRL trainer_state.json" and src.df["step"].tolist() == list(range(7))
    assert (
        src.mapped["zero_std_frac"] == "frac_reward_zero_std"
        and src.mapped["truncated_frac"] == "completions/clipped_ratio"
    )
    assert (
        src.mapped["clip_frac"] == "clip_ratio/region_mean"
        and src.mapped["completion_len"] == "completions/mean_length"
    )
    assert "eval_accuracy" in src.lacks() and "reward_up_accuracy_down (no eval accuracy)" in text
    assert (folder / "doctor.png").is_file()
    named = read_source(folder / "trainer_state.json", accuracy_key="eval_rewards/correctness_reward/mean")
    assert named.df["eval_accuracy"].dropna().tolist() == [0.25, 0.25, 0.25]
    with pytest.raises(ValueError, match="is not logged"):
        read_source(folder / "trainer_state.json", accuracy_key="eval_accuracy")


def test_diagnose_reads_verl_and_trl_tensorboard_logs(tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    verl = SummaryWriter(str(tmp_path / "verl"))  # verl's tags, a run that collapses at step 3
    for s in range(1, 9):
        bad = s >= 3
        for tag, v in {
            "critic/score/mean": 0.0 if bad else 0.5,
            "actor/entropy": 0.0 if bad else 0.3,
            "actor/kl_loss": 4.0 if bad else 0.01,
            "actor/pg_clipfrac": 0.01,
            "actor/ppo_kl": 0.001,
            "response_length/mean": 512.0,
            "response_length/clip_ratio": 1.0 if bad else 0.02,
            "actor/grad_norm": 1.0,
        }.items():
            verl.add_scalar(tag, v, s)
    verl.add_scalar("val-core/gsm8k/acc/mean@1", 0.6, 0)
    verl.add_scalar("val-core/gsm8k/acc/mean@1", 0.0, 8)
    verl.close()
    src, findings, text = diagnose_path(tmp_path / "verl", plot=False)
    assert (
        src.kind == "TensorBoard events"
        and src.mapped["kl"] == "actor/kl_loss"
        and src.mapped["eval_accuracy"] == "val-core/gsm8k/acc/mean@1"
    )
    assert "ppo_kl" not in " ".join(src.mapped.values())  # the drift within an update is no KL to the reference
    assert findings[0].name == "collapse" and findings[0].step == 3
    assert "zero_signal (no share of all-equal groups)" in text  # verl does not log it

    trl = SummaryWriter(str(tmp_path / "trl"))  # TRL's layout: train/ and eval/ prefixes
    for s in range(1, 31):
        for tag, v in {
            "train/reward": 0.45,
            "train/frac_reward_zero_std": 0.95,
            "train/entropy": 0.2,
            "train/completions/clipped_ratio": 0.0,
        }.items():
            trl.add_scalar(tag, v, s)
    trl.add_scalar("eval/entropy", 0.2, 30)
    trl.close()
    src, findings, text = diagnose_path(tmp_path / "trl", plot=False)
    assert src.mapped["zero_std_frac"] == "frac_reward_zero_std" and src.mapped["eval_entropy"] == "eval_entropy"
    assert [f.name for f in findings] == ["zero_signal"]
    assert "kl_drift (no KL to the reference)" in text
