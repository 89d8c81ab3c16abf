"""The learning tests' cases, shared with ``benchmarks/learning_test_spread.py``
(which measures the spread the thresholds are sized from).

Measured with that benchmark (6 seeds each, 0-5, one thread per run, 2-core
x86-64 machine, eval 200 test prompts x 4 samples), gain in sampled test accuracy:

| algorithm | steps | gains over seeds 0-5 | mean | sd | threshold for one run (mean - 3 sd) |
|---|---|---|---|---|---|
| reinforce | 60 | .164 .121 .165 .119 .156 .179 | .151 | .025 | .07 (.076) |
| ppo       | 20 | .084 .100 .119 .121 .099 .149 | .112 | .023 | .04 (.043) |
| grpo      | 60 | .139 .133 .176 .142 .147 .193 | .155 | .024 | .08 (.083) |
| dapo      | 60 | .194 .155 .140 .158 .147 .193 | .164 | .023 | .09 (.095) |

Each test trains one seed (``TEST_SEEDS``) and asserts its gain, so each
threshold sits 3 standard deviations of the seed spread below the measured
mean (a run on another machine is as likely to land low as a run with another
seed), and 1.9-3.3 sd above zero after rounding down, so a pass still shows the
algorithm learns. Earlier the tests asserted the mean of seeds 0 and 1 against
mean - 3 sd / sqrt 2 (.09/.06/.10/.11): the same check at twice the cost; one seed
keeps ``make test`` within 15 minutes. The spread across seeds stands in for the
spread across CPU models and thread counts, which moves single runs as much (ppo
at seed 0 gained +.145 in the README's earlier 2-thread run; this 1-thread sweep
gave +.084).
"""

from __future__ import annotations

from pathlib import Path

# (algorithm, steps, threshold on the gain in sampled test accuracy of each run in TEST_SEEDS)
CASES = [
    ("reinforce", 60, 0.07),
    ("ppo", 20, 0.04),
    ("grpo", 60, 0.08),
    ("dapo", 60, 0.09),
]
TEST_SEEDS = (0,)


def run_learning_case(algo: str, steps: int, seed: int, out_dir: Path) -> tuple[float, float, float]:
    """Train ``algo`` from the shipped base model (32 prompts x 8, its defaults)
    and return (sampled test accuracy before, after, training seconds), on
    200 test prompts x 4 samples."""
    from rlalgos.config import TrainConfig, make_config
    from rlalgos.train import train

    cfg = TrainConfig(algo=algo, steps=steps, eval_every=0, eval_prompts=200, eval_samples=4, seed=seed, out_dir=str(out_dir), progress=False, save_every=0, overwrite=True)
    df = train(cfg, make_config(algo))
    ev = df.dropna(subset=["eval_accuracy"])
    return float(ev["eval_accuracy"].iloc[0]), float(ev["eval_accuracy"].iloc[-1]), float(df["step_seconds"].sum())
