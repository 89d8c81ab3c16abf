"""Command line: ``rlalgos train ALGO | resume | compare | eval | plot | sft | rm | data | algos | export | student | claims``.

Built with tyro from the dataclasses in :mod:`rlalgos.config`: every option is a
config field and its help is the docstring under that field, so ``--help`` and
the code never disagree. ``rlalgos train grpo --help`` lists the run options and
GRPO's own options with GRPO's defaults, and nothing else. This module and the
configs import neither torch nor transformers; each command imports what it
needs when it runs, so ``--help`` and a bad value answer at once.
"""

import difflib
import json
import os
import re
import sys
import typing
from dataclasses import asdict, dataclass, field, fields, make_dataclass, replace
from pathlib import Path
from typing import Annotated, Literal, Union

import tyro

from ..config import (
    ALGORITHMS,
    BASELINES,
    DTYPES,
    DYNAMIC_SAMPLING,
    EI_KEEP,
    GRPO_KL_ESTIMATORS,
    KL_ESTIMATORS,
    LOSS_AGG_MODES,
    LOSS_MODES,
    ROLLOUT_CORRECTIONS,
    ROLLOUT_DTYPES,
    EmergenceConfig,
    GRPOConfig,
    RMConfig,
    SFTConfig,
    TrainConfig,
    TrapConfig,
    field_docs,
    make_config,
    parse_algo_spec,
)
from ..tasks import DATA_DIR


Flat = tyro.conf.OmitArgPrefixes  # a nested config whose options appear without a prefix


# --------------------------------------------------------------------------- #
# What --help shows: the options in sections, each with one line of help
# --------------------------------------------------------------------------- #

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

CHOICES = {
    "dtype": DTYPES,
    "rollout_dtype": ROLLOUT_DTYPES,
    "rollout_correction": ROLLOUT_CORRECTIONS,
    "sampler": ("compact", "hf"),
    "on_nonfinite": ("stop", "skip"),
    "loss_agg": LOSS_AGG_MODES,
    "baseline": BASELINES,
    "loss_mode": LOSS_MODES,
    "dynamic_sampling": DYNAMIC_SAMPLING,
    "adv_scale": ("std", "none"),
    "entropy_action": ("bonus", "temperature"),
    "keep": EI_KEEP,
}
"""Options whose values come from a fixed set: --help lists them (the configs' validate() checks them)."""


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


def _choices(cls: type, name: str) -> tuple[str, ...] | None:
    if name == "kl_estimator":
        return GRPO_KL_ESTIMATORS if issubclass(cls, GRPOConfig) else KL_ESTIMATORS
    return CHOICES.get(name)


def section(title: str, cls: type, names, defaults) -> type:
    """A dataclass of ``cls``'s fields ``names`` with ``defaults``' values, each option with one line of
    help (and its allowed values): what one titled box of --help shows."""
    hints, docs = typing.get_type_hints(cls), all_field_docs(cls)
    rows = []
    for name in names:
        choices, value = _choices(cls, name), getattr(defaults, name)
        arg = tyro.conf.arg(
            help=short_help(docs.get(name, "")),
            help_behavior_hint=lambda default: f"[{default}]",
            **({"metavar": "{" + ",".join(choices) + "}"} if choices else {}),
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


def _assemble_run(self) -> TrainConfig:
    """The TrainConfig (what config.json records) that the parsed sections spell out."""
    values = {k: v for key in ("common", "more", "engine") for k, v in asdict(getattr(self, key)).items()}
    return TrainConfig(algo=getattr(self, "algo_name", "reinforce"), **values)


def _train_command(name: str):
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
            "run": property(_assemble_run),
            "algo": property(lambda self: make_config(name, **asdict(self.options))),
        },
    )
    description = f"{spec.summary}. Every option's full text: rlalgos algos {name}"
    return Annotated[train, tyro.conf.subcommand(name, description=description)]


TrainCommand = Union[tuple(_train_command(n) for n in ALGORITHMS)]  # noqa: UP007


@dataclass
class TrainArgs:
    """Train one algorithm on the shared loop; metrics go to OUT_DIR/metrics.jsonl as they are made."""

    algorithm: Annotated[TrainCommand, tyro.conf.arg(name="")]  # no "algorithm." in the titles of its option boxes


