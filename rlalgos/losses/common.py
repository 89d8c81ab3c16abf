"""The maths every policy loss shares: masked sums and means, the three aggregations, the
clamped ratio, PPO's clip, the logged metrics. Pure functions of tensors; :mod:`rlalgos.core`
re-exports them (``core.masked_mean``, ``core.aggregate_loss`` ...).

Shapes: ``B`` answers, ``T`` completion tokens; ``mask`` (B, T), 1 on real completion
tokens, 0 on padding (or a per-answer weight).
"""

from __future__ import annotations

import math

import torch

from .registry import LOSS_AGG_MODES

LOG_RATIO_BOUND = 20.0
"""Log-ratios are clamped to +-this before ``exp`` (verl's ``SAFETY_BOUND``): one token cannot overflow a loss."""
K3_BOUND = 10.0
"""The k3 KL estimate is clamped to +-this (verl's ``kl_penalty``): one rare token cannot dominate the KL term."""


def masked_sum(x: torch.Tensor, mask: torch.Tensor, dim=None) -> torch.Tensor:
    """Sum of ``x`` where ``mask`` is 1. x, mask: (B, T)."""
    x = x * mask
    return x.sum() if dim is None else x.sum(dim)


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim=None) -> torch.Tensor:
    """Mean of ``x`` over positions where ``mask`` is 1 (0 if the mask is empty).

    x, mask: (B, T); returns a scalar, or (B,) with ``dim=-1``.
    """
    mask = mask.to(x.dtype)
    return masked_sum(x, mask, dim) / mask.sum(dim).clamp(min=1.0)


def aggregate_loss(
    loss_mat: torch.Tensor, mask: torch.Tensor, mode: str = "token-mean", max_len: int | None = None
) -> torch.Tensor:
    """Reduce a per-token loss matrix to a scalar.

    * ``token-mean``: ``sum(l*m) / sum(m)``: every token in the batch weighs the
      same (DAPO); long answers carry more weight than short ones.
    * ``seq-mean-token-mean``: mean over answers of ``sum_t(l*m) / n_i``: every
      answer weighs the same (GRPO); a token of a long answer counts less.
      ``n_i`` counts answer i's tokens, so a per-answer weight ``w_i`` in the mask
      makes its term ``w_i`` x its mean loss.
    * ``seq-mean-token-sum-norm``: ``sum(l*m) / (B * L_max)`` (Dr. GRPO): a
      constant normaliser, so no length bias either way. ``L_max`` defaults to T.

    loss_mat, mask: (B, T); returns a scalar
    """
    mask = mask.to(loss_mat.dtype)
    if mode == "token-mean":
        return masked_sum(loss_mat, mask) / mask.sum().clamp(min=1.0)
    if mode == "seq-mean-token-mean":
        # n_i counts the answer's tokens (mask > 0), so a per-answer weight in the mask
        # (dapo's downweight, the overlong filter) scales that answer's mean instead of cancelling out
        per_seq = masked_sum(loss_mat, mask, dim=-1) / (mask > 0).sum(-1).to(mask.dtype).clamp(min=1.0)  # (B,)
        return per_seq.mean()
    if mode == "seq-mean-token-sum-norm":
        L = loss_mat.shape[-1] if max_len is None else max_len
        return masked_sum(loss_mat, mask) / (loss_mat.shape[0] * L)
    raise ValueError(f"unknown loss aggregation {mode!r}; use one of {', '.join(LOSS_AGG_MODES)}")


def aggregate(
    loss_mat: torch.Tensor,
    mask: torch.Tensor,
    agg: str = "token-mean",
    max_len: int | None = None,
    is_weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """A per-token policy loss to the scalar the optimizer steps on: each token's loss times
    its rollout correction weight (:func:`rlalgos.core.rollout_correction_weights`; None = none), then
    :func:`aggregate_loss` over ``mask``. The one place the weights enter a policy loss;
    the denominators do not see them (a masked token still counts in a token-mean).

    loss_mat, mask, is_weights: (B, T); returns a scalar
    """
    return aggregate_loss(loss_mat if is_weights is None else loss_mat * is_weights, mask, agg, max_len)


def clamped_log_ratio(logp: torch.Tensor, old_logp: torch.Tensor) -> torch.Tensor:
    """Per-token ``log(pi / pi_old)``, clamped to +-:data:`LOG_RATIO_BOUND` as verl does. (B, T)"""
    return (logp - old_logp).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)


def token_ratio(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor):
    """What every policy loss starts from: ``(mask, advantages, log_ratio, ratio)``, the mask in
    ``logp``'s dtype, the advantages broadcast to (B, T), the clamped per-token log-ratio and
    its ``exp``. logp, old_logp, mask: (B, T); advantages: (B, T) or (B, 1); each returned (B, T)."""
    log_ratio = clamped_log_ratio(logp, old_logp)  # (B, T)
    return mask.to(logp.dtype), advantages.expand_as(logp), log_ratio, torch.exp(log_ratio)


def clip_range(clip_low: float | None, clip_high: float | None) -> tuple[float, float]:
    """The ratio's bounds ``(1 - clip_low, 1 + clip_high)``; None = no bound on that side."""
    lo = 1.0 - (clip_low if clip_low is not None else float("inf"))
    hi = 1.0 + (clip_high if clip_high is not None else float("inf"))
    return lo, hi


