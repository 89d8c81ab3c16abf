"""Helpers the benchmark scripts share: what machine a number came from, and a
timer around ``model.generate``."""

from __future__ import annotations

import os
import platform
import time

import torch


def machine_info() -> dict:
    """The facts a benchmark line needs to be read later."""
    info = {"torch": torch.__version__, "threads": torch.get_num_threads(), "cpus": os.cpu_count(),
            "cpu": platform.processor() or platform.machine(), "cuda": torch.cuda.is_available()}
    if info["cuda"]:
        info["gpu"] = torch.cuda.get_device_name()
    return info


def timed_generate(model) -> list[float]:
    """Wrap ``model.generate`` so every call's wall time is appended to the returned list."""
    times: list[float] = []
    inner = model.generate

    def generate(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            times.append(time.perf_counter() - t0)

    model.generate = generate
    return times
