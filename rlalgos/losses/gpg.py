"""GPG, group policy gradient (Chu et al. 2025, arXiv:2504.02546; verl's ``gpg``): REINFORCE's
``-A log pi`` with no importance ratio and no clip."""

from __future__ import annotations

from .registry import register_policy_loss


@register_policy_loss(
    "gpg",
    title="GPG",
    trl_missing="TRL has no GPG: the export trains with the clipped loss (loss_type from loss_agg), whose gradient is GPG's while the ratio is 1 "
    "(one optimizer step per rollout)",
    trl_nearest="the clipped loss at one optimizer step per rollout",
)
def gpg_token_loss(logp, old_logp, advantages, mask):
    """GPG per token: ``l = -A * logp``. Its gradient ``-A grad log pi`` is the clipped loss's
    at ratio 1; once the policy has moved inside a rollout (minibatches or epochs > 1) no
    ratio reweights the stale samples and no clip bounds the step. verl's
    ``compute_policy_loss_gpg`` (the paper's correction of the advantage for groups that
    carry no signal is not part of it, nor here).

    logp, old_logp: (B, T) token log-probs now and at sampling time (``old_logp`` only for the metrics)
    advantages:     (B, T) (or (B, 1), broadcast over tokens)
    mask:           (B, T)
    returns: (loss_mat (B, T), metrics) with ``approx_kl``, ``ratio_mean`` and ``clip_frac``,
    ``clip_frac_low``, ``clip_frac_high`` (0: nothing is clipped)
    """
    from . import common

    mask, advantages, log_ratio, ratio = common.token_ratio(logp, old_logp, advantages, mask)
    none = mask < 0  # (B, T) all False
    return -advantages * logp, common.policy_metrics(
        mask, log_ratio, ratio, clip_frac=none, clip_frac_low=none, clip_frac_high=none
    )
