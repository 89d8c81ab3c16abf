"""The maths every algorithm shares: pure functions of tensors.

No model, no I/O, no global state. Shapes follow one convention:

* ``B`` answers (completions) in the batch, ``T`` completion tokens, ``V`` vocabulary.
* ``mask`` is a float (or bool) tensor of shape ``(B, T)``: 1 on real completion
  tokens (up to and including EOS), 0 on padding.
* Losses return ``(loss, metrics)`` where ``loss`` is a scalar tensor and
  ``metrics`` a dict of Python floats, in the style of verl's ``core_algos.py``.

Each function's docstring names the formula it follows (verl's ``verl/trainer/ppo/core_algos.py``,
TRL's ``GRPOTrainer``); docs/engines.md says where the engines differ. The policy losses, verl's
``policy_loss.loss_mode`` and TRL's ``loss_type``, are the modules of :mod:`rlalgos.losses` (their shared
maths in :mod:`rlalgos.losses.common`, re-exported here); the ``*_loss`` functions below add the aggregation.
"""

from __future__ import annotations

import torch

from .config import GRPO_KL_ESTIMATORS, LOSS_AGG_MODES  # noqa: F401 (core.LOSS_AGG_MODES: the notebooks read it here)
from .losses import cispo, clip, clip_cov, kl_cov, sapo

# the shared maths of the losses, re-exported: core.X is the name the notebooks and tests use
from .losses.common import (
    K3_BOUND,
    LOG_RATIO_BOUND,
    RARE_P,  # noqa: F401
    aggregate,  # noqa: F401
    aggregate_loss,  # noqa: F401
    clip_range,  # noqa: F401
    clipped_surrogate,  # noqa: F401
    masked_mean,  # noqa: F401
    masked_sum,  # noqa: F401
    policy_metrics,  # noqa: F401
    rare_upper_clip,  # noqa: F401
    sequence_ratio,  # noqa: F401
    token_covariance,  # noqa: F401
    token_ratio,  # noqa: F401
)

# --------------------------------------------------------------------------- #
# Log-probabilities and entropy
# --------------------------------------------------------------------------- #


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Log-probability of each chosen token under ``softmax(logits / temperature)``.

    Computed as ``logit[token] - logsumexp(logits)``, so no full-vocabulary
    ``log_softmax`` copy of shape ``(B, T, V)`` is made.

    logits: (B, T, V) next-token logits aligned with ``tokens``
    tokens: (B, T) token ids
    returns: (B, T)
    """
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    picked = torch.gather(logits, -1, tokens.unsqueeze(-1)).squeeze(-1)  # (B, T)
    return picked - torch.logsumexp(logits, dim=-1)  # (B, T)


def entropy_from_logits(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Entropy of the full next-token distribution at every position.

    ``H = logsumexp(z) - sum_v softmax(z)_v * z_v`` with ``z = logits / temperature``.

    logits: (B, T, V)
    returns: (B, T)
    """
    z = logits.float()
    if temperature != 1.0:
        z = z / temperature
    p = torch.softmax(z, dim=-1)  # (B, T, V)
    return torch.logsumexp(z, dim=-1) - (p * z).sum(-1)  # (B, T)


# --------------------------------------------------------------------------- #
# Masked reductions (masked_sum and masked_mean: rlalgos.losses.common)
# --------------------------------------------------------------------------- #


def masked_var(x: torch.Tensor, mask: torch.Tensor, unbiased: bool = True) -> torch.Tensor:
    """Variance of the masked entries of ``x`` (scalar). x, mask: (B, T)."""
    mask = mask.to(x.dtype)
    mean = masked_mean(x, mask)
    n = mask.sum()
    var = masked_sum((x - mean) ** 2, mask) / n.clamp(min=1.0)
    if unbiased and n > 1:
        var = var * n / (n - 1)
    return var


def masked_whiten(
    x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True, eps: float = 1e-8, moments=None
) -> torch.Tensor:
    """Normalise the masked entries of ``x`` to zero mean, unit variance (PPO's advantage whitening).

    ``moments``: ``(mean, var)`` to use instead of the masked entries' own (the whole
    batch's, over several processes: :func:`rlalgos.engine.batch.whiten`).
    x, mask: (B, T); returns (B, T) with padding positions left as they come out
    (multiply by the mask downstream).
    """
    mean, var = moments if moments is not None else (masked_mean(x, mask), masked_var(x, mask))
    out = (x - mean) * torch.rsqrt(var + eps)
    return out if shift_mean else out + mean


