"""Same seed, same numbers: the check behind a renovation that must not change results.

Runs every algorithm and every loss mode (and the engine paths: bf16 autocast, LoRA,
the KL subsample, chunked logits with transformers' sampler, several minibatches, a
bfloat16 sampler with each rollout correction's path) for 3 steps on the shipped model
and writes, per run, its metrics rows (every key but timings), the sha256 of its
checkpoint weights and of its samples.jsonl; then, per algorithm, the sha256 of every
file of its TRL and verl export, and of the export's mapping table:

    python benchmarks/identity.py write OUT_DIR TAG          # OUT_DIR/TAG.json (about 5 minutes on one core)
    python benchmarks/identity.py compare BEFORE.json AFTER.json

Run ``write`` before and after a change (same machine, same thread count; THREADS=2
by default, ONLY=name,name to run a few, EXPORTS=0 to skip the exports) and
``compare``: every line must say SAME.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path


def write(out: Path, tag: str) -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    from rlalgos.config import TrainConfig, make_config
    from rlalgos.train import train

    CASES = {
        "reinforce": ("reinforce", {}, {}),
        "ppo": ("ppo", {}, {}),
        "grpo": ("grpo", {}, {}),
        "dapo": ("dapo", {}, {}),
        "dapo_mb4": ("dapo", {"minibatches": 4}, {}),
        "dapo_bonus": ("dapo", {"entropy_threshold": 5.0, "minibatches": 2}, {}),
        "dapo_temp": (
            "dapo",
            {"entropy_threshold": 5.0, "entropy_action": "temperature", "kl_stages": "0:0.01,2:0.02"},
            {},
        ),
        "gspo": ("gspo", {}, {}),
        "drgrpo": ("drgrpo", {}, {}),
        "rloo": ("rloo", {}, {}),
        "dualclip": ("dualclip", {"minibatches": 2}, {}),
        "reinforce_batchmean_kl": ("reinforce", {"baseline": "batch_mean", "kl_coef": 0.05}, {}),
        "grpo_bf16": ("grpo", {"minibatches": 2}, {"dtype": "bfloat16"}),
        "ppo_bf16": ("ppo", {}, {"dtype": "bfloat16"}),
        "grpo_lora": ("grpo", {"minibatches": 2}, {"lora_rank": 4}),
        "dapo_klsub": ("dapo", {}, {"kl_sample_rows": 8}),
        "grpo_chunk": ("grpo", {}, {"logits_chunk": 64, "sampler": "hf"}),
        "ei": ("ei", {}, {}),
        "clipcov": ("clipcov", {"minibatches": 2}, {}),
        "klcov": ("klcov", {"minibatches": 2}, {}),
        "cispo": ("cispo", {"minibatches": 2}, {}),
        "sapo": ("sapo", {"minibatches": 2}, {}),
        "dapo_bf16_tis": (
            "dapo",
            {"minibatches": 2},
            {"rollout_dtype": "bfloat16", "rollout_correction": "token_truncate"},
        ),
        "reinforce_bf16_tis": ("reinforce", {}, {"rollout_dtype": "bfloat16", "rollout_correction": "token_truncate"}),
        "gspo_bf16_seqmask": ("gspo", {}, {"rollout_dtype": "bfloat16", "rollout_correction": "sequence_mask"}),
        "ppo_bf16_tokmask": ("ppo", {}, {"rollout_dtype": "bfloat16", "rollout_correction": "token_mask"}),
        "cispo_bf16_tis": (
            "cispo",
            {"minibatches": 2},
            {"rollout_dtype": "bfloat16", "rollout_correction": "token_truncate"},
        ),
    }
    res = {}
    ONLY = os.environ.get("ONLY", "").split(",") if os.environ.get("ONLY") else None
    for name, (algo, akw, tkw) in CASES.items():
        if ONLY and name not in ONLY:
            continue
        d = out / tag / name
        cfg = TrainConfig(
            algo=algo,
            steps=3,
            prompts_per_step=8,
            group_size=4,
            eval_every=3,
            eval_prompts=16,
            eval_samples=2,
            save_every=0,
            out_dir=str(d),
            overwrite=True,
            progress=False,
            device="cpu",
            seed=1,
            **tkw,
        )
        train(cfg, make_config(algo, **akw))
        rows = [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]
        rows = [{k: v for k, v in r.items() if "seconds" not in k and "per_second" not in k} for r in rows]
        shas = {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((d / "checkpoint").glob("*.safetensors"))
        }
        samples = hashlib.sha256((d / "samples.jsonl").read_bytes()).hexdigest()
        res[name] = {"rows": rows, "sha": shas, "samples": samples}
        print(name, "ok", rows[-1].get("eval_accuracy"), list(shas.values())[0][:12] if shas else None, flush=True)
    if os.environ.get("EXPORTS", "1") != "0":
        res.update(exports(out / tag / "exports"))
    (out / f"{tag}.json").write_text(json.dumps(res, indent=1, sort_keys=True))


def exports(out: Path) -> dict:
    """Per algorithm and engine, the sha256 of every file its export writes (``ei`` has none:
    its one-line error instead), and of the mapping table (README's)."""
    from rlalgos.config import ALGORITHMS, TrainConfig, make_config
    from rlalgos.tools import export as ex

    res = {
        "export_table": {
            "rows": [],
            "sha": {"table": hashlib.sha256(ex.mapping_table().encode()).hexdigest()},
            "samples": "",
        }
    }
    for name in ALGORITHMS:
        for to in ex.ENGINES:
            d = out / f"{name}_{to}"
            try:
                ex.export(TrainConfig(algo=name, steps=60), make_config(name), to, d, overwrite=True)
                shas = {
                    str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
                    for p in sorted(d.rglob("*"))
                    if p.is_file()
                }
            except ValueError as e:
                shas = {"error": str(e)}
            res[f"export_{name}_{to}"] = {"rows": [], "sha": shas, "samples": ""}
    print("exports ok", flush=True)
    return res


def compare(before: str, after: str) -> bool:
    same = True
    a, b = json.loads(Path(before).read_text()), json.loads(Path(after).read_text())
    for k in b:
        if k not in a:
            print(k, "missing in before")
            continue
        ra, rb = a[k]["rows"], b[k]["rows"]
        same_rows = ra == rb
        diffs = []
        if not same_rows:
            for i, (x, y) in enumerate(zip(ra, rb)):
                for kk in set(x) | set(y):
                    if x.get(kk) != y.get(kk):
                        diffs.append((i, kk, x.get(kk), y.get(kk)))
        sha_diff = sorted(f for f in set(a[k]["sha"]) | set(b[k]["sha"]) if a[k]["sha"].get(f) != b[k]["sha"].get(f))
        print(
            k,
            "rows",
            "SAME" if same_rows else f"DIFF {diffs[:4]}",
            "sha",
            f"DIFF {sha_diff}" if sha_diff else "SAME",
            "samples",
            "SAME" if a[k]["samples"] == b[k]["samples"] else "DIFF",
        )
        same = (
            same and a[k]["rows"] == b[k]["rows"] and a[k]["sha"] == b[k]["sha"] and a[k]["samples"] == b[k]["samples"]
        )
    return same and set(a) == set(b)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "write":
        write(Path(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
    else:
        sys.exit(__doc__)
