"""KL-Cov (Cui et al. 2025, arXiv:2505.22617; verl's ``kl_cov``): the unclipped ratio loss,
with a log-ratio penalty on the highest-covariance tokens."""

from __future__ import annotations

from .registry import TRL_ENTROPY_OPTIONS, register_policy_loss, require


def _check(cfg) -> None:
    require(
        0 < cfg.kl_cov_ratio <= 1, f"kl_cov_ratio must be in (0, 1] (a share of the tokens), got {cfg.kl_cov_ratio}"
    )
    require(cfg.kl_cov_coef >= 0, f"kl_cov_coef must be >= 0, got {cfg.kl_cov_coef}")


@register_policy_loss(
    "kl_cov",
    title="KL-Cov",
    check=_check,
    options=lambda cfg: {"kl_cov_ratio": cfg.kl_cov_ratio, "kl_cov_coef": cfg.kl_cov_coef},
    params={"kl_cov_ratio": ("", "policy_loss.kl_cov_ratio"), "kl_cov_coef": ("", "policy_loss.ppo_kl_coef")},
    verl_note="verl picks the tokens in each micro-batch (ppo_micro_batch_size_per_gpu), rlalgos in each forward pass (length bucket): the same rule, over other sets of answers",
    trl_missing="TRL has no KL-Cov: the export trains with the clipped loss (loss_type from loss_agg) where rlalgos's kl_cov has no clip; TRL's nearest options are epsilon_high "
    "(clip-higher: a wider upper clip lets rare rewarded tokens grow, which slows the entropy collapse) and top_entropy_quantile (train only on the highest-entropy tokens)",
    trl_nearest=TRL_ENTROPY_OPTIONS,
)
def kl_cov_token_loss(logp, old_logp, advantages, mask, kl_cov_ratio: float = 2e-4, kl_cov_coef: float = 0.1):
    """KL-Cov per token. verl's ``compute_policy_loss_kl_cov``.

    Per token ``l = -A r``: **no ratio clip** (as in the paper and verl; clip_low and
    clip_high do not enter). The ``max(1, int(kl_cov_ratio * n))`` valid tokens with the
    largest :func:`~rlalgos.losses.common.token_covariance` (means over the ``n`` valid tokens, unweighted, as
    verl takes them) get ``l = -A r + kl_cov_coef * |log r|``, which pulls their ratio
    back towards 1 from either side. At ratio 1 (the first minibatch of a rollout) the
    penalty and its gradient are 0: it acts once the policy has moved. Chosen per call
    (per forward pass), as verl chooses per micro-batch. The log-ratio is clamped as in
    the clipped loss.

    logp, old_logp: (B, T) token log-probs now and at sampling time
    advantages:     (B, T) (or (B, 1), broadcast over tokens)
    mask:           (B, T)
    returns: (loss_mat (B, T), metrics) with ``cov_selected_frac`` (share of valid tokens penalised),
    ``clip_frac``, ``clip_frac_low``, ``clip_frac_high`` (0: nothing is clipped),
    ``approx_kl``, ``ratio_mean``
    """
    import torch

    from . import common

    mask, advantages, log_ratio, ratio = common.token_ratio(logp, old_logp, advantages, mask)
    unclipped = -advantages * ratio  # (B, T)
    with torch.no_grad():
        valid = mask > 0  # (B, T)
        cov = common.token_covariance(logp, advantages, valid)[valid]  # (n,) valid tokens in row-major order
        flat = torch.zeros(valid.numel(), dtype=torch.bool, device=valid.device)
        if cov.numel():
            top = torch.topk(cov, max(1, int(cov.numel() * kl_cov_ratio))).indices  # into the valid tokens
            flat[torch.nonzero(valid.reshape(-1)).squeeze(-1)[top]] = True
        selected = flat.view_as(valid)  # (B, T)
    loss_mat = torch.where(selected, unclipped + kl_cov_coef * log_ratio.abs(), unclipped)  # (B, T)
    none = torch.zeros_like(valid)
    return loss_mat, common.policy_metrics(
        mask, log_ratio, ratio, clip_frac=none, clip_frac_low=none, clip_frac_high=none, cov_selected_frac=selected
    )
