"""Command line: ``rlalgos sft | train | compare | eval | plot | data``.

Every option comes from a config dataclass field, and its help text is the
docstring written under that field, so ``--help`` and the code never disagree.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import re
import sys
import textwrap
from dataclasses import MISSING, asdict, fields, replace
from pathlib import Path

from .algorithms import ALGORITHMS


def field_docs(cls) -> dict[str, str]:
    """``{field: docstring}`` for a dataclass whose fields carry a string literal
    right below them (the CleanRL style), walking base classes too."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body
        for a, b in zip(body, body[1:]):
            if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and isinstance(b, ast.Expr) and isinstance(getattr(b, "value", None), ast.Constant) and isinstance(b.value.value, str):
                docs[a.target.id] = " ".join(b.value.value.split())
    return docs


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_dataclass_options(parser, cls, skip=(), keep_defaults=True, note: dict[str, str] | None = None):
    """One option per field. With ``keep_defaults=False`` the default is None
    (meaning "leave the config's own default"), used for algorithm options."""
    docs = field_docs(cls)
    group = parser.add_argument_group(cls.__name__)
    for f in fields(cls):
        if f.name in skip:
            continue
        default = f.default if f.default is not MISSING else None
        help_ = docs.get(f.name, "")
        if note and f.name in note:
            help_ += f" [{note[f.name]}]"
        help_ += f" (default: {default})"
        typ = type(default) if default is not None else str
        kw = {"default": default if keep_defaults else None, "help": help_.replace("%", "%%"), "dest": f.name}
        if typ is bool:
            group.add_argument(_flag(f.name), action=argparse.BooleanOptionalAction, **kw)
        else:
            group.add_argument(_flag(f.name), type=typ, metavar=typ.__name__.upper(), **kw)


def _algo_option_table():
    """Every algorithm option, and which algorithms take it."""
    owners: dict[str, list[str]] = {}
    classes = {}
    for name, algo in ALGORITHMS.items():
        for f in fields(algo.Config):
            owners.setdefault(f.name, []).append(name)
            classes.setdefault(f.name, algo.Config)
    return owners, classes


def add_algo_options(parser):
    owners, classes = _algo_option_table()
    docs: dict[str, str] = {}
    for cls in set(classes.values()):
        docs.update(field_docs(cls))
    group = parser.add_argument_group("algorithm options (default: each algorithm's own; `rlalgos algos` lists them)")
    for name, algos in owners.items():
        f = next(f for f in fields(classes[name]) if f.name == name)
        typ = type(f.default) if f.default is not MISSING else str
        help_ = f"{docs.get(name, '')} [{', '.join(algos) if len(algos) < len(ALGORITHMS) else 'all'}]".replace("%", "%%")
        if typ is bool:
            group.add_argument(_flag(name), action=argparse.BooleanOptionalAction, default=None, dest="algo__" + name, help=help_)
        else:
            group.add_argument(_flag(name), type=typ, default=None, metavar=typ.__name__.upper(), dest="algo__" + name, help=help_)


def _algo_overrides(args) -> dict:
    return {k[len("algo__"):]: v for k, v in vars(args).items() if k.startswith("algo__") and v is not None}


def _dataclass_from_args(cls, args, **extra):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in vars(args).items() if k in names}, **extra)


# --------------------------------------------------------------------------- #
# Commands
# --------------------------------------------------------------------------- #


