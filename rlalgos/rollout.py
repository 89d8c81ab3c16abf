"""Sampling: turn (policy, prompts, G, sampling settings) into one :class:`Rollout`.

The rollout never knows which algorithm will consume it. It records everything
any of them needs: token ids and masks, truncation flags, the log-probs the
sampling policy gave its own tokens, the reference model's log-probs, and the
rewards with their per-function breakdown.

With a small vocabulary (the whole batch's logits within
:data:`~rlalgos.engine.forward.AUTO_CHUNK_LOGITS`) the reference pass also keeps its
full logits, so that the exact KL(pi || pi_ref) is measured in the pass that sees the
sampling policy's logits anyway: the rollout's own no-grad pass when it records
``old_logprobs`` (``ro.diagnostics.old_kl_exact``), or else the update's first pass
(``ro.diagnostics.ref_logits``).
No extra forward pass, no random number drawn.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Sequence

import torch

from .engine.diagnostics import subsample_rows
from .engine.forward import batched_stats, logits_fit
from .record import Diagnostics, Rollout, completion_mask_from_ids, decode_completions
from .engine.sampler import SamplingConfig, generate, stop_token_ids
from .tasks import RewardSet, reward_columns


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
    ref_sample: int = 0,
    sampler=None,
    rollout_logprobs: bool = False,
) -> Rollout:
    """Sample ``group_size`` completions for every row and score them.

    rows: task rows (each with ``prompt`` and the reward columns such as ``answer``)
    old_logprobs: record the sampling policy's log-probs (algorithms that update
        more than once per rollout need them; one forward pass without grad).
    ref_model: if given, also record its log-probs (for KL), and with a small
        vocabulary what the exact KL needs (see the module docstring).
    ref_sample: > 0: the reference's log-probs only on that many rows, evenly spread
        over the groups (``ro.diagnostics.ref_rows`` says which; the others hold 0): enough for a
        logged KL estimate, never for a KL the algorithm trains on. 0: every row.
    sampler: the model that samples, if not ``policy`` (a lower-precision
        :class:`~rlalgos.engine.precision.SamplingCopy`'s model, synced); ``policy``
        still scores (``old_logprobs``): the trainer's recompute.
    rollout_logprobs: also record the sampler's own log-probs of its tokens
        (``ro.rollout_logprobs``, (N, T): its precision, temperature and top-p).
    """
    sampling = sampling or SamplingConfig()
    t0 = time.perf_counter()
    sampled = generate(
        sampler if sampler is not None else policy,
        tokenizer,
        [r["prompt"] for r in rows],
        sampling,
        greedy=greedy,
        n=group_size,
        return_logprobs=rollout_logprobs,
    )
    prompt_ids, prompt_mask, completion_ids = sampled[:3]
    rows = [r for r in rows for _ in range(group_size)]  # each prompt G times, adjacent (as generate returns them)
    prompts = [r["prompt"] for r in rows]
    stop = stop_token_ids(policy, tokenizer)  # the same stop ids the sampler stopped on
    mask, truncated = completion_mask_from_ids(completion_ids, stop)
    completion_ids = torch.where(mask.bool(), completion_ids, torch.full_like(completion_ids, tokenizer.pad_token_id))
    t1 = time.perf_counter()
    texts = decode_completions(tokenizer, completion_ids, mask, stop)
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
        group_size=group_size,
        temperature=sampling.temperature,
        correct_key=correct_key,
        pad_token_id=tokenizer.pad_token_id,
        rollout_logprobs=sampled[3] * mask if rollout_logprobs else None,
    ).trimmed()  # drop the columns after every answer ended
    score = dict(
        batch_size=sampling.score_batch_size, logits_chunk=sampling.logits_chunk, autocast_dtype=sampling.autocast_dtype
    )
    ref, diag, ref_logits = {}, {}, None
    keep = ref_model is not None and logits_fit(
        ref_model, ro.completion_ids.numel()
    )  # the reference's logits are cheap to keep
    if ref_model is not None and 0 < ref_sample < len(ro):  # a logged KL estimate: the reference pass on a few rows
        idx = subsample_rows(len(ro), ref_sample).to(device)  # (m,)
        sub = batched_stats(ref_model, ro.select(idx), keep_logits=keep, **score)
        ref["ref_logprobs"] = torch.zeros_like(ro.completion_mask)  # (N, T), 0 on the rows not measured
        ref["ref_logprobs"][idx] = sub["logprobs"]
        if "logits" in sub:
            ref_logits = sub["logits"].new_zeros(
                *ro.completion_ids.shape, sub["logits"].shape[-1]
            )  # (N, T, V), 0 on the rows not measured
            ref_logits[idx] = sub["logits"]
        diag["ref_rows"] = torch.zeros(len(ro), dtype=torch.bool, device=device).index_fill_(0, idx, True)  # (N,)
    elif ref_model is not None:
        out = batched_stats(ref_model, ro, keep_logits=keep, **score)
        ref["ref_logprobs"], ref_logits = out["logprobs"], out.get("logits")  # (N, T), (N, T, V) or None
    old = {}
    if old_logprobs:  # the sampling policy's pass, and with the reference's logits the exact KL in it
        out = batched_stats(policy, ro, with_entropy=True, ref_logits=ref_logits, **score)
        old["old_logprobs"] = out["logprobs"]  # (N, T)
        diag.update(old_entropy=out["entropy"], old_kl_exact=out.get("kl_exact"))  # (N, T) each
    elif ref_logits is not None:
        diag["ref_logits"] = ref_logits  # the update's first pass is the sampling policy's: it measures the exact KL
    seconds = {"generate": t1 - t0, "reward": t2 - t1, "logprobs": time.perf_counter() - t2}
    return replace(ro, **old, **ref, diagnostics=Diagnostics(**diag, seconds=seconds))
