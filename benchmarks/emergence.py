"""The emergence experiments (notebooks 12 and 13): build the base models and train
every run, side by side. The models, the regime and the runs are defined once, in
:mod:`rlalgos.workbook.experiments` (built by :mod:`rlalgos.workbook.emergence`); the notebooks train the
same folders (and reuse them).

Example::

    python benchmarks/emergence.py run                      # every part, ~40 min on 2 cores
    python benchmarks/emergence.py run --part groups        # the grid at G = 4 and 16 (notebook 12's "go further")
    python benchmarks/emergence.py run --part rungs_default --seeds 0,1,2
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rlalgos.workbook import emergence as em
from rlalgos.workbook.experiments import EMERGENCE_OUT, EMERGENCE_SEEDS
from rlalgos.workbook.exploration import run_or_reuse

PARTS = {
    "curve": lambda seeds, out: em.curve_runs(seeds, out),
    "grid": lambda seeds, out: [r for r in em.grid_runs(seeds, out) if r[0].group_size == 8],
    "groups": lambda seeds, out: [r for r in em.grid_runs(seeds, out) if r[0].group_size != 8],
    "limits": lambda seeds, out: em.limit_runs(seeds, out),
    "rungs_rare": lambda seeds, out: em.rung_runs("rare", seeds, out),
    "rungs_default": lambda seeds, out: em.rung_runs("default", seeds, out),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["run", "configs"])
    p.add_argument("--part", default="all", help=f"one of {', '.join(PARTS)}, or all")
    p.add_argument("--seeds", default=",".join(map(str, EMERGENCE_SEEDS)))
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", default=str(EMERGENCE_OUT))
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    names = list(PARTS) if args.part == "all" else args.part.split(",")
    unknown = [n for n in names if n not in PARTS]
    if unknown:
        raise SystemExit(f"unknown part {unknown[0]!r}; the parts are {', '.join(PARTS)}")
    runs = [r for n in names for r in PARTS[n](seeds, Path(args.out))]
    if args.command == "configs":
        for cfg, algo_cfg in runs:
            print(cfg.out_dir, algo_cfg)
        return
    run_or_reuse(runs, jobs=args.jobs, progress=True)


if __name__ == "__main__":
    main()
