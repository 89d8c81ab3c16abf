"""The machinery every algorithm shares, so that the algorithm files need not
read it: the optimizer, the epochs x minibatches x micro-batch update loop with
its length buckets and gradient weights, the non-finite guard, and the metrics
every row carries.

An algorithm subclasses :class:`Algorithm` and writes two methods:

* ``advantages(ro) -> Advantages``: once per rollout, everything its loss needs
  per row (the advantages, the loss mask, anything else), as explicit values;
* ``loss(mb, out, adv, old_logp) -> (loss, metrics)``: for one micro-batch.

The training loop (``rlalgos.train``) calls, once per step::

    ro, info = algo.collect(sample, num_prompts)   # usually just sample(num_prompts)
    metrics = algo.update(ro)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from .. import core
from ..engine import distributed
from ..engine.buckets import length_buckets
from ..config import AlgoConfig
from ..engine.forward import forward_logprobs
from ..record import Rollout


@dataclass
class Advantages:
    """What an algorithm's ``advantages`` hands to its ``loss``, row-aligned with the rollout."""

    values: torch.Tensor  # (N, T) one per token, or (N, 1) one per answer shared by its tokens
    mask: torch.Tensor  # (N, T) weight of each token in the loss: the completion mask, times any per-row weight
    extras: dict[str, torch.Tensor] = field(default_factory=dict)  # other (N, ...) tensors the loss reads (PPO: old values, returns)
    metrics: dict[str, float] = field(default_factory=dict)  # logged once per step (PPO: explained_variance)

    def rows(self, idx: torch.Tensor, T: int) -> "Advantages":
        """Rows ``idx``, per-token tensors cut to the first ``T`` columns (a trimmed micro-batch)."""
        cut = lambda t: t[idx][:, :T] if t.dim() == 2 else t[idx]  # noqa: E731
        # the mask contiguous: float sums over it (token counts, weighted means) then add in one fixed order
        return Advantages(cut(self.values), cut(self.mask).contiguous(), {k: cut(v) for k, v in self.extras.items()}, self.metrics)


