"""Measuring a claim again: train (or reuse) its arms on some seeds, or measure it on the base model's
rollouts, and pair the arms by seed (``rlalgos claims run``); an exact claim runs its test."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from ...config import TrainConfig
from ..stats import paired_effect, paired_values
from .data import get_claim
from .model import MIN_SEEDS, Claim, Layout, parse_seeds, record, regime_text, row_effect
from .render import load_published


def run_test(test: str, root: str | Path) -> bool:
    """Run one pytest node id in a subprocess, in the checkout ``root``; True when it passed."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        cwd=Layout(root).root,
        capture_output=True,
        text=True,
    )
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-500:])
    return done.returncode == 0


def _check_folder(cfg: TrainConfig, algo_cfg, overwrite: bool) -> str:
    """``"reuse"`` (this exact run, finished), ``"train"`` (a new folder, or ``overwrite``);
    ValueError for a folder that holds something else."""
    from ...engine.runs import finished

    path = Path(cfg.out_dir)
    if finished(cfg, algo_cfg):
        return "reuse"
    if path.exists() and any(path.iterdir()) and not overwrite:
        raise ValueError(
            f"{path} holds another run (other settings, or unfinished); pass --overwrite to replace it or --runs-dir to train elsewhere"
        )
    return "train"


def run_claim(
    claim_id: str,
    seeds: Sequence[int] | str | None = None,
    jobs: int = 0,
    out_dir: str | Path = "runs/claims",
    runs_dir: str | Path | None = None,
    overwrite: bool = False,
    publish: bool = False,
    progress: bool = True,
    root: str | Path = ".",
    **overrides,
) -> dict:
    """Train (or reuse) every run of a claim on ``seeds`` (default: the published ones), then
    print the paired table and the verdict next to the published one, and write the record
    (the published JSON's shape) to ``out_dir/<id>.json`` (``publish``: over docs/claims/<id>.json).

    Runs go to the notebook's own run folders, so a finished run of the published settings is
    read back, not trained again; ``runs_dir`` puts them under ``runs_dir/<id>/<arm>/seed<k>``.
    A folder holding anything else is never overwritten without ``overwrite``. ``overrides``:
    TrainConfig settings for a cheap look (steps, prompts_per_step, group_size, eval_prompts,
    eval_samples, eval_every); their runs are not the published ones. An exact claim runs its test.

    ``root``: the repository checkout (its run folders, its published records, its tests); the
    default is the working directory, so run it from the checkout's root."""
    claim = get_claim(claim_id)
    layout = Layout(root)
    published = load_published(layout.json_dir).get(claim.id, {})
    if claim.kind == "exact":
        passed = run_test(claim.test, layout.root)
        print(
            f"{claim.id}: {claim.test} {'passed' if passed else 'FAILED'} (published: {published.get('verdict', '-')})"
        )
        rec = {
            **record(claim, [], [], numbers_from="pytest"),
            "verdict": "exact" if passed else "test failed",
            "passed": passed,
        }
        return _write_record(rec, layout.json_dir if publish else out_dir)
    if not (claim.arms or claim.measure):
        raise ValueError(f"claim {claim.id} has no arms to train and nothing to measure; see its notebook")
    seeds = parse_seeds(seeds) if isinstance(seeds, str) else tuple(seeds or claim.seeds)
    if len(seeds) < MIN_SEEDS:
        warnings.warn(
            f"{len(seeds)} seed(s): a verdict needs at least {MIN_SEEDS}; the numbers are a smoke run", stacklevel=2
        )
    bad = set(overrides) - {
        "steps",
        "prompts_per_step",
        "group_size",
        "eval_prompts",
        "eval_samples",
        "eval_every",
        "device",
    }
    if bad:
        raise ValueError(
            f"run_claim takes only cheap overrides (steps, prompts_per_step, group_size, eval_prompts, eval_samples, eval_every, device), got {sorted(bad)}"
        )
    if publish and set(overrides) - {"device"}:
        raise ValueError(
            f"--publish with a cheap look ({', '.join(sorted(set(overrides) - {'device'}))}) would replace the published numbers with other settings' numbers; drop one or the other"
        )
    if claim.measure and overrides:
        raise ValueError(
            f"claim {claim.id} is measured on the base model's rollouts at notebook 04b's sizes: it takes no training overrides, got {sorted(overrides)}"
        )
    effects = (_measured_effects if claim.measure else _trained_effects)(
        claim, seeds, jobs, runs_dir, overwrite, progress, overrides, layout.root
    )
    cheap = {
        k: v for k, v in overrides.items() if k != "device"
    }  # settings that change the runs, not only where they run
    ran = replace(claim, seeds=seeds, shared={**claim.shared, **cheap})
    rec = {
        **record(ran, effects, [], numbers_from="rlalgos claims run"),
        "overrides": overrides,
        "cheap_look": bool(cheap),
    }
    print(effects_table(effects).to_string())
    seeds_text, published_text = (
        ",".join(map(str, seeds)),
        f"published, seeds {','.join(map(str, claim.seeds))}: {published.get('verdict', '-')}",
    )
    if cheap:
        print(
            f"\ncheap look ({', '.join(f'{k} {v}' for k, v in cheap.items())}), seeds {seeds_text}: {rec['verdict']}; "
            f"not comparable with the published verdict ({published_text}), which ran {regime_text(claim)}"
        )
    else:
        print(f"\nverdict on seeds {seeds_text}: {rec['verdict']}   ({published_text})")
    return _write_record(rec, layout.json_dir if publish else out_dir)


