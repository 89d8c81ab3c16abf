"""Statistics over the whole batch: every process's rows together.

An algorithm that takes a mean, a whitening, a baseline or a count over its batch
calls these, so that under ``torchrun`` (:mod:`rlalgos.engine.distributed`) the
statistic is the whole batch's, not each process's share of it. In one process
each is the plain function of :mod:`rlalgos.core` on the tensor it is given:
the same numbers, bit for bit. For a learner: read ``batch.mean(x)`` as
``x.mean()``.
"""

from __future__ import annotations

import torch

from .. import core
from ..record import row_stats
from . import distributed


def total(x):
    """Sum of a number (or a scalar tensor) over processes, added in rank order (the
    same bits on every process); ``x`` itself in one process."""
    if distributed.world_size() == 1:
        return x
    s = sum(distributed.gather(x.item() if isinstance(x, torch.Tensor) else x))
    return torch.as_tensor(s, dtype=x.dtype, device=x.device) if isinstance(x, torch.Tensor) else s


def share(x: float) -> float:
    """One process's share of a whole-batch amount ``x`` (``x`` in one process)."""
    return x / distributed.world_size()


def mean(x: torch.Tensor) -> float:
    """Mean of ``x``'s entries over every process's ``x``."""
    if distributed.world_size() == 1:
        return x.mean().item()
    s = distributed.reduce_sums({"sum": x.sum().item(), "n": x.numel()})
    return s["sum"] / s["n"] if s["n"] else float("nan")


def token_weighted(metrics: dict[str, float], tokens: float) -> dict[str, float]:
    """Means over this process's ``tokens`` valid tokens -> the same means over every
    process's tokens (``metrics`` itself in one process)."""
    if distributed.world_size() == 1:
        return metrics
    return ratios({k: (v * tokens, tokens) for k, v in metrics.items()})


def counts(tokens: torch.Tensor, rows: int):
    """A minibatch's loss tokens (a scalar tensor) and answers over every process:
    the denominators of the gradient weights."""
    if distributed.world_size() == 1:
        return tokens, rows
    s = distributed.reduce_sums({"tokens": tokens.item(), "rows": rows})
    return torch.as_tensor(s["tokens"], dtype=tokens.dtype, device=tokens.device), int(s["rows"])


def groups(rollouts) -> int:
    """Prompt groups in a list of rollouts, over every process."""
    return total(sum(len(ro) // ro.group_size for ro in rollouts))


def allocate(have: int, want: int) -> int:
    """How many of its ``have`` items this process keeps so that all processes
    together keep ``min(sum have, N * want)``: each its own ``want`` first, the
    rest from the processes with more, in rank order. One process: ``min(have, want)``."""
    if distributed.world_size() == 1:
        return min(have, want)
    counts = distributed.gather(have)
    base = [min(c, want) for c in counts]
    left = want * len(counts) - sum(base)
    for r, c in enumerate(counts):
        extra = min(c - base[r], left)
        base[r] += extra
        left -= extra
    return base[distributed.rank()]


def moments(x: torch.Tensor, mask: torch.Tensor):
    """Mean and unbiased variance of the masked entries of ``x`` over every process
    (:func:`core.masked_mean`, :func:`core.masked_var` in one process)."""
    if distributed.world_size() == 1:
        return core.masked_mean(x, mask), core.masked_var(x, mask)
    mask = mask.to(x.dtype)
    s = distributed.reduce_sums({"n": mask.sum().item(), "sum": core.masked_sum(x, mask).item()})
    n = max(s["n"], 1.0)
    m = s["sum"] / n
    ss = total(core.masked_sum((x - m) ** 2, mask).item())
    var = ss / n * (s["n"] / (s["n"] - 1) if s["n"] > 1 else 1.0)
    return torch.as_tensor(m, dtype=x.dtype, device=x.device), torch.as_tensor(var, dtype=x.dtype, device=x.device)


def whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """:func:`core.masked_whiten` with the whole batch's mean and variance."""
    return core.masked_whiten(x, mask, eps=eps, moments=moments(x, mask))


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float:
    """:func:`core.explained_variance` over the whole batch."""
    return core.explained_variance(values, returns, mask, var=lambda x, m: moments(x, m)[1])


def baseline(rewards: torch.Tensor, group_size: int, kind: str) -> torch.Tensor:
    """:func:`core.baseline`, with ``batch_mean`` the mean of the whole batch."""
    whole = mean(rewards) if kind == "batch_mean" and distributed.world_size() > 1 else None
    return core.baseline(rewards, group_size, kind, batch_mean=whole)


def rollout_stats(ro) -> dict:
    """:meth:`Rollout.stats` of the whole batch: every process's rows together."""
    if distributed.world_size() == 1:
        return ro.stats()
    cols = distributed.gather(
        {
            "rewards": ro.rewards.cpu(),
            "parts": {k: v.cpu() for k, v in ro.reward_parts.items()},
            "lengths": ro.lengths.cpu(),
            "truncated": ro.truncated.cpu(),
        }
    )
    cat = lambda key: torch.cat([c[key] for c in cols])  # noqa: E731
    parts = {k: torch.cat([c["parts"][k] for c in cols]) for k in cols[0]["parts"]}
    return row_stats(cat("rewards"), parts[ro.correct_key], parts, cat("lengths"), cat("truncated"), ro.group_size)


def ratios(sums: dict[str, tuple[float, float]]) -> dict[str, float]:
    """``{name: (sum, count)}`` -> ``{name: sum / count}`` over every process's rows
    (e.g. :func:`rlalgos.tasks.breakdown_metrics`, accuracy per difficulty level)."""
    if not sums:  # a task without levels: no collective on the hot path
        return {}
    s = distributed.reduce_sums({(k, i): v[i] for k, v in sums.items() for i in (0, 1)})
    return {k: s[(k, 0)] / max(s[(k, 1)], 1.0) for k in sums}
