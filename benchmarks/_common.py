"""Helpers the benchmark scripts share: what machine a number came from, how
much of a stretch of time was spent inside model passes, and peak memory."""

from __future__ import annotations

import os
import platform
import resource
import time

import torch


def machine_info() -> dict:
    """The facts a benchmark line needs to be read later."""
    info = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "cuda": torch.cuda.is_available(),
    }
    if info["cuda"]:
        info["gpu"] = torch.cuda.get_device_name()
    return info


def peak_memory_mb() -> float:
    """Peak memory of this process so far: GPU memory allocated by torch on CUDA,
    else the resident set size (Linux reports it in KiB)."""
    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class ModelTimer:
    """Seconds spent inside model forward passes (the outermost ``nn.Module`` call:
    policy, reference, critic, reward model; generation steps included) and inside
    ``Tensor.backward``. Everything else in a step is overhead.

    Usage: ``with ModelTimer() as mt: ...``; then ``mt.forward``, ``mt.backward``.
    """

    def __init__(self):
        self.forward = self.backward = 0.0
        self._depth = 0

    def _sync(self):
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    def __enter__(self):
        timer, call, backward = self, torch.nn.Module.__call__, torch.Tensor.backward
        self._saved = (call, backward)

        def timed_call(module, *args, **kwargs):
            if timer._depth:
                return call(module, *args, **kwargs)
            timer._depth += 1
            t0 = time.perf_counter()
            try:
                return call(module, *args, **kwargs)
            finally:
                timer._sync()
                timer.forward += time.perf_counter() - t0
                timer._depth -= 1

        def timed_backward(tensor, *args, **kwargs):
            t0 = time.perf_counter()
            try:
                return backward(tensor, *args, **kwargs)
            finally:
                timer._sync()
                timer.backward += time.perf_counter() - t0

        torch.nn.Module.__call__, torch.Tensor.backward = timed_call, timed_backward
        return self

    def __exit__(self, *exc):
        torch.nn.Module.__call__, torch.Tensor.backward = self._saved
        return False

    @property
    def total(self) -> float:
        return self.forward + self.backward


def without_evaluation():
    """A context in which training runs skip evaluation (``rlalgos.train.evaluate`` returns nothing),
    so that a benchmark times training steps only; undone on exit (the tests run benchmarks in their own process)."""
    from unittest import mock

    import rlalgos.train as train_mod

    return mock.patch.object(train_mod, "evaluate", lambda *a, **k: {"samples": []})
