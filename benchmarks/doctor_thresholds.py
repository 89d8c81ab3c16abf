"""The measurement behind the run doctor's thresholds (:mod:`rlalgos.tools.doctor`).

Trains (or reads back, when the run folder is finished) every run the doctor is sized on:

* notebook 06's runs, from the claims registry (its broken arms and its healthy baseline
  and fixes), seeds 0-2, with ``stop_on_collapse`` off so a broken run shows its whole course;
* the learning tests' cases (``tests/learning_cases.py``: reinforce, ppo, grpo, dapo at their
  defaults), seeds 0-2, evaluated every 10 steps;
* the demo's four runs (``make demo``: 32 prompts x 8, 40 steps, eval every 10), seed 0;
* a clip probe (GRPO with 4 epochs x 8 minibatches per rollout at lr 3e-4, 12 steps), seeds 0-2: no
  notebook run makes the clip bind on more than ~2% of tokens.

Then it keeps the metrics the doctor reads, per step, in ``docs/bench/doctor_runs.jsonl`` (the
tests diagnose these without training), and writes ``docs/bench/doctor_thresholds.json``: each
signature's signal in every run (healthy against broken) and the confusion table of what fired
where. ``docs/doctor.md`` quotes both.

Every run trains in this process, one after another: pin it to one core, e.g.::

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/doctor_thresholds.py --train     # ~60 min on one core
    python benchmarks/doctor_thresholds.py                                            # the tables from the committed metrics
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

RUNS_JSONL = ROOT / "docs" / "bench" / "doctor_runs.jsonl"
TABLE_JSON = ROOT / "docs" / "bench" / "doctor_thresholds.json"
SEEDS = (0, 1, 2)

# notebook 06's arms by claim, and what each run shows (the signature the doctor should name, or "healthy")
NB06_CLAIMS = ("lr-collapse", "reward-hacking", "length-runaway", "too-hard-prompts", "entropy-monitor")
NB06_FIXES = ("a_concise_kl", "c_verbose_overlong", "d_medium", "e_monitor")
EXPECTED = {
    "baseline": "healthy",
    "d_medium": "healthy",
    "b_lr3e-3": "collapse",
    "a_concise": "reward_up_accuracy_down",
    "a_concise_kl": "reward_up_accuracy_down",
    "c_verbose": "length_runaway",
    "c_verbose_overlong": "reward_up_accuracy_down",
    "d_too_hard": "zero_signal",
    "e_sharpen": "entropy_collapse",
    "e_monitor": "entropy_collapse",
}
"""The failure each of notebook 06's arms was built to show (a fix that only limits the damage keeps the failure it
limits: the KL arm under the gamed reward, and overlong shaping under the length judge, whose reward still ignores correctness)."""
MISSES = {
    "e_sharpen": "notebook 06 (e) itself finds no entropy collapse at this scale: eval entropy ended at 0.62-0.67 of its start, as the baseline's 0.66-0.71, "
    "and what the push cost (accuracy -7 points) shows only against a baseline, which one run's metrics do not hold",
    "e_monitor": "the same push with the entropy monitor: as e_sharpen",
}
"""Arms the doctor does not name by the failure they were built to show, and why (the test holds them to this)."""
DEMO_ALGOS = ("reinforce", "ppo", "grpo", "dapo")
PROBE_CLIP = dict(epochs=4, minibatches=8, lr=3e-4)
"""The clip probe: 32 optimizer steps per rollout at 3x the default learning rate (notebook 06's try-this (b) pushed further)."""
KEEP = (
    "step",
    "reward_mean",
    "entropy",
    "kl",
    "clip_frac",
    "completion_len",
    "truncated_frac",
    "zero_std_frac",
    "grad_norm",
    "loss",
    "nonfinite",
    "eval_accuracy",
    "eval_entropy",
    "stopped",
)
"""The metrics the doctor reads, kept per step."""


def planned_runs(runs_dir: Path, seeds=SEEDS, groups=("nb06", "learning", "demo")) -> list[dict]:
    """Every run of the measurement: ``{"group", "label", "seed", "expected", "cfg", "algo_cfg"}``, cheapest-to-read first
    within a group (notebook 06's broken arms and baseline, then the learning cases, the fixes, the demo)."""
    from learning_cases import CASES

    from rlalgos.config import TrainConfig, make_config
    from rlalgos.workbook.claims import get_claim

    plans, seen = [], set()
    if "nb06" in groups:
        for claim_id in NB06_CLAIMS:
            for a, s, cfg, algo_cfg in get_claim(claim_id).train_configs(
                seeds, runs_dir=runs_dir / "nb06", stop_on_collapse=False
            ):
                if (a, s) in seen:
                    continue
                seen.add((a, s))
                cfg.out_dir = str(runs_dir / "nb06" / a / f"seed{s}")  # one folder per arm, whichever claim names it
                plans.append(
                    {
                        "group": "nb06",
                        "label": a,
                        "seed": s,
                        "expected": EXPECTED[a],
                        "cfg": cfg,
                        "algo_cfg": algo_cfg,
                        "fix": a in NB06_FIXES,
                    }
                )
    if "learning" in groups:
        for algo, steps, prompts, _ in CASES:
            for s in seeds:
                cfg = TrainConfig(
                    algo=algo,
                    steps=steps,
                    prompts_per_step=prompts,
                    eval_every=10,
                    eval_prompts=200,
                    eval_samples=4,
                    seed=s,
                    save_every=0,
                    overwrite=True,
                    progress=False,
                    out_dir=str(runs_dir / "learning" / algo / f"seed{s}"),
                )
                plans.append(
                    {
                        "group": "learning",
                        "label": algo,
                        "seed": s,
                        "expected": "healthy",
                        "cfg": cfg,
                        "algo_cfg": make_config(algo),
                        "fix": False,
                    }
                )
    if "demo" in groups:
        for algo in DEMO_ALGOS:  # make demo: rlalgos compare --algos reinforce,ppo,grpo,dapo --steps 40 --eval-every 10
            cfg = TrainConfig(
                algo=algo,
                steps=40,
                eval_every=10,
                seed=0,
                overwrite=True,
                progress=False,
                out_dir=str(runs_dir / "demo" / algo / "seed0"),
            )
            plans.append(
                {
                    "group": "demo",
                    "label": algo,
                    "seed": 0,
                    "expected": "healthy",
                    "cfg": cfg,
                    "algo_cfg": make_config(algo),
                    "fix": False,
                }
            )
    if (
        "probe" in groups
    ):  # no notebook run saturates the clip (one update per rollout, or 4 minibatches at most): many updates per rollout do
        for s in seeds:
            cfg = TrainConfig(
                algo="grpo",
                steps=12,
                prompts_per_step=16,
                eval_every=6,
                eval_prompts=100,
                eval_samples=4,
                seed=s,
                save_every=0,
                overwrite=True,
                progress=False,
                stop_on_collapse=False,
                out_dir=str(runs_dir / "probe" / "clip_many_updates" / f"seed{s}"),
            )
            plans.append(
                {
                    "group": "probe",
                    "label": "clip_many_updates",
                    "seed": s,
                    "expected": "clip_saturation",
                    "cfg": cfg,
                    "algo_cfg": make_config("grpo", **PROBE_CLIP),
                    "fix": False,
                }
            )
    order = {"nb06": 0, "learning": 1, "demo": 2, "probe": 3}
    return sorted(plans, key=lambda p: (order[p["group"]] + (1.5 if p["fix"] else 0), plans.index(p)))


def finished(run_dir: str | Path, steps: int) -> bool:
    """A run folder whose metrics reach its last step (or a stop row)."""
    from rlalgos.engine.runs import read_rows

    rows = read_rows(Path(run_dir) / "metrics.jsonl")
    return bool(rows) and (rows[-1].get("step") == steps or "stopped" in rows[-1])


def train_missing(plans: list[dict]) -> None:
    """Train every planned run whose folder is not finished, one after another in this process."""
    from rlalgos.train import train

    for p in plans:
        if finished(p["cfg"].out_dir, p["cfg"].steps):
            continue
        t0 = time.perf_counter()
        try:
            train(p["cfg"], p["algo_cfg"])
        except FloatingPointError as e:  # a non-finite stop keeps its rows: they are part of the measurement
            print(f"{p['group']}/{p['label']}/seed{p['seed']}: {e}", file=sys.stderr)
        print(
            json.dumps(
                {"trained": f"{p['group']}/{p['label']}/seed{p['seed']}", "seconds": round(time.perf_counter() - t0, 1)}
            ),
            flush=True,
        )


def compact_rows(run_dir: str | Path) -> list[dict]:
    """The run's metrics rows, only the keys the doctor reads, rounded to 4 significant digits."""
    from rlalgos.engine.runs import read_rows

    out = []
    for r in read_rows(Path(run_dir) / "metrics.jsonl"):
        out.append({k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in r.items() if k in KEEP})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--train",
        action="store_true",
        help="train the runs whose folders are missing or unfinished, then write the tables",
    )
    p.add_argument("--runs-dir", default=str(ROOT / "runs" / "doctor"))
    p.add_argument("--groups", default="nb06,learning,demo,probe")
    p.add_argument("--train-only", action="store_true", help="train, and write nothing under docs/")
    args = p.parse_args()
    plans = planned_runs(Path(args.runs_dir), groups=tuple(args.groups.split(",")))
    if args.train or args.train_only:
        train_missing(plans)
    if args.train_only:
        return
    if args.train:
        with open(RUNS_JSONL, "w") as f:
            for pl in plans:
                if finished(pl["cfg"].out_dir, pl["cfg"].steps):
                    meta = {
                        "group": pl["group"],
                        "label": pl["label"],
                        "seed": pl["seed"],
                        "expected": pl["expected"],
                        "max_new_tokens": pl["cfg"].max_new_tokens or None,
                    }
                    f.write(json.dumps({**meta, "rows": compact_rows(pl["cfg"].out_dir)}) + "\n")
    write_tables()


