"""Experiment trackers: ``--report-to tensorboard,wandb,trackio`` (TRL's flag).

``RUN_DIR/metrics.jsonl`` stays the source of truth: every row is written and
flushed there first, and only then sent to each tracker (its numeric values,
at its step, train and eval metrics alike). The run's config (``config.json``)
is sent once, when the run starts. A tracker that fails is never allowed to
stop training: it gets one warning on stderr and no more rows, and the jsonl
log goes on. Trackers are closed when the run ends, also when it fails or is
interrupted (Ctrl-C).

Where the data goes:

* ``tensorboard``: event files in ``RUN_DIR/tensorboard/`` (``tensorboard
  --logdir RUN_DIR``); a resumed run appends to the same folder and hides
  the steps it recomputes (a SessionLog.START at the first new step);
* ``wandb``: ``RUN_DIR/wandb/``; offline unless ``WANDB_MODE`` is set or an
  API key is found (``WANDB_API_KEY`` or ``wandb login``), so a run never
  waits at a login prompt (``wandb sync RUN_DIR/wandb/offline-run-*`` uploads
  it later); the run id is kept in ``RUN_DIR/trackers.json`` and a resumed run
  continues it (``resume="allow"``); project ``$WANDB_PROJECT`` or ``rlalgos``;
* ``trackio``: trackio's own local store (``$TRACKIO_DIR``, by default
  ``~/.cache/huggingface/trackio``), project ``rlalgos``; the run name is
  kept in ``RUN_DIR/trackers.json`` and a resumed run continues it.

Each tracker is an optional extra (``pip install rlalgos[tensorboard]``); a
missing one is a one-line ``ValueError`` from :func:`parse_report_to`, which
the CLI and the loop call with the config's checks, before anything runs.
Importing this module imports neither torch nor any tracker.
"""

from __future__ import annotations

import importlib.util
import json
import math
import netrc
import numbers
import os
import sys
import uuid
from pathlib import Path

TRACKERS = ("tensorboard", "wandb", "trackio")
"""The trackers ``report_to`` may name (each is also the name of its pip extra and of its package)."""
RUN_FOLDER_FILES = ("tensorboard", "wandb", "trackers.json")
"""What trackers write inside a run folder; :data:`rlalgos.engine.runs.RUN_FILES` lists each (``--overwrite`` removes them)."""
IDS_FILE = "trackers.json"
"""Per-run tracker ids (the wandb run id, the trackio run name) that a resumed run continues."""


def installed(name: str) -> bool:
    """Whether the package ``name`` can be imported (without importing it)."""
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def parse_report_to(text: str, check_installed: bool = True) -> list[str]:
    """``"tensorboard,wandb"`` -> ``["tensorboard", "wandb"]``; ``"none"`` or ``""`` -> ``[]``;
    ``"all"`` -> every tracker that is installed (TRL's meaning).

    Raises ``ValueError`` with one line for an unknown name or, with
    ``check_installed``, a tracker whose package is missing."""
    names = [n.strip().lower() for n in str(text).split(",") if n.strip()]
    if names in ([], ["none"]):
        return []
    if "all" in names or "none" in names:
        if len(names) > 1:
            raise ValueError(
                f"report_to {text!r}: 'all' and 'none' stand alone; give one of them or a list such as tensorboard,wandb"
            )
        return [n for n in TRACKERS if installed(n)]
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise ValueError(
            f"unknown report_to {', '.join(unknown)}; use none, all or a comma-separated list of {', '.join(TRACKERS)}"
        )
    names = list(dict.fromkeys(names))
    if check_installed:
        for n in names:
            if not installed(n):
                raise ValueError(
                    f"--report-to {n} needs the {n} package, which is not installed: pip install rlalgos[{n}]"
                )
    return names


def numeric(row: dict) -> dict[str, float]:
    """The row's numeric values (bools as 0/1) except ``step``; strings and the like are left out."""
    out = {}
    for k, v in row.items():
        if k != "step" and isinstance(v, numbers.Real):
            out[k] = float(v)
    return out


def flat_config(config: dict, prefix: str = "") -> dict:
    """``{"train": {"lr": 1}}`` -> ``{"train/lr": 1}``; values that are not str/int/float/bool become JSON text."""
    out = {}
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flat_config(v, key + "/"))
        elif isinstance(v, (str, bool, int, float)):
            out[key] = v
        else:
            out[key] = json.dumps(v, default=str)
    return out


def _warn(message: str) -> None:
    print(f"rlalgos: warning: {message}", file=sys.stderr)


def _read_ids(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / IDS_FILE).read_text())
    except (OSError, ValueError):
        return {}


def _write_ids(run_dir: Path, **ids) -> None:
    (run_dir / IDS_FILE).write_text(json.dumps({**_read_ids(run_dir), **ids}, indent=2))


def _run_name(run_dir: Path) -> str:
    """The run folder's last two parts (``cmp/grpo/seed0`` -> ``grpo/seed0``), the name shown in the tracker."""
    return "/".join(run_dir.resolve().parts[-2:])


