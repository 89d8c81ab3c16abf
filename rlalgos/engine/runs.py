"""Run folders: what may be written where, checkpoints that survive a kill, and
the append-only logs.

The folder rule: nothing outside a run's own files is ever deleted.

* A new run goes into a folder that does not exist or is empty.
* A folder that holds anything is refused, with one line naming ``rlalgos resume``
  and ``--overwrite``.
* ``overwrite=True`` replaces a folder only if it is recognisably a run folder
  (it holds ``config.json`` or ``metrics.jsonl``), and then removes only the
  run's own files (:data:`RUN_FILES`); anything else in it stays. The removal
  happens after the model, task and reward functions have loaded and been
  checked (:func:`clear_run_dir` is called by the loop at that point), so a run
  that fails to start leaves the folder as it was.

Checkpoints are written to ``checkpoint.tmp`` and swapped in with renames, so a
kill at any moment leaves a complete checkpoint under one of three names;
:func:`recover_checkpoint` finds it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import torch

from ..config import AlgoConfig, TrainConfig, algorithm_config

RUN_FILES = (
    "config.json",
    "metrics.jsonl",
    "samples.jsonl",
    "metrics.jsonl.tmp",
    "samples.jsonl.tmp",
    "checkpoint",
    "checkpoint.tmp",
    "checkpoint.old",
    "tensorboard",
    "wandb",
    "trackers.json",  # these three: rlalgos.engine.trackers.RUN_FOLDER_FILES
    "doctor.png",
)  # rlalgos diagnose's plot
"""Everything a run writes into its folder (and all that ``overwrite`` may remove)."""

STATE_FILE = "trainer_state.pt"


def is_run_dir(path: Path) -> bool:
    """A folder rlalgos wrote: it holds ``config.json`` or ``metrics.jsonl``."""
    return (path / "config.json").is_file() or (path / "metrics.jsonl").is_file()


def check_run_dir(run_dir: str | Path, overwrite: bool) -> bool:
    """Decide, before anything is written, whether a new run may use ``run_dir``.

    Returns True when the folder holds an old run that :func:`clear_run_dir`
    must remove once the new run has started; raises ``FileExistsError`` with
    one line saying what to do otherwise. Never changes anything on disk.
    """
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise FileExistsError(f"{run_dir} is a file, not a folder; pick another --out-dir")
    if not run_dir.exists() or not any(run_dir.iterdir()):
        return False
    if not is_run_dir(run_dir):
        raise FileExistsError(
            f"{run_dir} is not empty and is not a run folder (no config.json or metrics.jsonl); rlalgos never deletes it: pick another --out-dir"
        )
    if not overwrite:
        raise FileExistsError(
            f"{run_dir} already holds a run; continue it with `rlalgos resume {run_dir}`, replace it with --overwrite, or pick another --out-dir"
        )
    return True


def check_output_files(paths, overwrite: bool) -> None:
    """A command's own output files (compare's summary.csv, data's splits) are
    replaced only with ``overwrite``; raise ``FileExistsError`` for the first that exists."""
    for p in map(Path, paths):
        if p.exists() and not overwrite:
            raise FileExistsError(f"{p} exists; replace it with --overwrite or pick another --out-dir")


def check_model_dir(out_dir: str | Path, overwrite: bool) -> None:
    """The folder rule for commands that ``save_pretrained`` a model (``sft``, ``rm``):
    a new or empty folder, or, with ``overwrite``, a folder that already holds a
    model (its config.json; save_pretrained replaces those files, nothing else)."""
    out = Path(out_dir)
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return
    if not (out / "config.json").is_file():
        raise FileExistsError(
            f"{out} is not empty and holds no model (no config.json); rlalgos never deletes it: pick another --out-dir"
        )
    if not overwrite:
        raise FileExistsError(f"{out} already holds a model; replace it with --overwrite or pick another --out-dir")


def clear_run_dir(run_dir: str | Path, names=RUN_FILES) -> None:
    """Remove a run's own files (:data:`RUN_FILES`, or a command's own ``names``) from ``run_dir``; leave everything else."""
    run_dir = Path(run_dir)
    for name in names:
        p = run_dir / name
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()


# --------------------------------------------------------------------------- #
# Checkpoints
# --------------------------------------------------------------------------- #


def _complete(path: Path) -> bool:
    """A checkpoint folder is complete once its trainer state is in place (written last)."""
    return (path / STATE_FILE).is_file()


def save_checkpoint(run_dir: Path, policy, tokenizer, state: dict) -> Path:
    """Model + tokenizer (``save_pretrained``) and the trainer ``state`` dict.

    Written to ``checkpoint.tmp`` (the state file last, through its own rename),
    then swapped in: ``checkpoint -> checkpoint.old``, ``checkpoint.tmp ->
    checkpoint``, ``checkpoint.old`` removed. A kill at any point leaves a
    complete checkpoint in ``checkpoint``, ``checkpoint.tmp`` or ``checkpoint.old``.
    """
    run_dir = Path(run_dir)
    final, tmp, old = run_dir / "checkpoint", run_dir / "checkpoint.tmp", run_dir / "checkpoint.old"
    shutil.rmtree(tmp, ignore_errors=True)
    policy.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    torch.save(state, tmp / (STATE_FILE + ".part"))
    os.replace(tmp / (STATE_FILE + ".part"), tmp / STATE_FILE)
    if final.exists():
        shutil.rmtree(old, ignore_errors=True)
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def recover_checkpoint(run_dir: str | Path) -> Path:
    """The run's last complete checkpoint, after putting it back in place if a
    kill interrupted :func:`save_checkpoint` (newest first: ``checkpoint``, then
    a finished ``checkpoint.tmp``, then ``checkpoint.old``)."""
    run_dir = Path(run_dir)
    final, tmp, old = run_dir / "checkpoint", run_dir / "checkpoint.tmp", run_dir / "checkpoint.old"
    if not _complete(final):
        for candidate in (tmp, old):
            if _complete(candidate):
                if final.exists():
                    shutil.rmtree(final)
                candidate.rename(final)
                break
    if not _complete(final):
        raise FileNotFoundError(
            f"no checkpoint in {run_dir} (expected {final / STATE_FILE}); "
            f"the run was stopped before its first checkpoint: start it again with --overwrite"
        )
    for leftover in (tmp, old):
        shutil.rmtree(leftover, ignore_errors=True)
    return final


def load_checkpoint_state(run_dir: str | Path) -> dict:
    """The trainer state of the run's last complete checkpoint (recovered if needed)."""
    path = recover_checkpoint(run_dir) / STATE_FILE
    try:
        return torch.load(path, weights_only=False)
    except Exception as e:
        raise ValueError(
            f"checkpoint {path} is corrupt ({type(e).__name__}); start the run again with --overwrite"
        ) from None