def signals(df, max_new_tokens: int | None) -> dict:
    """Each signature's statistic in one run (what its threshold is compared with)."""
    import math

    from rlalgos.engine import doctor as d

    def roll_max(key: str, n: int) -> float:
        s = d._series(df, key)
        return float(s.rolling(n).mean().max()) if len(s) >= n else math.nan

    def first_last(key: str, n: int, train: bool = True) -> tuple[float, float]:
        s = d._series(df, key, train=train)
        return (float(s.head(n).mean()), float(s.tail(n).mean())) if len(s) >= n else (math.nan, math.nan)

    reward, acc, ent, tr = (
        d._series(df, "reward_mean"),
        d._series(df, "eval_accuracy", train=False),
        d._series(df, "eval_entropy", train=False),
        d._series(df, "truncated_frac"),
    )
    runs = d.streaks(d.collapse_mask(df))
    r0, r1 = first_last("reward_mean", d.REWARD_STEPS)
    return {
        "collapse_steps": max((n for _, n in runs), default=0),
        "reward_min_frac": float(reward.min() / reward.iloc[0]) if len(reward) and reward.iloc[0] > 0 else math.nan,
        "start_reward": float(reward.iloc[0]) if len(reward) else math.nan,
        "kl_max": float(d._series(df, "kl").max()),
        "kl_window_max": roll_max("kl", d.KL_STEPS),
        "zero_std_window_max": roll_max("zero_std_frac", d.ZERO_SIGNAL_STEPS),
        "truncated_window_max": roll_max("truncated_frac", d.LENGTH_STEPS),
        "truncated_start": float(tr.head(d.LENGTH_STEPS).mean()) if len(tr) else math.nan,
        "length_start_end": first_last("completion_len", d.LENGTH_STEPS),
        "reward_rise": r1 - r0,
        "eval_accuracy_change": float(acc.iloc[-1] - acc.iloc[0]) if len(acc) >= 2 else math.nan,
        "eval_entropy_ratio": float(ent.iloc[-1] / ent.iloc[0]) if len(ent) >= 2 else math.nan,
        "clip_window_max": roll_max("clip_frac", d.CLIP_STEPS),
        "nonfinite": d.nonfinite(df) is not None,
    }


