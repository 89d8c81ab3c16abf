"""Sampling: turn (policy, prompts, G, sampling settings) into one :class:`Rollout`.

The rollout never knows which algorithm will consume it. It records everything
any of them needs: token ids and masks, truncation flags, the log-probs the
sampling policy gave its own tokens, the reference model's log-probs, and the
rewards with their per-function breakdown.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field, fields, replace
from typing import Sequence

import torch
import torch.nn.functional as F
from transformers import DynamicCache, GenerationConfig, LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

from . import core
from .tasks import RewardSet, reward_columns


def pad_cat(tensors: Sequence[torch.Tensor], left: bool, value) -> torch.Tensor:
    """Concatenate (n_i, L_i) tensors along dim 0, padding each to the longest L
    on the left (prompts) or the right (completions) with ``value``."""
    width = max(t.shape[1] for t in tensors)
    return torch.cat([F.pad(t, (width - t.shape[1], 0) if left else (0, width - t.shape[1]), value=value) for t in tensors])


@dataclass
class Rollout:
    """One batch of ``N = prompts x G`` sampled completions, grouped by prompt.

    Rows ``g*G .. g*G+G-1`` share prompt ``g``. Prompts are left-padded,
    completions right-padded, so ``cat(prompt_ids, completion_ids)`` is the full
    sequence with the completion's first token at column ``P``.
    """

    prompts: list[str]  # (N,) prompt text, repeated for each of its G completions
    completions: list[str]  # (N,) decoded completion text (special tokens removed)
    rows: list[dict]  # (N,) the task rows (answers and other reward columns)
    prompt_ids: torch.Tensor  # (N, P) left-padded
    prompt_mask: torch.Tensor  # (N, P) 1 on real prompt tokens
    completion_ids: torch.Tensor  # (N, T) right-padded
    completion_mask: torch.Tensor  # (N, T) float, 1 up to and including EOS
    truncated: torch.Tensor  # (N,) bool: no EOS within max_new_tokens
    old_logprobs: torch.Tensor | None  # (N, T) log-probs under the sampling policy
    ref_logprobs: torch.Tensor | None  # (N, T) log-probs under the reference model
    rewards: torch.Tensor  # (N,) weighted total reward
    reward_parts: dict[str, torch.Tensor]  # name -> (N,) each reward function's raw value
    group_index: torch.Tensor  # (N,) long, which prompt of this batch each row answers
    group_size: int
    temperature: float = 1.0
    correct_key: str = "correct"
    old_entropy: torch.Tensor | None = None  # (N, T) sampling policy's entropy, recorded with old_logprobs
    extras: dict = field(default_factory=dict)  # algorithm-owned per-row tensors (e.g. values)
    seconds: dict = field(default_factory=dict)  # wall time of each rollout stage: generate, reward, logprobs

    def __len__(self) -> int:
        return self.completion_ids.shape[0]

    @property
    def num_groups(self) -> int:
        return len(self) // self.group_size

    @property
    def input_ids(self) -> torch.Tensor:  # (N, P + T)
        return torch.cat([self.prompt_ids, self.completion_ids], dim=1)

    @property
    def attention_mask(self) -> torch.Tensor:  # (N, P + T)
        return torch.cat([self.prompt_mask, self.completion_mask.to(self.prompt_mask.dtype)], dim=1)

    @property
    def lengths(self) -> torch.Tensor:  # (N,) completion lengths in tokens (incl. EOS)
        return self.completion_mask.sum(-1)

    def length_key(self) -> torch.Tensor:
        """(N,) sort key for :func:`length_buckets`: completion length, then prompt length
        (a bucket is as wide as its longest prompt plus its longest completion)."""
        P = self.prompt_mask.shape[1]
        return self.completion_mask.sum(-1).long() * (P + 1) + self.prompt_mask.sum(-1).long()

    @property
    def correct(self) -> torch.Tensor:  # (N,) 1.0 where the answer is right
        return self.reward_parts[self.correct_key]

    def select(self, idx: torch.Tensor | Sequence[int]) -> "Rollout":
        """The rows ``idx`` as a new Rollout (minibatches, filtered groups).
        ``group_size`` is kept; select whole groups if you need grouping."""
        idx = torch.as_tensor(idx, dtype=torch.long)
        il = idx.tolist()
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, torch.Tensor):
                out[f.name] = v[idx]
            elif isinstance(v, list):
                out[f.name] = [v[i] for i in il]
            elif isinstance(v, dict):  # per-row tensors are indexed, anything else is shared
                out[f.name] = {k: t[idx] if isinstance(t, torch.Tensor) and t.dim() and t.shape[0] == len(self) else t for k, t in v.items()}
            else:
                out[f.name] = v
        return Rollout(**out)

    def trimmed(self) -> "Rollout":
        """The same rows without all-padding columns: prompt columns on the left
        that no row uses, completion columns on the right after every row ended.
        Per-token extras (N, T) are cut like the completion."""
        P = max(int(self.prompt_mask.sum(-1).max().item()), 1) if len(self) else 1
        T = max(int(self.completion_mask.sum(-1).max().item()), 1) if len(self) else 1
        if P == self.prompt_ids.shape[1] and T == self.completion_ids.shape[1]:
            return self
        T0 = self.completion_ids.shape[1]
        per_token = lambda t: t[:, :T] if isinstance(t, torch.Tensor) and t.dim() == 2 and t.shape == (len(self), T0) else t  # noqa: E731
        return replace(
            self,
            prompt_ids=self.prompt_ids[:, -P:],
            prompt_mask=self.prompt_mask[:, -P:],
            completion_ids=self.completion_ids[:, :T],
            completion_mask=self.completion_mask[:, :T],
            old_logprobs=per_token(self.old_logprobs),
            ref_logprobs=per_token(self.ref_logprobs),
            old_entropy=per_token(self.old_entropy),
            extras={k: per_token(v) for k, v in self.extras.items()},
        )

    @staticmethod
    def concat(parts: Sequence["Rollout"]) -> "Rollout":
        """Join rollouts (e.g. the extra rounds of dynamic sampling), re-padding to
        the longest prompt (left) and completion (right) and renumbering groups."""
        parts = [p for p in parts if len(p)]
        if len(parts) == 1:
            return parts[0]
        pad_id = int(parts[0].extras.get("pad_token_id", 0))

        def cat(name, left, value):
            ts = [getattr(p, name) for p in parts]
            return None if ts[0] is None else pad_cat(ts, left, value)

        offset, groups = 0, []
        for p in parts:
            groups.append(p.group_index - p.group_index.min() + offset if len(p) else p.group_index)
            offset = int(groups[-1].max()) + 1
        return Rollout(
            prompts=sum((p.prompts for p in parts), []),
            completions=sum((p.completions for p in parts), []),
            rows=sum((p.rows for p in parts), []),
            prompt_ids=cat("prompt_ids", True, pad_id),
            prompt_mask=cat("prompt_mask", True, 0),
            completion_ids=cat("completion_ids", False, pad_id),
            completion_mask=cat("completion_mask", False, 0),
            truncated=torch.cat([p.truncated for p in parts]),
            old_logprobs=cat("old_logprobs", False, 0.0),
            old_entropy=cat("old_entropy", False, 0.0),
            ref_logprobs=cat("ref_logprobs", False, 0.0),
            rewards=torch.cat([p.rewards for p in parts]),
            reward_parts={k: torch.cat([p.reward_parts[k] for p in parts]) for k in parts[0].reward_parts},
            group_index=torch.cat(groups),
            group_size=parts[0].group_size,
            temperature=parts[0].temperature,
            correct_key=parts[0].correct_key,
            extras={k: v for k, v in parts[0].extras.items() if not isinstance(v, torch.Tensor)},
            seconds={k: sum(p.seconds.get(k, 0.0) for p in parts) for k in parts[0].seconds},
        )

    def with_rewards(self, rewards: torch.Tensor) -> "Rollout":
        return replace(self, rewards=rewards)

    def group_std(self) -> torch.Tensor:
        """(N / G,) standard deviation of the reward inside each group."""
        return self.rewards.view(-1, self.group_size).std(dim=1, unbiased=False)

    def stats(self) -> dict:
        """The metrics a rollout gives before any update (see the metric vocabulary)."""
        stats = {
            "reward_mean": self.rewards.mean().item(),
            "reward_std": self.rewards.std().item() if len(self) > 1 else 0.0,
            "accuracy": self.correct.mean().item(),
            "completion_len": self.lengths.mean().item(),
            "truncated_frac": self.truncated.float().mean().item(),
            "zero_std_frac": (self.group_std() == 0).float().mean().item(),
        }
        for k, v in self.reward_parts.items():
            stats[f"reward/{k}"] = v.mean().item()
        return stats


@dataclass
class SamplingConfig:
    """How completions are sampled."""

    max_new_tokens: int = 48
    """Longest completion; one that has not emitted EOS by then is *truncated*."""
    temperature: float = 1.0
    """Softmax temperature; log-probs are taken under the same temperature."""
    top_p: float = 1.0
    """Nucleus sampling mass (1.0 = the full distribution, which the maths assumes)."""
    batch_size: int = 512
    """Sequences per sampling call and per no-grad scoring pass (lower it for big models)."""
    sampler: str = "compact"
    """``compact``: rlalgos' cached sampling loop that drops finished answers from the batch (faster);
    ``hf``: transformers' ``generate``. Same distribution either way."""