@dataclass
class ResumeArgs:
    """Continue a run from its last checkpoint with the config it was started with (same numbers as uninterrupted on CPU)."""

    run_dir: Annotated[tyro.conf.Positional[str], tyro.conf.arg(metavar="RUN_DIR")]
    """The run folder."""
    steps: int = 0
    """Train up to this many steps in all, more than the run has done; 0 = the number it was started with."""


@dataclass
class CompareOptions:
    """Train several algorithms over several seeds; one run folder per (algorithm, seed), summary.csv, compare.png;
    with 3 or more seeds, each algorithm's paired difference from the first, its interval and verdict."""

    algos: str = "reinforce,ppo,grpo,dapo"
    """Comma-separated algorithms, each optionally with its own options: e.g. ``grpo,dapo:minibatches=4:clip_high=0.3``."""
    seeds: int = 1
    """Seeds per algorithm, counting up from --seed (3 or more for a verdict)."""
    jobs: int = 0
    """Runs trained side by side (0 = auto: one per core on CPU, 1 on a GPU; 1 = one after another)."""


CompareArgs = make_dataclass(
    "CompareArgs",
    [
        (
            "compare",
            Annotated[CompareOptions, Flat, tyro.conf.arg(name="compare")],
            field(default_factory=CompareOptions),
        ),
        *run_sections(TrainConfig(out_dir="runs/compare")),
    ],
    namespace={
        "__doc__": CompareOptions.__doc__,
        "run": property(_assemble_run),
        "algos": property(lambda self: self.compare.algos),
        "seeds": property(lambda self: self.compare.seeds),
        "jobs": property(lambda self: self.compare.jobs),
    },
)


@dataclass
class EvalArgs:
    """Greedy accuracy, sampled pass@1 and pass@k on the test split."""

    model: str = ""
    """Model folder or hub name (default: the shipped base model)."""
    task: str = "addition"
    """Task name or gsm8k:TRAIN.jsonl[,TEST.jsonl]."""
    prompts: int = 0
    """Test prompts to use, 0 = all."""
    samples: int = 8
    """Samples per prompt for pass@1 and pass@k."""
    temperature: Annotated[float, tyro.conf.arg(help=field_docs(TrainConfig)["temperature"])] = 1.0
    top_p: Annotated[float, tyro.conf.arg(help=field_docs(TrainConfig)["top_p"])] = 1.0
    show: int = 5
    """Print this many sample completions."""
    seed: int = 0
    """Sampling seed."""
    device: Annotated[str, tyro.conf.arg(help=field_docs(TrainConfig)["device"])] = "auto"
    dtype: Annotated[str, tyro.conf.arg(help=field_docs(TrainConfig)["dtype"])] = "auto"
    chat_template: Annotated[bool, tyro.conf.arg(help=field_docs(TrainConfig)["chat_template"])] = False


@dataclass
class PlotArgs:
    """Overlay metrics of run folders (or compare folders), grouped by algorithm, with a band across seeds."""

    run_dirs: tyro.conf.Positional[tuple[str, ...]]
    """Run folders, or a compare folder holding several."""
    keys: str = "reward_mean,eval_accuracy,entropy,kl"
    """Comma-separated metric names."""
    smooth: int = 5
    """Rolling-mean window for train metrics."""
    out: str = ""
    """Figure path (default: plot.png in the run folder, or in the folder that holds the runs given)."""


@dataclass
class DataArgs:
    """Write the addition task's train/test jsonl with a fixed seed."""

    out_dir: str = str(DATA_DIR)
    """Folder for addition_train.jsonl and addition_test.jsonl."""
    n_train: int = 20000
    """Training problems."""
    n_test: int = 500
    """Test problems."""
    seed: int = 1234
    """Generator seed."""
    overwrite: bool = False
    """Replace existing split files."""


@dataclass
class AlgosArgs:
    """List the algorithms and the run options with their defaults; with NAME, the full text of every option of rlalgos train NAME."""

    name: tyro.conf.Positional[str] = ""
    """An algorithm (rlalgos algos grpo): every option of its train command, with its whole documentation."""


@dataclass
class FromRun:
    """Export a run folder with the config it was started with (its config.json)."""

    run_dir: tyro.conf.Positional[str]
    """The run folder."""


ExportSource = Union[
    (Annotated[FromRun, tyro.conf.subcommand("run", description=FromRun.__doc__)], *TrainCommand.__args__)
]  # noqa: UP007


