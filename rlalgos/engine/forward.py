"""Forward passes: the log-prob (and entropy) the model gives each completion
token, with grad (the update) or without (old and reference log-probs).

Memory. The LM head turns each position's hidden state (H numbers) into V
logits, and V is large: Qwen's 151,936 tokens make one 64 x 256 batch's fp32
logits 10 GB, before the softmax copies and the backward. ``logits_chunk``
bounds that: the transformer runs on the whole batch, then the LM head, the
log-softmax and the entropy run ``logits_chunk`` tokens at a time, so at most
one chunk's (logits_chunk, V) logits exist at once; with grad each chunk's
logits are recomputed in the backward instead of kept (``torch.utils.checkpoint``).
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint

from .. import core
from .buckets import length_buckets
from .precision import autocast
from ..record import Rollout


def position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counted from the first real (non-pad) token, as ``generate`` counts
    them for left-padded prompts. attention_mask: (N, L); returns (N, L)."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def sequence_inputs(prompt_ids, prompt_mask, completion_ids, completion_mask):
    """Full-sequence model inputs: ids, attention mask and position ids counted
    from the first real token (as ``generate`` does for left padding).

    prompt_*: (N, P); completion_*: (N, T); returns three (N, P + T) tensors.
    """
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)  # (N, P+T)
    attn = torch.cat([prompt_mask, completion_mask.to(prompt_mask.dtype)], dim=1)  # (N, P+T)
    return input_ids, attn, position_ids(attn)  # (N, P+T) each


def logits_stats(
    logits,
    tokens,
    temperature: float = 1.0,
    with_entropy: bool = False,
    entropy_grad: bool = False,
    ref_logits=None,
    keep_logits: bool = False,
) -> dict:
    """``logprobs`` of ``tokens`` under ``softmax(logits / temperature)`` and, if asked,
    the ``entropy`` (detached unless ``entropy_grad``), ``kl_exact`` (the exact
    KL(this model || the model of ``ref_logits``) at each position, detached:
    :func:`rlalgos.core.exact_kl`) and the ``logits`` themselves (detached, float32).

    logits, ref_logits: (..., V); tokens: (...); returns a dict of (...) tensors (``logits``: (..., V)).
    """
    res = {"logprobs": core.token_logprobs(logits, tokens, temperature)}
    if with_entropy or entropy_grad:
        with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
            res["entropy"] = core.entropy_from_logits(logits if entropy_grad else logits.detach(), temperature)
    if ref_logits is not None:
        with torch.no_grad():
            res["kl_exact"] = core.exact_kl(logits.detach(), ref_logits, temperature)
    if keep_logits:
        res["logits"] = logits.detach().float()
    return res


def chunked_logits_stats(
    head,
    hidden,
    tokens,
    chunk: int,
    temperature: float = 1.0,
    with_entropy: bool = False,
    entropy_grad: bool = False,
    ref_logits=None,
    keep_logits: bool = False,
) -> dict:
    """:func:`logits_stats` of ``head(hidden)`` computed ``chunk`` tokens at a time.

    The rows and positions are flattened into one list of N*T tokens and cut into
    runs of ``chunk``; each run goes through the LM head and the log-softmax on its
    own, so only one (chunk, V) block of logits exists at any time. With grad,
    ``checkpoint`` keeps only each chunk's input (chunk, H) and its outputs, and
    recomputes that chunk's logits in the backward: the gradient is the same, the
    memory is one chunk's, the cost one more LM-head matmul per chunk.

    head: the LM head (``model.get_output_embeddings()``), (..., H) -> (..., V)
    hidden: (N, T, H) final hidden states at the positions that predict ``tokens``
    tokens: (N, T); ref_logits: (N, T, V) or None
    returns a dict of (N, T) tensors (``logits``: (N, T, V)), as :func:`logits_stats`.
    """
    N, T, H = hidden.shape
    h, tok = hidden.reshape(N * T, H), tokens.reshape(N * T)  # (N*T, H), (N*T,)
    refs = (
        ref_logits.reshape(N * T, -1).split(chunk) if ref_logits is not None else [None] * len(tok.split(chunk))
    )  # (n, V) each

    def one_chunk(h_c, tok_c, ref_c):  # (n, H), (n,), (n, V) or None -> dict of (n,)
        return logits_stats(head(h_c), tok_c, temperature, with_entropy, entropy_grad, ref_c, keep_logits)

    chunks = zip(h.split(chunk), tok.split(chunk), refs)  # ((n, H), (n,), (n, V)) triples, n <= chunk
    if torch.is_grad_enabled():  # autograd keeps (n, H) per chunk, not (n, V); the LM head draws no random numbers
        parts = [
            checkpoint(one_chunk, h_c, tok_c, ref_c, use_reentrant=False, preserve_rng_state=False)
            for h_c, tok_c, ref_c in chunks
        ]
    else:
        parts = [one_chunk(h_c, tok_c, ref_c) for h_c, tok_c, ref_c in chunks]
    return {k: torch.cat([p[k] for p in parts]).view(N, T, *parts[0][k].shape[1:]) for k in parts[0]}


# Causal LMs whose forward changes the logits after ``lm_head`` (Gemma 2/3 soft-capping,
# Cohere's logit_scale, Granite's logits_scaling): the chunked path, which applies
# ``lm_head`` alone, would miss that step, so they always take the unchunked one.
LOGIT_POSTPROCESSING = ("final_logit_softcapping", "logit_scale", "logits_scaling")


def plain_lm_head(model) -> bool:
    """Whether ``model``'s logits are exactly ``model.get_output_embeddings()(last hidden state)``."""
    return all(getattr(model.config, k, None) in (None, 1.0) for k in LOGIT_POSTPROCESSING)


