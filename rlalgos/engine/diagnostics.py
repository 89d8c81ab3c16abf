"""What the loop measures beside training, for the logs: the KL to the reference on an
evenly spread subsample of answers with its standard error (``--kl-sample-rows``), and
the gap between the sampler's and the trainer's log-probs of the same tokens
(``--rollout-dtype``). Pure functions; they change no number the run trains on."""

from __future__ import annotations

import math

import torch


def subsample_rows(n_rows: int, n_sample: int) -> torch.Tensor:
    """Which rows a measurement on ``n_sample`` of ``n_rows`` answers uses: evenly
    spaced, so every prompt's group is hit as evenly as possible (the G answers of a
    group are independent draws, so which of them is taken does not matter) and no
    random number is drawn (the training run's random stream is unchanged).

    returns: (min(n_sample, n_rows),) sorted row indices; all rows when ``n_sample`` is 0
    """
    if n_sample <= 0 or n_sample >= n_rows:
        return torch.arange(n_rows)
    return torch.linspace(0, n_rows - 1, n_sample).round().long()


def ratio_estimate(y: float, n: float, yy: float, yn: float, nn: float, m: int, total: int) -> tuple[float, float]:
    """A per-token mean measured on ``m`` of ``total`` answers, and its standard error.

    Answer i contributes ``y_i`` (its summed per-token value, e.g. KL) over ``n_i``
    tokens; the estimate is the ratio ``R = sum y_i / sum n_i`` over the sampled
    answers. Its variance, to first order (the ratio estimator; Cochran, *Sampling
    Techniques*, ch. 6), is::

        Var(R) = (1 - m / total) / (m * nbar**2) * sum_i (y_i - R n_i)**2 / (m - 1)

    with ``nbar = sum n_i / m``; ``(1 - m / total)`` makes it 0 when every answer is
    measured. The arguments are sums over the sampled answers (so they add up over
    micro-batches and processes): ``y = sum y_i``, ``n = sum n_i``, ``yy = sum y_i**2``,
    ``yn = sum y_i n_i``, ``nn = sum n_i**2``. Rows taken evenly across groups
    (:func:`subsample_rows`) make the true error at most this (stratifying by prompt
    can only help).

    returns: (R, standard error of R)
    """
    R = y / max(n, 1e-12)
    if m < 2 or m >= total:
        return R, 0.0
    resid = max(yy - 2 * R * yn + R * R * nn, 0.0)  # sum_i (y_i - R n_i)**2
    nbar = n / m
    return R, math.sqrt((1 - m / total) * resid / (m - 1) / m) / max(nbar, 1e-12)


def logprob_gap(old_logp: torch.Tensor, rollout_logp: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """How far the sampler's log-probs are from the trainer's, over the valid tokens.

    ``mismatch_logp_gap_mean`` / ``mismatch_logp_gap_max``: mean and max of
    ``|old_logp - rollout_logp|`` (TRL's ``sampling/sampling_logp_difference/mean`` and
    ``/max``); ``mismatch_ratio_beyond_2``: the share of tokens whose ratio
    ``exp(old_logp - rollout_logp)`` is above 2 or below 1/2.

    old_logp:     (B, T) the trainer's log-probs of the sampled tokens (its recompute)
    rollout_logp: (B, T) the sampler's own log-probs of them
    mask:         (B, T)
    """
    with torch.no_grad():
        valid = mask > 0
        gap = (old_logp - rollout_logp).abs()[valid]  # (n,)
        if gap.numel() == 0:
            return {"mismatch_logp_gap_mean": 0.0, "mismatch_logp_gap_max": 0.0, "mismatch_ratio_beyond_2": 0.0}
        vals = torch.stack([gap.mean(), gap.max(), (gap > math.log(2.0)).float().mean()]).tolist()
    return dict(zip(["mismatch_logp_gap_mean", "mismatch_logp_gap_max", "mismatch_ratio_beyond_2"], vals))