@dataclass
class ExportArgs:
    """Write a ready-to-run TRL or verl folder for a run folder (``run RUN_DIR``) or for the options ``train`` takes
    (``ALGO --option ...``); the export options come first. Settings with no equivalent are listed, never dropped."""

    source: ExportSource
    to: Literal["trl", "verl"] = "trl"
    """The engine: ``trl`` (GRPOTrainer / RLOOTrainer under accelerate) or ``verl`` (verl.trainer.main_ppo)."""
    export_dir: str = "runs/export"
    """The folder to write (new or empty; an earlier export with --overwrite)."""
    gpus: int = 1
    """GPUs the exported command runs on (the batch sizes per GPU are derived from it)."""
    overwrite: bool = False
    """Replace an earlier export in export_dir (only its own files)."""


@dataclass
class StudentArgs:
    """Write the student edition of the notebooks: the worked solutions taken out, the exercise cells' outputs cleared,
    every other cell with its outputs."""

    out_dir: Annotated[tyro.conf.Positional[str], tyro.conf.arg(metavar="OUT_DIR")]
    """The folder to write (new or empty; an earlier edition with --overwrite)."""
    notebooks_dir: str = ""
    """The notebooks to convert (default: the repository's notebooks/)."""
    overwrite: bool = False
    """Use a folder that is not empty: replace only the student notebooks in it, keep its other files."""


@dataclass
class ClaimsList:
    """Every claim of the scorecard: id, kind, published verdict, seeds, statement."""


@dataclass
class ClaimsRun:
    """Train (or reuse the finished run folders of) one claim's arms on some seeds and print the paired table and the
    verdict next to the published one; an exact claim runs its test. The record goes to OUT_DIR/ID.json."""

    claim: tyro.conf.Positional[str]
    """The claim's id (rlalgos claims list)."""
    seeds: str = ""
    """Comma-separated seeds, e.g. 20,21,22 (default: the published ones). Fewer than 3 run with a warning: a verdict needs 3."""
    jobs: int = 0
    """Runs trained side by side; 0 = auto (one per core on CPU, as compare), 1 = one after another."""
    out_dir: str = "runs/claims"
    """Folder for the record OUT_DIR/ID.json."""
    runs_dir: str = ""
    """Train under RUNS_DIR/ID/ARM/seedK instead of the notebook's own run folders (which are reused when finished)."""
    steps: int = 0
    """A cheap look: this many steps instead of the claim's (0: the claim's; the runs are then not the published ones)."""
    prompts: int = 0
    """A cheap look: prompts per step (0: the claim's)."""
    eval_prompts: int = 0
    """A cheap look: test prompts per evaluation (0: the claim's)."""
    overwrite: bool = False
    """Replace a run folder that holds another run (never done without it)."""
    publish: bool = False
    """Write the record over docs/claims/ID.json (the published numbers) instead of OUT_DIR."""


@dataclass
class ClaimsReport:
    """Write the scorecard page and README.md's summary block from the claims' JSON records."""

    out: str = "docs/claims.md"
    """The page to write."""
    json_dir: str = "docs/claims"
    """Folder of the claims' JSON records (the source of truth)."""
    readme: str = "README.md"
    """README whose claims block to regenerate ('' = none)."""


CLAIMS_ACTIONS = {"list": ClaimsList, "run": ClaimsRun, "report": ClaimsReport}
"""``rlalgos claims ACTION``: each action's arguments."""


@dataclass
class ClaimsArgs:
    """The claims scorecard as code: rlalgos claims list | run ID | report."""

    action: Union[
        tuple(Annotated[c, tyro.conf.subcommand(name, description=c.__doc__)] for name, c in CLAIMS_ACTIONS.items())
    ]  # noqa: UP007


@dataclass
class DiagnoseArgs:
    """Read a run and name the failure signatures notebook 06 teaches (collapse, zero signal, length runaway, a gamed reward,
    entropy collapse, KL drift, clip saturation, NaN), with their evidence; save a plot of the signals next to the run."""

    run_dir: Annotated[tyro.conf.Positional[str], tyro.conf.arg(metavar="RUN_DIR")]
    """An rlalgos run folder, a TRL output folder (trainer_state.json), or a folder of TensorBoard event files (verl, TRL)."""
    plot: str = ""
    """Where to save the plot: '' = doctor.png in the run folder, 'none' = no plot."""
    accuracy_key: str = ""
    """A logged metric to read as eval accuracy (TRL logs none: e.g. eval_rewards/accuracy_reward/mean); verl's val-core/.../acc/mean@N is found by itself."""


