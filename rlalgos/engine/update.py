"""The update machinery under :meth:`rlalgos.algorithms.base.Algorithm.update`:
``epochs`` x ``minibatches`` optimizer steps over one rollout, each minibatch run
as micro-batches of similar length, their gradients weighted so that they add up
to one pass over the whole minibatch (and, under ``torchrun``, over every
process's rows), the gradient clipped, and nothing non-finite let into the weights.

What a learner needs from here is one sentence: for every minibatch, the loss the
algorithm defines is back-propagated and the optimizer steps once. Everything
else in this file makes that same step fit in memory, run faster, or run on
several processes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch

from .. import core
from . import batch, diagnostics, distributed
from .buckets import length_buckets
from .forward import forward_logprobs


@dataclass
class SamplingStats:
    """Token-weighted sums, over the first pass of an update, of the sampling policy's
    entropy and of its k3 KL to the reference (over the answers that have reference
    log-probs: all of them, or a subsample: then also the sums behind the estimate's
    standard error, :func:`rlalgos.engine.diagnostics.ratio_estimate`), and, where the pass had the
    reference's logits (a small vocabulary), of the exact KL on the same tokens; and, where
    the rollout kept the sampler's own log-probs (``rollout_logprobs``), of the gap between
    them and the trainer's (:func:`rlalgos.engine.diagnostics.logprob_gap`)."""

    tokens: float = 0.0  # completion tokens seen
    entropy: float = 0.0  # sum of per-token entropies
    kl_tokens: float = 0.0  # tokens the KL was measured on
    kl: float = 0.0  # sum of per-token k3 KL
    seen: bool = False  # whether any KL was measured
    kl_exact: float = 0.0  # sum of per-token exact KL, on the same tokens as kl
    exact_seen: bool = False  # whether the exact KL was measured
    sub_rows: float = 0.0  # subsampled KL: answers measured ...
    rows: float = 0.0  # ... out of this many
    yy: float = 0.0  # sum over measured answers of (KL sum)^2
    yn: float = 0.0  # ... of (KL sum) x (tokens)
    nn: float = 0.0  # ... of tokens^2
    gap: float = 0.0  # sum of |trainer log-prob - sampler log-prob| (rollouts with rollout_logprobs)
    gap_beyond: float = 0.0  # tokens whose ratio exp(trainer - sampler) is above 2 or below 1/2
    gap_max: float = 0.0  # the largest |trainer log-prob - sampler log-prob| (a max: not summed over processes)
    gap_seen: bool = False  # whether the gap was measured

    @torch.no_grad()
    def add(self, mb, logp: torch.Tensor, entropy: torch.Tensor, kl_exact: torch.Tensor | None = None) -> None:
        """Add a micro-batch ``mb`` (a Rollout) with its (n, T) sampling log-probs, entropy and, if measured, exact KL."""
        mask = mb.completion_mask  # (n, T)
        self.tokens += float(mask.sum().item())
        self.entropy += float(core.masked_sum(entropy.detach(), mask).item())
        if mb.rollout_logprobs is not None:  # the sampler's own log-probs: how far the trainer's are from them
            gap = diagnostics.logprob_gap(
                logp.detach(), mb.rollout_logprobs, mask
            )  # per-token means over this micro-batch's tokens
            n = float((mask > 0).sum().item())
            self.gap_seen = True
            self.gap += gap["mismatch_logp_gap_mean"] * n
            self.gap_beyond += gap["mismatch_ratio_beyond_2"] * n
            self.gap_max = max(self.gap_max, gap["mismatch_logp_gap_max"])
        if mb.ref_logprobs is None:
            return
        self.seen = True
        ref_rows = mb.diagnostics.ref_rows  # (n,) bool, or None: every row
        kl_mask = mask if ref_rows is None else mask * ref_rows.unsqueeze(1)  # (n, T)
        kl = core.kl_estimate(logp.detach(), mb.ref_logprobs, "k3")  # (n, T)
        self.kl_tokens += float(kl_mask.sum().item())
        self.kl += float(core.masked_sum(kl, kl_mask).item())
        if kl_exact is not None:
            self.exact_seen = True
            self.kl_exact += float(core.masked_sum(kl_exact.detach(), kl_mask).item())
        if ref_rows is not None:
            y, n = (
                core.masked_sum(kl, kl_mask, dim=-1)[ref_rows],
                kl_mask.sum(-1)[ref_rows],
            )  # (m,) per measured answer
            self.sub_rows += float(len(y))
            self.rows += float(len(mb))
            self.yy += float((y * y).sum())
            self.yn += float((y * n).sum())
            self.nn += float((n * n).sum())

    def metrics(self) -> dict:
        """``entropy`` and ``kl`` per token (``kl_stderr`` for a subsampled KL, ``kl_exact`` where measured), over every process."""
        names = [f.name for f in fields(self) if f.name not in ("seen", "exact_seen", "gap_seen", "gap_max")]
        s = distributed.reduce_sums({k: getattr(self, k) for k in names})
        out = {"entropy": s["entropy"] / max(s["tokens"], 1.0)}
        if self.gap_seen:
            n = max(s["tokens"], 1.0)
            out.update(
                mismatch_logp_gap_mean=s["gap"] / n,
                mismatch_logp_gap_max=max(distributed.gather(self.gap_max)),
                mismatch_ratio_beyond_2=s["gap_beyond"] / n,
            )
        if self.seen:
            out["kl"] = s["kl"] / max(s["kl_tokens"], 1.0)
        if self.exact_seen:
            out["kl_exact"] = s["kl_exact"] / max(s["kl_tokens"], 1.0)
        if self.sub_rows:  # measured on a subsample of the answers: an estimate, with its standard error
            out["kl"], out["kl_stderr"] = diagnostics.ratio_estimate(
                s["kl"], s["kl_tokens"], s["yy"], s["yn"], s["nn"], int(s["sub_rows"]), int(s["rows"])
            )
        return out


