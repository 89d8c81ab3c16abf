"""The rollout record: one batch of sampled completions with everything any
algorithm needs (token ids and masks, truncation flags, sampling-time and
reference log-probs, rewards and their parts). Algorithms read it and never
write to it; the sampler (:mod:`rlalgos.rollout`) fills it.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from typing import Sequence

import torch
import torch.nn.functional as F


def pad_cat(tensors: Sequence[torch.Tensor], left: bool, value) -> torch.Tensor:
    """Concatenate (n_i, L_i, ...) tensors along dim 0, padding each to the longest L
    on the left (prompts) or the right (completions) with ``value``."""
    width = max(t.shape[1] for t in tensors)
    pad = lambda t: (0, 0) * (t.dim() - 2) + ((width - t.shape[1], 0) if left else (0, width - t.shape[1]))  # noqa: E731  (F.pad counts from the last dim)
    return torch.cat([F.pad(t, pad(t), value=value) for t in tensors])


def id_tensor(ids: int | Sequence[int], device=None) -> torch.Tensor:
    """One token id or a list of them (the stop ids) as a 1-D long tensor."""
    return torch.as_tensor(list(ids) if isinstance(ids, (list, tuple)) else [ids], dtype=torch.long, device=device)


def completion_mask_from_ids(completion_ids: torch.Tensor, eos_token_id: int | Sequence[int]):
    """Mask up to and including the first EOS (any of the ids in ``eos_token_id``),
    and which rows never emit one.

    completion_ids: (N, T); returns (mask (N, T) float, truncated (N,) bool)
    """
    is_eos = torch.isin(completion_ids, id_tensor(eos_token_id, completion_ids.device))  # (N, T)
    has_eos = is_eos.any(dim=1)  # (N,)
    T = completion_ids.shape[1]
    first = torch.where(has_eos, is_eos.int().argmax(dim=1), torch.full_like(has_eos, T, dtype=torch.long))  # (N,)
    pos = torch.arange(T, device=completion_ids.device).unsqueeze(0)  # (1, T)
    mask = (pos <= first.unsqueeze(1)) & (pos < T)
    return mask.float(), ~has_eos


def decode_completions(
    tokenizer, completion_ids: torch.Tensor, mask: torch.Tensor, eos_token_id: int | Sequence[int]
) -> list[str]:
    """The text of each completion for the reward functions: its tokens before the
    stop token (the stop token itself, and everything after it, left out; special
    tokens skipped).

    completion_ids, mask: (N, T) with ``mask`` from :func:`completion_mask_from_ids`."""
    body = mask.bool() & ~torch.isin(completion_ids, id_tensor(eos_token_id, completion_ids.device))  # (N, T)
    return tokenizer.batch_decode(
        [row[keep].tolist() for row, keep in zip(completion_ids, body)], skip_special_tokens=True
    )


PAD_ID = "pad_token_id"
"""A per-token field padded with the rollout's own ``pad_token_id`` (token ids)."""


def per_token(columns: str, pad=0.0, default=MISSING):
    """A field with one column per ``prompt`` token ((N, P), left-padded) or per ``completion``
    token ((N, T, ...), right-padded), padded with ``pad`` (:data:`PAD_ID`: the rollout's
    ``pad_token_id``). :meth:`Rollout.select` picks its rows, :meth:`Rollout.trimmed` cuts it and
    :meth:`Rollout.concat` re-pads it (None unless every part has it), so a new one is declared here once."""
    return field(default=default, metadata={"columns": columns, "pad": pad})


def per_row(absent=None, default=MISSING):
    """A field with one entry per answer: an (N, ...) tensor, an (N,) list, or a dict of (N,)
    tensors. :meth:`Rollout.select` picks its rows and :meth:`Rollout.concat` joins them; a part
    that lacks it (None) joins as ``absent`` on each of its rows, or, with ``absent`` None, makes
    the join None."""
    return field(default=default, metadata={"rows": True, "absent": absent})


def _pick(v, idx: torch.Tensor, il: list[int]):
    """Rows ``idx`` of a per-row or per-token value (tensor, list, or dict of tensors)."""
    if isinstance(v, torch.Tensor):
        return v[idx]
    if isinstance(v, list):
        return [v[i] for i in il]
    return {k: t[idx] for k, t in v.items()}


