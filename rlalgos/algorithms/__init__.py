"""The algorithms, each a small diff of the previous one:
``reinforce.py -> ppo.py -> grpo.py -> dapo.py`` (and ``grpo.py -> gspo.py``), on
the shared update loop in ``base.py``. Their hyperparameters (one dataclass each,
a docstring per field) and the registry of names, presets included (``drgrpo``,
``rloo``, ``dualclip``), are in :mod:`rlalgos.config`."""

from __future__ import annotations

from ..config import ALGORITHMS, AlgoConfig, make_config
from .base import Advantages, Algorithm
from .dapo import DAPO
from .grpo import GRPO
from .gspo import GSPO
from .ppo import PPO
from .reinforce import Reinforce

CLASSES: dict[str, type[Algorithm]] = {"reinforce": Reinforce, "ppo": PPO, "grpo": GRPO, "dapo": DAPO, "drgrpo": GRPO, "rloo": Reinforce,
                                   "dualclip": GRPO, "gspo": GSPO}
"""name -> the class that runs it (presets share their base algorithm's class)."""
assert CLASSES.keys() == ALGORITHMS.keys()


def get_algorithm(name: str) -> type[Algorithm]:
    """The class that runs algorithm ``name`` (a one-line ``ValueError`` if there is none)."""
    from ..config import algorithm_config

    algorithm_config(name)
    return CLASSES[name]


__all__ = ["ALGORITHMS", "CLASSES", "AlgoConfig", "Advantages", "Algorithm", "Reinforce", "PPO", "GRPO", "DAPO", "GSPO", "get_algorithm", "make_config"]
