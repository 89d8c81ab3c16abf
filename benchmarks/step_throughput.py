"""Seconds per training step, split into rollout and update, per algorithm.

Prints one JSON line per algorithm. Example::

    python benchmarks/step_throughput.py --algos reinforce,grpo --steps 5 --prompts 32 --group-size 8
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time

import torch

from rlalgos.algorithms import make_config
from rlalgos.model import count_parameters, load_policy
from rlalgos.rollout import SamplingConfig, rollout
from rlalgos.tasks import addition_task
from rlalgos.train import TrainConfig, train


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algos", default="reinforce,ppo,grpo,dapo")
    p.add_argument("--steps", type=int, default=5, help="measured steps per algorithm (after one warm-up step)")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=48)
    args = p.parse_args()
    machine = {"torch": torch.__version__, "threads": torch.get_num_threads(), "cpu": platform.processor() or platform.machine(), "cuda": torch.cuda.is_available()}

    # one bare rollout (generation + old and reference log-probs), the unit every algorithm pays
    policy, tok = load_policy()
    task = addition_task()
    sampling = SamplingConfig(max_new_tokens=args.max_new_tokens)
    rollout(policy, tok, task.train[: args.prompts], args.group_size, task.rewards, sampling)  # warm-up
    times = []
    for i in range(3):
        t0 = time.perf_counter()
        ro = rollout(policy, tok, task.train[i * args.prompts : (i + 1) * args.prompts], args.group_size, task.rewards, sampling, ref_model=policy)
        times.append(time.perf_counter() - t0)
    print(json.dumps({"measure": "rollout", "prompts": args.prompts, "group_size": args.group_size, "seconds": round(statistics.median(times), 3), "completion_tokens": int(ro.lengths.sum()), "parameters": count_parameters(policy), **machine}))

    for algo in [a for a in args.algos.split(",") if a]:
        with tempfile.TemporaryDirectory() as d:
            cfg = TrainConfig(algo=algo, steps=args.steps + 1, prompts_per_step=args.prompts, group_size=args.group_size, max_new_tokens=args.max_new_tokens, eval_every=0, eval_prompts=1, eval_samples=1, out_dir=d, progress=False)
            df = train(cfg, make_config(algo)).iloc[2:]  # drop the eval row and the warm-up step
        print(json.dumps({
            "measure": "step", "algo": algo, "prompts": args.prompts, "group_size": args.group_size,
            "step_seconds": round(df["step_seconds"].median(), 3),
            "rollout_seconds": round(df["rollout_seconds"].median(), 3),
            "update_seconds": round(df["update_seconds"].median(), 3),
            "tokens_per_second": round(df["tokens_per_second"].median(), 1), **machine,
        }))


if __name__ == "__main__":
    main()