def clipped_surrogate(ratio: torch.Tensor, advantages: torch.Tensor, clip_low: float | None, clip_high: float | None):
    """PPO's per-token ``max(-A * ratio, -A * clip(ratio, 1 - clip_low, 1 + clip_high))``.

    ratio, advantages: (B, T)
    returns: (loss_mat, clipped, low, high), each (B, T): the loss, and where the clipped
    term is the larger (the token's gradient is cut), split by the sign of A
    """
    unclipped = -advantages * ratio  # (B, T)
    if clip_low is None and clip_high is None:
        clipped_mask = torch.zeros_like(ratio, dtype=torch.bool)
        return unclipped, clipped_mask, clipped_mask, clipped_mask
    lo, hi = clip_range(clip_low, clip_high)
    clipped = -advantages * ratio.clamp(lo, hi)  # (B, T)
    clipped_mask = clipped > unclipped
    low = clipped_mask & (advantages < 0)  # ratio fell below 1 - clip_low
    high = clipped_mask & (advantages > 0)  # ratio rose above 1 + clip_high
    return torch.maximum(unclipped, clipped), clipped_mask, low, high


def policy_metrics(
    mask: torch.Tensor, log_ratio: torch.Tensor, ratio: torch.Tensor, **means: torch.Tensor
) -> dict[str, float]:
    """What a policy loss logs: the masked mean of each (B, T) tensor in ``means`` (of a
    boolean one: its share of the valid tokens), then ``approx_kl`` (the k3 estimate of
    KL(old || new) from the per-token log-ratio) and ``ratio_mean``, in one
    device-to-host copy on a GPU. mask, log_ratio, ratio: (B, T)."""
    with torch.no_grad():
        values = torch.stack(
            [
                *(masked_mean(m.to(mask.dtype), mask) for m in means.values()),
                masked_mean(torch.exp(log_ratio) - 1 - log_ratio, mask),
                masked_mean(ratio, mask),
            ]
        ).tolist()
    return dict(zip([*means, "approx_kl", "ratio_mean"], values))


RARE_P = 0.1
"""A token is *rare* when its sampling probability was below this: the tokens clip-higher is for."""


def rare_upper_clip(
    old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, high: torch.Tensor
) -> dict[str, float]:
    """What the upper clip does to the tokens clip-higher exists for (DAPO, arXiv:2503.14476):
    ``rare_pos_frac``, the share of valid tokens that were rare (sampling probability below
    :data:`RARE_P`) and had a positive advantage, and ``clip_frac_high_rare``, the share of
    *those* whose ratio had passed ``1 + clip_high`` (their own gradient is cut).

    old_logp, advantages, mask, high: (B, T), ``high`` the boolean upper-clip mask."""
    with torch.no_grad():
        rare = (mask > 0) & (advantages.expand_as(old_logp) > 0) & (old_logp < math.log(RARE_P))  # (B, T)
        n = rare.sum()
        vals = torch.stack([n / (mask > 0).sum().clamp(min=1), (high & rare).sum() / n.clamp(min=1)]).tolist()
    return {"rare_pos_frac": vals[0], "clip_frac_high_rare": vals[1]}


def sequence_ratio(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """GSPO's importance ratio, one per answer: the length-normalised sequence likelihood ratio.

    ``s_i = (pi(y_i) / pi_old(y_i)) ** (1 / |y_i|) = exp(mean_t (logp_it - old_logp_it))``,
    the mean over the answer's valid tokens (``mask > 0``; per-token log-ratios
    clamped by :func:`clamped_log_ratio`). As in TRL's
    ``importance_sampling_level="sequence"`` and verl's ``loss_mode=gspo``.

    logp, old_logp, mask: (B, T); returns (B, 1)
    """
    valid = (mask > 0).to(logp.dtype)  # a per-answer loss weight does not change the mean
    log_ratio = clamped_log_ratio(logp, old_logp)  # (B, T)
    return torch.exp(masked_mean(log_ratio, valid, dim=-1)).unsqueeze(-1)  # (B, 1)


def token_covariance(logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each token's centred product of advantage and log-probability (Cui et al. 2025, arXiv:2505.22617).

    ``cov_t = (A_t - mean(A)) * (logp_t - mean(logp))``, the means over the valid
    tokens (weighted by ``mask``), exactly as verl's ``compute_policy_loss_clip_cov``
    writes it: the mean of ``logp`` is taken detached, so the gradient flows through
    ``logp_t`` alone. Its masked mean over the valid tokens is the covariance of
    log-probability and advantage; the entropy change of a policy-gradient step
    follows minus it (confident rewarded tokens lower the entropy, rare rewarded ones
    raise it). Clip-Cov and KL-Cov act on the tokens where it is largest.

    logp:       (B, T) token log-probs now
    advantages: (B, T) (or (B, 1), broadcast over tokens)
    mask:       (B, T)
    returns: (B, T); padding positions hold numbers too: read them through ``mask``
    (``masked_mean(token_covariance(...), mask)`` is the covariance)
    """
    advantages = advantages.expand_as(logp)
    return (advantages - masked_mean(advantages, mask)) * (logp - masked_mean(logp.detach(), mask))  # (B, T)
