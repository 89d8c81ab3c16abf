"""Sweep speed-up: the same runs one after another with all threads, then
``--jobs`` at a time with ``cores // jobs`` threads each (``rlalgos.tools.sweep.run_many``:
this process is one lane, the longest runs start first), ``--repeats`` times, alternating.

Prints one JSON line: wall seconds of each way, the speed-up, and the runs. The
two ways give different numbers per run (the thread count changes float
reduction order, and RL trajectories then diverge); each way on its own is
reproducible.

Example::

    python benchmarks/sweep_speedup.py                      # 2 algorithms x 3 seeds x 20 steps (~5 min on 2 cores)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from _common import machine_info
from rlalgos.config import make_config
from rlalgos.tools.sweep import run_many, threads_per_job
from rlalgos.train import TrainConfig


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algos", default="grpo,dapo")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--eval-prompts", type=int, default=100)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="measure both ways this many times, alternating; the speed-up is the ratio of the medians",
    )
    p.add_argument("--out-dir", default="runs/bench/sweep")
    args = p.parse_args()
    algos = [a for a in args.algos.split(",") if a]

    def runs(way: str):
        return [
            (
                TrainConfig(
                    algo=a,
                    steps=args.steps,
                    prompts_per_step=args.prompts,
                    group_size=args.group_size,
                    eval_prompts=args.eval_prompts,
                    eval_samples=4,
                    eval_every=0,
                    seed=s,
                    overwrite=True,
                    progress=False,
                    out_dir=str(Path(args.out_dir) / way / f"{a}_s{s}"),
                ),
                make_config(a),
            )
            for a in algos
            for s in range(args.seeds)
        ]

    seconds = {"sequential": [], "parallel": []}
    for _ in range(args.repeats):
        for way, jobs in (("sequential", 1), ("parallel", args.jobs)):
            t0 = time.perf_counter()
            out = run_many(runs(way), jobs=jobs, progress=False)
            seconds[way].append(time.perf_counter() - t0)
            failed = [r for r in out if isinstance(r, Exception)]
            if failed:
                raise SystemExit(f"{len(failed)} runs failed: {failed[0]}")
    med = {way: statistics.median(v) for way, v in seconds.items()}
    print(
        json.dumps(
            {
                "measure": "sweep_speedup",
                "runs": len(algos) * args.seeds,
                "algos": algos,
                "seeds": args.seeds,
                "steps": args.steps,
                "sequential_seconds": round(med["sequential"], 2),
                "sequential_threads": torch.get_num_threads(),
                "parallel_seconds": round(med["parallel"], 2),
                "jobs": args.jobs,
                "threads_per_job": threads_per_job(args.jobs),
                "speedup": round(med["sequential"] / med["parallel"], 3),
                "repeats": args.repeats,
                "speedups": [round(a / b, 3) for a, b in zip(seconds["sequential"], seconds["parallel"])],
                **machine_info(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
