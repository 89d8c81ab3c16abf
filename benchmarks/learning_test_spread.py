"""The spread behind the learning tests: run each case of ``tests/test_learning.py``
over several seeds and report the mean and standard deviation of its gain in
sampled test accuracy, and the threshold the test may safely assert.

Results move between CPU models (float kernels differ, RL trajectories then
diverge), and the spread across seeds is the measurable stand-in for that.
The learning tests assert the *mean* gain over ``TEST_SEEDS`` seeds, so the
threshold printed here is ``mean - 3 * sd / sqrt(len(TEST_SEEDS))``: a
3-standard-error margin below the expected value of what the test computes.

Runs go side by side in ``--jobs`` worker processes, each pinned to
``cores / jobs`` threads (two busy 2-thread processes on 2 cores slow each
other ~10x; two 1-thread processes give ~1.2x the throughput of one 2-thread
run). One JSON line per run, then one per case.

Example::

    python benchmarks/learning_test_spread.py --seeds 0,1,2,3,4,5 --jobs 2   # ~13 min on 2 cores (30-step cases)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def run_case(algo: str, steps: int, prompts: int, seed: int, threads: int, out_dir: str, eval_every: int = 0) -> dict:
    import torch

    torch.set_num_threads(threads)
    from learning_cases import run_learning_case

    run_dir = Path(out_dir) / f"{algo}_p{prompts}_t{steps}_s{seed}"
    before, after, seconds = run_learning_case(algo, steps, prompts, seed, run_dir, eval_every=eval_every)
    from rlalgos.train import load_metrics

    ev = load_metrics(run_dir).dropna(subset=["eval_accuracy"])  # with --eval-every: the gain at each evaluated step
    return {
        "measure": "learning_test_run",
        "algo": algo,
        "steps": steps,
        "prompts": prompts,
        "seed": seed,
        "threads": threads,
        "before": round(before, 4),
        "after": round(after, 4),
        "gain": round(after - before, 4),
        "train_seconds": round(seconds, 1),
        "gain_at": {int(r.step): round(r.eval_accuracy - before, 4) for r in ev.itertuples() if r.step > 0},
    }


def main() -> None:
    from learning_cases import CASES, TEST_SEEDS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algos", default=",".join(c[0] for c in CASES))
    p.add_argument("--seeds", default="0,1,2,3,4,5")
    p.add_argument("--jobs", type=int, default=2, help="worker processes, each with cores // jobs threads")
    p.add_argument("--prompts", type=int, default=0, help="prompts per step for every case (0 = each case's own)")
    p.add_argument(
        "--steps", default="", help="steps per case instead of the tests', e.g. grpo=20,ppo=6 (to size shorter cases)"
    )
    p.add_argument(
        "--eval-every",
        type=int,
        default=0,
        help="evaluate in between too: each run's line then has its gain at every evaluated step",
    )
    p.add_argument("--out-dir", default="runs/bench/learning_spread")
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s]
    steps_for = {a: int(n) for a, n in (kv.split("=") for kv in args.steps.split(",") if kv)}
    cases = [(a, steps_for.get(a, n), pr, t) for a, n, pr, t in CASES if a in args.algos.split(",")]
    threads = max(1, (os.cpu_count() or 2) // args.jobs)
    gains: dict[str, list[float]] = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [
            pool.submit(run_case, algo, steps, args.prompts or prompts, seed, threads, args.out_dir, args.eval_every)
            for algo, steps, prompts, _ in cases
            for seed in seeds
        ]
        for f in as_completed(futures):
            row = f.result()
            gains.setdefault(row["algo"], []).append(row["gain"])
            print(json.dumps(row), flush=True)
    for algo, steps, prompts, threshold in cases:
        g = gains.get(algo, [])
        if len(g) < 2:
            continue
        mean, sd = statistics.fmean(g), statistics.stdev(g)
        safe = mean - 3 * sd / math.sqrt(len(TEST_SEEDS))
        print(
            json.dumps(
                {
                    "measure": "learning_test_spread",
                    "algo": algo,
                    "steps": steps,
                    "prompts": args.prompts or prompts,
                    "seeds": len(g),
                    "gain_mean": round(mean, 4),
                    "gain_sd": round(sd, 4),
                    "gain_min": min(g),
                    "test_seeds": len(TEST_SEEDS),
                    "safe_threshold_for_mean": round(safe, 4),
                    "test_threshold": threshold,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
