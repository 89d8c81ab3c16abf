"""What ``--help`` and ``rlalgos algos`` show. Every option is a config field, documented
once, by the docstring under it in :mod:`rlalgos.config`: ``rlalgos train ALGO --help``
shows the first clause of each in titled boxes (common run options first, then ALGO's
own with ALGO's defaults, then sampling and logging, then the engine), ``rlalgos algos
ALGO`` the whole of each. Imports neither torch nor transformers."""

from __future__ import annotations

import ast
import functools
import inspect
import re
import textwrap
import typing
from dataclasses import asdict, field, fields, make_dataclass
from typing import Annotated, Union

import tyro

from ..config import ALGORITHMS, CHOICES, GRPO_KL_ESTIMATORS, KL_ESTIMATORS, GRPOConfig, TrainConfig, make_config

Flat = tyro.conf.OmitArgPrefixes  # a nested config whose options appear without a prefix


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """``{field: the docstring under it}`` of a config dataclass: the one place an option is
    documented, which the command line's help (tyro) and other commands' options read."""
    docs, body = {}, ast.parse(inspect.getsource(cls)).body[0].body
    for node, nxt in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(nxt, ast.Expr)
            and isinstance(getattr(nxt, "value", None), ast.Constant)
        ):
            docs[node.target.id] = " ".join(str(nxt.value.value).split())
    return docs


COMMON = (
    "steps",
    "prompts_per_step",
    "group_size",
    "eval_every",
    "eval_prompts",
    "out_dir",
    "seed",
    "overwrite",
    "model",
    "task",
)
"""The run options a user sets most, shown first."""
ENGINE = (
    "dtype",
    "device",
    "lora_rank",
    "lora_alpha",
    "lora_dropout",
    "lora_targets",
    "rollout_dtype",
    "rollout_sync_every",
    "rollout_correction",
    "rollout_correction_threshold",
    "logits_chunk",
    "sampler",
    "score_batch_size",
)
"""How the numbers are computed (precision, device, LoRA, memory), shown last; every other run option is in between."""


def plain(doc: str) -> str:
    """A field's docstring as terminal text: reST roles and double backquotes removed."""
    return re.sub(r":\w+:`~?([^`]+)`", r"\1", doc).replace("``", "")


def short_help(doc: str, limit: int = 50) -> str:
    """One line of --help from a field's docstring: its first sentence without reST markup and
    without parenthetical remarks, cut at a clause break (``;``, ``:``) if still longer than ``limit``."""
    text = plain(doc)
    while (stripped := re.sub(r" ?\([^()]*\)", "", text)) != text:
        text = stripped
    text = re.split(r"(?<=[a-z0-9\]])\. (?=[A-Z0-9])", " ".join(text.split()), maxsplit=1)[0].rstrip(".")
    if len(text) > limit:
        cuts = [m.start() for m in re.finditer(r"[;:] ", text) if 12 <= m.start() <= limit]
        text = text[: cuts[-1]] if cuts else text[: text.rfind(" ", 0, limit - 4)] + " ..."
    return text


def all_field_docs(cls: type) -> dict[str, str]:
    """:func:`field_docs` of ``cls`` and of the config classes it inherits from (the nearest wins)."""
    docs: dict[str, str] = {}
    for c in reversed([c for c in cls.__mro__ if c is not object and "__dataclass_fields__" in vars(c)]):
        docs.update(field_docs(c))
    return docs


def choices(cls: type, name: str) -> tuple[str, ...] | None:
    """The values option ``name`` of ``cls`` may take, if they come from a fixed set."""
    if name == "kl_estimator":
        return GRPO_KL_ESTIMATORS if issubclass(cls, GRPOConfig) else KL_ESTIMATORS
    return CHOICES.get(name)


def section(title: str, cls: type, names, defaults) -> type:
    """A dataclass of ``cls``'s fields ``names`` with ``defaults``' values, each option with one line of
    help (and its allowed values): what one titled box of --help shows."""
    hints, docs = typing.get_type_hints(cls), all_field_docs(cls)
    rows = []
    for name in names:
        allowed, value = choices(cls, name), getattr(defaults, name)
        arg = tyro.conf.arg(
            help=short_help(docs.get(name, "")),
            help_behavior_hint=lambda default: f"[{default}]",
            **({"metavar": "{" + ",".join(allowed) + "}"} if allowed else {}),
        )
        rows.append((name, Annotated[hints[name], arg], field(default=value)))
    return make_dataclass(title.replace(" ", "_").replace(",", ""), rows)


