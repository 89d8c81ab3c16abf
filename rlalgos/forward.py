"""Forward passes: the log-prob (and entropy) the model gives each completion
token, with grad (the update) or without (old and reference log-probs)."""

from __future__ import annotations

import torch

from . import core
from .buckets import length_buckets
from .record import Rollout


def sequence_inputs(prompt_ids, prompt_mask, completion_ids, completion_mask):
    """Full-sequence model inputs: ids, attention mask and position ids counted
    from the first real token (as ``generate`` does for left padding).

    prompt_*: (N, P); completion_*: (N, T); returns three (N, P + T) tensors.
    """
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)  # (N, P+T)
    attn = torch.cat([prompt_mask, completion_mask.to(prompt_mask.dtype)], dim=1)  # (N, P+T)
    position_ids = (attn.long().cumsum(-1) - 1).clamp(min=0)  # (N, P+T)
    return input_ids, attn, position_ids


def forward_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask, temperature: float = 1.0, with_entropy: bool = False, entropy_grad: bool = False):
    """Run ``model`` on prompt + completion and return the log-prob of each completion token.

    Position ids are counted from the first real (non-pad) token, exactly as
    ``generate`` does for left-padded prompts, so the numbers match what the
    sampler saw. Only the last ``T + 1`` positions go through the LM head.

    prompt_ids, prompt_mask: (N, P); completion_ids, completion_mask: (N, T)
    returns: dict with ``logprobs`` (N, T), and ``entropy`` (N, T; detached unless
    ``entropy_grad``) if asked.
    """
    T = completion_ids.shape[1]
    input_ids, attn, position_ids = sequence_inputs(prompt_ids, prompt_mask, completion_ids, completion_mask)
    out = model(input_ids=input_ids, attention_mask=attn, position_ids=position_ids, logits_to_keep=T + 1, use_cache=False)
    logits = out.logits[:, :-1]  # (N, T, V): position P-1+t predicts completion token t
    res = {"logprobs": core.token_logprobs(logits, completion_ids, temperature)}
    if with_entropy or entropy_grad:
        with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
            res["entropy"] = core.entropy_from_logits(logits if entropy_grad else logits.detach(), temperature)
    return res


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
