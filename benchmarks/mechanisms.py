"""Mechanisms of the improved-GRPO tricks, measured directly on the shipped model
(see ``rlalgos/workbook/mechanisms.py``), over several seeds. Prints JSON lines:

* ``aggregation``: per loss aggregation mode, how hard the policy-gradient loss
  pushes down a planted long wrong answer (its working repeated) against the
  sampled wrong answers of the same groups, per token and per answer, and the
  change of their mean token log-prob after one AdamW step;
* ``truncation``: per generation budget, the share of answers cut off, the share
  of those that were already correct, and what the overlong filter would remove
  from the groups that carry signal;
* ``signal``: per number of terms (difficulty), the share of groups that carry
  any signal, i.e. what dynamic sampling keeps and drops.

Example::

    python benchmarks/mechanisms.py --seeds 0,1,2      # ~3 min on 2 cores
"""

from __future__ import annotations

import argparse
import json
import statistics

import pandas as pd
import torch

from _common import machine_info
from rlalgos.workbook.mechanisms import (
    aggregation_push,
    plant_long_wrong,
    signal_census,
    summarize_push,
    truncation_census,
)
from rlalgos.model import load_policy
from rlalgos.tasks import addition_task, make_addition_split


def mean_sd(values: list[float]) -> dict:
    return {
        "mean": round(statistics.fmean(values), 4),
        "sd": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0,
        "values": [round(v, 4) for v in values],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument(
        "--prompts", type=int, default=32, help="prompts per measurement (aggregation); twice this for the censuses"
    )
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--budgets", default="20,24,28,32,48", help="generation budgets for the truncation census")
    p.add_argument("--only", default="aggregation,truncation,signal")
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s]
    only = set(args.only.split(","))
    info = machine_info()
    policy, tok = load_policy(None, device="cpu")
    task = addition_task()

    if "aggregation" in only:
        per_seed = []
        for s in seeds:
            rows = make_addition_split(args.prompts, seed=100 + s, terms=(2, 3))
            ro, planted = plant_long_wrong(policy, tok, task, rows, args.group_size, 48, seed=s)
            per_seed.append(summarize_push(aggregation_push(policy, ro, planted, max_len=48)))
        for mode in per_seed[0].index:
            line = {"measure": "aggregation", "mode": mode, "seeds": len(seeds)}
            for col in per_seed[0].columns:
                line[col] = mean_sd([float(t.loc[mode, col]) for t in per_seed])
            print(json.dumps({**line, **info}), flush=True)

    if "truncation" in only:
        for budget in [int(b) for b in args.budgets.split(",") if b]:
            runs = [
                truncation_census(
                    policy,
                    tok,
                    task,
                    make_addition_split(2 * args.prompts, seed=200 + s, terms=(3, 4)),
                    args.group_size,
                    budget,
                    seed=s,
                )
                for s in seeds
            ]
            line = {
                "measure": "truncation",
                "budget": budget,
                "terms": [3, 4],
                "answers_per_seed": runs[0]["answers"],
                "seeds": len(seeds),
            }
            for k in runs[0]:
                if k not in ("budget", "answers"):
                    line[k] = mean_sd([r[k] for r in runs])
            print(json.dumps({**line, **info}), flush=True)

    if "signal" in only:
        tables = [
            signal_census(
                policy,
                tok,
                task,
                make_addition_split(2 * args.prompts, seed=300 + s, terms=(2, 3, 4, 5, 6)),
                args.group_size,
                seed=s,
            )
            for s in seeds
        ]
        total = pd.concat(tables).groupby(level=0).sum()
        for n_terms, row in total.iterrows():
            print(
                json.dumps(
                    {
                        "measure": "signal",
                        "n_terms": int(n_terms),
                        "groups": int(row["groups"]),
                        "informative_frac": round(row["informative"] / row["groups"], 4),
                        "all_right_frac": round(row["all_right"] / row["groups"], 4),
                        "all_wrong_frac": round(row["all_wrong"] / row["groups"], 4),
                        "seeds": len(seeds),
                        **info,
                    }
                ),
                flush=True,
            )
        kept = total["informative"] / total["informative"].sum()
        sampled = total["groups"] / total["groups"].sum()
        print(
            json.dumps(
                {
                    "measure": "signal_summary",
                    "informative_frac": round(float(total["informative"].sum() / total["groups"].sum()), 4),
                    "informative_frac_per_seed": [
                        round(float(t["informative"].sum() / t["groups"].sum()), 4) for t in tables
                    ],
                    "sampled_mix": {int(k): round(float(v), 3) for k, v in sampled.items()},
                    "kept_mix": {int(k): round(float(v), 3) for k, v in kept.items()},
                    **info,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    torch.set_grad_enabled(True)
    main()
