"""SAPO, soft adaptive policy optimisation (Gao et al. 2025, Qwen, arXiv:2511.20347; verl's
``sapo``, TRL's ``loss_type="sapo"``): a smooth gate on the ratio instead of the hard clip."""

from __future__ import annotations

from .registry import register_policy_loss, require


def _check(cfg) -> None:
    require(
        cfg.sapo_tau_pos > 0 and cfg.sapo_tau_neg > 0,
        f"sapo_tau_pos and sapo_tau_neg must be > 0, got {cfg.sapo_tau_pos} and {cfg.sapo_tau_neg}",
    )


@register_policy_loss(
    "sapo",
    check=_check,
    options=lambda cfg: {"tau_pos": cfg.sapo_tau_pos, "tau_neg": cfg.sapo_tau_neg},
    params={"sapo_tau_pos": ("sapo_temperature_pos", "tau_pos"), "sapo_tau_neg": ("sapo_temperature_neg", "tau_neg")},
    verl_agg="seq-mean-token-mean",
    trl="sapo",
    trl_agg="seq-mean-token-mean",
)
def sapo_token_loss(logp, old_logp, advantages, mask, tau_pos: float = 1.0, tau_neg: float = 1.05):
    """SAPO per token: ``l = -A * f(r)`` with ``f(r) = sigmoid(tau * (r - 1)) * 4 / tau``, ``tau =
    tau_pos`` where A > 0 and ``tau_neg`` where A <= 0. ``f'(r) = 4 s (1 - s)`` with ``s =
    sigmoid(tau (r - 1))``: 1 at ``r = 1`` (the gradient is REINFORCE's there), falling
    smoothly towards 0 as the ratio leaves 1, faster for a larger tau. So a token that has
    moved far keeps a small gradient instead of none, and with ``tau_neg > tau_pos``
    negative-advantage tokens are damped sooner. verl's ``compute_policy_loss_sapo``
    and TRL's ``loss_type="sapo"`` (defaults 1.0 and 1.05 in both), which always
    aggregate ``seq-mean-token-mean`` (here the others are allowed too).

    logp, old_logp: (B, T) token log-probs now and at sampling time
    advantages:     (B, T) (or (B, 1), broadcast over tokens)
    mask:           (B, T)
    returns: (loss_mat (B, T), metrics) with ``sapo_grad_weight`` (mean of ``f'(r)`` over the valid
    tokens: 1 on-policy, smaller as ratios move off 1), ``clip_frac``, ``clip_frac_low``,
    ``clip_frac_high`` (0: there is no hard clip), ``approx_kl``, ``ratio_mean``
    """
    import torch

    from . import common

    mask, advantages, log_ratio, ratio = common.token_ratio(logp, old_logp, advantages, mask)
    tau = torch.where(
        advantages > 0,
        torch.as_tensor(tau_pos, dtype=logp.dtype, device=logp.device),
        torch.as_tensor(tau_neg, dtype=logp.dtype, device=logp.device),
    )  # (B, T)
    s = torch.sigmoid(tau * (ratio - 1.0))  # (B, T)
    loss_mat = -(s * (4.0 / tau)) * advantages  # (B, T): -A * f(r)
    s = s.detach()
    none = torch.zeros_like(mask, dtype=torch.bool)
    return loss_mat, common.policy_metrics(
        mask,
        log_ratio,
        ratio,
        sapo_grad_weight=4 * s * (1 - s),
        clip_frac=none,
        clip_frac_low=none,
        clip_frac_high=none,
    )
