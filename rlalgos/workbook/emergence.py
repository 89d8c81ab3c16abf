"""Where reasoning comes from: base models that hold the scratchpad at a chosen rarity
and competence, and the law that says when RL finds it (notebook 12).

On the default task RL's whole gain is a strategy switch: the scratchpad's share of
sampled answers rises from ~70% to 95-99% and accuracy rises to the scratchpad's own.
DeepSeek-R1-Zero (arXiv:2501.12948) shows the same pattern at scale: the reasoning
behaviour spreads, answers grow longer, accuracy follows. Gandhi et al. 2025
(arXiv:2503.01307) find that RL amplifies behaviours the base model already shows
and stalls on a model that lacks them, until it is primed with traces that show them.

Each base model here is the shipped one after a short fine-tune that moves one thing:

* **the choice** (the first completion token: ``#`` starts a direct answer, a digit a
  scratchpad) is trained toward ``#`` until the scratchpad's share ``p`` falls to a
  target; the scratchpad's tokens after the first keep training on right traces, so
  its competence ``q`` (accuracy once it is chosen) stays the shipped model's;
* **the competence** (``incompetent``): the scratchpad's tokens after the first train
  on traces whose every sum is off by 1-9, so ``q`` falls to a few percent at the
  same share;
* **priming** (``primed`` / ``primed_wrong``): the incompetent model after a short
  supervised fine-tune on a few hundred whole scratchpad traces, all right or with
  half of them carrying a wrong sum (Gandhi et al.'s traces with the right structure
  and wrong arithmetic).

:func:`strategy_profile` measures ``p`` exactly (one minus the probability of ``#`` as
the first token, averaged over prompts) and ``q`` and the direct answer's accuracy
``d`` by forcing the first token. Sampled accuracy is then ``p q + (1 - p) d``.

RL needs a group in which a scratchpad answer is right and another answer is not:
with share ``p`` and competence ``q`` a group of ``G`` holds at least one right
scratchpad answer with probability ``1 - (1 - p q)^G`` (:func:`signal_chance`).
:func:`predicted_takeover` turns that into steps until the scratchpad passes half the
answers, with one rate constant fitted to one measured start.
"""

from __future__ import annotations

import hashlib
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

from .configs import EMERGENCE_KINDS as KINDS, EmergenceConfig
from ..engine.forward import forward_logprobs
from ..engine.runs import check_model_dir, read_rows
from ..engine.sampler import SamplingConfig
from ..model import load_policy
from ..rollout import rollout
from ..tasks import RewardSet, addition_task, correctness_reward
from .experiments import (
    CURVE_SHARE,
    EMERGENCE_OUT,
    EMERGENCE_SEEDS,
    G_SHARES,
    GROUP_SIZES,
    LIMITS,
    RUNGS,
    SHARES,
    emergence_run,
    grid_name,
    model_cfg,
)
from .sft import encode_batch, optimizer_step, whole_loss
from .stats import steps_to


def check_config(cfg: EmergenceConfig) -> None:
    if cfg.kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {cfg.kind!r}")
    if not 0 < cfg.share < 0.7:
        raise ValueError(
            f"share must be in (0, 0.7): the shipped model's scratchpad share is ~0.70 and the shift only lowers it (got {cfg.share})"
        )
    if not cfg.lr > 0 or cfg.max_steps < 1 or cfg.corrupt_steps < 0 or cfg.prime_steps < 0 or cfg.prime_traces < 1:
        raise ValueError("needs lr > 0, max_steps >= 1, corrupt_steps >= 0, prime_steps >= 0 and prime_traces >= 1")


# --------------------------------------------------------------------------- #
# Traces
# --------------------------------------------------------------------------- #


def wrong_trace(row: dict, rng: random.Random) -> str:
    """The row's scratchpad with every partial sum off by 1-9 (up or down), carried on:
    ``15+1+12=`` -> ``15+1=19;19+12=27#27``. The structure is right, the arithmetic not."""
    terms = [int(x) for x in row["prompt"].rstrip("=").split("+")]
    acc, steps = terms[0], []
    for t in terms[1:]:
        new = max(0, acc + t + rng.choice([-1, 1]) * rng.randint(1, 9))
        steps.append(f"{acc}+{t}={new}")
        acc = new
    return ";".join(steps) + f"#{acc}"


def first_token_logprob(model, tokenizer, prompts: Sequence[str], token: str) -> torch.Tensor:
    """(B,) log-probability of ``token`` (one character) as the first completion token."""
    p_ids, p_mask, t_ids, t_mask = encode_batch(tokenizer, list(prompts), [token] * len(prompts), model.device)
    return forward_logprobs(model, p_ids, p_mask, t_ids, t_mask)["logprobs"][:, 0]