def completion_mask_from_ids(completion_ids: torch.Tensor, eos_token_id: int | Sequence[int]):
    """Mask up to and including the first EOS, and which rows never emit one.

    completion_ids: (N, T); returns (mask (N, T) float, truncated (N,) bool)
    """
    eos_ids = torch.as_tensor(eos_token_id if isinstance(eos_token_id, (list, tuple)) else [eos_token_id])
    is_eos = torch.isin(completion_ids, eos_ids.to(completion_ids.device))  # (N, T)
    has_eos = is_eos.any(dim=1)  # (N,)
    T = completion_ids.shape[1]
    first = torch.where(has_eos, is_eos.int().argmax(dim=1), torch.full_like(has_eos, T, dtype=torch.long))  # (N,)
    pos = torch.arange(T, device=completion_ids.device).unsqueeze(0)  # (1, T)
    mask = (pos <= first.unsqueeze(1)) & (pos < T)
    return mask.float(), ~has_eos


def sequence_inputs(prompt_ids, prompt_mask, completion_ids, completion_mask):
    """Full-sequence model inputs: ids, attention mask and position ids counted
    from the first real token (as ``generate`` does for left padding).

    prompt_*: (N, P); completion_*: (N, T); returns three (N, P + T) tensors.
    """
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)  # (N, P+T)
    attn = torch.cat([prompt_mask, completion_mask.to(prompt_mask.dtype)], dim=1)  # (N, P+T)
    position_ids = (attn.long().cumsum(-1) - 1).clamp(min=0)  # (N, P+T)
    return input_ids, attn, position_ids