def run_sections(defaults: TrainConfig) -> list[tuple[str, type, object]]:
    """``(field, type, default)`` of the three boxes of run options, common first and engine last."""
    names = [f.name for f in fields(TrainConfig) if f.name != "algo"]
    more = [n for n in names if n not in COMMON and n not in ENGINE]
    out = []
    for key, title, chosen in (
        ("common", "run", COMMON),
        ("more", "sampling, evaluation and logging", more),
        ("engine", "engine (precision, device, LoRA, memory)", ENGINE),
    ):
        cls = section(title, TrainConfig, chosen, defaults)
        out.append(
            (
                key,
                Annotated[cls, Flat, tyro.conf.FlagCreatePairsOff, tyro.conf.arg(name=title)],
                field(default_factory=cls),
            )
        )
    return out


def assemble_run(self) -> TrainConfig:
    """The TrainConfig (what config.json records) that the parsed sections spell out."""
    values = {k: v for key in ("common", "more", "engine") for k, v in asdict(getattr(self, key)).items()}
    return TrainConfig(algo=getattr(self, "algo_name", "reinforce"), **values)


def train_command(name: str):
    """``rlalgos train NAME``: the common run options, NAME's own options with NAME's defaults, then the rest."""
    spec = ALGORITHMS[name]
    algo_cls = section(name, spec.config, [f.name for f in fields(spec.config)], make_config(name))
    common, more, engine = run_sections(TrainConfig(algo=name))
    train = make_dataclass(
        f"Train_{name}",
        [
            common,
            (
                "options",
                Annotated[algo_cls, Flat, tyro.conf.FlagCreatePairsOff, tyro.conf.arg(name=name)],
                field(default_factory=algo_cls),
            ),
            more,
            engine,
        ],
        namespace={
            "algo_name": name,
            "run": property(assemble_run),
            "algo": property(lambda self: make_config(name, **asdict(self.options))),
        },
    )
    description = f"{spec.summary}. Every option's full text: rlalgos algos {name}"
    return Annotated[train, tyro.conf.subcommand(name, description=description)]


TrainCommand = Union[tuple(train_command(n) for n in ALGORITHMS)]  # noqa: UP007


def flag(name: str) -> str:
    """A field's name as a command-line option: ``max_new_tokens`` -> ``--max-new-tokens``."""
    return "--" + name.replace("_", "-")


def option_names(cls: type) -> set[str]:
    """Every ``--option`` a command's dataclass takes (nested option boxes included), as tyro spells them."""
    names, hints = {"-h", "--help"}, typing.get_type_hints(cls, include_extras=True)
    for f in fields(cls):
        hint = hints[f.name]
        base, extras = (
            (typing.get_args(hint)[0], typing.get_args(hint)[1:])
            if typing.get_origin(hint) is Annotated
            else (hint, ())
        )
        if isinstance(base, type) and hasattr(base, "__dataclass_fields__"):
            names |= option_names(base)
        elif (
            not any(e is tyro.conf.Positional or "Positional" in repr(e) for e in extras)
            and typing.get_origin(base) is not Union
        ):
            names |= {flag(f.name), "--no-" + flag(f.name)[2:]} if base is bool else {flag(f.name)}
    return names


def wrap(text: str, width: int = 110, indent: str = "    ") -> str:
    """``text`` filled to ``width`` columns, every line indented by ``indent``, never broken at a hyphen."""
    return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)


def print_algos(name: str = "") -> None:
    """``rlalgos algos [NAME]``: every algorithm with its defaults, or every option of NAME with its whole docstring."""
    if name:
        spec = ALGORITHMS[name] if name in ALGORITHMS else make_config(name)  # an unknown name: one line
        run, algo = TrainConfig(algo=name), make_config(name)
        print(f"rlalgos train {name}: {spec.summary}\n")
        for title, cfg in (("run options", run), (f"{name} options", algo)):
            print(f"{title}:")
            docs = all_field_docs(type(cfg))
            for f in fields(cfg):
                if f.name != "algo":
                    print(f"  {flag(f.name)} (default {getattr(cfg, f.name)!r})")
                    print(wrap(plain(docs.get(f.name, "")), 100, " " * 6))
            print()
        return
    for algo, spec in ALGORITHMS.items():
        print(f"{algo}: {spec.summary}")
        print(wrap("  ".join(f"{flag(k)} {v}" for k, v in asdict(make_config(algo)).items())))
    print("\nrun options (every algorithm):")
    print(wrap("  ".join(f"{flag(k)} {v}" for k, v in asdict(TrainConfig()).items() if k != "algo")))
    print("\none line per option: rlalgos train NAME --help; the whole text of each: rlalgos algos NAME")
