"""The tiny model: a character tokenizer, a small Llama config, and one loader for
the shipped checkpoint or any Hugging Face causal LM."""

from __future__ import annotations

import contextlib
import copy
import string
from pathlib import Path

import torch
from torch import nn
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from transformers.utils import logging as _hf_logging

from .config import BASE_MODEL_DIR, DTYPES
from .engine.lora import ADAPTER_CONFIG, load_merged

_hf_logging.disable_progress_bar()  # weight loading/saving bars of a 3 MB model are noise next to the training bar

SPECIAL_TOKENS = {"pad_token": "<pad>", "bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>"}
CHARS = string.digits + string.ascii_letters + string.punctuation + " \n"


def char_tokenizer() -> PreTrainedTokenizerFast:
    """A character-level tokenizer: one token per printable ASCII character.

    It is a real ``PreTrainedTokenizerFast``: ``save_pretrained`` writes it next to
    the model and ``AutoTokenizer.from_pretrained`` loads it back. Encoding adds
    ``<bos>`` in front; decoding joins characters with nothing in between.
    """
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS.values())}
    for ch in CHARS:
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, clean_up_tokenization_spaces=False, padding_side="left", **SPECIAL_TOKENS)
    fast.model_max_length = 256
    return fast


def tiny_config(tokenizer, hidden: int = 128, layers: int = 4, heads: int = 4, intermediate: int = 384, max_positions: int = 128) -> LlamaConfig:
    """A Llama-style config of about 0.86M parameters at the defaults."""
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )


def tiny_model(tokenizer, seed: int = 0, **config_kwargs) -> LlamaForCausalLM:
    """A freshly initialised tiny model (deterministic for a given seed)."""
    torch.manual_seed(seed)
    return LlamaForCausalLM(tiny_config(tokenizer, **config_kwargs))


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` is CUDA when present, else CPU. Asking for CUDA where there is
    none is a ``ValueError`` that says what to do."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N") from None
    if dev.type == "cuda":
        if not torch.backends.cuda.is_built():
            raise ValueError("this torch build has no CUDA; install a CUDA build of torch or use --device cpu")
        if not torch.cuda.is_available():
            raise ValueError("no CUDA device is visible (torch.cuda.is_available() is False); check the driver and CUDA_VISIBLE_DEVICES, or use --device cpu")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"{device} does not exist: {torch.cuda.device_count()} CUDA device(s) visible")
    return dev


PRECISIONS = {
    "float32": (torch.float32, None),
    "bfloat16": (torch.float32, torch.bfloat16),
    "bfloat16-weights": (torch.bfloat16, None),
    "float16-weights": (torch.float16, None),
}
"""``dtype`` name -> (weights dtype, autocast dtype or None); ``auto`` is ``bfloat16`` on CUDA and ``float32`` elsewhere."""


def resolve_precision(dtype: str | torch.dtype | None, device: torch.device) -> tuple[torch.dtype, torch.dtype | None]:
    """``(weights dtype, autocast dtype or None)`` for a ``dtype`` setting (see :class:`rlalgos.config.TrainConfig`'s ``dtype``).

    ``None`` or ``"auto"``: ``bfloat16`` on CUDA, ``float32`` elsewhere. ``"bfloat16"``:
    float32 weights (the optimizer's master copy) with the forward passes under
    ``torch.autocast(dtype=torch.bfloat16)``. ``"float32"``: float32, no autocast.
    ``"bfloat16-weights"`` / ``"float16-weights"``: the weights themselves in that
    dtype, no autocast. A ``torch.dtype``: weights in it, no autocast.
    """
    if isinstance(dtype, torch.dtype):
        return dtype, None
    if dtype is None or dtype == "auto":
        dtype = "bfloat16" if device.type == "cuda" else "float32"
    if dtype not in PRECISIONS:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    return PRECISIONS[dtype]


def set_autocast(model: nn.Module, dtype: torch.dtype | None) -> nn.Module:
    """Make rlalgos run ``model``'s forward passes (sampling, scoring, the update) under
    ``torch.autocast(dtype=dtype)``; ``None``: without autocast. Returns ``model``."""
    model.rlalgos_autocast = dtype
    return model


def autocast_dtype(model: nn.Module) -> torch.dtype | None:
    """The autocast dtype :func:`set_autocast` gave ``model`` (``None``: no autocast)."""
    return getattr(model, "rlalgos_autocast", None)


def autocast(model: nn.Module):
    """The context rlalgos runs ``model``'s forward passes in: ``torch.autocast`` on the
    model's device in the dtype :func:`set_autocast` gave it, or nothing."""
    dtype = autocast_dtype(model)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(next(model.parameters()).device.type, dtype=dtype)


def load_policy(name_or_path: str | Path | None = None, device: str | torch.device = "auto", dtype: str | torch.dtype | None = None):
    """Load a causal LM and its tokenizer: the shipped base model by default, or
    any Hugging Face model by hub name or local path.

    ``device="auto"`` picks CUDA when present, else CPU; ``dtype`` ``None`` or
    ``"auto"`` is float32 weights with bf16 autocast on CUDA and float32 on CPU (see
    :func:`resolve_precision`; the autocast is recorded with :func:`set_autocast`).
    A folder of LoRA adapters (a ``--lora-rank`` run's checkpoint) loads the base
    model it names with the adapters merged in (:func:`rlalgos.engine.lora.load_merged`).
    Returns ``(model, tokenizer)``; the tokenizer pads on the left (for batched
    generation) and has a pad token (EOS if the model has none).
    """
    path = Path(name_or_path) if name_or_path is not None else BASE_MODEL_DIR
    if name_or_path is None and not (path / "config.json").exists():
        raise FileNotFoundError(f"no base model in {path}; run `rlalgos sft` to build it")
    if path.is_dir() and not (path / "config.json").is_file() and (path / ADAPTER_CONFIG).is_file():  # a LoRA run's checkpoint
        return load_merged(path, device, dtype)
    if path.is_dir() and not (path / "config.json").is_file():
        raise FileNotFoundError(f"no config.json in {path}; give a folder written by save_pretrained (config, weights and tokenizer)")
    if path.exists() and not path.is_dir():
        raise FileNotFoundError(f"{path} is a file; give the folder that holds config.json (or a hub name)")
    src = str(path) if path.exists() else str(name_or_path)
    dev = resolve_device(device)
    dtype, compute = resolve_precision(dtype, dev)  # weights, autocast
    try:
        tokenizer = AutoTokenizer.from_pretrained(src)
        model = AutoModelForCausalLM.from_pretrained(src, dtype=dtype)
    except OSError as e:  # a missing file, or a hub name that cannot be fetched (no network, unknown name)
        where = "" if path.exists() else "; for a hub name with no network, download it first and pass the local folder"
        raise FileNotFoundError(f"cannot load a model from {src!r}: {str(e).splitlines()[0]}{where}") from None
    except Exception as e:  # a corrupt weights file, a config transformers cannot read, ...
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(f"cannot load a model from {src!r}: {msg}; re-save it (or run `rlalgos sft` for the base model)") from None
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return set_autocast(model.to(dev), compute), tokenizer


def frozen_copy(model: nn.Module) -> nn.Module:
    """A frozen copy in eval mode (the reference policy)."""
    ref = copy.deepcopy(model).eval()
    ref.requires_grad_(False)
    return ref


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
