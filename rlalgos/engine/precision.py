"""Device and numeric precision: where the model runs and in which dtype.

A ``dtype`` setting (:class:`rlalgos.config.TrainConfig`'s ``dtype``) names two
things: the dtype of the weights, which :func:`rlalgos.model.load_policy` loads
them in, and the autocast dtype of the forward passes, which the training loop
hands to the sampler, the scoring passes and the update (:func:`autocast`).
The model object carries no precision setting of its own.
"""

from __future__ import annotations

import contextlib

import torch

from ..config import DTYPES

PRECISIONS = {
    "float32": (torch.float32, None),
    "bfloat16": (torch.float32, torch.bfloat16),
    "bfloat16-weights": (torch.bfloat16, None),
    "float16-weights": (torch.float16, None),
}
"""``dtype`` name -> (weights dtype, autocast dtype or None)."""


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


def resolve_precision(dtype: str | torch.dtype | None, device: torch.device) -> tuple[torch.dtype, torch.dtype | None]:
    """``(weights dtype, autocast dtype or None)`` for a ``dtype`` setting.

    ``None`` or ``"auto"``: ``bfloat16`` on CUDA, ``float32`` elsewhere. ``"bfloat16"``:
    float32 weights (the optimizer's master copy) with the forward passes under
    ``torch.autocast(dtype=torch.bfloat16)``. ``"float32"``: float32, no autocast.
    ``"bfloat16-weights"`` / ``"float16-weights"``: the weights themselves in that
    dtype, no autocast. A ``torch.dtype``: weights in it, no autocast.
    """
    if isinstance(dtype, torch.dtype):
        return dtype, None
    if dtype is None or dtype == "auto":
        dtype = "bfloat16" if torch.device(device).type == "cuda" else "float32"
    if dtype not in PRECISIONS:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    return PRECISIONS[dtype]


def autocast(model, dtype: torch.dtype | None):
    """The context a forward pass of ``model`` runs in: ``torch.autocast`` on the
    model's device in ``dtype``, or nothing when ``dtype`` is ``None``."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(next(model.parameters()).device.type, dtype=dtype)
