"""The one training loop every algorithm runs on.

    sample prompts -> rollout -> rewards -> algorithm.update -> one metrics row
    -> (every eval_every steps) evaluation on the test split -> checkpoint

Rows are appended to ``RUN_DIR/metrics.jsonl`` and flushed as soon as they are
made, so an interrupted run keeps every row it computed. The function returns
the rows as a pandas DataFrame.
"""

from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from tqdm.auto import tqdm

from . import core
from .engine import batch, distributed, doctor
from .engine.watch import watch
from .algorithms import get_algorithm
from .config import TrainConfig, lr_warning, make_config
from .engine.lora import AdaptersOff, add_lora, load_adapters
from .engine.precision import SamplingCopy, resolve_device
from .engine.resume import PromptSampler, restore_trainer_state, save_run_checkpoint
from .engine.settings import EngineSettings
from .model import ModelReward, count_parameters, frozen_copy, load_policy
from .record import Rollout
from .rollout import rollout
from .engine.runs import (
    JsonlLog,
    check_run_dir,
    clear_run_dir,
    load_checkpoint_state,
    load_metrics,
    load_run_config,
    read_rows,
    RunMetrics,
    run_metrics,
    rewrite_rows,
)
from .engine.sampler import SamplingConfig, check_chat_template
from .tasks import Task, breakdown_metrics, get_task, reward_columns
from .engine.trackers import parse_report_to, with_trackers

__all__ = ["TrainConfig", "Run", "build_run", "run_loop", "train", "resume", "evaluate", "load_metrics"]