# --------------------------------------------------------------------------- #
# Commands
# --------------------------------------------------------------------------- #


def _run_config(run: TrainConfig, **over) -> TrainConfig:
    """A plain TrainConfig (what config.json records) from the CLI's run options."""
    return TrainConfig(**{**{f.name: getattr(run, f.name) for f in fields(TrainConfig)}, **over})


def cmd_train(args) -> None:
    cfg = _run_config(args.run)
    cfg.validate()  # bad values answer before torch is imported
    args.algo.validate(cfg.group_size, cfg.prompts_per_step * cfg.group_size)
    from ..train import train

    _print_run_summary(train(cfg, args.algo))


def cmd_resume(args: ResumeArgs) -> None:
    from ..train import resume

    _print_run_summary(resume(args.run_dir, steps=args.steps or None))


def _print_run_summary(df) -> None:
    from ..engine.distributed import is_main

    if not is_main():  # under torchrun: one summary, from process 0
        return
    ev = df.dropna(subset=["eval_accuracy"])
    print(f"run folder: {df.run_dir} (metrics.jsonl, samples.jsonl, checkpoint/)")
    if len(ev):  # the steps are the evaluations' own: a run's last row need not be an evaluation
        first, last = ev.iloc[0], ev.iloc[-1]
        print(
            f"eval accuracy {first['eval_accuracy']:.3f} (step {int(first['step'])}) -> {last['eval_accuracy']:.3f} (step {int(last['step'])}); "
            f"greedy {first['eval_greedy_accuracy']:.3f} -> {last['eval_greedy_accuracy']:.3f}"
        )


def check_compare_dir(out: Path, names, seeds, overwrite: bool) -> None:
    """The folder rule for a compare folder, checked for every run before the first starts:
    each run folder may be new, or (with --overwrite) a run folder; summary.csv and
    compare.png are replaced only with --overwrite."""
    from ..engine.runs import check_output_files, check_run_dir

    for a in names:
        for s in seeds:
            check_run_dir(out / a / f"seed{s}", overwrite)
    check_output_files([out / "summary.csv", out / "compare.png"], overwrite)


def cmd_compare(args: CompareArgs) -> None:
    specs = [s.strip() for s in args.algos.split(",") if s.strip()]
    if not specs:
        raise ValueError("--algos is empty; give e.g. --algos reinforce,grpo")
    if args.seeds < 1 or args.jobs < 0:
        raise ValueError(f"--seeds must be >= 1 and --jobs >= 0 (0 = auto), got {args.seeds} and {args.jobs}")
    runs = []  # check everything before the first run starts
    for spec in specs:
        name, options = parse_algo_spec(spec)
        cfg = _run_config(args.run, algo=name)
        cfg.validate()
        algo_cfg = make_config(name, **options)
        algo_cfg.validate(cfg.group_size, cfg.prompts_per_step * cfg.group_size)
        label = spec.replace(":", "-").replace("=", "")
        runs.append((label, cfg, algo_cfg))
    labels = [r[0] for r in runs]
    if len(set(labels)) != len(labels):
        raise ValueError(f"--algos names a run twice: {args.algos}")
    out = Path(args.run.out_dir)
    seeds = range(args.run.seed, args.run.seed + args.seeds)
    check_compare_dir(out, labels, seeds, args.run.overwrite)

    from ..workbook.plots import COST, plot_runs, summary_table
    from ..workbook.stats import paired_effect, verdict_line
    from .sweep import plan_line, run_many

    jobs = [
        (label, replace(cfg, seed=s, out_dir=str(out / label / f"seed{s}")), algo_cfg)
        for label, cfg, algo_cfg in runs
        for s in seeds
    ]
    print(plan_line([(cfg, algo_cfg) for _, cfg, algo_cfg in jobs], args.jobs))
    results = run_many([(cfg, algo_cfg) for _, cfg, algo_cfg in jobs], jobs=args.jobs, progress=args.run.progress)
    groups, failed = {}, 0
    for (label, _, _), df in zip(jobs, results):
        if isinstance(df, Exception):
            failed += 1
        else:
            groups.setdefault(label, []).append(df)
    if not groups:
        raise ValueError(f"all {len(jobs)} runs failed; the first: {results[0]}")
    table = summary_table(groups)
    table.to_csv(out / "summary.csv")
    fig = plot_runs(
        groups,
        keys=("reward_mean", "eval_accuracy", "entropy", "kl", "completion_len", "zero_std_frac", "clip_frac", COST),
        title=f"{', '.join(labels)} on {args.run.task}, {args.seeds} seed(s)",
        caption=True,
    )
    fig.savefig(out / "compare.png", dpi=110, bbox_inches="tight")
    print(table.round(3).to_string())
    base = labels[0]
    if args.seeds >= 3 and base in groups and len(groups) > 1:
        print(
            f"\npaired by seed, each against {base} (end of run: last evaluation; train metrics over the last 5 steps):"
        )
        for label in [g for g in groups if g != base]:
            for key in ("eval_accuracy", "eval_greedy_accuracy", "kl", "step_seconds"):
                print("  " + verdict_line(paired_effect(groups[base], groups[label], key), label, base))
    elif len(groups) > 1:
        print(f"\n{args.seeds} seed(s): no paired verdict (it needs >= 3 seeds per algorithm: --seeds 3)")
    print(f"\nrun folders: {out}/<algo>/seed<k>/metrics.jsonl")
    print(f"table:       {out / 'summary.csv'}")
    print(f"figure:      {out / 'compare.png'}")
    if failed:
        raise ValueError(
            f"{failed} of {len(jobs)} runs failed (each named above); the table and figure hold the other {len(jobs) - failed}"
        )


