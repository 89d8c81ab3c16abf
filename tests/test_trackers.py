"""--report-to: every metrics row also goes to TensorBoard / wandb / trackio, while
metrics.jsonl stays the record.

* tensorboard: the event file's scalars are the metrics.jsonl rows, key by key and
  step by step; an interrupted run resumed continues the same folder, one value per step;
* wandb (offline, when installed): the same rows in the offline run file, one run id across a resume;
* a missing package is one line at config time; ``none`` writes nothing extra;
* a tracker that raises (at start, mid-run, at close) never stops training or changes a row.
"""

from __future__ import annotations

import glob
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import rlalgos.train as train_module
from rlalgos.engine import trackers
from rlalgos.engine.runs import RUN_FILES
from rlalgos.train import TrainConfig, load_metrics, resume, train

TIMING = ("seconds", "tokens_per_second")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _cfg(tmp_path, tiny_dir, name="run", **kw):
    base = dict(
        algo="grpo",
        model=str(tiny_dir),
        steps=3,
        prompts_per_step=2,
        group_size=2,
        max_new_tokens=6,
        eval_every=2,
        eval_prompts=2,
        eval_samples=1,
        out_dir=str(tmp_path / name),
        progress=False,
        seed=1,
    )
    return TrainConfig(**{**base, **kw})


def _numbers(rows):
    """{(key, step): value} for every numeric value of the metrics rows (what a tracker gets)."""
    return {(k, r["step"]): v for r in rows for k, v in trackers.numeric(r).items()}


def _same_rows(a, b):
    keys = [k for k in a.columns if not k.endswith(TIMING)]
    return list(a.columns) == list(b.columns) and a[keys].equals(b[keys])


