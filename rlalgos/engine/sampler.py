"""Sampling completions: rlalgos' compact KV-cache loop, or transformers' ``generate``."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Sequence

import torch
from transformers import DynamicCache, GenerationConfig, LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

from .forward import position_ids as count_positions
from .precision import autocast
from ..record import completion_mask_from_ids, id_tensor, pad_cat


@dataclass
class SamplingConfig:
    """How completions are sampled and scored. The fields that a run sets mean what
    :class:`rlalgos.config.TrainConfig`'s fields of the same names mean (their one
    documentation: ``rlalgos train --help``); ``max_new_tokens`` 0 there means the
    task's own budget, here it is the budget itself."""

    max_new_tokens: int = 48
    temperature: float = 1.0
    top_p: float = 1.0
    batch_size: int = 512
    """Sequences per sampling call (the run does not set it)."""
    score_batch_size: int = 512
    chat_template: bool = False
    logits_chunk: int = -1
    autocast_dtype: torch.dtype | None = None
    """The autocast half of TrainConfig's ``dtype`` (:mod:`rlalgos.engine.precision`): run the sampling and scoring forward passes under ``torch.autocast`` in this dtype; ``None``: no autocast."""
    sampler: str = "compact"


def _cache_argument(model) -> str:
    """The name under which this transformers version takes the KV cache."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def stop_token_ids(model, tokenizer) -> list[int]:
    """Every token id that ends an answer: the tokenizer's EOS and each id in the
    model's ``generation_config.eos_token_id`` (an int or a list: Qwen2.5-Instruct
    stops on ``<|im_end|>`` and ``<|endoftext|>``). Sampling, the completion mask,
    lengths, truncation flags and the decoded text all use this one set."""
    extra = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = [tokenizer.eos_token_id] + (list(extra) if isinstance(extra, (list, tuple)) else [extra])
    return sorted({int(i) for i in ids if i is not None})


def check_chat_template(tokenizer) -> None:
    """A ``ValueError`` saying what to change when the tokenizer has no chat template."""
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            "chat_template is on but the tokenizer has no chat template; drop --chat-template, or use an instruct model whose tokenizer has one"
        )


def encode_prompts(tokenizer, prompts: Sequence[str], chat_template: bool = False):
    """Tokenise prompts for generation (left-padded). With ``chat_template`` each
    prompt becomes one user turn followed by the assistant's turn, and no special
    tokens are added on top of what the template writes (as TRL does)."""
    if not chat_template:
        return tokenizer(list(prompts), return_tensors="pt", padding=True)
    check_chat_template(tokenizer)
    texts = [
        tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
        for p in prompts
    ]
    return tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)


@torch.no_grad()
def sample_completions(
    model,
    input_ids,
    attention_mask,
    max_new_tokens: int,
    eos_token_id,
    pad_token_id: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    greedy: bool = False,
    n: int = 1,
    compact_frac: float = 0.0625,
    return_logprobs: bool = False,
):
    """Sample ``n`` completions per prompt with the KV cache, like
    ``model.generate(do_sample=True, top_k=0, num_return_sequences=n)``, in less time:

    * each prompt goes through the model once; its cache is then copied ``n`` times;
    * once ``compact_frac`` of the rows still in the batch have emitted EOS, those
      rows (and their cache) leave the batch, so the late steps only pay for the
      completions still being written.

    The distribution of every token is the same as ``generate``'s (the
    temperature and top-p warpers are transformers' own).

    input_ids, attention_mask: (B, P) left-padded prompts
    eos_token_id: the id, or list of ids, that ends an answer (:func:`stop_token_ids`)
    returns: (B * n, max_new_tokens) completion ids; row ``b * n + j`` is sample
    ``j`` of prompt ``b``; everything after a row's EOS is ``pad_token_id``. With
    ``return_logprobs`` also (B * n, max_new_tokens) float32: each sampled token's
    log-prob under the distribution it was drawn from (temperature and top-p applied,
    in the model's own precision: vLLM's ``processed_logprobs``), 0 after EOS.
    """
    eos = id_tensor(eos_token_id, input_ids.device)
    warp = LogitsProcessorList()
    if not greedy and temperature != 1.0:
        warp.append(TemperatureLogitsWarper(temperature))
    if not greedy and top_p < 1.0:
        warp.append(TopPLogitsWarper(top_p))
    cache = DynamicCache(
        config=model.config
    )  # filled in place by every call (sliding-window layers where the model has them)
    cache_kw = {_cache_argument(model): cache, "use_cache": True}
    position_ids = count_positions(attention_mask)  # (B, P) as generate counts them
    out = model(
        input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, logits_to_keep=1, **cache_kw
    )
    logits = out.logits[:, -1]  # (B, V)
    if n > 1:  # one prefill per prompt, then n copies of its cache
        cache.batch_repeat_interleave(n)
        logits, attention_mask, position_ids = (
            t.repeat_interleave(n, dim=0) for t in (logits, attention_mask, position_ids)
        )
    N = logits.shape[0]
    tokens = torch.full((N, max_new_tokens), pad_token_id, dtype=input_ids.dtype, device=input_ids.device)  # (N, T)
    logps = torch.zeros(N, max_new_tokens, device=input_ids.device) if return_logprobs else None  # (N, T)
    rows = torch.arange(N, device=input_ids.device)  # which output row each batch row writes
    next_pos = position_ids[:, -1] + 1  # (N,)
    for t in range(max_new_tokens):
        if greedy:
            nxt = logits.argmax(-1)
        else:
            z = warp(None, logits.float())  # (n_live, V)
            probs = torch.softmax(z, dim=-1)
            nxt = torch.multinomial(probs, 1).squeeze(1)
            if logps is not None:
                logps[rows, t] = torch.log_softmax(z, dim=-1).gather(1, nxt.unsqueeze(1)).squeeze(1)
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
        out = model(
            input_ids=nxt.unsqueeze(1), attention_mask=attention_mask, position_ids=next_pos.unsqueeze(1), **cache_kw
        )
        logits = out.logits[:, -1]
        next_pos = next_pos + 1
    # a row that finished earlier but stayed in the batch kept sampling: blank what follows its EOS
    mask, _ = completion_mask_from_ids(tokens, eos_token_id)
    tokens = torch.where(mask.bool(), tokens, torch.full_like(tokens, pad_token_id))
    return tokens if logps is None else (tokens, logps * mask)


@torch.no_grad()
def generate(
    model,
    tokenizer,
    prompts: Sequence[str],
    sampling: SamplingConfig,
    greedy: bool = False,
    n: int = 1,
    return_logprobs: bool = False,
):
    """Batched sampling with the KV cache: ``n`` completions for every prompt.
    Returns (prompt_ids, prompt_mask, completion_ids) with ``len(prompts) * n``
    rows (the n samples of a prompt adjacent), prompts left-padded and
    completions right-padded with the pad token after their stop token
    (:func:`stop_token_ids`). ``sampling.sampler`` picks
    :func:`sample_completions` (``compact``) or transformers' ``generate`` (``hf``).
    With ``return_logprobs`` a fourth tensor like ``completion_ids``: the sampler's own
    log-prob of each token (:func:`sample_completions`; ``hf``: from generate's processed scores)."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    stop = stop_token_ids(model, tokenizer)
    chunks = []
    per_call = max(1, sampling.batch_size // n)  # prompts per call, so a call holds <= batch_size sequences
    for i in range(0, len(prompts), per_call):
        enc = encode_prompts(tokenizer, prompts[i : i + per_call], sampling.chat_template).to(device)
        with autocast(model, sampling.autocast_dtype):  # mixed precision, if any (TrainConfig.dtype)
            if sampling.sampler == "hf":
                ids, mask = enc["input_ids"].repeat_interleave(n, 0), enc["attention_mask"].repeat_interleave(n, 0)
                gen_cfg = GenerationConfig(
                    do_sample=not greedy,
                    temperature=None if greedy else sampling.temperature,
                    top_p=None if greedy else sampling.top_p,
                    top_k=None if greedy else 0,
                    max_new_tokens=sampling.max_new_tokens,
                    pad_token_id=tokenizer.pad_token_id,
                    eos_token_id=stop,
                    bos_token_id=tokenizer.bos_token_id,
                    output_scores=return_logprobs,
                    return_dict_in_generate=return_logprobs,
                )
                out = model.generate(input_ids=ids, attention_mask=mask, generation_config=gen_cfg)
                completion = (out.sequences if return_logprobs else out)[:, ids.shape[1] :]
                logps = _processed_logprobs(out.scores, completion, stop) if return_logprobs else None
            else:
                out = sample_completions(
                    model,
                    enc["input_ids"],
                    enc["attention_mask"],
                    sampling.max_new_tokens,
                    stop,
                    tokenizer.pad_token_id,
                    sampling.temperature,
                    sampling.top_p,
                    greedy=greedy,
                    n=n,
                    return_logprobs=return_logprobs,
                )
                completion, logps = out if return_logprobs else (out, None)
        chunks.append(
            (enc["input_ids"].repeat_interleave(n, 0), enc["attention_mask"].repeat_interleave(n, 0), completion, logps)
        )
    model.train(was_training)
    pad = tokenizer.pad_token_id
    ids, masks, completions, logps = zip(*chunks)
    out = pad_cat(ids, True, pad), pad_cat(masks, True, 0), pad_cat(completions, False, pad)
    return (*out, pad_cat(logps, False, 0.0)) if return_logprobs else out


def _processed_logprobs(scores, completion: torch.Tensor, stop) -> torch.Tensor:
    """Each token's log-prob under generate's processed scores (temperature and top-p applied):
    a tuple of T (n, V) tensors and the (n, T) completion; 0 after the stop token."""
    logps = (
        torch.log_softmax(torch.stack(scores, 1).float(), -1).gather(-1, completion.unsqueeze(-1)).squeeze(-1)
    )  # (n, T)
    return torch.where(
        completion_mask_from_ids(completion, stop)[0].bool(), logps, torch.zeros_like(logps)
    )  # a pad after the end may be outside the top-p set: -inf
