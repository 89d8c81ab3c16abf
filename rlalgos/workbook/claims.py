"""The claims scorecard as code: every claim, its regime, its arms, its published numbers.

Each :class:`Claim` says what is claimed (and which paper it comes from), how it is
measured here (the task, the base model, the settings every arm shares, the arms as
algorithm specs, the metrics with the direction the claim expects, the seeds), and
where its published numbers come from (the notebook cell whose committed output
printed them, and the run folders that notebook writes). The verdict rule is one for
all: *shown* when the paired 95% t-interval of (arm - base) over seeds
(:func:`rlalgos.workbook.stats.paired_effect`) excludes 0 in the expected direction,
*opposite* when it excludes 0 the other way, *within noise* otherwise. Claims of kind
``exact`` have no arms: the pytest test named by ``test`` proves them.

The published numbers live in ``docs/claims/<id>.json``; they are read from the
notebooks' committed outputs by :func:`extract_published` (``python docs/extract_claims.py``),
never typed, and ``docs/claims.md`` and README.md's summary are generated from them
by :func:`report`. ``rlalgos claims list | run ID | report`` is the command line;
:func:`list_claims`, :func:`run_claim` and :func:`report` the same in Python.

The experiments live here too, in one home with the claims they measure: notebooks 04, 07 and 08
build their runs from :data:`NB04_ARMS`, :data:`NB07` and :data:`NB08_ARMS` with :func:`arm_runs`,
and ``benchmarks/regimes.py`` reads :data:`REGIMES`. Notebooks 05, 06, 09 and 10 keep their job
cells, and tests check that those train exactly the runs named here.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from ..config import TRAP_MODEL_DIR, TrainConfig, make_config
from .measures import BASE_MODEL, BUDGET, SAMPLED, SIGNAL_ONLY
from .stats import paired_effect, paired_values, t975
from .troubleshooting import CONCISE, MEDIUM, TOO_HARD, VERBOSE  # notebook 06's tasks, by name

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
JSON_DIR = ROOT / "docs" / "claims"
PAGE = ROOT / "docs" / "claims.md"
README = ROOT / "README.md"
START, END = "<!-- claims:start -->", "<!-- claims:end -->"
KINDS = ("mechanism", "end-to-end", "exact")
MIN_SEEDS = 3  # fewer seeds give a number, not a verdict


@dataclass(frozen=True)
class Expect:
    """One paired comparison a claim makes: ``arm`` minus ``base`` (the claim's base arm
    unless given) on ``metric``, expected to move in ``direction`` (+1 / -1). ``tail``:
    training steps averaged at the end (eval metrics take their last value). ``headline``:
    whether it decides the claim's verdict. ``cell`` / ``frame``: where the notebook printed
    it (an ``effect_lines`` line, or the ``frame``-th ``effect_table`` display of the cell);
    ``seeds``: the seeds of that printout when they are not the claim's."""

    arm: str
    metric: str
    direction: int
    cell: int | None = None
    base: str | None = None
    tail: int = 5
    headline: bool = True
    frame: int | None = None
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
        self, seeds: Sequence[int], runs_dir: str | Path | None = None, **overrides
    ) -> list[tuple[str, int, TrainConfig, object]]:
        """(arm, seed, TrainConfig, algorithm config) of every run, in the notebook's run folders
        (``runs_dir``: under ``runs_dir/<id>/<arm>/seed<k>`` instead)."""
        if runs_dir:
            out_dir, folders = str(Path(runs_dir) / self.id / "{arm}" / "seed{seed}"), {}
        else:
            out_dir, folders = str(ROOT / self.run_dir), self.folders
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


def arm_runs(
    arms: Mapping[str, tuple[str, Mapping]],
    seeds: Sequence[int],
    out_dir: str,
    train: Mapping[str, Mapping] | None = None,
    folders: Mapping[str, str] | None = None,
    **shared,
) -> list[tuple[str, int, TrainConfig, object]]:
    """(arm, seed, TrainConfig, algorithm config) for every arm and seed, arm by arm: the runs of a comparison.

    ``arms``: label -> (algorithm, its config options), e.g. ``{"grpo": ("grpo", {"minibatches": 4})}``;
    ``out_dir``: each run's folder, with ``{arm}`` and ``{seed}`` filled in (``folders`` renames an arm's folder);
    ``train``: label -> TrainConfig settings of that arm alone; ``shared``: TrainConfig settings of every arm.
    Notebooks 04, 07 and 08 build their runs with this from the arms defined here, and so does
    :meth:`Claim.train_configs`: one definition of each experiment, trained by both.
    """
    train, folders = train or {}, folders or {}
    shared = {"progress": False, "overwrite": True, **shared}
    return [
        (
            arm,
            s,
            TrainConfig(
                algo=algo,
                seed=s,
                out_dir=out_dir.format(arm=folders.get(arm, arm), seed=s),
                **{**shared, **train.get(arm, {})},
            ),
            make_config(algo, **options),
        )
        for arm, (algo, options) in arms.items()
        for s in seeds
    ]


# --------------------------------------------------------------------------- #
# The regimes, copied from the notebooks' code cells
# --------------------------------------------------------------------------- #

_GRPO_VALUES = dict(
    clip_high=0.2, loss_agg="seq-mean-token-mean", dynamic_sampling="off", overlong_penalty=False, kl_coef=0.04
)


def _only(**switch) -> tuple[str, dict]:
    """Notebook 04's ``only``: DAPO with every switch set back to vanilla GRPO's, except these."""
    return ("dapo", {**_GRPO_VALUES, **switch})


NB04 = dict(
    notebook="04_improved_grpo.ipynb",
    task="addition:terms=2-6",
    run_dir="runs/nb04/{arm}/seed{seed}",
    base="grpo",
    shared=dict(steps=40, prompts_per_step=16, group_size=8, eval_prompts=100, eval_samples=4, eval_every=10),
    figure="",
)
NB04_ARMS = {
    "grpo": ("grpo", {"minibatches": 4}),
    "dynamic_sampling": _only(dynamic_sampling="resample", minibatches=4),
    "clip_higher": _only(clip_high=0.28, minibatches=4),
    "token_mean": _only(loss_agg="token-mean", minibatches=4),
    "overlong": _only(overlong_penalty=True, minibatches=4),
    "kl_off": _only(kl_coef=0.0, minibatches=4),
    "kl_0.4": ("grpo", {"kl_coef": 0.4, "minibatches": 4}),
    "dapo": ("dapo", {"minibatches": 4}),
}


def _nb04(*arms: str, cell: int) -> dict:
    return {
        **NB04,
        "arms": {a: NB04_ARMS[a] for a in ("grpo", *arms)},
        "figure": f"notebooks/04_improved_grpo.ipynb#cell-{cell}",
    }


NB06 = dict(
    notebook="06_troubleshooting.ipynb",
    task="addition",
    run_dir="runs/nb06/{arm}/seed{seed}",
    base="baseline",
    shared=dict(steps=30, prompts_per_step=16, group_size=8, eval_prompts=100, eval_samples=4, eval_every=15),
)
_NB06_OVERLONG = (
    "dapo",
    dict(
        clip_high=0.2,
        loss_agg="seq-mean-token-mean",
        dynamic_sampling="off",
        kl_coef=0.04,
        lr=3e-4,
        overlong_penalty=True,
        overlong_buffer=16,
        overlong_filter=True,
    ),
)
NB06_MONITOR_THRESHOLD = (
    0.1318  # notebook 06 (e): 80% of the baseline's first-batch entropy over seeds 0-2, as it printed it
)
NB07 = dict(
    notebook="07_reward_model.ipynb",
    figure="notebooks/07_reward_model.ipynb#cell-11",
    task="addition",
    base="rmonly",
    run_dir="runs/nb07/{arm}/seed{seed}",
    shared=dict(
        steps=40,
        prompts_per_step=16,
        group_size=8,
        eval_every=10,
        eval_prompts=200,
        eval_samples=4,
        reward_model=str(ROOT / "data" / "reward_model"),
    ),
    arms={
        "rmonly": ("grpo", {"kl_coef": 0.0, "lr": 3e-4}),
        "rm_KL": ("grpo", {"kl_coef": 0.2, "lr": 3e-4}),
        "rm_rule": ("grpo", {"kl_coef": 0.0, "lr": 3e-4}),
    },
    train={
        "rmonly": {"rule_weight": 0.0},
        "rm_KL": {"rule_weight": 0.0},
        "rm_rule": {"rule_weight": 1.0, "rm_weight": 0.5},
    },  # which reward each trains on
    names={"rmonly": "rm only", "rm_KL": "rm + KL", "rm_rule": "rm + rule"},
)
"""Notebook 07's three runs on the learned reward model (its arms, the reward each trains on, the notebook's labels)."""
NB08 = dict(
    notebook="08_after_dapo.ipynb",
    task="addition:terms=2-6",
    run_dir="runs/nb08/{arm}/seed{seed}",
    base="grpo",
    shared=dict(steps=40, prompts_per_step=16, group_size=8, eval_prompts=100, eval_samples=4, eval_every=10),
    figure="",
)
NB09 = dict(
    notebook="09_exploration.ipynb",
    task="trap",
    model=str(TRAP_MODEL_DIR),
    run_dir="runs/exploration/{arm}_s{seed}",
    base="vanilla",
    shared=dict(
        prompts_per_step=16,
        group_size=8,
        steps=30,
        eval_every=10,
        eval_prompts=200,
        eval_samples=4,
        entropy_probe=True,
        save_every=0,
    ),
    figure="notebooks/09_exploration.ipynb#cell-19",
)
_TRAP_OFF = dict(clip_high=0.2, loss_agg="seq-mean-token-mean", dynamic_sampling="off", overlong_penalty=False)
_TRAP_VANILLA = dict(lr=1e-4, minibatches=8, kl_coef=0.0)
NB09_ARMS = {  # rlalgos.workbook.exploration's ARMS and ABLATION_ARMS, as (algo, options)
    "vanilla": ("grpo", {**_TRAP_VANILLA}),
    "clip_higher": ("grpo", {**_TRAP_VANILLA, "clip_high": 0.28}),
    "clip_cov": ("grpo", {**_TRAP_VANILLA, "loss_mode": "clip_cov"}),
    "kl_cov": ("grpo", {**_TRAP_VANILLA, "loss_mode": "kl_cov"}),
    "entropy_bonus": (
        "dapo",
        {**_TRAP_VANILLA, **_TRAP_OFF, "entropy_threshold": 1e9, "entropy_action": "bonus", "entropy_coef": 0.01},
    ),
    "temperature": ("dapo", {**_TRAP_VANILLA, **_TRAP_OFF, "entropy_threshold": 0.3, "entropy_action": "temperature"}),
    "kl": ("grpo", {**_TRAP_VANILLA, "kl_coef": 0.04}),
    "dapo": ("dapo", {**_TRAP_VANILLA}),
    "dynamic_only": ("dapo", {**_TRAP_VANILLA, **_TRAP_OFF, "dynamic_sampling": "resample"}),
    "dapo_no_dynamic": ("dapo", {**_TRAP_VANILLA, "dynamic_sampling": "off"}),
}


