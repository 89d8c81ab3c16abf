"""The one training loop every algorithm runs on.

    sample prompts -> rollout -> rewards -> algorithm.update -> one metrics row
    -> (every eval_every steps) evaluation on the test split -> checkpoint

Rows are appended to ``RUN_DIR/metrics.jsonl`` and flushed as soon as they are
made, so an interrupted run keeps every row it computed. The function returns
the rows as a pandas DataFrame.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pandas as pd
import torch
from tqdm.auto import tqdm

from . import core
from .algorithms import get_algorithm, make_config
from .model import frozen_copy, load_policy
from .rollout import Rollout, SamplingConfig, rollout
from .tasks import Task, get_task, uses_scratchpad


@dataclass
class TrainConfig:
    """Everything about a run that is not the algorithm's own hyperparameters."""

    algo: str = "reinforce"
    """Algorithm name (see ``rlalgos.algorithms.ALGORITHMS``)."""
    model: str = ""
    """Policy to start from: a local folder or hub name; empty = the shipped base model in data/base_model."""
    task: str = "addition"
    """Task name (``addition``) or ``gsm8k:PATH.jsonl``."""
    steps: int = 60
    """Training steps (one rollout and one update each)."""
    prompts_per_step: int = 32
    """Distinct prompts sampled per step."""
    group_size: int = 8
    """Completions per prompt (G); the batch is prompts_per_step x group_size sequences."""
    max_new_tokens: int = 0
    """Longest completion in tokens; 0 = the task's default (48 for addition)."""
    temperature: float = 1.0
    """Sampling temperature for training rollouts and the sampled eval."""
    eval_every: int = 20
    """Evaluate on the test split every this many steps (and before the first and after the last)."""
    eval_prompts: int = 200
    """Test prompts per evaluation (0 = the whole test split)."""
    eval_samples: int = 4
    """Sampled completions per test prompt: eval_accuracy is their mean (pass@1), and pass@k uses all of them."""
    save_every: int = 0
    """Write a checkpoint every this many steps (0 = only at the end)."""
    log_kl: bool = True
    """Measure KL to the reference every step even when the algorithm does not train on it (one extra no-grad forward)."""
    seed: int = 0
    """Seeds prompt order, sampling and initialisation; same seed, same numbers on CPU."""
    device: str = "auto"
    """``auto`` (CUDA if present, else CPU), ``cpu`` or ``cuda``."""
    out_dir: str = "runs/run"
    """Run folder: metrics.jsonl, samples.jsonl, config.json, checkpoint/."""
    overwrite: bool = True
    """Replace an existing run folder (False: refuse to touch it)."""
    progress: bool = True
    """Show a tqdm progress bar."""

    def validate(self) -> None:
        """Raise ``ValueError`` with one line saying what to change."""
        get_algorithm(self.algo)
        for name in ("steps", "prompts_per_step", "group_size", "eval_samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("eval_every", "eval_prompts", "save_every", "max_new_tokens"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        min_g = get_algorithm(self.algo).min_group_size
        if self.group_size < min_g:
            raise ValueError(f"{self.algo} compares answers within a group, so group_size must be >= {min_g}; got {self.group_size}")


def set_seed(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


# --------------------------------------------------------------------------- #
# Evaluation
# --------------------------------------------------------------------------- #


@torch.no_grad()
def evaluate(policy, tokenizer, task: Task, rows: list[dict] | None = None, n_samples: int = 4, temperature: float = 1.0, max_new_tokens: int = 0, seed: int = 0, greedy: bool = True, n_show: int = 0) -> dict:
    """Accuracy on test rows: greedy, and sampled (pass@1 = mean over ``n_samples``
    samples, plus pass@k for k = n_samples).

    Sampling runs in a forked RNG seeded with ``seed``: evaluation never changes
    the training run's random stream, and every evaluation of a run sees the same
    random numbers (less noise between steps).
    Returns ``{"eval_accuracy", "eval_greedy_accuracy", "eval_pass@k", ...}`` and,
    if ``n_show`` > 0, ``"samples"``: a few prompt/completion/reward dicts.
    """
    rows = task.test if rows is None else rows
    sampling = SamplingConfig(max_new_tokens=max_new_tokens or task.max_new_tokens, temperature=temperature)
    out = {}
    devices = [policy.device] if policy.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        ro = rollout(policy, tokenizer, rows, n_samples, task.rewards, sampling, old_logprobs=False, correct_key=task.correct_key)
    correct = ro.correct.view(-1, n_samples)  # (P, k)
    out["eval_accuracy"] = correct.mean().item()
    if n_samples > 1:
        out[f"eval_pass@{n_samples}"] = sum(core.pass_at_k(n_samples, int(c), n_samples) for c in correct.sum(1).tolist()) / len(rows)
    out["eval_completion_len"] = ro.lengths.mean().item()
    out["eval_truncated_frac"] = ro.truncated.float().mean().item()
    for k, v in ro.reward_parts.items():
        out[f"eval_reward/{k}"] = v.mean().item()
    if task.name == "addition":
        out["eval_scratchpad_frac"] = sum(uses_scratchpad(ro.completions)) / len(ro)
    if greedy:
        g = rollout(policy, tokenizer, rows, 1, task.rewards, sampling, old_logprobs=False, correct_key=task.correct_key, greedy=True)
        out["eval_greedy_accuracy"] = g.correct.mean().item()
    if n_show:
        out["samples"] = [
            {"prompt": p, "completion": c, "answer": r.get("answer"), "reward": float(x)}
            for p, c, r, x in list(zip(ro.prompts, ro.completions, ro.rows, ro.rewards.tolist()))[: n_show * n_samples : n_samples]
        ]
    return out


# --------------------------------------------------------------------------- #
# Logging and checkpoints
# --------------------------------------------------------------------------- #


class JsonlLog:
    """Append-only JSONL file, flushed after every row."""

    def __init__(self, path: Path, truncate: bool = False):
        self.path = Path(path)
        self.f = open(self.path, "w" if truncate else "a")

    def write(self, row: dict) -> None:
        self.f.write(json.dumps(row, default=float) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


def save_checkpoint(run_dir: Path, policy, tokenizer, algo, step: int, prompt_rng: random.Random) -> Path:
    """Model + tokenizer (``save_pretrained``) and the trainer state, written to a
    temporary folder first and then moved into place (never half a checkpoint)."""
    final, tmp = run_dir / "checkpoint", run_dir / "checkpoint.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    policy.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    torch.save({"step": step, "algo": algo.state_dict(), "torch_rng": torch.get_rng_state(), "prompt_rng": prompt_rng.getstate()}, tmp / "trainer_state.pt")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final


# --------------------------------------------------------------------------- #
# The loop
# --------------------------------------------------------------------------- #


def train(cfg: TrainConfig, algo_cfg=None, policy=None, tokenizer=None, task: Task | None = None) -> pd.DataFrame:
    """Run one training job and return its metrics rows as a DataFrame.

    ``algo_cfg`` defaults to the algorithm's own defaults; ``policy``/``tokenizer``
    and ``task`` may be passed in (notebooks) instead of loaded from ``cfg``.
    ``df.attrs["run_dir"]`` is the run folder.
    """
    cfg.validate()
    algo_cls = get_algorithm(cfg.algo)
    algo_cfg = algo_cfg or make_config(cfg.algo)
    algo_cfg.validate(cfg.group_size, cfg.prompts_per_step * cfg.group_size)
    task = task or get_task(cfg.task)
    run_dir = Path(cfg.out_dir)
    if run_dir.exists() and any(run_dir.iterdir()):
        if not cfg.overwrite:
            raise FileExistsError(f"{run_dir} already holds a run; pick another out_dir or allow overwrite")
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)

    set_seed(cfg.seed)
    if policy is None:
        policy, tokenizer = load_policy(cfg.model or None, cfg.device)
    ref_model = frozen_copy(policy)
    algo = algo_cls(policy, algo_cfg, ref_model=ref_model, tokenizer=tokenizer)
    sampling = SamplingConfig(max_new_tokens=cfg.max_new_tokens or task.max_new_tokens, temperature=cfg.temperature)
    algo.total_steps, algo.max_new_tokens, algo.temperature = cfg.steps, sampling.max_new_tokens, cfg.temperature
    (run_dir / "config.json").write_text(json.dumps({"train": asdict(cfg), "algo": asdict(algo_cfg)}, indent=2))

    prompt_rng = random.Random(cfg.seed)
    order: list[int] = []

    def next_rows(n: int) -> list[dict]:
        nonlocal order
        out = []
        for _ in range(n):
            if not order:
                order = list(range(len(task.train)))
                prompt_rng.shuffle(order)
            out.append(task.train[order.pop()])
        return out

    def sample(n_prompts: int, temperature: float | None = None) -> Rollout:
        """The only way an algorithm gets samples: ``n_prompts`` x G fresh completions."""
        use_ref = algo.needs_ref or cfg.log_kl
        s = sampling if temperature is None else replace(sampling, temperature=temperature)
        return rollout(policy, tokenizer, next_rows(n_prompts), cfg.group_size, task.rewards, s, ref_model=ref_model if use_ref else None, old_logprobs=algo.needs_old_logprobs, correct_key=task.correct_key)

    eval_rows = task.test[: cfg.eval_prompts] if cfg.eval_prompts else task.test
    metrics_log = JsonlLog(run_dir / "metrics.jsonl", truncate=True)
    samples_log = JsonlLog(run_dir / "samples.jsonl", truncate=True)
    rows: list[dict] = []

    def run_eval(step: int) -> dict:
        ev = evaluate(policy, tokenizer, task, eval_rows, cfg.eval_samples, cfg.temperature, sampling.max_new_tokens, seed=cfg.seed + 10_000, n_show=4)
        for s in ev.pop("samples"):
            samples_log.write({"step": step, **s})
        return ev

    bar = tqdm(range(1, cfg.steps + 1), desc=cfg.algo, disable=not cfg.progress, dynamic_ncols=True)
    try:
        row0 = {"step": 0, **run_eval(0)}
        metrics_log.write(row0)
        rows.append(row0)
        for step in bar:
            t0 = time.perf_counter()
            ro, info = algo.collect(sample, cfg.prompts_per_step)
            t1 = time.perf_counter()
            m = algo.update(ro)
            t2 = time.perf_counter()
            row = {"step": step, **ro.stats(), **info, **m}
            row["rollout_seconds"], row["update_seconds"] = t1 - t0, t2 - t1
            row["step_seconds"] = t2 - t0
            row["tokens_per_second"] = ro.lengths.sum().item() / max(t2 - t0, 1e-9)
            if m.get("nonfinite"):
                row["stopped"] = "non-finite loss or gradient norm"
                metrics_log.write(row)
                rows.append(row)
                raise FloatingPointError(f"step {step}: non-finite loss or gradient (loss={m.get('loss')}, grad_norm={m.get('grad_norm')}); lower lr or check rewards. Metrics up to here are in {run_dir / 'metrics.jsonl'}")
            if (cfg.eval_every and step % cfg.eval_every == 0) or step == cfg.steps:
                row.update(run_eval(step))
            metrics_log.write(row)
            rows.append(row)
            bar.set_postfix(reward=f"{row['reward_mean']:.3f}", acc=f"{row['accuracy']:.2f}", **({"eval": f"{row['eval_accuracy']:.2f}"} if "eval_accuracy" in row else {}))
            if cfg.save_every and step % cfg.save_every == 0 and step != cfg.steps:
                save_checkpoint(run_dir, policy, tokenizer, algo, step, prompt_rng)
        save_checkpoint(run_dir, policy, tokenizer, algo, cfg.steps, prompt_rng)
    finally:
        bar.close()
        metrics_log.close()
        samples_log.close()
    df = pd.DataFrame(rows)
    df.attrs["run_dir"] = str(run_dir)
    return df


def load_metrics(run_dir: str | Path) -> pd.DataFrame:
    """A run folder's ``metrics.jsonl`` as a DataFrame (``attrs["run_dir"]`` set)."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found; is {run_dir} a run folder?")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    df = pd.DataFrame(rows)
    df.attrs["run_dir"] = str(run_dir)
    return df