def minibatch_updates(algo, ro, adv) -> dict:
    """``algo.cfg.epochs`` x ``minibatches`` optimizer steps of ``algo.loss`` over rollout ``ro``
    with advantages ``adv``. Returns the step's metrics: each logged loss term and
    ``grad_norm`` averaged over the optimizer steps, and the sampling policy's
    ``entropy`` and ``kl`` (``kl_exact`` where the rollout kept what it needs; and
    ``nonfinite`` if any step was skipped).

    Each minibatch runs as length buckets (and at most ``micro_batch_size`` rows per
    pass); each pass's loss is weighted by its share of the minibatch (of tokens
    for token-mean, of answers otherwise), so the accumulated gradient equals one
    pass over the whole minibatch. With several processes the shares are of the
    minibatch over all of them and the gradients are summed over processes.
    """
    N, cfg = len(ro), algo.cfg
    logs: dict[str, list[float]] = {}
    sampling = SamplingStats()
    recorded = ro.diagnostics.old_entropy is not None  # the rollout recorded the sampling policy
    if recorded:  # measure it before any step
        sampling.add(ro, ro.old_logprobs, ro.diagnostics.old_entropy, ro.diagnostics.old_kl_exact)
    loss_tokens = adv.mask.sum(-1)  # (N,) tokens each row adds to a token-mean
    lengths = ro.length_key()  # (N,) sort key for the length buckets
    device = adv.values.device
    for epoch in range(cfg.epochs):
        order = torch.randperm(N, device=device) if cfg.minibatches > 1 else torch.arange(N, device=device)
        for idx in distributed.minibatches(order, cfg.minibatches):
            algo.optimizer.zero_grad(set_to_none=True)
            # the minibatch's tokens and answers on every process: the denominators of the weights below
            mb_tokens, mb_rows = batch.counts(loss_tokens[idx].sum(), len(idx))
            mb_tokens = mb_tokens.clamp(min=1e-8)
            finite, mb_logs = True, {}  # every micro-batch loss is finite; metrics weighted like the loss
            for sub in (idx[b] for b in length_buckets(lengths[idx], cfg.length_buckets, cfg.micro_batch_size)):
                mb = ro.select(sub).trimmed()  # similar lengths, padding columns cut
                a = adv.rows(sub, mb.completion_ids.shape[1])  # (n, T') or (n, 1)
                record_sampling = epoch == 0 and not recorded  # one update: this pass *is* the sampling policy
                out = forward_logprobs(
                    algo.policy,
                    mb.prompt_ids,
                    mb.prompt_mask,
                    mb.completion_ids,
                    mb.completion_mask,
                    mb.temperature,
                    with_entropy=record_sampling,
                    entropy_grad=algo.wants_entropy_grad(),
                    logits_chunk=algo.engine.logits_chunk,
                    autocast_dtype=algo.engine.autocast_dtype,
                    ref_logits=mb.diagnostics.ref_logits if record_sampling else None,
                )
                old = mb.old_logprobs if mb.old_logprobs is not None else out["logprobs"].detach()
                loss, m = algo.loss(mb, out, a, old)
                # weight of this micro-batch in the minibatch's loss: its share of tokens or of answers
                w = loss_tokens[sub].sum() / mb_tokens if cfg.loss_agg == "token-mean" else len(sub) / mb_rows
                (loss * w).backward()
                m["loss"] = loss.item()
                finite = finite and math.isfinite(m["loss"])
                if record_sampling:
                    sampling.add(mb, out["logprobs"], out["entropy"], out.get("kl_exact"))
                for k, v in m.items():  # the weights sum to 1 over the minibatch
                    mb_logs[k] = mb_logs.get(k, 0.0) + float(w) * v
            finite, mb_logs = distributed.sync_gradients(algo.parameters(), finite, mb_logs)  # sums over processes
            for k, v in mb_logs.items():
                logs.setdefault(k, []).append(v)
            grad_norm = torch.nn.utils.clip_grad_norm_(algo.parameters(), cfg.max_grad_norm)
            logs.setdefault("grad_norm", []).append(grad_norm.item())
            if finite and torch.isfinite(grad_norm):
                algo.optimizer.step()
            else:  # never let NaN/inf into the weights
                algo.optimizer.zero_grad(set_to_none=True)
                logs.setdefault("nonfinite", []).append(1.0)
    metrics = {k: float(sum(v) / len(v)) for k, v in logs.items()}
    metrics.update(sampling.metrics())
    if "nonfinite" in metrics:
        metrics["nonfinite"] = 1.0
    return metrics


