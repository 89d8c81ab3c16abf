"""Device and numeric precision: where the model runs and in which dtype.

A ``dtype`` setting (:class:`rlalgos.config.TrainConfig`'s ``dtype``) names two
things: the dtype of the weights, which :func:`rlalgos.model.load_policy` loads
them in, and the autocast dtype of the forward passes, which the training loop
hands to the sampler, the scoring passes and the update (:func:`autocast`).
The model object carries no precision setting of its own.

``rollout_dtype`` (the rollout-trainer mismatch) is a third thing: a
:class:`SamplingCopy` of the policy whose weights are in a lower precision
samples the training rollouts, as vLLM or SGLang sample in bf16 for a trainer
that keeps fp32 weights.
"""

from __future__ import annotations

import contextlib
import copy

import torch

from ..config import DTYPES, ROLLOUT_DTYPES

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
            raise ValueError(
                "no CUDA device is visible (torch.cuda.is_available() is False); check the driver and CUDA_VISIBLE_DEVICES, or use --device cpu"
            )
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


class SamplingCopy:
    """A copy of the policy with its weights in ``dtype`` (``rollout_dtype``) that samples,
    as an inference engine samples for the trainer: :meth:`sync` copies the trained weights
    into it (an engine's weight sync) and returns it, so call it before every rollout.

    Only the parameters are cast: buffers (the rotary frequencies) stay as they are,
    as vLLM computes its rotary tables in float32. The copy is frozen, in eval mode,
    and costs one more set of weights in ``dtype`` (half the fp32 policy's for bf16).
    """

    def __init__(self, policy, dtype: str | torch.dtype):
        if isinstance(dtype, str):
            if dtype not in ROLLOUT_DTYPES:
                raise ValueError(f"unknown rollout_dtype {dtype!r}; use one of {', '.join(ROLLOUT_DTYPES)}")
            dtype = getattr(torch, dtype)
        self.policy, self.dtype = policy, dtype
        self.model = copy.deepcopy(policy).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
            p.data = p.data.to(dtype)

    @torch.no_grad()
    def sync(self):
        """Copy the policy's current weights in (rounded to ``dtype``); returns the sampling model."""
        for dst, src in zip(self.model.parameters(), self.policy.parameters()):
            dst.copy_(src)
        return self.model
