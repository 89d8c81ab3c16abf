"""Move an rlalgos experiment to another engine: ``rlalgos export --to trl|verl``.

The mapping table has a shared half and one column per engine. :data:`.fields.FIELDS` lists every
rlalgos setting (each config field, and the behaviours rlalgos always has) with the conversion and
"no equivalent" text the engines share; each engine module (``trl.py``, ``verl.py``) declares an
:class:`~.base.Engine` as ``ENGINE``: its name and conversion for every field, its writer, its
install line. The exporters, the tests and the README table (:func:`mapping_table`) are all made
from them. A setting that has no equivalent in an engine is never dropped: the engine's conversion
says what it does instead, and every export lists those lines in its README.md and prints them.

Every module of this package that defines ``ENGINE`` is an engine, registered when the package is
imported (:func:`register`, which a module outside the package can call too); adding an engine is
one module plus its test (docs/engines.md, "Adding an engine").

Every export holds ``rewards.py`` (the task's reward functions, TRL-shaped, and verl's
``compute_score``: ``rewards.py.txt``), ``rlalgos_tasks.py`` (a copy of
:mod:`rlalgos.tasks`, standard library only) so the reward functions run where rlalgos is not
installed, ``model/`` (a copy of the shipped tiny model) when the run starts from it, and README.md.
Like :mod:`rlalgos.config`, this package imports neither torch nor transformers.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import pkgutil
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType

from ... import tasks as tasks_module
from ...config import BASE_MODEL_DIR, AlgoConfig, DAPOConfig, TrainConfig
from .base import Ctx, Engine, Mapping, make_ctx, overlong_buffer, template
from .fields import FIELDS, apply_table

ENGINES: dict[str, Engine] = {}
"""The registered engines by name (what ``--to`` takes), in the mapping table's column order."""


def register(module: ModuleType) -> Engine:
    """Register the engine a module declares as ``ENGINE``; a one-line ``ValueError`` if it declares none or lacks a writer."""
    engine = getattr(module, "ENGINE", None)
    if not isinstance(engine, Engine):
        raise ValueError(f"{module.__name__} declares no ENGINE (an rlalgos.tools.export.base.Engine)")
    if not callable(engine.write):
        raise ValueError(f"engine {engine.name!r} ({module.__name__}) has no writer: ENGINE.write must be a function")
    if engine.name in ENGINES and ENGINES[engine.name] is not engine:
        raise ValueError(f"engine {engine.name!r} ({module.__name__}) is already registered by another module")
    ENGINES[engine.name] = engine
    return engine


def _register_package_engines() -> None:
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "ENGINE"):
            register(module)


