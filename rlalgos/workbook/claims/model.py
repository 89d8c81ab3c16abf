"""What a claim is (:class:`Claim`, :class:`Expect`, :class:`Quote`), the one verdict rule, the
record every claim publishes (``docs/claims/<id>.json``'s shape), and the :class:`Layout` of the
checkout whose files the claims read and write (its root is always the caller's to name)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ...config import TrainConfig
from ..experiments import arm_runs

KINDS = ("mechanism", "end-to-end", "exact")
MIN_SEEDS = 3  # fewer seeds give a number, not a verdict


@dataclass(frozen=True)
class Layout:
    """Where a repository checkout keeps what the claims read and write, under ``root``: the notebooks
    (``notebooks/``), the published records (``docs/claims/<id>.json``), the scorecard page
    (``docs/claims.md``), the "what matters when" page and README.md. The package never guesses it: docs/extract_claims.py, the
    ``rlalgos claims`` command (the working directory) and the tests name the root."""

    root: Path

    def __post_init__(self):
        object.__setattr__(self, "root", Path(self.root).resolve())

    @property
    def notebooks(self) -> Path:
        return self.root / "notebooks"

    @property
    def json_dir(self) -> Path:
        return self.root / "docs" / "claims"

    @property
    def page(self) -> Path:
        return self.root / "docs" / "claims.md"

    @property
    def what_matters(self) -> Path:
        return self.root / "docs" / "what_matters.md"

    @property
    def readme(self) -> Path:
        return self.root / "README.md"


@dataclass(frozen=True)
class Expect:
    """One paired comparison a claim makes: ``arm`` minus ``base`` (the claim's base arm
    unless given) on ``metric``, expected to move in ``direction`` (+1 / -1). ``tail``:
    training steps averaged at the end (eval metrics take their last value). ``headline``:
    whether it decides the claim's verdict. ``cell``: the notebook cell that printed it (an
    effect line or a verdict line; see :mod:`.scrape`). ``seeds``: the seeds of that printout when
    they are not the claim's (the printed line must then have as many)."""

    arm: str
    metric: str
    direction: int
    cell: int | None = None
    base: str | None = None
    tail: int = 5
    headline: bool = True
    seeds: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Quote:
    """A published number with no effect printout: the exact ``line`` that printed it, found in
    the committed output of the claim's notebook (or in the committed file ``file``). With
    ``arm``/``metric``/``direction`` the line also gives a paired effect: ``pattern`` (a regex)
    reads ``diff`` with ``lo``/``hi`` (a 95% interval) or ``sd`` (the sd of the paired
    differences over ``len(seeds)`` seeds, from which the interval is computed)."""

    line: str
    file: str | None = None
    arm: str = ""
    metric: str = ""
    direction: int = 0
    base: str | None = None
    seeds: tuple[int, ...] | None = None
    pattern: str = r"(?P<diff>[+-]\d[\d.]*)(?: points)? \((?:95% )?CI (?P<lo>[+-]?\d[\d.]*)\.\.(?P<hi>[+-]?\d[\d.]*)"
    headline: bool = True


@dataclass(frozen=True)
class Claim:
    """One row of the scorecard (see the module docstring)."""

    id: str
    statement: str
    origin: str
    kind: str
    reading: str
    figure: str = ""
    notebook: str = ""
    task: str = "addition"
    model: str = ""
    shared: Mapping = field(default_factory=dict)
    arms: Mapping = field(default_factory=dict)
    train: Mapping = field(
        default_factory=dict
    )  # arm -> TrainConfig settings of that arm alone (how it samples, its task), on top of ``shared``
    base: str = ""
    expects: tuple[Expect, ...] = ()
    quotes: tuple[Quote, ...] = ()
    seeds: tuple[int, ...] = (0, 1, 2)
    run_dir: str = ""
    test: str = ""
    names: Mapping = field(default_factory=dict)
    folders: Mapping = field(default_factory=dict)
    stated: str = ""
    measure: str = (
        ""  # measured on the base model's rollouts, not by training arms: a name in rlalgos.workbook.measures.MEASURES
    )
    fit: str = ""  # a law fitted over every step of the trained arms' runs: a name in rlalgos.workbook.measures.FITS
    prepare: tuple = ()  # base models to build before training: (kind, share) pairs of rlalgos.workbook.emergence

    def train_configs(
        self, seeds: Sequence[int], runs_dir: str | Path | None = None, root: str | Path | None = None, **overrides
    ) -> list[tuple[str, int, TrainConfig, object]]:
        """(arm, seed, TrainConfig, algorithm config) of every run, in the notebook's run folders under the
        checkout ``root`` (None: relative to the working directory), or under ``runs_dir/<id>/<arm>/seed<k>``."""
        if runs_dir:
            out_dir, folders = str(Path(runs_dir) / self.id / "{arm}" / "seed{seed}"), {}
        else:
            out_dir, folders = str(Path(root) / self.run_dir) if root else self.run_dir, self.folders
        train = {
            arm: {**self.train.get(arm, {}), **overrides} for arm in self.arms
        }  # what the caller overrides wins over an arm's own settings
        return arm_runs(
            self.arms,
            seeds,
            out_dir,
            train=train,
            folders=folders,
            overwrite=False,
            **{"task": self.task, "model": self.model, **self.shared},
        )


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"20,21,22"`` -> (20, 21, 22); anything else is one clear ValueError. One or two seeds
    are allowed (a smoke run) with a warning: a verdict needs at least 3."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not re.fullmatch(r"\d+", p) for p in parts):
        raise ValueError(f"--seeds must be comma-separated non-negative integers such as 20,21,22, got {text!r}")
    seeds = tuple(int(p) for p in parts)
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds names a seed twice: {text!r}")
    return seeds


