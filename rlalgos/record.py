"""The rollout record: one batch of sampled completions with everything any
algorithm needs (token ids and masks, truncation flags, sampling-time and
reference log-probs, rewards and their parts). Algorithms read it and never
write to it; the sampler (:mod:`rlalgos.rollout`) fills it.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
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
    ``pad_token_id``). :meth:`Rollout.trimmed` cuts and :meth:`Rollout.concat` re-pads every
    such field, so a new one is declared here once."""
    return field(default=default, metadata={"columns": columns, "pad": pad})


def token_fields(ro: "Rollout", kind: str) -> list:
    """The fields of ``ro`` with one column per ``kind`` token (``prompt`` or ``completion``)."""
    return [f for f in fields(ro) if f.metadata.get("columns") == kind]


@dataclass(frozen=True)
class Rollout:
    """One batch of ``N = prompts x G`` sampled completions, grouped by prompt.

    Rows ``g*G .. g*G+G-1`` share prompt ``g``. Prompts are left-padded,
    completions right-padded, so ``cat(prompt_ids, completion_ids)`` is the full
    sequence with the completion's first token at column ``P``.
    """

    prompts: list[str]  # (N,) prompt text, repeated for each of its G completions
    completions: list[str]  # (N,) decoded completion text (special tokens removed)
    rows: list[dict]  # (N,) the task rows (answers and other reward columns)
    prompt_ids: torch.Tensor = per_token("prompt", PAD_ID)  # (N, P) left-padded
    prompt_mask: torch.Tensor = per_token("prompt", 0)  # (N, P) 1 on real prompt tokens
    completion_ids: torch.Tensor = per_token("completion", PAD_ID)  # (N, T) right-padded
    completion_mask: torch.Tensor = per_token(
        "completion", 0
    )  # (N, T) float, 1 up to and including the stop token (any stop id)
    truncated: torch.Tensor  # (N,) bool: no stop token within max_new_tokens
    old_logprobs: torch.Tensor | None = per_token("completion")  # (N, T) log-probs under the sampling policy
    ref_logprobs: torch.Tensor | None = per_token("completion")  # (N, T) log-probs under the reference model
    rewards: torch.Tensor  # (N,) weighted total reward
    reward_parts: dict[str, torch.Tensor]  # name -> (N,) each reward function's raw value
    group_size: int
    temperature: float = 1.0  # the temperature the completions were sampled at (log-probs use the same)
    correct_key: str = "correct"
    old_entropy: torch.Tensor | None = per_token(
        "completion", default=None
    )  # (N, T) sampling policy's entropy, recorded with old_logprobs
    ref_rows: torch.Tensor | None = (
        None  # (N,) bool: the rows ref_logprobs holds (a KL measured on a subsample); None = every row
    )
    old_kl_exact: torch.Tensor | None = per_token(
        "completion", default=None
    )  # (N, T) exact KL(sampling policy || reference) per position, recorded with old_logprobs (small vocabularies)
    rollout_logprobs: torch.Tensor | None = per_token(
        "completion", default=None
    )  # (N, T) the sampler's own log-probs of its tokens (its dtype, temperature and top-p), when a mismatch is measured
    ref_logits: torch.Tensor | None = per_token(
        "completion", default=None
    )  # (N, T, V) the reference's logits, kept (small vocabularies) for the update's first pass to measure the exact KL
    pad_token_id: int = 0
    seconds: dict = field(default_factory=dict)  # wall time of each rollout stage: generate, reward, logprobs

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
        il = idx.tolist()
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, torch.Tensor):
                out[f.name] = v[idx]
            elif isinstance(v, list):
                out[f.name] = [v[i] for i in il]
            elif f.name == "reward_parts":
                out[f.name] = {k: t[idx] for k, t in v.items()}
            else:
                out[f.name] = v
        return Rollout(**out)

    def trimmed(self) -> "Rollout":
        """The same rows without all-padding columns: prompt columns on the left
        that no row uses, completion columns on the right after every row ended."""
        P = max(int(self.prompt_mask.sum(-1).max().item()), 1) if len(self) else 1
        T = max(int(self.completion_mask.sum(-1).max().item()), 1) if len(self) else 1
        if P == self.prompt_ids.shape[1] and T == self.completion_ids.shape[1]:
            return self
        cut = {f.name: getattr(self, f.name)[:, -P:] for f in token_fields(self, "prompt")}
        cut.update(
            {
                f.name: getattr(self, f.name)[:, :T]
                for f in token_fields(self, "completion")
                if getattr(self, f.name) is not None
            }
        )
        return replace(self, **cut)

    @staticmethod
    def concat(parts: Sequence["Rollout"]) -> "Rollout":
        """Join rollouts (e.g. the extra rounds of dynamic sampling), re-padding to
        the longest prompt (left) and completion (right)."""
        parts = [p for p in parts if len(p)]
        if len(parts) == 1:
            return parts[0]
        pad_id = parts[0].pad_token_id

        def cat(f):  # a per-token field: every part's, re-padded; None unless every part has it
            ts = [getattr(p, f.name) for p in parts]
            pad = pad_id if f.metadata["pad"] == PAD_ID else f.metadata["pad"]
            return None if any(t is None for t in ts) else pad_cat(ts, f.metadata["columns"] == "prompt", pad)

        return Rollout(
            prompts=sum((p.prompts for p in parts), []),
            completions=sum((p.completions for p in parts), []),
            rows=sum((p.rows for p in parts), []),
            **{f.name: cat(f) for f in token_fields(parts[0], "prompt") + token_fields(parts[0], "completion")},
            truncated=torch.cat([p.truncated for p in parts]),
            ref_rows=None
            if all(p.ref_rows is None for p in parts)
            else torch.cat(
                [p.ref_rows if p.ref_rows is not None else torch.ones(len(p), dtype=torch.bool) for p in parts]
            ),
            rewards=torch.cat([p.rewards for p in parts]),
            reward_parts={k: torch.cat([p.reward_parts[k] for p in parts]) for k in parts[0].reward_parts},
            group_size=parts[0].group_size,
            temperature=parts[0].temperature,
            correct_key=parts[0].correct_key,
            pad_token_id=pad_id,
            seconds={k: sum(p.seconds.get(k, 0.0) for p in parts) for k in parts[0].seconds},
        )

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
