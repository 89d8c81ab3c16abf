"""LoRA (``--lora-rank R``): train low-rank adapters instead of every weight, with
peft (the ``lora`` extra: ``pip install rlalgos[lora]``).

* The policy stays the same transformers model object: peft puts the adapters
  inside its projections, so sampling, scoring and the update run as before, and
  only the adapters require grad (the optimizer holds only them).
* The reference policy is the same model with its adapters switched off
  (:class:`AdaptersOff`): exactly the starting model, scored without a second copy.
* A checkpoint is an adapter folder (peft's ``adapter_config.json`` and
  ``adapter_model.safetensors``, next to the tokenizer and the trainer state).
  Resume loads the adapters back into the run's fresh LoRA model
  (:func:`load_adapters`); :func:`rlalgos.model.load_policy` on such a folder
  loads the base model and merges the adapters into it (:func:`merge_adapters`): a
  plain model for ``rlalgos eval`` or ``save_pretrained``.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from pathlib import Path

from ..config import LORA_INSTALL

ADAPTER_CONFIG = "adapter_config.json"


def require_peft():
    """The ``peft`` module, or a ``ValueError`` saying how to install it."""
    try:
        import peft
    except ImportError:
        raise ValueError(f"LoRA needs peft, which is not installed: {LORA_INSTALL}") from None
    return peft


@contextlib.contextmanager
def quiet():
    """Without transformers' FutureWarnings about the attributes peft reads (noise on every run)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield


def has_adapters(model) -> bool:
    """Whether peft has put adapter layers into ``model``."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    return any(isinstance(m, BaseTunerLayer) for m in model.modules())


def add_lora(policy, cfg):
    """Put LoRA adapters (``cfg.lora_rank``, ``lora_alpha``, ``lora_dropout``,
    ``lora_targets`` of a :class:`~rlalgos.config.TrainConfig`) into ``policy``'s
    layers, in place, freezing every other weight. Returns peft's wrapper around
    ``policy``, which saves the adapters and switches them off."""
    peft = require_peft()
    if has_adapters(policy):
        raise ValueError(
            "the model passed in already has LoRA adapters (from an earlier LoRA run?); pass a freshly loaded one"
        )
    names = [t.strip() for t in cfg.lora_targets.split(",") if t.strip()]
    targets = "all-linear" if names == ["all-linear"] else names
    config = peft.LoraConfig(
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha or 2 * cfg.lora_rank,
        lora_dropout=cfg.lora_dropout,
        target_modules=targets,
        task_type="CAUSAL_LM",
    )
    try:
        with quiet():
            lora = peft.get_peft_model(policy, config)
    except ValueError as e:  # target modules not found, ...
        raise ValueError(
            f"cannot add LoRA adapters to lora_targets {cfg.lora_targets!r}: {str(e).splitlines()[0]}"
        ) from None
    base = lora.peft_config["default"].base_model_name_or_path
    if base and Path(base).is_dir():  # a local base: name it absolutely, so the checkpoint loads from any folder
        lora.peft_config["default"].base_model_name_or_path = str(Path(base).resolve())
    return lora


class AdaptersOff:
    """``lora``'s model with its adapters switched off: the model the run started
    from, which is the reference policy, without a second copy of the weights.

    Every call runs under peft's ``disable_adapter()``; everything else (``config``,
    ``eval()``, ``training``, ``get_output_embeddings``, ...) is the policy's own. Its
    ``base_model`` (the transformer without the LM head, which the chunked log-prob
    path calls) is wrapped the same way.
    """

    def __init__(self, lora, module=None):
        self.lora = lora
        self.module = lora.get_base_model() if module is None else module

    def __getattr__(self, name):
        if name in ("lora", "module"):  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.module, name)

    def __call__(self, *args, **kwargs):
        with self.lora.disable_adapter():
            return self.module(*args, **kwargs)

    @property
    def base_model(self) -> "AdaptersOff":
        return AdaptersOff(self.lora, self.module.base_model)


def load_adapters(lora, folder: str | Path) -> None:
    """Load the adapter weights saved in ``folder`` into ``lora`` (resume)."""
    require_peft()
    from peft.utils import load_peft_weights, set_peft_model_state_dict

    weights = load_peft_weights(str(folder), device=str(next(lora.parameters()).device))
    result = set_peft_model_state_dict(lora, weights)
    unexpected = getattr(result, "unexpected_keys", [])
    if unexpected:
        raise ValueError(
            f"the adapters in {folder} do not fit this run's LoRA model ({len(unexpected)} unexpected weights, e.g. {unexpected[0]})"
        )


def read_adapter_base(folder: Path) -> str:
    """The base model an adapter folder names (peft's ``base_model_name_or_path``)."""
    base = json.loads((Path(folder) / ADAPTER_CONFIG).read_text()).get("base_model_name_or_path")
    if not base:
        raise FileNotFoundError(
            f"{Path(folder) / ADAPTER_CONFIG} names no base model (base_model_name_or_path); load the base with load_policy and the adapters with peft"
        )
    return base


def merge_adapters(model, folder: Path):
    """``model`` (the base that ``folder``'s adapter config names, already loaded) with
    the adapters saved in ``folder`` merged into its weights: a plain transformers model."""
    peft = require_peft()
    with quiet():
        return peft.PeftModel.from_pretrained(model, str(folder)).merge_and_unload()