def _emergence(*labels: str) -> dict:
    """Notebook 12's and 13's runs (:data:`rlalgos.workbook.emergence.CLAIM_ARMS`): each arm trains from its own base model."""
    from .emergence import claim_fields

    return claim_fields(*labels)


def _nb09(*arms: str) -> dict:
    return {**NB09, "arms": {a: NB09_ARMS[a] for a in ("vanilla", *arms)}}


NB10 = dict(
    notebook="10_engines.ipynb",
    task="addition:terms=2-6",
    run_dir="runs/nb10/{arm}_push/seed{seed}",
    base="grpo",
    figure="notebooks/10_engines.ipynb#cell-10",
    shared=dict(
        steps=15, prompts_per_step=16, group_size=8, eval_prompts=100, eval_samples=4, eval_every=0, save_every=0
    ),
)
_PUSH = dict(lr=3e-4, epochs=2, minibatches=8)  # notebook 08's push, which notebook 10 reuses
NB08_ARMS = {  # notebook 08's runs: the main comparison, and the off-policy push for the dual clip
    **{name: (name, {"minibatches": 4}) for name in ("grpo", "gspo", "drgrpo", "rloo")},
    "grpo_push": ("grpo", dict(_PUSH)),
    "dualclip_push": ("dualclip", dict(_PUSH)),
}
NB08_TRAIN = {
    arm: {"steps": 15, "eval_every": 0} for arm in ("grpo_push", "dualclip_push")
}  # the push: shorter, evaluated before and after only
NB10_ARMS = {name: (name, dict(_PUSH)) for name in ("grpo", "cispo", "sapo")}
NB10_MM = dict(
    notebook="10_engines.ipynb",
    task="addition",
    run_dir="runs/nb10/mismatch/{arm}/seed{seed}",
    base="fresh",
    figure="notebooks/10_engines.ipynb#cell-22",
    shared=dict(
        steps=30, prompts_per_step=16, group_size=8, eval_prompts=200, eval_samples=4, eval_every=0, save_every=0
    ),
)
NB10_MM_TRAIN = {
    "fresh": {},
    "bf16": {"rollout_dtype": "bfloat16"},
    "stale": {"rollout_sync_every": 4},
    "stale_tis": {"rollout_sync_every": 4, "rollout_correction": "token_truncate"},
    "stale_mis": {"rollout_sync_every": 4, "rollout_correction": "sequence_mask"},
}
MISMATCH = "the rollout-trainer mismatch (Yao et al. 2025, fengyao.notion.site/off-policy-rl; Liu et al. 2025, richardli.xyz/rl-collapse)"


def _mm(*arms: str, base: str = "fresh") -> dict:
    """Notebook 10's mismatch arms against ``base``: GRPO's defaults, each arm its own sampler and correction (TrainConfig settings)."""
    names = (base, *arms)
    return {
        **NB10_MM,
        "base": base,
        "arms": {a: ("grpo", {}) for a in names},
        "train": {a: NB10_MM_TRAIN[a] for a in names if NB10_MM_TRAIN[a]},
    }


GRPO_VALUES = "clip_high=0.2:loss_agg=seq-mean-token-mean:dynamic_sampling=off:overlong_penalty=False:kl_coef=0.04"
"""A dapo spec's switches set back to vanilla GRPO's values (add one back to study it alone)."""
REGIMES = {
    "zero_signal": dict(
        task="addition:terms=2-6",
        max_new_tokens=0,
        steps=40,
        eval_prompts=200,
        seeds="0,1,2,3,4,5",
        extra=["zero_std_frac", "completion_len"],
        arms={"grpo": "grpo:minibatches=4", "dapo": "dapo:minibatches=4"},
    ),
    "entropy_push": dict(
        task="addition",
        max_new_tokens=0,
        steps=60,
        eval_prompts=100,
        seeds="0,1,2,3,4,5",
        extra=["eval_entropy", "clip_frac_high"],
        arms={
            "grpo": "grpo:lr=2e-4:kl_coef=0:minibatches=4",
            "clip_higher": "dapo:lr=2e-4:minibatches=4:clip_high=0.28:loss_agg=seq-mean-token-mean:dynamic_sampling=off:overlong_penalty=False:kl_coef=0",
            "dynamic_sampling": "dapo:lr=2e-4:minibatches=4:clip_high=0.2:loss_agg=seq-mean-token-mean:dynamic_sampling=resample:overlong_penalty=False:kl_coef=0",
            "token_mean": "dapo:lr=2e-4:minibatches=4:clip_high=0.2:loss_agg=token-mean:dynamic_sampling=off:overlong_penalty=False:kl_coef=0",
            "dapo": "dapo:lr=2e-4:minibatches=4",
        },
    ),
    "truncation": dict(
        task="addition:terms=3-4",
        max_new_tokens=24,
        steps=40,
        eval_prompts=100,
        seeds="0,1,2",
        extra=["completion_len", "truncated_frac"],
        arms={
            "grpo": "grpo:minibatches=4",
            "overlong_filter": f"dapo:{GRPO_VALUES}:overlong_filter=True:minibatches=4",
            "dapo": "dapo:minibatches=4:overlong_filter=True",
        },
    ),
}
"""The regimes of ``benchmarks/regimes.py`` (which reads them from here): a task setting where one
failure of vanilla GRPO is present, its arms as algorithm specs, its seeds and extra metrics."""


def _regime(name: str) -> dict:
    """The claim fields of :data:`REGIMES` ``[name]``: its arms as specs, its seeds, the benchmark's run folders."""
    r = REGIMES[name]
    return dict(
        notebook="",
        task=r["task"],
        base="grpo",
        figure=f"docs/figures/regime_{name}.png",
        seeds=tuple(int(x) for x in r["seeds"].split(",")),
        run_dir=f"runs/bench/regimes/{name}/" + "{arm}_s{seed}",
        shared=dict(
            steps=r["steps"],
            prompts_per_step=16,
            group_size=8,
            eval_every=10,
            eval_prompts=r["eval_prompts"],
            eval_samples=4,
            max_new_tokens=r["max_new_tokens"],
        ),
        **_spec_arms(r["arms"]),
    )


def _spec_arms(specs: Mapping[str, str]) -> dict:
    """``{label: "dapo:minibatches=4"}`` -> the claim's ``arms`` and ``folders`` (the benchmark names a folder by its spec)."""
    from ..config import parse_algo_spec

    return {
        "arms": {label: parse_algo_spec(spec) for label, spec in specs.items()},
        "folders": {label: spec.replace(":", "-") for label, spec in specs.items()},
    }


# --------------------------------------------------------------------------- #
# The claims: one per row of the scorecard
# --------------------------------------------------------------------------- #

