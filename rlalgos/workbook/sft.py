"""Supervised warm start: the base model RL starts from.

RL can only sharpen what the base model already does sometimes. A model trained
only on scratchpad answers makes random slips that share no pattern, and RL on it
barely moves (measured: 50% -> 51% sampled accuracy in 125 GRPO steps). So the
base model here learns a MIX of two strategies for the same prompt:

* the scratchpad (``46+76=122;122+82=204#204``): reliable, longer;
* a direct answer (``#204``): short, and unreliable for a model this small.

RL then has an obvious, shared thing to learn: prefer the strategy that works.
Completion length grows as it does ("longer reasoning emerges"), entropy falls,
and groups where every answer is right start to appear.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch
from tqdm.auto import tqdm

from .configs import SFTConfig, TrapConfig
from ..engine.forward import forward_logprobs
from ..engine.precision import resolve_device
from ..model import char_tokenizer, count_parameters, load_policy, tiny_model
from ..engine.runs import check_model_dir
from ..engine.sampler import SamplingConfig
from ..rollout import rollout
from ..tasks import addition_task, make_addition_data, make_addition_problem, uses_scratchpad
from ..train import evaluate
from .experiments import EMERGENCE_REGIME, TRAP_GRPO


def encode_batch(tokenizer, prompts: list[str], targets: list[str], device):
    """Left-padded prompts (with BOS) and right-padded targets (with EOS).

    Returns (prompt_ids, prompt_mask, target_ids, target_mask): (B, P), (B, P), (B, T), (B, T).
    """
    enc = tokenizer(prompts, return_tensors="pt", padding=True)
    tgt = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for t in targets]
    T = max(map(len, tgt))
    ids = torch.full((len(tgt), T), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros(len(tgt), T)
    for i, t in enumerate(tgt):
        ids[i, : len(t)] = torch.tensor(t)
        mask[i, : len(t)] = 1.0
    return enc["input_ids"].to(device), enc["attention_mask"].to(device), ids.to(device), mask.to(device)


def whole_loss(model, tokenizer, prompts: list[str], targets: list[str]) -> torch.Tensor:
    """Mean NLL of the targets' tokens (their EOS included) after their prompts: the SFT loss, a scalar."""
    p_ids, p_mask, t_ids, t_mask = encode_batch(tokenizer, list(prompts), list(targets), model.device)
    logp = forward_logprobs(model, p_ids, p_mask, t_ids, t_mask)["logprobs"]  # (B, T)
    return -(logp * t_mask).sum() / t_mask.sum()  # loss on completion tokens only


