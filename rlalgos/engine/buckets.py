"""Length bucketing: run a batch as a few passes over rows of similar length,
each padded only to its own longest row (same result, less padding)."""

from __future__ import annotations

import torch


def length_buckets(lengths: torch.Tensor, n_buckets: int, max_rows: int = 0) -> list[torch.Tensor]:
    """Row indices sorted by length and cut into ``n_buckets`` runs of neighbours
    (more if a run would exceed ``max_rows`` > 0). Forward passes over a bucket
    then pad only to that bucket's longest row instead of the batch's.

    lengths: (N,) a sort key, e.g. :meth:`Rollout.length_key`; returns a list of
    1-D index tensors that together cover 0..N-1 once.
    """
    order = torch.argsort(lengths, stable=True)
    n = max(1, min(n_buckets, len(order)))
    if max_rows > 0:
        n = max(n, -(-len(order) // max_rows))
    return [b for b in order.tensor_split(n) if len(b)]
