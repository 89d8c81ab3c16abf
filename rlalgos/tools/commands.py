"""What each ``rlalgos`` command does once its options are parsed (:mod:`rlalgos.tools.cli`
parses them). Each imports what it needs when it runs, so ``--help`` and a bad value
answer before torch is loaded."""

from __future__ import annotations

import json
import os
from dataclasses import fields, replace
from pathlib import Path

from ..config import TrainConfig, make_config, parse_algo_spec
from ..engine.trackers import parse_report_to


def run_config(run: TrainConfig, **over) -> TrainConfig:
    """A plain TrainConfig (what config.json records) from the CLI's run options."""
    return TrainConfig(**{**{f.name: getattr(run, f.name) for f in fields(TrainConfig)}, **over})


def check_run(cfg: TrainConfig, algo_cfg) -> None:
    """Every check of a run's settings, before torch is imported: a bad value answers at once."""
    cfg.validate()
    parse_report_to(cfg.report_to)
    algo_cfg.validate(cfg.group_size, cfg.prompts_per_step * cfg.group_size)


def cmd_train(args) -> None:
    cfg = run_config(args.run)
    check_run(cfg, args.algo)
    from ..train import train

    print_run_summary(train(cfg, args.algo))


def cmd_resume(args) -> None:
    from ..train import resume

    print_run_summary(resume(args.run_dir, steps=args.steps or None))


def print_run_summary(df) -> None:
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


def cmd_compare(args) -> None:
    specs = [s.strip() for s in args.algos.split(",") if s.strip()]
    if not specs:
        raise ValueError("--algos is empty; give e.g. --algos reinforce,grpo")
    if args.seeds < 1 or args.jobs < 0:
        raise ValueError(f"--seeds must be >= 1 and --jobs >= 0 (0 = auto), got {args.seeds} and {args.jobs}")
    runs = []  # check everything before the first run starts
    for spec in specs:
        name, options = parse_algo_spec(spec)
        cfg, algo_cfg = run_config(args.run, algo=name), make_config(name, **options)
        check_run(cfg, algo_cfg)
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


def cmd_eval(args) -> None:
    if args.samples < 1 or args.prompts < 0:
        raise ValueError("--samples must be >= 1 and --prompts >= 0")
    if not (args.temperature > 0 and 0 < args.top_p <= 1):
        raise ValueError(f"--temperature must be > 0 and --top-p in (0, 1], got {args.temperature} and {args.top_p}")
    from ..engine.precision import resolve_precision
    from ..engine.settings import EngineSettings
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
        engine=EngineSettings(autocast_dtype=resolve_precision(args.dtype, policy.device)[1]),
    )
    for s in ev.pop("samples", []):
        print(f"  {s['prompt']}{s['completion']}   (answer {s['answer']}, reward {s['reward']:g})")
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in ev.items()}, indent=2))


def cmd_plot(args) -> None:
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


def print_report(report: dict, saved: str) -> None:
    """What a model-making command prints: its report (without the config it ran with), then where the model went."""
    print(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    print(saved)


def cmd_sft(args) -> None:
    from ..workbook.sft import sft

    print_report(sft(args), f"saved the base model to {args.out_dir}")


def cmd_trap_model(args) -> None:
    from ..workbook.sft import trap_finetune

    print_report(
        trap_finetune(args),
        f"saved the trap regime's base model to {args.out_dir} (train on it with --task trap --model {args.out_dir})",
    )


def cmd_emergence_model(args) -> None:
    from ..workbook.emergence import make_model

    report = make_model(args)
    out = report["config"]["out_dir"]
    print_report(report, f"saved to {out} (train on it with --model {out})")


def cmd_rm(args) -> None:
    from ..workbook.reward_model import train_reward_model

    print_report(train_reward_model(args), f"saved the reward model to {args.out_dir}")


def cmd_data(args) -> None:
    from ..engine.runs import check_output_files
    from ..tasks import make_addition_data

    check_output_files(
        [Path(args.out_dir) / "addition_train.jsonl", Path(args.out_dir) / "addition_test.jsonl"], args.overwrite
    )
    paths = make_addition_data(args.out_dir, args.n_train, args.n_test, args.seed)
    print(f"wrote {paths['train']} and {paths['test']}")


def cmd_student(args) -> None:
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


def cmd_diagnose(args) -> None:
    from .diagnose import diagnose_path

    print(
        diagnose_path(
            args.run_dir, plot={"": True, "none": False}.get(args.plot, args.plot), accuracy_key=args.accuracy_key
        )[2]
    )