DAPO = "DAPO (Yu et al. 2025, arXiv:2503.14476)"
GANDHI = "Gandhi et al. 2025, arXiv:2503.01307"
DRGRPO = "Dr. GRPO (Liu et al. 2025, arXiv:2503.20783)"
GRPO_PAPER = "DeepSeekMath GRPO (Shao et al. 2024, arXiv:2402.03300)"
CUI = "Cui et al. 2025, arXiv:2505.22617"
PPO_PAPER = "PPO (Schulman et al. 2017, arXiv:1707.06347)"
_PASSK_LINE = r"\s(?P<diff>[+-]?[\d.]+)\s+\S+\s+\S+\s+(?P<lo>[+-]?[\d.]+)\s+\S+\s+\S+\s+(?P<hi>[+-]?[\d.]+)$"  # notebook 09's pass@k table: k = 1's diff, ci_low, ci_high
MECH = dict(
    notebook="04_improved_grpo.ipynb", figure="notebooks/04_improved_grpo.ipynb#cell-34"
)  # measured on the base model's rollouts (rlalgos.workbook.measures)
SPEED = "docs/speed.md"

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "aggregation-long-answer",
        "Per-answer averaging (GRPO) dilutes each token of a long answer; token-level loss (DAPO) weighs every token the same",
        DAPO,
        "mechanism",
        "mechanism reproduced, but much smaller than the 6.4x in the loss weights: shared parameters and Adam's per-parameter normalisation carry most of the push to the long answer either way",
        **MECH,
        measure="aggregation",
        base="seq-mean-token-mean",
        expects=(Expect("token-mean", "dlogp_long", -1),),
        quotes=(
            Quote(
                "weight of one token of the long wrong answer / of a short wrong answer: 0.157 (seq-mean-token-mean) vs 1.000 (token-mean)"
            ),
            Quote(
                "paired difference -0.0216 (sd 0.0058, 3 seeds)",
                arm="token-mean",
                base="seq-mean-token-mean",
                metric="dlogp_long",
                direction=-1,
                pattern=r"paired difference (?P<diff>[+-]?[\d.]+) \(sd (?P<sd>[\d.]+), (?P<n>\d+) seeds\)",
            ),
        ),
    ),
    Claim(
        "token-mean-drgrpo-constant",
        "Token-mean and Dr. GRPO's sum / (B * L_max) differ only by a constant (Adam is invariant to it)",
        DRGRPO,
        "exact",
        "exact with Adam; with SGD the constant is a learning-rate change",
        **MECH,
        test="tests/test_core.py::test_aggregate_loss_modes_agree_on_full_equal_lengths",
        quotes=(
            Quote("token-mean               0.010      -0.009  0.006     9.622e-04  9.942e-04"),
            Quote("seq-mean-token-sum-norm  0.010      -0.009  0.006     9.621e-04  9.942e-04"),
        ),
    ),
    Claim(
        "token-mean-learning",
        "Token-level vs per-answer loss changes learning",
        DAPO,
        "end-to-end",
        "not at this scale: the longest problems (5-6 terms) are all-wrong groups with advantage 0, so there is little length to reweight",
        **_nb04("token_mean", cell=54),
        expects=(
            Expect("token_mean", "eval_accuracy", +1),
            Expect("token_mean", "eval_completion_len", +1, headline=False),
            Expect("token_mean", "eval_entropy", +1, headline=False),
        ),
    ),
    Claim(
        "zero-variance-no-signal",
        "Zero-variance groups carry no signal; dynamic sampling keeps the batch full of signal",
        DAPO,
        "mechanism",
        "reproduced: the signal is missing, exactly, in every all-equal group",
        stated="reproduced (a census, no interval)",
        **{**MECH, "figure": "notebooks/04_improved_grpo.ipynb#cell-37"},
        measure="signal",
        base=SIGNAL_ONLY,
        expects=(Expect(SAMPLED, "signal_frac", -1),),
        quotes=(Quote("groups that carry signal: 0.46 (per seed 0.52, 0.45, 0.42; 3 seeds x 64 prompts x 8)"),),
    ),
    Claim(
        "dynamic-sampling-keeps-easy",
        "Dynamic sampling biases training towards middling difficulty",
        DAPO,
        "mechanism",
        "reproduced: what dynamic sampling keeps is the easy half; the all-wrong hard problems are never trained on",
        stated="reproduced (a census, no interval)",
        **{**MECH, "figure": "notebooks/04_improved_grpo.ipynb#cell-37"},
        measure="signal",
        base=SAMPLED,
        expects=(Expect(SIGNAL_ONLY, "mean_terms", -1),),
        quotes=(
            Quote("5            46      0.002      0.000      0.978         0.022"),
            Quote("5                          0.240                        0.011"),
            Quote("2                          0.203                        0.416"),
        ),
    ),
    Claim(
        "dynamic-sampling-speed",
        "Dynamic sampling learns faster per step",
        DAPO,
        "end-to-end",
        "not shown for accuracy (the closest call in the notebook; behind per generated answer); shown: it sharpens the policy faster",
        **_nb04("dynamic_sampling", cell=50),
        expects=(
            Expect("dynamic_sampling", "eval_accuracy", +1),
            Expect("dynamic_sampling", "eval_entropy", -1, headline=False),
        ),
        quotes=(
            Quote(
                "groups sampled per step: 44.2 for a batch of 16 (2.76x the sampling); steps left short of a full batch: 0.12"
            ),
        ),
    ),
    Claim(
        "truncated-not-wrong",
        "A truncated answer is not necessarily a wrong one (why overlong filtering)",
        DAPO,
        "mechanism",
        "partial: only at one budget does the filter mask answers that are right",
        stated="partial (a census, no interval)",
        **{**MECH, "figure": "notebooks/04_improved_grpo.ipynb#cell-41"},
        measure="truncation",
        base="if truncated meant wrong",
        expects=(Expect(f"truncated at {BUDGET} tokens", "truncated_correct_frac", +1),),
        quotes=(
            Quote("24              0.495  0.024                  0.170  0.017"),
            Quote("28              0.362  0.018                  0.000  0.000"),
        ),
    ),
    Claim(
        "overlong-shaping",
        "Overlong shaping changes learning under truncation",
        DAPO,
        "end-to-end",
        "not at this scale (at 64 tokens nothing reaches the buffer)",
        **_nb04("overlong", cell=56),
        expects=(
            Expect("overlong", "eval_accuracy", +1),
            Expect("overlong", "eval_completion_len", -1, headline=False),
        ),
        quotes=(
            Quote("mean overlong penalty per answer: -0.0003; steps with any penalty: 0.050; truncated share: 0.0003"),
        ),
    ),
    Claim(
        "clip-higher-entropy",
        "Clip-higher slows entropy collapse",
        DAPO,
        "end-to-end",
        "not at this scale: the upper clip almost never binds; every token of a right answer here is a high-probability token",
        **_nb04("clip_higher", cell=52),
        expects=(Expect("clip_higher", "eval_entropy", +1), Expect("clip_higher", "eval_accuracy", +1, headline=False)),
        quotes=(
            Quote("grpo         clip_frac 0.0024 (high 0.0006, low 0.0018)"),
            Quote("clip_higher  clip_frac 0.0024 (high 0.0004, low 0.0020)"),
        ),
    ),
    Claim(
        "entropy-covariance",
        "The entropy change of a policy-gradient step is minus the covariance of log-prob and advantage",
        CUI,
        "mechanism",
        "exact on the toy; on the tiny model the sign holds, weakly: at 8 optimizer steps per rollout the covariance explains little of the entropy change",
        stated="sign holds, weakly (a fit, no paired arms)",
        **{
            **_nb09(*(a for a in NB09_ARMS if a not in ("vanilla", "dynamic_only", "dapo_no_dynamic"))),
            "figure": "notebooks/09_exploration.ipynb#cell-15",
        },
        fit="entropy_fit",
        quotes=(
            Quote(
                "{'steps': 720, 'corr': -0.2361, 'slope': -0.0844, 'slope_low': -0.1097, 'slope_high': -0.059, 'sign_as_predicted': 0.6843"
            ),
            Quote("0   -5.279e-03"),
            Quote("2    6.182e-04"),
        ),
    ),
    Claim(
        "trap-vanilla-collapse",
        "Vanilla GRPO's entropy collapses and it locks into what was rewarded first",
        DAPO,
        "end-to-end",
        "not as stated: entropy falls by a third and the rare strategy is found; what collapses is the easy skill (its groups are all right, so nothing in the loss defends it)",
        stated="not as stated (start vs end of one arm, no pair)",
        **{**_nb09(), "figure": "notebooks/09_exploration.ipynb#cell-12"},
        quotes=(
            Quote("eval_entropy                       0.403        0.266  [0.282, 0.269, 0.248]"),
            Quote("eval_accuracy/easy                 0.753        0.188  [0.199, 0.253, 0.112]"),
            Quote("eval_scratchpad_frac/hard          0.076        0.448  [0.439, 0.532, 0.374]"),
        ),
    ),
    Claim(
        "rl-sharpens",
        "RL sharpens: it raises pass@1, not pass@k at large k, where the base model catches up",
        "Yue et al. 2025, arXiv:2504.13837",
        "end-to-end",
        "reproduced: pass@1 up beyond the noise, pass@256 level with the base model (within noise, never above it); in the trap the trained models end below the base model at every k. Fresh seeds 20-22: the same (pass@1 +0.123, CI +0.082..+0.164 for GRPO, +0.107 for DAPO; pass@256 0.990 and 1.000 against the base model's 1.000)",
        notebook="09_exploration.ipynb",
        figure="notebooks/09_exploration.ipynb#cell-28",
        fit="passk",
        task="addition",
        run_dir="runs/exploration_default/{arm}_s{seed}",
        shared=dict(steps=30, eval_every=0, eval_prompts=200, eval_samples=4, save_every=0),
        arms={
            "grpo": ("grpo", {}),
            "dapo": ("dapo", {}),
        },  # notebook 09's default-task runs (32 prompts x 8 per step, each algorithm's defaults)
        quotes=(
            Quote(
                "default task: grpo      0.109 -0.017 -0.010  0.069 -0.045 -0.031   0.148",
                arm="grpo",
                base=BASE_MODEL,
                metric="pass@1",
                direction=+1,
                pattern=_PASSK_LINE,
            ),
            Quote(
                "default task: dapo      0.102 -0.028 -0.010  0.067 -0.057 -0.031   0.138",
                arm="dapo",
                base=BASE_MODEL,
                metric="pass@1",
                direction=+1,
                pattern=_PASSK_LINE,
            ),
            Quote("vanilla                -0.290 -0.332 -0.333 -0.408 -0.477 -0.468  -0.172"),
        ),
    ),
    Claim(
        "clip-higher-trap",
        "Clip-higher grows the rare strategy in a regime built for exploration",
        DAPO,
        "end-to-end",
        "not at this scale, even here: the clip almost never binds on the tokens it is for",
        **_nb09("clip_higher"),
        expects=(
            Expect("clip_higher", "eval_scratchpad_frac/hard", +1, cell=18, frame=0, tail=1),
            Expect("clip_higher", "eval_accuracy/hard", +1, cell=18, frame=0, tail=1, headline=False),
            Expect(
                "clip_higher",
                "eval_scratchpad_frac/hard",
                +1,
                cell=21,
                frame=0,
                tail=1,
                headline=False,
                seeds=(3, 4, 5),
            ),
            Expect(
                "clip_higher",
                "eval_scratchpad_frac/hard",
                +1,
                cell=21,
                frame=1,
                tail=1,
                headline=False,
                seeds=(0, 1, 2, 3, 4, 5),
            ),
        ),
    ),
    Claim(
        "clip-cov-kl-cov",
        "Clip-Cov and KL-Cov keep the entropy up by acting on the highest-covariance tokens",
        CUI,
        "end-to-end",
        "exact against verl; end to end not shown: the first-set effects did not come back on fresh seeds (pass@4 is a lead)",
        test="tests/test_loss_modes.py::test_loss_and_gradient_equal_verl",
        **_nb09("clip_cov", "kl_cov"),
        expects=(
            Expect("clip_cov", "eval_entropy", +1, cell=18, frame=0, tail=1),
            Expect("kl_cov", "eval_entropy", +1, cell=18, frame=0, tail=1),
            Expect("clip_cov", "eval_accuracy/hard", +1, cell=18, frame=0, tail=1, headline=False),
            Expect("clip_cov", "eval_accuracy/hard", +1, cell=21, frame=0, tail=1, headline=False, seeds=(3, 4, 5)),
        ),
    ),
    Claim(
        "entropy-bonus-trap",
        "An entropy bonus, the temperature monitor or a KL term preserves exploration",
        DAPO,
        "end-to-end",
        "not shown (the entropy bonus's pass@4 is a lead)",
        **_nb09("entropy_bonus", "temperature", "kl"),
        expects=(
            Expect("entropy_bonus", "eval_entropy", +1, cell=18, frame=0, tail=1),
            Expect("temperature", "eval_entropy", +1, cell=18, frame=0, tail=1),
            Expect("kl", "eval_entropy", +1, cell=18, frame=0, tail=1),
            Expect("entropy_bonus", "eval_pass@4", +1, cell=18, frame=0, tail=1, headline=False),
            Expect("entropy_bonus", "eval_pass@4", +1, cell=21, frame=0, tail=1, headline=False, seeds=(3, 4, 5)),
            Expect(
                "entropy_bonus", "eval_pass@4", +1, cell=21, frame=1, tail=1, headline=False, seeds=(0, 1, 2, 3, 4, 5)
            ),
        ),
    ),
    Claim(
        "dapo-trap",
        "Improved GRPO beats vanilla in a regime built for exploration",
        DAPO,
        "end-to-end",
        "reproduced on fresh seeds: improved GRPO learns the rare strategy and keeps the easy skill, while lowering entropy (convergence, not lost exploration); arm added after the first sweep was read",
        **_nb09("dapo"),
        seeds=(3, 4, 5),
        expects=(
            Expect("dapo", "eval_accuracy", +1, cell=21, frame=0, tail=1),
            Expect("dapo", "eval_pass@4", +1, cell=21, frame=0, tail=1, headline=False),
            Expect("dapo", "eval_accuracy", +1, cell=18, frame=0, tail=1, headline=False, seeds=(0, 1, 2)),
            Expect(
                "dapo", "eval_accuracy/hard", +1, cell=21, frame=1, tail=1, headline=False, seeds=(0, 1, 2, 3, 4, 5)
            ),
            Expect("dapo", "eval_entropy", -1, cell=21, frame=1, tail=1, headline=False, seeds=(0, 1, 2, 3, 4, 5)),
        ),
    ),
    Claim(
        "dynamic-sampling-carries-dapo",
        "In the exploration regime the switch that carries DAPO's gain is dynamic sampling",
        DAPO,
        "end-to-end",
        "shown (3 seeds): dynamic sampling alone gives two thirds of DAPO's accuracy gain and DAPO needs it; it lowers entropy; arms added after the dapo row was read",
        **_nb09("dapo", "dynamic_only", "dapo_no_dynamic"),
        expects=(
            Expect("dynamic_only", "eval_accuracy", +1, cell=31, frame=0, tail=1),
            Expect("dapo_no_dynamic", "eval_accuracy", -1, cell=31, frame=1, tail=1, base="dapo"),
            Expect("dynamic_only", "eval_pass@4", +1, cell=31, frame=0, tail=1, headline=False),
            Expect("dynamic_only", "eval_entropy", -1, cell=31, frame=0, tail=1, headline=False),
        ),
    ),
    Claim(
        "cispo-sapo-exact",
        "CISPO and SAPO are what TRL's and verl's cispo / sapo compute",
        "CISPO (MiniMax-M1, arXiv:2506.13585); SAPO (arXiv:2511.20347)",
        "exact",
        "exact to rtol 1e-6; end to end: cispo-push and sapo-push",
        test="tests/test_loss_modes.py::test_loss_and_gradient_equal_verl",
    ),
    Claim(
        "cispo-push",
        "Keeping the gradient of every token the hard clip silences (CISPO) learns better where the clip binds",
        "CISPO (MiniMax-M1, arXiv:2506.13585)",
        "end-to-end",
        "not shown: where the clip binds, CISPO drifted about twice as far from the sampling policy and ended further from the reference, without learning better",
        **{**NB10, "arms": {a: NB10_ARMS[a] for a in ("grpo", "cispo")}},
        expects=(
            Expect("cispo", "eval_accuracy", +1),
            Expect("cispo", "approx_kl", +1, headline=False),
            Expect("cispo", "eval_entropy", +1, headline=False),
        ),
    ),
    Claim(
        "sapo-push",
        "A soft gate on the ratio (SAPO) learns better than the hard clip where the clip binds",
        "SAPO (Gao et al. 2025, arXiv:2511.20347)",
        "end-to-end",
        "the opposite, by a hair: SAPO ended slightly below GRPO and a little further from the reference",
        **{**NB10, "arms": {a: NB10_ARMS[a] for a in ("grpo", "sapo")}},
        expects=(
            Expect("sapo", "eval_accuracy", +1),
            Expect("sapo", "approx_kl", -1, headline=False),
            Expect("sapo", "eval_entropy", +1, headline=False),
        ),
    ),
    Claim(
        "bf16-mismatch",
        "Sampling in bf16 for an fp32 trainer (the engines' setup) makes training off-policy enough to change learning",
        MISMATCH,
        "end-to-end",
        "not at this scale: the bf16 gap is a few thousandths of a nat per token and no ratio leaves [1/2, 2]",
        **_mm("bf16"),
        expects=(Expect("bf16", "eval_accuracy", -1),),
    ),
    Claim(
        "stale-sampler",
        "A sampler several updates behind the trainer (asynchronous engines) changes learning",
        MISMATCH,
        "end-to-end",
        "not at this scale: even three updates stale, few ratios pass 2 and accuracy stays within the noise",
        **_mm("stale"),
        expects=(Expect("stale", "eval_accuracy", -1), Expect("stale", "eval_entropy", -1, headline=False)),
    ),
    Claim(
        "rollout-correction",
        "Truncated (TIS) or masked (MIS) importance weights recover what a mismatched sampler costs",
        MISMATCH,
        "end-to-end",
        "not at this scale: both act as designed (TIS truncates a few tokens, masking drops a few answers), with nothing to recover",
        **_mm("stale_tis", "stale_mis", base="stale"),
        expects=(Expect("stale_tis", "eval_accuracy", +1), Expect("stale_mis", "eval_accuracy", +1)),
    ),
    Claim(
        "kl-penalty-drift",
        "A KL penalty keeps the policy near the reference; too strong a penalty slows learning",
        GRPO_PAPER,
        "end-to-end",
        "reproduced for drift (the coefficient sets how far the policy moves: KL, entropy, length); not at this scale for accuracy",
        **_nb04("kl_off", "kl_0.4", cell=58),
        expects=(
            Expect("kl_off", "kl", +1),
            Expect("kl_0.4", "kl", -1),
            Expect("kl_0.4", "eval_entropy", +1, headline=False),
            Expect("kl_0.4", "eval_completion_len", -1, headline=False),
            Expect("kl_0.4", "eval_accuracy", -1, headline=False),
        ),
    ),
    Claim(
        "kl-penalty-high-lr",
        "... the KL penalty at a higher learning rate (lr 3e-4, beta 0 / 0.04 / 0.4)",
        GRPO_PAPER,
        "end-to-end",
        "partial: beta 0.4 holds entropy and length nearer the base model (beyond the spread) but the measured KL does not move beyond it in 40 steps "
        "(published by `rlalgos claims run kl-penalty-high-lr --publish`, 2026-12-02)",
        task="addition",
        base="beta0.04",
        figure="notebooks/04_improved_grpo.ipynb#cell-58",
        shared=dict(steps=40, prompts_per_step=16, group_size=8),
        run_dir="runs/kl_high_lr/{arm}/seed{seed}",
        arms={
            "beta0": ("grpo", {"lr": 3e-4, "kl_coef": 0.0}),
            "beta0.04": ("grpo", {"lr": 3e-4, "kl_coef": 0.04}),
            "beta0.4": ("grpo", {"lr": 3e-4, "kl_coef": 0.4}),
        },
        expects=(
            Expect("beta0.4", "kl", -1),
            Expect("beta0.4", "entropy", +1, headline=False),
            Expect("beta0.4", "completion_len", -1, headline=False),
        ),
    ),
    Claim(
        "kl-estimators",
        "k3 estimates KL(π‖π_ref) without bias, but as a loss its gradient is the forward KL's; k1's is 0 on average; k2's (and k3+, k3 x ratio) the reverse KL's",
        "Tang & Munos 2025, arXiv:2506.09477",
        "exact",
        "exact for the maths; on the tiny model k3's lean toward the forward KL shows only weakly (per rollout, cosine 0.638 with the forward KL's gradient, 0.615 with the reverse's); the clamped k3's value measured 12% low at -1.3 "
        "standard errors (within noise; an earlier run of notebook 03, on a policy trained by older code, measured 20% low at -3.1)",
        notebook="03_grpo.ipynb",
        figure="notebooks/03_grpo.ipynb#cell-31",
        test="tests/test_kl_estimators.py::test_expected_gradients_follow_the_maths",
        quotes=(
            Quote(
                "k3: bias -0.00200 (-1.3 standard errors, -12% of the exact KL); sd per token 3.6x, per answer 9.9x the exact KL's own"
            ),
            Quote("k3 no clamp: bias +0.00007 (+0.0 standard errors, +0% of the exact KL)"),
            Quote("over 60 steps kl - kl_exact has mean -0.00093 and sd 0.00228 (kl_exact's own mean 0.01479)"),
        ),
    ),
    Claim(
        "dapo-default-regime",
        "Improved GRPO (all tricks) beats vanilla GRPO at equal settings",
        DAPO,
        "end-to-end",
        "not at this scale in the default regime: 54.4% vs 53.2%, paired +1.2 points (CI -4.9..+7.2), and DAPO pays 1.45x the samples "
        "(published by `rlalgos claims run dapo-default-regime --publish`, 2026-12-02: the same runs as docs/speed.md's)",
        task="addition",
        base="grpo",
        figure="notebooks/05_side_by_side.ipynb#cell-10",
        run_dir="runs/bench/learning/{arm}_s{seed}",
        shared=dict(steps=60, prompts_per_step=32, group_size=8, eval_every=5, eval_prompts=200, eval_samples=4),
        arms={"grpo": ("grpo", {"minibatches": 4}), "dapo": ("dapo", {"minibatches": 4})},
        folders={"grpo": "grpo-minibatches=4", "dapo": "dapo-minibatches=4"},
        expects=(Expect("dapo", "eval_accuracy", +1),),
        quotes=(
            Quote("`grpo:minibatches=4` reaches 50% in 9.3 steps (2,384 samples) and ends at 53.2%", file=SPEED),
            Quote("54.4% (sd 1.8): a steps ratio of 1.01", file=SPEED),
        ),
    ),
    Claim(
        "dapo-nb04",
        "... improved GRPO beats vanilla in notebook 04's regime",
        DAPO,
        "end-to-end",
        "not at this scale",
        **_nb04("dapo", cell=60),
        expects=(Expect("dapo", "eval_accuracy", +1), Expect("dapo", "eval_entropy", -1, headline=False)),
    ),
    Claim(
        "dapo-zero-signal",
        "... in a regime made for dynamic sampling (many all-wrong groups)",
        DAPO,
        "end-to-end",
        "not at this scale: +0.7 points (CI -1.6..+3.0) over 6 seeds (published by `rlalgos claims run dapo-zero-signal --publish`, 2026-12-02)",
        **_regime("zero_signal"),
        expects=(Expect("dapo", "eval_accuracy", +1),),
        quotes=(Quote("the zero-signal regime it is 1.04", file=SPEED),),
    ),
    Claim(
        "dapo-entropy-push",
        "... in a regime that pushes the policy hard, improved GRPO beats vanilla, and dynamic sampling carries the gain",
        DAPO,
        "end-to-end",
        "reproduced: improved GRPO beats vanilla beyond the seed spread on final sampled accuracy (+7.7 points, CI +1.9..+13.5, 6 seeds; published by `rlalgos claims run dapo-entropy-push --publish` from the runs of `benchmarks/regimes.py --only entropy_push`, 2026-12-02, the same numbers as the earlier run docs/speed.md quoted), by stability rather than speed, and the gain comes from dynamic sampling (+6.6, CI +0.7..+12.4); not from clip-higher (-1.5, CI -7.8..+4.8) and not from keeping entropy up",
        **_regime("entropy_push"),
        expects=(
            Expect("dapo", "eval_accuracy", +1),
            Expect("dynamic_sampling", "eval_accuracy", +1, headline=False),
            Expect("clip_higher", "eval_accuracy", +1, headline=False),
            Expect("token_mean", "eval_accuracy", +1, headline=False),
        ),
        quotes=(
            Quote(
                "paired +7.7 points (95% CI +1.9..+13.5, 6 of 6 seeds), and dynamic sampling",
                file=SPEED,
                arm="dapo",
                metric="eval_accuracy (points)",
                direction=+1,
                seeds=(0, 1, 2, 3, 4, 5),
            ),
            Quote(
                "alone gives most of it (+6.6, CI +0.7..+12.4). The steps-to-target ratio",
                file=SPEED,
                arm="dynamic_sampling",
                metric="eval_accuracy (points)",
                direction=+1,
                seeds=(0, 1, 2, 3, 4, 5),
                headline=False,
                pattern=r"\((?P<diff>[+-][\d.]+), CI (?P<lo>[+-]?[\d.]+)\.\.(?P<hi>[+-]?[\d.]+)\)",
            ),
        ),
    ),
    Claim(
        "dapo-truncation",
        "... in a regime that truncates correct reasoning, overlong shaping helps",
        DAPO,
        "end-to-end",
        "the opposite of the claim, shown: with overlong_buffer 8 at a 24-token budget the penalty starts below every scratchpad, so it pays the model to stop showing its working: -7.9 points (CI -12.4..-3.4; published by `rlalgos claims run dapo-truncation --publish`, 2026-12-02)",
        **_regime("truncation"),
        expects=(Expect("dapo", "eval_accuracy", +1), Expect("overlong_filter", "eval_accuracy", +1, headline=False)),
        quotes=(Quote("reaches the target, because its overlong penalty teaches it to drop the working.", file=SPEED),),
    ),
    Claim(
        "reward-hacking",
        "A reward that pays for something other than correctness gets gamed: reward up, accuracy down",
        "reward over-optimisation (Gao et al. 2022, arXiv:2210.10760)",
        "end-to-end",
        "reproduced, and again on fresh seeds 20-22 (accuracy -0.350, CI -0.362..-0.338; the KL arm +0.068, CI +0.017..+0.118); a KL term slows the slide but does not stop it",
        **NB06,
        figure="notebooks/06_troubleshooting.ipynb#cell-9",
        arms={"baseline": ("grpo", {}), "a_concise": ("grpo", {}), "a_concise_kl": ("grpo", {"kl_coef": 0.5})},
        train={"a_concise": {"task": CONCISE}, "a_concise_kl": {"task": CONCISE}},
        expects=(
            Expect("a_concise", "reward_mean", +1),
            Expect("a_concise", "eval_accuracy", -1),
            Expect("a_concise_kl", "eval_accuracy", +1, base="a_concise", headline=False),
        ),
    ),
    Claim(
        "lr-collapse",
        "Too large a learning rate collapses training",
        PPO_PAPER,
        "end-to-end",
        "reproduced",
        **NB06,
        figure="notebooks/06_troubleshooting.ipynb#cell-16",
        arms={"baseline": ("grpo", {}), "b_lr3e-3": ("grpo", {"lr": 3e-3})},
        train={
            "b_lr3e-3": {"stop_on_collapse": False}
        },  # the whole collapse is the lesson: the run doctor would stop it
        expects=(Expect("b_lr3e-3", "eval_accuracy", -1), Expect("b_lr3e-3", "kl", +1, headline=False)),
    ),
    Claim(
        "length-runaway",
        "A length-biased reward makes length run away; overlong shaping holds it",
        DAPO,
        "end-to-end",
        "reproduced on seeds 0-2 (shaping holds length; it cannot make a reward that ignores correctness teach it); on fresh seeds 20-22 length grew in all three runs but by +3 to +24 tokens (one ran away to 80% truncated, one barely moved), so the interval includes 0: within noise there",
        **NB06,
        figure="notebooks/06_troubleshooting.ipynb#cell-21",
        arms={"baseline": ("grpo", {}), "c_verbose": ("grpo", {"lr": 3e-4}), "c_verbose_overlong": _NB06_OVERLONG},
        train={"c_verbose": {"task": VERBOSE}, "c_verbose_overlong": {"task": VERBOSE}},
        expects=(
            Expect("c_verbose", "completion_len", +1),
            Expect("c_verbose_overlong", "completion_len", -1, base="c_verbose"),
            Expect("c_verbose_overlong", "eval_accuracy", +1, base="c_verbose", headline=False),
        ),
    ),
    Claim(
        "too-hard-prompts",
        "Too-hard prompts give all-equal groups and no gradient; medium-difficulty prompts restore the signal",
        DAPO,
        "end-to-end",
        "reproduced, and again on fresh seeds 20-22 (all-equal share +0.59 on too-hard prompts, -0.77 and accuracy +0.110 with the medium pool)",
        **NB06,
        figure="notebooks/06_troubleshooting.ipynb#cell-26",
        arms={"baseline": ("grpo", {}), "d_too_hard": ("grpo", {}), "d_medium": ("grpo", {})},
        train={"d_too_hard": {"task": TOO_HARD}, "d_medium": {"task": MEDIUM}},
        expects=(
            Expect("d_too_hard", "zero_std_frac", +1),
            Expect("d_medium", "zero_std_frac", -1, base="d_too_hard"),
            Expect("d_medium", "eval_accuracy", +1, base="d_too_hard", headline=False),
        ),
    ),
    Claim(
        "entropy-monitor",
        "A hard push (no KL, lr 2e-4, 4 minibatches) collapses entropy; an entropy monitor fixes it",
        DAPO,
        "end-to-end",
        "partial: a small entropy drop and an accuracy cost reproduce; collapse in the strong sense and the monitor's fix do not at this scale (fresh seeds 20-22: the accuracy cost again, -0.100, CI -0.187..-0.013; the entropy drop within noise there, -0.006, CI -0.020..+0.009; the monitor changes nothing)",
        **NB06,
        figure="notebooks/06_troubleshooting.ipynb#cell-28",
        arms={
            "baseline": ("grpo", {}),
            "e_sharpen": ("grpo", {"lr": 2e-4, "kl_coef": 0.0, "minibatches": 4}),
            "e_monitor": (
                "dapo",
                {
                    "clip_high": 0.2,
                    "loss_agg": "seq-mean-token-mean",
                    "dynamic_sampling": "off",
                    "overlong_penalty": False,
                    "entropy_threshold": NB06_MONITOR_THRESHOLD,
                    "entropy_action": "temperature",
                    "temperature_step": 0.1,
                    "max_temperature": 1.5,
                    "lr": 2e-4,
                    "kl_coef": 0.0,
                    "minibatches": 4,
                },
            ),
        },
        expects=(
            Expect("e_sharpen", "eval_entropy", -1),
            Expect("e_monitor", "eval_entropy", +1, base="e_sharpen"),
            Expect("e_sharpen", "eval_accuracy", -1, headline=False),
        ),
    ),
    Claim(
        "critic-cost",
        "Dropping the critic saves memory and time",
        GRPO_PAPER,
        "end-to-end",
        "reproduced (a cost, deterministic)",
        stated="reproduced (a cost, measured)",
        notebook="05_side_by_side.ipynb",
        figure="notebooks/05_side_by_side.ipynb#cell-10",
        task="addition",
        base="grpo",
        run_dir="runs/nb05_{arm}_s{seed}",
        shared=dict(steps=40, prompts_per_step=16, group_size=8, eval_prompts=100, eval_samples=4, eval_every=20),
        arms={"grpo": ("grpo", {}), "ppo": ("ppo", {})},
        expects=(Expect("ppo", "step_seconds", +1, tail=40),),
        quotes=(
            Quote(
                "final 0.502  (change +0.102; seed range 0.477..0.527); entropy 0.114, KL 0.0326, 3.21 s/step (3.65x GRPO)"
            ),
            Quote("ppo                               29.731"),
            Quote("grpo                              16.516"),
        ),
    ),
    Claim(
        "reward-model-overoptimised",
        "A learned reward model gets over-optimised; KL and a mixed reward hold it",
        "Gao et al. 2022, arXiv:2210.10760",
        "end-to-end",
        "reproduced (both fixes slow the slide; neither keeps the base model's accuracy at this learning rate)",
        **NB07,
        expects=(Expect("rm_KL", "eval_accuracy", +1), Expect("rm_rule", "eval_accuracy", +1)),
        quotes=(
            Quote(
                "rm only    proxy reward/rm +0.257 -> +1.538 (sd 0.308); eval accuracy 0.384 -> 0.084 (sd 0.071); kl 0.605 (sd 0.336)"
            ),
        ),
    ),
    Claim(
        "normalisation-no-signal",
        "Normalisation amplifies but cannot create signal",
        DRGRPO,
        "exact",
        "exact: an all-equal group has advantage 0 with or without the std division",
        notebook="04_improved_grpo.ipynb",
        test="tests/test_core.py::test_group_advantages_all_equal_and_group_of_one",
    ),
    Claim(
        "gspo-clip",
        "GSPO's sequence-level clip acts on far more tokens than GRPO's token clip, without hurting learning",
        "GSPO (Zheng et al. 2025, arXiv:2507.18071)",
        "end-to-end",
        "clip: reproduced; accuracy: no difference at this scale",
        **{
            **NB08,
            "figure": "notebooks/08_after_dapo.ipynb#cell-14",
            "arms": {a: NB08_ARMS[a] for a in ("grpo", "gspo")},
        },
        expects=(Expect("gspo", "clip_frac", +1), Expect("gspo", "eval_accuracy", +1, headline=False)),
    ),
    Claim(
        "drgrpo-length",
        "Dr. GRPO: per-answer normalisation lets wrong answers grow long",
        DRGRPO,
        "end-to-end",
        "not at this scale: the growth is the hard problems being what is left wrong",
        **{
            **NB08,
            "figure": "notebooks/08_after_dapo.ipynb#cell-17",
            "arms": {a: NB08_ARMS[a] for a in ("grpo", "drgrpo")},
        },
        expects=(
            Expect("drgrpo", "completion_len_wrong", -1),
            Expect("drgrpo", "eval_completion_len", -1, headline=False),
        ),
    ),
    Claim(
        "dual-clip",
        "Dual clip bounds the loss of negative-advantage tokens whose ratio runs far up",
        "Dual-clip PPO (Ye et al. 2020, arXiv:1912.09729)",
        "end-to-end",
        "mechanism exact (tests); inert here: ratios above 3 are rare even under this push",
        **{
            **NB08,
            "base": "grpo_push",
            "figure": "notebooks/08_after_dapo.ipynb#cell-23",
            "shared": {**NB08["shared"], **NB08_TRAIN["grpo_push"]},  # both arms are the push's
            "arms": {a: NB08_ARMS[a] for a in ("grpo_push", "dualclip_push")},
        },
        expects=(
            Expect("dualclip_push", "eval_accuracy", +1),
            Expect("dualclip_push", "approx_kl", -1, headline=False),
        ),
        quotes=(Quote("dual clip in force on 0.02906% of tokens on average (max over steps 0.16139%)"),),
    ),
    Claim(
        "rl-needs-competence",
        "RL needs a strategy that works: from the same 10% share, GRPO spreads an incompetent scratchpad less than a competent one",
        GANDHI,
        "end-to-end",
        "shown, but not the stall Gandhi et al. describe: the incompetent scratchpad spread too (0.11 -> 0.88), only less (-11.3 points against the competent one's 0.99) and to an accuracy 27.7 points lower; it was still a little better than the direct answer, and RL partly repaired its sums (+12.8 points)",
        **_emergence("rare0.1", "incompetent"),
        base="rare0.1",
        figure="notebooks/12_where_reasoning_comes_from.ipynb",
        names={"rare0.1": "rare 0.1"},
        expects=(
            Expect("incompetent", "eval_scratchpad_frac", -1, tail=1),
            Expect("incompetent", "eval_accuracy", -1, tail=1, headline=False),
        ),
    ),
    Claim(
        "rl-does-not-invent",
        "RL does not spread a strategy that sampling never finds",
        "Yue et al. 2025, arXiv:2504.13837; " + GANDHI,
        "end-to-end",
        "reproduced: from a share of 4e-05 no scratchpad answer spread in 40 steps (share 0 in every seed, -99.1 points against the 1% start, which took over in every seed); accuracy moved -0.3 points (could see >= 0.7)",
        **_emergence("rare0.01", "absent"),
        base="rare0.01",
        figure="notebooks/12_where_reasoning_comes_from.ipynb",
        names={"rare0.01": "rare 0.01"},
        expects=(Expect("absent", "eval_scratchpad_frac", -1, tail=1),),
    ),
    Claim(
        "priming-lifts-rl",
        "Priming an incompetent model with a few hundred reasoning traces makes RL work",
        GANDHI,
        "end-to-end",
        "partly: primed ends 28.6 points above incompetent (shown), but RL's own gain from the primed start is no different from incompetent's (+1.2 points, could see >= 16.7): the priming did most of the work by raising the share to 0.81",
        **_emergence("incompetent", "primed"),
        base="incompetent",
        figure="notebooks/12_where_reasoning_comes_from.ipynb",
        expects=(
            Expect("primed", "eval_accuracy", +1, tail=1, headline=False),
            Expect("primed", "eval_scratchpad_frac", +1, tail=1, headline=False),
        ),
        quotes=(  # RL's own gain (step 40 - step 0), primed against incompetent, is the headline; `claims run` re-checks the ends
            Quote(
                "eval_accuracy_gain  primed - incompetent = +1.2 points (95% CI -15.6..+17.9, 3 seeds; detectable >= 16.7) -> within noise (could see >= 16.7 points)",
                arm="primed",
                metric="eval_accuracy_gain (points)",
                direction=+1,
                base="incompetent",
            ),
        ),
    ),
    Claim(
        "priming-wrong-traces",
        "... and traces with the right structure but wrong arithmetic prime it too",
        GANDHI,
        "end-to-end",
        "reproduced in miniature: traces with wrong sums primed the choice (share 0.81) and RL then gained 20.5 points more than from incompetent (shown), to 0.388; the arithmetic it recovered was latent in the model",
        **_emergence("incompetent", "primed_wrong"),
        base="incompetent",
        figure="notebooks/12_where_reasoning_comes_from.ipynb",
        expects=(Expect("primed_wrong", "eval_accuracy", +1, tail=1, headline=False),),
        quotes=(
            Quote(
                "eval_accuracy_gain  primed_wrong - incompetent = +20.5 points (95% CI +10.7..+30.3, 3 seeds; detectable >= 9.8) -> shown",
                arm="primed_wrong",
                metric="eval_accuracy_gain (points)",
                direction=+1,
                base="incompetent",
            ),
        ),
    ),
    Claim(
        "ei-entropy",
        "Expert iteration matches GRPO's accuracy but collapses entropy faster (the negatives help exploration)",
        "Xiong et al. 2025, arXiv:2504.11343",
        "end-to-end",
        "not from the shipped model (test entropy -0.002 nats, within noise, could see >= 0.014); from a rare strategy (3% of answers) expert iteration's entropy ended 0.006 nats lower (shown, about 5%) at GRPO's accuracy (+0.5 points, within noise, could see >= 2.8)",
        **{**_emergence("grpo_default", "ei_default", "grpo", "ei"), "notebook": "13_expert_iteration.ipynb"},
        base="grpo_default",
        figure="notebooks/13_expert_iteration.ipynb",
        names={
            "grpo_default": "grpo (shipped)",
            "ei_default": "ei (shipped)",
            "grpo": "grpo (rare 0.03)",
            "ei": "ei (rare 0.03)",
        },
        expects=(
            Expect("ei_default", "eval_entropy", -1, tail=1),
            Expect("ei_default", "eval_accuracy", +1, tail=1, headline=False),
            Expect("ei", "eval_entropy", -1, tail=1, base="grpo", headline=False),
            Expect("ei", "eval_accuracy", +1, tail=1, base="grpo", headline=False),
        ),
    ),
    Claim(
        "rloo-matches-grpo",
        "RLOO (REINFORCE + leave-one-out) matches GRPO",
        "RLOO (Ahmadian et al. 2024, arXiv:2402.14740)",
        "end-to-end",
        "within noise on accuracy",
        **{
            **NB08,
            "figure": "notebooks/08_after_dapo.ipynb#cell-20",
            "arms": {a: NB08_ARMS[a] for a in ("grpo", "rloo")},
        },
        expects=(
            Expect("rloo", "eval_accuracy", +1),
            Expect("rloo", "kl", +1, headline=False),
            Expect("rloo", "eval_entropy", -1, headline=False),
        ),
    ),
)