def _select(rec, idx: torch.Tensor, il: list[int]):
    """``rec`` with rows ``idx`` of every per-row and per-token field, its nested records' too."""
    out = {}
    for f in fields(rec):
        v = getattr(rec, f.name)
        if v is not None and ("columns" in f.metadata or "rows" in f.metadata):
            out[f.name] = _pick(v, idx, il)
        elif is_dataclass(v):
            out[f.name] = _select(v, idx, il)
    return replace(rec, **out)


def _cut(rec, P: int, T: int):
    """``rec`` with every per-token field cut to its last ``P`` prompt or first ``T`` completion columns."""
    out = {}
    for f in fields(rec):
        v = getattr(rec, f.name)
        if v is not None and "columns" in f.metadata:
            out[f.name] = v[:, -P:] if f.metadata["columns"] == "prompt" else v[:, :T]
        elif is_dataclass(v):
            out[f.name] = _cut(v, P, T)
    return replace(rec, **out)


def _join_rows(vals: list, sizes: list[int], absent):
    """Per-row values of several parts joined (see :func:`per_row`)."""
    have = [v for v in vals if v is not None]
    if len(have) < len(vals) and (absent is None or not have):
        return None
    first = have[0]
    if isinstance(first, list):
        return sum(vals, [])
    if isinstance(first, dict):
        return {k: torch.cat([v[k] for v in vals]) for k in first}
    fill = lambda n: torch.full((n,), absent, dtype=first.dtype, device=first.device)  # noqa: E731
    return torch.cat([v if v is not None else fill(n) for v, n in zip(vals, sizes)])


def _join(parts: list, sizes: list[int], pad_id: int):
    """Records of several parts joined row-wise: per-token fields re-padded, per-row fields joined,
    ``summed`` fields (dicts of numbers) added up, nested records joined alike; the rest is the first part's."""
    out = {}
    for f in fields(parts[0]):
        vals = [getattr(p, f.name) for p in parts]
        if "columns" in f.metadata:
            pad = pad_id if f.metadata["pad"] == PAD_ID else f.metadata["pad"]
            out[f.name] = (
                None if any(v is None for v in vals) else pad_cat(vals, f.metadata["columns"] == "prompt", pad)
            )
        elif "rows" in f.metadata:
            out[f.name] = _join_rows(vals, sizes, f.metadata["absent"])
        elif f.metadata.get("summed"):
            out[f.name] = {k: sum(v.get(k, 0.0) for v in vals) for k in vals[0]}
        elif is_dataclass(vals[0]):
            out[f.name] = _join(vals, sizes, pad_id)
    return replace(parts[0], **out)


@dataclass(frozen=True)
class Diagnostics:
    """What a rollout records to measure the run, never to train it: no loss reads these. The
    update's metrics do (:class:`rlalgos.engine.update.SamplingStats`, the entropy probe), and the
    update's first pass measures the exact KL with ``ref_logits``. All optional, row-aligned with
    the rollout."""

    old_entropy: torch.Tensor | None = per_token(
        "completion", default=None
    )  # (N, T) sampling policy's entropy, recorded with old_logprobs
    old_kl_exact: torch.Tensor | None = per_token(
        "completion", default=None
    )  # (N, T) exact KL(sampling policy || reference) per position, recorded with old_logprobs (small vocabularies)
    ref_logits: torch.Tensor | None = per_token(
        "completion", default=None
    )  # (N, T, V) the reference's logits, kept (small vocabularies) for the update's first pass to measure the exact KL
    ref_rows: torch.Tensor | None = per_row(
        absent=True, default=None
    )  # (N,) bool: the rows ref_logprobs holds (a KL measured on a subsample, only logged); None = every row
    seconds: dict = field(
        default_factory=dict, metadata={"summed": True}
    )  # wall time of each rollout stage: generate, reward, logprobs


