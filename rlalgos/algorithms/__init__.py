"""The algorithms, each a small diff of the previous one:
``reinforce.py -> ppo.py -> grpo.py -> dapo.py`` (and ``grpo.py -> gspo.py``,
``reinforce.py -> ei.py``), on
the shared :class:`~rlalgos.algorithms.base.Algorithm`. Their hyperparameters
(one dataclass each, a docstring per field) and the one registry of names,
presets included (``drgrpo``, ``rloo``, ``dualclip``;
``clipcov``, ``klcov``, ``cispo``, ``sapo``: GRPO with another ``loss_mode``), are in
:mod:`rlalgos.config`; a name runs the class whose ``Config`` is its config
class (a preset runs its base algorithm's class).
"""

from __future__ import annotations

from ..config import ALGORITHMS, AlgoConfig, algorithm_config, make_config
from .base import Advantages, Algorithm
from .dapo import DAPO
from .ei import ExpertIteration
from .grpo import GRPO
from .gspo import GSPO
from .ppo import PPO, Clipped
from .reinforce import Reinforce

CLASSES: tuple[type[Algorithm], ...] = (Reinforce, PPO, GRPO, DAPO, GSPO, ExpertIteration)
"""The classes that run the registered algorithms, one per config class."""


def get_algorithm(name: str) -> type[Algorithm]:
    """The class that runs algorithm ``name`` (a one-line ``ValueError`` if there is none)."""
    config = algorithm_config(name).config
    return next(cls for cls in CLASSES if cls.Config is config)


__all__ = [
    "ALGORITHMS",
    "CLASSES",
    "AlgoConfig",
    "Advantages",
    "Algorithm",
    "Reinforce",
    "Clipped",
    "PPO",
    "GRPO",
    "DAPO",
    "GSPO",
    "ExpertIteration",
    "get_algorithm",
    "make_config",
]
