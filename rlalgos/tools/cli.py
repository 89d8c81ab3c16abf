"""Command line: ``rlalgos train ALGO | resume | compare | eval | plot | sft | trap-model |
emergence-model | rm | data | algos | export | student | claims | diagnose``.

Built with tyro: each command's options are a dataclass, the run's and the algorithms'
those of :mod:`rlalgos.config`, whose field docstrings are the help
(:mod:`rlalgos.tools.cli_help` lays them out). This module holds the commands' options,
parses them, and turns bad input into one line; :mod:`rlalgos.tools.commands` runs them.
Nothing here imports torch or transformers, so ``--help`` and a bad value answer at once.
"""

import difflib
import os
import sys
import typing
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Annotated, Literal, Union

import tyro

from ..config import ALGORITHMS, TrainConfig
from ..tasks import DATA_DIR
from .export import ENGINES as EXPORT_ENGINES
from ..workbook.configs import EmergenceConfig, RMConfig, SFTConfig, TrapConfig
from .cli_help import Flat, assemble_run, field_docs, option_names, print_algos, run_sections, train_command
from .cli_claims import CLAIMS_ACTIONS, ClaimsArgs, cmd_claims
from .commands import (
    cmd_compare,
    cmd_data,
    cmd_diagnose,
    cmd_emergence_model,
    cmd_eval,
    cmd_plot,
    cmd_resume,
    cmd_rm,
    cmd_sft,
    cmd_student,
    cmd_train,
    cmd_trap_model,
    run_config,
)

TrainCommand = Union[tuple(train_command(n) for n in ALGORITHMS)]  # noqa: UP007


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
        "run": property(assemble_run),
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
    to: Annotated[
        Literal[tuple(EXPORT_ENGINES)],  # the registered export engines
        tyro.conf.arg(help="The engine: " + "; ".join(f"{e.name} ({e.summary})" for e in EXPORT_ENGINES.values())),
    ] = "trl"
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


def cmd_algos(args: AlgosArgs) -> None:
    print_algos(args.name)


def cmd_export(args: ExportArgs) -> None:
    from ..engine.runs import load_run_config
    from .export import export

    if isinstance(args.source, FromRun):
        cfg, algo_cfg = load_run_config(args.source.run_dir)
        source, overwrite = f"the run folder {args.source.run_dir}", args.overwrite
    else:
        cfg, algo_cfg = run_config(args.source.run), args.source.algo
        source = f"rlalgos train {cfg.algo} options"
        overwrite = args.overwrite or args.source.run.overwrite  # --overwrite after ALGO means the same here
    done = export(cfg, algo_cfg, args.to, args.export_dir, gpus=args.gpus, overwrite=overwrite, source=source)
    print(f"exported {cfg.algo} to {args.to}: {done.out_dir} (README.md, run.sh)")
    print(f"run it: bash {done.out_dir / 'run.sh'}   ({done.command})")
    print(f"{len(done.notes)} setting(s) with no equivalent or mapped with a difference (also in README.md):")
    for note in done.notes:
        print(f"  - {note}")


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
        f"write a ready-to-run folder for another engine (rlalgos export --to {'|'.join(EXPORT_ENGINES)} run RUN_DIR, or ALGO [options])",
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


def unknown_engine(argv: list[str]) -> str | None:
    """The one-line error for ``rlalgos export --to NAME`` with a NAME no export module declares, else None."""
    from .export import get_engine

    words = argv[1:] if argv and argv[0] == "export" else []
    for word, after in zip(words, words[1:] + [None]):
        name = word.removeprefix("--to=") if word.startswith("--to=") else after if word == "--to" else None
        if name is not None and name not in EXPORT_ENGINES:
            try:
                get_engine(name)
            except ValueError as e:
                return str(e)
    return None


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
    if (error := misplaced_option(argv) or unknown_algorithm(argv) or unknown_engine(argv)) is not None:
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