# --------------------------------------------------------------------------- #
# Advantages
# --------------------------------------------------------------------------- #


def group_advantages(rewards: torch.Tensor, group_size: int, scale: str = "std", eps: float = 1e-6) -> torch.Tensor:
    """GRPO's group-relative advantage, one number per answer.

    ``A_i = (r_i - mean_group) / (std_group + eps)`` with the unbiased (N-1) std and
    eps outside the square root, as in verl (eps 1e-6) and TRL (eps 1e-4).
    ``scale="none"`` is Dr. GRPO: mean-centred only.

    rewards: (B,) ordered so that each run of ``group_size`` answers shares a prompt
    returns: (B,)
    """
    if rewards.numel() % group_size:
        raise ValueError(
            f"{rewards.numel()} rewards do not split into groups of {group_size}; pass B = prompts x group_size"
        )
    r = rewards.float().view(-1, group_size)  # (P, G)
    centred = r - r.mean(dim=1, keepdim=True)  # (P, G)
    if scale == "std":
        std = r.std(dim=1, keepdim=True, unbiased=True) if group_size > 1 else torch.zeros_like(r[:, :1])
        centred = centred / (std + eps)
    elif scale != "none":
        raise ValueError(f"unknown advantage scale {scale!r}; use 'std' or 'none'")
    return centred.view(-1)


