"""The exploration regime (notebook 09, issue "exploration on screen"): vanilla GRPO
against each entropy fix on the trap task, like for like, paired by seed.

The regime (fixed before any arm was run; vanilla-only pilots on seeds 100 and 101,
never used for a claim, chose the learning rate: at 3e-5 nothing moved in 40 steps,
at 5e-5 the easy answers eroded without the scratchpad growing, at 1e-4 the
scratchpad took over the hard prompts): ``--task trap`` from ``data/trap_model``,
16 prompts x 8 answers per step, 8 minibatches per rollout (8 optimizer steps, the
regime where clips act), lr 1e-4, no KL, 30 steps, evaluation every 10 steps on 200 test prompts x 4 samples,
the entropy probe on. Each arm changes one thing:

* ``vanilla``: GRPO (clip 0.2 / 0.2, per-answer loss, no KL);
* ``clip_higher``: clip_high 0.28;
* ``clip_cov`` / ``kl_cov``: verl's loss modes with their defaults;
* ``entropy_bonus``: DAPO's entropy bonus (coefficient 0.01), always on;
* ``temperature``: DAPO's temperature monitor (fires below 0.3 nats/token, about 3/4
  of the base model's 0.396, +0.1 per firing up to 1.5);
* ``kl``: the k3 KL term at beta 0.04.

Example::

    python benchmarks/exploration.py run --seeds 0,1,2 --jobs 2     # 21 runs, ~30 min on 2 cores
    python benchmarks/exploration.py run --arms vanilla --seeds 100  # the pilot
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rlalgos.config import TRAP_MODEL_DIR, TrainConfig, make_config

OUT = Path("runs/exploration")
SHARED = dict(task="trap", model=str(TRAP_MODEL_DIR), prompts_per_step=16, group_size=8, steps=30, eval_every=10, eval_prompts=200, eval_samples=4,
              entropy_probe=True, progress=False, save_every=0, overwrite=True)
VANILLA = dict(lr=1e-4, minibatches=8, kl_coef=0.0)
# the DAPO class with every switch off except the one under test
DAPO_OFF = dict(clip_high=0.2, loss_agg="seq-mean-token-mean", dynamic_sampling="off", overlong_penalty=False)
BASE_EVAL_ENTROPY = 0.396  # nats/token: the trap model's eval entropy on the test prompts (step 0 of every run; notebook 09 prints it)
ARMS = {
    "vanilla": ("grpo", {}),
    "clip_higher": ("grpo", {"clip_high": 0.28}),
    "clip_cov": ("grpo", {"loss_mode": "clip_cov"}),
    "kl_cov": ("grpo", {"loss_mode": "kl_cov"}),
    "entropy_bonus": ("dapo", {**DAPO_OFF, "entropy_threshold": 1e9, "entropy_action": "bonus", "entropy_coef": 0.01}),
    "temperature": ("dapo", {**DAPO_OFF, "entropy_threshold": 0.3, "entropy_action": "temperature"}),
    "kl": ("grpo", {"kl_coef": 0.04}),
}


def arm_config(arm: str, seed: int, out: Path = OUT, lr: float = VANILLA["lr"], **overrides):
    """(TrainConfig, algorithm config) of one arm at one seed."""
    algo, changes = ARMS[arm]
    shared = {**SHARED, **overrides}
    cfg = TrainConfig(algo=algo, seed=seed, out_dir=str(out / f"{arm}_s{seed}"), **shared)
    return cfg, make_config(algo, **{**VANILLA, "lr": lr, **changes})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["run", "configs"])
    p.add_argument("--arms", default=",".join(ARMS))
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--steps", type=int, default=SHARED["steps"])
    p.add_argument("--lr", type=float, default=VANILLA["lr"])
    args = p.parse_args()
    runs = [arm_config(a, int(s), Path(args.out), lr=args.lr, steps=args.steps) for a in args.arms.split(",") for s in args.seeds.split(",")]
    if args.command == "configs":
        for cfg, algo_cfg in runs:
            print(cfg.out_dir, algo_cfg)
        return
    from rlalgos.tools.sweep import run_many

    results = run_many(runs, jobs=args.jobs, progress=True)
    print(json.dumps([str(r) for r in results]))


if __name__ == "__main__":
    sys.exit(main())
