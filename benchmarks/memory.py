"""Peak memory of the log-prob passes at a real vocabulary, with and without ``logits_chunk``.

A randomly initialised Qwen2-shaped model (Qwen's 151,936-token vocabulary, a
small width, 2 layers; built from its config, nothing downloaded) takes N
answers of T completion tokens (after a short prompt) through

* ``score``: one no-grad pass, log-probs and entropy (the rollout's old-log-prob pass);
* ``update``: one forward with grad and its backward (the update's pass).

Each measurement runs in a fresh process and reports the peak *extra* memory:
on CPU the resident high-water mark (``VmHWM``, reset just before the pass)
minus the resident size before it (torch has no CPU allocator statistics); on
CUDA torch's ``max_memory_allocated`` minus what was allocated before. Unchunked (``logits_chunk`` 0) the peak grows
with N x T x V; chunked it should grow with the chunk, not with N x T.

One JSON line per measurement (``measure: memory``), then one per pass and chunk
size (``measure: memory_growth``) with the extra MB per 1,000 tokens between
its smallest and largest batch.

Examples::

    python benchmarks/memory.py                          # the default grid (~2 min, at most ~5 GB per process)
    python benchmarks/memory.py --unchunked-rows 2 --chunked-rows 8,64 --chunks 512
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import torch

from _common import machine_info


def resident_kb() -> dict:
    """``VmRSS`` (now) and ``VmHWM`` (peak since the last reset) of this process, in KiB (Linux)."""
    status = Path("/proc/self/status").read_text()
    return {k: int(re.search(rf"{k}:\s+(\d+)", status).group(1)) for k in ("VmRSS", "VmHWM")}


def reset_peak() -> None:
    """Start a new peak: CUDA's counter, or the kernel's resident high-water mark."""
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    else:
        Path("/proc/self/clear_refs").write_text("5")  # "5" resets VmHWM to the current VmRSS


def current_mb() -> float:
    return torch.cuda.memory_allocated() / 2**20 if torch.cuda.is_available() else resident_kb()["VmRSS"] / 1024


def peak_mb() -> float:
    return torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else resident_kb()["VmHWM"] / 1024


def qwen2_shaped(args):
    """A randomly initialised Qwen2 causal LM: Qwen's vocabulary, ``args.hidden`` wide, ``args.layers`` deep."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=4 * args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=max(1, args.hidden // 32),
        num_key_value_heads=max(1, args.hidden // 32),
        max_position_embeddings=args.prompt_len + args.length + 1,
        tie_word_embeddings=True,
    )
    return Qwen2ForCausalLM(cfg)


def run_pass(model, kind: str, rows: int, length: int, prompt_len: int, chunk: int):
    """One ``score`` or ``update`` pass on ``rows`` random answers of ``length`` tokens."""
    from rlalgos.engine.forward import forward_logprobs

    dev = next(model.parameters()).device
    V = model.config.vocab_size
    prompt_ids = torch.randint(0, V, (rows, prompt_len), device=dev)
    completion_ids = torch.randint(0, V, (rows, length), device=dev)
    prompt_mask, completion_mask = torch.ones_like(prompt_ids), torch.ones(rows, length, device=dev)
    if kind == "score":
        with torch.no_grad():
            forward_logprobs(
                model.eval(),
                prompt_ids,
                prompt_mask,
                completion_ids,
                completion_mask,
                with_entropy=True,
                logits_chunk=chunk,
            )
    else:
        out = forward_logprobs(
            model.train(),
            prompt_ids,
            prompt_mask,
            completion_ids,
            completion_mask,
            with_entropy=True,
            logits_chunk=chunk,
        )
        (-out["logprobs"].mean()).backward()  # the parameters' .grad is part of the peak, as in an update
        model.zero_grad(set_to_none=True)