def optimizer_step(model, opt, loss: torch.Tensor, max_norm: float = 1.0) -> None:
    """One supervised update: gradients of ``loss``, clipped to global norm ``max_norm``, one ``opt`` step."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    opt.step()


def sft(cfg: SFTConfig | None = None) -> dict:
    """Train the tiny model from scratch and save it. Returns a report dict
    (accuracies, parameters, seconds), also written to ``OUT_DIR/sft_report.json``."""
    cfg = cfg or SFTConfig()
    if cfg.steps < 1 or cfg.batch_size < 1 or not cfg.lr > 0 or not 0 <= cfg.direct_frac <= 1:
        raise ValueError("sft needs steps >= 1, batch_size >= 1, lr > 0 and 0 <= direct_frac <= 1")
    check_model_dir(cfg.out_dir, cfg.overwrite)
    data_dir = Path(cfg.data_dir)
    if not (data_dir / "addition_train.jsonl").exists():
        make_addition_data(data_dir)
    task = addition_task(data_dir)
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    tokenizer = char_tokenizer()
    model = tiny_model(tokenizer, seed=cfg.seed, hidden=cfg.hidden, layers=cfg.layers).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    warm = max(1, cfg.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: (
            min(1.0, (s + 1) / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(s, cfg.steps) / cfg.steps)))
        ),
    )
    t0 = time.perf_counter()
    bar = tqdm(range(cfg.steps), desc="sft", disable=not cfg.progress)
    model.train()
    for step in bar:
        batch = [rng.choice(task.train) for _ in range(cfg.batch_size)]
        targets = [r["direct"] if rng.random() < cfg.direct_frac else r["target"] for r in batch]
        loss = whole_loss(model, tokenizer, [r["prompt"] for r in batch], targets)
        optimizer_step(model, opt, loss)
        sched.step()
        if step % 50 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    seconds = time.perf_counter() - t0
    model.eval()
    ev = evaluate(model, tokenizer, task, task.test[: cfg.eval_prompts], n_samples=8, seed=cfg.seed)
    out = Path(cfg.out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    report = {
        "parameters": count_parameters(model),
        "train_seconds": round(seconds, 1),
        "final_loss": round(loss.item(), 4),
        "greedy_accuracy": ev["eval_greedy_accuracy"],
        "sampled_accuracy": ev["eval_accuracy"],
        "pass@8": ev["eval_pass@8"],
        "scratchpad_frac": ev["eval_scratchpad_frac"],
        "completion_len": ev["eval_completion_len"],
        "config": asdict(cfg),
    }
    (out / "sft_report.json").write_text(json.dumps(report, indent=2))
    return report


def trap_finetune(cfg: TrapConfig | None = None) -> dict:
    """The exploration regime's base model (``data/trap_model``): the shipped model
    fine-tuned so that the common strategy is right where it is rewarded first and the
    rare one is needed where it matters.

    Each step trains on 32 easy prompts (2-term sums of 1-digit numbers) and 32 hard
    ones (3-4-term sums of 2-digit numbers):

    * easy: the full direct answer (``6+3=`` -> ``#9``), except ``easy_scratchpad_frac``
      of them whose target is only the scratchpad's first token: the model learns to
      *start* a scratchpad there sometimes, never how to finish one on 1-digit sums
      (the shipped model's scratchpad is poor there: it never saw them);
    * hard: only the first token ``#`` (the choice of a direct answer, which fails on
      these), except ``hard_scratchpad_frac`` with the full scratchpad, which keeps the
      scratchpad competent when it is chosen.

    The loss is the mean over target tokens, easy and hard halves weighted equally.
    Returns a report, also written to ``OUT_DIR/trap_report.json``.
    """
    cfg = cfg or TrapConfig()
    if (
        cfg.steps < 1
        or not cfg.lr > 0
        or not (0 <= cfg.hard_scratchpad_frac <= 1 and 0 <= cfg.easy_scratchpad_frac <= 1)
    ):
        raise ValueError("trap needs steps >= 1, lr > 0 and both scratchpad fractions in [0, 1]")
    check_model_dir(cfg.out_dir, cfg.overwrite)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    model, tokenizer = load_policy(cfg.base or None, device="cpu")
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    model.train()
    t0 = time.perf_counter()
    for _ in tqdm(range(cfg.steps), desc="trap", disable=not cfg.progress):
        easy = [make_addition_problem(rng, 2, 9) for _ in range(32)]
        hard = [make_addition_problem(rng, rng.choice([3, 4]), 99) for _ in range(32)]
        full = [rng.random() < cfg.hard_scratchpad_frac for _ in hard]  # hard: the whole scratchpad, or the choice only
        pick = [
            rng.random() < cfg.easy_scratchpad_frac for _ in easy
        ]  # easy: the scratchpad's first token, or the direct answer
        targets = [(r["target"][0] if c else r["direct"]) for r, c in zip(easy, pick)] + [
            (r["target"] if f else "#") for r, f in zip(hard, full)
        ]
        p_ids, p_mask, t_ids, t_mask = encode_batch(tokenizer, [r["prompt"] for r in easy + hard], targets, "cpu")
        only_first = torch.tensor(pick + [not f for f in full])  # (64,) rows trained on their first token only
        t_mask[only_first, 1:] = 0
        logp = forward_logprobs(model, p_ids, p_mask, t_ids, t_mask)["logprobs"]  # (64, T)
        loss = sum(-(logp[h] * t_mask[h]).sum() / t_mask[h].sum() for h in (slice(0, 32), slice(32, 64)))  # easy + hard
        optimizer_step(model, opt, loss)
    out = Path(cfg.out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    report = {
        "train_seconds": round(time.perf_counter() - t0, 1),
        "final_loss": round(loss.item(), 4),
        "config": asdict(cfg),
    }
    (out / "trap_report.json").write_text(json.dumps(report, indent=2))
    return report


# --------------------------------------------------------------------------- #
# The non-RL reference of notebook 13: SFT on a teacher's right scratchpad answers
# --------------------------------------------------------------------------- #


def distill(
    student_dir,
    kept_per_step: Sequence[int],
    out_csv: Path,
    seed: int = 0,
    teacher_dir=None,
    lr: float = TRAP_GRPO["lr"],
    minibatches: int = TRAP_GRPO["minibatches"],
    eval_every: int = EMERGENCE_REGIME["eval_every"],
    eval_prompts: int = EMERGENCE_REGIME["eval_prompts"],
    eval_samples: int = EMERGENCE_REGIME["eval_samples"],
):
    """Supervised fine-tuning of ``student_dir`` on the teacher's (the shipped model's) right
    scratchpad answers, as many per step as ``kept_per_step`` says (an expert-iteration
    run's kept answers, so both train on the same number of answers per step), each
    step's answers in ``minibatches`` AdamW steps as the RL runs. Evaluates like a run
    (same prompts, same evaluation seed) and returns one row per step (also written to ``out_csv``)."""
    out_csv = Path(out_csv)
    if out_csv.exists():
        return pd.read_csv(out_csv)
    task = addition_task()
    teacher, tok = load_policy(teacher_dir, device="cpu")
    student, _ = load_policy(str(student_dir) if student_dir else None, device="cpu")
    rng = random.Random(seed)
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(student.parameters(), lr=lr, weight_decay=0.0)
    eval_rows = task.test[:eval_prompts]

    def ev(step):
        student.eval()
        e = evaluate(student, tok, task, eval_rows, eval_samples, seed=seed + 10_000)
        student.train()
        return {
            k: e[k]
            for k in (
                "eval_accuracy",
                "eval_greedy_accuracy",
                "eval_entropy",
                "eval_completion_len",
                "eval_scratchpad_frac",
            )
        }

    rows = [{"step": 0, "trained_answers": 0, "trained_tokens": 0, **ev(0)}]
    student.train()
    answers = tokens = 0
    for step, n in enumerate(kept_per_step, start=1):
        pool: list[tuple[str, str]] = []
        while len(pool) < n:  # the teacher's right scratchpad answers on fresh training prompts
            batch_rows = [rng.choice(task.train) for _ in range(EMERGENCE_REGIME["prompts_per_step"])]
            with torch.no_grad():
                ro = rollout(
                    teacher,
                    tok,
                    batch_rows,
                    EMERGENCE_REGIME["group_size"],
                    task.rewards,
                    SamplingConfig(max_new_tokens=task.max_new_tokens),
                    old_logprobs=False,
                )
            pool += [
                (p, c)
                for p, c, ok, sp in zip(
                    ro.prompts, ro.completions, ro.correct.tolist(), uses_scratchpad(ro.completions)
                )
                if ok and sp
            ]
        pool = pool[:n]
        for mb in range(minibatches):
            part = pool[mb::minibatches]
            if part:
                optimizer_step(student, opt, whole_loss(student, tok, [p for p, _ in part], [c for _, c in part]))
        answers += n
        tokens += sum(len(c) + 1 for _, c in pool)  # characters are tokens, plus EOS
        row = {"step": step, "trained_answers": answers, "trained_tokens": tokens}
        if step % eval_every == 0 or step == len(kept_per_step):
            row.update(ev(step))
        rows.append(row)
    df = pd.DataFrame(rows)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out_csv, index=False)
    return df