def forward_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask, temperature: float = 1.0, with_entropy: bool = False, with_hidden: bool = False, entropy_grad: bool = False):
    """Run ``model`` on prompt + completion and return the log-prob of each completion token.

    Position ids are counted from the first real (non-pad) token, exactly as
    ``generate`` does for left-padded prompts, so the numbers match what the
    sampler saw. Only the last ``T + 1`` positions go through the LM head.

    prompt_ids, prompt_mask: (N, P); completion_ids, completion_mask: (N, T)
    returns: dict with ``logprobs`` (N, T), and ``entropy`` (N, T; detached unless
    ``entropy_grad``) if asked,
    ``hidden`` (N, T, H) last-layer states at the positions that predict each
    completion token if asked (what a value head reads).
    """
    T = completion_ids.shape[1]
    input_ids, attn, position_ids = sequence_inputs(prompt_ids, prompt_mask, completion_ids, completion_mask)
    out = model(input_ids=input_ids, attention_mask=attn, position_ids=position_ids, logits_to_keep=T + 1, output_hidden_states=with_hidden, use_cache=False)
    logits = out.logits[:, :-1]  # (N, T, V): position P-1+t predicts completion token t
    res = {"logprobs": core.token_logprobs(logits, completion_ids, temperature)}
    if with_entropy or entropy_grad:
        with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
            res["entropy"] = core.entropy_from_logits(logits if entropy_grad else logits.detach(), temperature)
    if with_hidden:
        res["hidden"] = out.hidden_states[-1][:, -T - 1 : -1]  # (N, T, H)
    return res


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


@torch.no_grad()
def batched_logprobs(model, ro: "Rollout", batch_size: int = 512, with_entropy: bool = False, buckets: int = 4):
    """:func:`forward_logprobs` over a whole rollout without grad, in ``buckets``
    runs of similar length (each at most ``batch_size`` rows) trimmed of padding.
    Returns (N, T) log-probs (0 on padding), or ``(logprobs, entropy)`` with ``with_entropy``."""
    was_training = model.training
    model.eval()
    logp = torch.zeros(ro.completion_ids.shape, dtype=torch.float32, device=ro.completion_ids.device)  # (N, T)
    ent = torch.zeros_like(logp)
    for idx in length_buckets(ro.length_key(), buckets, batch_size):
        mb = ro.select(idx).trimmed()
        out = forward_logprobs(model, mb.prompt_ids, mb.prompt_mask, mb.completion_ids, mb.completion_mask, ro.temperature, with_entropy=with_entropy)
        T, m = mb.completion_ids.shape[1], mb.completion_mask  # padding positions stay 0
        logp[idx, :T] = out["logprobs"].float() * m
        if with_entropy:
            ent[idx, :T] = out["entropy"].float() * m
    model.train(was_training)
    return (logp, ent) if with_entropy else logp


