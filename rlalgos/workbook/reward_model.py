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
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from ..config import BASE_MODEL_DIR, REWARD_MODEL_DIR, RMConfig
from ..model import load_policy, resolve_device
from ..rollout import rollout
from ..engine.runs import check_model_dir
from ..engine.sampler import SamplingConfig
from ..tasks import addition_task



class ModelReward:
    """A sequence-classification model (one logit) as a reward function.

    ``fn(prompts, completions, **columns) -> list[float]``, like every rule
    reward: batched, under ``torch.no_grad``, on the model's own device. The score
    is the logit of ``prompt + completion`` (or its sigmoid with ``sigmoid=True``).
    """

    def __init__(self, model, tokenizer, batch_size: int = 256, sigmoid: bool = False):
        self.model, self.tokenizer = model.eval(), tokenizer
        self.batch_size, self.sigmoid = batch_size, sigmoid
        self.__name__ = "reward_model"

    @classmethod
    def from_pretrained(cls, path: str | Path = REWARD_MODEL_DIR, device: str = "auto", **kwargs) -> "ModelReward":
        model, tok = load_reward_model(path, device)
        return cls(model, tok, **kwargs)

    @torch.no_grad()
    def __call__(self, prompts, completions, **columns) -> list[float]:
        return score(self.model, self.tokenizer, [p + c for p, c in zip(prompts, completions)], self.batch_size, self.sigmoid).tolist()


def load_reward_model(path: str | Path = REWARD_MODEL_DIR, device: str = "auto"):
    """``(model, tokenizer)`` of a saved sequence-classification reward model."""
    path = Path(path)
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no reward model in {path}; train one with `rlalgos rm`")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).to(resolve_device(device))
    return model.eval(), tok


def score(model, tokenizer, texts: list[str], batch_size: int = 256, sigmoid: bool = False, grad: bool = False) -> torch.Tensor:
    """One scalar per text: the model's single logit at the last real token. Returns (N,) floats."""
    tokenizer.padding_side = "right"  # natural positions; the head reads the last non-pad token
    device = next(model.parameters()).device
    outs = []
    with torch.set_grad_enabled(grad):
        for i in range(0, len(texts), batch_size):
            enc = tokenizer(texts[i : i + batch_size], return_tensors="pt", padding=True).to(device)
            outs.append(model(**enc).logits.squeeze(-1).float())  # (b,)
    s = torch.cat(outs) if outs else torch.zeros(0)
    return torch.sigmoid(s) if sigmoid else s


# --------------------------------------------------------------------------- #
# Training a tiny reward model
# --------------------------------------------------------------------------- #


def sample_labelled(policy, tokenizer, rows: list[dict], group_size: int, task=None, seed: int = 0) -> list[dict]:
    """Completions of ``rows`` by ``policy`` with their rule label: dicts (prompt, completion, label, group)."""
    task = task or addition_task()
    out = []
    torch.manual_seed(seed)
    for i in range(0, len(rows), 64):
        ro = rollout(policy, tokenizer, rows[i : i + 64], group_size, task.rewards, SamplingConfig(max_new_tokens=task.max_new_tokens), old_logprobs=False)
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
    return {"auc": auc(scores, [d["label"] for d in data]), "pair_accuracy": acc, "pairs": len(pairs), "completions": len(data)}


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
        "heldout_auc": after["auc"], "heldout_pair_accuracy": after["pair_accuracy"],
        "heldout_auc_untrained": before["auc"], "heldout_pairs": after["pairs"],
        "train_completions": len(train_data), "train_pairs": len(pairs), "train_label_mean": sum(d["label"] for d in train_data) / len(train_data),
        "final_loss": loss.item(), "seconds": round(time.perf_counter() - t0, 1), "config": asdict(cfg),
    }
    (out / "rm_report.json").write_text(json.dumps(report, indent=2))
    return report
