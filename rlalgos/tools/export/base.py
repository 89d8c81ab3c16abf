"""What every engine module of the export builds on: the run being exported (:class:`Ctx`), what a
conversion gives (:class:`Mapped`), an engine's name for a field (:class:`Name`), the engine itself
(:class:`Engine`), and the conversions and writing helpers more than one engine shares.

Imports neither torch nor transformers, nor any engine.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ... import tasks as tasks_module
from ...config import BASE_MODEL_DIR, AlgoConfig, TrainConfig
from ...tasks import get_task

REAL_SCALE_LR = 1e-6
"""The learning rate TRL's GRPOConfig and verl's actor default to (billion-parameter models)."""


@dataclass
class Ctx:
    """The run being exported and the facts the conversions need."""

    cfg: TrainConfig
    algo: AlgoConfig
    gpus: int = 1
    max_new_tokens: int = 48
    rule_rewards: list = field(default_factory=list)
    """(name, weight) of the task's reward functions, rule_weight applied."""
    max_prompt_chars: int = 0
    train_rows: int = 1
    model_ref: str = ""
    """How the export refers to the model: ``model`` (the copy inside the folder), an absolute path or a hub name."""
    chat_template: bool = True
    """Whether the model's tokenizer has a chat template (verl applies one to every prompt)."""
    task: object = None
    """The :class:`rlalgos.tasks.Task` (its rows are written into the export)."""

    @property
    def optimizer_steps_per_rollout(self) -> int:
        return self.algo.epochs * self.algo.minibatches

    def has(self, name: str) -> bool:
        return hasattr(self.cfg, name) or hasattr(self.algo, name)

    def value(self, name: str):
        return getattr(self.cfg, name) if hasattr(self.cfg, name) else getattr(self.algo, name)

    def per_gpu(self, sequences: int) -> tuple[int, int]:
        """A minibatch of ``sequences`` split over the GPUs: (sequences per GPU, per forward/backward pass)."""
        if sequences % self.gpus:
            raise ValueError(
                f"a minibatch of {sequences} sequences does not split over {self.gpus} GPUs; pick --gpus dividing it"
            )
        per_gpu, micro = sequences // self.gpus, self.algo.micro_batch_size
        if not 0 < micro < per_gpu:
            return per_gpu, per_gpu
        if per_gpu % micro:
            raise ValueError(
                f"micro_batch_size {micro} does not divide the {per_gpu} sequences per GPU of a minibatch; pick a divisor"
            )
        return per_gpu, micro


@dataclass
class Mapped:
    """What one engine's conversion gives for this run: ``values`` to set, and a ``note``
    saying what differs; ``ok=False`` when the engine has no equivalent."""

    values: dict = field(default_factory=dict)
    note: str = ""
    ok: bool = True


def same(**values) -> Mapped:
    return Mapped(values)


def differs(note: str, **values) -> Mapped:
    return Mapped(values, note)


def missing(note: str, **values) -> Mapped:
    return Mapped(values, note, ok=False)


@dataclass(frozen=True)
class Name:
    """What one engine calls one rlalgos field (``prose``, the mapping table's cell; '' = nothing)
    and how the run's value converts; ``convert`` None = no equivalent (the field's note says why)."""

    prose: str
    convert: Callable[[Ctx], Mapped] | None = None


@dataclass
class Mapping:
    """The table applied to one run for one engine: the values, and the notes with the run's values."""

    values: dict
    notes: list[str]
    """Settings with no equivalent (``no equivalent:``) and settings mapped with a difference."""
    table: list[tuple[str, str, str]]
    """(rlalgos setting = value, engine fields = values, note) for the export's README."""


@dataclass(frozen=True)
class Engine:
    """One export target, declared by its module as ``ENGINE`` (see docs/engines.md, "Adding an engine")."""

    name: str
    """What ``rlalgos export --to`` takes."""
    title: str
    """Its name in prose (``TRL``)."""
    checked_against: str
    """The version whose field names the module was written against."""
    summary: str
    """One line for ``rlalgos export --help``: what the export runs."""
    header: str
    """Its column's header in the mapping table."""
    names: dict[str, Name]
    """One entry per field of :data:`rlalgos.tools.export.fields.FIELDS` (tests/test_export.py checks it)."""
    write: Callable[[Path, Ctx, Mapping, list[dict], list[dict]], tuple[str, list[str]]]
    """``(folder, ctx, mapping, train rows, test rows) -> (the command run.sh runs, settings away from the
    engine's defaults)``: writes the engine's own files (rewards.py, rlalgos_tasks.py, README.md are shared)."""
    own_files: tuple[str, ...]
    """The files the writer adds to the shared ones (``--overwrite`` removes them, and only them)."""
    needs: tuple[str, str]
    """(module, pip package) the writer imports."""
    install: str
    """The README's install line."""
    files: str
    """The README's list of the engine's files."""
    check: Callable[[Ctx], None] = lambda c: None
    """Raises a one-line ``ValueError`` for a run the engine cannot take (before anything is written)."""
    abbreviations: tuple[tuple[str, str], ...] = ()
    """(long, short) prefixes the mapping table shortens."""