# --------------------------------------------------------------------------- #
# Logs
# --------------------------------------------------------------------------- #


class JsonlLog:
    """Append-only JSONL file, flushed after every row."""

    def __init__(self, path: Path, truncate: bool = False):
        self.path = Path(path)
        self.f = open(self.path, "w" if truncate else "a")

    def write(self, row: dict) -> None:
        self.f.write(json.dumps(row, default=float) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


def read_rows(path: Path, max_step: float = float("inf")) -> list[dict]:
    """Rows of a JSONL log up to ``max_step`` (a torn last line from a kill is dropped)."""
    rows = []
    if Path(path).exists():
        for line in Path(path).read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if row.get("step", 0) <= max_step:
                rows.append(row)
    return rows


def rewrite_rows(path: Path, rows: list[dict]) -> None:
    """Replace a JSONL log with ``rows`` atomically (a kill leaves the old or the new file, never half)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        for r in rows:
            f.write(json.dumps(r, default=float) + "\n")
    os.replace(tmp, path)


class RunMetrics(pd.DataFrame):
    """A run's metrics rows (one per step, pandas) and ``run_dir``, the run folder they
    belong to (where plots and statistics find its ``config.json``). Slices and copies
    keep ``run_dir``; a plain DataFrame has none."""

    _metadata = ["run_dir"]

    @property
    def _constructor(self):
        return RunMetrics


def run_metrics(rows: list[dict], run_dir: str | Path) -> RunMetrics:
    """``rows`` as the :class:`RunMetrics` of the run in ``run_dir``."""
    df = RunMetrics(rows)
    df.run_dir = str(run_dir)
    return df


def run_dir_of(df) -> Path | None:
    """The run folder of a metrics table (:class:`RunMetrics`), or None for a plain DataFrame."""
    d = getattr(df, "run_dir", None)
    return Path(d) if isinstance(d, (str, Path)) else None


def run_config(df: RunMetrics) -> dict:
    """The run's config.json (``{"train": ..., "algo": ...}``), or {} when the run folder has none."""
    run_dir = run_dir_of(df)
    path = run_dir / "config.json" if run_dir else None
    return json.loads(path.read_text()) if path and path.exists() else {}


def load_metrics(run_dir: str | Path) -> RunMetrics:
    """A run folder's ``metrics.jsonl`` as :class:`RunMetrics`."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found; is {run_dir} a run folder?")
    return run_metrics(read_rows(path), run_dir)


def load_run_config(run_dir: str | Path) -> tuple[TrainConfig, AlgoConfig]:
    """The (TrainConfig, algorithm config) a run folder was started with."""
    path = Path(run_dir) / "config.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found; is {run_dir} a run folder?")
    saved = json.loads(path.read_text())
    cfg = TrainConfig(**saved["train"])
    return cfg, algorithm_config(cfg.algo).config(**saved["algo"])


IGNORED = ("out_dir", "overwrite", "progress")  # settings that do not change a run's numbers


def finished(cfg: TrainConfig, algo_cfg: AlgoConfig) -> bool:
    """Whether ``cfg.out_dir`` already holds this exact run, finished: its config.json has
    the same settings (all but :data:`IGNORED`) and its last metrics row is step ``cfg.steps``."""
    from dataclasses import asdict, fields

    try:
        df = load_metrics(cfg.out_dir)
    except FileNotFoundError:
        return False
    saved = run_config(df)

    def same(old: dict, new) -> bool:  # an option newer than the saved run counts as its default
        defaults = {f.name: f.default for f in fields(new)}
        return all(old.get(k, defaults[k]) == v for k, v in asdict(new).items() if k not in IGNORED)

    return (
        bool(saved)
        and same(saved.get("train", {}), cfg)
        and same(saved.get("algo", {}), algo_cfg)
        and int(df["step"].max()) == cfg.steps
    )