BY_ID = {c.id: c for c in CLAIMS}


def get_claim(claim_id: str) -> Claim:
    if claim_id not in BY_ID:
        raise ValueError(f"unknown claim {claim_id!r}; `rlalgos claims list` shows the ids")
    return BY_ID[claim_id]


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


# --------------------------------------------------------------------------- #
# Verdicts
# --------------------------------------------------------------------------- #


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


# --------------------------------------------------------------------------- #
# Reading the published numbers from the committed outputs
# --------------------------------------------------------------------------- #

_NUM = r"[+-]?(?:\d+\.?\d*(?:e[+-]?\d+)?|nan)"
EFFECT_LINE = re.compile(
    rf"^(?P<arm>.+?) vs (?P<base>.+?), (?P<metric>\S+): (?P<arm_mean>{_NUM}) vs (?P<base_mean>{_NUM}), paired diff (?P<diff>{_NUM}) "
    rf"\((?:95% CI (?P<ci_low>{_NUM})\.\.(?P<ci_high>{_NUM}), )?(?P<seeds>\d+) seeds?(?:; detectable >= {_NUM})?\): (?P<verdict>.+)$"
)


def cell_outputs(notebook: str | Path) -> dict[int, list[str]]:
    """Every code cell's committed text outputs (stream text and text/plain), by cell index."""
    nb = json.loads(
        Path(notebook if Path(notebook).is_absolute() else NOTEBOOKS / notebook).read_text(encoding="utf-8")
    )
    out = {}
    for i, cell in enumerate(nb["cells"]):
        texts = []
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                texts.append("".join(o["text"]))
            elif "text/plain" in o.get("data", {}):
                texts.append("".join(o["data"]["text/plain"]))
        if texts:
            out[i] = texts
    return out


