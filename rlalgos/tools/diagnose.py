"""``rlalgos diagnose RUN_DIR``: the run doctor (:mod:`rlalgos.engine.doctor`) applied to a finished run.

It reads three kinds of source and maps their metric names into the project's vocabulary
(:data:`NAMES`), then prints which signatures fire, with their evidence, and saves a small
plot of the signals they read next to the run (``doctor.png``):

* an rlalgos run folder (``metrics.jsonl``);
* a TRL output folder: ``trainer_state.json``'s ``log_history`` (in the folder, or in its
  latest ``checkpoint-N``);
* TensorBoard event files (``events.out.tfevents.*``, as verl, TRL and ``--report-to
  tensorboard`` write them), read with tensorboard's EventAccumulator.

What a source lacks is said, not guessed: a TRL run logs no eval accuracy (``--accuracy-key``
names a logged series to use as one, e.g. a correctness reward), verl logs no share of
all-equal groups, and TRL logs ``kl`` only with a KL term (beta > 0). A signature whose
signals are missing is listed as not checked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..engine import doctor
from ..engine.runs import load_metrics, run_config

NAMES = {
    "reward_mean": ("reward", "critic/score/mean"),
    "zero_std_frac": ("frac_reward_zero_std",),
    "entropy": ("entropy", "actor/entropy"),
    "kl": ("kl", "actor/kl_loss", "kl_loss", "actor/reward_kl_penalty"),
    "completion_len": ("completions/mean_length", "response_length/mean"),
    "truncated_frac": ("completions/clipped_ratio", "response_length/clip_ratio"),
    "clip_frac": ("clip_ratio/region_mean", "clip_ratio", "actor/pg_clipfrac"),
    "grad_norm": ("grad_norm", "actor/grad_norm"),
    "loss": ("loss", "actor/pg_loss"),
    "eval_entropy": ("eval_entropy",),
    "eval_accuracy": (),
}
"""The project's name <- the names TRL (1.16, ``GRPOTrainer``) and verl (0.9.1) log it under, first found wins.
TRL's ``kl`` and verl's ``actor/kl_loss`` / ``actor/reward_kl_penalty`` are KL to the reference; verl's
``actor/ppo_kl`` is the drift between the sampling and the updated policy within one update, not that, and is not mapped.
verl's validation accuracy (``val-core/<data source>/acc/mean@N``) is found by :data:`VERL_ACCURACY`."""
VERL_ACCURACY = re.compile(r"^val-core/.+/acc/mean@\d+$")
LACKS = {
    "reward_mean": "train reward",
    "zero_std_frac": "share of all-equal groups",
    "entropy": "entropy",
    "kl": "KL to the reference",
    "completion_len": "completion length",
    "truncated_frac": "share of cut-off answers",
    "clip_frac": "clip fraction",
    "eval_accuracy": "eval accuracy",
    "eval_entropy": "eval entropy",
}
NEEDS = {
    "nonfinite": (("loss", "grad_norm", "reward_mean", "kl", "entropy"),),
    "collapse": (("reward_mean",), ("kl", "entropy")),
    "zero_signal": (("zero_std_frac",),),
    "length_runaway": (("truncated_frac",),),
    "reward_up_accuracy_down": (("reward_mean",), ("eval_accuracy",)),
    "entropy_collapse": (("eval_entropy", "entropy"), ("eval_accuracy", "reward_mean")),
    "kl_drift": (("kl",),),
    "clip_saturation": (("clip_frac",),),
}
"""What each signature needs: every tuple must have one of its metrics logged."""
PLOT = "doctor.png"


@dataclass
class Source:
    """A run's metrics in the project's names (``df``), what the source was, and how its names were mapped."""

    path: Path
    kind: str  # "rlalgos run", "TRL trainer_state.json", "TensorBoard events"
    df: pd.DataFrame
    mapped: dict = field(default_factory=dict)  # project name -> source name
    max_new_tokens: int | None = None

    def lacks(self) -> list[str]:
        """The project metrics the doctor reads that this source does not log."""
        return [k for k in LACKS if k not in self.df or self.df[k].dropna().empty]

    def not_checked(self) -> dict[str, list[str]]:
        """Signatures that cannot be checked: name -> the missing metrics."""
        have = set(self.df.columns) - set(self.lacks())
        return {
            name: [LACKS.get(k, k) for k in group]
            for name, groups in NEEDS.items()
            for group in groups
            if not have & set(group)
        }