def directed_verdict(ci_low: float, ci_high: float, direction: int, seeds: int) -> str:
    """The rule: "shown" when the interval excludes 0 in the expected direction, "opposite"
    when it excludes 0 the other way, "within noise" otherwise ("one seed": no interval)."""
    if seeds < 2 or not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return "one seed"
    if ci_low > 0 or ci_high < 0:
        return "shown" if (ci_low > 0) == (direction > 0) else "opposite"
    return "within noise"


def claim_verdict(effects: Sequence[Mapping], stated: str = "", kind: str = "") -> str:
    """A claim's verdict from its headline effects: "shown" when every one is shown,
    "opposite" when any is opposite, "within noise" otherwise; an exact claim is "exact";
    a claim with no paired number keeps its ``stated`` verdict."""
    heads = [e for e in effects if e.get("headline")]
    if kind == "exact":
        return "exact"
    if not heads:
        return stated or "no paired number"
    verdicts = [e["verdict"] for e in heads]
    if any(v == "opposite" for v in verdicts):
        return "opposite"
    if all(v == "shown" for v in verdicts):
        return "shown"
    return "one seed" if all(v == "one seed" for v in verdicts) else "within noise"


def effect(arm, base, metric, direction, headline, arm_mean, base_mean, diff, lo, hi, seeds, source, line=None) -> dict:
    """One paired effect of a record, its verdict by :func:`directed_verdict` (``line``: the printed line it was read from)."""
    n = len(seeds)
    return {
        "arm": arm,
        "base": base,
        "metric": metric,
        "direction": direction,
        "headline": headline,
        "arm_mean": arm_mean,
        "base_mean": base_mean,
        "diff": diff,
        "ci_low": lo,
        "ci_high": hi,
        "seeds": list(seeds),
        "verdict": directed_verdict(lo, hi, direction, n),
        "source": source,
        **({"line": line} if line else {}),
    }


def row_effect(arm, base, metric, direction, headline, row: Mapping, seeds, source) -> dict:
    """:func:`effect` of a paired row (``arm_mean``, ``base_mean``, ``diff``, ``ci_low``, ``ci_high``), rounded."""
    return effect(
        arm,
        base,
        metric,
        direction,
        headline,
        rounded(row["arm_mean"]),
        rounded(row["base_mean"]),
        rounded(row["diff"]),
        rounded(row["ci_low"]),
        rounded(row["ci_high"]),
        seeds,
        source,
    )


def rounded(x) -> float | None:
    """A number as a record holds it: rounded to 6 decimals, None for a missing or infinite one."""
    return None if x is None or not math.isfinite(float(x)) else round(float(x), 6)


def record(claim: Claim, effects: list[dict], quotes: list[dict], numbers_from: str) -> dict:
    """The claim's published record (``docs/claims/<id>.json``) around its effects and quotes."""
    return {
        "id": claim.id,
        "statement": claim.statement,
        "origin": claim.origin,
        "kind": claim.kind,
        "verdict": claim_verdict(effects, claim.stated, claim.kind),
        "seeds": list(claim.seeds),
        "regime": regime_text(claim),
        "arms": {
            a: [algo, dict(o), *([dict(claim.train[a])] if a in claim.train else [])]
            for a, (algo, o) in claim.arms.items()
        },
        "base": claim.base,
        "figure": claim.figure,
        "notebook": f"notebooks/{claim.notebook}" if claim.notebook else "",
        "runs": claim.run_dir,
        "test": claim.test,
        "reading": claim.reading,
        "numbers_from": numbers_from,
        "effects": effects,
        "quotes": quotes,
        **({"measure": f"rlalgos.workbook.measures.{claim.measure}"} if claim.measure else {}),
        **({"fit": f"rlalgos.workbook.measures.{claim.fit}"} if claim.fit else {}),
    }


def regime_text(claim: Claim) -> str:
    if not claim.arms:
        return ""
    bits = [f"task {claim.task}", f"model {Path(claim.model).name if claim.model else 'the shipped base model'}"]
    bits += [f"{k} {v}" for k, v in claim.shared.items() if k != "reward_model"] + (
        ["reward model data/reward_model"] if "reward_model" in claim.shared else []
    )
    return ", ".join(bits)