VERDICT_LINE = re.compile(
    rf"^(?P<metric>\S+)\s+(?P<arm>.+?) - (?P<base>.+?) = (?P<diff>{_NUM})(?P<points> points)? \(95% CI (?P<ci_low>{_NUM})\.\.(?P<ci_high>{_NUM}), "
    rf"(?P<seeds>\d+) seeds; detectable >= {_NUM}\) -> (?P<verdict>.+)$"
)


def effect_lines_in(texts: Sequence[str]) -> list[dict]:
    """The paired-effect lines in some printed text, parsed: :func:`rlalgos.workbook.stats.describe`'s
    and :func:`~rlalgos.workbook.stats.verdict_line`'s (whose points are read back as proportions; it prints no means)."""
    found = []
    for text in texts:
        for line in text.splitlines():
            if m := EFFECT_LINE.match(line.strip()):
                row = m.groupdict()
            elif m := VERDICT_LINE.match(line.strip()):
                row = {**m.groupdict(), "arm_mean": None, "base_mean": None}
                scale = 100.0 if row["points"] else 1.0
                row.update({k: str(float(row[k]) / scale) for k in ("diff", "ci_low", "ci_high")})
            else:
                continue
            found.append(
                {
                    **{k: float(row[k]) if row[k] is not None else math.nan for k in ("diff", "ci_low", "ci_high")},
                    # a verdict line prints no means: None (JSON null), as a quote's
                    **{k: float(row[k]) if row[k] is not None else None for k in ("arm_mean", "base_mean")},
                    "arm": row["arm"],
                    "base": row["base"],
                    "metric": row["metric"],
                    "seeds": int(row["seeds"]),
                    "line": line.strip(),
                }
            )
    return found


