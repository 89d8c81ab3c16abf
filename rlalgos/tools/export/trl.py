"""The TRL export (checked against TRL 1.16): GRPOTrainer or RLOOTrainer under ``accelerate launch``.

The folder: ``trl_config.yaml`` (the trainer, the model, the reward functions and every
``GRPOConfig``/``RLOOConfig`` field), ``train_trl.py`` that runs it (``train_trl.py.txt``),
``data/train.jsonl`` (+ ``data/test.jsonl``), ``run.sh`` with the ``accelerate launch`` command,
and what every export holds (rewards.py, rlalgos_tasks.py, README.md).
"""

from __future__ import annotations

from typing import Callable

from ...config import AlgoConfig, GSPOConfig, PPOConfig, ReinforceConfig, TrainConfig
from ...engine.trackers import parse_report_to
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
    overlong_on,
    raises_temperature,
    same,
)
from .fields import apply_table
from .trl_files import CHECKED_AGAINST, TRL_SCRIPT_KEYS, write


_LOSS_TYPES = [loss.trl for loss in POLICY_LOSSES.values() if loss.trl]
"""The loss modes TRL has a ``loss_type`` of the same name for."""


def _trainer(c: Ctx) -> str:
    return "RLOOTrainer" if isinstance(c.algo, ReinforceConfig) else "GRPOTrainer"