AUTO_CHUNK_LOGITS = 2**25
"""With ``logits_chunk = -1`` (auto), a chunk holds this many logits: 128 MB in fp32."""


def vocab_size(model) -> int:
    """Rows of ``model``'s LM head: the V of its (..., V) logits."""
    return model.get_output_embeddings().weight.shape[0]


def chunk_tokens(model, logits_chunk: int) -> int:
    """Tokens per LM-head chunk: ``logits_chunk`` itself when >= 0 (0 = no chunking), or
    with -1 (auto) as many tokens as make :data:`AUTO_CHUNK_LOGITS` logits: ~220 at
    Qwen's 151,936-token vocabulary, while the shipped model's whole batches fit in one
    chunk (so it takes the plain path, bit for bit as without chunking)."""
    if logits_chunk >= 0:
        return logits_chunk
    return max(1, AUTO_CHUNK_LOGITS // vocab_size(model))


def logits_fit(model, n_tokens: int) -> bool:
    """Whether ``n_tokens`` positions' full-vocabulary logits are cheap to keep: at most
    :data:`AUTO_CHUNK_LOGITS` of them (128 MB in float32). The shipped model's whole
    batch is ~1% of that; Qwen's 151,936-token vocabulary fills it at ~220 tokens."""
    return n_tokens * vocab_size(model) <= AUTO_CHUNK_LOGITS


def forward_logprobs(
    model,
    prompt_ids,
    prompt_mask,
    completion_ids,
    completion_mask,
    temperature: float = 1.0,
    with_entropy: bool = False,
    entropy_grad: bool = False,
    logits_chunk: int = 0,
    autocast_dtype: torch.dtype | None = None,
    ref_logits=None,
    keep_logits: bool = False,
):
    """Run ``model`` on prompt + completion and return the log-prob of each completion token.

    Position ids are counted from the first real (non-pad) token, exactly as
    ``generate`` does for left-padded prompts, so the numbers match what the
    sampler saw. Only the last ``T + 1`` positions go through the LM head.

    ``logits_chunk`` > 0 and fewer than the batch's N*T tokens: the LM head runs
    that many tokens at a time (:func:`chunked_logits_stats`): the same numbers up
    to float rounding, at most one chunk's logits in memory. 0: the whole (N, T, V) at once;
    -1: auto (:func:`chunk_tokens`). ``autocast_dtype``: run the model under
    ``torch.autocast`` in that dtype (:mod:`rlalgos.engine.precision`); the log-probs
    come out float32 either way.

    ``ref_logits`` (N, T, V), another model's logits at the same positions: also return
    ``kl_exact`` (N, T), the exact KL(model || that model) per position, detached
    (:func:`rlalgos.core.exact_kl`). ``keep_logits``: also return the ``logits``
    (N, T, V), detached float32.

    prompt_ids, prompt_mask: (N, P); completion_ids, completion_mask: (N, T)
    returns: dict with ``logprobs`` (N, T), and ``entropy`` (N, T; detached unless
    ``entropy_grad``), ``kl_exact``, ``logits`` if asked.
    """
    N, T = completion_ids.shape
    chunk = chunk_tokens(model, logits_chunk)
    extra = dict(ref_logits=ref_logits, keep_logits=keep_logits)
    with autocast(model, autocast_dtype):  # mixed precision, if any (TrainConfig.dtype)
        if 0 < chunk < N * T and plain_lm_head(model):
            # the transformer without its LM head: (N, P+T, H) hidden states, H << V
            input_ids, attn, position_ids = sequence_inputs(prompt_ids, prompt_mask, completion_ids, completion_mask)
            hidden = model.base_model(
                input_ids=input_ids, attention_mask=attn, position_ids=position_ids, use_cache=False
            ).last_hidden_state
            return chunked_logits_stats(
                model.get_output_embeddings(),
                hidden[:, -T - 1 : -1],
                completion_ids,
                chunk,
                temperature,
                with_entropy,
                entropy_grad,
                **extra,
            )
        logits = completion_logits(model, prompt_ids, prompt_mask, completion_ids, completion_mask)  # (N, T, V)
        return logits_stats(logits, completion_ids, temperature, with_entropy, entropy_grad, **extra)


def completion_logits(model, prompt_ids, prompt_mask, completion_ids, completion_mask) -> torch.Tensor:
    """The full next-token logits at every position that predicts a completion token, in
    one unchunked pass (with grad when it is enabled): what :func:`forward_logprobs`
    reduces to log-probs, for measurements that need the whole distribution.

    prompt_*: (N, P); completion_*: (N, T); returns (N, T, V): position P-1+t predicts completion token t
    """
    T = completion_ids.shape[1]
    input_ids, attn, position_ids = sequence_inputs(prompt_ids, prompt_mask, completion_ids, completion_mask)
    return model(
        input_ids=input_ids, attention_mask=attn, position_ids=position_ids, logits_to_keep=T + 1, use_cache=False
    ).logits[:, :-1]


def head_on_completion(
    trunk, head, prompt_ids, prompt_mask, completion_ids, completion_mask, autocast_dtype: torch.dtype | None = None
) -> torch.Tensor:
    """``head`` on ``trunk``'s hidden state at each position that predicts a completion
    token (PPO's critic: a scalar head on a transformer without its LM head), under
    ``autocast_dtype``. prompt_*: (N, P); completion_*: (N, T); returns (N, T) float32."""
    T = completion_ids.shape[1]
    input_ids, attn, positions = sequence_inputs(prompt_ids, prompt_mask, completion_ids, completion_mask)
    with autocast(trunk, autocast_dtype):
        h = trunk(
            input_ids=input_ids, attention_mask=attn, position_ids=positions, use_cache=False
        ).last_hidden_state  # (N, P+T, H)
        return head(h[:, -T - 1 : -1]).squeeze(-1).float()  # (N, T)


@torch.no_grad()
def batched_stats(
    model,
    ro: "Rollout",
    batch_size: int = 512,
    with_entropy: bool = False,
    buckets: int = 4,
    logits_chunk: int = 0,
    autocast_dtype: torch.dtype | None = None,
    ref_logits: torch.Tensor | None = None,
    keep_logits: bool = False,
) -> dict:
    """:func:`forward_logprobs` over a whole rollout without grad, in ``buckets``
    runs of similar length (each at most ``batch_size`` rows) trimmed of padding,
    the LM head ``logits_chunk`` tokens at a time (0 = a whole run at once), under ``autocast_dtype``.

    ref_logits: (N, T, V) another model's logits on the rollout: also ``kl_exact``.
    returns: dict of (N, T) tensors, 0 on padding: ``logprobs``, and ``entropy``,
    ``kl_exact`` if asked; ``logits`` (N, T, V) with ``keep_logits`` (0 on padding).
    """
    was_training = model.training
    model.eval()
    zeros = lambda *v: torch.zeros(*ro.completion_ids.shape, *v, dtype=torch.float32, device=ro.completion_ids.device)  # noqa: E731
    res = {
        "logprobs": zeros(),
        **({"entropy": zeros()} if with_entropy else {}),
    }  # (N, T) each, also for an empty rollout
    for idx in length_buckets(ro.length_key(), buckets, batch_size):
        mb = ro.select(idx).trimmed()
        T, m = mb.completion_ids.shape[1], mb.completion_mask  # padding positions stay 0
        out = forward_logprobs(
            model,
            mb.prompt_ids,
            mb.prompt_mask,
            mb.completion_ids,
            mb.completion_mask,
            ro.temperature,
            with_entropy=with_entropy,
            logits_chunk=logits_chunk,
            autocast_dtype=autocast_dtype,
            ref_logits=None if ref_logits is None else ref_logits[idx, :T],
            keep_logits=keep_logits,
        )
        for k, v in out.items():
            if k not in res:
                res[k] = zeros(*v.shape[2:])  # (N, T) or (N, T, V)
            res[k][idx, :T] = v.float() * m.view(*m.shape, *[1] * (v.dim() - 2))
    model.train(was_training)
    return res


def batched_logprobs(
    model,
    ro: "Rollout",
    batch_size: int = 512,
    with_entropy: bool = False,
    buckets: int = 4,
    logits_chunk: int = 0,
    autocast_dtype: torch.dtype | None = None,
):
    """:func:`batched_stats`'s (N, T) log-probs (0 on padding), or ``(logprobs, entropy)`` with ``with_entropy``."""
    out = batched_stats(model, ro, batch_size, with_entropy, buckets, logits_chunk, autocast_dtype)
    return (out["logprobs"], out["entropy"]) if with_entropy else out["logprobs"]
