"""Learning efficiency: how many steps, seconds and sampled answers each
algorithm needs to reach a test accuracy, over several seeds.

Every algorithm trains from the shipped base model with its own defaults (the
settings of the learning tests: 32 prompts x G=8 per step, lr 1e-4) and is
evaluated every ``--eval-every`` steps on the same test prompts (sampled pass@1,
200 prompts x 4 samples). One JSON line per run, then one per algorithm with:

* ``final_eval_accuracy`` mean and standard deviation over seeds;
* ``steps_to_X`` / ``seconds_to_X`` / ``samples_to_X`` for the thresholds
  (``--thresholds``) and for ``grpo_final`` (vanilla GRPO's mean final accuracy),
  read off the seed-averaged curve with linear interpolation between
  evaluations (null = never reached). Seconds count training steps only
  (evaluation excluded); samples count every completion generated, including
  the extra rounds of dynamic sampling;
* ``steps_vs_grpo``: steps to reach ``grpo_final`` relative to GRPO's own.

Runs go to ``--out-dir/<algo>_s<seed>``; ``--reuse`` reads finished runs
instead of training them again. A plot of the seed-averaged curves is written to
``--out-dir/learning_efficiency.png``.

Example::

    python benchmarks/learning_efficiency.py                       # 4 algorithms x 3 seeds x 60 steps (~25 min on 2 cores)
    python benchmarks/learning_efficiency.py --algos grpo,dapo --seeds 0 --steps 20
    python benchmarks/learning_efficiency.py --algos grpo,dapo:minibatches=4 --reuse   # a variant next to the finished grpo runs
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np
import pandas as pd

from _common import machine_info
from rlalgos.config import make_config, parse_algo_spec
from rlalgos.workbook.plots import plot_runs
from rlalgos.train import TrainConfig, load_metrics, train


def run_dir_for(spec: str, seed: int, args) -> Path:
    return Path(args.out_dir) / f"{spec.replace(':', '-')}_s{seed}"


def run_one(spec: str, seed: int, args) -> pd.DataFrame:
    run_dir = run_dir_for(spec, seed, args)
    if args.reuse and (run_dir / "metrics.jsonl").exists():
        df = load_metrics(run_dir)
        if df["step"].max() == args.steps:
            return df
    return train(*config_for(spec, seed, args))


def config_for(spec: str, seed: int, args) -> tuple[TrainConfig, object]:
    """The (TrainConfig, algorithm config) of one run. At the defaults, grpo:minibatches=4 and
    dapo:minibatches=4 are the registry's dapo-default-regime runs (tests/test_claims.py checks it)."""
    algo, options = parse_algo_spec(spec)
    cfg = TrainConfig(
        algo=algo,
        task=args.task,
        max_new_tokens=args.max_new_tokens,
        steps=args.steps,
        prompts_per_step=args.prompts,
        group_size=args.group_size,
        eval_every=args.eval_every,
        eval_prompts=args.eval_prompts,
        eval_samples=4,
        seed=seed,
        out_dir=str(run_dir_for(spec, seed, args)),
        overwrite=True,
        progress=not args.quiet,
    )
    return cfg, make_config(algo, **options)


def curve(df: pd.DataFrame, group_size: int, prompts: int) -> pd.DataFrame:
    """Per evaluation: step, eval accuracy, training seconds and completions sampled so far."""
    steps = df[df["step"] >= 1].sort_values("step")
    sampled = (
        steps["ds_sampled_groups"] * group_size
        if "ds_sampled_groups" in steps
        else pd.Series(prompts * group_size, index=steps.index)
    )
    sampled = sampled.fillna(prompts * group_size)
    acc = pd.DataFrame({"step": steps["step"], "seconds": steps["step_seconds"].cumsum(), "samples": sampled.cumsum()})
    ev = df.dropna(subset=["eval_accuracy"])[["step", "eval_accuracy"]]
    out = ev.merge(acc, on="step", how="left").fillna({"seconds": 0.0, "samples": 0.0})
    return out.reset_index(drop=True)


def first_crossing(c: pd.DataFrame, target: float, col: str) -> float | None:
    """``col`` (step, seconds or samples) where the accuracy curve first reaches
    ``target``, interpolating linearly between evaluations."""
    x, y = c[col].to_numpy(float), c["eval_accuracy"].to_numpy(float)
    for i in range(len(y)):
        if y[i] >= target - 1e-12:
            if i == 0:
                return float(x[0])
            f = (target - y[i - 1]) / (y[i] - y[i - 1])
            return float(x[i - 1] + f * (x[i] - x[i - 1]))
    return None


