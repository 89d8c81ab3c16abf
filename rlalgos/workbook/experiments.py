"""Every experiment the course runs, defined once: its arms, its seeds, its regime.

An *arm* is ``label -> (algorithm, its config options)``; a *regime* is the TrainConfig
settings every arm of a comparison shares. The notebooks, the claims registry
(:mod:`rlalgos.workbook.claims`), the benchmarks and the tests import them from here, and
every run is built by one function, :func:`run_config`, so a notebook's runs and the runs
``rlalgos claims run`` trains are the same runs by construction.

* vanilla GRPO's settings: :data:`GRPO_SWITCHES` (DAPO's four switches set back to vanilla
  GRPO's values) and :data:`VANILLA_GRPO` (with GRPO's KL coefficient);
* notebooks 04, 06, 07, 08 and 10: ``NB04`` ... ``NB10_MM`` (the regime and the run folders)
  and their arms;
* notebook 09's exploration sweep: :data:`TRAP_SHARED`, :data:`TRAP_GRPO`, :data:`TRAP_ARMS`,
  :data:`TRAP_ABLATION_ARMS` and :func:`trap_run` (``benchmarks/exploration.py`` trains them);
* notebooks 12 and 13 (where reasoning comes from): :data:`EMERGENCE_REGIME`, the shares, the
  rungs, :func:`model_cfg` and :func:`emergence_run` (``benchmarks/emergence.py`` trains them);
* ``benchmarks/regimes.py``: :data:`REGIMES`.

Nothing here trains or reads a file: building a base model or a run is
:mod:`rlalgos.workbook.emergence`'s and :mod:`rlalgos.tools.sweep`'s.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

from ..config import REWARD_MODEL_DIR, TRAP_MODEL_DIR, TrainConfig, make_config
from .configs import EmergenceConfig

# --------------------------------------------------------------------------- #
# One run, and the runs of a comparison
# --------------------------------------------------------------------------- #


def run_config(algo: str, seed: int, out_dir: str | Path, options: Mapping | None = None, **train):
    """(TrainConfig, algorithm config) of one run: ``algo`` with ``options``, trained with the
    TrainConfig settings ``train`` at ``seed`` into ``out_dir``. Every run of the course is built here."""
    return TrainConfig(algo=algo, seed=seed, out_dir=str(out_dir), **train), make_config(algo, **(options or {}))


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
    """
    train, folders = train or {}, folders or {}
    shared = {"progress": False, "overwrite": True, **shared}
    return [
        (
            arm,
            s,
            *run_config(
                algo, s, out_dir.format(arm=folders.get(arm, arm), seed=s), options, **{**shared, **train.get(arm, {})}
            ),
        )
        for arm, (algo, options) in arms.items()
        for s in seeds
    ]


def spec(algo: str, **options) -> str:
    """An algorithm spec string, ``spec("dapo", minibatches=4)`` -> ``"dapo:minibatches=4"`` (options in the order given)."""
    return algo + "".join(f":{k}={v}" for k, v in options.items())


# --------------------------------------------------------------------------- #
# Vanilla GRPO
# --------------------------------------------------------------------------- #

GRPO_SWITCHES = dict(clip_high=0.2, loss_agg="seq-mean-token-mean", dynamic_sampling="off", overlong_penalty=False)
"""DAPO's four switches (clip-higher, token-level loss, dynamic sampling, overlong shaping) set to vanilla GRPO's values."""
VANILLA_GRPO = {**GRPO_SWITCHES, "kl_coef": 0.04}
"""The DAPO class with these options is vanilla GRPO (its KL term included): add one switch back to study it alone."""


def vanilla_with(**switch) -> dict:
    """The DAPO class's options with every switch at vanilla GRPO's value except ``switch``: one trick alone (notebook 04's ``only``)."""
    return {**VANILLA_GRPO, **switch}


# --------------------------------------------------------------------------- #
# Notebooks 04, 06, 07, 08 and 10
# --------------------------------------------------------------------------- #