def _map(rows: pd.DataFrame, accuracy_key: str = "") -> tuple[pd.DataFrame, dict]:
    """Rename a foreign source's columns into the project's names (``step`` kept)."""
    out, mapped = pd.DataFrame({"step": rows["step"].astype(int)}), {}
    for ours, theirs in NAMES.items():
        for name in (
            ours,
            *theirs,
        ):  # a source already in the project's names (rlalgos' own TensorBoard) maps to itself
            if name in rows and rows[name].notna().any():
                out[ours], mapped[ours] = pd.to_numeric(rows[name], errors="coerce"), name
                break
    acc = [accuracy_key] if accuracy_key else [c for c in rows.columns if VERL_ACCURACY.match(c)]
    if acc and acc[0] in rows:
        out["eval_accuracy"], mapped["eval_accuracy"] = pd.to_numeric(rows[acc[0]], errors="coerce"), acc[0]
    elif accuracy_key:
        raise ValueError(
            f"--accuracy-key {accuracy_key!r} is not logged in this source; it logs {', '.join(sorted(c for c in rows.columns if c != 'step'))}"
        )
    return out.sort_values("step").reset_index(drop=True), mapped


def _merge_by_step(records: list[dict]) -> pd.DataFrame:
    """Log entries (dicts with a ``step``) merged into one row per step."""
    by_step: dict[int, dict] = {}
    for r in records:
        if "step" in r:
            by_step.setdefault(int(r["step"]), {"step": int(r["step"])}).update(
                {k: v for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            )
    return pd.DataFrame(sorted(by_step.values(), key=lambda r: r["step"]))


def read_trl(path: Path, accuracy_key: str = "") -> Source:
    """A TRL ``trainer_state.json`` (the file, or an output folder holding it or ``checkpoint-N`` folders)."""
    state = path if path.is_file() else path / "trainer_state.json"
    if not state.is_file():
        ckpts = sorted(
            path.glob("checkpoint-*/trainer_state.json"),
            key=lambda p: int(p.parent.name.split("-")[-1]) if p.parent.name.split("-")[-1].isdigit() else -1,
        )
        if not ckpts:
            raise FileNotFoundError(f"no trainer_state.json in {path} or its checkpoint-N folders")
        state = ckpts[-1]
    history = json.loads(state.read_text()).get("log_history", [])
    rows = _merge_by_step([r for r in history if "train_runtime" not in r])  # the run's closing summary is no step
    if rows.empty:
        raise ValueError(f"{state} has an empty log_history")
    df, mapped = _map(rows, accuracy_key)
    return Source(state, "TRL trainer_state.json", df, mapped)


def event_files(path: Path) -> list[Path]:
    return [path] if path.is_file() and "tfevents" in path.name else sorted(path.rglob("events.out.tfevents.*"))


def read_tensorboard(path: Path, accuracy_key: str = "") -> Source:
    """TensorBoard scalars (every event file under ``path``), tags ``train/x`` read as ``x`` and ``eval/x`` as ``eval_x`` (TRL's
    layout); verl's tags (``actor/entropy`` ...) as they are."""
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ModuleNotFoundError as e:
        raise ValueError(
            "reading TensorBoard logs needs the tensorboard package: pip install rlalgos[tensorboard]"
        ) from e
    records = []
    for f in event_files(path):
        acc = EventAccumulator(str(f), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags().get("scalars", []):
            name = (
                tag[len("train/") :]
                if tag.startswith("train/")
                else "eval_" + tag[len("eval/") :]
                if tag.startswith("eval/")
                else tag
            )
            records += [{"step": e.step, name: e.value} for e in acc.Scalars(tag)]
    rows = _merge_by_step(records)
    if rows.empty:
        raise ValueError(f"no scalars in the TensorBoard event files under {path}")
    df, mapped = _map(rows, accuracy_key)
    return Source(path, "TensorBoard events", df, mapped)


def read_source(path: str | Path, accuracy_key: str = "") -> Source:
    """Whatever ``path`` holds: an rlalgos run folder, a TRL output folder / trainer_state.json, or TensorBoard event files."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    if (path / "metrics.jsonl").is_file():
        df = load_metrics(path)
        if df.empty:
            raise ValueError(f"{path / 'metrics.jsonl'} holds no rows")
        cfg = run_config(df).get("train", {})
        if accuracy_key:
            if accuracy_key not in df:
                raise ValueError(f"--accuracy-key {accuracy_key!r} is not logged in {path / 'metrics.jsonl'}")
            df = df.assign(eval_accuracy=df[accuracy_key])
        return Source(path, "rlalgos run", df, {k: k for k in LACKS if k in df}, cfg.get("max_new_tokens") or None)
    if (
        (path.is_file() and path.suffix == ".json")
        or (path / "trainer_state.json").is_file()
        or (path.is_dir() and any(path.glob("checkpoint-*/trainer_state.json")))
    ):
        return read_trl(path, accuracy_key)
    if event_files(path):
        return read_tensorboard(path, accuracy_key)
    raise FileNotFoundError(
        f"{path} holds no metrics.jsonl (rlalgos), trainer_state.json (TRL) or events.out.tfevents.* (TensorBoard: verl, TRL)"
    )


def report(src: Source, findings: list[doctor.Finding], plot: Path | None = None) -> str:
    """The short report ``rlalgos diagnose`` prints."""
    steps = src.df["step"].max() if "step" in src.df and len(src.df) else 0
    lines = [f"{src.path}: {src.kind}, {len(src.df)} rows, up to step {int(steps)}"]
    if src.kind != "rlalgos run":
        lines.append("  names read: " + ", ".join(f"{ours} <- {theirs}" for ours, theirs in src.mapped.items()))
    if not findings:
        lines.append("healthy: none of the signatures it could check fired")
    primary, after = doctor.split(findings)
    for f in primary:
        lines.append(f"{f.line()}")
        lines.append(f"    likely cause: {f.cause}")
    if after:
        lines.append("  what followed from it: " + "; ".join(f"{f.name} from step {f.step} ({f.said})" for f in after))
    skipped = src.not_checked()
    if skipped:
        lines.append(
            "not checked (the source lacks them): "
            + "; ".join(f"{name} (no {' or '.join(missing)})" for name, missing in skipped.items())
        )
        if "eval_accuracy" in src.lacks():
            lines.append(
                "  (--accuracy-key NAME reads a logged series as eval accuracy, e.g. a correctness reward on the eval set)"
            )
    if plot:
        lines.append(f"plot: {plot}")
    return "\n".join(lines)


def plot_signals(src: Source, findings: list[doctor.Finding], out: Path) -> Path:
    """The signals the fired signatures read (or the main ones, for a healthy run), one panel each, a dashed line at
    each finding's first step; saved to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..workbook.plots import plot_runs

    wanted = [k for f in findings for k in doctor.SIGNALS[f.name]] or [
        "reward_mean",
        "eval_accuracy",
        "entropy",
        "kl",
        "zero_std_frac",
        "truncated_frac",
    ]
    keys = [k for k in dict.fromkeys(wanted) if k in src.df and src.df[k].notna().any()]
    df = src.df[[c for c in src.df.columns if c == "step" or c in keys]].apply(pd.to_numeric, errors="coerce")
    title = "; ".join(f"{f.name} from step {f.step}" for f in findings) or "healthy"
    fig = plot_runs(
        {src.path.name or str(src.path): [df]},
        keys=keys or ["reward_mean"],
        smooth=1,
        ncols=min(len(keys), 3) or 1,
        title=title,
    )
    for ax, key in zip(fig.axes, keys):
        for f in findings:
            if key in doctor.SIGNALS[f.name]:
                ax.axvline(f.step, color="crimson", ls="--", lw=1)
    fig.savefig(out, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return out


def diagnose_path(
    path: str | Path, plot: bool | str | Path = True, accuracy_key: str = ""
) -> tuple[Source, list[doctor.Finding], str]:
    """Read ``path``, run every signature, save the plot (``plot``: True = ``doctor.png`` next to the run, a path, or False),
    and return the source, the findings and the report text."""
    src = read_source(path, accuracy_key)
    findings = doctor.diagnose(src.df, src.max_new_tokens)
    out = None
    if plot:
        here = src.path if src.path.is_dir() else src.path.parent
        out = plot_signals(src, findings, Path(plot) if not isinstance(plot, bool) else here / PLOT)
    return src, findings, report(src, findings, out)
