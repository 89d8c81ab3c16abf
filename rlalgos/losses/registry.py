"""The registry of policy losses (``loss_mode``): what a loss module declares about itself,
and the decorator that registers it. Imports neither torch nor transformers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

LOSS_AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")
"""How a per-token loss becomes a scalar (``loss_agg``; verl's ``loss_agg_mode``): :func:`rlalgos.losses.common.aggregate_loss`."""
TRL_ENTROPY_OPTIONS = "epsilon_high, top_entropy_quantile"
"""TRL's nearest options to the covariance losses (a wider upper clip; training on the highest-entropy tokens only)."""


def require(ok: bool, message: str) -> None:
    """A one-line ``ValueError`` with ``message`` unless ``ok``."""
    if not ok:
        raise ValueError(message)


@dataclass(frozen=True)
class PolicyLoss:
    """A registered policy loss: its maths and everything the config and the export need to know about it."""

    name: str
    """The ``loss_mode`` value."""
    token_loss: Callable[..., tuple[Any, dict]]
    """The maths: ``(logp, old_logp, advantages, mask, **options) -> (loss_mat (B, T), metrics)``."""
    options: Callable[[Any], dict]
    """The config (a ``ClippedConfig``) -> ``token_loss``'s keyword arguments."""
    check: Callable[[Any], None]
    """Raises a one-line ``ValueError`` for a bad value of its fields; called on every clipped config."""
    title: str = ""
    """Its name in prose (``Clip-Cov``); empty = ``name``."""
    params: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Config fields it alone reads -> (TRL's field, '' = none; verl's key under ``actor_rollout_ref.actor.``)."""
    ratio_levels: tuple[str, ...] = ("token",)
    """The ratios it can take: ``sequence`` = one per answer (GSPO) too."""
    verl_agg: str = ""
    """The aggregation verl's loss always uses; '' = the run's loss_agg."""
    verl_note: str = ""
    """How verl's loss differs from this one, for the export's notes; '' = it does not."""
    trl: str = ""
    """TRL's ``loss_type`` of the same loss; '' = TRL has none."""
    trl_agg: str = ""
    """The aggregation TRL's ``loss_type`` always uses."""
    trl_caps_ratio: bool = False
    """TRL's ``loss_type`` bounds the ratio at ``epsilon_high`` itself, with no lower bound."""
    trl_missing: str = ""
    """Without a TRL ``loss_type``: what a TRL export trains with instead ('' = the clipped loss is this loss)."""
    trl_nearest: str = ""
    """Without a TRL ``loss_type``: TRL's nearest options, for the mapping table."""

    @property
    def verl(self) -> str:
        """verl's ``policy_loss.loss_mode`` (the clipped loss is verl's ``vanilla``)."""
        return "vanilla" if self.name == "clip" else self.name


POLICY_LOSSES: dict[str, PolicyLoss] = {}
"""loss_mode -> :class:`PolicyLoss`, in the order the modules register."""


def register_policy_loss(
    name: str,
    *,
    options: Callable[[Any], dict] = lambda cfg: {},
    check: Callable[[Any], None] = lambda cfg: None,
    **spec,
):
    """Decorator: register ``token_loss`` as loss mode ``name`` (the other arguments: :class:`PolicyLoss`'s fields)."""

    def register(token_loss: Callable) -> Callable:
        require(name not in POLICY_LOSSES, f"loss_mode {name!r} is registered twice; give the new loss another name")
        POLICY_LOSSES[name] = PolicyLoss(name, token_loss, options, check, **spec)
        return token_loss

    return register


def get_policy_loss(name: str) -> PolicyLoss:
    """The loss registered as ``name`` (a one-line ``ValueError`` if there is none)."""
    require(name in POLICY_LOSSES, f"unknown loss_mode {name!r}; use one of {', '.join(POLICY_LOSSES)}")
    return POLICY_LOSSES[name]