def _tokens(line: str) -> list[str]:
    return re.sub(r"(within noise|one seed)", lambda m: m.group(1).replace(" ", "_"), line).split()


def effect_frame(text: str) -> dict[tuple[str, str], dict]:
    """A displayed :func:`rlalgos.workbook.stats.effect_table` (pandas' wrapped text repr, two
    index levels ``metric``/``arm`` in either order) -> {(arm, metric): {column: value}}."""
    rows: dict[tuple[str, str], dict] = {}
    for block in [b for b in re.split(r"\n\s*\n", text) if b.strip()]:
        lines = block.splitlines()
        cols = [c for c in lines[0].split() if c != "\\"]
        names = lines[1].split()
        if len(names) != 2:
            continue
        first = ""
        for line in lines[2:]:
            tok = _tokens(line)
            if not line.startswith(" "):
                first, tok = tok[0], tok[1:]
            second, values = tok[0], tok[1:]
            key = dict(zip(names, (first, second)))
            cells = rows.setdefault((key["arm"], key["metric"]), {})
            for c, v in zip(cols, values):
                cells[c] = v.replace("_", " ") if c == "verdict" else float(v)
    return rows


def _find_quote(claim: Claim, quote: Quote, outputs: Mapping[int, list[str]]) -> str:
    """Where ``quote.line`` is printed: "notebook NN cell K" (``outputs``: the claim notebook's
    :func:`cell_outputs`) or the committed file; ValueError if nowhere."""
    if quote.file:
        if quote.line in (ROOT / quote.file).read_text(encoding="utf-8"):
            return quote.file
        raise ValueError(f"claim {claim.id}: the line {quote.line!r} is no longer in {quote.file}")
    for i, texts in outputs.items():
        if any(quote.line in t for t in texts):
            return f"notebook {claim.notebook[:2]} cell {i}"
    raise ValueError(
        f"claim {claim.id}: the line {quote.line!r} is no longer in the committed output of notebooks/{claim.notebook}"
    )