def cmd_sft(args):
    from .sft import SFTConfig, sft

    report = sft(_dataclass_from_args(SFTConfig, args))
    print(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    print(f"saved the base model to {args.out_dir}")


def cmd_rm(args):
    from .reward_model import RMConfig, train_reward_model

    report = train_reward_model(_dataclass_from_args(RMConfig, args))
    print(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    print(f"saved the reward model to {args.out_dir}")


def cmd_data(args):
    from .tasks import make_addition_data

    paths = make_addition_data(args.out_dir, args.n_train, args.n_test, args.seed)
    print(f"wrote {paths['train']} and {paths['test']}")


def _make_train_cfg(args, **over):
    from .train import TrainConfig

    return replace(_dataclass_from_args(TrainConfig, args), **over)


def cmd_train(args):
    from .algorithms import make_config
    from .train import resume, train

    if args.resume:
        _print_run_summary(resume(args.resume, steps=args.total_steps))
        return
    cfg = _make_train_cfg(args)
    algo_cfg = make_config(cfg.algo, **_algo_overrides(args))
    df = train(cfg, algo_cfg)
    _print_run_summary(df)


def _print_run_summary(df):
    ev = df.dropna(subset=["eval_accuracy"])
    print(f"run folder: {df.attrs['run_dir']} (metrics.jsonl, samples.jsonl, checkpoint/)")
    if len(ev):
        print(f"eval accuracy {ev['eval_accuracy'].iloc[0]:.3f} -> {ev['eval_accuracy'].iloc[-1]:.3f} over {int(df['step'].max())} steps; "
              f"greedy {ev['eval_greedy_accuracy'].iloc[0]:.3f} -> {ev['eval_greedy_accuracy'].iloc[-1]:.3f}")


def cmd_compare(args):
    from .algorithms import make_config
    from .plots import plot_runs, summary_table
    from .train import train

    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    if not algos:
        raise ValueError("--algos is empty; give e.g. --algos reinforce,grpo")
    overrides = _algo_overrides(args)
    for a in algos:  # check everything before the first run starts
        owners = {f.name for f in fields(make_config(a).__class__)}
        make_config(a, **{k: v for k, v in overrides.items() if k in owners})
        _make_train_cfg(args, algo=a).validate()
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    out = Path(args.out_dir)
    check_compare_dir(out, algos, range(args.seed, args.seed + args.seeds), args.overwrite)
    groups = {}
    for a in algos:
        owners = {f.name for f in fields(make_config(a).__class__)}
        for s in range(args.seeds):
            cfg = _make_train_cfg(args, algo=a, seed=args.seed + s, out_dir=str(out / a / f"seed{args.seed + s}"))
            df = train(cfg, make_config(a, **{k: v for k, v in overrides.items() if k in owners}))
            groups.setdefault(a, []).append(df)
    table = summary_table(groups)
    table.to_csv(out / "summary.csv")
    fig = plot_runs(groups, keys=("reward_mean", "eval_accuracy", "entropy", "kl", "completion_len", "zero_std_frac", "clip_frac", "eval_scratchpad_frac"), title=f"{', '.join(algos)} on {args.task}, {args.seeds} seed(s)")
    fig.savefig(out / "compare.png", dpi=110, bbox_inches="tight")
    print(table.round(3).to_string())
    print(f"\nrun folders: {out}/<algo>/seed<k>/metrics.jsonl")
    print(f"table:       {out / 'summary.csv'}")
    print(f"figure:      {out / 'compare.png'}")


def check_compare_dir(out: Path, algos, seeds, overwrite: bool) -> None:
    """The folder rule for a compare folder, checked for every run before the first starts:
    each run folder may be new, or (with --overwrite) a run folder; summary.csv and
    compare.png are replaced only with --overwrite."""
    from .runs import check_run_dir

    for a in algos:
        for s in seeds:
            check_run_dir(out / a / f"seed{s}", overwrite)
    for name in ("summary.csv", "compare.png"):
        if (out / name).exists() and not overwrite:
            raise FileExistsError(f"{out / name} exists; replace the comparison with --overwrite or pick another --out-dir")


def cmd_eval(args):
    from .model import load_policy
    from .tasks import get_task
    from .train import evaluate

    if args.samples < 1 or args.prompts < 0:
        raise ValueError("--samples must be >= 1 and --prompts >= 0")
    policy, tok = load_policy(args.model or None, args.device)
    task = get_task(args.task)
    rows = task.test[: args.prompts] if args.prompts else task.test
    ev = evaluate(policy, tok, task, rows, n_samples=args.samples, temperature=args.temperature, seed=args.seed, n_show=args.show)
    for s in ev.pop("samples", []):
        print(f"  {s['prompt']}{s['completion']}   (answer {s['answer']}, reward {s['reward']:g})")
    print(json.dumps(ev, indent=2))


def cmd_plot(args):
    from .plots import plot_runs, summary_table

    runs = []
    for d in args.run_dirs:
        d = Path(d)
        if (d / "metrics.jsonl").exists():
            runs.append(d)
        else:  # a compare folder: take every run inside it
            found = sorted(p.parent for p in d.glob("**/metrics.jsonl"))
            if not found:
                raise FileNotFoundError(f"{d} holds no metrics.jsonl; give run folders or a compare folder")
            runs.extend(found)
    keys = [k.strip() for k in args.keys.split(",") if k.strip()]
    fig = plot_runs(runs, keys=keys, smooth=args.smooth)
    fig.savefig(args.out, dpi=110, bbox_inches="tight")
    print(summary_table(runs).round(3).to_string())
    print(f"figure: {args.out}")


def cmd_algos(args):
    owners, classes = _algo_option_table()
    for name, algo in ALGORITHMS.items():
        docs = field_docs(algo.Config)
        print(f"{name}: {(algo.__module__ and sys.modules[algo.__module__].__doc__ or '').strip().splitlines()[0]}")
        for k, v in asdict(algo.Config()).items():
            print(f"    --{k.replace('_', '-'):<24} {v!s:<14} {docs.get(k, '')}")


def build_parser() -> argparse.ArgumentParser:
    from .sft import SFTConfig
    from .train import TrainConfig

    p = argparse.ArgumentParser(prog="rlalgos", description="RL for LLM reasoning, by running it: REINFORCE, PPO, GRPO and improved GRPO on one loop.")
    p.add_argument("--debug", action="store_true", help="show the full traceback on errors")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("sft", help="train the tiny base model by supervised fine-tuning and save it", description="Train the tiny base model from scratch on the addition task (fixed seed) and save it with save_pretrained.")
    add_dataclass_options(s, SFTConfig)
    s.set_defaults(fn=cmd_sft)

    from .reward_model import RMConfig

    s = sub.add_parser("rm", help="train a tiny reward model on base-model samples labelled by the rule reward", description="Sample completions from the base model, label them with the rule reward, train a sequence-classification reward model (Bradley-Terry pairs or BCE), report held-out AUC and pair accuracy, save it.")
    add_dataclass_options(s, RMConfig)
    s.set_defaults(fn=cmd_rm)

    s = sub.add_parser("data", help="regenerate the addition task's train/test jsonl", description="Write data/addition_{train,test}.jsonl with a fixed seed.")
    s.add_argument("--out-dir", default=str(Path(__file__).resolve().parent.parent / "data"), help="folder for the jsonl files")
    s.add_argument("--n-train", type=int, default=20000, help="training problems")
    s.add_argument("--n-test", type=int, default=500, help="test problems")
    s.add_argument("--seed", type=int, default=1234, help="generator seed")
    s.set_defaults(fn=cmd_data)

    s = sub.add_parser("train", help="train one algorithm and write a run folder", description="Train one algorithm on the shared loop; metrics go to OUT_DIR/metrics.jsonl as they are made.")
    s.add_argument("--resume", metavar="RUN_DIR", default=None, help="continue RUN_DIR from its last checkpoint with its saved config (other options are ignored, except --total-steps)")
    s.add_argument("--total-steps", type=int, default=None, help="with --resume: train up to this many steps in all (default: the saved steps)")
    add_dataclass_options(s, TrainConfig)
    add_algo_options(s)
    s.set_defaults(fn=cmd_train)

    s = sub.add_parser("compare", help="train several algorithms over several seeds and plot them side by side", description="One run folder per (algorithm, seed) under OUT_DIR, a summary table and a side-by-side figure.")
    s.add_argument("--algos", default="reinforce,ppo,grpo,dapo", help=f"comma-separated algorithms, any of {','.join(ALGORITHMS)} (default: reinforce,ppo,grpo,dapo)")
    s.add_argument("--seeds", type=int, default=1, help="seeds per algorithm, counting up from --seed (default: 1)")
    add_dataclass_options(s, TrainConfig, skip=("algo", "out_dir"))
    s.add_argument("--out-dir", default="runs/compare", help="folder for the run folders, summary.csv and compare.png (default: runs/compare)")
    add_algo_options(s)
    s.set_defaults(fn=cmd_compare)

    s = sub.add_parser("eval", help="evaluate a model on the test split", description="Greedy accuracy, sampled pass@1 and pass@k on the test split.")
    s.add_argument("--model", default="", help="model folder or hub name (default: the shipped base model)")
    s.add_argument("--task", default="addition", help="task name or gsm8k:PATH.jsonl (default: addition)")
    s.add_argument("--prompts", type=int, default=0, help="test prompts to use, 0 = all (default: 0)")
    s.add_argument("--samples", type=int, default=8, help="samples per prompt for pass@1 and pass@k (default: 8)")
    s.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default: 1.0)")
    s.add_argument("--show", type=int, default=5, help="print this many sample completions (default: 5)")
    s.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0)")
    s.add_argument("--device", default="auto", help="auto, cpu or cuda (default: auto)")
    s.set_defaults(fn=cmd_eval)

    s = sub.add_parser("plot", help="plot run folders side by side", description="Overlay metrics of run folders (or compare folders), grouped by algorithm, with a band across seeds.")
    s.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders, or a compare folder holding several")
    s.add_argument("--keys", default="reward_mean,eval_accuracy,entropy,kl", help="comma-separated metric names (default: reward_mean,eval_accuracy,entropy,kl)")
    s.add_argument("--smooth", type=int, default=5, help="rolling-mean window for train metrics (default: 5)")
    s.add_argument("--out", default="plot.png", help="figure path (default: plot.png)")
    s.set_defaults(fn=cmd_plot)

    s = sub.add_parser("algos", help="list the algorithms and their options with defaults")
    s.set_defaults(fn=cmd_algos)
    return p


_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def join_negative_numbers(argv: list[str]) -> list[str]:
    """``--lr -1e-5`` -> ``--lr=-1e-5``: argparse would take ``-1e-5`` for an option."""
    out: list[str] = []
    for a in argv:
        if out and _NEGATIVE_NUMBER.match(a) and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={a}"
        else:
            out.append(a)
    return out


def main(argv=None) -> int:
    os.environ.setdefault("HF_HUB_VERBOSITY", "error")  # hub retries would print warnings around our one-line errors
    parser = build_parser()
    args = parser.parse_args(join_negative_numbers(list(sys.argv[1:] if argv is None else argv)))
    try:
        args.fn(args)
    except (ValueError, FileNotFoundError, FileExistsError, FloatingPointError, RuntimeError) as e:
        if args.debug:
            raise
        print(f"rlalgos: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rlalgos: interrupted; every metrics row written so far is in the run folder", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
