"""It actually learns: RL from the shipped base model raises sampled test accuracy.

Each case trains one seed and asserts its gain; the thresholds are sized from the
spread measured over six seeds (see ``learning_cases.py``), so the tests hold on
any machine of this kind, not only on the one they were written on. Not timed; the
four runs take about 2-5 minutes each at one thread, and ``make test`` runs them
first, on both workers. Skip with ``-m "not slow"``.
"""

import statistics

import pytest

from learning_cases import CASES, TEST_SEEDS, run_learning_case


@pytest.mark.slow
@pytest.mark.parametrize("algo,steps,prompts,threshold", CASES, ids=[c[0] for c in CASES])
def test_rl_raises_test_accuracy(algo, steps, prompts, threshold, tmp_path):
    runs = [run_learning_case(algo, steps, prompts, seed, tmp_path / f"s{seed}") for seed in TEST_SEEDS]
    for seed, (before, after, seconds) in zip(TEST_SEEDS, runs):
        print(
            f"{algo} seed {seed}: sampled test accuracy {before:.3f} -> {after:.3f} in {steps} steps of {prompts} x 8, {seconds:.0f}s"
        )
        assert 0.25 <= before <= 0.60, "the shipped base model left its accuracy window"
    gain = statistics.fmean(after - before for before, after, _ in runs)
    assert gain >= threshold, (
        f"{algo} raised test accuracy by {gain:+.3f} (seeds {TEST_SEEDS}), less than the +{threshold:.2f} sized from the seed spread"
    )
