"""Seconds per training step for each algorithm, split into its stages.

One JSON line per algorithm: median seconds per step for sampling
(``generate``), scoring (``reward``), the no-grad old/reference log-prob passes
(``logprobs``) and the ``update``; completion tokens per step and per second;
the share of the step spent inside model forward/backward passes
(``model_share``; the rest is Python and bookkeeping overhead); and peak memory
(each algorithm runs in its own process so the peaks do not mix).

Examples::

    python benchmarks/step_throughput.py                      # 4 algorithms, 32 prompts x 8
    python benchmarks/step_throughput.py --algos grpo --prompts 16 --sampler hf --length-buckets 1   # the slow paths
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from _common import ModelTimer, machine_info, peak_memory_mb, without_evaluation
from rlalgos.config import TrainConfig

STAGES = ("generate", "reward", "logprobs", "update")


def measure(args) -> dict:
    """Train ``args.steps + 1`` steps of one algorithm with evaluation switched off;
    the first step is a warm-up and is not counted."""
    import rlalgos.train as train_mod
    from rlalgos.algorithms import make_config

    algo_cfg = make_config(args.algo, **({"length_buckets": args.length_buckets} if args.length_buckets else {}))
    with tempfile.TemporaryDirectory() as d, ModelTimer() as mt, without_evaluation():
        cfg = TrainConfig(
            algo=args.algo,
            model=args.model,
            steps=args.steps + 1,
            prompts_per_step=args.prompts,
            group_size=args.group_size,
            max_new_tokens=args.max_new_tokens,
            sampler=args.sampler,
            log_kl=not args.no_log_kl,
            device=args.device,
            logits_chunk=args.logits_chunk,
            eval_every=0,
            out_dir=d,
            progress=False,
        )
        df = train_mod.train(cfg, algo_cfg)
    steps = df[df["step"] >= 2]  # drop the (empty) eval row and the warm-up step
    row = {
        "measure": "step",
        "algo": args.algo,
        "prompts": args.prompts,
        "group_size": args.group_size,
        "max_new_tokens": args.max_new_tokens,
        "sampler": args.sampler,
        "length_buckets": algo_cfg.length_buckets,
        "log_kl": not args.no_log_kl,
        "logits_chunk": args.logits_chunk,
        "step_seconds": round(steps["step_seconds"].median(), 3),
    }
    for s in STAGES:
        row[f"{s}_seconds"] = round(steps[f"{s}_seconds"].median(), 3)
    row["other_seconds"] = round(row["step_seconds"] - sum(row[f"{s}_seconds"] for s in STAGES), 3)
    tokens = (steps["completion_len"] * args.prompts * args.group_size).median()
    if "ds_sampled_groups" in steps:  # dynamic sampling generates more than one batch
        tokens = (steps["completion_len"] * steps["ds_sampled_groups"] * args.group_size).median()
    row["completion_tokens"] = int(tokens)
    row["tokens_per_second"] = round(tokens / row["step_seconds"], 1)
    trained = df[df["step"] >= 1]  # every training step, the warm-up included: mt saw them all
    row["model_share"] = round(mt.total / trained["step_seconds"].sum(), 3)
    row["model_forward_seconds"] = round(mt.forward / len(trained), 3)
    row["model_backward_seconds"] = round(mt.backward / len(trained), 3)
    row["peak_memory_mb"] = round(peak_memory_mb(), 1)
    return {**row, **machine_info()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algos", default="reinforce,ppo,grpo,dapo", help="comma-separated algorithm names")
    p.add_argument("--steps", type=int, default=5, help="measured steps per algorithm (after one warm-up step)")
    p.add_argument("--prompts", type=int, default=32, help="prompts per step")
    p.add_argument("--group-size", type=int, default=8, help="completions per prompt (G)")
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument(
        "--sampler",
        default="compact",
        choices=["compact", "hf"],
        help="rlalgos' compact sampler or transformers' generate",
    )
    p.add_argument(
        "--length-buckets",
        type=int,
        default=0,
        help="forward/backward passes per minibatch (0 = the algorithm's default)",
    )
    p.add_argument("--no-log-kl", action="store_true", help="skip the reference pass that only logs KL")
    p.add_argument(
        "--logits-chunk",
        type=int,
        default=TrainConfig.logits_chunk,
        help="tokens per LM-head chunk (-1 = auto, 0 = unchunked)",
    )
    p.add_argument("--model", default="", help="policy folder or hub name (default: the shipped base model)")
    p.add_argument("--device", default="auto")
    p.add_argument("--algo", help=argparse.SUPPRESS)  # internal: measure one algorithm in this process
    args = p.parse_args()
    if args.algo:
        print(json.dumps(measure(args)), flush=True)
        return
    # one process per algorithm, so each peak-memory figure is its own
    for algo in [a for a in args.algos.split(",") if a]:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--algo", algo] + [a for a in sys.argv[1:]]
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
