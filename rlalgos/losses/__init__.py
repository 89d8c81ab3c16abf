"""The policy losses, one module each, registered by name as verl registers its own
(``register_policy_loss`` in ``verl/trainer/ppo/core_algos.py``).

A module holds everything about its loss: the maths (a pure function of tensors
returning the per-token loss), the config fields it reads, their checks, and what
TRL and verl call it. ``loss_mode`` names one; the clipped algorithms dispatch
through :data:`POLICY_LOSSES`, and the config's choices, its validation and the
export's tables read it. A new loss is one module here (imported at the end of this
file) plus its test.

The contract of a registered function::

    token_loss(logp, old_logp, advantages, mask, **options) -> (loss_mat, metrics)

``logp``, ``old_logp``, ``mask``: (B, T); ``advantages``: (B, T) or (B, 1);
``loss_mat``: (B, T), each token's loss before aggregation; ``metrics``: floats.
The caller turns ``loss_mat`` into the scalar with :func:`rlalgos.losses.common.aggregate`, the one place
where the rollout correction's weights multiply each token's loss, so no loss can
leave them out.

This package imports neither torch nor transformers at import time (the config and
the CLI read the registry before torch is loaded): each loss imports the shared maths
(:mod:`rlalgos.losses.common`, and torch with it) when it is called.
"""

from .registry import LOSS_AGG_MODES, POLICY_LOSSES, PolicyLoss, get_policy_loss, register_policy_loss

# the built-in losses, registered in this order (the order of the choices and of the export's rows)
from . import clip, clip_cov, kl_cov, cispo, sapo, gpg  # noqa: E402, F401, I001

__all__ = ["LOSS_AGG_MODES", "POLICY_LOSSES", "PolicyLoss", "get_policy_loss", "register_policy_loss"]
