"""The exploration sweep (notebook 09): vanilla GRPO against each entropy fix on
the trap task, like for like, paired by seed. The regime and the arms are defined
once, in :mod:`rlalgos.workbook.experiments` (``TRAP_ARMS``, ``trap_run``).

Example::

    python benchmarks/exploration.py run --seeds 0,1,2 --jobs 2     # 21 runs, ~30 min on 2 cores
    python benchmarks/exploration.py run --arms vanilla --seeds 100  # a pilot
    python benchmarks/exploration.py run --arms dynamic_only,dapo_no_dynamic --seeds 0,1,2  # which of DAPO's switches
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rlalgos.workbook.experiments import TRAP_ABLATION_ARMS, TRAP_ARMS, TRAP_GRPO, TRAP_OUT, TRAP_SHARED, trap_run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["run", "configs"])
    p.add_argument(
        "--arms",
        default=",".join(TRAP_ARMS),
        help=f"comma-separated, from {', '.join([*TRAP_ARMS, *TRAP_ABLATION_ARMS])}",
    )
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", default=str(TRAP_OUT))
    p.add_argument("--steps", type=int, default=TRAP_SHARED["steps"])
    p.add_argument("--lr", type=float, default=TRAP_GRPO["lr"])
    args = p.parse_args()
    runs = [
        trap_run(a, int(s), Path(args.out), lr=args.lr, steps=args.steps)
        for a in args.arms.split(",")
        for s in args.seeds.split(",")
    ]
    if args.command == "configs":
        for cfg, algo_cfg in runs:
            print(cfg.out_dir, algo_cfg)
        return
    from rlalgos.tools.sweep import run_many

    results = run_many(runs, jobs=args.jobs, progress=True)
    print(json.dumps([str(r) for r in results]))


if __name__ == "__main__":
    sys.exit(main())
