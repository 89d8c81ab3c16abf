"""rlalgos GRPO and TRL's GRPOTrainer, side by side on the same job.

Both start from the shipped checkpoint, train on the same prompts with the same
reward (``correctness_reward``) and the same settings: G=8, 16 prompts per step,
48 new tokens, temperature 1, no KL (so no reference model), DAPO's token-level
loss, one update per rollout, AdamW lr 1e-4, fp32 on CPU; TRL's GRPOConfig is
the one ``rlalgos export --to trl`` writes for that run (``rlalgos.tools.export``'s
mapping table), plus the same prompt order and gradient checkpointing off (TRL
1.16 turns it on by default; rlalgos does not recompute the forward). They run alternately
in this one process (``--rounds`` rounds of ``--steps`` steps each), so both see
the same machine load; the first step of every round is a warm-up and is not
counted. Prints one JSON line per round and system, then a summary line with the
ratio of median seconds per step (rlalgos / TRL).

``--learn-steps N`` also trains each system for N steps from the checkpoint and
evaluates both on the same test prompts, to check the learning curves agree.

Needs ``pip install -e '.[bench]'`` (brings ``trl``). Example::

    python benchmarks/trl_side_by_side.py --rounds 3 --steps 6 --learn-steps 40
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

from _common import ModelTimer, machine_info
from rlalgos import tasks
from rlalgos.algorithms import make_config
from rlalgos.config import BASE_MODEL_DIR
from rlalgos.tools.export.trl import trl_settings
from rlalgos.model import load_policy
from rlalgos.tasks import addition_task
from rlalgos.engine.resume import PromptSampler
from rlalgos.train import TrainConfig, evaluate, train


def timed_generate(model) -> list[float]:
    """Wrap ``model.generate`` so every call's wall time is appended to the returned list."""
    times: list[float] = []
    inner = model.generate

    def generate(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            times.append(time.perf_counter() - t0)

    model.generate = generate
    return times


def job(args, steps: int, seed: int, out_dir: str):
    """The run both systems do: rlalgos' ``grpo`` with kl_coef 0 and token-mean, fp32 on CPU."""
    cfg = TrainConfig(
        algo="grpo",
        steps=steps,
        prompts_per_step=args.prompts,
        group_size=args.group_size,
        max_new_tokens=args.max_new_tokens,
        eval_every=0,
        eval_prompts=1,
        eval_samples=1,
        save_every=0,
        log_kl=False,
        seed=seed,
        device="cpu",
        out_dir=out_dir,
        progress=False,
    )
    return cfg, make_config("grpo", kl_coef=0.0, loss_agg="token-mean")


def trl_trainer(args, out_dir: str, steps: int, seed: int):
    """TRL's GRPOTrainer with the GRPOConfig ``rlalgos export --to trl`` writes for :func:`job`."""
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    policy, tok = load_policy(BASE_MODEL_DIR, "cpu")
    # the prompts rlalgos draws with this seed, in its order, so step k sees the same 16 prompts in both
    draw = PromptSampler(addition_task().train, seed)
    data = Dataset.from_list(
        [{"prompt": r["prompt"], "answer": r["answer"]} for _ in range(steps) for r in draw(args.prompts)]
    )
    script, settings, _ = trl_settings(*job(args, steps, seed, out_dir))
    # the same prompts in the same order as rlalgos (drawn above), so no shuffling
    # gradient checkpointing explicitly off: TRL 1.16's GRPOConfig turns it on by default (it recomputes the
    # forward in the backward, which rlalgos never does), so leaving it on would time TRL doing more work
    cfg = GRPOConfig(
        **{
            **settings,
            "output_dir": out_dir,
            "shuffle_dataset": False,
            "dataloader_num_workers": 0,
            "gradient_checkpointing": False,
        }
    )
    times: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            times.append(time.perf_counter() - self.t0)

    reward_funcs = [
        getattr(tasks, name) for name in script["reward_funcs"]
    ]  # correctness, and format at weight 0 as in rlalgos
    trainer = GRPOTrainer(
        model=policy,
        reward_funcs=reward_funcs,
        args=cfg,
        train_dataset=data,
        processing_class=tok,
        callbacks=[StepTimer()],
    )
    trainer.remove_callback(PrinterCallback)  # no log dict printed per step
    gen_times = timed_generate(trainer.model)
    return trainer, times, gen_times


def run_trl(args, steps: int, seed: int = 0):
    with tempfile.TemporaryDirectory() as d:
        trainer, times, gen_times = trl_trainer(args, d, steps, seed)
        with ModelTimer() as mt:
            trainer.train()
        rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
        return trainer.model, times, gen_times, rewards, mt.total / sum(times)


def run_rlalgos(args, steps: int, seed: int = 0):
    policy, tok = load_policy(BASE_MODEL_DIR, "cpu")
    with tempfile.TemporaryDirectory() as d:
        cfg, algo = job(args, steps, seed, d)
        with ModelTimer() as mt:
            df = train(cfg, algo, policy=policy, tokenizer=tok)
        df = df[df["step"] >= 1]  # drop the step-0 eval row
    # the two tiny evaluations (step 0 and the last step) are inside mt but not in the step times: a ~1% overcount
    return (
        policy,
        df["step_seconds"].tolist(),
        df["generate_seconds"].tolist(),
        df["reward_mean"].tolist(),
        mt.total / df["step_seconds"].sum(),
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (TRL then rlalgos)")
    p.add_argument("--steps", type=int, default=6, help="steps per round; the first is a warm-up")
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument(
        "--learn-steps",
        type=int,
        default=0,
        help="also train each for this many steps and compare test accuracy (0 = skip)",
    )
    p.add_argument("--eval-prompts", type=int, default=200)
    args = p.parse_args()
    import trl

    info = {
        **machine_info(),
        "trl": trl.__version__,
        "prompts": args.prompts,
        "group_size": args.group_size,
        "max_new_tokens": args.max_new_tokens,
        "trl_gradient_checkpointing": False,
    }
    per = {"trl": [], "rlalgos": []}
    gen = {"trl": [], "rlalgos": []}
    share = {"trl": [], "rlalgos": []}
    for r in range(args.rounds):
        for name, fn in (("trl", run_trl), ("rlalgos", run_rlalgos)):
            _, times, gen_times, _, model_share = fn(args, args.steps)
            per[name] += times[1:]
            gen[name] += gen_times[1:]
            share[name].append(model_share)
            print(
                json.dumps(
                    {
                        "measure": "round",
                        "round": r,
                        "system": name,
                        "step_seconds": [round(t, 3) for t in times[1:]],
                        "generate_seconds": [round(t, 3) for t in gen_times[1:]],
                        "model_share": round(model_share, 3),
                    }
                ),
                flush=True,
            )
    med = {k: statistics.median(v) for k, v in per.items()}
    gmed = {k: statistics.median(v) for k, v in gen.items()}
    # the same prompts at the same step in both, so step k of one is comparable to step k of the other
    paired = [a / b for a, b in zip(per["rlalgos"], per["trl"])]
    print(
        json.dumps(
            {
                "measure": "trl_side_by_side",
                "ratio_step_seconds": round(med["rlalgos"] / med["trl"], 3),
                "ratio_paired_median": round(statistics.median(paired), 3),
                "trl_step_seconds": round(med["trl"], 3),
                "rlalgos_step_seconds": round(med["rlalgos"], 3),
                "trl_generate_seconds": round(gmed["trl"], 3),
                "rlalgos_generate_seconds": round(gmed["rlalgos"], 3),
                "trl_model_share": round(statistics.fmean(share["trl"]), 3),
                "rlalgos_model_share": round(statistics.fmean(share["rlalgos"]), 3),
                "steps_counted": len(per["trl"]),
                **info,
            }
        ),
        flush=True,
    )

    if args.learn_steps:
        task = addition_task()
        rows = task.test[: args.eval_prompts]
        policy0, tok = load_policy(BASE_MODEL_DIR, "cpu")
        before = evaluate(policy0, tok, task, rows, n_samples=4, greedy=False)["eval_accuracy"]
        out = {"measure": "learning", "steps": args.learn_steps, "eval_accuracy_before": round(before, 4)}
        for name, fn in (("trl", run_trl), ("rlalgos", run_rlalgos)):
            model, times, _, rewards, _ = fn(args, args.learn_steps)
            acc = evaluate(model, tok, task, rows, n_samples=4, greedy=False)["eval_accuracy"]
            k = max(1, len(rewards) // 4)
            out.update(
                {
                    f"{name}_eval_accuracy": round(acc, 4),
                    f"{name}_train_reward_first": round(statistics.fmean(rewards[:k]), 4),
                    f"{name}_train_reward_last": round(statistics.fmean(rewards[-k:]), 4),
                    f"{name}_seconds": round(sum(times), 1),
                }
            )
        print(json.dumps({**out, **info}), flush=True)


if __name__ == "__main__":
    main()