@dataclass(frozen=True)
class Rollout:
    """One batch of ``N = prompts x G`` sampled completions, grouped by prompt.

    Rows ``g*G .. g*G+G-1`` share prompt ``g``. Prompts are left-padded,
    completions right-padded, so ``cat(prompt_ids, completion_ids)`` is the full
    sequence with the completion's first token at column ``P``. What is recorded
    only to measure the run is in ``diagnostics``.
    """

    prompts: list[str] = per_row()  # (N,) prompt text, repeated for each of its G completions
    completions: list[str] = per_row()  # (N,) decoded completion text (special tokens removed)
    rows: list[dict] = per_row()  # (N,) the task rows (answers and other reward columns)
    prompt_ids: torch.Tensor = per_token("prompt", PAD_ID)  # (N, P) left-padded
    prompt_mask: torch.Tensor = per_token("prompt", 0)  # (N, P) 1 on real prompt tokens
    completion_ids: torch.Tensor = per_token("completion", PAD_ID)  # (N, T) right-padded
    completion_mask: torch.Tensor = per_token(
        "completion", 0
    )  # (N, T) float, 1 up to and including the stop token (any stop id)
    truncated: torch.Tensor = per_row()  # (N,) bool: no stop token within max_new_tokens
    old_logprobs: torch.Tensor | None = per_token("completion")  # (N, T) log-probs under the sampling policy
    ref_logprobs: torch.Tensor | None = per_token("completion")  # (N, T) log-probs under the reference model
    rewards: torch.Tensor = per_row()  # (N,) weighted total reward
    reward_parts: dict[str, torch.Tensor] = per_row()  # name -> (N,) each reward function's raw value
    group_size: int
    temperature: float = 1.0  # the temperature the completions were sampled at (log-probs use the same)
    correct_key: str = "correct"
    rollout_logprobs: torch.Tensor | None = per_token(
        "completion", default=None
    )  # (N, T) the sampler's own log-probs of its tokens (its dtype, temperature and top-p): the mismatch and its correction
    pad_token_id: int = 0
    diagnostics: Diagnostics = field(default_factory=Diagnostics)  # measurements only; no loss reads them

    def __len__(self) -> int:
        return self.completion_ids.shape[0]

    @property
    def num_groups(self) -> int:
        return len(self) // self.group_size

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
        return _select(self, idx, idx.tolist())

    def trimmed(self) -> "Rollout":
        """The same rows without all-padding columns: prompt columns on the left
        that no row uses, completion columns on the right after every row ended."""
        P = max(int(self.prompt_mask.sum(-1).max().item()), 1) if len(self) else 1
        T = max(int(self.completion_mask.sum(-1).max().item()), 1) if len(self) else 1
        if P == self.prompt_ids.shape[1] and T == self.completion_ids.shape[1]:
            return self
        return _cut(self, P, T)

    @staticmethod
    def concat(parts: Sequence["Rollout"]) -> "Rollout":
        """Join rollouts (e.g. the extra rounds of dynamic sampling), re-padding to
        the longest prompt (left) and completion (right)."""
        parts = [p for p in parts if len(p)]
        if len(parts) == 1:
            return parts[0]
        return _join(parts, [len(p) for p in parts], parts[0].pad_token_id)

    def with_rewards(self, rewards: torch.Tensor) -> "Rollout":
        return replace(self, rewards=rewards)

    def group_std(self) -> torch.Tensor:
        """(N / G,) standard deviation of the reward inside each group."""
        return self.rewards.view(-1, self.group_size).std(dim=1, unbiased=False)

    def stats(self) -> dict:
        """The metrics a rollout gives before any update (see the metric vocabulary)."""
        return row_stats(self.rewards, self.correct, self.reward_parts, self.lengths, self.truncated, self.group_size)


def row_stats(
    rewards: torch.Tensor,
    correct: torch.Tensor,
    reward_parts: dict[str, torch.Tensor],
    lengths: torch.Tensor,
    truncated: torch.Tensor,
    group_size: int,
) -> dict:
    """:meth:`Rollout.stats` from its per-answer columns, all (N,) (several processes' rows joined, too)."""
    stats = {
        "reward_mean": rewards.mean().item(),
        "reward_std": rewards.std().item() if len(rewards) > 1 else 0.0,
        "accuracy": correct.mean().item(),
        "completion_len": lengths.mean().item(),
        "truncated_frac": truncated.float().mean().item(),
        "zero_std_frac": (rewards.view(-1, group_size).std(dim=1, unbiased=False) == 0).float().mean().item(),
    }
    right = correct > 0
    for name, rows in (("completion_len_correct", right), ("completion_len_wrong", ~right)):
        if rows.any():  # absent (NaN in the table) on a step with no such answer
            stats[name] = lengths[rows].float().mean().item()
    for k, v in reward_parts.items():
        stats[f"reward/{k}"] = v.mean().item()
    return stats
