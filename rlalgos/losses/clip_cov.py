"""Clip-Cov (Cui et al. 2025, arXiv:2505.22617; verl's ``clip_cov``): PPO's clipped loss,
with the gradient of a few high-covariance tokens cut as well."""

from __future__ import annotations

from .registry import TRL_ENTROPY_OPTIONS, register_policy_loss, require


def _check(cfg) -> None:
    require(
        0 < cfg.clip_cov_ratio <= 1,
        f"clip_cov_ratio must be in (0, 1] (a share of the tokens), got {cfg.clip_cov_ratio}",
    )
    require(
        0 <= cfg.clip_cov_lb < cfg.clip_cov_ub,
        f"clip_cov_lb and clip_cov_ub must satisfy 0 <= lb < ub, got {cfg.clip_cov_lb} and {cfg.clip_cov_ub}",
    )


@register_policy_loss(
    "clip_cov",
    title="Clip-Cov",
    check=_check,
    options=lambda cfg: {
        "clip_low": cfg.clip_low,
        "clip_high": cfg.clip_high,
        "clip_cov_ratio": cfg.clip_cov_ratio,
        "clip_cov_lb": cfg.clip_cov_lb,
        "clip_cov_ub": cfg.clip_cov_ub,
    },
    params={
        "clip_cov_ratio": ("", "policy_loss.clip_cov_ratio"),
        "clip_cov_lb": ("", "policy_loss.clip_cov_lb"),
        "clip_cov_ub": ("", "policy_loss.clip_cov_ub"),
    },
    verl_note="verl picks the tokens in each micro-batch (ppo_micro_batch_size_per_gpu), rlalgos in each forward pass (length bucket): the same rule, over other sets of answers",
    trl_missing="TRL has no Clip-Cov: the export trains with the clipped loss (loss_type from loss_agg); TRL's nearest options are epsilon_high (clip-higher: a wider upper clip "
    "lets rare rewarded tokens grow, which slows the entropy collapse) and top_entropy_quantile (train only on the highest-entropy tokens)",
    trl_nearest=TRL_ENTROPY_OPTIONS,
)
def clip_cov_token_loss(
    logp,
    old_logp,
    advantages,
    mask,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    clip_cov_ratio: float = 2e-4,
    clip_cov_lb: float = 1.0,
    clip_cov_ub: float = 5.0,
    generator=None,
):
    """Clip-Cov per token. verl's ``compute_policy_loss_clip_cov``.

    The per-token loss is the clipped loss ``max(-A r, -A clip(r, 1 - clip_low,
    1 + clip_high))``. Among the valid tokens that the ordinary clip has not cut and
    whose :func:`~rlalgos.losses.common.token_covariance` lies strictly between ``clip_cov_lb`` and
    ``clip_cov_ub``, ``max(1, int(clip_cov_ratio * sum(mask)))`` are drawn at random
    (``torch.randperm`` over them in row-major order, as verl draws) and their loss is
    multiplied by 0: no gradient. Those tokens are the ones that drive the entropy
    down the most (a confident token with a positive advantage, or an unlikely one
    with a negative advantage). The choice is made per call, i.e. per forward pass
    (micro-batch, length bucket), as verl makes it per micro-batch.

    ``generator``: where the draw comes from; None = torch's global generator (verl's).
    Seeded alike, both draw the same tokens. The log-ratio is clamped as in the clipped loss.

    logp, old_logp: (B, T) token log-probs now and at sampling time
    advantages:     (B, T) (or (B, 1), broadcast over tokens)
    mask:           (B, T)
    returns: (loss_mat (B, T), metrics) with ``clip_frac``, ``clip_frac_low``, ``clip_frac_high``
    (the ordinary clip), ``cov_selected_frac`` (share of valid tokens Clip-Cov cut: verl's
    ``pg_clipfrac`` in this mode), ``approx_kl``, ``ratio_mean``
    """
    import torch

    from . import common

    mask, advantages, log_ratio, ratio = common.token_ratio(logp, old_logp, advantages, mask)
    loss_mat, clipped_mask, low, high = common.clipped_surrogate(ratio, advantages, clip_low, clip_high)  # (B, T) each
    with torch.no_grad():
        cov = common.token_covariance(logp, advantages, mask)  # (B, T)
        candidates = (mask > 0) & ~clipped_mask & (cov > clip_cov_lb) & (cov < clip_cov_ub)  # (B, T)
        idx = torch.nonzero(candidates)  # (n, 2) row-major
        if len(idx) > 0:  # no draw when there is nothing to draw from (verl's random stream, too)
            perm = torch.randperm(
                len(idx), generator=generator, device=generator.device if generator is not None else "cpu"
            )
            idx = idx[perm[: max(int(clip_cov_ratio * mask.sum().item()), 1)].to(idx.device)]
        selected = torch.zeros_like(candidates)
        selected[idx[:, 0], idx[:, 1]] = True
    loss_mat = loss_mat * (~selected).to(loss_mat.dtype)  # the chosen tokens: loss 0, no gradient
    metrics = common.policy_metrics(
        mask,
        log_ratio,
        ratio,
        clip_frac=clipped_mask,
        clip_frac_low=low,
        clip_frac_high=high,
        cov_selected_frac=selected,
    )
    return loss_mat, {**metrics, **common.rare_upper_clip(old_logp, advantages, mask, high)}