# --------------------------------------------------------------------------- #
# The run being exported
# --------------------------------------------------------------------------- #


def make_ctx(cfg: TrainConfig, algo: AlgoConfig, gpus: int = 1) -> Ctx:
    """The facts the conversions need: the task's budget and rewards, the model's tokenizer."""
    if gpus < 1:
        raise ValueError(f"--gpus must be >= 1, got {gpus}")
    task = get_task(cfg.task)
    if cfg.reward_model and cfg.rule_weight == 0:
        raise ValueError(
            "rule_weight 0 trains on the learned reward model alone, which the export does not carry; export a run with a rule reward"
        )
    rule = []
    for name, fn, weight in task.rewards.fns:
        if getattr(tasks_module, fn.__name__, None) is not fn:
            raise ValueError(
                f"reward {name!r} ({fn!r}) is not a function of rlalgos.tasks, so the export cannot carry it"
            )
        rule.append((fn.__name__, cfg.rule_weight if name == task.correct_key else weight))
    rows = task.train + task.test
    lacking = next((r for r in rows if task.answer_key not in r), None)
    if lacking is not None:
        raise ValueError(
            f"task {task.name!r} has a row without its answer column {task.answer_key!r} (keys: {', '.join(lacking)}); the export writes it as the ground truth"
        )
    if cfg.model:
        path = Path(cfg.model)
        model_ref = str(path.resolve()) if path.exists() else cfg.model
        template = _has_chat_template(path) if path.is_dir() else True
    else:
        model_ref, template = "model", _has_chat_template(BASE_MODEL_DIR)
    return Ctx(
        cfg,
        algo,
        gpus,
        cfg.max_new_tokens or task.max_new_tokens,
        rule,
        max(len(r["prompt"]) for r in rows),
        len(task.train),
        model_ref,
        template,
        task,
    )


def _has_chat_template(model_dir: Path) -> bool:
    cfg_file = model_dir / "tokenizer_config.json"
    in_config = cfg_file.is_file() and "chat_template" in json.loads(cfg_file.read_text())
    return in_config or (model_dir / "chat_template.jinja").is_file() or (model_dir / "chat_template.json").is_file()


# --------------------------------------------------------------------------- #
# Conversions more than one engine uses
# --------------------------------------------------------------------------- #


def no_equivalent(note: str, used: Callable[[Ctx], bool] = lambda c: True) -> Callable[[Ctx], Mapped]:
    """A conversion for a setting the engine lacks; the note says when this run does not use the setting anyway."""
    return lambda c: missing(note if used(c) else f"{note} (not used by this run)")


def no_reward_model(c: Ctx, setting: str) -> Mapped:
    if not c.cfg.reward_model:
        return same()  # no learned reward model in this run: nothing to carry
    return missing(
        f"the learned reward model ({c.cfg.reward_model}) is not exported: the exported reward is the rule reward alone"
        if setting == "reward_model"
        else "the learned reward model is not exported"
    )


def engine_dtype(c: Ctx, gpu_only: bool) -> Mapped:
    """The engines run fp32 on CPU (TRL) and bf16 mixed precision on GPUs: rlalgos's dtype ``auto``."""
    runs = "bfloat16" if gpu_only or c.cfg.device != "cpu" else "float32"
    if c.cfg.dtype in ("auto", runs):
        return same()
    return differs(
        f"dtype {c.cfg.dtype}: the export runs {'bf16 mixed precision (fp32 master weights, as rlalgos dtype bfloat16)' if runs == 'bfloat16' else 'float32'}"
    )


def lr_note(c: Ctx) -> str:
    """What the export says about a tiny model's learning rate."""
    if c.algo.lr == REAL_SCALE_LR:
        return ""
    return f"kept at the run's {c.algo.lr:g}; real-scale TRL/verl runs use {REAL_SCALE_LR:g} (their default)"


def no_kl_schedule(c: Ctx) -> Mapped:
    return same() if not c.algo.kl_stages else missing("no KL schedule: the constant kl_coef is used")


def overlong_on(c: Ctx) -> bool:
    return bool(c.algo.overlong_penalty)


def overlong_buffer(c: Ctx) -> int:
    return min(c.algo.overlong_buffer, c.max_new_tokens)


def raises_temperature(c: Ctx) -> bool:
    return c.algo.entropy_threshold > 0 and c.algo.entropy_action == "temperature"


# --------------------------------------------------------------------------- #
# Writing
# --------------------------------------------------------------------------- #


def template(name: str) -> str:
    """The text of the template file ``NAME`` next to this module (package data: a wheel install has it too)."""
    return (importlib.resources.files(__package__) / name).read_text()


def write_jsonl(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_run_sh(out: Path, lines: list[str]) -> None:
    """``run.sh``: the given command lines, run from the export folder wherever it is started."""
    head = [
        "#!/usr/bin/env bash",
        "# Written by rlalgos export: runs the exported experiment from this folder.",
        "set -euo pipefail",
        'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        'cd "$HERE"',
    ]
    (out / "run.sh").write_text("\n".join(head + lines) + "\n")
    (out / "run.sh").chmod(0o755)