def _tensorboard_scalars(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags()["scalars"]:
        for e in acc.Scalars(tag):
            assert (tag, e.step) not in out, f"two values for {tag} at step {e.step}"
            out[(tag, e.step)] = e.value
    return out, acc


def _interrupted_run(monkeypatch, cfg, at_step=3) -> Path:
    """Train ``cfg`` and press Ctrl-C while it saves its checkpoint at ``at_step``: that step's
    row is written, the last checkpoint is an earlier one. Returns the run folder."""
    save = train_module.save_run_checkpoint

    def interrupted(run_dir, policy, tokenizer, algo, step, prompts):
        if step == at_step:
            raise KeyboardInterrupt
        return save(run_dir, policy, tokenizer, algo, step, prompts)

    monkeypatch.setattr(train_module, "save_run_checkpoint", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(cfg)
    monkeypatch.setattr(train_module, "save_run_checkpoint", save)
    return Path(cfg.out_dir)


# --------------------------------------------------------------------------- #
# The flag
# --------------------------------------------------------------------------- #


def test_report_to_parses_like_trl(monkeypatch):
    assert trackers.parse_report_to("none") == trackers.parse_report_to("") == []
    assert trackers.parse_report_to("tensorboard") == ["tensorboard"]
    monkeypatch.setitem(sys.modules, "wandb", None)  # None in sys.modules: not importable
    monkeypatch.setitem(sys.modules, "trackio", None)
    assert trackers.parse_report_to("all") == ["tensorboard"]  # every tracker installed
    assert trackers.parse_report_to(" Tensorboard , tensorboard") == ["tensorboard"]
    assert trackers.parse_report_to("wandb,trackio", check_installed=False) == ["wandb", "trackio"]
    for bad, needle in [
        ("mlflow", "unknown report_to mlflow"),
        ("all,wandb", "stand alone"),
        ("wandb", "pip install rlalgos[wandb]"),
    ]:
        with pytest.raises(ValueError, match=needle.replace("[", r"\[")):
            trackers.parse_report_to(bad)
    assert set(trackers.RUN_FOLDER_FILES) <= set(RUN_FILES)  # --overwrite removes what trackers write, and only that


def test_the_flag_is_a_train_option():
    from rlalgos.tools.cli import parse

    _, args = parse(["train", "grpo", "--report-to", "tensorboard,wandb"])
    assert args.run.report_to == "tensorboard,wandb"
    assert parse(["train", "grpo"])[1].run.report_to == "none"


@pytest.mark.parametrize(
    "flag,needle",
    [
        ("trackio", "needs the trackio package, which is not installed: pip install rlalgos[trackio]"),
        ("tensorboard,nope", "unknown report_to nope"),
    ],
    ids=["missing-package", "unknown-name"],
)
def test_a_missing_tracker_is_one_line_before_anything_runs(tmp_path, flag, needle):
    out = tmp_path / "run"
    code = (
        "import sys; sys.modules['trackio'] = None; from rlalgos.tools.cli import main; rc = main(sys.argv[1:]); "
        "assert 'torch' not in sys.modules, 'torch was imported before the config was checked'; sys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "train", "grpo", "--report-to", flag, "--out-dir", str(out)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    err = proc.stderr.strip()
    assert proc.returncode == 2 and needle in err and "\n" not in err, (proc.returncode, err[-2000:])
    assert not out.exists()


# --------------------------------------------------------------------------- #
# TensorBoard
# --------------------------------------------------------------------------- #


def test_tensorboard_holds_every_numeric_value_of_metrics_jsonl(tmp_path, tiny_dir):
    pytest.importorskip("tensorboard", reason="needs the tensorboard extra: pip install rlalgos[tensorboard]")
    df = train(_cfg(tmp_path, tiny_dir, report_to="tensorboard"))
    run = Path(df.run_dir)
    rows = load_metrics(run).to_dict("records")
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    expected = _numbers(_jsonl(run))
    got, acc = _tensorboard_scalars(run / "tensorboard")
    assert set(got) == set(expected)  # every numeric key at every step it was logged, train and eval, and nothing else
    assert any(k.startswith("eval_") for k, _ in got) and any(s == 0 for _, s in got)
    for key, value in expected.items():  # TensorBoard stores float32: equal after that rounding
        assert got[key] == np.float32(value) or (np.isnan(value) and np.isnan(got[key])), key
    assert set(acc.PluginTagToContent("hparams")) == {
        "_hparams_/experiment",
        "_hparams_/session_start_info",
        "_hparams_/session_end_info",
    }
    assert "config/text_summary" in acc.Tags()["tensors"]  # the config, sent once
    assert sorted(p.name for p in run.iterdir()) == [
        "checkpoint",
        "config.json",
        "metrics.jsonl",
        "samples.jsonl",
        "tensorboard",
    ]


def _jsonl(run):
    return [json.loads(line) for line in (Path(run) / "metrics.jsonl").read_text().splitlines()]


def test_report_to_none_writes_nothing_extra_and_trackers_change_no_number(tmp_path, tiny_dir):
    pytest.importorskip("tensorboard", reason="needs the tensorboard extra: pip install rlalgos[tensorboard]")
    plain = train(_cfg(tmp_path, tiny_dir, "plain"))
    tracked = train(_cfg(tmp_path, tiny_dir, "tracked", report_to="tensorboard"))
    assert sorted(p.name for p in (tmp_path / "plain").iterdir()) == [
        "checkpoint",
        "config.json",
        "metrics.jsonl",
        "samples.jsonl",
    ]
    assert _same_rows(plain, tracked)


def test_interrupted_then_resumed_run_continues_the_same_tensorboard_folder(tmp_path, tiny_dir, monkeypatch):
    """Ctrl-C after step 3's row (last checkpoint: step 2): the writer is closed with step 3 in it;
    resume recomputes step 3, and TensorBoard shows one value per step, the resumed one."""
    pytest.importorskip("tensorboard", reason="needs the tensorboard extra: pip install rlalgos[tensorboard]")
    run = _interrupted_run(monkeypatch, _cfg(tmp_path, tiny_dir, report_to="tensorboard", save_every=2))
    got, _ = _tensorboard_scalars(run / "tensorboard")
    assert {s for _, s in got} == {0, 1, 2, 3}  # closed on the interrupt: nothing lost
    resume(run)
    files = sorted((run / "tensorboard").glob("events.out.tfevents.*"))
    assert len(files) == 2 and not [
        p for p in (run / "tensorboard").iterdir() if p.is_dir()
    ]  # the same folder, a second event file
    got, _ = _tensorboard_scalars(run / "tensorboard")  # asserts one value per (key, step)
    expected = _numbers(_jsonl(run))
    assert set(got) == set(expected)
    assert all(got[k] == np.float32(v) or np.isnan(v) for k, v in expected.items())


def test_overwrite_removes_the_old_event_files_and_keeps_yours(tmp_path, tiny_dir):
    pytest.importorskip("tensorboard", reason="needs the tensorboard extra: pip install rlalgos[tensorboard]")
    train(_cfg(tmp_path, tiny_dir, report_to="tensorboard"))
    run = tmp_path / "run"
    (run / "notes.txt").write_text("keep me")
    train(_cfg(tmp_path, tiny_dir, steps=1, overwrite=True))  # the new run reports to nothing
    assert sorted(p.name for p in run.iterdir()) == [
        "checkpoint",
        "config.json",
        "metrics.jsonl",
        "notes.txt",
        "samples.jsonl",
    ]
    train(_cfg(tmp_path, tiny_dir, steps=2, overwrite=True, report_to="tensorboard"))
    got, _ = _tensorboard_scalars(run / "tensorboard")
    assert {s for _, s in got} == {0, 1, 2}  # no event of the replaced run is left to mix in


# --------------------------------------------------------------------------- #
# A tracker that fails
# --------------------------------------------------------------------------- #


class Flaky:
    """A tracker that raises where it is told to."""

    name = "tensorboard"
    fail_at: dict = {}
    logged: list = []
    closed: list = []

    def __init__(self, run_dir, config, resume, start):
        if self.fail_at.get("init"):
            raise ConnectionError("tracker server unreachable")
        assert config["train"]["report_to"] == "tensorboard"

    def log(self, metrics, step):
        if step == self.fail_at.get("step"):
            raise OSError("disk full")
        Flaky.logged.append(step)

    def close(self, failed):
        Flaky.closed.append(failed)
        if self.fail_at.get("close"):
            raise RuntimeError("cannot flush")


@pytest.mark.parametrize(
    "fail_at,warning,logged,closed",
    [
        ({"step": 2}, "tensorboard failed at step 2 (OSError: disk full); it gets no more rows", [0, 1], [True]),
        ({"init": True}, "tensorboard could not start (ConnectionError: tracker server unreachable)", [], []),
        ({"close": True}, "tensorboard failed to close (RuntimeError: cannot flush)", [0, 1, 2, 3], [False]),
    ],
    ids=["mid-run", "at-start", "at-close"],
)
def test_a_tracker_that_raises_leaves_training_and_metrics_jsonl_intact(
    tmp_path, tiny_dir, monkeypatch, capsys, fail_at, warning, logged, closed
):
    plain = train(_cfg(tmp_path, tiny_dir, "plain"))
    monkeypatch.setitem(trackers.CLASSES, "tensorboard", Flaky)
    monkeypatch.setattr(Flaky, "fail_at", fail_at)
    monkeypatch.setattr(Flaky, "logged", [])
    monkeypatch.setattr(Flaky, "closed", [])
    capsys.readouterr()
    tracked = train(_cfg(tmp_path, tiny_dir, "tracked", report_to="tensorboard"))
    err = [line for line in capsys.readouterr().err.splitlines() if "rlalgos: warning" in line]
    assert len(err) == 1 and warning in err[0] and "metrics.jsonl" in err[0], err
    assert _same_rows(plain, tracked) and _same_rows(plain, load_metrics(tmp_path / "tracked"))
    assert Flaky.logged == logged  # no row after its failure
    assert Flaky.closed == closed  # a tracker that failed mid-run is closed too, without a second warning


def test_trackers_are_closed_when_the_run_is_interrupted(tmp_path, tiny_dir, monkeypatch):
    monkeypatch.setitem(trackers.CLASSES, "tensorboard", Flaky)
    for name, value in (("fail_at", {}), ("logged", []), ("closed", [])):
        monkeypatch.setattr(Flaky, name, value)
    _interrupted_run(monkeypatch, _cfg(tmp_path, tiny_dir, report_to="tensorboard", save_every=2))
    assert Flaky.logged == [0, 1, 2, 3] and Flaky.closed == [True]  # every row sent, then closed as failed
    train(_cfg(tmp_path, tiny_dir, "done", report_to="tensorboard"))
    assert Flaky.closed == [True, False]


# --------------------------------------------------------------------------- #
# wandb, offline
# --------------------------------------------------------------------------- #


def _wandb_records(path, timeout=30.0):
    """The protobuf records of a finished offline ``run-ID.wandb`` file (a LevelDB-style log: 7-byte
    header, 32 KiB blocks, each record in chunks with a 7-byte header: crc, length, type).
    wandb's service process may write the last records just after ``run.finish()`` returns:
    read again until the exit record is there."""
    deadline = time.time() + timeout
    while True:
        out = _read_wandb_file(path)
        if any(r.WhichOneof("record_type") == "exit" for r in out) or time.time() > deadline:
            return out
        time.sleep(0.2)


def _read_wandb_file(path):
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B"
    pos, out, buf = 7, [], b""
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # the block's tail is padding
            pos += 32768 - pos % 32768
            continue
        _, n, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if (n == 0 and kind == 0) or pos + 7 + n > len(data):  # the end, or a record still being written
            break
        buf += data[pos + 7 : pos + 7 + n]
        pos += 7 + n
        if kind in (1, 4):  # FULL or LAST
            rec = pb.Record()
            rec.ParseFromString(buf)
            out.append(rec)
            buf = b""
    return out


def _wandb_history(records):
    rows = {}
    for r in records:
        if r.WhichOneof("record_type") == "history":
            items = {(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in r.history.item}
            rows[items.pop("_step")] = {k: v for k, v in items.items() if not k.startswith("_")}
    return rows


@pytest.fixture
def wandb_offline(tmp_path, monkeypatch):
    wandb = pytest.importorskip(
        "wandb", reason="wandb is not installed here (pip install rlalgos[wandb]); the offline test needs it"
    )
    for var in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_PROJECT", "WANDB_DIR", "WANDB_RUN_ID", "WANDB_RESUME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.netrc login: offline
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB__DISABLE_STATS", "true")  # no system-metrics sampling on the test machine
    return wandb


def test_wandb_offline_gets_every_row_and_a_resume_continues_the_same_run(
    tmp_path, tiny_dir, monkeypatch, wandb_offline
):
    run = _interrupted_run(monkeypatch, _cfg(tmp_path, tiny_dir, report_to="wandb", save_every=2))
    run_id = json.loads((run / "trackers.json").read_text())["wandb"]
    first = _wandb_records(glob.glob(str(run / "wandb" / f"offline-run-*-{run_id}" / f"run-{run_id}.wandb"))[0])
    exits = [r.exit.exit_code for r in first if r.WhichOneof("record_type") == "exit"]
    assert exits == [1]  # finished on the interrupt, marked failed
    assert sorted(_wandb_history(first)) == [0, 1, 2, 3]
    resume(run)
    files = sorted(glob.glob(str(run / "wandb" / "offline-run-*" / "run-*.wandb")))
    assert len(files) == 2 and all(
        f.endswith(f"run-{run_id}.wandb") for f in files
    )  # one run id: wandb sync uploads them as one run
    second = _wandb_records(files[1])
    assert [r.exit.exit_code for r in second if r.WhichOneof("record_type") == "exit"] == [0]
    rows = _jsonl(run)
    history = {**_wandb_history(first), **_wandb_history(second)}
    assert sorted(_wandb_history(second)) == [3]
    for r in rows:
        want = trackers.numeric(r)
        got = history[r["step"]]
        assert set(got) == set(want), r["step"]
        assert all(
            got[k] == v or (v != v and (got[k] in ("NaN", None) or got[k] != got[k])) for k, v in want.items()
        ), r["step"]
    config = [r.run.config for r in first if r.WhichOneof("record_type") == "run"][0]
    assert json.loads({u.key: u.value_json for u in config.update}["train"])["report_to"] == "wandb"