def measure(args) -> dict:
    """One pass in this process: warm up at a tiny size, reset the peak, run it, read the peak."""
    from rlalgos.engine.precision import resolve_device

    kind, rows, chunk = args.one.split(":")
    rows, chunk = int(rows), int(chunk)
    model = qwen2_shaped(args).to(resolve_device(args.device))
    for warm_chunk in (0, 2):  # kernels, thread pools, lazy imports of both paths: not part of the pass
        run_pass(model, kind, 1, 4, 4, warm_chunk)
    before = current_mb()
    reset_peak()
    t0 = time.perf_counter()
    run_pass(model, kind, rows, args.length, args.prompt_len, chunk)
    seconds = time.perf_counter() - t0
    tokens = rows * args.length
    return {
        "measure": "memory",
        "pass": kind,
        "rows": rows,
        "length": args.length,
        "tokens": tokens,
        "logits_chunk": chunk,
        "vocab": args.vocab,
        "hidden": args.hidden,
        "layers": args.layers,
        "peak_extra_mb": round(peak_mb() - before, 1),
        "fp32_logits_mb": round(tokens * args.vocab * 4 / 2**20, 1),  # one full (N, T, V) fp32 copy, for scale
        "seconds": round(seconds, 3),
        **machine_info(),
    }


def growth(rows: list[dict]) -> list[dict]:
    """Extra MB per 1,000 tokens from the smallest to the largest batch, per pass and chunk size."""
    out = []
    for key in sorted({(r["pass"], r["logits_chunk"]) for r in rows}):
        pts = sorted((r["tokens"], r["peak_extra_mb"]) for r in rows if (r["pass"], r["logits_chunk"]) == key)
        if len(pts) > 1 and pts[-1][0] > pts[0][0]:
            slope = (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0]) * 1000
            out.append(
                {
                    "measure": "memory_growth",
                    "pass": key[0],
                    "logits_chunk": key[1],
                    "tokens": [t for t, _ in pts],
                    "peak_extra_mb": [m for _, m in pts],
                    "mb_per_1k_tokens": round(slope, 1),
                }
            )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vocab", type=int, default=151936, help="vocabulary size (Qwen2/2.5/3: 151,936)")
    p.add_argument("--hidden", type=int, default=64, help="model width")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--length", type=int, default=256, help="completion tokens per answer (T)")
    p.add_argument("--prompt-len", type=int, default=32, help="prompt tokens per answer")
    p.add_argument(
        "--unchunked-rows",
        default="2,4,8",
        help="answers per pass (N) measured with logits_chunk 0 (each ~0.15 GB x N of fp32 logits at T=256)",
    )
    p.add_argument("--chunked-rows", default="8,16,64", help="answers per pass (N) measured with each chunk size")
    p.add_argument("--chunks", default="256,1024", help="logits_chunk values (tokens) to measure")
    p.add_argument("--passes", default="score,update", help="score (no grad), update (forward + backward), or both")
    p.add_argument("--device", default="auto")
    p.add_argument("--one", help=argparse.SUPPRESS)  # internal: PASS:ROWS:CHUNK, measured in this process
    args = p.parse_args()
    if args.one:
        print(json.dumps(measure(args)), flush=True)
        return
    ints = lambda text: [int(x) for x in text.split(",") if x]  # noqa: E731
    grid = [(0, n) for n in ints(args.unchunked_rows)] + [
        (c, n) for c in ints(args.chunks) for n in ints(args.chunked_rows)
    ]
    # glibc keeps freed blocks under its (moving) mmap threshold in the heap, where the resident size
    # still counts them; a fixed 64 KiB threshold gives every tensor its own mapping, unmapped when freed
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
    rows = []
    for kind in [k for k in args.passes.split(",") if k]:
        for chunk, n in grid:  # a fresh process per measurement, so no peak hides another
            cmd = [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:], "--one", f"{kind}:{n}:{chunk}"]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
            row = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
            print(json.dumps(row), flush=True)
            rows.append(row)
    for row in growth(rows):
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