def _batch(c: Ctx) -> dict:
    """per_device_train_batch_size, gradient_accumulation_steps and steps_per_generation:
    one optimizer step per rlalgos minibatch, one generation per rlalgos step."""
    per_gpu, per_pass = c.per_gpu(c.cfg.prompts_per_step * c.cfg.group_size // c.algo.minibatches)
    accumulation = per_gpu // per_pass
    return {
        "per_device_train_batch_size": per_pass,
        "gradient_accumulation_steps": accumulation,
        "steps_per_generation": c.algo.minibatches * accumulation,
    }


def _mode_param(mode: str, trl: str, name: str) -> Callable[[Ctx], Mapped]:
    """The conversion of a loss mode's option ``name``: set only when the run uses that mode (``trl`` '' = TRL has none)."""

    def convert(c: Ctx) -> Mapped:
        if c.algo.loss_mode != mode:
            return same()
        return same(**{trl: c.value(name)}) if trl else missing(f"TRL has no {mode} (see loss_mode)")

    return convert


def _check(c: Ctx) -> None:
    if isinstance(c.algo, PPOConfig):
        raise ValueError("ppo has no TRL trainer in TRL 1.16 (no critic/GAE trainer); export it with --to verl")


def _report_to(c: Ctx) -> Mapped:
    if c.cfg.report_to.strip().lower() == "all":  # TRL's own "all": every tracker installed where it runs
        return same(report_to="all")
    return same(report_to=parse_report_to(c.cfg.report_to, check_installed=False) or "none")


_TRL_LOSS_TYPE = {"token-mean": "dapo", "seq-mean-token-mean": "grpo", "seq-mean-token-sum-norm": "dr_grpo"}


def _algo(c: Ctx) -> Mapped:
    if isinstance(c.algo, ReinforceConfig):
        return same(trainer="RLOOTrainer", normalize_advantages=False)
    return same(
        trainer="GRPOTrainer", importance_sampling_level="sequence" if isinstance(c.algo, GSPOConfig) else "token"
    )


def _loss_mode(c: Ctx) -> Mapped:
    loss = POLICY_LOSSES[c.algo.loss_mode]
    if not loss.trl:  # clip: loss_type comes from loss_agg
        return missing(loss.trl_missing) if loss.trl_missing else same()
    fixed = loss.trl_agg
    return differs(
        ""
        if c.algo.loss_agg == fixed
        else f"TRL's loss_type {loss.trl} always aggregates {fixed} (the run's loss_agg is {c.algo.loss_agg})",
        loss_type=loss.trl,
    )


def _task(c: Ctx) -> Mapped:
    return same(train_file="data/train.jsonl", reward_funcs=[name for name, _ in c.rule_rewards])


def _eval(c: Ctx) -> Mapped:
    if not c.cfg.eval_every:
        return differs(
            "no evaluation during training (rlalgos still evaluates before the first and after the last step)",
            eval_strategy="no",
        )
    return differs(
        "TRL evaluates at step 0 and every eval_steps optimizer steps; it logs the mean of each reward (eval_rewards/<fn>/mean: sampled accuracy for the rule), not greedy accuracy or pass@k",
        eval_strategy="steps",
        eval_steps=c.cfg.eval_every * c.optimizer_steps_per_rollout,
        eval_on_start=True,
        eval_file="data/test.jsonl",
    )


def _kl(c: Ctx) -> Mapped:
    beta = c.algo.kl_coef
    if isinstance(c.algo, ReinforceConfig):
        return same(beta=beta)  # RLOOTrainer: beta * sum_t (log pi - log pi_ref) taken off the reward, as rlalgos
    note = f"TRL's default beta is 0.0 (no reference model); the export keeps the run's {beta:g}" if beta else ""
    # use_bias_correction_kl=False: the k3 term's gradient as rlalgos computes it (TRL's default multiplies it by the ratio)
    return differs(note, beta=beta, use_bias_correction_kl=False)


def _kl_estimator(c: Ctx) -> Mapped:
    fixed = "k1" if isinstance(c.algo, ReinforceConfig) else "k3"
    if c.algo.kl_estimator == fixed:
        return same()
    nearest = (
        "; the nearest to k3+ is use_bias_correction_kl=True (k3 x ratio: k3's value, k2's gradient on-policy, unclamped)"
        if c.algo.kl_estimator == "k3+"
        else ""
    )
    return missing(
        f"TRL's {_trainer(c)} always uses {fixed}; the export trains with {fixed} instead of {c.algo.kl_estimator}{nearest}"
    )


def _loss_agg(c: Ctx) -> Mapped:
    if isinstance(c.algo, ReinforceConfig):
        return missing(
            "RLOOTrainer sums each answer's token losses and averages over answers (seq-mean-token-sum): "
            "the gradient of token-mean times the batch's mean length, which Adam mostly absorbs"
        )
    if POLICY_LOSSES[c.algo.loss_mode].trl:
        return same()  # loss_type is the loss mode's, with its own fixed aggregation (see loss_mode)
    return same(loss_type=_TRL_LOSS_TYPE[c.algo.loss_agg])


def _clip_high(c: Ctx) -> Mapped:
    loss = POLICY_LOSSES[c.algo.loss_mode]
    if loss.trl_caps_ratio:  # TRL's loss caps the ratio itself at epsilon_high
        return differs(
            f"TRL's {loss.trl} caps the weight at epsilon_high itself: 1 + clip_high", epsilon_high=1 + c.algo.clip_high
        )
    return same(epsilon_high=c.algo.clip_high)


def _clip_c(c: Ctx) -> Mapped:
    if not c.algo.clip_c:
        return same(delta=None)
    if c.algo.clip_c <= 1 + c.algo.clip_high:
        return differs(
            "TRL's delta also caps the ratio where A > 0; equal to the dual clip only when delta > 1 + epsilon_high",
            delta=c.algo.clip_c,
        )
    return same(delta=c.algo.clip_c)


def _dynamic_sampling(c: Ctx) -> Mapped:
    if c.algo.dynamic_sampling == "off":
        return same()
    return missing(
        "TRL has no dynamic sampling: it trains on every group (an all-equal group has advantage 0 and adds only to the token count)"
    )


def _overlong(c: Ctx) -> Mapped:
    if not overlong_on(c):
        return same()
    return differs(
        "a reward function (rewards.py: overlong_penalty, weight 1), logged as its own reward",
        reward_funcs=["overlong_penalty"],
        reward_weights=[1.0],
    )


def _entropy(c: Ctx) -> Mapped:
    a = c.algo
    if not (a.entropy_threshold > 0 and a.entropy_action == "bonus"):
        return same(entropy_coef=0.0)
    # adaptive control with a fixed coefficient: the bonus is on while the last step's entropy is at or below the target
    return differs(
        "TRL measures entropy per optimizer step (rlalgos: per rollout) and adds the mean per-token entropy whatever the loss aggregation",
        entropy_coef=a.entropy_coef,
        use_adaptive_entropy=True,
        entropy_target=a.entropy_threshold,
        entropy_coef_min=a.entropy_coef,
        entropy_coef_max=a.entropy_coef,
        entropy_coef_delta=0.0,
    )


def _lora(c: Ctx, setting: str) -> Mapped:
    if not c.cfg.lora_rank:
        return same()  # full fine-tuning, as train_trl.py does
    if setting != "lora_rank":
        return missing("see lora_rank")
    return missing(
        f"LoRA is not exported to TRL: train_trl.py trains every weight; give the trainer peft_config=LoraConfig(r={c.cfg.lora_rank}, ...) for it"
    )


def _device(c: Ctx) -> Mapped:
    cpu = c.cfg.device == "cpu"
    return same(use_cpu=cpu, bf16=not cpu, world_size=c.gpus)


def _rollout_dtype(c: Ctx) -> Mapped:
    if c.cfg.rollout_dtype == "float32":
        return same()
    return missing(
        f"TRL has no rollout dtype: the export samples with generate, with the trained model itself; with use_vllm=True, vLLM serves the checkpoint's own dtype "
        f"(bf16 for most hub models), the mismatch rollout_dtype {c.cfg.rollout_dtype} imitates"
    )


def _rollout_correction(c: Ctx, setting: str) -> Mapped:
    mode = c.cfg.rollout_correction
    if isinstance(c.algo, ReinforceConfig):
        return (
            same()
            if mode == "none"
            else missing("RLOOTrainer has no importance-sampling correction (GRPOTrainer's vllm_importance_sampling_*)")
        )
    if setting == "rollout_correction_threshold":
        return same() if mode == "none" else same(vllm_importance_sampling_clip_max=c.cfg.rollout_correction_threshold)
    if mode == "none":  # TRL's default is on (sequence_mask, when it samples with vLLM)
        return same(vllm_importance_sampling_correction=False)
    return differs(
        "TRL corrects only when it samples with vLLM (use_vllm=True); the export samples with generate in the trainer's own precision, where there is little to correct",
        vllm_importance_sampling_correction=True,
        vllm_importance_sampling_mode=mode,
    )


def _save(c: Ctx) -> Mapped:
    if not c.cfg.save_every:
        return differs("train_trl.py saves the final model to output/ at the end", save_strategy="no")
    return same(save_strategy="steps", save_steps=c.cfg.save_every * c.optimizer_steps_per_rollout)


def _micro(c: Ctx) -> Mapped:
    return same(gradient_accumulation_steps=_batch(c)["gradient_accumulation_steps"])


NAMES: dict[str, Name] = {
    "algo": Name(
        "GRPOTrainer (grpo, dapo, drgrpo, dualclip, gspo: `importance_sampling_level`, clipcov, klcov, cispo, sapo); RLOOTrainer (reinforce, rloo; `normalize_advantages`=False)",
        _algo,
    ),
    "model": Name("`model` (train_trl.py)", lambda c: same(model=c.model_ref)),
    "task": Name("`train_file` (jsonl: prompt + every column), `reward_funcs`", _task),
    "steps": Name("`max_steps`", lambda c: same(max_steps=c.cfg.steps * c.optimizer_steps_per_rollout)),
    "prompts_per_step": Name(
        "`per_device_train_batch_size`",
        lambda c: same(per_device_train_batch_size=_batch(c)["per_device_train_batch_size"]),
    ),
    "group_size": Name("`num_generations`", lambda c: same(num_generations=c.cfg.group_size)),
    "max_new_tokens": Name("`max_completion_length`", lambda c: same(max_completion_length=c.max_new_tokens)),
    "temperature": Name("`temperature`", lambda c: same(temperature=c.cfg.temperature)),
    "top_p": Name("`top_p` (`top_k`=0)", lambda c: same(top_p=c.cfg.top_p, top_k=0)),
    "chat_template": Name(
        "(conversational prompts get the tokenizer's template)",
        lambda c: (
            same()
            if not c.cfg.chat_template
            else differs(
                "the export writes plain-text prompts, which TRL does not template: make the dataset's prompt a [{'role': 'user', 'content': ...}] list to get the template"
            )
        ),
    ),
    "lora_rank": Name("(the trainer's `peft_config`: not written)", lambda c: _lora(c, "lora_rank")),
    "lora_alpha": Name("", lambda c: _lora(c, "lora_alpha")),
    "lora_dropout": Name("", lambda c: _lora(c, "lora_dropout")),
    "lora_targets": Name("", lambda c: _lora(c, "lora_targets")),
    "dtype": Name("`bf16` (mixed precision; see `device`)", lambda c: engine_dtype(c, gpu_only=False)),
    "score_batch_size": Name("", lambda c: same()),
    "rollout_dtype": Name("(none; vLLM serves the checkpoint's dtype)", _rollout_dtype),
    "rollout_sync_every": Name(
        "(none: vLLM's weights are synced before every generation)",
        lambda c: (
            same()
            if c.cfg.rollout_sync_every == 1
            else missing(
                f"rollout_sync_every {c.cfg.rollout_sync_every}: TRL syncs vLLM's weights before every generation"
            )
        ),
    ),
    "rollout_correction": Name(
        "`vllm_importance_sampling_correction`, `vllm_importance_sampling_mode`",
        lambda c: _rollout_correction(c, "rollout_correction"),
    ),
    "rollout_correction_threshold": Name(
        "`vllm_importance_sampling_clip_max` (older TRL releases: `vllm_importance_sampling_cap`)",
        lambda c: _rollout_correction(c, "rollout_correction_threshold"),
    ),
    "logits_chunk": Name("", lambda c: same()),
    "sampler": Name(
        "`use_vllm`=False",
        lambda c: differs(
            "TRL samples with transformers' generate (like --sampler hf); set use_vllm=True for speed on GPUs",
            use_vllm=False,
        ),
    ),
    "eval_every": Name(
        "`eval_strategy`, `eval_steps` (x optimizer steps per rollout), `eval_on_start`; `eval_file` (train_trl.py)",
        _eval,
    ),
    "eval_prompts": Name("rows of data/test.jsonl", lambda c: same()),
    "eval_samples": Name(
        "`num_generations_eval`, `per_device_eval_batch_size`",
        lambda c: same(num_generations_eval=c.cfg.eval_samples, per_device_eval_batch_size=8 * c.cfg.eval_samples),
    ),
    "reward_model": Name("", lambda c: no_reward_model(c, "reward_model")),
    "rm_weight": Name("", lambda c: no_reward_model(c, "rm_weight")),
    "rule_weight": Name("`reward_weights`", lambda c: same(reward_weights=[w for _, w in c.rule_rewards])),
    "save_every": Name("`save_strategy`, `save_steps` (x optimizer steps per rollout)", _save),
    "log_kl": Name("", no_equivalent("TRL logs the KL to the reference only when beta > 0")),
    "kl_sample_rows": Name("", no_equivalent("TRL logs no KL without beta > 0", lambda c: c.cfg.kl_sample_rows > 0)),
    "entropy_probe": Name(
        "", no_equivalent("TRL logs the entropy, not its change across an update", lambda c: c.cfg.entropy_probe)
    ),
    "seed": Name("`seed`, `data_seed`", lambda c: same(seed=c.cfg.seed, data_seed=c.cfg.seed)),
    "device": Name("`use_cpu`, `bf16`; `world_size` (export --gpus)", _device),
    "out_dir": Name("`output_dir`", lambda c: same(output_dir="output")),
    "overwrite": Name(""),
    "progress": Name("`disable_tqdm`", lambda c: same(disable_tqdm=not c.cfg.progress)),
    "on_nonfinite": Name(""),
    "stop_on_collapse": Name(""),
    "logging": Name(
        "`logging_steps`=1, `log_completions`=False", lambda c: same(logging_steps=1, log_completions=False)
    ),
    "report_to": Name("`report_to`", _report_to),
    "lr": Name("`learning_rate`", lambda c: differs(lr_note(c), learning_rate=c.algo.lr)),
    "schedule": Name(
        "`lr_scheduler_type`=constant, `warmup_steps`=0", lambda c: same(lr_scheduler_type="constant", warmup_steps=0)
    ),
    "weight_decay": Name("`weight_decay`", lambda c: same(weight_decay=c.algo.weight_decay)),
    "max_grad_norm": Name("`max_grad_norm`", lambda c: same(max_grad_norm=c.algo.max_grad_norm)),
    "epochs": Name("`num_iterations`", lambda c: same(num_iterations=c.algo.epochs)),
    "minibatches": Name(
        "`steps_per_generation`", lambda c: same(steps_per_generation=_batch(c)["steps_per_generation"])
    ),
    "micro_batch_size": Name("`gradient_accumulation_steps` (with `per_device_train_batch_size`)", _micro),
    "length_buckets": Name(
        "",
        no_equivalent(
            "no length bucketing: TRL pads each micro-batch to its longest answer (same gradient, more padding)"
        ),
    ),
    "loss_agg": Name(
        "`loss_type` (token-mean -> dapo, seq-mean-token-mean -> grpo, seq-mean-token-sum-norm -> dr_grpo)", _loss_agg
    ),
    "kl_coef": Name("`beta` (+ `use_bias_correction_kl`=False)", _kl),
    "kl_estimator": Name("(GRPOTrainer: k3 only; RLOOTrainer: k1 only)", _kl_estimator),
    "baseline": Name(
        "(RLOOTrainer: leave-one-out)",
        lambda c: (
            same()
            if c.algo.baseline == "leave_one_out"
            else missing("RLOOTrainer always uses the leave-one-out baseline")
        ),
    ),
    "keep": Name(""),
    "keep_threshold": Name(""),
    "reinforce_clip": Name("`epsilon` (0.2, kept)"),
    "clip_low": Name(
        "`epsilon`",
        lambda c: (
            same(epsilon=c.algo.clip_low)
            if not POLICY_LOSSES[c.algo.loss_mode].trl_caps_ratio
            else differs(
                f"TRL's {c.algo.loss_mode} has no lower bound on the weight (rlalgos and verl clip it at 1 - clip_low)",
                epsilon=c.algo.clip_low,
            )
        ),
    ),
    "clip_high": Name("`epsilon_high`", _clip_high),
    "clip_c": Name("`delta` (two-sided clip)", _clip_c),
    "loss_mode": Name(f"`loss_type` {' / '.join(_LOSS_TYPES)} (clip: see loss_agg)", _loss_mode),
    **{
        name: Name(f"`{trl}`" if trl else "", _mode_param(loss.name, trl, name))
        for loss in POLICY_LOSSES.values()
        for name, (trl, _) in loss.params.items()
    },
    "adv_scale": Name(
        "`scale_rewards` (std -> group, none -> none)",
        lambda c: same(scale_rewards="group" if c.algo.adv_scale == "std" else "none"),
    ),
    "adv_eps": Name("", lambda c: missing("TRL divides by the group std + 1e-4")),
    "critic_lr": Name(""),
    "value_clip": Name(""),
    "vf_coef": Name(""),
    "gamma": Name(""),
    "lam": Name(""),
    "whiten": Name(""),
    "kl_stages": Name("", no_kl_schedule),
    "dynamic_sampling": Name("", _dynamic_sampling),
    "max_resample_rounds": Name(
        "", no_equivalent("TRL has no dynamic sampling", lambda c: c.algo.dynamic_sampling == "resample")
    ),
    "degenerate_weight": Name(
        "", no_equivalent("no down-weighting of all-equal groups", lambda c: c.algo.dynamic_sampling == "downweight")
    ),
    "overlong_penalty": Name(
        "a reward function (rewards.py `overlong_penalty`, in `reward_funcs`, `reward_weights` 1)", _overlong
    ),
    "overlong_buffer": Name("the constant in rewards.py", lambda c: same()),
    "overlong_filter": Name(
        "`mask_truncated_completions`", lambda c: same(mask_truncated_completions=c.algo.overlong_filter)
    ),
    "entropy_threshold": Name("`use_adaptive_entropy`, `entropy_target`, `entropy_coef*` (bonus only)", _entropy),
    "entropy_action": Name(
        "(bonus only)",
        lambda c: (
            same()
            if c.algo.entropy_action == "bonus" or not c.algo.entropy_threshold
            else missing("raising the temperature has no equivalent: not exported")
        ),
    ),
    "entropy_coef": Name(
        "`entropy_coef` (= `entropy_coef_min` = `entropy_coef_max`, `entropy_coef_delta`=0)", lambda c: same()
    ),
    "temperature_step": Name("", no_equivalent("raising the temperature has no equivalent", raises_temperature)),
    "max_temperature": Name("", no_equivalent("raising the temperature has no equivalent", raises_temperature)),
}
"""TRL's name and conversion of every field of the shared table."""

ENGINE = Engine(
    name="trl",
    title="TRL",
    checked_against=CHECKED_AGAINST,
    summary="GRPOTrainer / RLOOTrainer under accelerate",
    header=f"TRL {CHECKED_AGAINST} (`GRPOConfig` unless said)",
    names=NAMES,
    write=write,
    own_files=("trl_config.yaml", "train_trl.py"),
    needs=("yaml", "pyyaml"),
    install="pip install trl accelerate datasets pyyaml",
    files="trl_config.yaml (the trainer, model, reward functions and every GRPOConfig/RLOOConfig field), train_trl.py (runs it), "
    "rewards.py + rlalgos_tasks.py (the reward functions), data/train.jsonl (+ data/test.jsonl: prompt and every column the rewards get)",
    check=_check,
)


def trl_settings(cfg: TrainConfig, algo: AlgoConfig, gpus: int = 1) -> tuple[dict, dict, Mapping]:
    """``(script values, GRPOConfig/RLOOConfig kwargs, mapping)`` for a TRL run of this config."""
    m = apply_table(ENGINE, make_ctx(cfg, algo, gpus))
    script = {k: v for k, v in m.values.items() if k in TRL_SCRIPT_KEYS}
    return script, {k: v for k, v in m.values.items() if k not in TRL_SCRIPT_KEYS}, m
