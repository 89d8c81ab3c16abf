"""What the claims of every notebook share: the papers they come from, and the claim fields of
each notebook's experiments (:mod:`rlalgos.workbook.experiments`), one comparison at a time."""

from __future__ import annotations

from typing import Mapping

from ....config import parse_algo_spec
from ...experiments import (
    NB04,
    NB04_ARMS,
    NB10_MM,
    NB10_MM_TRAIN,
    REGIMES,
    TRAP_OUT,
    TRAP_SEEDS,
    TRAP_SHARED,
    claim_fields,
    trap_arms,
)

DAPO = "DAPO (Yu et al. 2025, arXiv:2503.14476)"
GANDHI = "Gandhi et al. 2025, arXiv:2503.01307"
DRGRPO = "Dr. GRPO (Liu et al. 2025, arXiv:2503.20783)"
GRPO_PAPER = "DeepSeekMath GRPO (Shao et al. 2024, arXiv:2402.03300)"
CUI = "Cui et al. 2025, arXiv:2505.22617"
PPO_PAPER = "PPO (Schulman et al. 2017, arXiv:1707.06347)"
MISMATCH = "the rollout-trainer mismatch (Yao et al. 2025, fengyao.notion.site/off-policy-rl; Liu et al. 2025, richardli.xyz/rl-collapse)"
MECH = dict(
    notebook="04b_dapo_where_it_helps.ipynb", figure="notebooks/04b_dapo_where_it_helps.ipynb#cell-8"
)  # measured on the base model's rollouts (rlalgos.workbook.measures)
SPEED = "docs/speed.md"


def nb04(*arms: str, cell: int) -> dict:
    """Notebook 04's vanilla GRPO against ``arms``, its figure in ``cell``."""
    return {
        **NB04,
        "arms": {a: NB04_ARMS[a] for a in ("grpo", *arms)},
        "figure": f"notebooks/04b_dapo_where_it_helps.ipynb#cell-{cell}",
    }


NB09 = dict(
    notebook="09_exploration.ipynb",
    task=TRAP_SHARED["task"],
    model=TRAP_SHARED["model"],
    run_dir=f"{TRAP_OUT.as_posix()}/" + "{arm}_s{seed}",
    base="vanilla",
    shared={k: v for k, v in TRAP_SHARED.items() if k not in ("task", "model", "progress", "overwrite")},
    figure="notebooks/09_exploration.ipynb#cell-18",
    seeds=TRAP_SEEDS,
)


def nb09(*arms: str) -> dict:
    """Notebook 09's exploration sweep: vanilla GRPO against ``arms``."""
    return {**NB09, "arms": trap_arms("vanilla", *arms)}


def emergence(*labels: str) -> dict:
    """Notebook 12's and 13's runs (:data:`rlalgos.workbook.experiments.CLAIM_ARMS`): each arm trains from its own base model."""
    return claim_fields(*labels)


def mm(*arms: str, base: str = "fresh") -> dict:
    """Notebook 10's mismatch arms against ``base``: GRPO's defaults, each arm its own sampler and correction (TrainConfig settings)."""
    names = (base, *arms)
    return {
        **NB10_MM,
        "base": base,
        "arms": {a: ("grpo", {}) for a in names},
        "train": {a: NB10_MM_TRAIN[a] for a in names if NB10_MM_TRAIN[a]},
    }


def regime(name: str) -> dict:
    """The claim fields of :data:`rlalgos.workbook.experiments.REGIMES` ``[name]``: its arms as specs, its seeds, the benchmark's run folders."""
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
        **spec_arms(r["arms"]),
    )


def spec_arms(specs: Mapping[str, str]) -> dict:
    """``{label: "dapo:minibatches=4"}`` -> the claim's ``arms`` and ``folders`` (the benchmark names a folder by its spec)."""
    return {
        "arms": {label: parse_algo_spec(spec) for label, spec in specs.items()},
        "folders": {label: spec.replace(":", "-") for label, spec in specs.items()},
    }