def _trained_effects(claim: Claim, seeds, jobs, runs_dir, overwrite, progress, overrides, root: Path) -> list[dict]:
    """Train (or reuse) every run of the claim's arms on ``seeds``, then its paired effects."""
    from ...train import load_metrics
    from ...tools.sweep import plan_line, run_many

    if claim.prepare:
        from ..emergence import prepare_models

        prepare_models(claim.prepare)
    runs = claim.train_configs(seeds, runs_dir, root, **overrides)
    plan = [
        _check_folder(cfg, algo_cfg, overwrite) for _, _, cfg, algo_cfg in runs
    ]  # every folder checked before the first run
    todo = [
        (replace(cfg, overwrite=overwrite), algo_cfg) for (_, _, cfg, algo_cfg), p in zip(runs, plan) if p == "train"
    ]
    print(f"{claim.id}: {len(runs)} runs, {len(runs) - len(todo)} reused, {len(todo)} to train")
    if todo:
        print(plan_line(todo, jobs))
    failed = [r for r in run_many(todo, jobs=jobs, progress=progress) if isinstance(r, Exception)] if todo else []
    if failed:
        raise ValueError(f"{len(failed)} of {len(todo)} runs failed; the first: {failed[0]}")
    groups: dict[str, list] = {}
    for arm, _, cfg, _ in runs:
        groups.setdefault(arm, []).append(load_metrics(cfg.out_dir))
    where = Path(runs[0][2].out_dir).resolve().parent.parent
    source = "runs: " + (
        where.relative_to(root).as_posix() if where.is_relative_to(root) else str(where)
    )  # a path in the repository, not this machine's
    effects = expected_effects(
        claim, seeds, source, lambda base, e: paired_effect(groups[base], groups[e.arm], e.metric, e.tail)
    )
    if claim.fit:  # a law over every step of the runs (its own interval), not a pairing by seed
        from ..measures import FITS

        for f in FITS[claim.fit](groups):
            effects.append(
                {
                    **row_effect(
                        f["arm"],
                        f["base"],
                        f["metric"],
                        f.get("direction", -1),
                        f["headline"],
                        f,
                        seeds,
                        f"fit: rlalgos.workbook.measures.{claim.fit} over the {source}",
                    ),
                    "fit": f["fit"],
                }
            )
    return effects


def _measured_effects(claim: Claim, seeds, *_) -> list[dict]:
    """Measure the claim on the base model's rollouts for each seed (:mod:`rlalgos.workbook.measures`), then its paired effects."""
    from ..measures import MEASURES

    print(
        f"{claim.id}: measuring rlalgos.workbook.measures.{claim.measure} on seeds {','.join(map(str, seeds))} (no training)"
    )
    values = MEASURES[claim.measure](seeds)
    return expected_effects(
        claim,
        seeds,
        f"measured: rlalgos.workbook.measures.{claim.measure}",
        lambda base, e: paired_values(
            pd.Series(values[base][e.metric], index=seeds), pd.Series(values[e.arm][e.metric], index=seeds), e.metric
        ),
    )


def expected_effects(claim: Claim, seeds, source: str, row_of) -> list[dict]:
    """One effect row per expected effect of ``claim``; ``row_of(base, expect)`` measures its paired difference."""
    return [
        row_effect(
            e.arm,
            e.base or claim.base,
            e.metric,
            e.direction,
            e.headline,
            row_of(e.base or claim.base, e),
            seeds,
            source,
        )
        for e in claim.expects
    ]


def _write_record(rec: dict, out_dir: str | Path) -> dict:
    """Write the record to ``out_dir/<id>.json`` and return it."""
    path = Path(out_dir) / f"{rec['id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"record: {path}")
    return rec


def effects_table(effects: Sequence[Mapping]) -> pd.DataFrame:
    """The effects of a run as a table, one row each."""
    cols = ["arm", "base", "metric", "direction", "arm_mean", "base_mean", "diff", "ci_low", "ci_high", "verdict"]
    return pd.DataFrame([{c: e.get(c) for c in cols} for e in effects], columns=cols)