class EntropyProbe:
    """The entropy mechanism of one update, measured (Cui et al. 2025, arXiv:2505.22617).

    To first order, a policy-gradient step changes the policy's entropy by minus a
    covariance, over the sampled tokens, between a token's log-probability and its
    advantage: rewarding confident tokens lowers the entropy, rewarding rare ones
    raises it. Built before the optimizer steps, the probe records that covariance
    (``entropy_cov``: the mean of :func:`rlalgos.core.token_covariance` over the
    rollout's completion tokens, with the sampling log-probs) and the exact entropy of
    the sampling policy on the rollout's own states; :meth:`after` measures the exact
    entropy on the same states once the steps are done, so ``entropy_change`` is what
    the update did to them. Two no-grad passes over the rollout (one if it recorded
    its sampling entropy). Whole-batch means under ``torchrun``.
    """

    def __init__(self, algo, ro, adv):
        self.algo, self.ro = algo, ro
        if ro.diagnostics.old_entropy is not None:
            logp, ent = ro.old_logprobs, ro.diagnostics.old_entropy  # (N, T) each
        else:
            logp, ent = self._pass()
        mask = ro.completion_mask  # (N, T): every sampled token, whatever its weight in the loss
        cov = core.token_covariance(
            logp, adv.values.expand_as(logp), mask
        )  # (N, T) centred log-prob x centred advantage
        self.sums = {
            "tokens": float(mask.sum()),
            "cov": float(core.masked_sum(cov, mask)),
            "before": float(core.masked_sum(ent, mask)),
        }

    def _pass(self):
        return self.algo.engine.logprobs(self.algo.policy, self.ro, with_entropy=True)

    def after(self) -> dict:
        """``entropy_cov``, ``entropy_before``, ``entropy_after`` and ``entropy_change`` (per token)."""
        _, ent = self._pass()
        s = distributed.reduce_sums({**self.sums, "after": float(core.masked_sum(ent, self.ro.completion_mask))})
        n = max(s["tokens"], 1.0)
        return {
            "entropy_cov": s["cov"] / n,
            "entropy_before": s["before"] / n,
            "entropy_after": s["after"] / n,
            "entropy_change": (s["after"] - s["before"]) / n,
        }
