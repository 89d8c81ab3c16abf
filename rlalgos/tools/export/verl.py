"""The verl export (checked against verl 0.9.1): ``python -m verl.trainer.main_ppo`` with Hydra overrides.

The folder: ``run.sh`` with the command and its overrides, ``data/train.parquet`` and
``data/test.parquet`` in verl's layout, and what every export holds (rewards.py with
``compute_score``, rlalgos_tasks.py, README.md). :func:`compose_verl` composes the overrides with
verl's own packaged config (offline), for the tests and the "set away from the defaults" list.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

from ...config import AlgoConfig, GSPOConfig, PPOConfig, ReinforceConfig, TrainConfig
from ...engine.trackers import TRACKERS, parse_report_to
from ...losses import POLICY_LOSSES
from .base import (
    Ctx,
    Engine,
    Mapped,
    Mapping,
    Name,
    differs,
    engine_dtype,
    lr_note,
    make_ctx,
    missing,
    no_equivalent,
    no_kl_schedule,
    no_reward_model,
    overlong_buffer,
    overlong_on,
    raises_temperature,
    same,
)
from .fields import apply_table
from .verl_files import write

CHECKED_AGAINST = "0.9.1"
A, R = "actor_rollout_ref.actor.", "actor_rollout_ref.rollout."


def _batch(c: Ctx) -> dict:
    """verl's minibatch counts prompts (it multiplies by rollout.n); micro-batches count sequences per GPU."""
    P, M = c.cfg.prompts_per_step, c.algo.minibatches
    if P % M:
        raise ValueError(
            f"verl's ppo_mini_batch_size counts prompts: {M} minibatches do not split {P} prompts; pick minibatches dividing prompts_per_step"
        )
    _, per_pass = c.per_gpu(P // M * c.cfg.group_size)
    return {"mini_prompts": P // M, "micro_per_gpu": per_pass}


def _mode_param(mode: str, verl: str, name: str) -> Callable[[Ctx], Mapped]:
    """The conversion of a loss mode's option ``name``: set only when the run uses that mode."""
    return lambda c: same(**{A + verl: c.value(name)}) if c.algo.loss_mode == mode else same()


NO_DUAL_CLIP = 1e9
"""verl's clip_ratio_c for "no dual clip": above e^20, the largest ratio verl computes (it clamps the log-ratio at 20)."""


PLAIN_CHAT_TEMPLATE = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"
"""verl applies a chat template to every prompt; for a tokenizer without one this gives back rlalgos's plain prompt."""


def _report_to(c: Ctx) -> Mapped:
    if c.cfg.report_to.strip().lower() == "all":
        return differs(
            "verl has no 'all': trainer.logger lists the three trackers rlalgos knows",
            **{"trainer.logger": ["console", *TRACKERS]},
        )
    return same(**{"trainer.logger": ["console", *parse_report_to(c.cfg.report_to, check_installed=False)]})


def _algo(c: Ctx) -> Mapped:
    estimator = "rloo" if isinstance(c.algo, ReinforceConfig) else "gae" if isinstance(c.algo, PPOConfig) else "grpo"
    out = {"algorithm.adv_estimator": estimator}
    # reinforce, rloo: verl's clipped loss (inert at one update per rollout); the clipped algorithms: see loss_mode
    if not c.has("loss_mode"):
        out[A + "policy_loss.loss_mode"] = "vanilla"
    return same(**out)


def _loss_mode(c: Ctx) -> Mapped:
    loss = POLICY_LOSSES[c.algo.loss_mode]
    name = "gspo" if isinstance(c.algo, GSPOConfig) else loss.verl
    note = loss.verl_note
    if loss.verl_agg and c.algo.loss_agg != loss.verl_agg:
        note = f"verl's {loss.verl} always aggregates {loss.verl_agg} (the run's loss_agg is {c.algo.loss_agg})"
    return differs(note, **{A + "policy_loss.loss_mode": name})


def _task(c: Ctx) -> Mapped:
    # the prompt in tokens is at most its characters (+ BOS) without a chat template; a chat template adds its own text
    prompt_len = c.max_prompt_chars + 1 + (0 if not c.chat_template else 256)
    note = (
        ""
        if not c.chat_template
        else "data.max_prompt_length assumes the chat template adds at most 256 tokens; raise it if verl reports long prompts"
    )
    return differs(
        note,
        **{
            "data.train_files": "@HERE@/data/train.parquet",
            "data.max_prompt_length": prompt_len,
            "reward.custom_reward_function.path": "@HERE@/rewards.py",
            "reward.custom_reward_function.name": "compute_score",
        },
    )


def _model(c: Ctx) -> Mapped:
    path = "@HERE@/model" if c.model_ref == "model" else c.model_ref
    out = {"actor_rollout_ref.model.path": path}
    if isinstance(c.algo, PPOConfig):
        out["critic.model.path"] = path
    if not c.chat_template:
        out["actor_rollout_ref.model.custom_chat_template"] = PLAIN_CHAT_TEMPLATE
        return differs(
            "the tokenizer has no chat template: custom_chat_template passes the prompt through unchanged (BOS + prompt), as rlalgos feeds it",
            **out,
        )
    return differs("verl wraps each prompt in the tokenizer's chat template (rlalgos feeds the plain prompt)", **out)


def _eval(c: Ctx) -> Mapped:
    return differs(
        "verl validates before training and every test_freq steps; it logs reward means over the val set (val-core/...), not greedy accuracy or pass@k",
        **{
            "data.val_files": "@HERE@/data/test.parquet",
            "trainer.test_freq": c.cfg.eval_every or -1,
            "trainer.val_before_train": True,
        },
    )


def _kl(c: Ctx) -> Mapped:
    beta = c.algo.kl_coef
    if isinstance(c.algo, (ReinforceConfig, PPOConfig)):  # KL per token, folded into the reward
        estimator = getattr(c.algo, "kl_estimator", "k1")  # PPO's is always k1
        return same(
            **{
                "algorithm.use_kl_in_reward": beta > 0,
                "algorithm.kl_ctrl.type": "fixed",
                "algorithm.kl_ctrl.kl_coef": beta,
                "algorithm.kl_penalty": estimator,
            }
        )
    note = (
        f"verl's defaults are use_kl_loss=False, kl_loss_coef=0.001; the export keeps the run's {beta:g}"
        if beta
        else ""
    )
    return differs(note, **{A + "use_kl_loss": beta > 0, A + "kl_loss_coef": beta, "algorithm.use_kl_in_reward": False})


def _kl_estimator(c: Ctx) -> Mapped:
    key = "algorithm.kl_penalty" if isinstance(c.algo, ReinforceConfig) else A + "kl_loss_type"
    note = "verl clamps each k3 term to [-10, 10]" if c.algo.kl_estimator in ("k3", "k3+") else ""
    return differs(note, **{key: c.algo.kl_estimator})


def _loss_agg(c: Ctx) -> Mapped:
    out = {A + "loss_agg_mode": c.algo.loss_agg}
    if c.algo.loss_agg == "seq-mean-token-sum-norm":  # Dr. GRPO's constant L_max, as rlalgos (verl's: the padded width)
        out[A + "loss_scale_factor"] = c.max_new_tokens
    return same(**out)


def _dynamic_sampling(c: Ctx) -> Mapped:
    mode = c.algo.dynamic_sampling
    out = {"algorithm.filter_groups.enable": mode in ("resample", "filter"), "algorithm.filter_groups.metric": "acc"}
    if mode == "filter":
        return differs(
            "verl refills the batch with new prompts (rlalgos's 'resample'); 'filter' (drop, no refill) has no equivalent",
            **out,
        )
    if mode == "downweight":
        return missing("verl has no down-weighting of all-equal groups: they are kept at full weight", **out)
    return same(**out)


def _overlong(c: Ctx) -> Mapped:
    if not overlong_on(c):
        return same()
    return same(
        **{
            "reward.reward_manager.name": "dapo",
            "+reward.reward_kwargs.overlong_buffer_cfg.enable": True,
            "+reward.reward_kwargs.overlong_buffer_cfg.penalty_factor": 1.0,
            "+reward.reward_kwargs.overlong_buffer_cfg.log": True,
            "+reward.reward_kwargs.max_resp_len": c.max_new_tokens,
        }
    )


def _lora(c: Ctx, setting: str) -> Mapped:
    r = c.cfg.lora_rank
    if not r:
        return same()
    if setting == "lora_dropout":
        return same() if not c.cfg.lora_dropout else missing("verl's LoRA has no dropout")
    targets = [t.strip() for t in c.cfg.lora_targets.split(",") if t.strip()]
    alpha = c.cfg.lora_alpha or 2 * r
    value = {
        "lora_rank": r,
        "lora_alpha": int(alpha) if float(alpha).is_integer() else alpha,
        "target_modules": "all-linear" if targets == ["all-linear"] else targets,
    }
    key = {"lora_rank": "lora_rank", "lora_alpha": "lora_alpha", "lora_targets": "target_modules"}[setting]
    return same(**{"actor_rollout_ref.model." + key: value[key]})


def _rollout_dtype(c: Ctx) -> Mapped:
    if c.cfg.rollout_dtype == "float32":
        return differs(
            "verl's vLLM samples in bfloat16 (its default rollout.dtype), the mismatch rlalgos's rollout_dtype bfloat16 imitates; set actor_rollout_ref.rollout.dtype=float32 to remove it"
        )
    return same(**{R + "dtype": c.cfg.rollout_dtype})


MASK_NO_LOWER = 1e-9
"""verl's IcePop bounds ``"lower_upper"`` need a lower bound > 0: below e^-20 (~2e-9, the smallest ratio verl computes) it never acts, so masking is upper-only, as rlalgos's."""


def _rollout_correction(c: Ctx, setting: str) -> Mapped:
    mode, C = c.cfg.rollout_correction, c.cfg.rollout_correction_threshold
    if mode == "none":
        return same()
    level, _, action = mode.partition("_")
    if setting == "rollout_correction_threshold":
        return same(
            **{
                "algorithm.rollout_correction.rollout_is_threshold": C
                if action == "truncate"
                else f"{MASK_NO_LOWER:g}_{C:g}"
            }
        )
    return same(**{"algorithm.rollout_correction.rollout_is": level})


def _micro(c: Ctx) -> Mapped:
    micro = _batch(c)["micro_per_gpu"]
    out = {
        A + "ppo_micro_batch_size_per_gpu": micro,
        R + "log_prob_micro_batch_size_per_gpu": micro,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": micro,
    }
    if isinstance(c.algo, PPOConfig):
        out["critic.ppo_micro_batch_size_per_gpu"] = micro
    return same(**out)


NAMES: dict[str, Name] = {
    "algo": Name("`algorithm.adv_estimator` (+ `actor.policy_loss.loss_mode`=vanilla for reinforce, rloo)", _algo),
    "model": Name("`actor_rollout_ref.model.path` (+ `critic.model.path`, `model.custom_chat_template`)", _model),
    "task": Name("`data.train_files` (parquet), `data.max_prompt_length`, `reward.custom_reward_function.*`", _task),
    "steps": Name(
        "`trainer.total_training_steps` (+ `trainer.total_epochs`)",
        lambda c: same(
            **{
                "trainer.total_training_steps": c.cfg.steps,
                "trainer.total_epochs": math.ceil(c.cfg.steps * c.cfg.prompts_per_step / c.train_rows),
            }
        ),
    ),
    "prompts_per_step": Name(
        "`data.train_batch_size`", lambda c: same(**{"data.train_batch_size": c.cfg.prompts_per_step})
    ),
    "group_size": Name("`actor_rollout_ref.rollout.n`", lambda c: same(**{R + "n": c.cfg.group_size})),
    "max_new_tokens": Name(
        "`data.max_response_length`", lambda c: same(**{"data.max_response_length": c.max_new_tokens})
    ),
    "temperature": Name(
        "`rollout.temperature`, `rollout.val_kwargs.temperature`",
        lambda c: same(**{R + "temperature": c.cfg.temperature, R + "val_kwargs.temperature": c.cfg.temperature}),
    ),
    "top_p": Name(
        "`rollout.top_p`, `rollout.top_k`=-1 (+ val_kwargs)",
        lambda c: same(
            **{
                R + "top_p": c.cfg.top_p,
                R + "top_k": -1,
                R + "val_kwargs.top_p": c.cfg.top_p,
                R + "val_kwargs.top_k": -1,
            }
        ),
    ),
    "chat_template": Name("(verl templates every prompt)", lambda c: same()),
    "lora_rank": Name("`actor_rollout_ref.model.lora_rank`", lambda c: _lora(c, "lora_rank")),
    "lora_alpha": Name("`actor_rollout_ref.model.lora_alpha`", lambda c: _lora(c, "lora_alpha")),
    "lora_dropout": Name("", lambda c: _lora(c, "lora_dropout")),
    "lora_targets": Name("`actor_rollout_ref.model.target_modules`", lambda c: _lora(c, "lora_targets")),
    "dtype": Name("(FSDP mixed precision)", lambda c: engine_dtype(c, gpu_only=True)),
    "score_batch_size": Name("(`*.log_prob_micro_batch_size_per_gpu`)", lambda c: same()),
    "rollout_dtype": Name("`actor_rollout_ref.rollout.dtype`", _rollout_dtype),
    "rollout_sync_every": Name(
        "(none in the exported trainer; verl's asynchronous recipes run a stale sampler)",
        lambda c: (
            same()
            if c.cfg.rollout_sync_every == 1
            else missing(
                f"rollout_sync_every {c.cfg.rollout_sync_every}: the exported verl trainer syncs every step (its asynchronous recipes, e.g. one-step off-policy, are where staleness lives)"
            )
        ),
    ),
    "rollout_correction": Name(
        "`algorithm.rollout_correction.rollout_is` (token / sequence)",
        lambda c: _rollout_correction(c, "rollout_correction"),
    ),
    "rollout_correction_threshold": Name(
        "`algorithm.rollout_correction.rollout_is_threshold`",
        lambda c: _rollout_correction(c, "rollout_correction_threshold"),
    ),
    "logits_chunk": Name("", lambda c: same()),
    "sampler": Name(
        "`rollout.name`=vllm, `rollout.tensor_model_parallel_size`=1",
        lambda c: differs("verl samples with vLLM", **{R + "name": "vllm", R + "tensor_model_parallel_size": 1}),
    ),
    "eval_every": Name("`trainer.test_freq`, `trainer.val_before_train`, `data.val_files`", _eval),
    "eval_prompts": Name("rows of data/test.parquet", lambda c: same()),
    "eval_samples": Name(
        "`rollout.val_kwargs.n`, `rollout.val_kwargs.do_sample`=True",
        lambda c: same(**{R + "val_kwargs.n": c.cfg.eval_samples, R + "val_kwargs.do_sample": True}),
    ),
    "reward_model": Name("", lambda c: no_reward_model(c, "reward_model")),
    "rm_weight": Name("", lambda c: no_reward_model(c, "rm_weight")),
    "rule_weight": Name("the weight in rewards.py's compute_score", lambda c: same()),
    "save_every": Name(
        "`trainer.save_freq`",
        lambda c: differs(
            "" if c.cfg.save_every else "verl saves no checkpoint (save_freq -1)",
            **{"trainer.save_freq": c.cfg.save_every or -1},
        ),
    ),
    "log_kl": Name("", no_equivalent("verl logs the KL to the reference only with use_kl_loss or use_kl_in_reward")),
    "kl_sample_rows": Name(
        "", no_equivalent("verl logs no KL without use_kl_loss or use_kl_in_reward", lambda c: c.cfg.kl_sample_rows > 0)
    ),
    "entropy_probe": Name(
        "", no_equivalent("verl logs actor/entropy, not its change across an update", lambda c: c.cfg.entropy_probe)
    ),
    "seed": Name("`data.seed`", lambda c: same(**{"data.seed": c.cfg.seed})),
    "device": Name(
        "`trainer.n_gpus_per_node` (export --gpus), `trainer.nnodes`=1",
        lambda c: differs(
            "verl runs on GPUs only; bf16 mixed precision (FSDP)",
            **{"trainer.n_gpus_per_node": c.gpus, "trainer.nnodes": 1},
        ),
    ),
    "out_dir": Name(
        "`trainer.default_local_dir`, `trainer.project_name`, `trainer.experiment_name`",
        lambda c: same(
            **{
                "trainer.default_local_dir": "@HERE@/output",
                "trainer.project_name": "rlalgos",
                "trainer.experiment_name": Path(c.cfg.out_dir).name or c.cfg.algo,
            }
        ),
    ),
    "overwrite": Name(""),
    "progress": Name(""),
    "on_nonfinite": Name(""),
    "stop_on_collapse": Name(""),
    "logging": Name("", lambda c: same()),
    "report_to": Name("`trainer.logger`", _report_to),
    "lr": Name("`actor.optim.lr`", lambda c: differs(lr_note(c), **{A + "optim.lr": c.algo.lr})),
    "schedule": Name(
        "`actor.optim.lr_scheduler_type`=constant, `actor.optim.lr_warmup_steps_ratio`=0",
        lambda c: same(**{A + "optim.lr_scheduler_type": "constant", A + "optim.lr_warmup_steps_ratio": 0.0}),
    ),
    "weight_decay": Name(
        "`actor.optim.weight_decay`", lambda c: same(**{A + "optim.weight_decay": c.algo.weight_decay})
    ),
    "max_grad_norm": Name("`actor.optim.clip_grad`", lambda c: same(**{A + "optim.clip_grad": c.algo.max_grad_norm})),
    "epochs": Name("`actor.ppo_epochs`", lambda c: same(**{A + "ppo_epochs": c.algo.epochs})),
    "minibatches": Name(
        "`actor.ppo_mini_batch_size`", lambda c: same(**{A + "ppo_mini_batch_size": _batch(c)["mini_prompts"]})
    ),
    "micro_batch_size": Name("`actor.ppo_micro_batch_size_per_gpu` (+ `*.log_prob_micro_batch_size_per_gpu`)", _micro),
    "length_buckets": Name(
        "",
        no_equivalent(
            "no length bucketing: verl pads each micro-batch, or drops padding with actor_rollout_ref.model.use_remove_padding=True (same gradient)"
        ),
    ),
    "loss_agg": Name("`actor.loss_agg_mode` (+ `actor.loss_scale_factor`)", _loss_agg),
    "kl_coef": Name(
        "`actor.use_kl_loss` + `actor.kl_loss_coef` (GRPO family); `algorithm.use_kl_in_reward` + `algorithm.kl_ctrl.kl_coef` (+ `algorithm.kl_ctrl.type`=fixed, `algorithm.kl_penalty`; reinforce, rloo, ppo)",
        _kl,
    ),
    "kl_estimator": Name("`actor.kl_loss_type` / `algorithm.kl_penalty`", _kl_estimator),
    "baseline": Name(
        "`algorithm.adv_estimator`=rloo",
        lambda c: (
            same() if c.algo.baseline == "leave_one_out" else missing("exported as adv_estimator rloo (leave-one-out)")
        ),
    ),
    "keep": Name(""),
    "keep_threshold": Name(""),
    "reinforce_clip": Name("`actor.clip_ratio` (0.2), `actor.clip_ratio_c` (3, kept)"),
    "clip_low": Name(
        "`actor.clip_ratio_low` (+ `actor.clip_ratio`)",
        lambda c: same(**{A + "clip_ratio_low": c.algo.clip_low, A + "clip_ratio": c.algo.clip_low}),
    ),
    "clip_high": Name("`actor.clip_ratio_high`", lambda c: same(**{A + "clip_ratio_high": c.algo.clip_high})),
    "clip_c": Name("`actor.clip_ratio_c`", lambda c: same(**{A + "clip_ratio_c": c.algo.clip_c or NO_DUAL_CLIP})),
    "loss_mode": Name("`actor.policy_loss.loss_mode`", _loss_mode),
    **{
        name: Name(f"`actor.{verl}`", _mode_param(loss.name, verl, name))
        for loss in POLICY_LOSSES.values()
        for name, (_, verl) in loss.params.items()
    },
    "adv_scale": Name(
        "`algorithm.norm_adv_by_std_in_grpo`",
        lambda c: same(**{"algorithm.norm_adv_by_std_in_grpo": c.algo.adv_scale == "std"}),
    ),
    "adv_eps": Name(
        "", lambda c: same() if c.algo.adv_eps == 1e-6 else missing("verl divides by the group std + 1e-6")
    ),
    "critic_lr": Name(
        "`critic.optim.lr` (+ `critic.optim.weight_decay`=0)",
        lambda c: same(**{"critic.optim.lr": c.algo.critic_lr, "critic.optim.weight_decay": 0.0}),
    ),
    "value_clip": Name("`critic.cliprange_value`", lambda c: same(**{"critic.cliprange_value": c.algo.value_clip})),
    "vf_coef": Name(""),
    "gamma": Name("`algorithm.gamma`", lambda c: same(**{"algorithm.gamma": c.algo.gamma})),
    "lam": Name("`algorithm.lam`", lambda c: same(**{"algorithm.lam": c.algo.lam})),
    "whiten": Name(
        "", lambda c: same() if c.algo.whiten else missing("verl's GAE always whitens the advantages over the batch")
    ),
    "kl_stages": Name("", no_kl_schedule),
    "dynamic_sampling": Name("`algorithm.filter_groups.enable`, `.metric`=acc", _dynamic_sampling),
    "max_resample_rounds": Name(
        "",
        no_equivalent(
            "verl's V1 trainer refills until the batch is full (its replay buffer ignores filter_groups.max_num_gen_batches)",
            lambda c: c.algo.dynamic_sampling == "resample",
        ),
    ),
    "degenerate_weight": Name(
        "", no_equivalent("no down-weighting of all-equal groups", lambda c: c.algo.dynamic_sampling == "downweight")
    ),
    "overlong_penalty": Name(
        "`reward.reward_manager.name`=dapo, `+reward.reward_kwargs.overlong_buffer_cfg.*`, `+reward.reward_kwargs.max_resp_len`",
        _overlong,
    ),
    "overlong_buffer": Name(
        "`+reward.reward_kwargs.overlong_buffer_cfg.len`",
        lambda c: same(
            **({"+reward.reward_kwargs.overlong_buffer_cfg.len": overlong_buffer(c)} if overlong_on(c) else {})
        ),
    ),
    "overlong_filter": Name(
        "",
        lambda c: (
            same()
            if not c.algo.overlong_filter
            else missing("verl has no switch that masks truncated answers out of the loss: they are trained on")
        ),
    ),
    "entropy_threshold": Name(
        "`actor.entropy_coeff`=0",
        lambda c: (
            same(**{A + "entropy_coeff": 0.0})
            if not c.algo.entropy_threshold
            else missing(
                "verl has only a constant bonus (actor.entropy_coeff): the monitor is not exported, entropy_coeff 0",
                **{A + "entropy_coeff": 0.0},
            )
        ),
    ),
    "entropy_action": Name("", lambda c: same() if not c.algo.entropy_threshold else missing("not exported")),
    "entropy_coef": Name(
        "", lambda c: same() if not c.algo.entropy_threshold else missing("not exported (see entropy_threshold)")
    ),
    "temperature_step": Name("", no_equivalent("raising the temperature has no equivalent", raises_temperature)),
    "max_temperature": Name("", no_equivalent("raising the temperature has no equivalent", raises_temperature)),
}
"""verl's name and conversion of every field of the shared table."""

ENGINE = Engine(
    name="verl",
    title="verl",
    checked_against=CHECKED_AGAINST,
    summary="verl.trainer.main_ppo",
    header=f"verl {CHECKED_AGAINST} (`main_ppo` override; `actor.`, `rollout.` = `actor_rollout_ref.actor.`, `.rollout.`)",
    names=NAMES,
    write=write,
    own_files=(),
    needs=("pyarrow", "pyarrow"),
    install="pip install verl   # with vLLM and its other dependencies: see verl's install guide",
    files="run.sh (the Hydra overrides), rewards.py + rlalgos_tasks.py (compute_score), data/train.parquet and data/test.parquet "
    "(prompt as chat messages, data_source, reward_model.ground_truth, extra_info)",
    abbreviations=((A, "actor."), (R, "rollout.")),
)


def verl_overrides(cfg: TrainConfig, algo: AlgoConfig, gpus: int = 1) -> tuple[dict, Mapping]:
    """``({override key: value}, mapping)`` for ``verl.trainer.main_ppo``; paths start with ``@HERE@`` (the export folder)."""
    m = apply_table(ENGINE, make_ctx(cfg, algo, gpus))
    return m.values, m