def leave_one_out_baseline(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Mean reward of the *other* answers in the same group (RLOO's baseline).

    rewards: (B,) grouped as in :func:`group_advantages`; returns (B,).
    """
    if group_size < 2:
        raise ValueError("a leave-one-out baseline needs group_size >= 2")
    r = rewards.float().view(-1, group_size)  # (P, G)
    return ((r.sum(dim=1, keepdim=True) - r) / (group_size - 1)).view(-1)


def baseline(
    rewards: torch.Tensor, group_size: int, kind: str = "leave_one_out", batch_mean: float | None = None
) -> torch.Tensor:
    """REINFORCE's baseline b, one number per answer (the advantage is ``r - b``).

    ``none``: 0; ``batch_mean``: the mean reward of the batch; ``leave_one_out``:
    the mean reward of the other answers to the same prompt (RLOO).

    ``batch_mean``: that number instead of ``rewards``' own mean (the whole batch's,
    over several processes: :func:`rlalgos.engine.batch.baseline`).

    rewards: (B,) grouped as in :func:`group_advantages`; returns (B,).
    """
    if kind == "none":
        return torch.zeros_like(rewards)
    if kind == "batch_mean":
        return rewards.mean().expand_as(rewards) if batch_mean is None else torch.full_like(rewards, batch_mean)
    if kind == "leave_one_out":
        return leave_one_out_baseline(rewards, group_size)
    raise ValueError(f"unknown baseline {kind!r}; use none, batch_mean or leave_one_out")


def gae(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float = 1.0, lam: float = 0.95):
    """Generalised advantage estimation over completion tokens.

    ``delta_t = r_t + gamma * V_{t+1} - V_t``; ``A_t = delta_t + gamma * lam * A_{t+1}``,
    with ``V`` after the last real token taken as 0 (no bootstrap past EOS or
    truncation). Padding positions get advantage and return 0.

    rewards: (B, T) per-token rewards (score on the last real token, KL penalty on all)
    values:  (B, T) critic values V(s_t)
    mask:    (B, T)
    returns: (advantages, returns), each (B, T); returns = advantages + values
    """
    mask = mask.to(values.dtype)
    B, T = rewards.shape
    adv = torch.zeros_like(values)
    next_value = torch.zeros(B, dtype=values.dtype, device=values.device)  # V_{t+1}
    next_adv = torch.zeros(B, dtype=values.dtype, device=values.device)  # A_{t+1}
    for t in reversed(range(T)):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        a = delta + gamma * lam * next_adv
        adv[:, t] = a * m
        # padding positions pass nothing backwards
        next_value = values[:, t] * m
        next_adv = a * m
    returns = (adv + values) * mask
    return adv, returns


# --------------------------------------------------------------------------- #
# KL to the reference policy
# --------------------------------------------------------------------------- #


def kl_estimate(logp: torch.Tensor, ref_logp: torch.Tensor, kind: str = "k3", clamp: bool = True) -> torch.Tensor:
    """Per-token estimate of KL(pi || pi_ref) from samples of pi.

    With ``d = ref_logp - logp`` (Schulman, "Approximating KL divergence", 2020; verl's ``kl_penalty``):

    * ``k1 = -d``                  unbiased, high variance, can be negative
    * ``k2 = d**2 / 2``            biased, low variance
    * ``k3 = exp(d) - d - 1``      unbiased and always >= 0 (GRPO's choice)
    * ``k1+``, ``k3+``             the value of k1 / k3 with the gradient of k2,
      ``(logp - ref_logp) * grad logp`` (verl's straight-through estimators)

    Unbiased values are not unbiased gradients: in the loss, k1's expected gradient is 0,
    k2's is that of KL(pi || pi_ref), k3's that of the forward KL(pi_ref || pi) (Tang &
    Munos 2025; notebook 03, :func:`exact_kl`, :func:`bias_corrected_kl`).
    ``clamp``: ``d`` to +-:data:`LOG_RATIO_BOUND` and k3 to +-:data:`K3_BOUND`, as verl does.

    logp, ref_logp: (B, T); returns (B, T)
    """
    if kind in ("k1+", "k3+"):  # verl: backward_score - backward_score.detach() + forward_score.detach()
        value = kl_estimate(logp, ref_logp, kind[:-1])  # (B, T)
        k2 = 0.5 * (logp - ref_logp).square()  # (B, T): only its gradient survives
        return k2 - k2.detach() + value.detach()
    d = (ref_logp - logp).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND) if clamp else ref_logp - logp
    if kind == "k1":
        return -d
    if kind == "k2":
        return 0.5 * d**2
    if kind == "k3":
        k3 = torch.exp(d) - d - 1.0
        return k3.clamp(-K3_BOUND, K3_BOUND) if clamp else k3
    raise ValueError(f"unknown KL estimator {kind!r}; use one of {', '.join(GRPO_KL_ESTIMATORS)}")


def bias_corrected_kl(logp: torch.Tensor, ref_logp: torch.Tensor, old_logp: torch.Tensor) -> torch.Tensor:
    """The k3 estimate times the token ratio ``r = exp(logp - old_logp)``, ratio and all
    differentiated (TRL's ``use_bias_correction_kl``).

    On-policy ``r = 1``, so the value is k3's, but ``grad(r k3) = (logp - ref_logp) grad logp``:
    k2's gradient, whose expectation is the gradient of KL(pi || pi_ref). k3 is not
    clamped here: a clamped token's ``grad k3`` is 0 and that identity would break.

    logp, ref_logp, old_logp: (B, T); returns (B, T)
    """
    return kl_estimate(logp, ref_logp, "k3", clamp=False) * torch.exp(logp - old_logp)


def exact_kl(logits: torch.Tensor, ref_logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """The exact KL(pi || pi_ref) of the two next-token distributions at every position,
    ``sum_v pi(v) (log pi(v) - log pi_ref(v))`` over the whole vocabulary, with
    ``pi = softmax(logits / temperature)`` and ``pi_ref = softmax(ref_logits / temperature)``.

    What the estimators of :func:`kl_estimate` estimate from one sampled token; with a
    small vocabulary it is cheap. ``exact_kl(ref_logits, logits)`` is the forward
    KL(pi_ref || pi).

    logits, ref_logits: (B, T, V); returns (B, T)
    """
    dtype = torch.promote_types(
        torch.promote_types(logits.dtype, ref_logits.dtype), torch.float32
    )  # float32, or float64 if given
    z, z_ref = logits.to(dtype), ref_logits.to(dtype)
    if temperature != 1.0:
        z, z_ref = z / temperature, z_ref / temperature
    logp, ref_logp = torch.log_softmax(z, dim=-1), torch.log_softmax(z_ref, dim=-1)  # (B, T, V) each
    return (logp.exp() * (logp - ref_logp)).sum(-1)  # (B, T)


# --------------------------------------------------------------------------- #
# The rollout-trainer mismatch (the sampler's log-probs are not the trainer's)
# --------------------------------------------------------------------------- #


def rollout_correction_weights(
    old_logp: torch.Tensor,
    rollout_logp: torch.Tensor,
    mask: torch.Tensor,
    mode: str = "token_truncate",
    threshold: float = 2.0,
):
    """Importance weights that correct the policy loss for the rollout-trainer mismatch.

    The sampler drew the tokens from ``pi_sampler``, the loss treats them as drawn from
    ``pi_trainer``: the ratio ``r = pi_trainer / pi_sampler = exp(old_logp - rollout_logp)``
    reweights them back (Yao et al. 2025, TIS). ``C = threshold``:

    * ``token_truncate`` (TIS): ``w_t = min(r_t, C)``;
    * ``token_mask`` (masked IS): ``w_t = r_t`` where ``r_t <= C``, else 0;
    * ``sequence_truncate`` / ``sequence_mask``: the same with one ratio per answer,
      ``r_i = prod_t r_it`` (the product, not the geometric mean), on every token of it.

    The weights are detached and multiply each token's loss before aggregation (the
    denominators are unchanged). Log-ratios are clamped to +-:data:`LOG_RATIO_BOUND`
    before ``exp``. TRL's and verl's versions of it: docs/engines.md.

    old_logp:     (B, T) the trainer's log-probs of the sampled tokens (its recompute)
    rollout_logp: (B, T) the sampler's own log-probs of them
    mask:         (B, T)
    returns: (weights, metrics): ``weights`` (B, T), 0 on padding, and
    ``rollout_is_mean`` (mean weight over the valid tokens) and ``rollout_is_clip_frac``
    (share of valid tokens with ``r > C``)
    """
    level, _, action = mode.partition("_")
    if level not in ("token", "sequence") or action not in ("truncate", "mask"):
        raise ValueError(
            f"unknown rollout correction {mode!r}; use token_truncate, token_mask, sequence_truncate or sequence_mask"
        )
    with torch.no_grad():
        mask = mask.to(old_logp.dtype)
        log_ratio = (old_logp - rollout_logp) * mask  # (B, T), 0 on padding
        if level == "sequence":
            log_ratio = log_ratio.sum(-1, keepdim=True)  # (B, 1): log of the product over the answer
        ratio = torch.exp(log_ratio.clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND)).expand_as(old_logp)  # (B, T)
        beyond = ratio > threshold  # (B, T)
        weights = (
            ratio.clamp(max=threshold) if action == "truncate" else ratio.masked_fill(beyond, 0.0)
        ) * mask  # (B, T)
        vals = torch.stack([masked_mean(weights, mask), masked_mean(beyond.to(mask.dtype), mask)]).tolist()
    return weights, {"rollout_is_mean": vals[0], "rollout_is_clip_frac": vals[1]}


# --------------------------------------------------------------------------- #
# Policy and value losses
# --------------------------------------------------------------------------- #


def aggregated(per_token, mask: torch.Tensor, agg: str, max_len: int | None, is_weights: torch.Tensor | None):
    """A token loss's ``(loss_mat (B, T), metrics)`` as ``(scalar loss, metrics)``: :func:`aggregate` of ``loss_mat``."""
    loss_mat, metrics = per_token
    return aggregate(loss_mat, mask, agg, max_len, is_weights), metrics


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float | None = 0.2,
    clip_high: float | None = 0.2,
    agg: str = "token-mean",
    max_len: int | None = None,
    clip_c: float | None = None,
    ratio_level: str = "token",
    is_weights: torch.Tensor | None = None,
):
    """The (clipped) surrogate policy loss: :func:`rlalgos.losses.clip.clipped_token_loss` per token,
    then :func:`rlalgos.losses.common.aggregate` (``is_weights``: the rollout correction's (B, T) weights;
    ``max_len``: the constant ``L_max`` of ``seq-mean-token-sum-norm``). Returns (loss, metrics)."""
    per_token = clip.clipped_token_loss(logp, old_logp, advantages, mask, clip_low, clip_high, clip_c, ratio_level)
    return aggregated(per_token, mask, agg, max_len, is_weights)


def clip_cov_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    clip_cov_ratio: float = 2e-4,
    clip_cov_lb: float = 1.0,
    clip_cov_ub: float = 5.0,
    agg: str = "token-mean",
    max_len: int | None = None,
    generator: torch.Generator | None = None,
    is_weights: torch.Tensor | None = None,
):
    """Clip-Cov: :func:`rlalgos.losses.clip_cov.clip_cov_token_loss`, aggregated as :func:`policy_loss`."""
    per_token = clip_cov.clip_cov_token_loss(
        logp, old_logp, advantages, mask, clip_low, clip_high, clip_cov_ratio, clip_cov_lb, clip_cov_ub, generator
    )
    return aggregated(per_token, mask, agg, max_len, is_weights)


def kl_cov_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    kl_cov_ratio: float = 2e-4,
    kl_cov_coef: float = 0.1,
    agg: str = "token-mean",
    max_len: int | None = None,
    is_weights: torch.Tensor | None = None,
):
    """KL-Cov: :func:`rlalgos.losses.kl_cov.kl_cov_token_loss`, aggregated as :func:`policy_loss`."""
    per_token = kl_cov.kl_cov_token_loss(logp, old_logp, advantages, mask, kl_cov_ratio, kl_cov_coef)
    return aggregated(per_token, mask, agg, max_len, is_weights)


def cispo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float | None = 0.2,
    clip_high: float | None = 0.2,
    agg: str = "token-mean",
    max_len: int | None = None,
    is_weights: torch.Tensor | None = None,
):
    """CISPO: :func:`rlalgos.losses.cispo.cispo_token_loss`, aggregated as :func:`policy_loss`."""
    per_token = cispo.cispo_token_loss(logp, old_logp, advantages, mask, clip_low, clip_high)
    return aggregated(per_token, mask, agg, max_len, is_weights)


