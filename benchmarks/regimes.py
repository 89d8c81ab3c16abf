"""Improved GRPO against vanilla GRPO in regimes made for each failure mode, over seeds.

Each regime is a task setting where one failure of vanilla GRPO is present, and
every arm runs the same prompts, budget, learning rate and minibatches (seed k
gives every arm the same prompts and first rollout, so arms are paired by seed):

* ``zero_signal``: 2- to 6-term sums (64-token budget). ~60% of groups are all
  right or all wrong: the failure dynamic sampling removes.
* ``entropy_push``: the default task pushed hard (lr 2e-4, no KL, 4 minibatches,
  60 steps): the setting where entropy falls and the clip binds most.
* ``truncation``: 3- and 4-term sums with a 24-token budget, below the longest
  correct scratchpad: half the answers are cut off (overlong shaping's case).

For every arm against the regime's vanilla arm, one JSON line per metric with the
mean paired difference at the end of the runs and its 95% t-interval
(``rlalgos.workbook.stats``), and one line per arm with the steps / generated answers it
took to reach halfway from the base model to vanilla's final accuracy (on the
seed-averaged curve, interpolated between evaluations). One figure per regime
goes to ``--fig-dir`` (docs/claims.md links them).

Runs go to ``--out-dir/<regime>/<spec>_s<seed>`` (the naming of
``learning_efficiency.py``) and finished runs are read back, not trained again,
so more seeds can be added later. ``--jobs 2`` runs two at a time, each pinned to
one thread (``rlalgos.tools.sweep.run_many``).

Example::

    python benchmarks/regimes.py                          # all three (~35 min on 2 cores from scratch)
    python benchmarks/regimes.py --only truncation --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from _common import machine_info
from learning_efficiency import curve, first_crossing, mean_curve
from rlalgos.config import make_config, parse_algo_spec
from rlalgos.engine.runs import load_run_config
from rlalgos.workbook.plots import plot_runs
from rlalgos.workbook.stats import effect_table
from rlalgos.tools.sweep import run_many
from rlalgos.train import TrainConfig, load_metrics
from rlalgos.workbook.experiments import REGIMES  # defined once, beside every experiment the claims measure


def config_for(regime: dict, spec: str, seed: int, out_dir: Path, args) -> TrainConfig:
    algo, _ = parse_algo_spec(spec)
    return TrainConfig(
        algo=algo,
        task=regime["task"],
        max_new_tokens=regime["max_new_tokens"],
        steps=args.steps or regime["steps"],
        prompts_per_step=args.prompts,
        group_size=args.group_size,
        eval_every=args.eval_every,
        eval_prompts=args.eval_prompts or regime["eval_prompts"],
        eval_samples=4,
        seed=seed,
        out_dir=str(out_dir / f"{spec.replace(':', '-')}_s{seed}"),
        overwrite=True,
        progress=False,
    )


def finished(cfg: TrainConfig) -> bool:
    """Whether ``cfg.out_dir`` already holds this run, trained to the end with the same settings."""
    path = Path(cfg.out_dir)
    if not (path / "metrics.jsonl").exists() or not (path / "config.json").exists():
        return False
    done, _ = load_run_config(path)
    same = all(
        getattr(done, k) == getattr(cfg, k)
        for k in (
            "task",
            "max_new_tokens",
            "steps",
            "prompts_per_step",
            "group_size",
            "eval_every",
            "eval_prompts",
            "seed",
        )
    )
    return same and load_metrics(path)["step"].max() == cfg.steps


def run_regime(name: str, regime: dict, seeds: list[int], args) -> None:
    out_dir = Path(args.out_dir) / name
    todo = [
        (cfg, algo_config(spec))
        for seed in seeds
        for spec in regime["arms"].values()
        for cfg in [config_for(regime, spec, seed, out_dir, args)]
        if not finished(cfg)
    ]
    for r in run_many(todo, jobs=args.jobs, progress=not args.quiet):
        if isinstance(r, Exception):
            raise r
    groups = {
        arm: [load_metrics(config_for(regime, spec, s, out_dir, args).out_dir) for s in seeds]
        for arm, spec in regime["arms"].items()
    }
    info = {
        "regime": name,
        "task": regime["task"],
        "max_new_tokens": regime["max_new_tokens"],
        "steps": args.steps or regime["steps"],
        "seeds": len(seeds),
    }
    keys = ["eval_accuracy", "eval_pass@4", "eval_greedy_accuracy"] + regime["extra"]
    table = effect_table(groups, "grpo", keys)
    for (arm, metric), row in table.iterrows():
        print(
            json.dumps(
                {
                    "measure": "regime_effect",
                    **info,
                    "arm": arm,
                    "spec": regime["arms"][arm],
                    "metric": metric,
                    **{
                        k: (round(float(row[k]), 4) if isinstance(row[k], (float, np.floating)) else row[k])
                        for k in row.index
                    },
                }
            ),
            flush=True,
        )
    curves = {arm: mean_curve([curve(df, args.group_size, args.prompts) for df in dfs]) for arm, dfs in groups.items()}
    start, vanilla_final = (
        float(curves["grpo"]["eval_accuracy"].iloc[0]),
        float(curves["grpo"]["eval_accuracy"].iloc[-1]),
    )
    target = start + 0.5 * (vanilla_final - start)
    base = {col: first_crossing(curves["grpo"], target, col) for col in ("step", "samples")}
    for arm, c in curves.items():
        reach = {col: first_crossing(c, target, col) for col in ("step", "samples")}
        finals = [float(df["eval_accuracy"].dropna().iloc[-1]) for df in groups[arm]]
        print(
            json.dumps(
                {
                    "measure": "regime_arm",
                    **info,
                    "arm": arm,
                    "spec": regime["arms"][arm],
                    "start_eval_accuracy": round(start, 4),
                    "final_eval_accuracy": round(float(np.mean(finals)), 4),
                    "final_per_seed": [round(f, 4) for f in finals],
                    "target": round(target, 4),
                    "steps_to_target": None if reach["step"] is None else round(reach["step"], 1),
                    "samples_to_target": None if reach["samples"] is None else round(reach["samples"]),
                    "steps_ratio_vs_grpo": None
                    if not (reach["step"] and base["step"])
                    else round(reach["step"] / base["step"], 2),
                    "samples_ratio_vs_grpo": None
                    if not (reach["samples"] and base["samples"])
                    else round(reach["samples"] / base["samples"], 2),
                    "seconds_per_step": round(float(np.mean([df["step_seconds"].mean() for df in groups[arm]])), 3),
                    **machine_info(),
                }
            ),
            flush=True,
        )
    fig = plot_runs(
        groups,
        keys=["eval_accuracy", "eval_pass@4"] + regime["extra"],
        smooth=5,
        title=f"{name}: {regime['task']}, {info['steps']} steps, {len(seeds)} seeds (band: lowest to highest seed)",
    )
    Path(args.fig_dir).mkdir(parents=True, exist_ok=True)
    fig.savefig(Path(args.fig_dir) / f"regime_{name}.png", dpi=90, bbox_inches="tight")


def algo_config(spec: str):
    """``"dapo:minibatches=4"`` -> the algorithm's config with those options."""
    algo, options = parse_algo_spec(spec)
    return make_config(algo, **options)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(REGIMES), help="comma-separated regimes: " + ", ".join(REGIMES))
    p.add_argument("--seeds", default="", help="override every regime's seeds, e.g. 0,1,2")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--steps", type=int, default=0, help="override every regime's steps (0: the regime's own)")
    p.add_argument("--prompts", type=int, default=16, help="prompts per step")
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument(
        "--eval-prompts", type=int, default=0, help="override every regime's test prompts (0: the regime's own)"
    )
    p.add_argument("--out-dir", default="runs/bench/regimes")
    p.add_argument("--fig-dir", default="docs/figures")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args()
    for name in [n for n in args.only.split(",") if n]:
        if name not in REGIMES:
            raise SystemExit(f"unknown regime {name!r}; pick from {', '.join(REGIMES)}")
        regime = REGIMES[name]
        seeds = [int(s) for s in (args.seeds or regime["seeds"]).split(",") if s]
        run_regime(name, regime, seeds, args)


if __name__ == "__main__":
    main()
