"""One prepared check of every CUDA path: a few GRPO, DAPO and PPO steps on models built here, checked and timed.

Made for a GPU machine lent for a few minutes, with no network: it downloads and
installs nothing, and builds every model it trains in a temporary folder:

* ``tiny``: the shipped base model (``data/base_model``, 0.87M parameters);
* ``qwen2-100m`` and ``qwen2-500m``: randomly initialised Qwen2 causal LMs with
  Qwen's 151,936-token vocabulary (~108M parameters, and Qwen2.5-0.5B's own shape,
  ~494M), saved with ``save_pretrained`` next to a tokenizer of the same size (the
  shipped character tokenizer, its vocabulary filled up with made-up tokens).
  A random model never answers an addition right, so these train on a made-up
  dense reward (the share of vowels in the answer's text; correctness is logged
  with weight 0): every group has some reward variance and every update a real gradient.

Each case is one training run at ``dtype auto`` (bf16 autocast on CUDA),
evaluated before and after (``rlalgos.train.build_run`` and ``run_loop``: what
``train`` does, with the rows as logged), and checked:

* ``finite``: every training row's loss, gradient norm, reward, entropy and KL
  (and PPO's value loss) is finite, and no update was skipped as non-finite;
* ``precision``: every ``nn.Linear`` output of the run (sampling, scoring, the
  update, evaluation; LoRA's adapters and PPO's critic included) was bf16 on CUDA
  (float32 on the CPU), and every ``nn.Linear`` weight stayed float32 (the master copy);
* ``chunked_head`` (Qwen-shaped models): the LM head ran on chunks of tokens
  (``logits_chunk``), the path that keeps a real vocabulary's logits small;
* ``resume`` (marked cases): the same run stopped halfway and resumed from its
  checkpoint writes the rows of the uninterrupted run (timings aside; on CUDA with
  ``torch.use_deterministic_algorithms``, to within 1e-4);
* ``collective`` (``/world1``, ``/world2``): the process group uses nccl on
  CUDA (gloo on the CPU) and an all-reduce across it gives the sum.

World size 1 runs in this process inside a one-process group: nccl starts, binds
to the GPU and all-reduces, and a run inside the group trains as outside it (the
package's own collectives act only with several processes). World size 2 (only
with two or more GPUs visible, as nccl takes one GPU per process; on the CPU with
gloo in ``--dry-run``) launches two processes of this script with
``torch.distributed.run``, which run every world-2 case one after another.

One JSON line per case: seconds per step (median over the steps after the first)
split into sampling (``generate``), rewards, the no-grad log-prob passes
(``logprobs``: old policy and reference) and the ``update``; completion tokens per
second; peak GPU memory (``torch.cuda.max_memory_allocated``, reset per case;
``null`` on the CPU). ``tiny/grpo/cpu`` is the CPU equivalent of ``tiny/grpo``. Then one summary line; ``--out`` writes every line to one JSON file.
Exit code 0 when every case passed, 1 when one failed, 2 when no GPU is visible
(without ``--dry-run``).

Examples::

    PYTHONPATH=. python3 benchmarks/gpu_check.py --out results.json   # on a CUDA machine (make gpu-check; docs/real_models.md)
    python benchmarks/gpu_check.py --dry-run                          # tiny sizes on the CPU (~50 s): checks the script itself
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import socket
import statistics
import string
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from _common import machine_info

VOCAB = 151_936  # Qwen2 / 2.5 / 3
QWEN_SHAPES = {  # Qwen2Config fields per model; 151,936 x hidden of each is its (tied) embedding
    "qwen2-100m": dict(
        hidden_size=512, intermediate_size=2048, num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=2
    ),  # ~108M
    "qwen2-500m": dict(
        hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2
    ),  # Qwen2.5-0.5B: ~494M
}
DRY_SHAPES = {  # the same two models at --dry-run sizes
    "qwen2-100m": dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1
    ),
    "qwen2-500m": dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2
    ),
}
FINITE_KEYS = ("loss", "pg_loss", "grad_norm", "reward_mean", "entropy", "kl", "value_loss")
TIMING = ("seconds", "tokens_per_second")
STAGES = ("generate", "reward", "logprobs", "update", "step")
RESUME_TOLERANCE = 1e-4  # |a - b| / (1 + |a|) of every logged number, resumed against uninterrupted
LORA_RANK = 8


@dataclass(frozen=True)
class Case:
    model: str  # tiny, qwen2-100m, qwen2-500m
    algo: str
    lora: bool = False
    world: int = 0  # 0: no process group; 1: a one-process group in this process; 2: two processes
    cpu: bool = False  # the CPU equivalent of a GPU case
    resume: bool = False  # also stop the run halfway, resume it, and compare

    @property
    def name(self) -> str:
        return "/".join(
            [self.model, self.algo + ("+lora" if self.lora else "")]
            + ([f"world{self.world}"] if self.world else [])
            + (["cpu"] if self.cpu else [])
        )


def plan(world2: bool) -> list[Case]:
    """Every case, cheapest first, so a run cut short by --time-limit has the most paths covered."""
    small, large = QWEN_SHAPES
    cases = [
        Case("tiny", "grpo"),
        Case("tiny", "dapo", resume=True),
        Case("tiny", "grpo", lora=True),
        Case("tiny", "dapo", lora=True),
        Case("tiny", "ppo"),
        Case("tiny", "grpo", world=1),
        Case("tiny", "grpo", cpu=True),
    ]
    cases += [
        Case(small, "grpo"),
        Case(small, "dapo"),
        Case(small, "grpo", lora=True),
        Case(small, "dapo", lora=True, resume=True),
        Case(small, "grpo", world=1),
    ]
    cases += [Case(large, "grpo"), Case(large, "dapo"), Case(large, "grpo", lora=True), Case(large, "dapo", lora=True)]
    if world2:
        cases += [Case("tiny", "dapo", world=2, resume=True), Case("qwen2-100m", "grpo", world=2)]
    return cases


# --------------------------------------------------------------------------- #
# Models and the task, built here
# --------------------------------------------------------------------------- #


def filled_tokenizer(vocab: int):
    """The shipped character tokenizer with its vocabulary filled up to ``vocab`` tokens by
    made-up words (``<|ab|>``, letters only), so that every id a model of that vocabulary
    samples decodes to text. Prompts still encode character by character."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    from rlalgos.model import SPECIAL_TOKENS, char_tokenizer

    base = char_tokenizer()
    ids = base.get_vocab()
    n = len(ids)

    def word(i: int) -> str:  # 0 -> a, 25 -> z, 26 -> ba, ...
        out = ""
        while True:
            out, i = string.ascii_lowercase[i % 26] + out, i // 26
            if i == 0:
                return out

    ids.update({f"<|{word(i)}|>": n + i for i in range(vocab - n)})
    backend = Tokenizer(models.WordLevel(vocab=ids, unk_token=SPECIAL_TOKENS["unk_token"]))
    old = base.backend_tokenizer
    backend.pre_tokenizer, backend.decoder, backend.post_processor = old.pre_tokenizer, old.decoder, old.post_processor
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend, clean_up_tokenization_spaces=False, padding_side="left", **SPECIAL_TOKENS
    )
    tok.model_max_length = base.model_max_length
    assert len(tok) == vocab, (len(tok), vocab)
    return tok