def write_tables(path: Path = RUNS_JSONL, out: Path = TABLE_JSON) -> dict:
    """Diagnose every run kept in ``path``; write (and return) each run's signals and findings, and the confusion table."""
    import pandas as pd

    from rlalgos.engine import doctor as d

    runs, confusion = [], {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        df = pd.DataFrame(rec["rows"])
        found = d.diagnose(df, rec["max_new_tokens"])
        names = [f.name for f in found] or ["healthy"]
        primary, after = d.split(found)
        key = f"{rec['group']} (healthy)" if rec["group"] in ("learning", "demo") else f"{rec['group']}/{rec['label']}"
        row = confusion.setdefault(key, {"expected": rec["expected"], "runs": 0})
        row["runs"] += 1
        for n in [f.name for f in primary] or ["healthy"]:
            row[n] = row.get(n, 0) + 1
        for f in after:
            row.setdefault("after_collapse", {})[f.name] = row.get("after_collapse", {}).get(f.name, 0) + 1
        runs.append(
            {k: rec[k] for k in ("group", "label", "seed", "expected")}
            | {
                "fired": names,
                "first_steps": {f.name: f.step for f in found},
                "signals": signals(df, rec["max_new_tokens"]),
            }
        )
    thresholds = {k: getattr(d, k) for k in dir(d) if k.isupper() and isinstance(getattr(d, k), (int, float))}
    result = {"thresholds": thresholds, "misses": MISSES, "confusion": confusion, "runs": runs}
    out.write_text(json.dumps(result, indent=1, default=lambda x: None if x != x else x) + "\n")
    print(markdown(result))
    return result


SPREAD = (
    ("start_reward", "reward at step 1"),
    ("reward_min_frac", "lowest reward / step 1's"),
    ("collapse_steps", "collapsed steps in a row"),
    ("kl_max", "KL, highest step"),
    ("kl_window_max", "KL, highest 5-step mean"),
    ("zero_std_window_max", "all-equal groups, highest 5-step mean"),
    ("truncated_window_max", "cut off, highest 5-step mean"),
    ("reward_rise", "reward, last 5 - first 5"),
    ("eval_accuracy_change", "eval accuracy, end - start"),
    ("eval_entropy_ratio", "eval entropy, end / start"),
    ("clip_window_max", "clip fraction, highest 5-step mean"),
)


def markdown(result: dict) -> str:
    """The two tables docs/doctor.md quotes: each signal's range over seeds per group of runs, and the confusion table."""
    from rlalgos.engine import doctor as d

    groups: dict[str, list[dict]] = {}
    for r in result["runs"]:
        groups.setdefault(f"{r['group']}/{r['label']}", []).append(r["signals"])

    def span(vals) -> str:
        vals = [v for v in vals if v is not None and v == v]
        if not vals:
            return "-"
        lo, hi = min(vals), max(vals)
        f = (lambda x: f"{x:.0f}") if all(float(v).is_integer() for v in vals) and hi > 1 else (lambda x: f"{x:.3g}")
        return f(lo) if lo == hi else f"{f(lo)}..{f(hi)}"

    out = ["| runs | n | " + " | ".join(name for _, name in SPREAD) + " |", "|---|---|" + "---|" * len(SPREAD)]
    for g, sigs in groups.items():
        out.append(f"| {g} | {len(sigs)} | " + " | ".join(span([s[k] for s in sigs]) for k, _ in SPREAD) + " |")
    cols = ["healthy", *[s.__name__ for s in d.SIGNATURES]]
    out += [
        "",
        "| runs | built to show | n | " + " | ".join(cols) + " | what followed the collapse |",
        "|---|---|---|" + "---|" * (len(cols) + 1),
    ]
    for k, row in result["confusion"].items():
        after = ", ".join(f"{name} {n}" for name, n in row.get("after_collapse", {}).items())
        out.append(
            f"| {k} | {row['expected']} | {row['runs']} | "
            + " | ".join(str(row.get(c, "")) for c in cols)
            + f" | {after} |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    main()