def _cache_argument(model) -> str:
    """The name under which this transformers version takes the KV cache."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


@torch.no_grad()
def sample_completions(model, input_ids, attention_mask, max_new_tokens: int, eos_token_id, pad_token_id: int, temperature: float = 1.0, top_p: float = 1.0, greedy: bool = False, n: int = 1, compact_frac: float = 0.0625):
    """Sample ``n`` completions per prompt with the KV cache, like
    ``model.generate(do_sample=True, top_k=0, num_return_sequences=n)``, in less time:

    * each prompt goes through the model once; its cache is then copied ``n`` times;
    * once ``compact_frac`` of the rows still in the batch have emitted EOS, those
      rows (and their cache) leave the batch, so the late steps only pay for the
      completions still being written.

    The distribution of every token is the same as ``generate``'s (the
    temperature and top-p warpers are transformers' own).

    input_ids, attention_mask: (B, P) left-padded prompts
    returns: (B * n, max_new_tokens) completion ids; row ``b * n + j`` is sample
    ``j`` of prompt ``b``; everything after a row's EOS is ``pad_token_id``.
    """
    eos = torch.as_tensor(eos_token_id if isinstance(eos_token_id, (list, tuple)) else [eos_token_id], device=input_ids.device)
    warp = LogitsProcessorList()
    if not greedy and temperature != 1.0:
        warp.append(TemperatureLogitsWarper(temperature))
    if not greedy and top_p < 1.0:
        warp.append(TopPLogitsWarper(top_p))
    cache = DynamicCache(config=model.config)  # filled in place by every call (sliding-window layers where the model has them)
    cache_kw = {_cache_argument(model): cache, "use_cache": True}
    position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)  # (B, P) as generate counts them
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, logits_to_keep=1, **cache_kw)
    logits = out.logits[:, -1]  # (B, V)
    if n > 1:  # one prefill per prompt, then n copies of its cache
        cache.batch_repeat_interleave(n)
        logits, attention_mask, position_ids = (t.repeat_interleave(n, dim=0) for t in (logits, attention_mask, position_ids))
    N = logits.shape[0]
    tokens = torch.full((N, max_new_tokens), pad_token_id, dtype=input_ids.dtype, device=input_ids.device)  # (N, T)
    rows = torch.arange(N, device=input_ids.device)  # which output row each batch row writes
    next_pos = position_ids[:, -1] + 1  # (N,)
    for t in range(max_new_tokens):
        if greedy:
            nxt = logits.argmax(-1)
        else:
            probs = torch.softmax(warp(None, logits.float()), dim=-1)  # (n_live, V)
            nxt = torch.multinomial(probs, 1).squeeze(1)
        tokens[rows, t] = nxt
        live = ~torch.isin(nxt, eos)  # (n_live,)
        n_live = int(live.sum())
        if n_live == 0 or t == max_new_tokens - 1:
            break
        if len(rows) - n_live >= max(1, int(compact_frac * len(rows))):  # drop finished rows
            keep = live.nonzero().squeeze(1)
            cache.batch_select_indices(keep)
            rows, attention_mask, next_pos, nxt = rows[keep], attention_mask[keep], next_pos[keep], nxt[keep]
        attention_mask = torch.cat([attention_mask, attention_mask.new_ones(len(rows), 1)], dim=1)
        out = model(input_ids=nxt.unsqueeze(1), attention_mask=attention_mask, position_ids=next_pos.unsqueeze(1), **cache_kw)
        logits = out.logits[:, -1]
        next_pos = next_pos + 1
    # a row that finished earlier but stayed in the batch kept sampling: blank what follows its EOS
    mask, _ = completion_mask_from_ids(tokens, eos_token_id)
    return torch.where(mask.bool(), tokens, torch.full_like(tokens, pad_token_id))


@torch.no_grad()
def generate(model, tokenizer, prompts: Sequence[str], sampling: SamplingConfig, greedy: bool = False, n: int = 1):
    """Batched sampling with the KV cache: ``n`` completions for every prompt.
    Returns (prompt_ids, prompt_mask, completion_ids) with ``len(prompts) * n``
    rows (the n samples of a prompt adjacent), prompts left-padded and
    completions right-padded with the pad token. ``sampling.sampler`` picks
    :func:`sample_completions` (``compact``) or transformers' ``generate`` (``hf``)."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    chunks = []
    per_call = max(1, sampling.batch_size // n)  # prompts per call, so a call holds <= batch_size sequences
    for i in range(0, len(prompts), per_call):
        enc = tokenizer(list(prompts[i : i + per_call]), return_tensors="pt", padding=True).to(device)
        if sampling.sampler == "hf":
            ids, mask = enc["input_ids"].repeat_interleave(n, 0), enc["attention_mask"].repeat_interleave(n, 0)
            gen_cfg = GenerationConfig(
                do_sample=not greedy, temperature=None if greedy else sampling.temperature, top_p=None if greedy else sampling.top_p,
                top_k=None if greedy else 0, max_new_tokens=sampling.max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
            )
            completion = model.generate(input_ids=ids, attention_mask=mask, generation_config=gen_cfg)[:, ids.shape[1] :]
        else:
            completion = sample_completions(model, enc["input_ids"], enc["attention_mask"], sampling.max_new_tokens, tokenizer.eos_token_id, tokenizer.pad_token_id,
                                            sampling.temperature, sampling.top_p, greedy=greedy, n=n)
        chunks.append((enc["input_ids"].repeat_interleave(n, 0), enc["attention_mask"].repeat_interleave(n, 0), completion))
    model.train(was_training)
    pad = tokenizer.pad_token_id
    ids, masks, completions = zip(*chunks)
    return pad_cat(ids, True, pad), pad_cat(masks, True, 0), pad_cat(completions, False, pad)


def rollout(
    policy,
    tokenizer,
    rows: Sequence[dict],
    group_size: int,
    rewards: RewardSet,
    sampling: SamplingConfig | None = None,
    ref_model=None,
    old_logprobs: bool = True,
    correct_key: str = "correct",
    greedy: bool = False,
) -> Rollout:
    """Sample ``group_size`` completions for every row and score them.

    rows: task rows (each with ``prompt`` and the reward columns such as ``answer``)
    old_logprobs: record the sampling policy's log-probs (algorithms that update
        more than once per rollout need them; one forward pass without grad).
    ref_model: if given, also record its log-probs (for KL).
    """
    sampling = sampling or SamplingConfig()
    t0 = time.perf_counter()
    prompt_ids, prompt_mask, completion_ids = generate(policy, tokenizer, [r["prompt"] for r in rows], sampling, greedy=greedy, n=group_size)
    rows = [r for r in rows for _ in range(group_size)]  # each prompt G times, adjacent (as generate returns them)
    prompts = [r["prompt"] for r in rows]
    mask, truncated = completion_mask_from_ids(completion_ids, tokenizer.eos_token_id)
    completion_ids = torch.where(mask.bool(), completion_ids, torch.full_like(completion_ids, tokenizer.pad_token_id))
    t1 = time.perf_counter()
    texts = tokenizer.batch_decode(completion_ids, skip_special_tokens=True)
    total, parts = rewards(prompts, texts, reward_columns(rows))
    t2 = time.perf_counter()
    device = completion_ids.device
    ro = Rollout(
        prompts=prompts,
        completions=texts,
        rows=list(rows),
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        completion_ids=completion_ids,
        completion_mask=mask,
        truncated=truncated,
        old_logprobs=None,
        ref_logprobs=None,
        rewards=torch.tensor(total, dtype=torch.float32, device=device),
        reward_parts={k: torch.tensor(v, dtype=torch.float32, device=device) for k, v in parts.items()},
        group_index=torch.arange(len(rows) // group_size, device=device).repeat_interleave(group_size),
        group_size=group_size,
        temperature=sampling.temperature,
        correct_key=correct_key,
        extras={"pad_token_id": tokenizer.pad_token_id},
    ).trimmed()  # drop the columns after every answer ended
    if old_logprobs:
        ro.old_logprobs, ro.old_entropy = batched_logprobs(policy, ro, sampling.batch_size, with_entropy=True)
    if ref_model is not None:
        ro.ref_logprobs = batched_logprobs(ref_model, ro, sampling.batch_size)
    ro.seconds = {"generate": t1 - t0, "reward": t2 - t1, "logprobs": time.perf_counter() - t2}
    return ro