NB04 = dict(
    notebook="04b_dapo_where_it_helps.ipynb",
    task="addition:terms=2-6",
    run_dir="runs/nb04/{arm}/seed{seed}",
    base="grpo",
    shared=dict(steps=40, prompts_per_step=16, group_size=8, eval_prompts=100, eval_samples=4, eval_every=10),
    figure="",
)
NB04_ARMS = {
    "grpo": ("grpo", {"minibatches": 4}),
    "dynamic_sampling": ("dapo", vanilla_with(dynamic_sampling="resample", minibatches=4)),
    "clip_higher": ("dapo", vanilla_with(clip_high=0.28, minibatches=4)),
    "token_mean": ("dapo", vanilla_with(loss_agg="token-mean", minibatches=4)),
    "overlong": ("dapo", vanilla_with(overlong_penalty=True, minibatches=4)),
    "kl_off": ("dapo", vanilla_with(kl_coef=0.0, minibatches=4)),
    "kl_0.4": ("grpo", {"kl_coef": 0.4, "minibatches": 4}),
    "dapo": ("dapo", {"minibatches": 4}),
}
"""Notebook 04's ablation: vanilla GRPO, each trick alone, two KL strengths, and DAPO."""

NB06 = dict(
    notebook="06_troubleshooting.ipynb",
    task="addition",
    run_dir="runs/nb06/{arm}/seed{seed}",
    base="baseline",
    shared=dict(steps=30, prompts_per_step=16, group_size=8, eval_prompts=100, eval_samples=4, eval_every=5),
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
        eval_every=5,
        eval_prompts=200,
        eval_samples=4,
        reward_model=str(REWARD_MODEL_DIR),
    ),
    arms={
        "rmonly": ("grpo", {"kl_coef": 0.0, "lr": 3e-4}),
        "rm_KL": ("grpo", {"kl_coef": 0.2, "lr": 3e-4}),
        "rm_rule": ("grpo", {"kl_coef": 0.0, "lr": 3e-4}),
        "rule_only": ("grpo", {"kl_coef": 0.0, "lr": 3e-4}),
    },
    train={
        "rmonly": {"rule_weight": 0.0},
        "rm_KL": {"rule_weight": 0.0},
        "rm_rule": {"rule_weight": 1.0, "rm_weight": 0.5},
        "rule_only": {"rule_weight": 1.0, "rm_weight": 0.0},  # the control; the reward model still scores, at weight 0
    },  # which reward each trains on
    names={"rmonly": "rm only", "rm_KL": "rm + KL", "rm_rule": "rm + rule", "rule_only": "rule only"},
)
"""Notebook 07's runs: three on the learned reward model and the rule alone at the same learning rate (its arms, the
reward each trains on, the notebook's labels)."""
NB08 = dict(
    notebook="08_after_dapo.ipynb",
    task="addition",
    run_dir="runs/nb08/{arm}/seed{seed}",
    base="grpo",
    shared=dict(steps=40, prompts_per_step=16, group_size=8, eval_prompts=100, eval_samples=4, eval_every=5),
    figure="",
)
_PUSH = dict(lr=3e-4, epochs=2, minibatches=8)  # notebook 08's push settings, which notebook 10 reuses on 2-6-term sums
NB08_ARMS = {  # notebook 08's runs: the main comparison, and the off-policy push for the dual clip
    **{name: (name, {"minibatches": 4}) for name in ("grpo", "gspo", "drgrpo", "rloo")},
    "grpo_push": ("grpo", dict(_PUSH)),
    "dualclip_push": ("dualclip", dict(_PUSH)),
}
NB08_TRAIN = {
    arm: {"steps": 15, "eval_every": 0} for arm in ("grpo_push", "dualclip_push")
}  # the push: shorter, evaluated before and after only
NB10 = dict(
    notebook="10_engines.ipynb",
    task="addition:terms=2-6",
    run_dir="runs/nb10/{arm}_push/seed{seed}",
    base="grpo",
    figure="notebooks/10_engines.ipynb#cell-9",
    shared=dict(
        steps=15,
        prompts_per_step=16,
        group_size=8,
        eval_prompts=100,
        eval_samples=4,
        eval_every=0,
        save_every=0,
        stop_on_collapse=False,  # CISPO collapses under the push: that is the result, so the doctor must not stop it
    ),
)
NB10_ARMS = {name: (name, dict(_PUSH)) for name in ("grpo", "cispo", "sapo")}
NB10_MM = dict(
    notebook="10_engines.ipynb",
    task="addition",
    run_dir="runs/nb10/mismatch/{arm}/seed{seed}",
    base="fresh",
    figure="notebooks/10_engines.ipynb#cell-20",
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
"""Notebook 10's mismatch arms: GRPO's defaults, each arm its own sampler and correction (TrainConfig settings)."""

# --------------------------------------------------------------------------- #
# Notebook 09: the exploration sweep
# --------------------------------------------------------------------------- #

TRAP_OUT = Path("runs/exploration")  # where the sweep writes its run folders
TRAP_SHARED = dict(
    task="trap",
    model=str(TRAP_MODEL_DIR),
    prompts_per_step=16,
    group_size=8,
    steps=30,
    eval_every=10,
    eval_prompts=200,
    eval_samples=4,
    entropy_probe=True,
    stop_on_collapse=False,  # vanilla's collapse is what the sweep measures, so the doctor must not stop it
    progress=False,
    save_every=0,
    overwrite=True,
)
TRAP_GRPO = dict(lr=1e-4, minibatches=8, kl_coef=0.0)
"""Vanilla GRPO as notebook 09 runs it (8 optimizer steps per rollout, no KL); notebooks 12 and 13 run it too."""
TRAP_ARMS = {
    "vanilla": ("grpo", {}),
    "clip_higher": ("grpo", {"clip_high": 0.28}),
    "clip_cov": ("grpo", {"loss_mode": "clip_cov"}),
    "kl_cov": ("grpo", {"loss_mode": "kl_cov"}),
    "entropy_bonus": (
        "dapo",
        {**GRPO_SWITCHES, "entropy_threshold": 1e9, "entropy_action": "bonus", "entropy_coef": 0.01},
    ),
    "temperature": ("dapo", {**GRPO_SWITCHES, "entropy_threshold": 0.3, "entropy_action": "temperature"}),
    "kl": ("grpo", {"kl_coef": 0.04}),
    "dapo": ("dapo", {}),  # improved GRPO with all its defaults, for the pass@k curves (read after the first seven)
}
"""The sweep's arms, each what it changes on :data:`TRAP_GRPO` (see :mod:`rlalgos.workbook.exploration`)."""
TRAP_SEEDS = (0, 1, 2, 3, 4, 5)
"""Notebook 09's seeds, every arm on every one, paired by seed (fixed before the sweep ran)."""
TRAP_PASSK_SEEDS = (0, 1, 2)
"""The seeds whose models notebook 09b samples 256 times per prompt for pass@k, and its ablations' seeds."""
TRAP_MATCHED_PROMPTS = 36
"""Prompts per step of vanilla with DAPO's sample count: DAPO drew 35.9 groups per step in an earlier sweep."""
TRAP_ABLATION_ARMS = {  # which of DAPO's switches carries its gain, and is it the extra samples
    "dynamic_only": ("dapo", {**GRPO_SWITCHES, "dynamic_sampling": "resample"}),
    "dapo_no_dynamic": ("dapo", {"dynamic_sampling": "off"}),
    "vanilla_36_prompts": ("grpo", {}),
}
TRAP_ARM_TRAIN = {"vanilla_36_prompts": {"prompts_per_step": TRAP_MATCHED_PROMPTS}}
"""TrainConfig settings of one arm alone: vanilla given as many sampled answers per step as DAPO draws."""


def trap_arms(*labels: str) -> dict[str, tuple[str, dict]]:
    """The sweep's arms (every one without ``labels``) as (algorithm, full options): :data:`TRAP_GRPO` and the arm's change."""
    every = {**TRAP_ARMS, **TRAP_ABLATION_ARMS}
    return {a: (every[a][0], {**TRAP_GRPO, **every[a][1]}) for a in labels or every}


def trap_run(arm: str, seed: int, out: Path = TRAP_OUT, lr: float = TRAP_GRPO["lr"], **overrides):
    """(TrainConfig, algorithm config) of one arm of the sweep at one seed, in ``out/<arm>_s<seed>``."""
    algo, options = trap_arms(arm)[arm]
    train = {**TRAP_SHARED, **TRAP_ARM_TRAIN.get(arm, {}), **overrides}
    return run_config(algo, seed, Path(out) / f"{arm}_s{seed}", {**options, "lr": lr}, **train)


# --------------------------------------------------------------------------- #
# Notebooks 12 and 13: where reasoning comes from (fixed before any run)
# --------------------------------------------------------------------------- #

EMERGENCE_OUT = Path("runs/emergence")
EMERGENCE_SEEDS = (0, 1, 2)
CURVE_SHARE = 0.03  # the R1-Zero curve starts from this share
SHARES = (0.3, 0.1, 0.03, 0.01, 0.003)  # how rare can it be: at G = 8
GROUP_SIZES = (4, 8, 16)  # and at G = 4 and 16, from 0.01
G_SHARES = (0.01,)
LIMIT_SHARE = 0.1  # the incompetent and primed models start at this share
LIMITS = ("rare", "incompetent", "primed", "primed_wrong", "absent")
# TRAP_GRPO for 40 steps; every evaluation on the same 100 test prompts x 4 samples; the doctor's
# stop off (a takeover lowers the entropy fast, which is the point here, not a collapse)
EMERGENCE_REGIME = dict(
    prompts_per_step=16,
    group_size=8,
    steps=40,
    eval_every=5,
    eval_prompts=100,
    eval_samples=4,
    save_every=0,
    progress=False,
    overwrite=True,
    stop_on_collapse=False,
)
# the rungs at equal prompts, answers and steps: DAPO without dynamic sampling, so it draws no extra answers
RUNGS = {
    "ei": ("ei", {}),
    "reinforce": ("reinforce", {}),
    "grpo": ("grpo", {}),
    "dapo": ("dapo", {"dynamic_sampling": "off"}),
}


def fast_mode() -> bool:
    """The notebooks' fast mode (``RLALGOS_FAST=1``, their CI smoke test)."""
    return os.environ.get("RLALGOS_FAST") == "1"


def model_cfg(kind: str, share: float | None = None, fast: bool | None = None) -> EmergenceConfig:
    """The base model of one experiment. In fast mode (``fast=None``: :func:`fast_mode`) a stand-in
    that takes seconds to make: every target share 0.6 at lr 1e-3, two steps of wrong sums and of priming,
    in ``runs/emergence_fast/models``; its numbers mean nothing."""
    if share is None:
        share = CURVE_SHARE if kind == "rare" else LIMIT_SHARE
    if fast if fast is not None else fast_mode():
        name = EmergenceConfig(kind=kind, share=share).folder().name
        return EmergenceConfig(
            kind=kind,
            share=0.6,
            absent_share=0.6,
            lr=1e-3,  # a step or two to the target
            corrupt_steps=2,
            prime_steps=2,
            progress=False,
            out_dir=f"runs/emergence_fast/models/{name}",
        )
    return EmergenceConfig(kind=kind, share=share, progress=False)


def emergence_run(
    name: str,
    model_dir,
    algo: str = "grpo",
    seed: int = 0,
    out: Path = EMERGENCE_OUT,
    algo_over: Mapping | None = None,
    **over,
):
    """(TrainConfig, algorithm config) of one run from the base model in ``model_dir`` (None: the shipped one):
    :data:`EMERGENCE_REGIME` with ``over`` changed, ``algo`` with :data:`TRAP_GRPO` and ``algo_over``."""
    return run_config(
        algo,
        seed,
        Path(out) / f"{name}_s{seed}",
        {**TRAP_GRPO, **(algo_over or {})},
        model=str(model_dir) if model_dir else "",
        **{**EMERGENCE_REGIME, **over},
    )


def grid_name(share: float, G: int) -> str:
    return f"grpo_rare{share:g}_g{G}"


CLAIM_ARMS = {  # label -> (run folder, base model (kind, share), algorithm, TrainConfig settings of that arm)
    "rare0.1": (grid_name(0.1, 8), ("rare", 0.1), "grpo", {}),
    "rare0.01": (grid_name(0.01, 8), ("rare", 0.01), "grpo", {}),
    "incompetent": ("grpo_incompetent", ("incompetent", LIMIT_SHARE), "grpo", {}),
    "absent": ("grpo_absent", ("absent", LIMIT_SHARE), "grpo", {}),
    "primed": ("grpo_primed", ("primed", LIMIT_SHARE), "grpo", {}),
    "primed_wrong": ("grpo_primed_wrong", ("primed_wrong", LIMIT_SHARE), "grpo", {}),
    "grpo": (grid_name(CURVE_SHARE, 8), ("rare", CURVE_SHARE), "grpo", {"eval_every": 2}),
    "ei": ("ei_rare", ("rare", CURVE_SHARE), "ei", {}),
    "grpo_default": ("grpo_default", None, "grpo", {}),
    "ei_default": ("ei_default", None, "ei", {}),
}
"""The runs of notebooks 12 and 13 that the claims compare (the same folders as the notebooks')."""


def claim_fields(*labels: str) -> dict:
    """The :class:`rlalgos.workbook.claims.Claim` fields of a comparison between ``labels``:
    arms, per-arm settings (each its base model), folders, the shared regime and the models to build first."""
    shared = {k: v for k, v in EMERGENCE_REGIME.items() if k not in ("progress", "overwrite")}
    arms, train, folders, prepare = {}, {}, {}, []
    for label in labels:
        folder, model, algo, over = CLAIM_ARMS[label]
        arms[label] = (algo, {**TRAP_GRPO, **dict(RUNGS.get(algo, (algo, {}))[1])})
        train[label] = {"model": str(model_cfg(*model, fast=False).folder()) if model else "", **over}
        folders[label] = folder
        if model:
            prepare.append(model)
    return dict(
        notebook="12_where_reasoning_comes_from.ipynb",
        task="addition",
        run_dir=str(EMERGENCE_OUT / "{arm}_s{seed}"),
        shared=shared,
        arms=arms,
        train=train,
        folders=folders,
        prepare=tuple(prepare),
    )


# --------------------------------------------------------------------------- #
# benchmarks/regimes.py: one failure of vanilla GRPO made present in each
# --------------------------------------------------------------------------- #

_PUSH_2E4 = dict(lr="2e-4", minibatches=4)  # spelled as the benchmark's folder names spell it
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
            "grpo": spec("grpo", lr="2e-4", kl_coef=0, minibatches=4),
            "clip_higher": spec("dapo", **_PUSH_2E4, **vanilla_with(clip_high=0.28, kl_coef=0)),
            "dynamic_sampling": spec("dapo", **_PUSH_2E4, **vanilla_with(dynamic_sampling="resample", kl_coef=0)),
            "token_mean": spec("dapo", **_PUSH_2E4, **vanilla_with(loss_agg="token-mean", kl_coef=0)),
            "dapo": spec("dapo", **_PUSH_2E4),
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
            "overlong_filter": spec("dapo", **VANILLA_GRPO, overlong_filter=True, minibatches=4),
            "dapo": "dapo:minibatches=4:overlong_filter=True",
        },
    ),
}
"""The regimes of ``benchmarks/regimes.py``: a task setting where one failure of vanilla GRPO is
present, its arms as algorithm specs, its seeds and extra metrics."""
