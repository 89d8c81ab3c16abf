"""The tiny model: a character tokenizer, a small Llama config, and one loader for
the shipped checkpoint or any Hugging Face causal LM."""

from __future__ import annotations

import copy
import string
import sys
from pathlib import Path

import torch
from torch import nn
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import (
    AutoModelForCausalLM,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)
from transformers.utils import logging as _hf_logging

from .config import BASE_MODEL_DIR, REWARD_MODEL_DIR
from .engine.lora import ADAPTER_CONFIG, merge_adapters, read_adapter_base
from .engine.precision import resolve_device, resolve_precision

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
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, clean_up_tokenization_spaces=False, padding_side="left", **SPECIAL_TOKENS
    )
    fast.model_max_length = 256
    return fast


def tiny_config(
    tokenizer, hidden: int = 128, layers: int = 4, heads: int = 4, intermediate: int = 384, max_positions: int = 128
) -> LlamaConfig:
    """A Llama-style config of 0.87M parameters (865,920) at the defaults."""
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


def load_policy(
    name_or_path: str | Path | None = None, device: str | torch.device = "auto", dtype: str | torch.dtype | None = None
):
    """Load a causal LM and its tokenizer: the shipped base model by default, or
    any Hugging Face model by hub name or local path.

    ``device="auto"`` picks CUDA when present, else CPU. ``dtype`` is a
    :class:`~rlalgos.config.TrainConfig` ``dtype`` setting or a ``torch.dtype``; it sets
    the weights' dtype only (:func:`rlalgos.engine.precision.resolve_precision`), and
    the training loop runs the forward passes under its autocast half. A folder of
    LoRA adapters (a ``--lora-rank`` run's checkpoint) loads the base model it names
    with the adapters merged in (:func:`rlalgos.engine.lora.merge_adapters`).
    Returns ``(model, tokenizer)``; the tokenizer pads on the left (for batched
    generation) and has a pad token (EOS if the model has none).
    """
    path = Path(name_or_path).expanduser() if name_or_path is not None else BASE_MODEL_DIR
    if name_or_path is None and not (path / "config.json").exists():
        raise FileNotFoundError(f"no base model in {path}; run `rlalgos sft` to build it")
    if (path / "metrics.jsonl").is_file():  # a run folder: its model is the checkpoint inside it
        if not (path / "checkpoint").is_dir():
            raise FileNotFoundError(
                f"{path} is a run folder with no checkpoint/ yet (it saves one every save_every steps and at the end)"
            )
        print(f"rlalgos: {path} is a run folder; loading its checkpoint {path / 'checkpoint'}", file=sys.stderr)
        path = path / "checkpoint"
    elif not path.exists() and (
        path.is_absolute()
        or str(name_or_path).startswith((".", "~"))
        or (path.parent != Path(".") and path.parent.is_dir())
    ):
        raise FileNotFoundError(f"no such folder: {path} (a hub name would be ORG/NAME)")
    if (
        path.is_dir() and not (path / "config.json").is_file() and (path / ADAPTER_CONFIG).is_file()
    ):  # a LoRA run's checkpoint
        model, tokenizer = load_policy(read_adapter_base(path), device, dtype)
        return merge_adapters(model, path), tokenizer
    if path.is_dir() and not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"no config.json in {path}; give a folder written by save_pretrained (config, weights and tokenizer)"
        )
    if path.exists() and not path.is_dir():
        raise FileNotFoundError(f"{path} is a file; give the folder that holds config.json (or a hub name)")
    src = str(path) if path.exists() else str(name_or_path)
    dev = resolve_device(device)
    dtype, _ = resolve_precision(dtype, dev)  # the weights' dtype (the autocast is the forward passes' business)
    try:
        tokenizer = AutoTokenizer.from_pretrained(src)
        model = AutoModelForCausalLM.from_pretrained(src, dtype=dtype)
    except OSError as e:  # a missing file, or a hub name that cannot be fetched (no network, unknown name)
        where = "" if path.exists() else "; for a hub name with no network, download it first and pass the local folder"
        raise FileNotFoundError(f"cannot load a model from {src!r}: {str(e).splitlines()[0]}{where}") from None
    except Exception as e:  # a corrupt weights file, a config transformers cannot read, ...
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(
            f"cannot load a model from {src!r}: {msg}; re-save it (or run `rlalgos sft` for the base model)"
        ) from None
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.to(dev), tokenizer


def frozen_copy(model: nn.Module) -> nn.Module:
    """A frozen copy in eval mode (the reference policy)."""
    ref = copy.deepcopy(model).eval()
    ref.requires_grad_(False)
    return ref


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------- #
# A learned reward model, behind the rule rewards' interface
# --------------------------------------------------------------------------- #


class ModelReward:
    """A sequence-classification model (one logit) as a reward function.

    ``fn(prompts, completions, **columns) -> list[float]``, like every rule
    reward: batched, under ``torch.no_grad``, on the model's own device. The score
    is the logit of ``prompt + completion`` (or its sigmoid with ``sigmoid=True``).
    """

    def __init__(self, model, tokenizer, batch_size: int = 256, sigmoid: bool = False):
        self.model, self.tokenizer = model.eval(), tokenizer
        self.batch_size, self.sigmoid = batch_size, sigmoid
        self.__name__ = "reward_model"

    @classmethod
    def from_pretrained(cls, path: str | Path = REWARD_MODEL_DIR, device: str = "auto", **kwargs) -> "ModelReward":
        model, tok = load_reward_model(path, device)
        return cls(model, tok, **kwargs)

    @torch.no_grad()
    def __call__(self, prompts, completions, **columns) -> list[float]:
        return score(
            self.model, self.tokenizer, [p + c for p, c in zip(prompts, completions)], self.batch_size, self.sigmoid
        ).tolist()


def load_reward_model(path: str | Path = REWARD_MODEL_DIR, device: str = "auto"):
    """``(model, tokenizer)`` of a saved sequence-classification reward model."""
    path = Path(path)
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no reward model in {path}; train one with `rlalgos rm`")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).to(resolve_device(device))
    return model.eval(), tok


def score(
    model, tokenizer, texts: list[str], batch_size: int = 256, sigmoid: bool = False, grad: bool = False
) -> torch.Tensor:
    """One scalar per text: the model's single logit at the last real token. Returns (N,) floats."""
    tokenizer.padding_side = "right"  # natural positions; the head reads the last non-pad token
    device = next(model.parameters()).device
    outs = []
    with torch.set_grad_enabled(grad):
        for i in range(0, len(texts), batch_size):
            enc = tokenizer(texts[i : i + batch_size], return_tensors="pt", padding=True).to(device)
            outs.append(model(**enc).logits.squeeze(-1).float())  # (b,)
    s = torch.cat(outs) if outs else torch.zeros(0)
    return torch.sigmoid(s) if sigmoid else s
