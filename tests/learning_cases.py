"""The learning tests' cases, shared with ``benchmarks/learning_test_spread.py``
(which measures the spread the thresholds are sized from)."""

from __future__ import annotations

from pathlib import Path

# (algorithm, steps, threshold on the mean gain in sampled test accuracy over TEST_SEEDS)
CASES = [
    ("reinforce", 60, 0.10),
    ("ppo", 20, 0.10),
    ("grpo", 60, 0.10),
    ("dapo", 60, 0.10),
]
TEST_SEEDS = (0, 1)


def run_learning_case(algo: str, steps: int, seed: int, out_dir: Path) -> tuple[float, float, float]:
    """Train ``algo`` from the shipped base model (32 prompts x 8, its defaults)
    and return (sampled test accuracy before, after, training seconds), on
    200 test prompts x 4 samples."""
    from rlalgos.algorithms import make_config
    from rlalgos.train import TrainConfig, train

    cfg = TrainConfig(algo=algo, steps=steps, eval_every=0, eval_prompts=200, eval_samples=4, seed=seed, out_dir=str(out_dir), progress=False, save_every=0, overwrite=True)
    df = train(cfg, make_config(algo))
    ev = df.dropna(subset=["eval_accuracy"])
    return float(ev["eval_accuracy"].iloc[0]), float(ev["eval_accuracy"].iloc[-1]), float(df["step_seconds"].sum())
