"""The algorithms, each a small diff of the previous one:
``reinforce.py -> ppo.py -> grpo.py -> dapo.py``. ``ALGORITHMS`` maps a name to a
class; its ``Config`` dataclass lists every hyperparameter with a docstring."""

from __future__ import annotations

from dataclasses import fields, replace

from .base import AlgoConfig, Algorithm
from .dapo import DAPO, DAPOConfig
from .grpo import GRPO, RLOO, DrGRPO, GRPOConfig
from .ppo import PPO, PPOConfig
from .reinforce import Reinforce, ReinforceConfig

ALGORITHMS: dict[str, type[Algorithm]] = {"reinforce": Reinforce, "ppo": PPO, "grpo": GRPO, "dapo": DAPO, "drgrpo": DrGRPO, "rloo": RLOO}


def get_algorithm(name: str) -> type[Algorithm]:
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


def make_config(name: str, **overrides) -> AlgoConfig:
    """The named algorithm's config with ``overrides`` applied (unknown keys are an error)."""
    cls = get_algorithm(name).Config
    known = {f.name for f in fields(cls)}
    bad = sorted(set(overrides) - known)
    if bad:
        raise ValueError(f"{name} has no option {', '.join(bad)}; its options are {', '.join(sorted(known))}")
    return replace(cls(), **overrides)