def get_engine(name: str) -> Engine:
    """The registered engine ``name``; a one-line ``ValueError`` naming the registered ones otherwise."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}: no export module declares it; use {' or '.join(ENGINES)}")
    return ENGINES[name]


def missing_names(engine: Engine) -> list[str]:
    """Fields of the shared table the engine does not name (each engine must name every one)."""
    return [f.name for f in FIELDS if f.name not in engine.names]


def mapping_table() -> str:
    """The table as markdown (what docs/engines.md shows): the shared columns around one column per engine."""
    engines = list(ENGINES.values())
    out = [
        f"| rlalgos | {' | '.join(e.header for e in engines)} | conversion | no equivalent / differs |",
        "|---" * (len(engines) + 3) + "|",
    ]
    for f in FIELDS:
        setting = f.setting if f.fixed else f"`{f.name}`"
        cells = " | ".join(e.names[f.name].prose or "—" for e in engines)
        line = f"| {setting} | {cells} | {f.conversion} | {f.note} |"
        for e in engines:
            for long, short in e.abbreviations:
                line = line.replace(long, short)
        out.append(line)
    return "\n".join(out)


# --------------------------------------------------------------------------- #
# Writing the folder
# --------------------------------------------------------------------------- #

EXPORT_MARK = "rlalgos_export.json"
SHARED_FILES = (EXPORT_MARK, "README.md", "run.sh", "rewards.py", "rlalgos_tasks.py", "data", "model")
"""What every export writes into its folder, whatever the engine."""


def export_files() -> tuple[str, ...]:
    """Everything an export of any engine writes into its folder (and all that overwrite may remove)."""
    return tuple(dict.fromkeys([*SHARED_FILES, *(f for e in ENGINES.values() for f in e.own_files)]))


def check_export_dir(out: Path, overwrite: bool) -> None:
    """A new or empty folder; with ``overwrite``, a folder holding an export, whose own files are replaced."""
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} is a file; pick another --export-dir")
    if not out.exists() or not any(out.iterdir()):
        return
    if not (out / EXPORT_MARK).is_file():
        raise FileExistsError(
            f"{out} is not empty and holds no export ({EXPORT_MARK}); rlalgos never deletes it: pick another --export-dir"
        )
    if not overwrite:
        raise FileExistsError(
            f"{out} already holds an export; replace it with --overwrite or pick another --export-dir"
        )
    from ...engine.runs import clear_run_dir  # imports torch: only here

    clear_run_dir(out, export_files())


@dataclass
class Export:
    """What :func:`export` wrote."""

    engine: str
    out_dir: Path
    command: str
    notes: list[str]


def export(
    cfg: TrainConfig,
    algo: AlgoConfig,
    to: str,
    out_dir: str | Path,
    gpus: int = 1,
    overwrite: bool = False,
    source: str = "",
) -> Export:
    """Write a ready-to-run folder for engine ``to`` from this run's config; return what was written."""
    engine = get_engine(to)
    module, package = engine.needs
    if importlib.util.find_spec(module) is None:
        raise ValueError(f"exporting to {to} needs {package}: pip install {package} (or pip install -e '.[export]')")
    cfg.validate()
    algo.validate(cfg.group_size, cfg.prompts_per_step * cfg.group_size)
    ctx = make_ctx(cfg, algo, gpus)
    mapping = apply_table(engine, ctx)  # every check and the whole mapping before anything is written
    out = Path(out_dir)
    check_export_dir(out, overwrite)
    out.mkdir(parents=True, exist_ok=True)
    # the mark first: a folder left half-written by a crash can still be replaced with --overwrite
    (out / EXPORT_MARK).write_text(
        json.dumps(
            {"engine": to, "source": source, "gpus": gpus, "train": asdict(cfg), "algo": asdict(algo)},
            indent=2,
            default=str,
        )
    )
    task = ctx.task
    test = task.test[: cfg.eval_prompts] if cfg.eval_prompts else task.test
    if ctx.model_ref == "model":
        shutil.copytree(BASE_MODEL_DIR, out / "model")
    shutil.copyfile(inspect.getsourcefile(tasks_module), out / "rlalgos_tasks.py")
    (out / "rewards.py").write_text(
        template("rewards.py.txt").format(
            imports=", ".join(dict(ctx.rule_rewards)),
            weights=dict(ctx.rule_rewards),
            max_len=ctx.max_new_tokens,
            buffer=overlong_buffer(ctx) if isinstance(algo, DAPOConfig) else 1,
            answer_key=json.dumps(task.answer_key),
        )
    )
    command, defaults = engine.write(out, ctx, mapping, task.train, test)
    _write_readme(out, engine, ctx, mapping, command, defaults, source)
    return Export(to, out, command, mapping.notes)


def _write_readme(
    out: Path, engine: Engine, ctx: Ctx, mapping: Mapping, command: str, defaults: list[str], source: str
) -> None:
    title = engine.title
    lines = [
        f"# rlalgos {ctx.cfg.algo} exported to {title}",
        "",
        f"Written by `rlalgos export --to {engine.name}` from {source or 'rlalgos options'}; names checked against {title} {engine.checked_against}.",
        "",
        "```bash",
        engine.install,
        "bash run.sh   # from any folder",
        "```",
        "",
        f"run.sh runs `{command}` on {ctx.gpus} GPU(s). Files: {engine.files}"
        + ("; model/: the shipped tiny model." if ctx.model_ref == "model" else "."),
        "",
        "## No equivalent, or mapped with a difference",
        "",
    ]
    lines += [f"- {n}" for n in mapping.notes] or ["- none"]
    lines += ["", f"## Set away from {title}'s defaults", ""] + ([f"- {d}" for d in defaults] or ["- none"])
    lines += ["", "## Every setting", "", f"| rlalgos | {title} | note |", "|---|---|---|"]
    lines += [f"| {s} | {v.replace('|', '/')} | {n} |" for s, v, n in mapping.table]
    (out / "README.md").write_text("\n".join(lines) + "\n")


_register_package_engines()