# --------------------------------------------------------------------------- #
# The trackers: open in __init__, log(metrics, step), close(failed)
# --------------------------------------------------------------------------- #


class TensorBoard:
    name = "tensorboard"

    def __init__(self, run_dir: Path, config: dict, resume: bool, start: int):
        from torch.utils.tensorboard import SummaryWriter
        from torch.utils.tensorboard.summary import hparams

        # on resume the steps after the checkpoint are computed again: purge_step hides the old ones
        self.writer = SummaryWriter(log_dir=str(run_dir / "tensorboard"), purge_step=start + 1 if resume else None)
        if not resume:
            for summary in hparams(flat_config(config), {}):
                self.writer.file_writer.add_summary(summary)
            self.writer.add_text("config", "```\n" + json.dumps(config, indent=2, default=str) + "\n```", 0)
            self.writer.flush()

    def log(self, metrics: dict, step: int) -> None:
        for k, v in metrics.items():
            self.writer.add_scalar(k, v, step)
        self.writer.flush()  # a killed run keeps its events as metrics.jsonl keeps its rows

    def close(self, failed: bool) -> None:
        self.writer.close()


def wandb_api_key_found() -> bool:
    """``WANDB_API_KEY`` or a ``wandb login`` entry in ~/.netrc for the wandb host."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai").split("://")[-1].split("/")[0].split(":")[0]
    try:
        return netrc.netrc().authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


class Wandb:
    name = "wandb"

    def __init__(self, run_dir: Path, config: dict, resume: bool, start: int):
        import wandb

        run_id = _read_ids(run_dir).get("wandb") if resume else None
        if not run_id:
            run_id = uuid.uuid4().hex[:8]
            _write_ids(run_dir, wandb=run_id)
        mode = None if os.environ.get("WANDB_MODE") else "online" if wandb_api_key_found() else "offline"
        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT", "rlalgos"),
            name=_run_name(run_dir),
            id=run_id,
            resume="allow",
            dir=str(run_dir),
            config=config,
            mode=mode,
            reinit="create_new",
        )

    def log(self, metrics: dict, step: int) -> None:
        self.run.log(metrics, step=step)

    def close(self, failed: bool) -> None:
        self.run.finish(exit_code=1 if failed else 0)


class Trackio:
    name = "trackio"

    def __init__(self, run_dir: Path, config: dict, resume: bool, start: int):
        import trackio

        name = _read_ids(run_dir).get("trackio") if resume else None
        if not name:
            name = f"{_run_name(run_dir)}-{uuid.uuid4().hex[:6]}"
            _write_ids(run_dir, trackio=name)
        self.run = trackio.init(project="rlalgos", name=name, config=config, resume="allow")

    def log(self, metrics: dict, step: int) -> None:
        self.run.log({k: v for k, v in metrics.items() if math.isfinite(v)}, step=step)

    def close(self, failed: bool) -> None:
        self.run.finish()


CLASSES = {"tensorboard": TensorBoard, "wandb": Wandb, "trackio": Trackio}


class TrackedLog:
    """The metrics log plus its trackers: ``write(row)`` appends the row to the
    jsonl log first, then sends its numbers to each tracker; ``close()`` closes
    the log and every tracker. A tracker that raises is warned about once and
    dropped; the log and the run go on."""

    def __init__(self, log, trackers: list):
        self.log, self.trackers = log, list(trackers)

    def write(self, row: dict) -> None:
        self.log.write(row)
        if not self.trackers:
            return
        metrics, step = numeric(row), int(row["step"])
        for t in list(self.trackers):
            try:
                t.log(metrics, step)
            except Exception as e:  # a tracker never stops training
                self.trackers.remove(t)
                _warn(
                    f"{t.name} failed at step {step} ({type(e).__name__}: {e}); it gets no more rows, metrics.jsonl keeps every row"
                )
                try:
                    t.close(True)  # release what it holds; it has had its one warning
                except Exception:
                    pass

    def close(self) -> None:
        failed = sys.exc_info()[0] is not None  # closed while the run is failing or interrupted
        try:
            self.log.close()
        finally:
            for t in self.trackers:
                try:
                    t.close(failed)
                except Exception as e:
                    _warn(f"{t.name} failed to close ({type(e).__name__}: {e}); metrics.jsonl keeps every row")
            self.trackers = []


def with_trackers(log, report_to: str, run_dir: str | Path, resume: bool = False, start: int = 0):
    """``log`` with the trackers ``report_to`` names opened for ``run_dir`` (its
    ``config.json`` is sent as the run's config); ``log`` itself when it names none.
    ``resume``/``start``: the run continues after step ``start`` (same tracker run)."""
    names = parse_report_to(report_to)
    if not names:
        return log
    run_dir = Path(run_dir)
    try:
        config = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        config = {}
    trackers = []
    for n in names:
        try:
            trackers.append(CLASSES[n](run_dir, config, resume, start))
        except Exception as e:  # e.g. no network for an online wandb: train anyway
            _warn(
                f"{n} could not start ({type(e).__name__}: {e}); the run goes on without it, metrics.jsonl has every row"
            )
    return TrackedLog(log, trackers)