def _effect(
    arm, base, metric, direction, headline, arm_mean, base_mean, diff, lo, hi, seeds, source, line=None
) -> dict:
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


def _row_effect(arm, base, metric, direction, headline, row: Mapping, seeds, source) -> dict:
    """:func:`_effect` of a paired row (``arm_mean``, ``base_mean``, ``diff``, ``ci_low``, ``ci_high``), rounded."""
    return _effect(
        arm,
        base,
        metric,
        direction,
        headline,
        _r(row["arm_mean"]),
        _r(row["base_mean"]),
        _r(row["diff"]),
        _r(row["ci_low"]),
        _r(row["ci_high"]),
        seeds,
        source,
    )


def _r(x) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else round(float(x), 6)


def extract_published(claim: Claim) -> dict:
    """The claim's published record (the JSON of ``docs/claims/<id>.json``), read from the
    committed outputs: effect lines and effect tables for its :class:`Expect` s, the exact
    lines for its :class:`Quote` s. A number that is no longer printed raises ValueError."""
    effects, quotes = [], []
    outputs = (
        cell_outputs(claim.notebook)
        if claim.notebook and (claim.expects or any(not q.file for q in claim.quotes))
        else {}
    )
    for e in claim.expects:
        base = e.base or claim.base
        seeds = e.seeds or claim.seeds
        if e.frame is not None:
            frames = [t for t in outputs.get(e.cell, []) if "ci_low" in t]
            row = effect_frame(frames[e.frame]).get((e.arm, e.metric)) if e.frame < len(frames) else None
            if row is None:
                raise ValueError(
                    f"claim {claim.id}: no {e.arm}/{e.metric} in effect table {e.frame} of notebook {claim.notebook} cell {e.cell}"
                )
            arm_mean = row.get("arm_mean", row.get("arm"))
            base_mean = row.get("base_mean", row.get(base))
            effects.append(
                _effect(
                    e.arm,
                    base,
                    e.metric,
                    e.direction,
                    e.headline,
                    _r(arm_mean),
                    _r(base_mean),
                    _r(row["diff"]),
                    _r(row["ci_low"]),
                    _r(row["ci_high"]),
                    seeds,
                    f"notebook {claim.notebook[:2]} cell {e.cell}, table {e.frame}",
                )
            )
            continue
        arm_name, base_name = claim.names.get(e.arm, e.arm), claim.names.get(base, base)
        hits = [
            (i, h)
            for i, texts in sorted(outputs.items())
            for h in effect_lines_in(texts)
            if (h["arm"], h["base"], h["metric"]) == (arm_name, base_name, e.metric) and (e.cell is None or i == e.cell)
        ]
        if not hits:
            continue  # not published: the registry names it for runs (e.g. a metric the notebook did not print)
        i, h = hits[0]
        effects.append(
            _effect(
                e.arm,
                base,
                e.metric,
                e.direction,
                e.headline,
                h["arm_mean"],
                h["base_mean"],
                h["diff"],
                h["ci_low"],
                h["ci_high"],
                seeds[: h["seeds"]] if len(seeds) >= h["seeds"] else seeds,
                f"notebook {claim.notebook[:2]} cell {i}",
                h["line"],
            )
        )
    for q in claim.quotes:
        source = _find_quote(claim, q, outputs)
        quotes.append({"source": source, "line": q.line})
        if q.arm:
            m = re.search(q.pattern, q.line)
            if not m:
                raise ValueError(f"claim {claim.id}: the pattern of a quote does not match its line {q.line!r}")
            g = m.groupdict()
            diff = float(g["diff"])
            if g.get("sd") is not None:
                n = int(g["n"])
                half = t975(n - 1) * float(g["sd"]) / math.sqrt(n)
                lo, hi, seeds = diff - half, diff + half, (q.seeds or claim.seeds)[:n]
            else:
                lo, hi, seeds = float(g["lo"]), float(g["hi"]), q.seeds or claim.seeds
            effects.append(
                _effect(
                    q.arm,
                    q.base or claim.base,
                    q.metric,
                    q.direction,
                    q.headline,
                    None,
                    None,
                    _r(diff),
                    _r(lo),
                    _r(hi),
                    seeds,
                    source,
                    q.line,
                )
            )
    return _record(claim, effects, quotes, numbers_from="committed outputs")


def _record(claim: Claim, effects: list[dict], quotes: list[dict], numbers_from: str) -> dict:
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


