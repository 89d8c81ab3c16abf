"""How a GRPO step's time grows with the group size G, the completion length and
the model width.

Completions are forced to the full length (no token counts as EOS), so
"length 128" really is 128 tokens for every answer; rewards are random 0/1 so
the update has work to do. Each line reports the median seconds of sampling
(``generate``), the reference-model pass (``ref_logprobs``) and the GRPO
``update`` (vanilla defaults: k3 KL in the loss, one update per rollout), and
the step's time as a multiple of the baseline (G=8, 64 tokens, width 128).

Widths other than the shipped model's are freshly initialised models of the
same shape (4 layers, 4 heads, MLP = 3 x width): the cost does not depend on
what the weights know.

Example::

    python benchmarks/scaling.py                 # all three sweeps
    python benchmarks/scaling.py --sweep length --repeats 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace

import torch

from _common import machine_info
from rlalgos.algorithms import get_algorithm, make_config
from rlalgos.model import char_tokenizer, count_parameters, frozen_copy, load_policy, tiny_model
from rlalgos.engine.forward import batched_logprobs
from rlalgos.record import Rollout
from rlalgos.engine.sampler import sample_completions
from rlalgos.tasks import addition_task

BASE = {"group_size": 8, "length": 64, "width": 128}
SWEEPS = {"group_size": [4, 8, 16], "length": [32, 64, 128], "width": [128, 256, 512]}


def full_length_rollout(policy, tok, rows: list[dict], G: int, T: int) -> tuple[Rollout, float]:
    """``len(rows) x G`` completions of exactly ``T`` tokens, with random 0/1 rewards.
    Returns the rollout and the seconds its sampling took."""
    enc = tok([r["prompt"] for r in rows], return_tensors="pt", padding=True).to(policy.device)
    t0 = time.perf_counter()
    completion = sample_completions(
        policy, enc["input_ids"], enc["attention_mask"], T, eos_token_id=-1, pad_token_id=tok.pad_token_id, n=G
    )
    seconds = time.perf_counter() - t0
    N, dev = completion.shape[0], completion.device
    rewards = torch.randint(0, 2, (N,), device=dev).float()
    ro = Rollout(
        prompts=[r["prompt"] for r in rows for _ in range(G)],
        completions=[""] * N,
        rows=[r for r in rows for _ in range(G)],
        prompt_ids=enc["input_ids"].repeat_interleave(G, 0),
        prompt_mask=enc["attention_mask"].repeat_interleave(G, 0),
        completion_ids=completion,
        completion_mask=torch.ones(completion.shape, device=dev),
        truncated=torch.ones(N, dtype=torch.bool, device=dev),
        old_logprobs=None,
        ref_logprobs=None,
        rewards=rewards,
        reward_parts={"correct": rewards},
        group_size=G,
        pad_token_id=tok.pad_token_id,
    )
    return ro, seconds


def measure(policy, tok, rows, G: int, T: int, repeats: int, prompts: int) -> dict:
    ref = frozen_copy(policy)
    algo = get_algorithm("grpo")(policy, make_config("grpo"), max_new_tokens=T)
    times = {"generate": [], "ref_logprobs": [], "update": []}
    for i in range(repeats + 1):  # the first round is a warm-up
        ro, gen = full_length_rollout(policy, tok, rows[i * prompts : (i + 1) * prompts], G, T)
        t0 = time.perf_counter()
        ro = replace(ro, ref_logprobs=batched_logprobs(ref, ro))
        t1 = time.perf_counter()
        algo.update(ro)
        t2 = time.perf_counter()
        if i:
            times["generate"].append(gen)
            times["ref_logprobs"].append(t1 - t0)
            times["update"].append(t2 - t1)
    out = {f"{k}_seconds": round(statistics.median(v), 3) for k, v in times.items()}
    out["step_seconds"] = round(sum(out.values()), 3)
    out["tokens_per_second"] = round(prompts * G * T / out["step_seconds"], 1)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sweep", default="group_size,length,width", help="which sweeps: group_size, length, width")
    p.add_argument("--repeats", type=int, default=3, help="measured steps per point (after one warm-up)")
    p.add_argument("--prompts", type=int, default=16, help="prompts per step")
    args = p.parse_args()
    torch.manual_seed(0)
    rows = addition_task().train
    tok = char_tokenizer()
    shipped, _ = load_policy(None)
    done: dict[tuple, dict] = {}

    def point_result(point: dict) -> dict:
        key = tuple(point.values())
        if key not in done:
            w = point["width"]
            policy = (
                shipped
                if w == 128
                else tiny_model(tok, seed=0, hidden=w, intermediate=3 * w).to(shipped.device, shipped.dtype)
            )
            done[key] = {
                "parameters": count_parameters(policy),
                **measure(policy, tok, rows, point["group_size"], point["length"], args.repeats, args.prompts),
            }
        return done[key]

    baseline = point_result(BASE)["step_seconds"]
    for sweep in [s for s in args.sweep.split(",") if s]:
        if sweep not in SWEEPS:
            raise SystemExit(f"unknown sweep {sweep!r}; use group_size, length or width")
        for value in SWEEPS[sweep]:
            point = {**BASE, sweep: value}
            res = point_result(point)
            line = {
                "measure": "scaling",
                "sweep": sweep,
                **point,
                "prompts": args.prompts,
                **res,
                "x_baseline": round(res["step_seconds"] / baseline, 2),
            }
            print(json.dumps({**line, **machine_info()}), flush=True)


if __name__ == "__main__":
    main()
