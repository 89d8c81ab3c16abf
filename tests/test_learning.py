"""It actually learns: fixed-seed runs on the shipped base model raise test accuracy.

Not timed; each run takes a few minutes on 2 CPU cores. Skip with ``-m "not slow"``.
"""

import pytest

from rlalgos.algorithms import make_config
from rlalgos.train import TrainConfig, train

# (algorithm, steps, required gain in sampled test accuracy, config overrides)
CASES = [
    ("reinforce", 60, 0.10, {}),
    ("ppo", 20, 0.10, {}),
    ("grpo", 60, 0.10, {}),
    ("dapo", 60, 0.10, {}),
]


@pytest.mark.slow
@pytest.mark.parametrize("algo,steps,gain,over", CASES, ids=[c[0] for c in CASES])
def test_rl_raises_test_accuracy(algo, steps, gain, over, tmp_path):
    cfg = TrainConfig(algo=algo, steps=steps, eval_every=0, eval_prompts=200, eval_samples=4, seed=0, out_dir=str(tmp_path / algo), progress=False)
    df = train(cfg, make_config(algo, **over))
    ev = df.dropna(subset=["eval_accuracy"])
    before, after = ev["eval_accuracy"].iloc[0], ev["eval_accuracy"].iloc[-1]
    print(f"{algo}: sampled test accuracy {before:.3f} -> {after:.3f} in {steps} steps, {df['step_seconds'].sum():.0f}s")
    assert 0.25 <= before <= 0.60, "the shipped base model left its accuracy window"
    assert after - before >= gain, f"{algo} moved test accuracy {before:.3f} -> {after:.3f}, less than +{gain:.2f}"