class Algorithm:
    """Base class: owns the policy's optimizer and runs the update loop."""

    name = "base"

    def __init__(self, policy, cfg: AlgoConfig, max_new_tokens: int = 0, *, score_batch_size: int = 512, logits_chunk: int = -1):
        self.policy, self.cfg = policy, cfg
        self.max_new_tokens = max_new_tokens  # the sampling length limit (L_max of Dr. GRPO, DAPO's overlong penalty)
        # how its own forward passes run (TrainConfig's fields of the same names): sequences per no-grad
        # scoring pass, and tokens per LM-head chunk (-1 auto, 0 all at once; rlalgos.engine.forward)
        self.score_batch_size, self.logits_chunk = score_batch_size, logits_chunk
        trainable = [p for p in policy.parameters() if p.requires_grad]  # all of them, or only the LoRA adapters
        self.optimizer = torch.optim.AdamW(trainable, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.step_count = 0  # updates done so far

    # ---- what the loop asks before sampling -------------------------------- #

    @property
    def needs_old_logprobs(self) -> bool:
        """Whether the rollout must record sampling-time log-probs. With one pass
        and one minibatch the policy has not moved yet, so ``logp.detach()`` is
        the same number and the extra forward pass is skipped."""
        return self.cfg.epochs > 1 or self.cfg.minibatches > 1

    @property
    def needs_ref(self) -> bool:
        return self.cfg.kl_coef > 0

    def collect(self, sample: Callable[..., Rollout], num_prompts: int) -> tuple[Rollout, dict]:
        """Get this step's training batch. ``sample(n_prompts, temperature=None)``
        returns fresh completions; the default calls it once."""
        return sample(num_prompts), {}

    # ---- the two methods an algorithm writes ------------------------------- #

    def advantages(self, ro: Rollout) -> Advantages:
        raise NotImplementedError

    def loss(self, mb: Rollout, out: dict, adv: Advantages, old_logp: torch.Tensor):
        """Scalar loss and metrics for one micro-batch. ``out`` is :func:`forward_logprobs`'s dict."""
        raise NotImplementedError

    @property
    def max_len(self) -> int | None:
        """``L_max`` of ``seq-mean-token-sum-norm``: the generation budget, the same for every batch."""
        return self.max_new_tokens or None

    def wants_entropy_grad(self) -> bool:
        """Whether the loss differentiates the entropy (an entropy bonus)."""
        return False

    # ---- the shared update loop --------------------------------------------- #

    def parameters(self):
        return [p for g in self.optimizer.param_groups for p in g["params"]]

    def update(self, ro: Rollout) -> dict:
        """Advantages once, then ``epochs`` x ``minibatches`` optimizer steps.

        Each minibatch runs as length buckets (and at most ``micro_batch_size``
        rows per pass); each pass's loss is weighted by its share of the
        minibatch (of tokens for token-mean, of answers otherwise), so the
        accumulated gradient equals one pass over the whole minibatch. With
        several processes the shares are of the minibatch over all of them and
        the gradients are summed over processes (:mod:`rlalgos.engine.distributed`).
        """
        self.policy.train()
        adv = self.advantages(ro)
        N, cfg = len(ro), self.cfg
        logs: dict[str, list[float]] = {}
        first_pass: dict[str, float] = {}
        if ro.old_entropy is not None:  # the rollout recorded the sampling policy: measure before any step
            self._record_sampling_stats(ro, ro.old_logprobs, ro.old_entropy, first_pass)
        loss_tokens = adv.mask.sum(-1)  # (N,) tokens each row adds to a token-mean
        lengths = ro.length_key()  # (N,) sort key for the length buckets
        for epoch in range(cfg.epochs):
            order = torch.randperm(N, device=adv.values.device) if cfg.minibatches > 1 else torch.arange(N, device=adv.values.device)
            for idx in distributed.minibatches(order, cfg.minibatches):
                self.optimizer.zero_grad(set_to_none=True)
                # the minibatch's tokens and answers on every process: the denominators of the weights below
                mb_tokens, mb_rows = distributed.global_counts(loss_tokens[idx].sum(), len(idx))
                mb_tokens = mb_tokens.clamp(min=1e-8)
                finite, mb_logs = True, {}  # every micro-batch loss is finite; metrics weighted like the loss
                for sub in (idx[b] for b in length_buckets(lengths[idx], cfg.length_buckets, cfg.micro_batch_size)):
                    mb = ro.select(sub).trimmed()  # similar lengths, padding columns cut
                    a = adv.rows(sub, mb.completion_ids.shape[1])  # (n, T') or (n, 1)
                    record_sampling = epoch == 0 and ro.old_entropy is None  # one update: this pass *is* the sampling policy
                    out = forward_logprobs(self.policy, mb.prompt_ids, mb.prompt_mask, mb.completion_ids, mb.completion_mask, mb.temperature,
                                           with_entropy=record_sampling, entropy_grad=self.wants_entropy_grad(), logits_chunk=self.logits_chunk)
                    old = mb.old_logprobs if mb.old_logprobs is not None else out["logprobs"].detach()
                    loss, m = self.loss(mb, out, a, old)
                    # weight of this micro-batch in the minibatch's loss: its share of tokens or of answers
                    w = loss_tokens[sub].sum() / mb_tokens if cfg.loss_agg == "token-mean" else len(sub) / mb_rows
                    (loss * w).backward()
                    m["loss"] = loss.item()
                    finite = finite and math.isfinite(m["loss"])
                    if record_sampling:
                        self._record_sampling_stats(mb, out["logprobs"], out["entropy"], first_pass)
                    for k, v in m.items():  # the weights sum to 1 over the minibatch
                        mb_logs[k] = mb_logs.get(k, 0.0) + float(w) * v
                finite, mb_logs = distributed.sync_gradients(self.parameters(), finite, mb_logs)  # sums over processes
                for k, v in mb_logs.items():
                    logs.setdefault(k, []).append(v)
                grad_norm = torch.nn.utils.clip_grad_norm_(self.parameters(), cfg.max_grad_norm)
                logs.setdefault("grad_norm", []).append(grad_norm.item())
                if finite and torch.isfinite(grad_norm):
                    self.optimizer.step()
                else:  # never let NaN/inf into the weights
                    self.optimizer.zero_grad(set_to_none=True)
                    logs.setdefault("nonfinite", []).append(1.0)
        first_pass = distributed.reduce_sums(first_pass)  # token sums over processes
        metrics = {k: float(sum(v) / len(v)) for k, v in logs.items()}
        metrics.update({k: v / max(first_pass.get("_tokens", 1.0), 1.0) for k, v in first_pass.items() if not k.startswith("_")})
        if "kl" in first_pass:  # per token of the answers it was measured on
            metrics["kl"] = first_pass["kl"] / max(first_pass["_kl_tokens"], 1.0)
        if "_kl_rows" in first_pass:  # measured on a subsample of the answers: an estimate, with its standard error
            p = first_pass
            metrics["kl"], metrics["kl_stderr"] = core.ratio_estimate(p["kl"], p["_kl_tokens"], p["_kl_yy"], p["_kl_yn"], p["_kl_nn"], int(p["_kl_rows"]), int(p["_rows"]))
        metrics.update(adv.metrics)
        metrics["lr"] = self.optimizer.param_groups[0]["lr"]
        self.step_count += 1
        if "nonfinite" in metrics:
            metrics["nonfinite"] = 1.0
        return metrics

    @torch.no_grad()
    def _record_sampling_stats(self, mb: Rollout, logp: torch.Tensor, entropy: torch.Tensor, acc: dict) -> None:
        """Token-weighted sums of the sampling policy's entropy and k3 KL to the reference
        (the KL over the rows that have reference log-probs: all, or a subsample)."""
        mask = mb.completion_mask
        add = lambda k, v: acc.__setitem__(k, acc.get(k, 0.0) + float(v))  # noqa: E731
        add("_tokens", mask.sum().item())
        add("entropy", core.masked_sum(entropy.detach(), mask).item())
        if mb.ref_logprobs is None:
            return
        kl_mask = mask if mb.ref_rows is None else mask * mb.ref_rows.unsqueeze(1)  # (n, T)
        kl = core.kl_estimate(logp.detach(), mb.ref_logprobs, "k3")
        add("_kl_tokens", kl_mask.sum().item())
        add("kl", core.masked_sum(kl, kl_mask).item())
        if mb.ref_rows is not None:  # sums over the measured answers for the estimate's standard error (core.ratio_estimate)
            y, n = core.masked_sum(kl, kl_mask, dim=-1)[mb.ref_rows], kl_mask.sum(-1)[mb.ref_rows]  # (m,) per answer
            for k, v in (("_kl_rows", len(y)), ("_rows", len(mb)), ("_kl_yy", (y * y).sum()), ("_kl_yn", (y * n).sum()), ("_kl_nn", (n * n).sum())):
                add(k, v)

    # ---- checkpointing ------------------------------------------------------ #

    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "step_count": self.step_count}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.step_count = state.get("step_count", 0)