def set_seed(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


# --------------------------------------------------------------------------- #
# Evaluation
# --------------------------------------------------------------------------- #


@torch.no_grad()
def evaluate(
    policy,
    tokenizer,
    task: Task,
    rows: list[dict] | None = None,
    n_samples: int = 4,
    temperature: float = 1.0,
    max_new_tokens: int = 0,
    seed: int = 0,
    greedy: bool = True,
    n_show: int = 0,
    top_p: float = 1.0,
    chat_template: bool = False,
    engine: EngineSettings | None = None,
) -> dict:
    """Accuracy on test rows: greedy, and sampled (pass@1 = mean over ``n_samples``
    samples, plus pass@k for k = n_samples).

    Sampling runs in a forked RNG seeded with ``seed``: evaluation never changes
    the training run's random stream, and every evaluation of a run sees the same
    random numbers (less noise between steps).
    Returns ``{"eval_accuracy", "eval_greedy_accuracy", "eval_pass@k", "eval_entropy", ...}`` and,
    if ``n_show`` > 0, ``"samples"``: a few prompt/completion/reward dicts.
    ``top_p`` and ``chat_template`` are as in :class:`TrainConfig`; ``engine``: how the forward
    passes run (:class:`~rlalgos.engine.settings.EngineSettings`; its defaults when None).
    """
    rows = task.test if rows is None else rows
    engine = engine or EngineSettings()
    sampling = engine.sampling(
        max_new_tokens=max_new_tokens or task.max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        chat_template=chat_template,
    )
    out = {}
    devices = [policy.device] if policy.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        ro = rollout(
            policy, tokenizer, rows, n_samples, task.rewards, sampling, old_logprobs=False, correct_key=task.correct_key
        )
    correct = ro.correct.view(-1, n_samples)  # (P, k)
    out["eval_accuracy"] = correct.mean().item()
    if n_samples > 1:
        out[f"eval_pass@{n_samples}"] = sum(
            core.pass_at_k(n_samples, int(c), n_samples) for c in correct.sum(1).tolist()
        ) / len(rows)
    out["eval_completion_len"] = ro.lengths.mean().item()
    out["eval_truncated_frac"] = ro.truncated.float().mean().item()
    # entropy of the policy on its own test answers: the same prompts for every run, so
    # comparable across algorithms (the logged `entropy` is over each run's trained batch)
    _, ent = engine.logprobs(policy, ro, with_entropy=True)  # (N, T)
    out["eval_entropy"] = core.masked_mean(ent, ro.completion_mask.to(ent.dtype)).item()
    for k, v in ro.reward_parts.items():
        out[f"eval_reward/{k}"] = v.mean().item()
    for k, v in task.completion_metrics(ro.completions).items():  # e.g. the share of answers that show their working
        out[f"eval_{k}"] = v
    for k, (total, n) in breakdown_metrics(
        task, ro.rows, ro.completions, ro.correct.tolist()
    ).items():  # per level, if the task has levels
        out[f"eval_{k}"] = total / n
    if greedy:
        g = rollout(
            policy,
            tokenizer,
            rows,
            1,
            task.rewards,
            sampling,
            old_logprobs=False,
            correct_key=task.correct_key,
            greedy=True,
        )
        out["eval_greedy_accuracy"] = g.correct.mean().item()
    if n_show:
        out["samples"] = [
            {"prompt": p, "completion": c, "answer": r.get("answer"), "reward": float(x), "correct": float(y)}
            for p, c, r, x, y in list(
                zip(ro.prompts, ro.completions, ro.rows, ro.rewards.tolist(), ro.correct.tolist())
            )[: n_show * n_samples : n_samples]
        ]
    return out


def check_rewards(task: Task) -> None:
    """Call every reward function once on two test rows (an empty answer and the
    task's own sample answer) so a broken one fails before the run folder is touched."""
    rows = (task.test or task.train)[:2]
    completions = ["" if i % 2 == 0 else task.sample_answer(r) for i, r in enumerate(rows)]
    task.rewards([r["prompt"] for r in rows], completions, reward_columns(rows))


# --------------------------------------------------------------------------- #
# The loop
# --------------------------------------------------------------------------- #


@dataclass
class Run:
    """Everything one training job holds, built and checked by :func:`build_run`
    before the run folder is touched; :func:`run_loop` runs it."""

    cfg: TrainConfig
    algo_cfg: object  # the algorithm's config (rlalgos.config.AlgoConfig subclass)
    task: Task
    policy: object  # the transformers model being trained
    tokenizer: object
    algo: object  # the rlalgos.algorithms.Algorithm that updates it
    engine: EngineSettings  # how its forward passes run, what it measures and corrects
    sampling: SamplingConfig
    ref_model: object | None  # the reference policy, if a KL to it is trained on or logged
    lora: object | None  # peft's wrapper with --lora-rank (it saves the adapters), else None
    prompts: PromptSampler
    run_dir: Path
    start: int  # steps already done (resume)
    resumed: bool  # continued from a checkpoint
    main: bool  # process 0 (the only one in a plain run): it writes the run folder
    local_prompts: int  # prompts this process samples per step
    sampler: SamplingCopy | None = (
        None  # rollout_dtype below float32 or rollout_sync_every > 1: the copy of the policy that samples, else None (the policy samples)
    )


def build_run(
    cfg: TrainConfig, algo_cfg=None, policy=None, tokenizer=None, task: Task | None = None, resume: bool = False
) -> Run:
    """Load and check everything a run needs, then prepare its folder: a bad setting
    or a broken reward fails before anything in ``cfg.out_dir`` changes. With
    ``resume`` the weights, optimizer, algorithm state, RNGs and prompt order come
    back from the checkpoint."""
    cfg.validate()
    parse_report_to(cfg.report_to)  # an unknown or missing tracker: one line, before anything runs
    device = distributed.setup(cfg.device, cfg.prompts_per_step)  # cfg.device itself in one process
    main, local_prompts = distributed.is_main(), cfg.prompts_per_step // distributed.world_size()
    algo_cls = get_algorithm(cfg.algo)
    algo_cfg = algo_cfg or make_config(cfg.algo)
    algo_cfg.validate(cfg.group_size, local_prompts * cfg.group_size)
    resolve_device(device)  # a device that does not exist: one line, before anything else
    run_dir = Path(cfg.out_dir)
    replace_old = False if resume else check_run_dir(run_dir, cfg.overwrite)
    distributed.barrier()  # every process has checked the folder before process 0 changes it
    state = distributed.main_first(lambda: load_checkpoint_state(run_dir)) if resume else None
    if (
        state is not None and cfg.steps <= state["step"]
    ):  # nothing to train: the folder, its config.json included, stays as it is
        raise ValueError(
            f"{run_dir} is at step {state['step']}; pass --steps > {state['step']} to train on (the folder is untouched)"
        )
    task = task or get_task(cfg.task)
    if cfg.reward_model or cfg.rule_weight != 1.0:
        extra = (
            [("rm", ModelReward.from_pretrained(cfg.reward_model, device), cfg.rm_weight)] if cfg.reward_model else []
        )
        task = task.with_rewards(cfg.rule_weight, extra)
    check_rewards(task)
    set_seed(
        distributed.rank_seed(cfg.seed)
    )  # several processes: each its own stream, so they sample different answers
    if policy is None:
        policy, tokenizer = load_policy(cfg.model or None, device, cfg.dtype)
    engine = EngineSettings.from_config(cfg, policy.device)
    lora = (
        add_lora(policy, cfg) if cfg.lora_rank else None
    )  # adapters put into policy in place; lora saves them and switches them off
    if cfg.chat_template:
        check_chat_template(tokenizer)
    if replace_old and main:
        clear_run_dir(run_dir)
    if main:
        run_dir.mkdir(parents=True, exist_ok=True)
    if task.note and not resume and main:
        print(f"rlalgos: {task.note}", file=sys.stderr)
    if (
        not cfg.lora_rank
        and (warning := lr_warning(count_parameters(policy), cfg.algo, algo_cfg))
        and not resume
        and main
    ):
        print(f"rlalgos: warning: {warning}", file=sys.stderr)
    sampling = engine.sampling(
        max_new_tokens=cfg.max_new_tokens or task.max_new_tokens,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        sampler=cfg.sampler,
        chat_template=cfg.chat_template,
    )
    algo = algo_cls(policy, algo_cfg, max_new_tokens=sampling.max_new_tokens, engine=engine)
    # the reference, a second copy of the model, only if a KL to it is trained on or logged;
    # it is the starting policy, also when resuming: copied before the checkpoint's weights are loaded.
    # With LoRA it is no copy: the policy with its adapters switched off
    ref_model = (AdaptersOff(lora) if lora else frozen_copy(policy)) if algo.needs_ref or cfg.log_kl else None
    start = 0
    if state is not None:
        if lora:
            load_adapters(lora, run_dir / "checkpoint")
        else:
            trained, _ = load_policy(run_dir / "checkpoint", policy.device, policy.dtype)
            policy.load_state_dict(trained.state_dict())
        start = state["step"]
    prompts = PromptSampler(task.train, cfg.seed)
    if state is not None:
        restore_trainer_state(state, algo, prompts)
    distributed.broadcast_parameters(algo.parameters())  # several processes: all start from process 0's weights
    sampler = (
        SamplingCopy(policy, cfg.rollout_dtype) if cfg.uses_sampling_copy else None
    )  # the sampling engine's copy, synced in run_loop
    if main:
        (run_dir / "config.json").write_text(
            json.dumps({"train": asdict(cfg), "algo": asdict(algo_cfg), "task": task.info()}, indent=2)
        )
    return Run(
        cfg,
        algo_cfg,
        task,
        policy,
        tokenizer,
        algo,
        engine,
        sampling,
        ref_model,
        lora,
        prompts,
        run_dir,
        start,
        resume,
        main,
        local_prompts,
        sampler,
    )


def run_loop(run: Run) -> list[dict]:
    """Run the steps of a built run, appending each metrics row to ``metrics.jsonl`` as
    soon as it is made, evaluating every ``eval_every`` steps and checkpointing every
    ``save_every``. Returns every row (on resume, the earlier ones too)."""
    cfg, algo, sampling, main = run.cfg, run.algo, run.sampling, run.main

    def sample(n_prompts: int, temperature: float | None = None) -> Rollout:
        """The only way an algorithm gets samples: ``n_prompts`` x G fresh completions."""
        s = sampling if temperature is None else replace(sampling, temperature=temperature)
        share = distributed.my_share(
            run.prompts(n_prompts * distributed.world_size())
        )  # several processes: the same draw, split
        return rollout(
            run.policy,
            run.tokenizer,
            share,
            cfg.group_size,
            run.task.rewards,
            s,
            ref_model=run.ref_model,
            old_logprobs=algo.needs_old_logprobs,
            correct_key=run.task.correct_key,
            ref_sample=0
            if algo.needs_ref
            else cfg.kl_sample_rows,  # a KL that is only logged may be measured on a subsample
            sampler=run.sampler.model if run.sampler else None,
            rollout_logprobs=cfg.records_rollout_logprobs,
        )  # rollout_dtype: the copy samples

    eval_rows = run.task.test[: cfg.eval_prompts] if cfg.eval_prompts else run.task.test
    metrics_path, samples_path = run.run_dir / "metrics.jsonl", run.run_dir / "samples.jsonl"
    # the logs: on resume keep what the checkpoint covers, drop the rest (it is recomputed)
    rows = distributed.broadcast(read_rows(metrics_path, run.start) if run.resumed and main else [])
    if main:
        rewrite_rows(metrics_path, rows)  # atomic: a kill now loses nothing the checkpoint covers
        rewrite_rows(samples_path, read_rows(samples_path, run.start) if run.resumed else [])
    # --report-to: rows also go to tensorboard/wandb/trackio (process 0 only)
    metrics_log = (
        with_trackers(JsonlLog(metrics_path), cfg.report_to, run.run_dir, run.resumed, run.start)
        if main
        else distributed.NullLog()
    )
    samples_log = JsonlLog(samples_path) if main else distributed.NullLog()

    def run_eval(step: int) -> dict:  # on process 0; the others get its numbers
        ev = distributed.broadcast(
            evaluate(
                run.policy,
                run.tokenizer,
                run.task,
                eval_rows,
                cfg.eval_samples,
                cfg.temperature,
                sampling.max_new_tokens,
                seed=cfg.seed + 10_000,
                n_show=4,
                top_p=cfg.top_p,
                chat_template=cfg.chat_template,
                engine=run.engine,
            )
            if main
            else None
        )
        for s in ev.pop("samples"):
            samples_log.write({"step": step, **s})
        return ev

    def checkpoint(step: int) -> None:
        save_run_checkpoint(
            run.run_dir, run.lora or run.policy, run.tokenizer, algo, step, run.prompts
        )  # with LoRA: the adapters

    saved = run.start if run.resumed else None  # the step of the checkpoint on disk
    bar = tqdm(
        range(run.start + 1, cfg.steps + 1),
        desc=cfg.algo,
        disable=not cfg.progress or not main,
        dynamic_ncols=True,
        initial=run.start,
        total=cfg.steps,
    )
    try:
        if run.start == 0:
            row0 = {"step": 0, **run_eval(0)}
            metrics_log.write(row0)
            rows.append(row0)
        for step in bar:
            t0 = time.perf_counter()
            if run.sampler and (step == run.start + 1 or (step - 1) % cfg.rollout_sync_every == 0):
                run.sampler.sync()  # the engine's weight sync: every step, or every rollout_sync_every steps (a stale sampler)
            ro, info = algo.collect(sample, run.local_prompts)
            t1 = time.perf_counter()
            m = algo.update(ro)  # skips the optimizer step itself if anything is non-finite
            t2 = time.perf_counter()
            row = {"step": step, **batch.rollout_stats(ro), **info, **m}  # the whole batch, every process's rows
            row.update(
                batch.ratios(breakdown_metrics(run.task, ro.rows, ro.completions, ro.correct.tolist()))
            )  # per level, if the task has levels
            n = len(ro.completions)
            row.update(
                batch.ratios({k: (v * n, n) for k, v in run.task.completion_metrics(ro.completions).items()})
            )  # e.g. the batch's scratchpad share
            row.update({f"{k}_seconds": v for k, v in ro.diagnostics.seconds.items()})  # generate, reward, logprobs
            row["rollout_seconds"], row["update_seconds"] = t1 - t0, t2 - t1
            row["step_seconds"] = t2 - t0
            row["tokens_per_second"] = batch.total(ro.lengths.sum().item()) / max(t2 - t0, 1e-9)
            # the doctor reads the rows so far (the run's numbers are the same without it): the progress bar names what fires,
            # and a collapse that has lasted doctor.COLLAPSE_STEPS steps (or that a non-finite step follows) stops the run
            said = watch(rows + [row], sampling.max_new_tokens, nonfinite_now=bool(m.get("nonfinite")))
            if said.stop and cfg.stop_on_collapse:
                row["stopped"] = said.stop.line()
                metrics_log.write(row)
                rows.append(row)
                kept = (
                    f"last checkpoint kept: step {saved}"
                    if saved is not None
                    else f"no checkpoint was written before it (save_every {cfg.save_every})"
                )
                raise doctor.RunCollapsed(
                    f"{said.stop.line()}. Rows so far: {metrics_path}; {kept}; --no-stop-on-collapse (stop_on_collapse=False) trains on",
                    said.stop,
                )
            if m.get("nonfinite") and cfg.on_nonfinite == "stop":
                row["stopped"] = "non-finite loss or gradient; the update was not applied"
                metrics_log.write(row)
                rows.append(row)
                raise FloatingPointError(
                    f"step {step}: non-finite loss or gradient (loss={m.get('loss')}, grad_norm={m.get('grad_norm')}); "
                    f"lower lr or check the rewards, or pass on_nonfinite=skip. Rows so far: {metrics_path}; last good checkpoint kept"
                )
            if (cfg.eval_every and step % cfg.eval_every == 0) or step == cfg.steps:
                row.update(run_eval(step))
            metrics_log.write(row)
            rows.append(row)
            bar.set_postfix(
                reward=f"{row['reward_mean']:.3f}",
                acc=f"{row['accuracy']:.2f}",
                **({"eval": f"{row['eval_accuracy']:.2f}"} if "eval_accuracy" in row else {}),
                **({"doctor": said.postfix()} if said.postfix() else {}),
            )
            if (
                cfg.save_every
                and step % cfg.save_every == 0
                and step != cfg.steps
                and not (said.pending and cfg.stop_on_collapse)
            ):
                checkpoint(step)  # not while a collapse is under way: the checkpoint a stop keeps is from before it
                saved = step
        checkpoint(cfg.steps)
    finally:
        bar.close()
        metrics_log.close()
        samples_log.close()
    return rows


def train(
    cfg: TrainConfig, algo_cfg=None, policy=None, tokenizer=None, task: Task | None = None, resume: bool = False
) -> RunMetrics:
    """Run one training job and return its metrics rows (:class:`~rlalgos.engine.runs.RunMetrics`,
    a DataFrame whose ``run_dir`` is ``cfg.out_dir``).

    ``algo_cfg`` defaults to the algorithm's own defaults; ``policy``/``tokenizer``
    and ``task`` may be passed in (notebooks) instead of loaded from ``cfg``.
    With ``resume=True`` the run continues from ``cfg.out_dir/checkpoint``
    (see :func:`resume`). Under ``torchrun`` each process samples
    ``prompts_per_step / WORLD_SIZE`` prompts and process 0 alone writes the run
    folder (:mod:`rlalgos.engine.distributed`).
    """
    return run_metrics(run_loop(build_run(cfg, algo_cfg, policy, tokenizer, task, resume)), cfg.out_dir)


def resume(run_dir: str | Path, steps: int | None = None) -> RunMetrics:
    """Continue a run from its last checkpoint, with the config it was started with
    (optionally a new total ``steps``). Optimizer, algorithm state, RNGs, prompt
    order and step counter are restored, so on CPU the rows match an
    uninterrupted run with the same seed."""
    cfg, algo_cfg = load_run_config(run_dir)
    return train(replace(cfg, out_dir=str(run_dir), steps=cfg.steps if steps is None else steps), algo_cfg, resume=True)
