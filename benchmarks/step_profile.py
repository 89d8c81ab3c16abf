"""Where a GRPO step's time goes, by kind of work: the profile behind the TRL gap.

Runs rlalgos ``grpo`` at the TRL side-by-side settings (16 prompts x 8, 48 new
tokens, no KL, token-mean, fp32 on CPU) and profiles the sampling and the update
of every step after the first with ``torch.profiler``. Each aten operator's own
time ("self CPU") is put in a category: matrix multiplies, attention kernels,
element-wise maths (RMSNorm, rotary embedding, SiLU, the loss), moving data
(cat, copy, index: mostly the KV cache), sampling (softmax, multinomial), other
operators; what is left of the phase's wall time is Python and dispatch (the
transformers modules' code, rlalgos' loop) plus the profiler's own cost. Prints
one JSON line per phase (its seconds per step, timed inside the profiler, and the
shares). The profiler slows every operator a little: read the shares.

Example::

    python benchmarks/step_profile.py --steps 6
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from collections import defaultdict
from unittest import mock

from torch.profiler import ProfilerActivity, profile

from _common import machine_info, without_evaluation
import rlalgos.rollout as rollout_mod
from rlalgos.algorithms import make_config
from rlalgos.algorithms.base import Algorithm
from rlalgos.train import TrainConfig, train

CATEGORIES = {
    "matmul": (
        "aten::mm",
        "aten::bmm",
        "aten::addmm",
        "aten::baddbmm",
        "aten::linear",
        "aten::matmul",
        "aten::_mkldnn",
    ),
    "attention": ("scaled_dot_product", "flash_attention", "aten::_efficient_attention", "aten::softmax_backward"),
    "sampling": (
        "aten::multinomial",
        "aten::exponential_",
        "aten::softmax",
        "aten::_softmax",
        "aten::argmax",
        "aten::isin",
    ),
    "data_movement": (
        "aten::cat",
        "aten::copy_",
        "aten::index",
        "aten::index_select",
        "aten::index_put",
        "aten::_to_copy",
        "aten::clone",
        "aten::contiguous",
        "aten::repeat_interleave",
        "aten::gather",
        "aten::scatter",
        "aten::masked_fill",
        "aten::where",
        "aten::_index_put_impl_",
        "aten::fill_",
        "aten::zero_",
    ),
    "elementwise": (
        "aten::mul",
        "aten::add",
        "aten::sub",
        "aten::div",
        "aten::neg",
        "aten::pow",
        "aten::rsqrt",
        "aten::silu",
        "aten::mean",
        "aten::sum",
        "aten::exp",
        "aten::log",
        "aten::cos",
        "aten::sin",
        "aten::clamp",
        "aten::max",
        "aten::min",
        "aten::sqrt",
        "aten::logsumexp",
        "aten::threshold",
        "aten::norm",
        "aten::_foreach",
        "aten::lerp",
        "aten::addcmul",
        "aten::addcdiv",
        "aten::maximum",
        "aten::minimum",
        "aten::abs",
        "aten::tanh",
        "aten::sigmoid",
    ),
}


def category(op: str) -> str:
    for cat, prefixes in CATEGORIES.items():
        if any(op.startswith(p) or (not p.startswith("aten::") and p in op) for p in prefixes):
            return cat
    if op.startswith("autograd::") or "Backward" in op:
        return "autograd_engine"
    return "other_ops"


class PhaseProfiler:
    """Wraps a function so that each call (after ``skip`` calls) runs under its own profiler."""

    def __init__(self, skip: int = 1):
        self.skip, self.calls, self.wall = skip, 0, 0.0
        self.self_us: dict[str, float] = defaultdict(float)

    def wrap(self, fn):
        def inner(*args, **kwargs):
            self.calls += 1
            if self.calls <= self.skip:
                return fn(*args, **kwargs)
            with profile(activities=[ProfilerActivity.CPU]) as p:
                t0 = time.perf_counter()
                out = fn(*args, **kwargs)
                self.wall += time.perf_counter() - t0
            for e in p.key_averages():
                if e.key.startswith("aten::") or e.key.startswith("autograd::") or "Backward" in e.key:
                    self.self_us[category(e.key)] += e.self_cpu_time_total
            return out

        return inner

    def summary(self) -> dict:
        counted = self.calls - self.skip
        ops = {k: v / 1e6 / counted for k, v in self.self_us.items()}  # seconds per call
        wall = self.wall / counted
        row = {"seconds": round(wall, 4)}
        row.update({f"share_{k}": round(v / wall, 3) for k, v in sorted(ops.items(), key=lambda kv: -kv[1])})
        row["share_python_and_dispatch"] = round(max(wall - sum(ops.values()), 0.0) / wall, 3)
        return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6, help="profiled steps (after one warm-up step)")
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=48)
    args = p.parse_args()
    phases = {"generate": PhaseProfiler(), "update": PhaseProfiler()}
    with (
        tempfile.TemporaryDirectory() as d,
        contextlib.ExitStack() as patches,
    ):  # every patch is undone after (tests run this in their process)
        patches.enter_context(without_evaluation())  # training steps only
        patches.enter_context(mock.patch.object(rollout_mod, "generate", phases["generate"].wrap(rollout_mod.generate)))
        patches.enter_context(mock.patch.object(Algorithm, "update", phases["update"].wrap(Algorithm.update)))
        cfg = TrainConfig(
            algo="grpo",
            steps=args.steps + 1,
            prompts_per_step=args.prompts,
            group_size=args.group_size,
            max_new_tokens=args.max_new_tokens,
            eval_every=0,
            eval_prompts=1,
            eval_samples=1,
            save_every=0,
            log_kl=False,
            device="cpu",
            out_dir=d,
            progress=False,
        )
        train(cfg, make_config("grpo", kl_coef=0.0, loss_agg="token-mean"))
    info = {
        "prompts": args.prompts,
        "group_size": args.group_size,
        "max_new_tokens": args.max_new_tokens,
        **machine_info(),
    }
    for name, ph in phases.items():
        print(json.dumps({"measure": "step_profile", "phase": name, **ph.summary(), **info}), flush=True)


if __name__ == "__main__":
    main()