def sapo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    tau_pos: float = 1.0,
    tau_neg: float = 1.05,
    agg: str = "seq-mean-token-mean",
    max_len: int | None = None,
    is_weights: torch.Tensor | None = None,
):
    """SAPO: :func:`rlalgos.losses.sapo.sapo_token_loss`, aggregated as :func:`policy_loss` (TRL's and verl's aggregation by default)."""
    per_token = sapo.sapo_token_loss(logp, old_logp, advantages, mask, tau_pos, tau_neg)
    return aggregated(per_token, mask, agg, max_len, is_weights)


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip: float | None = 0.2,
    agg: str = "token-mean",
    max_len: int | None = None,
):
    """PPO's clipped value loss.

    ``v_clip = old_values + clip(values - old_values, -clip, clip)``;
    per token ``0.5 * max((values - R)^2, (v_clip - R)^2)``.

    values, old_values, returns, mask: (B, T)
    returns: (loss, metrics) with ``value_clip_frac``
    """
    mask = mask.to(values.dtype)
    err = (values - returns) ** 2
    if clip is None:
        loss_mat = 0.5 * err
        clipped_mask = torch.zeros_like(err, dtype=torch.bool)
    else:
        v_clip = old_values + (values - old_values).clamp(-clip, clip)
        err_clip = (v_clip - returns) ** 2
        loss_mat = 0.5 * torch.maximum(err, err_clip)
        clipped_mask = err_clip > err
    loss = aggregate_loss(loss_mat, mask, agg, max_len)
    return loss, {"value_clip_frac": masked_mean(clipped_mask.to(mask.dtype), mask).item()}


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor, var=masked_var) -> float:
    """``1 - Var(R - V) / Var(R)`` over valid tokens: 1 is a perfect critic, 0 no better
    than a constant, negative worse. ``var(x, mask)``: the masked variance to use (the
    whole batch's, over several processes: :func:`rlalgos.engine.batch.explained_variance`).
    values, returns, mask: (B, T)."""
    var_r = var(returns, mask)
    if var_r.item() == 0:
        return float("nan")
    return (1.0 - var(returns - values, mask) / var_r).item()


# --------------------------------------------------------------------------- #
# Length shaping
# --------------------------------------------------------------------------- #


def overlong_penalty(lengths: torch.Tensor, max_len: int, buffer: int) -> torch.Tensor:
    """DAPO's soft overlong punishment, one number per answer.

    0 if ``|y| <= L_max - L_c``; ``(L_max - L_c - |y|) / L_c`` inside the buffer;
    -1 beyond ``L_max``.

    lengths: (B,) completion lengths in tokens; returns (B,) floats in [-1, 0]
    """
    if buffer <= 0 or buffer > max_len:
        raise ValueError(f"overlong buffer must be in 1..max_len ({max_len}), got {buffer}")
    lengths = lengths.float()
    start = max_len - buffer
    pen = (start - lengths) / buffer
    pen = torch.where(lengths <= start, torch.zeros_like(pen), pen)
    return torch.where(lengths > max_len, torch.full_like(pen, -1.0), pen)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` are correct (Chen et al. 2021):
    ``1 - C(n-c, k) / C(n, k)``."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per prompt, got {n}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod
