"""PPO's clipped surrogate (``loss_mode`` clip; verl's ``vanilla``), with the dual clip
and GSPO's sequence ratio as options. The loss REINFORCE (unclipped), PPO and GRPO train on."""

from __future__ import annotations

from .registry import register_policy_loss, require


def _check(cfg) -> None:
    require(cfg.clip_c == 0 or cfg.clip_c > 1, f"clip_c must be 0 (off) or > 1 (verl uses 3), got {cfg.clip_c}")
    require(
        cfg.clip_c == 0 or cfg.loss_mode == "clip",
        f"clip_c (the dual clip) works only with loss_mode clip, got loss_mode {cfg.loss_mode}; set clip_c 0",
    )


@register_policy_loss(
    "clip",
    options=lambda cfg: {"clip_low": cfg.clip_low, "clip_high": cfg.clip_high, "clip_c": cfg.clip_c or None},
    check=_check,
    ratio_levels=("token", "sequence"),
)
def clipped_token_loss(
    logp,
    old_logp,
    advantages,
    mask,
    clip_low: float | None = 0.2,
    clip_high: float | None = 0.2,
    clip_c: float | None = None,
    ratio_level: str = "token",
):
    """The (clipped) surrogate policy loss, per token.

    ``ratio = exp(logp - old_logp)``; per token
    ``l = max(-A * ratio, -A * clip(ratio, 1 - clip_low, 1 + clip_high))``.
    With ``clip_low = clip_high = None`` there is no clipping and
    ``l = -A * ratio``, whose gradient at ``old_logp = logp.detach()`` is
    REINFORCE's ``-A * grad log pi``.

    ``clip_c`` (dual-clip PPO, Ye et al. 2020; verl's ``clip_ratio_c``): where
    ``A < 0``, ``l = min(l, -A * clip_c)``, so a token whose ratio has run far up
    costs at most ``-A * clip_c`` (and gets no gradient). None = off.

    ``ratio_level="sequence"`` (GSPO, Zheng et al. 2025): every token of answer i
    takes its answer's :func:`~rlalgos.losses.common.sequence_ratio` ``s_i`` instead of its own ratio, so the
    clip keeps or drops whole answers. With ``seq-mean-token-mean`` the loss is then
    exactly GSPO's ``mean_i max(-A_i s_i, -A_i clip(s_i, ...))``, value and gradient
    (``d s_i / d logp_it = s_i / |y_i|``); this is TRL's form. verl's GSPO-token form
    (``sg[s_i] * pi_t / sg[pi_t]``) has the same value and gradient in every ``agg``
    (for a 0/1 or per-answer mask).

    logp, old_logp: (B, T) token log-probs now and at sampling time
    advantages:     (B, T) (or (B, 1), broadcast over tokens)
    mask:           (B, T)
    returns: (loss_mat (B, T), metrics) with ``clip_frac`` (share of valid tokens where the
    clipped term is the larger, i.e. the gradient is cut), ``clip_frac_low``
    (A < 0, ratio < 1 - clip_low), ``clip_frac_high`` (A > 0, ratio > 1 + clip_high),
    ``clip_frac_dual`` (A < 0 and ``-A * clip_c`` is the smaller: verl's
    ``pg_clipfrac_lower``), ``approx_kl`` (k3 estimate of KL(old || new) over valid
    tokens, always per token) and ``ratio_mean``; also :func:`~rlalgos.losses.common.rare_upper_clip`'s
    ``rare_pos_frac`` and ``clip_frac_high_rare``. With ``ratio_level="sequence"``
    the clip fractions count the tokens of clipped answers.
    """
    import torch

    from . import common

    mask, advantages, log_ratio, ratio = common.token_ratio(logp, old_logp, advantages, mask)
    if ratio_level == "sequence":
        ratio = common.sequence_ratio(logp, old_logp, mask).expand_as(logp)  # (B, T): s_i on every token of answer i
    elif ratio_level != "token":
        raise ValueError(f"unknown ratio_level {ratio_level!r}; use 'token' or 'sequence'")
    loss_mat, clipped_mask, low, high = common.clipped_surrogate(ratio, advantages, clip_low, clip_high)  # (B, T) each
    dual = torch.zeros_like(clipped_mask)
    if clip_c is not None:  # dual clip: a constant (no gradient) where it is the smaller
        bound = -advantages * clip_c  # (B, T)
        dual = (advantages < 0) & (bound < loss_mat)
        loss_mat = torch.where(dual, bound, loss_mat)
    metrics = common.policy_metrics(
        mask, log_ratio, ratio, clip_frac=clipped_mask, clip_frac_low=low, clip_frac_high=high, clip_frac_dual=dual
    )
    return loss_mat, {**metrics, **common.rare_upper_clip(old_logp, advantages, mask, high)}
