"""What the TRL export writes: ``trl_config.yaml``, ``train_trl.py`` (``train_trl.py.txt``),
``data/*.jsonl`` and ``run.sh``; and TRL's own defaults, where TRL is installed, to list what the
export sets away from them."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from .base import Ctx, Mapping, template, write_jsonl, write_run_sh

CHECKED_AGAINST = "1.16.0"
"""The TRL version whose field names the export was written against."""
TRL_SCRIPT_KEYS = ("trainer", "model", "train_file", "eval_file", "reward_funcs", "world_size")
"""Keys of the TRL side that ``train_trl.py`` uses itself; every other key is a GRPOConfig/RLOOConfig field."""


def _defaults_differ(trainer: str, config: dict) -> list[str]:
    try:
        import trl
    except ImportError:
        return ["(trl is not installed here: its defaults were not compared)"]
    cls = getattr(trl, trainer.replace("Trainer", "Config"))
    defaults = {f.name: f.default for f in fields(cls)}
    return [
        f"`{k}`: {v!r} (TRL's default {defaults[k]!r})"
        for k, v in config.items()
        if k in defaults and defaults[k] != v and not callable(defaults[k])
    ]


def write(out: Path, ctx: Ctx, mapping: Mapping, train: list[dict], test: list[dict]) -> tuple[str, list[str]]:
    import yaml  # transformers' dependency

    script = {k: v for k, v in mapping.values.items() if k in TRL_SCRIPT_KEYS}
    config = {k: v for k, v in mapping.values.items() if k not in TRL_SCRIPT_KEYS}
    write_jsonl(train, out / "data" / "train.jsonl")
    if "eval_file" in script:
        write_jsonl(test, out / "data" / "test.jsonl")
    (out / "trl_config.yaml").write_text(
        f"# Written by rlalgos export (checked against TRL {CHECKED_AGAINST}); train_trl.py reads it.\n"
        "# config: the GRPOConfig / RLOOConfig fields; the rest: what train_trl.py passes to the trainer.\n"
        + yaml.safe_dump({**script, "config": config}, sort_keys=False)
    )
    (out / "train_trl.py").write_text(template("train_trl.py.txt"))
    command = f"accelerate launch --num_processes {ctx.gpus} train_trl.py"
    write_run_sh(out, [command])
    return command, _defaults_differ(script["trainer"], config)