def continuation_loss(model, tokenizer, prompts: Sequence[str], targets: Sequence[str]) -> torch.Tensor:
    """Mean NLL of each target's tokens after its first (the scratchpad's working, not its choice)."""
    p_ids, p_mask, t_ids, t_mask = encode_batch(tokenizer, list(prompts), list(targets), model.device)
    logp = forward_logprobs(model, p_ids, p_mask, t_ids, t_mask)[
        "logprobs"
    ]  # (B, T); the mask is also the attention mask
    after = t_mask.clone()
    after[:, 0] = 0  # the loss skips the first token; attention still sees it
    return -(logp * after).sum() / after.sum()


@torch.no_grad()
def scratchpad_share(model, tokenizer, prompts: Sequence[str]) -> float:
    """The probability that a sampled answer starts a scratchpad (its first token is not ``#``), averaged over prompts."""
    return float(1 - first_token_logprob(model, tokenizer, prompts, "#").exp().mean())


# --------------------------------------------------------------------------- #
# Building the models
# --------------------------------------------------------------------------- #


def _shift_choice(model, tokenizer, train, probe, target_share, cfg, rng, continuation) -> tuple[int, float]:
    """Train the first token toward ``#`` (and the working after it on ``continuation(row)``)
    until the probe prompts' scratchpad share is at most ``target_share``. Returns (steps, share).

    The choice's loss is the log of the share itself, log P(first token is not ``#``): its
    gradient does not fade as the share falls (that of -log P(#) shrinks with the share, and
    below ~1% the working's loss drowns it)."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    share = scratchpad_share(model, tokenizer, probe)
    bar = tqdm(total=cfg.max_steps, desc=f"choice -> {target_share:g}", disable=not cfg.progress)
    steps = 0
    while share > target_share:
        if steps == cfg.max_steps:
            raise RuntimeError(
                f"the scratchpad share is still {share:.4f} after max_steps={cfg.max_steps}; raise max_steps or lr"
            )
        rows = [rng.choice(train) for _ in range(64)]
        prompts = [r["prompt"] for r in rows]
        log_share = torch.log(
            -torch.expm1(first_token_logprob(model, tokenizer, prompts, "#"))
        )  # (64,) log P(first token is not #)
        loss = log_share.mean() + continuation_loss(model, tokenizer, prompts, [continuation(r) for r in rows])
        optimizer_step(model, opt, loss)
        steps += 1
        share = scratchpad_share(model, tokenizer, probe)
        bar.update()
        bar.set_postfix(share=f"{share:.5f}")
    bar.close()
    return steps, share


def build(cfg: EmergenceConfig):
    """The model of ``cfg`` in memory: returns (model, tokenizer, log) without saving.
    The primed models start from the incompetent model at the same share (built first if missing)."""
    check_config(cfg)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    task = addition_task()
    probe = [
        r["prompt"] for r in random.Random(cfg.seed + 1).sample(task.train, 256)
    ]  # train prompts: the stopping rule never sees the test split
    if cfg.kind in ("primed", "primed_wrong"):
        from dataclasses import replace

        # the incompetent model at the same share: in its default folder, or beside an out_dir
        beside = str(Path(cfg.out_dir).parent / f"incompetent_{cfg.share:g}") if cfg.out_dir else ""
        start, _ = ensure_model(replace(cfg, kind="incompetent", out_dir=beside, overwrite=False))
        model, tokenizer = load_policy(str(start), device="cpu")
        model.train()
        log: dict = {"start_share": scratchpad_share(model, tokenizer, probe), "start_model": str(start)}
        rows = rng.sample(task.train, cfg.prime_traces)
        traces = [
            (r["prompt"], wrong_trace(r, rng) if cfg.kind == "primed_wrong" and i % 2 else r["target"])
            for i, r in enumerate(rows)
        ]
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
        for _ in tqdm(range(cfg.prime_steps), desc="priming", disable=not cfg.progress):
            b = [rng.choice(traces) for _ in range(32)]
            optimizer_step(model, opt, whole_loss(model, tokenizer, [p for p, _ in b], [t for _, t in b]))
        log["prime_steps"], log["prime_wrong_frac"] = cfg.prime_steps, 0.5 if cfg.kind == "primed_wrong" else 0.0
        model.eval()
        return model, tokenizer, log
    model, tokenizer = load_policy(None, device="cpu")
    model.train()
    log = {"start_share": scratchpad_share(model, tokenizer, probe)}
    if cfg.kind == "incompetent":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
        for _ in tqdm(range(cfg.corrupt_steps), desc="wrong sums", disable=not cfg.progress):
            rows = [rng.choice(task.train) for _ in range(64)]
            optimizer_step(
                model,
                opt,
                continuation_loss(model, tokenizer, [r["prompt"] for r in rows], [wrong_trace(r, rng) for r in rows]),
            )
        log["corrupt_steps"] = cfg.corrupt_steps
        log["choice_steps"], log["shifted_share"] = _shift_choice(
            model, tokenizer, task.train, probe, cfg.share, cfg, rng, lambda r: wrong_trace(r, rng)
        )
    else:
        target = cfg.absent_share if cfg.kind == "absent" else cfg.share
        log["choice_steps"], log["shifted_share"] = _shift_choice(
            model, tokenizer, task.train, probe, target, cfg, rng, lambda r: r["target"]
        )
    model.eval()
    return model, tokenizer, log


def folder_sha256(folder: Path) -> str:
    """sha256 of the model weights file (what "rebuilds bit for bit" compares)."""
    return hashlib.sha256((Path(folder) / "model.safetensors").read_bytes()).hexdigest()


def make_model(cfg: EmergenceConfig | None = None, profile_prompts: int = 200, profile_samples: int = 8) -> dict:
    """Build, save and profile the model of ``cfg``; the report (share, competence,
    accuracy, steps, sha256) is also written to ``OUT/emergence_report.json``."""
    cfg = cfg or EmergenceConfig()
    check_config(cfg)
    out = cfg.folder()
    check_model_dir(out, cfg.overwrite)
    t0 = time.perf_counter()
    model, tokenizer, log = build(cfg)
    seconds = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    task = addition_task()
    prof = strategy_profile(model, tokenizer, task.test[:profile_prompts], n=profile_samples)
    report = {
        "kind": cfg.kind,
        **{k: round(v, 5) if isinstance(v, float) else v for k, v in {**log, **prof}.items()},
        "build_seconds": round(seconds, 1),
        "sha256": folder_sha256(out),
        "config": {**asdict(cfg), "out_dir": str(out)},
    }
    (out / "emergence_report.json").write_text(json.dumps(report, indent=2))
    return report


def built_report(cfg: EmergenceConfig) -> dict | None:
    """The report of ``cfg``'s model if it is built with these settings (where it is saved and
    how it was run do not count), else None."""
    rep = cfg.folder() / "emergence_report.json"
    if not rep.exists():
        return None
    report = json.loads(rep.read_text())
    ignored = ("overwrite", "progress", "out_dir")
    settings = lambda d: {k: v for k, v in d.items() if k not in ignored}  # noqa: E731
    return report if settings(report["config"]) == settings(asdict(cfg)) else None


def ensure_model(cfg: EmergenceConfig) -> tuple[Path, dict]:
    """The folder of ``cfg``'s model and its report, building it first if it is not there
    (or was built with other settings)."""
    out = cfg.folder()
    report = built_report(cfg)
    if report is not None:
        return out, report
    from dataclasses import replace

    return out, make_model(
        replace(cfg, overwrite=True),
        **({"profile_prompts": 8, "profile_samples": 2} if cfg.out_dir.startswith("runs/emergence_fast") else {}),
    )


# --------------------------------------------------------------------------- #
# Measuring a model's strategies
# --------------------------------------------------------------------------- #


def _prefixed_reward(prompts, completions, answer, first, **_):
    """Correctness of the answer the forced first token starts (``first + completion``)."""
    return correctness_reward(prompts, [f + c for f, c in zip(first, completions)], answer)


@torch.no_grad()
def forced_accuracy(model, tokenizer, rows: Sequence[dict], first: str, n: int = 8, seed: int = 0) -> float:
    """Sampled accuracy when the first completion token is forced: ``first="scratchpad"``
    puts the scratchpad's own first character (the first term's first digit), ``"#"`` a direct answer."""
    forced = [{**r, "first": (r["target"][0] if first == "scratchpad" else first)} for r in rows]
    forced = [{**r, "prompt": r["prompt"] + r["first"]} for r in forced]
    rewards = RewardSet([("correct", _prefixed_reward, 1.0)])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        ro = rollout(model, tokenizer, forced, n, rewards, SamplingConfig(max_new_tokens=48), old_logprobs=False)
    return float(ro.correct.mean())


def strategy_profile(model, tokenizer, rows: Sequence[dict], n: int = 8, seed: int = 0) -> dict:
    """``share`` p (exact, from the first token), ``competence`` q (accuracy with the
    scratchpad forced), ``direct_accuracy`` d (with ``#`` forced) and ``predicted_accuracy``
    p q + (1 - p) d, on ``rows`` with ``n`` samples each."""
    p = scratchpad_share(model, tokenizer, [r["prompt"] for r in rows])
    q = forced_accuracy(model, tokenizer, rows, "scratchpad", n, seed)
    d = forced_accuracy(model, tokenizer, rows, "#", n, seed)
    return {
        "share": p,
        "competence": q,
        "direct_accuracy": d,
        "predicted_accuracy": p * q + (1 - p) * d,
        "profile_answers": len(rows) * n,
    }


# --------------------------------------------------------------------------- #
# The law of emergence
# --------------------------------------------------------------------------- #


def signal_chance(p: float, q: float, G: int) -> float:
    """Probability that a group of ``G`` answers holds at least one right scratchpad
    answer, for share ``p`` and competence ``q``: 1 - (1 - p q)^G."""
    return 1.0 - (1.0 - p * q) ** G


def batch_chance(p: float, q: float, G: int, prompts: int) -> float:
    """Probability that a step's batch of ``prompts`` groups holds at least one right scratchpad answer."""
    return 1.0 - (1.0 - signal_chance(p, q, G)) ** prompts


def predicted_takeover(
    p0: float, q: float, G: int, rate: float, prompts: int | None = None, half: float = 0.5, max_steps: int = 200
) -> float:
    """Steps until the share passes ``half`` if each step raises the share's logit by ``rate``
    times a chance, one of two laws fixed before the grid was run:

    * ``prompts=None``, **the per-group law**: the chance that a group carries the signal
      (:func:`signal_chance`). The push grows with the share of groups that reward a
      scratchpad answer, as a plain gradient step would.
    * ``prompts=P``, **the per-batch law**: the chance that any of the step's ``P`` groups
      does (:func:`batch_chance`). Adam divides each parameter's step by its recent
      gradient size, so one informative group moves the choice about as far as many.

    Either way, once the signal is in (nearly) every step the logit climbs at a constant
    rate: a logistic curve in the share. Returns ``inf`` beyond ``max_steps``.
    """
    chance = (lambda p: signal_chance(p, q, G)) if prompts is None else (lambda p: batch_chance(p, q, G, prompts))
    goal = math.log(half / (1 - half))
    logit = math.log(p0 / (1 - p0))
    for step in range(1, max_steps + 1):
        push = rate * chance(1 / (1 + math.exp(-logit)))
        logit += push
        if logit >= goal:
            return step - (logit - goal) / push  # where within the step it crossed
    return math.inf


def fit_rate(p0: float, q: float, G: int, steps: float, prompts: int | None = None) -> float:
    """The ``rate`` for which :func:`predicted_takeover` gives ``steps`` at (p0, q, G) (bisection)."""
    lo, hi = 1e-4, 20.0
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        if predicted_takeover(p0, q, G, mid, prompts) > steps:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def takeover_step(df, key: str = "scratchpad_frac", half: float = 0.5) -> float:
    """The first training step whose batch has at least ``half`` scratchpad answers (``inf`` if none)."""
    step = steps_to(df, half, key) if key in df else math.nan
    return math.inf if math.isnan(step) else step


# --------------------------------------------------------------------------- #
# The runs (notebook 12 and benchmarks/emergence.py): rlalgos.workbook.experiments defines them
# --------------------------------------------------------------------------- #


def model_dir(kind: str, share: float | None = None):
    """The folder of an experiment's base model, built on first use (None: the shipped model)."""
    if kind == "default":
        return None
    return ensure_model(model_cfg(kind, share))[0]


def curve_runs(seeds=EMERGENCE_SEEDS, out: Path = EMERGENCE_OUT, **over) -> list:
    """The R1-Zero curve: vanilla GRPO from the rare model (share 0.03), evaluated every 2 steps."""
    return [
        emergence_run(
            grid_name(CURVE_SHARE, 8), model_dir("rare", CURVE_SHARE), "grpo", s, out, **{"eval_every": 2, **over}
        )
        for s in seeds
    ]


def grid_runs(seeds=EMERGENCE_SEEDS, out: Path = EMERGENCE_OUT, **over) -> list:
    """How rare can it be: every share at G = 8 and G = 4, 16 at the share in G_SHARES (the curve's runs are the 0.03, G = 8 point)."""
    points = [(p, 8) for p in SHARES if p != CURVE_SHARE] + [(p, G) for p in G_SHARES for G in GROUP_SIZES if G != 8]
    return [
        emergence_run(grid_name(p, G), model_dir("rare", p), "grpo", s, out, group_size=G, **over)
        for p, G in points
        for s in seeds
    ]


def limit_runs(seeds=EMERGENCE_SEEDS, out: Path = EMERGENCE_OUT, **over) -> list:
    """What RL cannot do: GRPO from the incompetent, absent and primed models (the rare one at the same share is the grid's)."""
    return [
        emergence_run(f"grpo_{k}", model_dir(k), "grpo", s, out, **over) for k in LIMITS if k != "rare" for s in seeds
    ]


def rung_runs(base: str, seeds=EMERGENCE_SEEDS, out: Path = EMERGENCE_OUT, rungs=tuple(RUNGS), **over) -> list:
    """Expert iteration, REINFORCE, GRPO and DAPO at equal budgets from ``base`` ('rare': share 0.03, or 'default')."""
    md = model_dir("rare", CURVE_SHARE) if base == "rare" else None
    runs = []
    for r in rungs:
        algo, algo_over = RUNGS[r]
        if r == "grpo" and base == "rare":
            runs += curve_runs(seeds, out, **over)  # the same runs
        else:
            runs += [emergence_run(f"{r}_{base}", md, algo, s, out, algo_over, **over) for s in seeds]
    return runs


# --------------------------------------------------------------------------- #
# Reading the runs
# --------------------------------------------------------------------------- #


def profile_table(models: dict) -> pd.DataFrame:
    """One line per base model, from its report: share p, competence q, direct accuracy d,
    the accuracy they predict (p q + (1 - p) d), and the chance that a group of 8 holds a right scratchpad answer."""
    lines = []
    for name, report in models.items():
        p, q, d = report["share"], report["competence"], report["direct_accuracy"]
        lines.append(
            {
                "model": name,
                "share p": p,
                "competence q": q,
                "direct d": d,
                "p q + (1-p) d": p * q + (1 - p) * d,
                "1-(1-pq)^8": signal_chance(p, q, 8),
            }
        )
    return pd.DataFrame(lines).set_index("model")


def samples_at(run_dir, steps: Sequence[int]) -> pd.DataFrame:
    """The answers the run's evaluations logged (the first sample of each of the first 4 test prompts) at ``steps``: one column per step."""
    rows = read_rows(Path(run_dir) / "samples.jsonl")
    table = {}
    for s in steps:
        at = [r for r in rows if r["step"] == s]
        table[f"step {s}"] = [f"{r['completion']}  {'right' if r['correct'] else 'wrong'}" for r in at]
        table.setdefault("prompt", [r["prompt"] for r in at])
    return pd.DataFrame(table).set_index("prompt")


def pass_curve(model, cache: Path, rows: Sequence[dict], n: int, ks: Sequence[int], seed: int = 1) -> pd.DataFrame:
    """pass@k for ``ks`` (mean over ``rows`` with its standard error) from ``n`` samples per prompt of ``model``
    (a folder, or None for the shipped model), the samples cached in ``cache``."""
    from . import exploration as ex

    task = addition_task()
    samples = ex.model_samples(str(model) if model else None, cache, task, rows, n=n, seed=seed)
    return ex.pass_at_k_curve(ex.per_prompt(samples, ks), ks)


def prepare_models(models: Sequence[tuple[str, float | None]]) -> None:
    """Build the base models a claim trains from, if they are not there yet."""
    ensure_models([model_cfg(kind, share, fast=False) for kind, share in models], jobs=1)


def _ensure_one(cfg: EmergenceConfig) -> str:
    """A worker's job: one model, one thread."""
    torch.set_num_threads(1)
    return str(ensure_model(cfg)[0])


def ensure_models(cfgs: Sequence[EmergenceConfig], jobs: int = 2) -> list[tuple[Path, dict]]:
    """:func:`ensure_model` of each, ``jobs`` at a time in worker processes (the primed models
    after the rest: they start from the incompetent one). Returns each (folder, report)."""
    todo = [c for c in cfgs if built_report(c) is None]
    if todo and jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        first = [c for c in todo if c.kind not in ("primed", "primed_wrong")]
        with ProcessPoolExecutor(min(jobs, len(todo)), mp_context=multiprocessing.get_context("spawn")) as pool:
            for batch in (first, [c for c in todo if c not in first]):
                list(pool.map(_ensure_one, batch))
    return [ensure_model(c) for c in cfgs]