def build_qwen2(folder: Path, shape: dict, vocab: int, device: torch.device) -> int:
    """A randomly initialised Qwen2 causal LM of ``shape`` and its tokenizer, saved with
    ``save_pretrained`` to ``folder``; returns its parameter count. Initialised on ``device``
    (seconds on a GPU where the 500M model takes a minute on a few CPU cores)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tok = filled_tokenizer(vocab)
    cfg = Qwen2Config(
        vocab_size=vocab,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        **shape,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM(cfg)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def vowel_share(prompts, completions, **_) -> list[float]:
    """The share of vowels in each answer's text: a reward a random model's answers differ in."""
    return [sum(ch in "aeiou" for ch in c) / max(len(c), 1) for c in completions]


def dense_task(max_new_tokens: int):
    """The addition prompts with :func:`vowel_share` as the reward (correctness logged, weight 0)."""
    from rlalgos.tasks import get_task

    return replace(
        get_task("addition").with_rewards(0.0, [("vowels", vowel_share, 1.0)]), max_new_tokens=max_new_tokens
    )


# --------------------------------------------------------------------------- #
# Watching a run
# --------------------------------------------------------------------------- #


class LinearWatch:
    """Counts, over every ``nn.Linear`` call while active: the dtypes of their outputs and
    weights, and the calls that produced ``vocab`` logits for a flat (tokens, hidden)
    input, which only the chunked LM head makes. ``nn.Linear.forward`` is wrapped rather
    than a global forward hook set: a hook would send every module call down PyTorch's
    slower path and move the timings; the wrapper is one Python call per linear layer."""

    def __init__(self, vocab: int):
        self.vocab, self.outputs, self.weights, self.chunked_head = vocab, {}, {}, 0

    def _seen(self, module, output) -> None:
        self.outputs[str(output.dtype)] = self.outputs.get(str(output.dtype), 0) + 1
        self.weights[str(module.weight.dtype)] = self.weights.get(str(module.weight.dtype), 0) + 1
        self.chunked_head += output.dim() == 2 and output.shape[-1] == self.vocab

    def __enter__(self):
        original = self._original = torch.nn.Linear.forward

        def forward(module, input):
            output = original(module, input)
            self._seen(module, output)
            return output

        torch.nn.Linear.forward = forward
        return self

    def __exit__(self, *exc):
        torch.nn.Linear.forward = self._original
        return False


@contextlib.contextmanager
def deterministic(on: bool):
    """``torch.use_deterministic_algorithms`` (warnings only) while active, if ``on``: a resumed
    run can only match its uninterrupted twin on CUDA if no kernel adds in a random order."""
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    if on:
        torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def one_process_group(device: torch.device):
    """A ``torch.distributed`` group of this process alone (nccl on CUDA, gloo on the CPU)
    while active; yields whether an all-reduce across it gives the sum."""
    import torch.distributed as dist

    cuda = device.type == "cuda"
    dist.init_process_group(
        "nccl" if cuda else "gloo",
        init_method=f"tcp://127.0.0.1:{free_port()}",
        rank=0,
        world_size=1,
        **({"device_id": device} if cuda else {}),
    )
    try:
        yield collective_ok(device)
    finally:
        dist.destroy_process_group()


def collective_ok(device: torch.device) -> bool:
    """Whether the process group is nccl on CUDA (gloo on the CPU) and its all-reduce sums."""
    import torch.distributed as dist

    x = torch.full((3,), float(dist.get_rank() + 1), device=device)
    dist.all_reduce(x)
    want = sum(range(1, dist.get_world_size() + 1))
    return dist.get_backend() == ("nccl" if device.type == "cuda" else "gloo") and bool(x.eq(want).all())


def finite_rows(rows: list[dict]) -> bool:
    train_rows = [r for r in rows if r["step"] >= 1]
    ok = bool(train_rows) and all(
        "loss" in r and "grad_norm" in r and not r.get("nonfinite") and "stopped" not in r for r in train_rows
    )
    return ok and all(math.isfinite(r[k]) for r in train_rows for k in FINITE_KEYS if k in r)


def resume_gap(full: list[dict], resumed: list[dict]) -> float:
    """The largest ``|a - b| / (1 + |a|)`` over every logged number but the timings: 0 when the
    resumed run wrote the same rows; inf when the steps, a key, a NaN or a non-number differ."""
    if [r["step"] for r in full] != [r["step"] for r in resumed]:
        return math.inf
    gap = 0.0
    for a, b in zip(full, resumed):
        for k in a.keys() | b.keys():
            if k.endswith(TIMING) or (
                k.startswith("eval_") and (k not in a or k not in b)
            ):  # the cut run also evaluated where it stopped
                continue
            x, y = a.get(k), b.get(k)
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y)):
                if x != y:
                    return math.inf
            elif math.isnan(x) or math.isnan(y):
                if not (math.isnan(x) and math.isnan(y)):
                    return math.inf
            else:
                gap = max(gap, abs(x - y) / (1 + abs(x)))
    return gap


# --------------------------------------------------------------------------- #
# One case
# --------------------------------------------------------------------------- #


def case_config(case: Case, args, model_dir: Path, out_dir: Path, device: str):
    from rlalgos.config import TrainConfig, make_config

    qwen = case.model != "tiny"
    cfg = TrainConfig(
        algo=case.algo,
        model=str(model_dir),
        dtype="auto",
        device=device,
        lora_rank=LORA_RANK if case.lora else 0,
        steps=args.steps,
        prompts_per_step=args.prompts,
        group_size=args.group_size,
        max_new_tokens=args.max_new_tokens if qwen else 0,
        logits_chunk=args.logits_chunk if qwen else -1,
        eval_every=0,
        eval_prompts=args.eval_prompts,
        eval_samples=args.eval_samples,
        save_every=0,
        seed=0,
        out_dir=str(out_dir),
        progress=False,
    )
    algo_cfg = make_config(
        case.algo, **({"lr": 1e-6} if qwen and not case.lora else {})
    )  # a full fine-tune of a 100M+ model: TRL's and verl's lr
    return cfg, algo_cfg


def run_case(case: Case, args, model_dir: Path, vocab: int, work: Path) -> dict:
    """Train ``case`` in this process (one of ``case.world`` processes under a launcher) and check it."""
    from rlalgos.engine import distributed
    from rlalgos.engine.precision import resolve_device
    from rlalgos.train import build_run, run_loop

    want = "cpu" if case.cpu or args.dry_run else "auto"
    if case.world == 2:
        dev = distributed.setup(
            want, args.prompts
        )  # joins the launcher's group: cuda:LOCAL_RANK on CUDA, gloo on the CPU
    else:
        dev = resolve_device(want)
        if dev.type == "cuda" and dev.index is None:  # an index: nccl's device_id needs one
            dev = torch.device("cuda", torch.cuda.current_device())
    task = dense_task(args.max_new_tokens) if case.model != "tiny" else None
    cfg, algo_cfg = case_config(case, args, model_dir, work / "full", str(dev))
    gc.collect()
    if dev.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
    checks = {}
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if case.world == 1:
            checks["collective"] = stack.enter_context(one_process_group(dev))
        elif case.world == 2:
            checks["collective"] = collective_ok(dev)
        stack.enter_context(deterministic(case.resume and dev.type == "cuda"))
        with LinearWatch(vocab) as watch:
            rows = run_loop(
                build_run(cfg, algo_cfg, task=task)
            )  # rlalgos.train.train, its rows as logged (no DataFrame: a missing key stays missing)
        seconds = time.perf_counter() - t0
        peak = torch.cuda.max_memory_allocated(dev) / 2**20 if dev.type == "cuda" else None
        if case.resume:
            cut = max(1, args.steps // 2)
            cut_cfg = replace(cfg, out_dir=str(work / "cut"))
            run_loop(build_run(replace(cut_cfg, steps=cut, save_every=cut), algo_cfg, task=task))
            resumed = run_loop(
                build_run(cut_cfg, algo_cfg, task=task, resume=True)
            )  # rlalgos.train.resume(), with the task object rather than its name
            gap = resume_gap(rows, resumed)
            checks["resume"] = gap <= RESUME_TOLERANCE
    auto = "torch.bfloat16" if dev.type == "cuda" else "torch.float32"  # what dtype auto has to mean on this device
    checks["finite"] = finite_rows(rows)
    checks["precision"] = set(watch.outputs) == {auto} and set(watch.weights) == {"torch.float32"}
    if case.model != "tiny":
        checks["chunked_head"] = watch.chunked_head > 0
    checks = {
        k: all(v) for k, v in zip(checks, zip(*distributed.gather(list(checks.values()))))
    }  # every process's checks

    steps = [r for r in rows if r["step"] >= (2 if args.steps > 1 else 1)]  # the first step is a warm-up
    row = {
        "measure": "gpu_check",
        "case": case.name,
        "model": case.model,
        "algo": case.algo,
        "lora": case.lora,
        "world": case.world or 1,
        "device": str(dev),
        "linear_output_dtypes": watch.outputs,
        "steps": args.steps,
        "prompts": args.prompts,
        "group_size": args.group_size,
    }
    row.update({f"{s}_seconds": round(statistics.median(r[f"{s}_seconds"] for r in steps), 4) for s in STAGES})
    row["tokens_per_second"] = round(statistics.median(r["tokens_per_second"] for r in steps), 1)
    row["completion_len"] = round(statistics.mean(r["completion_len"] for r in steps), 1)
    row["grad_norm"] = round(statistics.median(r["grad_norm"] for r in steps), 4)
    row["peak_gpu_memory_mb"] = None if peak is None else round(peak, 1)
    if case.resume:
        row["resume_gap"] = gap
    row["train_seconds"] = round(seconds, 2)
    row["checks"] = checks
    row["passed"] = all(checks.values())
    return row


def launch_world2(jobs: list[dict], args, timeout: float) -> list[dict]:
    """Every world-2 case, one after another in one launch of two processes of this script
    (``torch.distributed.run``; the processes start once): process 0's line for each, and for
    each case that wrote none (the launch failed or timed out), a failed line that says why."""
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        str(Path(__file__).resolve()),
        "--worker",
        json.dumps(jobs),
        *(["--dry-run"] if args.dry_run else []),
        *(f"--{k.replace('_', '-')}={getattr(args, k)}" for k in SIZES),
    ]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        why = f"torch.distributed.run exited with {proc.returncode}: {last_line(proc.stderr)}"
        if proc.returncode:
            print(proc.stderr[-5000:], file=sys.stderr)  # the launcher's last line rarely names the worker's error
    except subprocess.TimeoutExpired:
        why = "torch.distributed.run timed out"
    rows = []
    for job in jobs:
        out = Path(job["work"]) / "rank0.json"
        rows.append(json.loads(out.read_text()) if out.exists() else failed_row(Case(**job["case"]), why))
    return rows


def worker_main(args) -> None:
    """One of the two processes of the world-2 cases: train each, and process 0 writes its line."""
    from rlalgos.engine import distributed

    for job in json.loads(args.worker):
        work = Path(job["work"])
        row = run_case(Case(**job["case"]), args, Path(job["model_dir"]), job["vocab"], work)
        if distributed.is_main():
            (work / "rank0.json").write_text(json.dumps(row))


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1] if text.strip() else "no output"


def failed_row(case: Case, why: str) -> dict:
    return {"measure": "gpu_check", "case": case.name, "passed": False, "error": why}


# --------------------------------------------------------------------------- #
# The whole check
# --------------------------------------------------------------------------- #


SIZES = {  # --option: (default on a GPU, default with --dry-run)
    "steps": (4, 2),
    "prompts": (8, 2),
    "group_size": (4, 2),
    "max_new_tokens": (128, 8),
    "logits_chunk": (-1, 4),
    "eval_prompts": (8, 2),
    "eval_samples": (2, 1),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="tiny sizes on the CPU (small vocabulary and widths, 2 steps): checks the script, measures nothing",
    )
    p.add_argument("--out", help="also write every line to this JSON file")
    p.add_argument(
        "--steps", type=int, help="training steps per case (default 4; --dry-run 2); resume cases stop at half"
    )
    p.add_argument("--prompts", type=int, help="prompts per step (default 8; --dry-run 2)")
    p.add_argument("--group-size", type=int, help="answers per prompt (default 4; --dry-run 2)")
    p.add_argument(
        "--max-new-tokens",
        type=int,
        help="answer length of the Qwen-shaped models (default 128; --dry-run 8); the tiny model keeps its task's 48",
    )
    p.add_argument(
        "--logits-chunk",
        type=int,
        help="the Qwen-shaped models' logits_chunk (default -1, auto: ~220 tokens at 151,936; --dry-run 4)",
    )
    p.add_argument("--eval-prompts", type=int, help="test prompts per evaluation (default 8; --dry-run 2)")
    p.add_argument("--eval-samples", type=int, help="samples per test prompt (default 2; --dry-run 1)")
    p.add_argument(
        "--only",
        default="",
        help="comma-separated substrings: run only the cases whose name holds one (e.g. tiny,world)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=480,
        help="seconds: cases not started by then are skipped (a lent GPU runs a command at most 10 min)",
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)  # internal: the world-2 cases, in one of their two processes
    args = p.parse_args()
    for k, (gpu, dry) in SIZES.items():
        if getattr(args, k) is None:
            setattr(args, k, dry if args.dry_run else gpu)
    if args.worker:
        return worker_main(args)
    if not args.dry_run and not torch.cuda.is_available():
        why = (
            "this torch build has no CUDA"
            if not torch.backends.cuda.is_built()
            else "torch.cuda.is_available() is False"
        )
        print(
            f"gpu_check: no CUDA device ({why}; torch {torch.__version__}); run it on a GPU machine, or pass --dry-run for the CPU smoke test",
            file=sys.stderr,
        )
        sys.exit(2)
    # cuBLAS is deterministic only with this workspace, and reads it once, at its first use (the resume cases need it)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    from rlalgos.config import BASE_MODEL_DIR

    start = time.perf_counter()
    n_gpus = 0 if args.dry_run else torch.cuda.device_count()
    cases = [
        c
        for c in plan(world2=args.dry_run or n_gpus >= 2)
        if not args.only or any(s in c.name for s in args.only.split(","))
    ]
    lines: list[dict] = []
    results: dict[str, str] = {}  # case name -> passed, failed or skipped

    def report(row: dict) -> None:
        lines.append(row)
        print(json.dumps(row), flush=True)
        if row["measure"] == "gpu_check":
            results[row["case"]] = "passed" if row["passed"] else "failed"

    report({"measure": "gpu_check_machine", "dry_run": args.dry_run, "gpus": n_gpus, **machine_info()})
    with tempfile.TemporaryDirectory(prefix="gpu_check-") as tmp:
        tmp = Path(tmp)
        models = {"tiny": (BASE_MODEL_DIR, 0)}  # folder, vocabulary (0: its head is not watched for chunks)

        def model(name: str) -> tuple[Path, int]:
            """The model's folder and vocabulary, built on first use."""
            if name not in models:
                t0, vocab = time.perf_counter(), 1000 if args.dry_run else VOCAB
                params = build_qwen2(
                    tmp / name,
                    (DRY_SHAPES if args.dry_run else QWEN_SHAPES)[name],
                    vocab,
                    torch.device("cuda" if n_gpus else "cpu"),
                )
                models[name] = (tmp / name, vocab)
                report(
                    {
                        "measure": "gpu_check_model",
                        "model": name,
                        "params": params,
                        "vocab": vocab,
                        "build_seconds": round(time.perf_counter() - t0, 2),
                    }
                )
            return models[name]

        world2 = []
        for i, case in enumerate(cases):
            if time.perf_counter() - start > args.time_limit:
                results[case.name] = "skipped"
                continue
            try:
                folder, vocab = model(case.model)
                if case.world == 2:  # later, all in one launch
                    world2.append(
                        {"case": asdict(case), "model_dir": str(folder), "vocab": vocab, "work": str(tmp / f"case{i}")}
                    )
                    continue
                row = run_case(case, args, folder, vocab, tmp / f"case{i}")
            except Exception as e:  # one broken path must not hide the others
                traceback.print_exc()
                row = failed_row(case, f"{type(e).__name__}: {last_line(str(e))}")
            report(row)
        if world2 and time.perf_counter() - start > args.time_limit:
            results.update({Case(**job["case"]).name: "skipped" for job in world2})
        elif world2:
            for row in launch_world2(
                world2, args, timeout=max(60.0, args.time_limit + 60 - (time.perf_counter() - start))
            ):
                report(row)
    summary = {
        "measure": "gpu_check_summary",
        "ok": all(r == "passed" for r in results.values()),
        **{k: [c for c, r in results.items() if r == k] for k in ("passed", "failed", "skipped")},
        "seconds": round(time.perf_counter() - start, 1),
    }
    report(summary)
    if args.out:
        Path(args.out).write_text(json.dumps(lines, indent=1) + "\n")
    print(
        f"gpu_check: {len(summary['passed'])}/{len(results)} passed"
        + "".join(f"; {k}: {', '.join(summary[k])}" for k in ("failed", "skipped") if summary[k]),
        file=sys.stderr,
    )
    sys.exit(0 if summary["ok"] else 1)


if __name__ == "__main__":
    main()