def write_published(json_dir: str | Path = JSON_DIR, ids: Sequence[str] | None = None) -> list[Path]:
    """:func:`extract_published` of every claim (or of ``ids``) into ``json_dir/<id>.json``. Without
    ``ids``, a record published by ``rlalgos claims run --publish`` (its numbers are from runs, not
    from a committed printout) is kept as it is; naming its id replaces it."""
    json_dir = Path(json_dir)
    json_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for claim in [get_claim(i) for i in ids] if ids else CLAIMS:
        path = json_dir / f"{claim.id}.json"
        if (
            not ids
            and path.exists()
            and json.loads(path.read_text(encoding="utf-8")).get("numbers_from") != "committed outputs"
        ):
            print(f"kept {path} (published by rlalgos claims run --publish)")
            continue
        path.write_text(json.dumps(extract_published(claim), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


# --------------------------------------------------------------------------- #
# list, run, report
# --------------------------------------------------------------------------- #


def load_published(json_dir: str | Path = JSON_DIR) -> dict[str, dict]:
    """Every ``<id>.json`` in ``json_dir``, in the registry's order."""
    json_dir = Path(json_dir)
    found = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in json_dir.glob("*.json")}
    return {c.id: found[c.id] for c in CLAIMS if c.id in found}


def list_claims(json_dir: str | Path = JSON_DIR) -> pd.DataFrame:
    """One row per claim: id, kind, statement, published verdict, seeds."""
    published = load_published(json_dir)
    return pd.DataFrame(
        [
            {
                "id": c.id,
                "kind": c.kind,
                "verdict": published.get(c.id, {}).get("verdict", "(not published)"),
                "seeds": ",".join(map(str, c.seeds)) if c.kind != "exact" else "-",
                "statement": c.statement,
            }
            for c in CLAIMS
        ]
    ).set_index("id")


def run_test(test: str) -> bool:
    """Run one pytest node id in a subprocess; True when it passed."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test], cwd=ROOT, capture_output=True, text=True
    )
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-500:])
    return done.returncode == 0


def _check_folder(cfg: TrainConfig, algo_cfg, overwrite: bool) -> str:
    """``"reuse"`` (this exact run, finished), ``"train"`` (a new folder, or ``overwrite``);
    ValueError for a folder that holds something else."""
    from .exploration import finished

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
    **overrides,
) -> dict:
    """Train (or reuse) every run of a claim on ``seeds`` (default: the published ones), then
    print the paired table and the verdict next to the published one, and write the record
    (the published JSON's shape) to ``out_dir/<id>.json`` (``publish``: over docs/claims/<id>.json).

    Runs go to the notebook's own run folders, so a finished run of the published settings is
    read back, not trained again; ``runs_dir`` puts them under ``runs_dir/<id>/<arm>/seed<k>``.
    A folder holding anything else is never overwritten without ``overwrite``. ``overrides``:
    TrainConfig settings for a cheap look (steps, prompts_per_step, group_size, eval_prompts,
    eval_samples, eval_every); their runs are not the published ones. An exact claim runs its test."""
    claim = get_claim(claim_id)
    published = load_published().get(claim.id, {})
    if claim.kind == "exact":
        passed = run_test(claim.test)
        print(
            f"{claim.id}: {claim.test} {'passed' if passed else 'FAILED'} (published: {published.get('verdict', '-')})"
        )
        record = {
            **_record(claim, [], [], numbers_from="pytest"),
            "verdict": "exact" if passed else "test failed",
            "passed": passed,
        }
        return _write_record(record, out_dir, publish)
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
            f"claim {claim.id} is measured on the base model's rollouts at notebook 04's sizes: it takes no training overrides, got {sorted(overrides)}"
        )
    effects = (_measured_effects if claim.measure else _trained_effects)(
        claim, seeds, jobs, runs_dir, overwrite, progress, overrides
    )
    cheap = {
        k: v for k, v in overrides.items() if k != "device"
    }  # settings that change the runs, not only where they run
    ran = replace(claim, seeds=seeds, shared={**claim.shared, **cheap})
    record = {
        **_record(ran, effects, [], numbers_from="rlalgos claims run"),
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
            f"\ncheap look ({', '.join(f'{k} {v}' for k, v in cheap.items())}), seeds {seeds_text}: {record['verdict']}; "
            f"not comparable with the published verdict ({published_text}), which ran {regime_text(claim)}"
        )
    else:
        print(f"\nverdict on seeds {seeds_text}: {record['verdict']}   ({published_text})")
    return _write_record(record, out_dir, publish)


def _trained_effects(claim: Claim, seeds, jobs, runs_dir, overwrite, progress, overrides) -> list[dict]:
    """Train (or reuse) every run of the claim's arms on ``seeds``, then its paired effects."""
    from ..train import load_metrics
    from ..tools.sweep import plan_line, run_many

    if claim.prepare:
        from .emergence import prepare_models

        prepare_models(claim.prepare)
    runs = claim.train_configs(seeds, runs_dir, **overrides)
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
    effects = []
    where = Path(runs[0][2].out_dir).resolve().parent.parent
    source = "runs: " + (
        where.relative_to(ROOT).as_posix() if where.is_relative_to(ROOT) else str(where)
    )  # a path in the repository, not this machine's
    for e in claim.expects:
        base = e.base or claim.base
        effects.append(
            _row_effect(
                e.arm,
                base,
                e.metric,
                e.direction,
                e.headline,
                paired_effect(groups[base], groups[e.arm], e.metric, e.tail),
                seeds,
                source,
            )
        )
    if claim.fit:  # a law over every step of the runs (its own interval), not a pairing by seed
        from .measures import FITS

        for f in FITS[claim.fit](groups):
            effects.append(
                {
                    **_row_effect(
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
    from .measures import MEASURES

    print(
        f"{claim.id}: measuring rlalgos.workbook.measures.{claim.measure} on seeds {','.join(map(str, seeds))} (no training)"
    )
    values = MEASURES[claim.measure](seeds)
    effects = []
    for e in claim.expects:
        base = e.base or claim.base
        row = paired_values(
            pd.Series(values[base][e.metric], index=seeds), pd.Series(values[e.arm][e.metric], index=seeds), e.metric
        )
        effects.append(
            _row_effect(
                e.arm,
                base,
                e.metric,
                e.direction,
                e.headline,
                row,
                seeds,
                f"measured: rlalgos.workbook.measures.{claim.measure}",
            )
        )
    return effects


def _write_record(record: dict, out_dir, publish: bool) -> dict:
    path = (JSON_DIR if publish else Path(out_dir)) / f"{record['id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"record: {path}")
    return record


def effects_table(effects: Sequence[Mapping]) -> pd.DataFrame:
    cols = ["arm", "base", "metric", "direction", "arm_mean", "base_mean", "diff", "ci_low", "ci_high", "verdict"]
    return pd.DataFrame([{c: e.get(c) for c in cols} for e in effects], columns=cols)


def _fmt(x) -> str:
    if x is None:
        return "-"
    return f"{x:+.3f}" if abs(x) < 1000 else f"{x:+.0f}"


def _seeds(s: Sequence[int]) -> str:
    return ",".join(map(str, s)) if s else "-"


def _link(path: str, prefix: str) -> str:
    if not path:
        return "-"
    file, _, cell = path.partition("#")
    return f"[`{file}`{' ' + cell.replace('-', ' ') if cell else ''}]({prefix}{file})"


def render_page(records: Mapping[str, dict]) -> str:
    """docs/claims.md, from the claims' JSON records."""
    out = [
        "<!-- generated by `rlalgos claims report` from docs/claims/*.json: do not edit by hand -->",
        "",
        "# Claims scorecard: what this workbook shows, and what it does not (yet)",
        "",
        "Each claim of the improved-GRPO story, where it is measured here, its published numbers and a verdict. "
        "The registry is `rlalgos/workbook/claims.py`; the numbers are read from the notebooks' committed outputs "
        "(`python docs/extract_claims.py` writes `docs/claims/<id>.json`), and this page is generated from those files "
        "(`rlalgos claims report`). A verdict is **shown** when the paired 95% t-interval of (arm - base) over the seeds "
        "excludes 0 in the direction the claim expects, **opposite** when it excludes 0 the other way, **within noise** "
        "otherwise; **exact** claims are proved by a test (`rlalgos claims run ID` runs it). A claim's verdict is that of its "
        "headline comparisons (all shown: shown; any opposite: opposite). Rows with no paired number (a census, a fit, or an "
        "earlier session's measurement) keep the verdict stated for them, marked as such. Re-check any claim on new seeds with "
        "`rlalgos claims run ID --seeds 20,21,22` ([CLI](cli.md)).",
        "",
        "| claim | kind | verdict | seeds | statement |",
        "|---|---|---|---|---|",
    ]
    for r in records.values():
        out.append(
            f"| [`{r['id']}`](#{r['id']}) | {r['kind']} | **{r['verdict']}** | {_seeds(r['seeds']) if r['kind'] != 'exact' else '-'} | {r['statement']} |"
        )
    for r in records.values():
        out += [
            "",
            f"## {r['id']}",
            "",
            f"**{r['statement']}**",
            "",
            f"- from: {r['origin']}",
            f"- kind: {r['kind']}; verdict: **{r['verdict']}**",
        ]
        if r["regime"]:
            out.append(f"- regime: {r['regime']}")
            out.append(
                "- arms: "
                + "; ".join(
                    f"`{a}` = {algo} {json.dumps(o) if o else '(defaults)'}"
                    + (f", run with {json.dumps(t[0])}" if t else "")
                    + (" (base)" if a == r["base"] else "")
                    for a, (algo, o, *t) in r["arms"].items()
                )
            )
        if r["kind"] != "exact":
            out.append(f"- seeds: {_seeds(r['seeds'])}")
        if r["test"]:
            out.append(f"- test: `{r['test']}`")
        if r.get("measure"):
            out.append(
                f"- measured: `{r['measure']}` on the base model's rollouts at notebook 04's sizes, no training (`rlalgos claims run {r['id']}` samples it again)"
            )
        if r.get("fit"):
            out.append(
                f"- fit: `{r['fit']}`, computed from the trained runs as a whole with its own 95% interval, not paired by seed (`rlalgos claims run {r['id']}` computes it again)"
            )
        out.append(f"- figure: {_link(r['figure'], '../')}")
        out.append(
            f"- source: {_link(r['notebook'], '../') if r['notebook'] else 'benchmarks/'}"
            + (f", run folders `{r['runs']}`" if r["runs"] else "")
        )
        if r["effects"]:
            out += [
                "",
                "| arm | base | metric | expected | arm mean | base mean | diff | 95% CI | seeds | verdict | from |",
                "|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for e in r["effects"]:
                head = "" if e["headline"] else " (supporting)"
                out.append(
                    f"| `{e['arm']}` | `{e['base']}` | `{e['metric']}` | {'+' if e['direction'] > 0 else '-'} | {_fmt(e['arm_mean'])} | {_fmt(e['base_mean'])} | "
                    f"{_fmt(e['diff'])} | {_fmt(e['ci_low'])}..{_fmt(e['ci_high'])} | {_seeds(e['seeds'])} | {e['verdict']}{head} | {e['source']} |"
                )
        if r["quotes"]:
            out += ["", "Printed in the committed output:", ""]
            out += [f"- {q['source']}: `{q['line']}`" for q in r["quotes"]]
        if not r["effects"] and not r["quotes"] and r["kind"] != "exact":
            out += [
                "",
                "*No committed output holds this row's numbers (an earlier session's measurement): rerun it with `rlalgos claims run "
                + r["id"]
                + "`.*",
            ]
        out += ["", f"Reading: {r['reading']}."]
    return "\n".join(out) + "\n"


def render_readme_block(records: Mapping[str, dict]) -> str:
    """README.md's summary between the claims markers: claim, verdict, link."""
    lines = [START, "| claim | verdict |", "|---|---|"]
    lines += [f"| [{r['statement']}](docs/claims.md#{r['id']}) | **{r['verdict']}** |" for r in records.values()]
    return "\n".join(lines + [END])


def readme_with_block(text: str, block: str) -> str:
    if START not in text or END not in text:
        raise ValueError(f"README.md has no {START} ... {END} block")
    head, rest = text.split(START, 1)
    return head + block + rest.split(END, 1)[1]


def report(out: str | Path = PAGE, json_dir: str | Path = JSON_DIR, readme: str | Path | None = README) -> list[Path]:
    """Write the scorecard page ``out`` (and README.md's summary block) from the JSON records in ``json_dir``."""
    records = load_published(json_dir)
    if not records:
        raise ValueError(f"{json_dir} holds no claim records (python docs/extract_claims.py writes them)")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(render_page(records), encoding="utf-8")
    written = [Path(out)]
    if readme:
        Path(readme).write_text(
            readme_with_block(Path(readme).read_text(encoding="utf-8"), render_readme_block(records)), encoding="utf-8"
        )
        written.append(Path(readme))
    return written
