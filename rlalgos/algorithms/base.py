"""What every algorithm shares: the optimizer, the minibatch/epoch loop, and the
metrics every row carries. An algorithm subclasses :class:`Algorithm` and writes
two methods, ``advantages`` and ``loss``; the loop here does the rest.

The training loop (``rlalgos.train``) calls, once per step::

    ro, info = algo.collect(sample, num_prompts)   # usually just sample(num_prompts)
    metrics = algo.update(ro)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from .. import core
from ..rollout import Rollout, forward_logprobs, length_buckets


@dataclass
class AlgoConfig:
    """Optimisation settings every algorithm has."""

    lr: float = 1e-4
    """AdamW learning rate of the policy."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Clip the global gradient norm to this (the logged ``grad_norm`` is before clipping)."""
    epochs: int = 1
    """Passes over each rollout. 1 = strictly on-policy: the ratio is exactly 1."""
    minibatches: int = 1
    """Optimizer steps per epoch; the rollout is shuffled and split into this many parts."""
    micro_batch_size: int = 0
    """At most this many sequences per forward/backward (gradient accumulation); 0 = no limit."""
    length_buckets: int = 4
    """Forward/backward passes per minibatch: its rows sorted by length and cut into this many
    runs, each padded only to its own longest row. Same gradient, less padding; 1 = one pass."""
    loss_agg: str = "token-mean"
    """How the per-token loss becomes a scalar: token-mean, seq-mean-token-mean or seq-mean-token-sum-norm."""
    kl_coef: float = 0.0
    """Weight of the KL-to-reference term (what it is added to depends on the algorithm)."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        """Raise ``ValueError`` with one line saying what to change."""
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.weight_decay < 0 or self.max_grad_norm <= 0:
            raise ValueError("weight_decay must be >= 0 and max_grad_norm > 0")
        if self.epochs < 1 or self.minibatches < 1:
            raise ValueError(f"epochs and minibatches must be >= 1, got {self.epochs} and {self.minibatches}")
        if num_sequences % self.minibatches:
            raise ValueError(f"{num_sequences} sequences per step do not split into {self.minibatches} minibatches; pick minibatches dividing prompts_per_step x group_size")
        if self.micro_batch_size < 0:
            raise ValueError("micro_batch_size must be >= 0 (0 = no limit)")
        if self.length_buckets < 1:
            raise ValueError(f"length_buckets must be >= 1, got {self.length_buckets}")
        if self.loss_agg not in core.LOSS_AGG_MODES:
            raise ValueError(f"unknown loss_agg {self.loss_agg!r}; use one of {', '.join(core.LOSS_AGG_MODES)}")
        if self.kl_coef < 0:
            raise ValueError(f"kl_coef must be >= 0, got {self.kl_coef}")


class Algorithm:
    """Base class: owns the policy's optimizer and runs the update loop."""

    name = "base"
    Config = AlgoConfig
    min_group_size = 1

    def __init__(self, policy, cfg: AlgoConfig, ref_model=None, tokenizer=None):
        self.policy, self.cfg, self.ref_model, self.tokenizer = policy, cfg, ref_model, tokenizer
        self.optimizer = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.step_count = 0  # updates done so far
        self.total_steps = 1  # set by the loop
        self.max_new_tokens = 0  # set by the loop: the sampling length limit
        self.temperature = 1.0  # set by the loop: the sampling temperature

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

    def advantages(self, ro: Rollout) -> torch.Tensor:
        """Per-token advantages, (N, T) (or (N, 1) to share one value across an answer)."""
        raise NotImplementedError

    def loss(self, mb: Rollout, out: dict, adv: torch.Tensor, old_logp: torch.Tensor):
        """Scalar loss and metrics for one (micro)batch. ``out`` is :func:`forward_logprobs`'s dict."""
        raise NotImplementedError

    @property
    def max_len(self) -> int | None:
        """``L_max`` of ``seq-mean-token-sum-norm``: the generation budget, the same for every batch."""
        return self.max_new_tokens or None

    def loss_mask(self, mb: Rollout) -> torch.Tensor:
        """Which tokens the loss counts, (N, T): every completion token (DAPO masks some out)."""
        return mb.completion_mask

    # ---- the shared update loop --------------------------------------------- #

    def wants_entropy_grad(self) -> bool:
        """Whether the loss differentiates the entropy (an entropy bonus)."""
        return False

    def forward(self, mb: Rollout, with_entropy: bool) -> dict:
        """The policy's log-probs (and entropy) on a batch, with grad."""
        return forward_logprobs(self.policy, mb.prompt_ids, mb.prompt_mask, mb.completion_ids, mb.completion_mask, mb.temperature, with_entropy=with_entropy, entropy_grad=self.wants_entropy_grad())

    def parameters(self):
        return [p for g in self.optimizer.param_groups for p in g["params"]]

    def update(self, ro: Rollout) -> dict:
        """Advantages once, then ``epochs`` x ``minibatches`` optimizer steps."""
        self.policy.train()
        adv = self.advantages(ro)  # (N, T) or (N, 1)
        N, cfg = len(ro), self.cfg
        logs: dict[str, list[float]] = {}
        first_pass: dict[str, float] = {}
        if ro.old_entropy is not None:  # the rollout recorded the sampling policy: measure before any step
            self._record_sampling_stats(ro, ro.old_logprobs, ro.old_entropy, first_pass)
        loss_tokens = self.loss_mask(ro).sum(-1)  # (N,) tokens each row adds to a token-mean
        lengths = ro.length_key()  # (N,) sort key for the length buckets
        for epoch in range(cfg.epochs):
            order = torch.randperm(N, device=adv.device) if cfg.minibatches > 1 else torch.arange(N, device=adv.device)
            for idx in order.chunk(cfg.minibatches):
                self.optimizer.zero_grad(set_to_none=True)
                mb_tokens = loss_tokens[idx].sum().clamp(min=1e-8)
                finite, mb_logs = True, {}  # every micro-batch loss is finite; metrics weighted like the loss
                for sub in (idx[b] for b in length_buckets(lengths[idx], cfg.length_buckets, cfg.micro_batch_size)):
                    mb = ro.select(sub).trimmed()  # similar lengths, padding columns cut
                    a = adv[sub][:, : mb.completion_ids.shape[1]]  # (n, T') or (n, 1)
                    out = self.forward(mb, with_entropy=(epoch == 0 and ro.old_entropy is None))
                    old = mb.old_logprobs if mb.old_logprobs is not None else out["logprobs"].detach()
                    loss, m = self.loss(mb, out, a, old)
                    # weight of this micro-batch in the minibatch's loss: its share of tokens or of answers
                    w = loss_tokens[sub].sum() / mb_tokens if cfg.loss_agg == "token-mean" else len(sub) / len(idx)
                    (loss * w).backward()
                    m["loss"] = loss.item()
                    finite = finite and math.isfinite(m["loss"])
                    if epoch == 0 and ro.old_entropy is None:  # one update: this pass *is* the sampling policy
                        self._record_sampling_stats(mb, out["logprobs"], out["entropy"], first_pass)
                    for k, v in m.items():  # the weights sum to 1 over the minibatch
                        mb_logs[k] = mb_logs.get(k, 0.0) + float(w) * v
                for k, v in mb_logs.items():
                    logs.setdefault(k, []).append(v)
                grad_norm = torch.nn.utils.clip_grad_norm_(self.parameters(), cfg.max_grad_norm)
                logs.setdefault("grad_norm", []).append(grad_norm.item())
                if finite and torch.isfinite(grad_norm):
                    self.step_optimizer()
                else:  # never let NaN/inf into the weights
                    self.optimizer.zero_grad(set_to_none=True)
                    logs.setdefault("nonfinite", []).append(1.0)
        metrics = {k: float(sum(v) / len(v)) for k, v in logs.items()}
        metrics.update({k: v / max(first_pass.get("_tokens", 1.0), 1.0) for k, v in first_pass.items() if not k.startswith("_")})
        metrics["lr"] = self.optimizer.param_groups[0]["lr"]
        self.step_count += 1
        if "nonfinite" in metrics:
            metrics["nonfinite"] = 1.0
        return metrics

    def step_optimizer(self) -> None:
        self.optimizer.step()

    @torch.no_grad()
    def _record_sampling_stats(self, mb: Rollout, logp: torch.Tensor, entropy: torch.Tensor, acc: dict) -> None:
        """Token-weighted sums of the sampling policy's entropy and k3 KL to the reference."""
        mask = mb.completion_mask
        acc["_tokens"] = acc.get("_tokens", 0.0) + mask.sum().item()
        acc["entropy"] = acc.get("entropy", 0.0) + core.masked_sum(entropy.detach(), mask).item()
        if mb.ref_logprobs is not None:
            kl = core.kl_estimate(logp.detach(), mb.ref_logprobs, "k3")
            acc["kl"] = acc.get("kl", 0.0) + core.masked_sum(kl, mask).item()

    # ---- checkpointing ------------------------------------------------------ #

    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "step_count": self.step_count, "temperature": self.temperature}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.step_count = state.get("step_count", 0)
        self.temperature = state.get("temperature", self.temperature)
