"""CISPO (MiniMax-M1, arXiv:2506.13585; verl's ``cispo``, TRL's ``loss_type="cispo"``):
clip the importance weight, never the gradient."""

from __future__ import annotations

from .registry import register_policy_loss


@register_policy_loss(
    "cispo",
    options=lambda cfg: {"clip_low": cfg.clip_low, "clip_high": cfg.clip_high},
    trl="cispo",
    trl_agg="token-mean",
    trl_caps_ratio=True,
)
def cispo_token_loss(logp, old_logp, advantages, mask, clip_low: float | None = 0.2, clip_high: float | None = 0.2):
    """CISPO per token: ``l = -sg(clip(r, 1 - clip_low, 1 + clip_high)) * A * logp``. The clipped
    ratio is a constant weight on REINFORCE's ``-A * logp``, so every token keeps a
    gradient ``-w * A * grad logp`` (PPO's clip zeroes it once the ratio leaves the
    range). None = no bound on that side. At ratio 1 the gradient is REINFORCE's. The
    bounds follow verl's ``compute_policy_loss_cispo``; TRL's are another choice of
    ``clip_low``/``clip_high`` (docs/engines.md).

    logp, old_logp: (B, T) token log-probs now and at sampling time
    advantages:     (B, T) (or (B, 1), broadcast over tokens)
    mask:           (B, T)
    returns: (loss_mat (B, T), metrics) with ``clip_frac`` (share of valid tokens whose weight was
    clipped, either side, whatever the sign of A: verl's ``pg_clipfrac``; their gradient
    is kept), ``clip_frac_low`` (ratio below 1 - clip_low), ``clip_frac_high`` (above
    1 + clip_high; TRL's ``cispo_clip_ratio`` counts only those with A > 0),
    ``approx_kl``, ``ratio_mean``
    """
    from . import common

    mask, advantages, log_ratio, ratio = common.token_ratio(logp, old_logp, advantages, mask)
    lo, hi = common.clip_range(clip_low, clip_high)
    weight = ratio.clamp(lo, hi).detach()  # (B, T) sg(clip(r)): a weight, no gradient of its own
    loss_mat = -weight * advantages * logp  # (B, T)
    return loss_mat, common.policy_metrics(
        mask, log_ratio, ratio, clip_frac=ratio != weight, clip_frac_low=ratio < lo, clip_frac_high=ratio > hi
    )
