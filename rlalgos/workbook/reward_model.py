"""A learned reward model next to the rule reward.

A rule reward (``tasks.correctness_reward``) is exact but coarse: 1 or 0. A
reward model scores any completion with a real number, but it is a *model*: it
learned a proxy of correctness from examples, and a policy optimised hard
against it can find what the proxy gets wrong (over-optimisation). This module

* wraps any ``AutoModelForSequenceClassification`` with one logit as a reward
  function with the same signature as the rule rewards (:class:`ModelReward`);
* trains a tiny one from completions sampled from the base model and labelled by
  the rule reward, with a Bradley-Terry pairwise loss (chosen = correct,
  rejected = wrong answer to the same prompt) or binary cross-entropy
  (:func:`train_reward_model`), and reports held-out pairwise accuracy and AUC.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm
from transformers import AutoModelForSequenceClassification

from ..config import BASE_MODEL_DIR, REWARD_MODEL_DIR  # noqa: F401 (REWARD_MODEL_DIR: notebook 07 imports it from here)
from .configs import RMConfig
from ..engine.precision import resolve_device
from ..model import ModelReward, load_policy, load_reward_model, score  # noqa: F401 (the reward function and its loader live with the models)
from ..rollout import rollout
from ..engine.runs import check_model_dir
from ..engine.sampler import SamplingConfig
from ..tasks import addition_task


# --------------------------------------------------------------------------- #
# Training a tiny reward model
# --------------------------------------------------------------------------- #


def sample_labelled(policy, tokenizer, rows: list[dict], group_size: int, task=None, seed: int = 0) -> list[dict]:
    """Completions of ``rows`` by ``policy`` with their rule label: dicts (prompt, completion, label, group)."""
    task = task or addition_task()
    out = []
    torch.manual_seed(seed)
    for i in range(0, len(rows), 64):
        ro = rollout(
            policy,
            tokenizer,
            rows[i : i + 64],
            group_size,
            task.rewards,
            SamplingConfig(max_new_tokens=task.max_new_tokens),
            old_logprobs=False,
        )
        for j, (p, c, y) in enumerate(zip(ro.prompts, ro.completions, ro.correct.tolist())):
            out.append({"prompt": p, "completion": c, "label": y, "group": i + j // group_size})
    return out


def make_pairs(data: list[dict], rng: random.Random) -> list[tuple[str, str]]:
    """(chosen, rejected) texts: a correct and a wrong completion of the same prompt."""
    groups: dict[int, list[dict]] = {}
    for d in data:
        groups.setdefault(d["group"], []).append(d)
    pairs = []
    for g in groups.values():
        good = [d["prompt"] + d["completion"] for d in g if d["label"] == 1]
        bad = [d["prompt"] + d["completion"] for d in g if d["label"] == 0]
        for c in good:
            for r in bad:
                pairs.append((c, r))
    rng.shuffle(pairs)
    return pairs


def auc(scores: list[float], labels: list[float]) -> float:
    """Probability that a random correct completion outscores a random wrong one (ties count half)."""
    pos = [s for s, y in zip(scores, labels) if y == 1]
    neg = [s for s, y in zip(scores, labels) if y == 0]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def evaluate_reward_model(model, tokenizer, data: list[dict], seed: int = 0) -> dict:
    """Held-out AUC over completions and accuracy over same-prompt (correct, wrong) pairs."""
    scores = score(model, tokenizer, [d["prompt"] + d["completion"] for d in data]).tolist()
    by_text = {d["prompt"] + d["completion"]: s for d, s in zip(data, scores)}
    pairs = make_pairs(data, random.Random(seed))
    acc = sum(by_text[c] > by_text[r] for c, r in pairs) / max(len(pairs), 1)
    return {
        "auc": auc(scores, [d["label"] for d in data]),
        "pair_accuracy": acc,
        "pairs": len(pairs),
        "completions": len(data),
    }


def train_reward_model(cfg: RMConfig | None = None) -> dict:
    """Sample, label, train, evaluate and save a reward model. Returns the report
    (also written to ``OUT_DIR/rm_report.json``)."""
    cfg = cfg or RMConfig()
    if cfg.loss not in ("pairwise", "bce"):
        raise ValueError(f"unknown loss {cfg.loss!r}; use pairwise or bce")
    if cfg.group_size < 2 or cfg.steps < 1 or cfg.batch_size < 1 or not cfg.lr > 0:
        raise ValueError("rm needs group_size >= 2, steps >= 1, batch_size >= 1 and lr > 0")
    check_model_dir(cfg.out_dir, cfg.overwrite)
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    base = cfg.base or str(BASE_MODEL_DIR)
    policy, tok = load_policy(base, device)
    task = addition_task()
    train_rows = rng.sample(task.train, cfg.prompts)
    t0 = time.perf_counter()
    train_data = sample_labelled(policy, tok, train_rows, cfg.group_size, task, cfg.seed)
    held_data = sample_labelled(policy, tok, task.test[: cfg.heldout_prompts], cfg.group_size, task, cfg.seed + 1)
    del policy
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1).to(device)
    model.config.pad_token_id = tok.pad_token_id
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    pairs = make_pairs(train_data, rng)
    if cfg.loss == "pairwise" and not pairs:
        raise ValueError("no prompt has both a correct and a wrong completion; raise group_size or prompts")
    before = evaluate_reward_model(model, tok, held_data, cfg.seed)
    model.train()
    bar = tqdm(range(cfg.steps), desc="reward model", disable=not cfg.progress)
    for step in bar:
        if cfg.loss == "pairwise":
            batch = [pairs[(step * cfg.batch_size + k) % len(pairs)] for k in range(cfg.batch_size)]
            s = score(model, tok, [c for c, _ in batch] + [r for _, r in batch], grad=True)  # (2b,)
            chosen, rejected = s[: len(batch)], s[len(batch) :]
            loss = -F.logsigmoid(chosen - rejected).mean()  # Bradley-Terry
        else:
            batch = [train_data[(step * cfg.batch_size + k) % len(train_data)] for k in range(cfg.batch_size)]
            s = score(model, tok, [d["prompt"] + d["completion"] for d in batch], grad=True)
            loss = F.binary_cross_entropy_with_logits(s, torch.tensor([d["label"] for d in batch], device=s.device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    model.eval()
    after = evaluate_reward_model(model, tok, held_data, cfg.seed)
    out = Path(cfg.out_dir)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    report = {
        "heldout_auc": after["auc"],
        "heldout_pair_accuracy": after["pair_accuracy"],
        "heldout_auc_untrained": before["auc"],
        "heldout_pairs": after["pairs"],
        "train_completions": len(train_data),
        "train_pairs": len(pairs),
        "train_label_mean": sum(d["label"] for d in train_data) / len(train_data),
        "final_loss": loss.item(),
        "seconds": round(time.perf_counter() - t0, 1),
        "config": asdict(cfg),
    }
    (out / "rm_report.json").write_text(json.dumps(report, indent=2))
    return report
