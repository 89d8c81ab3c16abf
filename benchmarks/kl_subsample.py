"""The logged KL on a subsample of answers (``--kl-sample-rows``): what it saves, how noisy it is.

For each seed, the same ``dapo`` run (its KL coefficient is 0, so the KL is only
logged) twice: with the reference pass on every answer (exact) and on
``--rows`` answers per step. The two runs are the same run (same samples, same
weights: the subsample draws no random numbers), so step k's estimate can be put
next to step k's exact value. Reports, per seed and overall: median seconds per
step and in the no-grad log-prob passes, each way; the estimate's error against
the exact KL (mean absolute, relative to the exact value); the mean stated
standard error; and how often the exact value lies within 1.96 stated standard
errors (should be ~95%).

Example::

    python benchmarks/kl_subsample.py --seeds 0,1,2 --steps 40 --rows 32
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile

from _common import machine_info
from rlalgos.algorithms import make_config
from rlalgos.train import TrainConfig, train


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algo", default="dapo", help="an algorithm whose KL coefficient is 0 (the KL is only logged)")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--rows", type=int, default=32, help="answers per step the KL is measured on")
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    algo = make_config(args.algo)
    out = {"exact": {"step": [], "logprobs": []}, "sampled": {"step": [], "logprobs": []}}
    err, rel, se, cover = [], [], [], []
    for seed in seeds:
        dfs = {}
        for way, rows in (("exact", 0), ("sampled", args.rows)):
            with tempfile.TemporaryDirectory() as d:
                cfg = TrainConfig(
                    algo=args.algo,
                    steps=args.steps,
                    prompts_per_step=args.prompts,
                    group_size=args.group_size,
                    eval_every=0,
                    eval_prompts=1,
                    eval_samples=1,
                    save_every=0,
                    kl_sample_rows=rows,
                    seed=seed,
                    out_dir=d,
                    progress=False,
                )
                df = train(cfg, algo)
            dfs[way] = df[df.step >= 2]  # step 1: the policy is the reference (KL 0), and the warm-up
            out[way]["step"] += dfs[way]["step_seconds"].tolist()
            out[way]["logprobs"] += dfs[way]["logprobs_seconds"].tolist()
        x, e = dfs["exact"], dfs["sampled"]
        assert (x["reward_mean"].values == e["reward_mean"].values).all(), (
            "the two runs differ: the subsample must not change the run"
        )
        d = e["kl"].values - x["kl"].values
        err += list(abs(d))
        rel += list(abs(d) / x["kl"].values)
        se += e["kl_stderr"].tolist()
        cover += list(abs(d) <= 1.96 * e["kl_stderr"].values)
        print(
            json.dumps(
                {
                    "measure": "kl_subsample_seed",
                    "seed": seed,
                    "exact_kl_last": round(float(x["kl"].iloc[-1]), 4),
                    "estimate_kl_last": round(float(e["kl"].iloc[-1]), 4),
                    "stderr_last": round(float(e["kl_stderr"].iloc[-1]), 4),
                    "mean_rel_error": round(statistics.fmean(abs(d) / x["kl"].values), 3),
                }
            ),
            flush=True,
        )
    med = {w: {k: statistics.median(v) for k, v in o.items()} for w, o in out.items()}
    print(
        json.dumps(
            {
                "measure": "kl_subsample",
                "algo": args.algo,
                "seeds": seeds,
                "steps": args.steps,
                "rows_per_step": args.prompts * args.group_size,
                "kl_sample_rows": args.rows,
                "step_seconds_exact": round(med["exact"]["step"], 3),
                "step_seconds_sampled": round(med["sampled"]["step"], 3),
                "step_ratio": round(med["sampled"]["step"] / med["exact"]["step"], 3),
                "logprobs_seconds_exact": round(med["exact"]["logprobs"], 3),
                "logprobs_seconds_sampled": round(med["sampled"]["logprobs"], 3),
                "mean_abs_error": round(statistics.fmean(err), 5),
                "mean_rel_error": round(statistics.fmean(rel), 3),
                "mean_stated_stderr": round(statistics.fmean(se), 5),
                "coverage_1.96se": round(statistics.fmean(cover), 3),
                "steps_compared": len(err),
                **machine_info(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