def mean_curve(curves: list[pd.DataFrame]) -> pd.DataFrame:
    """Seed-averaged curve over the evaluation steps all seeds share."""
    steps = sorted(set.intersection(*(set(c["step"]) for c in curves)))
    rows = [
        {
            "step": s,
            **{
                k: float(np.mean([c.loc[c["step"] == s, k].iloc[0] for c in curves]))
                for k in ("eval_accuracy", "seconds", "samples")
            },
        }
        for s in steps
    ]
    return pd.DataFrame(rows)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--algos",
        default="reinforce,ppo,grpo,dapo",
        help="comma-separated; options after colons, e.g. dapo:minibatches=4",
    )
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--task", default="addition", help="task spec, e.g. addition:terms=2-6 (a difficulty regime)")
    p.add_argument("--max-new-tokens", type=int, default=0, help="generation budget; 0 = the task's")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--eval-prompts", type=int, default=200)
    p.add_argument("--thresholds", default="0.45,0.5", help="accuracies to time (comma-separated)")
    p.add_argument("--out-dir", default="runs/bench/learning")
    p.add_argument("--reuse", action="store_true", help="read finished runs from --out-dir instead of training again")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    return p


def main() -> None:
    args = parser().parse_args()
    algos = [a for a in args.algos.split(",") if a]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    info = machine_info()

    curves: dict[str, list[pd.DataFrame]] = {}
    for seed in seeds:  # seed-major, so a stopped benchmark has every algorithm at the first seeds
        for algo in algos:
            df = run_one(algo, seed, args)
            c = curve(df, args.group_size, args.prompts)
            curves.setdefault(algo, []).append(c)
            print(
                json.dumps(
                    {
                        "measure": "learning_run",
                        "algo": algo,
                        "seed": seed,
                        "steps": args.steps,
                        "eval_accuracy": [round(v, 4) for v in c["eval_accuracy"]],
                        "eval_steps": c["step"].tolist(),
                        "train_seconds": round(float(c["seconds"].iloc[-1]), 1),
                        "samples": int(c["samples"].iloc[-1]),
                    }
                ),
                flush=True,
            )

    means = {a: mean_curve(cs) for a, cs in curves.items()}
    targets = {f"{float(t):.2f}": float(t) for t in args.thresholds.split(",") if t}
    if "grpo" in means:
        targets["grpo_final"] = float(means["grpo"]["eval_accuracy"].iloc[-1])
    grpo_steps = first_crossing(means["grpo"], targets["grpo_final"], "step") if "grpo" in means else None
    for algo, m in means.items():
        finals = [float(c["eval_accuracy"].iloc[-1]) for c in curves[algo]]
        line = {
            "measure": "learning_efficiency",
            "algo": algo,
            "seeds": len(finals),
            "steps": args.steps,
            "start_eval_accuracy": round(float(m["eval_accuracy"].iloc[0]), 4),
            "final_eval_accuracy": round(statistics.fmean(finals), 4),
            "final_eval_accuracy_sd": round(statistics.stdev(finals), 4) if len(finals) > 1 else 0.0,
            "best_eval_accuracy": round(float(m["eval_accuracy"].max()), 4),
            "train_seconds": round(float(m["seconds"].iloc[-1]), 1),
            "seconds_per_step": round(float(m["seconds"].iloc[-1]) / args.steps, 3),
        }
        for name, t in targets.items():
            line[f"target_{name}"] = round(t, 4)
            for col, label in (("step", "steps"), ("seconds", "seconds"), ("samples", "samples")):
                v = first_crossing(m, t, col)
                line[f"{label}_to_{name}"] = None if v is None else round(v, 1)
        if grpo_steps:
            s = line.get("steps_to_grpo_final")
            line["steps_vs_grpo"] = None if s is None else round(s / grpo_steps, 2)
        print(json.dumps({**line, **info}), flush=True)

    groups = {a: [load_metrics(run_dir_for(a, s, args)) for s in seeds] for a in algos}
    fig = plot_runs(
        groups,
        keys=["eval_accuracy", "eval_greedy_accuracy", "reward_mean", "entropy"],
        title="learning efficiency (mean over seeds)",
    )
    fig.savefig(Path(args.out_dir) / "learning_efficiency.png", dpi=110, bbox_inches="tight")


if __name__ == "__main__":
    main()