def cmd_eval(args: EvalArgs) -> None:
    if args.samples < 1 or args.prompts < 0:
        raise ValueError("--samples must be >= 1 and --prompts >= 0")
    if not (args.temperature > 0 and 0 < args.top_p <= 1):
        raise ValueError(f"--temperature must be > 0 and --top-p in (0, 1], got {args.temperature} and {args.top_p}")
    from ..engine.precision import resolve_precision
    from ..model import load_policy
    from ..tasks import get_task
    from ..train import evaluate

    task = get_task(args.task)
    policy, tok = load_policy(args.model or None, args.device, args.dtype)
    rows = task.test[: args.prompts] if args.prompts else task.test
    ev = evaluate(
        policy,
        tok,
        task,
        rows,
        n_samples=args.samples,
        temperature=args.temperature,
        top_p=args.top_p,
        seed=args.seed,
        n_show=args.show,
        chat_template=args.chat_template,
        autocast_dtype=resolve_precision(args.dtype, policy.device)[1],
    )
    for s in ev.pop("samples", []):
        print(f"  {s['prompt']}{s['completion']}   (answer {s['answer']}, reward {s['reward']:g})")
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in ev.items()}, indent=2))


def cmd_plot(args: PlotArgs) -> None:
    runs = []
    for d in map(Path, args.run_dirs):
        if (d / "metrics.jsonl").exists():
            runs.append(d)
        else:  # a compare folder: take every run inside it
            found = sorted(p.parent for p in d.glob("**/metrics.jsonl"))
            if not found:
                raise FileNotFoundError(f"{d} holds no metrics.jsonl; give run folders or a compare folder")
            runs.extend(found)
    given = [Path(d).resolve() for d in args.run_dirs]
    out = Path(args.out) if args.out else Path(os.path.commonpath(given)) / "plot.png"
    if out.is_dir():
        raise FileExistsError(f"{out} is a folder; give a figure path such as plot.png")
    from ..workbook.plots import plot_runs, summary_table

    keys = [k.strip() for k in args.keys.split(",") if k.strip()]
    fig = plot_runs(runs, keys=keys, smooth=args.smooth, caption=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    print(summary_table(runs).round(3).to_string())
    print(f"figure: {out}")


def cmd_sft(args: SFTConfig) -> None:
    from ..workbook.sft import sft

    report = sft(args)
    print(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    print(f"saved the base model to {args.out_dir}")


def cmd_trap_model(args: TrapConfig) -> None:
    from ..workbook.sft import trap_finetune

    report = trap_finetune(args)
    print(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    print(f"saved the trap regime's base model to {args.out_dir} (train on it with --task trap --model {args.out_dir})")


def cmd_emergence_model(args) -> None:
    from ..workbook.emergence import make_model

    report = make_model(args)
    print(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    print(f"saved to {report['config']['out_dir']} (train on it with --model {report['config']['out_dir']})")


def cmd_rm(args: RMConfig) -> None:
    from ..workbook.reward_model import train_reward_model

    report = train_reward_model(args)
    print(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    print(f"saved the reward model to {args.out_dir}")


def cmd_data(args: DataArgs) -> None:
    from ..engine.runs import check_output_files
    from ..tasks import make_addition_data

    check_output_files(
        [Path(args.out_dir) / "addition_train.jsonl", Path(args.out_dir) / "addition_test.jsonl"], args.overwrite
    )
    paths = make_addition_data(args.out_dir, args.n_train, args.n_test, args.seed)
    print(f"wrote {paths['train']} and {paths['test']}")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def cmd_algos(args: AlgosArgs) -> None:
    import textwrap

    if args.name:
        spec = ALGORITHMS[args.name] if args.name in ALGORITHMS else make_config(args.name)  # an unknown name: one line
        run, algo = TrainConfig(algo=args.name), make_config(args.name)
        print(f"rlalgos train {args.name}: {spec.summary}\n")
        for title, cfg in (("run options", run), (f"{args.name} options", algo)):
            print(f"{title}:")
            docs = all_field_docs(type(cfg))
            for f in fields(cfg):
                if f.name != "algo":
                    print(f"  {_flag(f.name)} (default {getattr(cfg, f.name)!r})")
                    print(
                        textwrap.fill(
                            plain(docs.get(f.name, "")),
                            100,
                            initial_indent=" " * 6,
                            subsequent_indent=" " * 6,
                            break_on_hyphens=False,
                        )
                    )
            print()
        return
    for name, spec in ALGORITHMS.items():
        print(f"{name}: {spec.summary}")
        print(
            textwrap.fill(
                "  ".join(f"{_flag(k)} {v}" for k, v in asdict(make_config(name)).items()),
                110,
                initial_indent="    ",
                subsequent_indent="    ",
                break_on_hyphens=False,
            )
        )
    print("\nrun options (every algorithm):")
    print(
        textwrap.fill(
            "  ".join(f"{_flag(k)} {v}" for k, v in asdict(TrainConfig()).items() if k != "algo"),
            110,
            initial_indent="    ",
            subsequent_indent="    ",
            break_on_hyphens=False,
        )
    )
    print("\none line per option: rlalgos train NAME --help; the whole text of each: rlalgos algos NAME")


def cmd_export(args: ExportArgs) -> None:
    from ..config import load_run_config
    from .export import export

    if isinstance(args.source, FromRun):
        cfg, algo_cfg = load_run_config(args.source.run_dir)
        source, overwrite = f"the run folder {args.source.run_dir}", args.overwrite
    else:
        cfg, algo_cfg = _run_config(args.source.run), args.source.algo
        source = f"rlalgos train {cfg.algo} options"
        overwrite = args.overwrite or args.source.run.overwrite  # --overwrite after ALGO means the same here
    done = export(cfg, algo_cfg, args.to, args.export_dir, gpus=args.gpus, overwrite=overwrite, source=source)
    print(f"exported {cfg.algo} to {args.to}: {done.out_dir} (README.md, run.sh)")
    print(f"run it: bash {done.out_dir / 'run.sh'}   ({done.command})")
    print(f"{len(done.notes)} setting(s) with no equivalent or mapped with a difference (also in README.md):")
    for note in done.notes:
        print(f"  - {note}")


def cmd_student(args: StudentArgs) -> None:
    try:
        from ..workbook.student import NOTEBOOKS_DIR, write_student_edition
    except ModuleNotFoundError as e:  # nbformat comes with the notebook extra
        raise ValueError(f"rlalgos student needs {e.name}: pip install -e '.[notebook]' (make install)") from e

    written = write_student_edition(args.out_dir, args.notebooks_dir or NOTEBOOKS_DIR, overwrite=args.overwrite)
    print(
        f"wrote the student edition of {len(written)} notebooks to {args.out_dir} (no solution cells, exercise outputs cleared)"
    )
    print(
        f"open it: jupyter lab {args.out_dir}   (the notebooks write their runs to {Path(args.out_dir).resolve().parent / 'runs'})"
    )


def cmd_claims(args: ClaimsArgs) -> None:
    import warnings

    from ..workbook import claims

    a = args.action
    checkout = claims.Layout(Path.cwd())  # rlalgos claims runs in the repository checkout, as its defaults say
    if isinstance(a, ClaimsList):
        import pandas as pd

        with pd.option_context("display.max_colwidth", 90, "display.width", 200):
            print(claims.list_claims(checkout.json_dir).to_string())
    elif isinstance(a, ClaimsReport):
        for path in claims.report(a.out, a.json_dir, a.readme or None):
            print(f"wrote {path}")
    else:
        claims.get_claim(a.claim)  # an unknown id answers before anything else
        seeds = claims.parse_seeds(a.seeds) if a.seeds else None
        if a.jobs < 0 or min(a.steps, a.prompts, a.eval_prompts) < 0:
            raise ValueError("--jobs, --steps, --prompts and --eval-prompts must be >= 0")
        over = {
            k: v
            for k, v in (("steps", a.steps), ("prompts_per_step", a.prompts), ("eval_prompts", a.eval_prompts))
            if v
        }
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = lambda message, *_, **__: print(f"rlalgos: warning: {message}", file=sys.stderr)
            claims.run_claim(
                a.claim,
                seeds,
                jobs=a.jobs,
                out_dir=a.out_dir,
                runs_dir=a.runs_dir or None,
                overwrite=a.overwrite,
                publish=a.publish,
                root=checkout.root,
                **over,
            )


def cmd_diagnose(args: DiagnoseArgs) -> None:
    from .diagnose import diagnose_path

    print(
        diagnose_path(
            args.run_dir, plot={"": True, "none": False}.get(args.plot, args.plot), accuracy_key=args.accuracy_key
        )[2]
    )


@dataclass(frozen=True)
class Command:
    """One subcommand: its arguments (a dataclass), what runs it, and its one-line help."""

    args: type
    run: object
    help: str


COMMANDS = {
    "train": Command(
        TrainArgs, cmd_train, "train one algorithm and write a run folder (rlalgos train ALGO --help for its options)"
    ),
    "resume": Command(ResumeArgs, cmd_resume, "continue a run from its last checkpoint"),
    "compare": Command(
        CompareArgs, cmd_compare, "train several algorithms over several seeds and plot them side by side"
    ),
    "eval": Command(EvalArgs, cmd_eval, "evaluate a model on the test split"),
    "plot": Command(PlotArgs, cmd_plot, "plot run folders side by side"),
    "sft": Command(SFTConfig, cmd_sft, "train the tiny base model by supervised fine-tuning and save it"),
    "trap-model": Command(
        TrapConfig,
        cmd_trap_model,
        "make the exploration regime's base model (data/trap_model) from the shipped one by a short fine-tune",
    ),
    "emergence-model": Command(
        EmergenceConfig,
        cmd_emergence_model,
        "make a base model whose scratchpad is rare, incompetent, absent or primed (data/emergence/, notebook 12)",
    ),
    "rm": Command(RMConfig, cmd_rm, "train a tiny reward model on base-model samples labelled by the rule reward"),
    "data": Command(DataArgs, cmd_data, "regenerate the addition task's train/test jsonl"),
    "algos": Command(AlgosArgs, cmd_algos, "list the algorithms and their options with defaults"),
    "export": Command(
        ExportArgs,
        cmd_export,
        "write a ready-to-run TRL or verl folder for a run (rlalgos export --to trl|verl run RUN_DIR, or ALGO [options])",
    ),
    "student": Command(
        StudentArgs,
        cmd_student,
        "write the notebooks without their worked solutions, for a class (rlalgos student OUT_DIR)",
    ),
    "claims": Command(
        ClaimsArgs, cmd_claims, "the claims scorecard: rlalgos claims list | run ID [--seeds 20,21,22] | report"
    ),
    "diagnose": Command(
        DiagnoseArgs,
        cmd_diagnose,
        "name what went wrong in a run (rlalgos, TRL or TensorBoard logs) and plot the signals",
    ),
}


def unknown_algorithm(argv: list[str]) -> str | None:
    """The one-line error for ``rlalgos train NAME`` or ``rlalgos export [options] NAME`` with a
    NAME that is no algorithm (tyro would print a page of usage), else None."""
    if not argv or argv[0] not in ("train", "export"):
        return None
    rest, flags = argv[1:], {f"--{f.name.replace('_', '-')}" for f in fields(ExportArgs) if f.type in (bool, "bool")}
    i = 0
    while i < len(rest) and rest[i].startswith("-"):  # export's own options come before the source
        if rest[i] in ("-h", "--help"):
            return None
        i += 1 if "=" in rest[i] or rest[i] in flags or rest[i].startswith("--no-") or argv[0] == "train" else 2
    if i >= len(rest):
        return None
    name, known = rest[i], list(ALGORITHMS) + (["run"] if argv[0] == "export" else [])
    if name in known:
        return None
    return f"unknown algorithm {name!r}; choose one of {', '.join(known)}"


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
            names |= {_flag(f.name), "--no-" + _flag(f.name)[2:]} if base is bool else {_flag(f.name)}
    return names


def misplaced_option(argv: list[str]) -> str | None:
    """The one-line error for an option this command does not take (the nearest name it does take,
    from this command alone) or for ``rlalgos train --steps 5 grpo``; None when every option is known."""
    if not argv or argv[0] not in COMMANDS or argv[0] == "export":
        return None
    command, rest = argv[0], argv[1:]
    if command == "train":
        if rest and rest[0].startswith("-") and rest[0] not in ("-h", "--help"):
            algo = next((a for a in rest if a in ALGORITHMS), None)
            fix = (
                f"rlalgos train {algo} {' '.join(a for a in rest if a != algo)}"
                if algo
                else "rlalgos train ALGO --steps 5"
            )
            return f"name the algorithm before its options: {fix}  (rlalgos algos lists the algorithms)"
        if not rest or rest[0] not in ALGORITHMS:
            return None
        cls = next(typing.get_args(t)[0] for t in TrainCommand.__args__ if typing.get_args(t)[0].algo_name == rest[0])
        prog, rest = f"train {rest[0]}", rest[1:]
    elif command == "claims":
        if not rest or rest[0] not in CLAIMS_ACTIONS:
            return None
        cls, prog, rest = CLAIMS_ACTIONS[rest[0]], f"claims {rest[0]}", rest[1:]
    else:
        cls, prog = COMMANDS[command].args, command
    known = option_names(cls)
    for token in rest:
        name = token.split("=", 1)[0]
        if name.startswith("--") and name.replace("_", "-") not in known:
            near = difflib.get_close_matches(name.replace("_", "-"), sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]}?" if near else ""
            return f"rlalgos {prog} has no option {name}{hint} (rlalgos {prog} --help lists them)"
    return None


def parse(argv: list[str]):
    """``(command, parsed dataclass)``; tyro prints help and usage errors itself (exit 0 / 2)."""
    commands = Union[
        tuple(Annotated[c.args, tyro.conf.subcommand(name, description=c.help)] for name, c in COMMANDS.items())
    ]  # noqa: UP007
    args = tyro.cli(
        commands,
        prog="rlalgos",
        args=argv,
        config=(tyro.conf.OmitSubcommandPrefixes,),
        description="RL for LLM reasoning, by running it: REINFORCE, PPO, GRPO and improved GRPO on one loop.",
    )
    name = next(name for name, c in COMMANDS.items() if type(args) is c.args)
    return name, (args.algorithm if name == "train" else args)


def interrupted_hint(command: str, args) -> str:
    """What an interrupted command left, and the command that goes on from there."""
    if command in ("train", "resume"):
        folder = args.run_dir if command == "resume" else args.run.out_dir
        return f"every metrics row written so far is in {folder}/metrics.jsonl; rlalgos resume {folder} continues it from its last checkpoint"
    if command == "compare":
        return f"finished runs are in {args.run.out_dir}/; rlalgos resume {args.run.out_dir}/ALGO/seedK continues an unfinished one"
    if command == "claims":
        return "finished runs are kept, and the same claims run reuses them"
    return "stopped"


def main(argv=None) -> int:
    os.environ.setdefault("HF_HUB_VERBOSITY", "error")  # hub retries would print warnings around our one-line errors
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    if (error := misplaced_option(argv) or unknown_algorithm(argv)) is not None:
        print(f"rlalgos: error: {error}", file=sys.stderr)
        return 2
    command, args = parse(argv)
    try:
        COMMANDS[command].run(args)
    except (ValueError, FileNotFoundError, FileExistsError, FloatingPointError) as e:
        if debug:
            raise
        print(f"rlalgos: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"rlalgos: interrupted; {interrupted_hint(command, args)}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
