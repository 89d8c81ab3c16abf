"""Move an rlalgos experiment to TRL or verl: ``rlalgos export --to trl|verl``.

One mapping table, :data:`ROWS`, says for every rlalgos setting what TRL and
verl call it and how the value converts. The TRL exporter, the verl exporter,
the tests and the README table (:func:`mapping_table`) are all made from it.
A setting that has no equivalent in an engine is never dropped: its row says
what the engine does instead, and every export lists those lines in its
README.md and prints them.

What an export folder holds:

* TRL: ``trl_config.yaml`` (the trainer, the model, the reward functions and
  every ``GRPOConfig``/``RLOOConfig`` field), ``train_trl.py`` that runs it,
  ``rewards.py``, ``data/train.jsonl`` (+ ``data/test.jsonl``), ``run.sh``
  with the ``accelerate launch`` command, README.md;
* verl: ``run.sh`` with ``python -m verl.trainer.main_ppo`` and its Hydra
  overrides, ``rewards.py`` with ``compute_score``, ``data/train.parquet``
  (+ ``data/test.parquet``) in verl's layout, README.md.

Both hold ``rlalgos_tasks.py`` (a copy of :mod:`rlalgos.tasks`, standard
library only) so the reward functions run where rlalgos is not installed, and
``model/`` (a copy of the shipped tiny model) when the run starts from it.
Names were checked against TRL 1.16 and verl 0.9.1 (``tests/test_export.py``
checks them against the installed packages). Like :mod:`rlalgos.config`, this
module imports neither torch nor transformers.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import math
import shutil
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable

from .. import tasks as tasks_module
from ..config import (
    BASE_MODEL_DIR,
    AlgoConfig,
    DAPOConfig,
    EIConfig,
    GSPOConfig,
    PPOConfig,
    ReinforceConfig,
    TrainConfig,
)
from ..tasks import get_task
from ..engine.trackers import TRACKERS, parse_report_to
from ..losses import POLICY_LOSSES

ENGINES = ("trl", "verl")
CHECKED_AGAINST = {"trl": "1.16.0", "verl": "0.9.1"}
"""The versions whose field names and config keys the table was written against."""
REAL_SCALE_LR = 1e-6
"""The learning rate TRL's GRPOConfig and verl's actor default to (billion-parameter models)."""
NO_DUAL_CLIP = 1e9
"""verl's clip_ratio_c for "no dual clip": above e^20, the largest ratio verl computes (it clamps the log-ratio at 20)."""
PLAIN_CHAT_TEMPLATE = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"
"""verl applies a chat template to every prompt; for a tokenizer without one this gives back rlalgos's plain prompt."""
TRL_SCRIPT_KEYS = ("trainer", "model", "train_file", "eval_file", "reward_funcs", "world_size")
"""Keys of the TRL side that ``train_trl.py`` uses itself; every other key is a GRPOConfig/RLOOConfig field."""
A, R = "actor_rollout_ref.actor.", "actor_rollout_ref.rollout."
NO_EI = (
    f"ei is not exported: TRL {CHECKED_AGAINST['trl']} and verl {CHECKED_AGAINST['verl']} have no expert iteration (each subtracts a baseline, so wrong answers are "
    "pushed down); the nearest is rloo, or TRL's SFTTrainer on the kept answers"
)
"""Why an ``ei`` run has no export (one line: the export's error and the table's note)."""


# --------------------------------------------------------------------------- #
# What one export is about
# --------------------------------------------------------------------------- #


@dataclass
class Ctx:
    """The run being exported and the facts the conversions need."""

    cfg: TrainConfig
    algo: AlgoConfig
    gpus: int = 1
    max_new_tokens: int = 48
    rule_rewards: list = field(default_factory=list)
    """(name, weight) of the task's reward functions, rule_weight applied."""
    max_prompt_chars: int = 0
    train_rows: int = 1
    model_ref: str = ""
    """How the export refers to the model: ``model`` (the copy inside the folder), an absolute path or a hub name."""
    chat_template: bool = True
    """Whether the model's tokenizer has a chat template (verl applies one to every prompt)."""
    task: object = None
    """The :class:`rlalgos.tasks.Task` (its rows are written into the export)."""

    @property
    def trl_trainer(self) -> str:
        return "RLOOTrainer" if isinstance(self.algo, ReinforceConfig) else "GRPOTrainer"

    @property
    def optimizer_steps_per_rollout(self) -> int:
        return self.algo.epochs * self.algo.minibatches

    def has(self, name: str) -> bool:
        return hasattr(self.cfg, name) or hasattr(self.algo, name)

    def value(self, name: str):
        return getattr(self.cfg, name) if hasattr(self.cfg, name) else getattr(self.algo, name)

    def _per_gpu(self, sequences: int) -> tuple[int, int]:
        """A minibatch of ``sequences`` split over the GPUs: (sequences per GPU, per forward/backward pass)."""
        if sequences % self.gpus:
            raise ValueError(
                f"a minibatch of {sequences} sequences does not split over {self.gpus} GPUs; pick --gpus dividing it"
            )
        per_gpu, micro = sequences // self.gpus, self.algo.micro_batch_size
        if not 0 < micro < per_gpu:
            return per_gpu, per_gpu
        if per_gpu % micro:
            raise ValueError(
                f"micro_batch_size {micro} does not divide the {per_gpu} sequences per GPU of a minibatch; pick a divisor"
            )
        return per_gpu, micro

    def trl_batch(self) -> dict:
        """per_device_train_batch_size, gradient_accumulation_steps and steps_per_generation:
        one optimizer step per rlalgos minibatch, one generation per rlalgos step."""
        per_gpu, per_pass = self._per_gpu(self.cfg.prompts_per_step * self.cfg.group_size // self.algo.minibatches)
        accumulation = per_gpu // per_pass
        return {
            "per_device_train_batch_size": per_pass,
            "gradient_accumulation_steps": accumulation,
            "steps_per_generation": self.algo.minibatches * accumulation,
        }

    def verl_batch(self) -> dict:
        """verl's minibatch counts prompts (it multiplies by rollout.n); micro-batches count sequences per GPU."""
        P, M = self.cfg.prompts_per_step, self.algo.minibatches
        if P % M:
            raise ValueError(
                f"verl's ppo_mini_batch_size counts prompts: {M} minibatches do not split {P} prompts; pick minibatches dividing prompts_per_step"
            )
        _, per_pass = self._per_gpu(P // M * self.cfg.group_size)
        return {"mini_prompts": P // M, "micro_per_gpu": per_pass}


@dataclass
class Mapped:
    """What one row gives one engine for this run: ``values`` to set, and a ``note``
    saying what differs; ``ok=False`` when the engine has no equivalent."""

    values: dict = field(default_factory=dict)
    note: str = ""
    ok: bool = True


def same(**values) -> Mapped:
    return Mapped(values)


def differs(note: str, **values) -> Mapped:
    return Mapped(values, note)


def missing(note: str, **values) -> Mapped:
    return Mapped(values, note, ok=False)


@dataclass(frozen=True)
class Row:
    """One line of the mapping table."""

    setting: str
    """An rlalgos config field, or ``(fixed) ...`` for something rlalgos always does."""
    trl: str
    """The TRL field(s) it sets (GRPOConfig unless said), '' = none."""
    verl: str
    """The verl override key(s) it sets, '' = none."""
    conversion: str
    note: str
    """What the engine does instead or differently (the export's notes say it with the run's values)."""
    to_trl: Callable[[Ctx], Mapped] | None = None
    to_verl: Callable[[Ctx], Mapped] | None = None
    only: type = object
    """The algorithm config class a fixed row applies to."""

    def applies(self, c: Ctx) -> bool:
        return (self.setting.startswith("(") or c.has(self.setting)) and isinstance(c.algo, self.only)

    def shown_value(self, c: Ctx) -> str:
        return "" if self.setting.startswith("(") else f" = {c.value(self.setting)!r}"

    def mapped(self, engine: str, c: Ctx) -> Mapped:
        fn = self.to_trl if engine == "trl" else self.to_verl
        return fn(c) if fn else missing(self.note)


# --------------------------------------------------------------------------- #
# The conversions that need more than one line
# --------------------------------------------------------------------------- #


def _trl_report_to(c: Ctx) -> Mapped:
    if c.cfg.report_to.strip().lower() == "all":  # TRL's own "all": every tracker installed where it runs
        return same(report_to="all")
    return same(report_to=parse_report_to(c.cfg.report_to, check_installed=False) or "none")


def _verl_report_to(c: Ctx) -> Mapped:
    if c.cfg.report_to.strip().lower() == "all":
        return differs(
            "verl has no 'all': trainer.logger lists the three trackers rlalgos knows",
            **{"trainer.logger": ["console", *TRACKERS]},
        )
    return same(**{"trainer.logger": ["console", *parse_report_to(c.cfg.report_to, check_installed=False)]})


_TRL_LOSS_TYPE = {"token-mean": "dapo", "seq-mean-token-mean": "grpo", "seq-mean-token-sum-norm": "dr_grpo"}


def _trl_algo(c: Ctx) -> Mapped:
    if isinstance(c.algo, ReinforceConfig):
        return same(trainer="RLOOTrainer", normalize_advantages=False)
    return same(
        trainer="GRPOTrainer", importance_sampling_level="sequence" if isinstance(c.algo, GSPOConfig) else "token"
    )


def _verl_algo(c: Ctx) -> Mapped:
    estimator = "rloo" if isinstance(c.algo, ReinforceConfig) else "gae" if isinstance(c.algo, PPOConfig) else "grpo"
    out = {"algorithm.adv_estimator": estimator}
    if not c.has(
        "loss_mode"
    ):  # reinforce, rloo: verl's clipped loss (inert at one update per rollout); the clipped algorithms: see loss_mode
        out[A + "policy_loss.loss_mode"] = "vanilla"
    return same(**out)


def _trl_loss_mode(c: Ctx) -> Mapped:
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


def _verl_loss_mode(c: Ctx) -> Mapped:
    loss = POLICY_LOSSES[c.algo.loss_mode]
    name = "gspo" if isinstance(c.algo, GSPOConfig) else loss.verl
    note = loss.verl_note
    if loss.verl_agg and c.algo.loss_agg != loss.verl_agg:
        note = f"verl's {loss.verl} always aggregates {loss.verl_agg} (the run's loss_agg is {c.algo.loss_agg})"
    return differs(note, **{A + "policy_loss.loss_mode": name})


def _or(names: list[str]) -> str:
    return " or ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " or " + names[-1]


def _loss_mode_row() -> Row:
    """The loss_mode row, its text made from the registered losses."""
    others = [name for name in POLICY_LOSSES if name != "clip"]
    trl = [loss.trl for loss in POLICY_LOSSES.values() if loss.trl]
    nearest: dict[str, list[str]] = {}
    for loss in POLICY_LOSSES.values():
        if loss.trl_missing:
            nearest.setdefault(loss.trl_nearest, []).append(loss.name)
    fixed = []
    for loss in POLICY_LOSSES.values():
        agg = loss.trl_agg or loss.verl_agg
        if agg:
            engines = "TRL's and verl's" if loss.trl_agg and loss.verl_agg else "TRL's" if loss.trl_agg else "verl's"
            fixed.append(f"{engines} {loss.name} {'' if fixed else 'aggregates '}{agg}")
    note = "; ".join(
        [
            *(f"TRL has no {_or(names)} (nearest: {near})" for near, names in nearest.items()),
            ", ".join(fixed) + ", whatever loss_agg says",
        ]
    )
    return Row(
        "loss_mode",
        f"`loss_type` {' / '.join(trl)} (clip: see loss_agg)",
        "`actor.policy_loss.loss_mode`",
        f"clip -> verl vanilla (gspo: gspo); {', '.join(others)}: verl's names; {', '.join(trl)}: TRL loss_type of the same name",
        note,
        _trl_loss_mode,
        _verl_loss_mode,
    )


def _loss_param_rows() -> list[Row]:
    """A row per option of a registered loss, set only when the run uses that loss."""
    return [
        Row(
            name,
            f"`{trl}`" if trl else "",
            f"`actor.{verl}`",
            f"same value (with {loss.name})",
            "" if trl else f"TRL has no {loss.title or loss.name}",
            *_mode_param(loss.name, trl, verl, name),
        )
        for loss in POLICY_LOSSES.values()
        for name, (trl, verl) in loss.params.items()
    ]


def _mode_param(mode: str, trl: str, verl: str, name: str) -> tuple[Callable[[Ctx], Mapped], Callable[[Ctx], Mapped]]:
    """(to_trl, to_verl) of a loss mode's parameter ``name``: set only when the run uses that mode
    (``trl`` '' = TRL has no such option)."""

    def to_trl(c: Ctx) -> Mapped:
        if c.algo.loss_mode != mode:
            return same()
        return same(**{trl: c.value(name)}) if trl else missing(f"TRL has no {mode} (see loss_mode)")

    def to_verl(c: Ctx) -> Mapped:
        return same(**{A + verl: c.value(name)}) if c.algo.loss_mode == mode else same()

    return to_trl, to_verl


def _trl_task(c: Ctx) -> Mapped:
    return same(train_file="data/train.jsonl", reward_funcs=[name for name, _ in c.rule_rewards])


def _verl_task(c: Ctx) -> Mapped:
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


def _verl_model(c: Ctx) -> Mapped:
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


def _trl_eval(c: Ctx) -> Mapped:
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


def _verl_eval(c: Ctx) -> Mapped:
    return differs(
        "verl validates before training and every test_freq steps; it logs reward means over the val set (val-core/...), not greedy accuracy or pass@k",
        **{
            "data.val_files": "@HERE@/data/test.parquet",
            "trainer.test_freq": c.cfg.eval_every or -1,
            "trainer.val_before_train": True,
        },
    )


def _trl_kl(c: Ctx) -> Mapped:
    beta = c.algo.kl_coef
    if isinstance(c.algo, ReinforceConfig):
        return same(beta=beta)  # RLOOTrainer: beta * sum_t (log pi - log pi_ref) taken off the reward, as rlalgos
    note = f"TRL's default beta is 0.0 (no reference model); the export keeps the run's {beta:g}" if beta else ""
    # use_bias_correction_kl=False: the k3 term's gradient as rlalgos computes it (TRL's default multiplies it by the ratio)
    return differs(note, beta=beta, use_bias_correction_kl=False)


def _verl_kl(c: Ctx) -> Mapped:
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


def _trl_kl_estimator(c: Ctx) -> Mapped:
    fixed = "k1" if isinstance(c.algo, ReinforceConfig) else "k3"
    if c.algo.kl_estimator == fixed:
        return same()
    nearest = (
        "; the nearest to k3+ is use_bias_correction_kl=True (k3 x ratio: k3's value, k2's gradient on-policy, unclamped)"
        if c.algo.kl_estimator == "k3+"
        else ""
    )
    return missing(
        f"TRL's {c.trl_trainer} always uses {fixed}; the export trains with {fixed} instead of {c.algo.kl_estimator}{nearest}"
    )


def _verl_kl_estimator(c: Ctx) -> Mapped:
    key = "algorithm.kl_penalty" if isinstance(c.algo, ReinforceConfig) else A + "kl_loss_type"
    note = "verl clamps each k3 term to [-10, 10]" if c.algo.kl_estimator in ("k3", "k3+") else ""
    return differs(note, **{key: c.algo.kl_estimator})


def _trl_loss_agg(c: Ctx) -> Mapped:
    if isinstance(c.algo, ReinforceConfig):
        return missing(
            "RLOOTrainer sums each answer's token losses and averages over answers (seq-mean-token-sum): "
            "the gradient of token-mean times the batch's mean length, which Adam mostly absorbs"
        )
    if POLICY_LOSSES[c.algo.loss_mode].trl:
        return same()  # loss_type is the loss mode's, with its own fixed aggregation (see loss_mode)
    return same(loss_type=_TRL_LOSS_TYPE[c.algo.loss_agg])


def _trl_clip_high(c: Ctx) -> Mapped:
    loss = POLICY_LOSSES[c.algo.loss_mode]
    if loss.trl_caps_ratio:  # TRL's loss caps the ratio itself at epsilon_high
        return differs(
            f"TRL's {loss.trl} caps the weight at epsilon_high itself: 1 + clip_high", epsilon_high=1 + c.algo.clip_high
        )
    return same(epsilon_high=c.algo.clip_high)


def _verl_loss_agg(c: Ctx) -> Mapped:
    out = {A + "loss_agg_mode": c.algo.loss_agg}
    if (
        c.algo.loss_agg == "seq-mean-token-sum-norm"
    ):  # Dr. GRPO's constant L_max, as rlalgos (verl's default: the padded width)
        out[A + "loss_scale_factor"] = c.max_new_tokens
    return same(**out)


def _trl_clip_c(c: Ctx) -> Mapped:
    if not c.algo.clip_c:
        return same(delta=None)
    if c.algo.clip_c <= 1 + c.algo.clip_high:
        return differs(
            "TRL's delta also caps the ratio where A > 0; equal to the dual clip only when delta > 1 + epsilon_high",
            delta=c.algo.clip_c,
        )
    return same(
        delta=c.algo.clip_c
    )  # two-sided GRPO: min(ratio, delta) bounds a negative-advantage token's loss at -A * delta, as the dual clip


def _trl_dynamic_sampling(c: Ctx) -> Mapped:
    if c.algo.dynamic_sampling == "off":
        return same()
    return missing(
        "TRL has no dynamic sampling: it trains on every group (an all-equal group has advantage 0 and adds only to the token count)"
    )


def _verl_dynamic_sampling(c: Ctx) -> Mapped:
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


def _overlong_on(c: Ctx) -> bool:
    return bool(c.algo.overlong_penalty)


def _trl_overlong(c: Ctx) -> Mapped:
    if not _overlong_on(c):
        return same()
    return differs(
        "a reward function (rewards.py: overlong_penalty, weight 1), logged as its own reward",
        reward_funcs=["overlong_penalty"],
        reward_weights=[1.0],
    )


def _verl_overlong(c: Ctx) -> Mapped:
    if not _overlong_on(c):
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


def _overlong_buffer(c: Ctx) -> int:
    return min(c.algo.overlong_buffer, c.max_new_tokens)


def _raises_temperature(c: Ctx) -> bool:
    return c.algo.entropy_threshold > 0 and c.algo.entropy_action == "temperature"


def _trl_entropy(c: Ctx) -> Mapped:
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


def _no_equivalent(note: str, used: Callable[[Ctx], bool] = lambda c: True) -> Callable[[Ctx], Mapped]:
    """A conversion for a setting the engine lacks; the note says when this run does not use the setting anyway."""
    return lambda c: missing(note if used(c) else f"{note} (not used by this run)")


def _no_reward_model(c: Ctx, setting: str) -> Mapped:
    if not c.cfg.reward_model:
        return same()  # no learned reward model in this run: nothing to carry
    return missing(
        f"the learned reward model ({c.cfg.reward_model}) is not exported: the exported reward is the rule reward alone"
        if setting == "reward_model"
        else "the learned reward model is not exported"
    )


def _trl_lora(c: Ctx, setting: str) -> Mapped:
    if not c.cfg.lora_rank:
        return same()  # full fine-tuning, as train_trl.py does
    if setting != "lora_rank":
        return missing("see lora_rank")
    return missing(
        f"LoRA is not exported to TRL: train_trl.py trains every weight; give the trainer peft_config=LoraConfig(r={c.cfg.lora_rank}, ...) for it"
    )


def _verl_lora(c: Ctx, setting: str) -> Mapped:
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


def _trl_device(c: Ctx) -> Mapped:
    cpu = c.cfg.device == "cpu"
    return same(
        use_cpu=cpu, bf16=not cpu, world_size=c.gpus
    )  # bf16: mixed precision with fp32 master weights, as rlalgos's dtype auto on CUDA


def _engine_dtype(c: Ctx, gpu_only: bool) -> Mapped:
    """The engines run fp32 on CPU (TRL) and bf16 mixed precision on GPUs: rlalgos's dtype ``auto``."""
    runs = "bfloat16" if gpu_only or c.cfg.device != "cpu" else "float32"
    if c.cfg.dtype in ("auto", runs):
        return same()
    return differs(
        f"dtype {c.cfg.dtype}: the export runs {'bf16 mixed precision (fp32 master weights, as rlalgos dtype bfloat16)' if runs == 'bfloat16' else 'float32'}"
    )


def _trl_rollout_dtype(c: Ctx) -> Mapped:
    if c.cfg.rollout_dtype == "float32":
        return same()
    return missing(
        f"TRL has no rollout dtype: the export samples with generate, with the trained model itself; with use_vllm=True, vLLM serves the checkpoint's own dtype "
        f"(bf16 for most hub models), the mismatch rollout_dtype {c.cfg.rollout_dtype} imitates"
    )


def _verl_rollout_dtype(c: Ctx) -> Mapped:
    if c.cfg.rollout_dtype == "float32":
        return differs(
            "verl's vLLM samples in bfloat16 (its default rollout.dtype), the mismatch rlalgos's rollout_dtype bfloat16 imitates; set actor_rollout_ref.rollout.dtype=float32 to remove it"
        )
    return same(**{R + "dtype": c.cfg.rollout_dtype})


MASK_NO_LOWER = 1e-9
"""verl's IcePop bounds ``"lower_upper"`` need a lower bound > 0: below e^-20 (~2e-9, the smallest ratio verl computes) it never acts, so masking is upper-only, as rlalgos's."""


def _trl_rollout_correction(c: Ctx, setting: str) -> Mapped:
    mode = c.cfg.rollout_correction
    if isinstance(c.algo, ReinforceConfig):
        return (
            same()
            if mode == "none"
            else missing("RLOOTrainer has no importance-sampling correction (GRPOTrainer's vllm_importance_sampling_*)")
        )
    if setting == "rollout_correction_threshold":
        return same() if mode == "none" else same(vllm_importance_sampling_clip_max=c.cfg.rollout_correction_threshold)
    if mode == "none":
        return same(
            vllm_importance_sampling_correction=False
        )  # TRL's default is on (sequence_mask, when it samples with vLLM)
    return differs(
        "TRL corrects only when it samples with vLLM (use_vllm=True); the export samples with generate in the trainer's own precision, where there is little to correct",
        vllm_importance_sampling_correction=True,
        vllm_importance_sampling_mode=mode,
    )


def _verl_rollout_correction(c: Ctx, setting: str) -> Mapped:
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


def _trl_save(c: Ctx) -> Mapped:
    if not c.cfg.save_every:
        return differs("train_trl.py saves the final model to output/ at the end", save_strategy="no")
    return same(save_strategy="steps", save_steps=c.cfg.save_every * c.optimizer_steps_per_rollout)


def _trl_micro(c: Ctx) -> Mapped:
    return same(gradient_accumulation_steps=c.trl_batch()["gradient_accumulation_steps"])


def _verl_micro(c: Ctx) -> Mapped:
    micro = c.verl_batch()["micro_per_gpu"]
    out = {
        A + "ppo_micro_batch_size_per_gpu": micro,
        R + "log_prob_micro_batch_size_per_gpu": micro,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": micro,
    }
    if isinstance(c.algo, PPOConfig):
        out["critic.ppo_micro_batch_size_per_gpu"] = micro
    return same(**out)


# --------------------------------------------------------------------------- #
# The table
# --------------------------------------------------------------------------- #

ROWS: list[Row] = [
    # ---- the run ----------------------------------------------------------------
    Row(
        "algo",
        "GRPOTrainer (grpo, dapo, drgrpo, dualclip, gspo: `importance_sampling_level`, clipcov, klcov, cispo, sapo); RLOOTrainer (reinforce, rloo)",
        "`algorithm.adv_estimator` (+ `actor.policy_loss.loss_mode`=vanilla for reinforce, rloo)",
        "GRPO family -> grpo (gspo: sequence level; its loss_mode: see loss_mode); reinforce, rloo -> rloo; ppo -> gae",
        "TRL 1.16 has no PPO trainer: ppo exports to verl only; neither engine has expert iteration: ei is not exported",
        _trl_algo,
        _verl_algo,
    ),
    Row(
        "model",
        "`model` (train_trl.py)",
        "`actor_rollout_ref.model.path` (+ `critic.model.path`, `model.custom_chat_template`)",
        "empty = the shipped tiny model, copied into the export as model/",
        "verl applies a chat template to every prompt; one that passes the prompt through is set for a tokenizer without one",
        lambda c: same(model=c.model_ref),
        _verl_model,
    ),
    Row(
        "task",
        "`train_file` (jsonl: prompt + every column), `reward_funcs`",
        "`data.train_files` (parquet), `data.max_prompt_length`, `reward.custom_reward_function.*`",
        "the train split; rewards.py holds the task's reward functions (TRL-shaped) and verl's compute_score",
        "",
        _trl_task,
        _verl_task,
    ),
    Row(
        "steps",
        "`max_steps`",
        "`trainer.total_training_steps` (+ `trainer.total_epochs`)",
        "TRL counts optimizer steps: steps x minibatches x epochs; verl counts rollouts",
        "",
        lambda c: same(max_steps=c.cfg.steps * c.optimizer_steps_per_rollout),
        lambda c: same(
            **{
                "trainer.total_training_steps": c.cfg.steps,
                "trainer.total_epochs": math.ceil(c.cfg.steps * c.cfg.prompts_per_step / c.train_rows),
            }
        ),
    ),
    Row(
        "prompts_per_step",
        "`per_device_train_batch_size`",
        "`data.train_batch_size`",
        "TRL: per_device_train_batch_size x GPUs x steps_per_generation = prompts_per_step x group_size sequences per generation; verl counts prompts",
        "",
        lambda c: same(per_device_train_batch_size=c.trl_batch()["per_device_train_batch_size"]),
        lambda c: same(**{"data.train_batch_size": c.cfg.prompts_per_step}),
    ),
    Row(
        "group_size",
        "`num_generations`",
        "`actor_rollout_ref.rollout.n`",
        "same number",
        "",
        lambda c: same(num_generations=c.cfg.group_size),
        lambda c: same(**{R + "n": c.cfg.group_size}),
    ),
    Row(
        "max_new_tokens",
        "`max_completion_length`",
        "`data.max_response_length`",
        "0 = the task's default (48 for addition), resolved",
        "",
        lambda c: same(max_completion_length=c.max_new_tokens),
        lambda c: same(**{"data.max_response_length": c.max_new_tokens}),
    ),
    Row(
        "temperature",
        "`temperature`",
        "`rollout.temperature`, `rollout.val_kwargs.temperature`",
        "same value",
        "",
        lambda c: same(temperature=c.cfg.temperature),
        lambda c: same(**{R + "temperature": c.cfg.temperature, R + "val_kwargs.temperature": c.cfg.temperature}),
    ),
    Row(
        "top_p",
        "`top_p` (`top_k`=0)",
        "`rollout.top_p`, `rollout.top_k`=-1 (+ val_kwargs)",
        "same value (1.0 = the full distribution); no top-k in rlalgos",
        "",
        lambda c: same(top_p=c.cfg.top_p, top_k=0),
        lambda c: same(
            **{
                R + "top_p": c.cfg.top_p,
                R + "top_k": -1,
                R + "val_kwargs.top_p": c.cfg.top_p,
                R + "val_kwargs.top_k": -1,
            }
        ),
    ),
    Row(
        "chat_template",
        "(conversational prompts get the tokenizer's template)",
        "(verl templates every prompt)",
        "",
        "the export writes plain-text prompts; TRL templates only conversational (message-list) prompts, verl templates every prompt (see `model`)",
        lambda c: (
            same()
            if not c.cfg.chat_template
            else differs(
                "the export writes plain-text prompts, which TRL does not template: make the dataset's prompt a [{'role': 'user', 'content': ...}] list to get the template"
            )
        ),
        lambda c: same(),
    ),
    Row(
        "lora_rank",
        "(the trainer's `peft_config`: not written)",
        "`actor_rollout_ref.model.lora_rank`",
        "same value (0 = off)",
        "train_trl.py trains every weight (TRL takes a peft LoraConfig as the trainer's peft_config)",
        lambda c: _trl_lora(c, "lora_rank"),
        lambda c: _verl_lora(c, "lora_rank"),
    ),
    Row(
        "lora_alpha",
        "",
        "`actor_rollout_ref.model.lora_alpha`",
        "0 -> 2 x lora_rank",
        "TRL: see lora_rank",
        lambda c: _trl_lora(c, "lora_alpha"),
        lambda c: _verl_lora(c, "lora_alpha"),
    ),
    Row(
        "lora_dropout",
        "",
        "",
        "",
        "verl's LoRA has no dropout; TRL: see lora_rank",
        lambda c: _trl_lora(c, "lora_dropout"),
        lambda c: _verl_lora(c, "lora_dropout"),
    ),
    Row(
        "lora_targets",
        "",
        "`actor_rollout_ref.model.target_modules`",
        "all-linear, or the list of module names",
        "TRL: see lora_rank",
        lambda c: _trl_lora(c, "lora_targets"),
        lambda c: _verl_lora(c, "lora_targets"),
    ),
    Row(
        "dtype",
        "`bf16` (mixed precision; see `device`)",
        "(FSDP mixed precision)",
        "auto = what the engines do: fp32 on CPU, bf16 mixed precision (fp32 master weights) on GPUs",
        "the engines have no bf16-weights mode",
        lambda c: _engine_dtype(c, gpu_only=False),
        lambda c: _engine_dtype(c, gpu_only=True),
    ),
    Row(
        "score_batch_size",
        "",
        "(`*.log_prob_micro_batch_size_per_gpu`)",
        "",
        "TRL scores with its training micro-batch (per_device_train_batch_size)",
        lambda c: same(),
        lambda c: same(),
    ),
    Row(
        "rollout_dtype",
        "(none; vLLM serves the checkpoint's dtype)",
        "`actor_rollout_ref.rollout.dtype`",
        "bfloat16 / float16 -> the same name; float32 = no mismatch",
        "TRL has no rollout dtype (the export samples with generate); verl's vLLM samples in bfloat16 by default",
        _trl_rollout_dtype,
        _verl_rollout_dtype,
    ),
    Row(
        "rollout_sync_every",
        "(none: vLLM's weights are synced before every generation)",
        "(none in the exported trainer; verl's asynchronous recipes run a stale sampler)",
        "1 = the engines' behaviour",
        "a stale sampler (k > 1) is the workbook's deliberate, larger mismatch; the exports sync every step",
        lambda c: (
            same()
            if c.cfg.rollout_sync_every == 1
            else missing(
                f"rollout_sync_every {c.cfg.rollout_sync_every}: TRL syncs vLLM's weights before every generation"
            )
        ),
        lambda c: (
            same()
            if c.cfg.rollout_sync_every == 1
            else missing(
                f"rollout_sync_every {c.cfg.rollout_sync_every}: the exported verl trainer syncs every step (its asynchronous recipes, e.g. one-step off-policy, are where staleness lives)"
            )
        ),
    ),
    Row(
        "rollout_correction",
        "`vllm_importance_sampling_correction`, `vllm_importance_sampling_mode`",
        "`algorithm.rollout_correction.rollout_is` (token / sequence)",
        "TRL: the same mode names (none -> correction False); verl: token_* -> token, sequence_* -> sequence (masking: see rollout_correction_threshold)",
        "TRL corrects only with use_vllm=True; RLOOTrainer has no correction",
        lambda c: _trl_rollout_correction(c, "rollout_correction"),
        lambda c: _verl_rollout_correction(c, "rollout_correction"),
    ),
    Row(
        "rollout_correction_threshold",
        "`vllm_importance_sampling_clip_max` (was `vllm_importance_sampling_cap`)",
        "`algorithm.rollout_correction.rollout_is_threshold`",
        f'same value C; verl\'s masking is its IcePop bounds "{MASK_NO_LOWER:g}_C" (no lower bound)',
        "TRL's default C is 3.0, verl's 2.0 (rlalgos's)",
        lambda c: _trl_rollout_correction(c, "rollout_correction_threshold"),
        lambda c: _verl_rollout_correction(c, "rollout_correction_threshold"),
    ),
    Row(
        "logits_chunk",
        "",
        "",
        "",
        "memory, not maths: TRL and verl bound logits memory their own way (verl's fused kernels; TRL's per-device batch)",
        lambda c: same(),
        lambda c: same(),
    ),
    Row(
        "sampler",
        "`use_vllm`=False",
        "`rollout.name`=vllm, `rollout.tensor_model_parallel_size`=1",
        "the engine's own generation; the same distribution",
        "TRL samples with transformers' generate (use_vllm=True for speed on GPUs); verl with vLLM",
        lambda c: differs(
            "TRL samples with transformers' generate (like --sampler hf); set use_vllm=True for speed on GPUs",
            use_vllm=False,
        ),
        lambda c: differs("verl samples with vLLM", **{R + "name": "vllm", R + "tensor_model_parallel_size": 1}),
    ),
    Row(
        "eval_every",
        "`eval_strategy`, `eval_steps` (x optimizer steps per rollout), `eval_on_start`",
        "`trainer.test_freq`, `trainer.val_before_train`, `data.val_files`",
        "0 = none during training",
        "the engines log reward means, not greedy accuracy or pass@k",
        _trl_eval,
        _verl_eval,
    ),
    Row(
        "eval_prompts",
        "rows of data/test.jsonl",
        "rows of data/test.parquet",
        "the first eval_prompts test rows (0 = all)",
        "",
        lambda c: same(),
        lambda c: same(),
    ),
    Row(
        "eval_samples",
        "`num_generations_eval`, `per_device_eval_batch_size`",
        "`rollout.val_kwargs.n`, `rollout.val_kwargs.do_sample`=True",
        "samples per test prompt",
        "",
        lambda c: same(num_generations_eval=c.cfg.eval_samples, per_device_eval_batch_size=8 * c.cfg.eval_samples),
        lambda c: same(**{R + "val_kwargs.n": c.cfg.eval_samples, R + "val_kwargs.do_sample": True}),
    ),
    Row(
        "reward_model",
        "",
        "",
        "not exported",
        "the learned reward model is not exported: the exported reward is the rule reward alone",
        lambda c: _no_reward_model(c, "reward_model"),
        lambda c: _no_reward_model(c, "reward_model"),
    ),
    Row(
        "rm_weight",
        "",
        "",
        "not exported",
        "the learned reward model is not exported",
        lambda c: _no_reward_model(c, "rm_weight"),
        lambda c: _no_reward_model(c, "rm_weight"),
    ),
    Row(
        "rule_weight",
        "`reward_weights`",
        "the weight in rewards.py's compute_score",
        "the rule reward's weight; other task rewards keep theirs (format: 0, logged only)",
        "",
        lambda c: same(reward_weights=[w for _, w in c.rule_rewards]),
        lambda c: same(),
    ),
    Row(
        "save_every",
        "`save_strategy`, `save_steps` (x optimizer steps per rollout)",
        "`trainer.save_freq`",
        "0 = only at the end",
        "",
        _trl_save,
        lambda c: differs(
            "" if c.cfg.save_every else "verl saves no checkpoint (save_freq -1)",
            **{"trainer.save_freq": c.cfg.save_every or -1},
        ),
    ),
    Row(
        "log_kl",
        "",
        "",
        "",
        "the KL to the reference is logged only when a KL term is trained (TRL: beta > 0; verl: use_kl_loss or use_kl_in_reward)",
        _no_equivalent("TRL logs the KL to the reference only when beta > 0"),
        _no_equivalent("verl logs the KL to the reference only with use_kl_loss or use_kl_in_reward"),
    ),
    Row(
        "kl_sample_rows",
        "",
        "",
        "",
        "a logged-only KL measured on a subsample of answers: the engines log no KL without a KL term",
        _no_equivalent("TRL logs no KL without beta > 0", lambda c: c.cfg.kl_sample_rows > 0),
        _no_equivalent("verl logs no KL without use_kl_loss or use_kl_in_reward", lambda c: c.cfg.kl_sample_rows > 0),
    ),
    Row(
        "entropy_probe",
        "",
        "",
        "",
        "the entropy mechanism (covariance, entropy before/after each update) is measured by rlalgos only; verl logs `actor/entropy`, TRL `entropy`",
        _no_equivalent("TRL logs the entropy, not its change across an update", lambda c: c.cfg.entropy_probe),
        _no_equivalent("verl logs actor/entropy, not its change across an update", lambda c: c.cfg.entropy_probe),
    ),
    Row(
        "seed",
        "`seed`, `data_seed`",
        "`data.seed`",
        "same seed, different random streams",
        "",
        lambda c: same(seed=c.cfg.seed, data_seed=c.cfg.seed),
        lambda c: same(**{"data.seed": c.cfg.seed}),
    ),
    Row(
        "device",
        "`use_cpu`, `bf16`; `world_size` (export --gpus)",
        "`trainer.n_gpus_per_node` (export --gpus), `trainer.nnodes`=1",
        "cpu: use_cpu, fp32; else bf16 mixed precision on --gpus GPUs",
        "",
        _trl_device,
        lambda c: differs(
            "verl runs on GPUs only; bf16 mixed precision (FSDP)",
            **{"trainer.n_gpus_per_node": c.gpus, "trainer.nnodes": 1},
        ),
    ),
    Row(
        "out_dir",
        "`output_dir`",
        "`trainer.default_local_dir`, `trainer.experiment_name`",
        "output/ inside the export folder",
        "",
        lambda c: same(output_dir="output"),
        lambda c: same(
            **{
                "trainer.default_local_dir": "@HERE@/output",
                "trainer.project_name": "rlalgos",
                "trainer.experiment_name": Path(c.cfg.out_dir).name or c.cfg.algo,
            }
        ),
    ),
    Row("overwrite", "", "", "", "the engines write checkpoints into output/ without rlalgos's run-folder rule"),
    Row(
        "progress",
        "`disable_tqdm`",
        "",
        "disable_tqdm = not progress",
        "verl prints a progress line per step",
        lambda c: same(disable_tqdm=not c.cfg.progress),
    ),
    Row(
        "on_nonfinite", "", "", "", "no stop on a NaN/inf loss: the engines go on; watch the logged loss and grad_norm"
    ),
    Row(
        "stop_on_collapse",
        "",
        "",
        "",
        "no stop on a collapsed policy: the engines go on; `rlalgos diagnose OUTPUT_DIR` reads their logs afterwards",
    ),
    Row(
        "(fixed) a metrics row every step",
        "`logging_steps`=1",
        "",
        "",
        "",
        lambda c: same(logging_steps=1, log_completions=False),
        lambda c: same(),
    ),
    Row(
        "report_to",
        "`report_to`",
        "`trainer.logger`",
        "the same names (TRL also takes all / none); verl: console plus them",
        "",
        _trl_report_to,
        _verl_report_to,
    ),
    # ---- every algorithm -------------------------------------------------------------
    Row(
        "lr",
        "`learning_rate`",
        "`actor.optim.lr`",
        "same value",
        "kept from the run; real-scale runs use 1e-6 (TRL's and verl's default) for billion-parameter models, rlalgos's 1e-4 suits its 0.87M-parameter model",
        lambda c: differs(
            f"kept at the run's {c.algo.lr:g}; real-scale TRL/verl runs use {REAL_SCALE_LR:g} (their default)"
            if c.algo.lr != REAL_SCALE_LR
            else "",
            learning_rate=c.algo.lr,
        ),
        lambda c: differs(
            f"kept at the run's {c.algo.lr:g}; real-scale TRL/verl runs use {REAL_SCALE_LR:g} (their default)"
            if c.algo.lr != REAL_SCALE_LR
            else "",
            **{A + "optim.lr": c.algo.lr},
        ),
    ),
    Row(
        "(fixed) AdamW at a constant learning rate",
        "`lr_scheduler_type`=constant, `warmup_steps`=0",
        "`actor.optim.lr_scheduler_type`=constant, `actor.optim.lr_warmup_steps_ratio`=0",
        "TRL's default schedule is linear decay",
        "",
        lambda c: same(lr_scheduler_type="constant", warmup_steps=0),
        lambda c: same(**{A + "optim.lr_scheduler_type": "constant", A + "optim.lr_warmup_steps_ratio": 0.0}),
    ),
    Row(
        "weight_decay",
        "`weight_decay`",
        "`actor.optim.weight_decay`",
        "same value (verl's default is 0.01)",
        "",
        lambda c: same(weight_decay=c.algo.weight_decay),
        lambda c: same(**{A + "optim.weight_decay": c.algo.weight_decay}),
    ),
    Row(
        "max_grad_norm",
        "`max_grad_norm`",
        "`actor.optim.clip_grad`",
        "same value",
        "",
        lambda c: same(max_grad_norm=c.algo.max_grad_norm),
        lambda c: same(**{A + "optim.clip_grad": c.algo.max_grad_norm}),
    ),
    Row(
        "epochs",
        "`num_iterations`",
        "`actor.ppo_epochs`",
        "passes over each rollout",
        "",
        lambda c: same(num_iterations=c.algo.epochs),
        lambda c: same(**{A + "ppo_epochs": c.algo.epochs}),
    ),
    Row(
        "minibatches",
        "`steps_per_generation`",
        "`actor.ppo_mini_batch_size`",
        "a COUNT in rlalgos; TRL: optimizer steps per generation (x accumulation); verl: a SIZE in prompts = prompts_per_step / minibatches",
        "",
        lambda c: same(steps_per_generation=c.trl_batch()["steps_per_generation"]),
        lambda c: same(**{A + "ppo_mini_batch_size": c.verl_batch()["mini_prompts"]}),
    ),
    Row(
        "micro_batch_size",
        "`gradient_accumulation_steps` (with `per_device_train_batch_size`)",
        "`actor.ppo_micro_batch_size_per_gpu` (+ log-prob micro-batches)",
        "0 = the whole minibatch share of a GPU in one pass",
        "",
        _trl_micro,
        _verl_micro,
    ),
    Row(
        "length_buckets",
        "",
        "",
        "",
        "no length bucketing (same gradient): TRL pads each micro-batch to its longest answer; verl can drop padding (`model.use_remove_padding`)",
        _no_equivalent(
            "no length bucketing: TRL pads each micro-batch to its longest answer (same gradient, more padding)"
        ),
        _no_equivalent(
            "no length bucketing: verl pads each micro-batch, or drops padding with actor_rollout_ref.model.use_remove_padding=True (same gradient)"
        ),
    ),
    Row(
        "loss_agg",
        "`loss_type` (token-mean -> dapo, seq-mean-token-mean -> grpo, seq-mean-token-sum-norm -> dr_grpo)",
        "`actor.loss_agg_mode` (+ `actor.loss_scale_factor`)",
        "verl uses rlalgos's strings; Dr. GRPO's L_max = max_new_tokens in both",
        "RLOOTrainer has one fixed aggregation",
        _trl_loss_agg,
        _verl_loss_agg,
    ),
    Row(
        "kl_coef",
        "`beta` (+ `use_bias_correction_kl`=False)",
        "`actor.use_kl_loss` + `actor.kl_loss_coef` (GRPO family); `algorithm.use_kl_in_reward` + `algorithm.kl_ctrl.kl_coef` (reinforce, rloo, ppo)",
        "same value, in the loss or in the reward as rlalgos puts it",
        "TRL's default beta is 0 (grpo's is 0.04); verl's kl_loss_coef 0.001",
        _trl_kl,
        _verl_kl,
    ),
    Row(
        "kl_estimator",
        "(GRPOTrainer: k3 only; RLOOTrainer: k1 only)",
        "`actor.kl_loss_type` / `algorithm.kl_penalty`",
        "verl takes rlalgos's k1 / k2 / k3, and k1+ / k3+ in the loss (GRPO family)",
        "TRL has one fixed estimator per trainer (nearest to k3+: `use_bias_correction_kl`)",
        _trl_kl_estimator,
        _verl_kl_estimator,
    ),
    Row(
        "baseline",
        "(RLOOTrainer: leave-one-out)",
        "`algorithm.adv_estimator`=rloo",
        "leave_one_out",
        "none and batch_mean have no equivalent: both engines use leave-one-out",
        lambda c: (
            same()
            if c.algo.baseline == "leave_one_out"
            else missing("RLOOTrainer always uses the leave-one-out baseline")
        ),
        lambda c: (
            same() if c.algo.baseline == "leave_one_out" else missing("exported as adv_estimator rloo (leave-one-out)")
        ),
    ),
    Row("keep", "", "", "", NO_EI),
    Row("keep_threshold", "", "", "", NO_EI),
    Row(
        "(fixed) REINFORCE does not clip the ratio",
        "`epsilon` (0.2, kept)",
        "`actor.clip_ratio` (0.2), `actor.clip_ratio_c` (3, kept)",
        "",
        "both engines clip the ratio: inert at epochs = minibatches = 1 (the ratio is exactly 1), active otherwise",
        only=ReinforceConfig,
    ),
    Row(
        "clip_low",
        "`epsilon`",
        "`actor.clip_ratio_low` (+ `actor.clip_ratio`)",
        "same value",
        "TRL's cispo has no lower bound on the weight",
        lambda c: (
            same(epsilon=c.algo.clip_low)
            if not POLICY_LOSSES[c.algo.loss_mode].trl_caps_ratio
            else differs(
                f"TRL's {c.algo.loss_mode} has no lower bound on the weight (rlalgos and verl clip it at 1 - clip_low)",
                epsilon=c.algo.clip_low,
            )
        ),
        lambda c: same(**{A + "clip_ratio_low": c.algo.clip_low, A + "clip_ratio": c.algo.clip_low}),
    ),
    Row(
        "clip_high",
        "`epsilon_high`",
        "`actor.clip_ratio_high`",
        "same value; cispo: TRL's epsilon_high = 1 + clip_high (it bounds the ratio itself)",
        "",
        _trl_clip_high,
        lambda c: same(**{A + "clip_ratio_high": c.algo.clip_high}),
    ),
    Row(
        "clip_c",
        "`delta` (two-sided clip)",
        "`actor.clip_ratio_c`",
        f"0 (off) -> TRL delta None, verl {NO_DUAL_CLIP:g} (verl always dual-clips, default 3)",
        "",
        _trl_clip_c,
        lambda c: same(**{A + "clip_ratio_c": c.algo.clip_c or NO_DUAL_CLIP}),
    ),
    _loss_mode_row(),
    *_loss_param_rows(),
    Row(
        "adv_scale",
        "`scale_rewards` (std -> group, none -> none)",
        "`algorithm.norm_adv_by_std_in_grpo`",
        "",
        "",
        lambda c: same(scale_rewards="group" if c.algo.adv_scale == "std" else "none"),
        lambda c: same(**{"algorithm.norm_adv_by_std_in_grpo": c.algo.adv_scale == "std"}),
    ),
    Row(
        "adv_eps",
        "",
        "",
        "",
        "fixed in the engines: TRL divides by std + 1e-4, verl by std + 1e-6 (rlalgos's default)",
        lambda c: missing("TRL divides by the group std + 1e-4"),
        lambda c: same() if c.algo.adv_eps == 1e-6 else missing("verl divides by the group std + 1e-6"),
    ),
    # ---- PPO --------------------------------------------------------------------------
    Row(
        "critic_lr",
        "",
        "`critic.optim.lr` (+ `critic.optim.weight_decay`=0)",
        "same value",
        "",
        None,
        lambda c: same(**{"critic.optim.lr": c.algo.critic_lr, "critic.optim.weight_decay": 0.0}),
    ),
    Row(
        "value_clip",
        "",
        "`critic.cliprange_value`",
        "same value",
        "",
        None,
        lambda c: same(**{"critic.cliprange_value": c.algo.value_clip}),
    ),
    Row(
        "vf_coef",
        "",
        "",
        "",
        "verl's critic has its own optimizer, so its loss has no weight; rlalgos's critic is its own copy too, "
        "so vf_coef only rescales its gradient (Adam absorbs that, except in the shared gradient-norm clip)",
    ),
    Row("gamma", "", "`algorithm.gamma`", "same value", "", None, lambda c: same(**{"algorithm.gamma": c.algo.gamma})),
    Row("lam", "", "`algorithm.lam`", "same value", "", None, lambda c: same(**{"algorithm.lam": c.algo.lam})),
    Row(
        "whiten",
        "",
        "",
        "",
        "verl's GAE always whitens the advantages over the batch",
        None,
        lambda c: same() if c.algo.whiten else missing("verl's GAE always whitens the advantages over the batch"),
    ),
    # ---- DAPO ------------------------------------------------------------------------
    Row(
        "kl_stages",
        "",
        "",
        "",
        "no KL schedule: the constant kl_coef is used",
        lambda c: same() if not c.algo.kl_stages else missing("no KL schedule: the constant kl_coef is used"),
        lambda c: same() if not c.algo.kl_stages else missing("no KL schedule: the constant kl_coef is used"),
    ),
    Row(
        "dynamic_sampling",
        "",
        "`algorithm.filter_groups.enable`, `.metric`=acc",
        "resample -> enable (verl refills the batch)",
        "TRL has none; verl has no 'filter' without refill and no 'downweight'",
        _trl_dynamic_sampling,
        _verl_dynamic_sampling,
    ),
    Row(
        "max_resample_rounds",
        "",
        "",
        "",
        "TRL: no dynamic sampling; verl's V1 trainer refills until the batch is full (it ignores filter_groups.max_num_gen_batches)",
        _no_equivalent("TRL has no dynamic sampling", lambda c: c.algo.dynamic_sampling == "resample"),
        _no_equivalent(
            "verl's V1 trainer refills until the batch is full (its replay buffer ignores filter_groups.max_num_gen_batches)",
            lambda c: c.algo.dynamic_sampling == "resample",
        ),
    ),
    Row(
        "degenerate_weight",
        "",
        "",
        "",
        "no down-weighting of all-equal groups",
        _no_equivalent("no down-weighting of all-equal groups", lambda c: c.algo.dynamic_sampling == "downweight"),
        _no_equivalent("no down-weighting of all-equal groups", lambda c: c.algo.dynamic_sampling == "downweight"),
    ),
    Row(
        "overlong_penalty",
        "a reward function (rewards.py `overlong_penalty`, in `reward_funcs`, weight 1)",
        "`reward.reward_manager.name`=dapo, `+reward.reward_kwargs.overlong_buffer_cfg.*`, `+reward.reward_kwargs.max_resp_len`",
        "DAPO's soft penalty, the same formula",
        "",
        _trl_overlong,
        _verl_overlong,
    ),
    Row(
        "overlong_buffer",
        "the constant in rewards.py",
        "`+reward.reward_kwargs.overlong_buffer_cfg.len`",
        "L_c in tokens (at most max_new_tokens)",
        "",
        lambda c: same(),
        lambda c: same(
            **({"+reward.reward_kwargs.overlong_buffer_cfg.len": _overlong_buffer(c)} if _overlong_on(c) else {})
        ),
    ),
    Row(
        "overlong_filter",
        "`mask_truncated_completions`",
        "",
        "same switch",
        "verl has no switch that masks truncated answers out of the loss",
        lambda c: same(mask_truncated_completions=c.algo.overlong_filter),
        lambda c: (
            same()
            if not c.algo.overlong_filter
            else missing("verl has no switch that masks truncated answers out of the loss: they are trained on")
        ),
    ),
    Row(
        "entropy_threshold",
        "`use_adaptive_entropy`, `entropy_target` (bonus only)",
        "`actor.entropy_coeff`=0",
        "the monitor fires at or below the threshold",
        "verl has only a constant bonus (actor.entropy_coeff): the monitor is not exported",
        _trl_entropy,
        lambda c: (
            same(**{A + "entropy_coeff": 0.0})
            if not c.algo.entropy_threshold
            else missing(
                "verl has only a constant bonus (actor.entropy_coeff): the monitor is not exported, entropy_coeff 0",
                **{A + "entropy_coeff": 0.0},
            )
        ),
    ),
    Row(
        "entropy_action",
        "(bonus only)",
        "",
        "",
        "raising the temperature has no equivalent",
        lambda c: (
            same()
            if c.algo.entropy_action == "bonus" or not c.algo.entropy_threshold
            else missing("raising the temperature has no equivalent: not exported")
        ),
        lambda c: same() if not c.algo.entropy_threshold else missing("not exported"),
    ),
    Row(
        "entropy_coef",
        "`entropy_coef` (= `entropy_coef_min` = `entropy_coef_max`, `entropy_coef_delta`=0)",
        "",
        "the bonus weight while the monitor fires",
        "verl: see entropy_threshold",
        lambda c: same(),
        lambda c: same() if not c.algo.entropy_threshold else missing("not exported (see entropy_threshold)"),
    ),
    Row(
        "temperature_step",
        "",
        "",
        "",
        "raising the temperature has no equivalent",
        _no_equivalent("raising the temperature has no equivalent", _raises_temperature),
        _no_equivalent("raising the temperature has no equivalent", _raises_temperature),
    ),
    Row(
        "max_temperature",
        "",
        "",
        "",
        "raising the temperature has no equivalent",
        _no_equivalent("raising the temperature has no equivalent", _raises_temperature),
        _no_equivalent("raising the temperature has no equivalent", _raises_temperature),
    ),
]
"""The mapping: one row per rlalgos setting (config field) and per fixed behaviour."""


def _check_rows_cover_config() -> None:
    """Every field of every config has a row (a new option must say how it exports)."""
    from ..config import ALGORITHMS

    names = {f.name for f in fields(TrainConfig)} | {
        f.name for spec in ALGORITHMS.values() for f in fields(spec.config)
    }
    rows = {r.setting for r in ROWS}
    missing_rows = sorted(names - rows)
    assert not missing_rows, f"rlalgos.tools.export.ROWS has no row for {missing_rows}"


_check_rows_cover_config()


def mapping_table() -> str:
    """The table as markdown (what README.md shows)."""
    out = [
        f"| rlalgos | TRL {CHECKED_AGAINST['trl']} (`GRPOConfig` unless said) | verl {CHECKED_AGAINST['verl']} (`main_ppo` override; `actor.`, `rollout.` = `actor_rollout_ref.actor.`, `.rollout.`) "
        "| conversion | no equivalent / differs |",
        "|---|---|---|---|---|",
    ]
    for r in ROWS:
        setting = r.setting if r.setting.startswith("(") else f"`{r.setting}`"
        out.append(
            f"| {setting} | {r.trl or '—'} | {r.verl or '—'} | {r.conversion} | {r.note} |".replace(
                "actor_rollout_ref.actor.", "actor."
            ).replace("actor_rollout_ref.rollout.", "rollout.")
        )
    return "\n".join(out)


# --------------------------------------------------------------------------- #
# Applying the table to one run
# --------------------------------------------------------------------------- #


@dataclass
class Mapping:
    """The result for one engine: the values, and the notes with the run's values."""

    values: dict
    notes: list[str]
    """Settings with no equivalent (``no equivalent:``) and settings mapped with a difference."""
    table: list[tuple[str, str, str]]
    """(rlalgos setting = value, engine fields = values, note) for the export's README."""


def _merge(into: dict, new: dict) -> None:
    for k, v in new.items():
        if k in into and isinstance(into[k], list) and isinstance(v, list):
            into[k] = into[k] + v
        else:
            into[k] = v


def apply_table(engine: str, c: Ctx) -> Mapping:
    """Run every row that applies to this run for ``engine`` (``trl`` or ``verl``)."""
    if engine == "trl" and isinstance(c.algo, PPOConfig):
        raise ValueError("ppo has no TRL trainer in TRL 1.16 (no critic/GAE trainer); export it with --to verl")
    if isinstance(c.algo, EIConfig):
        raise ValueError(NO_EI)
    values, notes, table = {}, [], []
    for row in ROWS:
        if not row.applies(c):
            continue
        m = row.mapped(engine, c)
        _merge(values, m.values)
        setting = f"`{row.setting}`{row.shown_value(c)}" if not row.setting.startswith("(") else row.setting
        if m.note:
            notes.append(f"{'no equivalent' if not m.ok else 'differs'}: {setting}: {m.note}")
        shown = ", ".join(f"{k}={v!r}" for k, v in m.values.items()) or ("—" if not m.ok else "(in the files)")
        table.append((setting, shown.replace("@HERE@", "$HERE"), m.note))
    return Mapping(values, notes, table)


def make_ctx(cfg: TrainConfig, algo: AlgoConfig, gpus: int = 1) -> Ctx:
    """The facts the conversions need: the task's budget and rewards, the model's tokenizer."""
    if gpus < 1:
        raise ValueError(f"--gpus must be >= 1, got {gpus}")
    task = get_task(cfg.task)
    if cfg.reward_model and cfg.rule_weight == 0:
        raise ValueError(
            "rule_weight 0 trains on the learned reward model alone, which the export does not carry; export a run with a rule reward"
        )
    rule = []
    for name, fn, weight in task.rewards.fns:
        if getattr(tasks_module, fn.__name__, None) is not fn:
            raise ValueError(
                f"reward {name!r} ({fn!r}) is not a function of rlalgos.tasks, so the export cannot carry it"
            )
        rule.append((fn.__name__, cfg.rule_weight if name == task.correct_key else weight))
    if cfg.model:
        path = Path(cfg.model)
        model_ref = str(path.resolve()) if path.exists() else cfg.model
        template = _has_chat_template(path) if path.is_dir() else True
    else:
        model_ref, template = "model", _has_chat_template(BASE_MODEL_DIR)
    rows = task.train + task.test
    return Ctx(
        cfg,
        algo,
        gpus,
        cfg.max_new_tokens or task.max_new_tokens,
        rule,
        max(len(r["prompt"]) for r in rows),
        len(task.train),
        model_ref,
        template,
        task,
    )


def _has_chat_template(model_dir: Path) -> bool:
    cfg_file = model_dir / "tokenizer_config.json"
    in_config = cfg_file.is_file() and "chat_template" in json.loads(cfg_file.read_text())
    return in_config or (model_dir / "chat_template.jinja").is_file() or (model_dir / "chat_template.json").is_file()


def trl_settings(cfg: TrainConfig, algo: AlgoConfig, gpus: int = 1) -> tuple[dict, dict, Mapping]:
    """``(script values, GRPOConfig/RLOOConfig kwargs, mapping)`` for a TRL run of this config."""
    m = apply_table("trl", make_ctx(cfg, algo, gpus))
    script = {k: v for k, v in m.values.items() if k in TRL_SCRIPT_KEYS}
    return script, {k: v for k, v in m.values.items() if k not in TRL_SCRIPT_KEYS}, m


def verl_overrides(cfg: TrainConfig, algo: AlgoConfig, gpus: int = 1) -> tuple[dict, Mapping]:
    """``({override key: value}, mapping)`` for ``verl.trainer.main_ppo``; paths start with ``@HERE@`` (the export folder)."""
    m = apply_table("verl", make_ctx(cfg, algo, gpus))
    return m.values, m


def hydra_value(v) -> str:
    """A value as a Hydra override writes it (strings quoted, so any text survives)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ",".join(hydra_value(x) for x in v) + "]"
    s = str(v)
    if "'" in s or "\\" in s:
        raise ValueError(f"cannot write {s!r} as a Hydra override (a quote or backslash in it)")
    return f"'{s}'"


def shell_word(override: str) -> str:
    """One override as a double-quoted shell word: only ``$HERE`` expands."""
    escaped = override.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`").replace("$", "\\$")
    return '"' + escaped.replace("@HERE@", "$HERE") + '"'


# --------------------------------------------------------------------------- #
# Engine defaults (for the "set away from the default" list), where installed
# --------------------------------------------------------------------------- #


def verl_config_dir() -> Path | None:
    """verl's packaged trainer config folder, found without importing verl (which needs ray)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        return None
    d = Path(list(spec.submodule_search_locations)[0]) / "trainer" / "config"
    return d if (d / "ppo_trainer.yaml").is_file() else None


def compose_verl(overrides: list[str]):
    """verl's ppo_trainer config composed by Hydra with ``overrides`` (offline; needs verl's package files and hydra-core)."""
    from hydra import compose, initialize_config_dir

    d = verl_config_dir()
    if d is None:
        raise FileNotFoundError(
            "verl is not installed (pip install --no-deps verl): its packaged trainer config is needed"
        )
    with initialize_config_dir(config_dir=str(d), version_base=None):
        return compose("ppo_trainer", overrides=overrides)


def _trl_defaults_differ(trainer: str, config: dict) -> list[str]:
    try:
        import trl
    except ImportError:
        return ["(trl is not installed here: its defaults were not compared)"]
    cls = getattr(trl, trainer.replace("Trainer", "Config"))
    defaults = {f.name: f.default for f in fields(cls)}
    return [
        f"`{k}`: {v!r} (TRL's default {defaults[k]!r})"
        for k, v in config.items()
        if k in defaults and defaults[k] != v and not callable(defaults[k])
    ]


def _verl_defaults_differ(values: dict) -> list[str]:
    try:
        from omegaconf import OmegaConf

        base = compose_verl([])
    except (ImportError, FileNotFoundError) as e:
        return [f"(verl's defaults were not compared: {e})"]
    out = []
    for key, v in values.items():
        if key.startswith("+"):
            continue
        default = OmegaConf.select(base, key, throw_on_missing=False)
        default = OmegaConf.to_container(default) if OmegaConf.is_config(default) else default
        if default != v and "@HERE@" not in str(v):
            out.append(f"`{key}`: {v!r} (verl's default {default!r})")
    return out


# --------------------------------------------------------------------------- #
# Writing the folder
# --------------------------------------------------------------------------- #

EXPORT_MARK = "rlalgos_export.json"
EXPORT_FILES = (
    EXPORT_MARK,
    "README.md",
    "run.sh",
    "trl_config.yaml",
    "train_trl.py",
    "rewards.py",
    "rlalgos_tasks.py",
    "data",
    "model",
)
"""Everything an export writes into its folder (and all that overwrite may remove)."""


def check_export_dir(out: Path, overwrite: bool) -> None:
    """A new or empty folder; with ``overwrite``, a folder holding an export, whose own files are replaced."""
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} is a file; pick another --export-dir")
    if not out.exists() or not any(out.iterdir()):
        return
    if not (out / EXPORT_MARK).is_file():
        raise FileExistsError(
            f"{out} is not empty and holds no export ({EXPORT_MARK}); rlalgos never deletes it: pick another --export-dir"
        )
    if not overwrite:
        raise FileExistsError(
            f"{out} already holds an export; replace it with --overwrite or pick another --export-dir"
        )
    from ..engine.runs import clear_run_dir  # imports torch: only here

    clear_run_dir(out, EXPORT_FILES)


def _write_jsonl(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _verl_rows(rows: list[dict], split: str, source: str) -> list[dict]:
    """verl's layout: chat-message prompt, data_source, reward_model.ground_truth, extra_info (every other column)."""
    return [
        {
            "data_source": source,
            "prompt": [{"role": "user", "content": r["prompt"]}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str(r["answer"])},
            "extra_info": {"split": split, "index": i, **{k: v for k, v in r.items() if k != "answer"}},
        }
        for i, r in enumerate(rows)
    ]


REWARDS_TEMPLATE = '''"""The exported run's rewards: rlalgos's reward functions (TRL-shaped:
fn(prompts, completions, **columns) -> list[float]) and verl's compute_score.
Written by `rlalgos export`; rlalgos_tasks.py is a copy of rlalgos/tasks.py."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from rlalgos_tasks import {imports}  # noqa: E402

RULE_WEIGHTS = {weights!r}
"""The task's reward functions and their weights (rlalgos's rule_weight applied)."""
MAX_COMPLETION_LENGTH = {max_len}
OVERLONG_BUFFER = {buffer}


def overlong_penalty(prompts, completions, completion_ids, **_):
    """DAPO's soft overlong penalty (rlalgos.core.overlong_penalty): 0 up to
    MAX_COMPLETION_LENGTH - OVERLONG_BUFFER tokens, then down to -1 at the limit."""
    start = MAX_COMPLETION_LENGTH - OVERLONG_BUFFER
    return [0.0 if len(ids) <= start else -1.0 if len(ids) > MAX_COMPLETION_LENGTH else (start - len(ids)) / OVERLONG_BUFFER for ids in completion_ids]


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """verl's custom reward function: the weighted rule reward of one answer
    (the overlong penalty is added by verl's dapo reward manager)."""
    columns = {{k: [v] for k, v in (extra_info or {{}}).items() if k not in ("prompt", "split", "index")}}
    columns["answer"] = [ground_truth]
    prompts = [(extra_info or {{}}).get("prompt", "")]
    return float(sum(w * globals()[name](prompts, [solution_str], **columns)[0] for name, w in RULE_WEIGHTS.items()))
'''


TRAIN_TRL = '''"""Run the exported rlalgos experiment under TRL: reads trl_config.yaml next to this file.

    accelerate launch --num_processes N train_trl.py     (see run.sh)
"""

import json
import os
from pathlib import Path

import yaml
from datasets import Dataset

import trl
import rewards

HERE = Path(__file__).resolve().parent


def rows(path):
    return [json.loads(line) for line in (HERE / path).read_text().splitlines() if line.strip()]


def main():
    spec = yaml.safe_load((HERE / "trl_config.yaml").read_text())
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world != spec["world_size"]:
        raise SystemExit(f"train_trl.py: exported for {spec['world_size']} process(es), launched with {world}; "
                         f"re-export with rlalgos export --gpus {world} (the batch sizes are per GPU)")
    config = dict(spec["config"], output_dir=str(HERE / spec["config"]["output_dir"]))
    args = getattr(trl, spec["trainer"].replace("Trainer", "Config"))(**config)
    model = spec["model"] if not (HERE / spec["model"]).is_dir() else str(HERE / spec["model"])
    trainer = getattr(trl, spec["trainer"])(
        model=model,
        reward_funcs=[getattr(rewards, name) for name in spec["reward_funcs"]],
        args=args,
        train_dataset=Dataset.from_list(rows(spec["train_file"])),
        eval_dataset=Dataset.from_list(rows(spec["eval_file"])) if spec.get("eval_file") else None,
    )
    trainer.train()
    trainer.save_model(args.output_dir)


if __name__ == "__main__":
    main()
'''


@dataclass
class Export:
    """What :func:`export` wrote."""

    engine: str
    out_dir: Path
    command: str
    notes: list[str]


def export(
    cfg: TrainConfig,
    algo: AlgoConfig,
    to: str,
    out_dir: str | Path,
    gpus: int = 1,
    overwrite: bool = False,
    source: str = "",
) -> Export:
    """Write a ready-to-run TRL or verl folder for this run's config; return what was written."""
    if to not in ENGINES:
        raise ValueError(f"unknown engine {to!r}; use trl or verl")
    module, package = ("yaml", "pyyaml") if to == "trl" else ("pyarrow", "pyarrow")
    if importlib.util.find_spec(module) is None:
        raise ValueError(f"exporting to {to} needs {package}: pip install {package} (or pip install -e '.[export]')")
    cfg.validate()
    algo.validate(cfg.group_size, cfg.prompts_per_step * cfg.group_size)
    ctx = make_ctx(cfg, algo, gpus)
    mapping = apply_table(to, ctx)  # every check and the whole mapping before anything is written
    out = Path(out_dir)
    check_export_dir(out, overwrite)
    out.mkdir(parents=True, exist_ok=True)
    # the mark first: a folder left half-written by a crash can still be replaced with --overwrite
    (out / EXPORT_MARK).write_text(
        json.dumps(
            {"engine": to, "source": source, "gpus": gpus, "train": asdict(cfg), "algo": asdict(algo)},
            indent=2,
            default=str,
        )
    )
    task = ctx.task
    test = task.test[: cfg.eval_prompts] if cfg.eval_prompts else task.test
    if ctx.model_ref == "model":
        shutil.copytree(BASE_MODEL_DIR, out / "model")
    shutil.copyfile(inspect.getsourcefile(tasks_module), out / "rlalgos_tasks.py")
    buffer = _overlong_buffer(ctx) if isinstance(algo, DAPOConfig) else 1
    (out / "rewards.py").write_text(
        REWARDS_TEMPLATE.format(
            imports=", ".join(dict(ctx.rule_rewards)),
            weights=dict(ctx.rule_rewards),
            max_len=ctx.max_new_tokens,
            buffer=buffer,
        )
    )
    if to == "trl":
        command, defaults = _write_trl(out, ctx, mapping, task.train, test)
    else:
        command, defaults = _write_verl(out, ctx, mapping, task.train, test, task.name)
    _write_readme(out, to, ctx, mapping, command, defaults, source)
    return Export(to, out, command, mapping.notes)


def _write_trl(out: Path, ctx: Ctx, mapping: Mapping, train: list[dict], test: list[dict]) -> tuple[str, list[str]]:
    import yaml  # transformers' dependency

    script = {k: v for k, v in mapping.values.items() if k in TRL_SCRIPT_KEYS}
    config = {k: v for k, v in mapping.values.items() if k not in TRL_SCRIPT_KEYS}
    _write_jsonl(train, out / "data" / "train.jsonl")
    if "eval_file" in script:
        _write_jsonl(test, out / "data" / "test.jsonl")
    (out / "trl_config.yaml").write_text(
        f"# Written by rlalgos export (checked against TRL {CHECKED_AGAINST['trl']}); train_trl.py reads it.\n"
        "# config: the GRPOConfig / RLOOConfig fields; the rest: what train_trl.py passes to the trainer.\n"
        + yaml.safe_dump({**script, "config": config}, sort_keys=False)
    )
    (out / "train_trl.py").write_text(TRAIN_TRL)
    command = f"accelerate launch --num_processes {ctx.gpus} train_trl.py"
    _write_run_sh(out, [command])
    return command, _trl_defaults_differ(script["trainer"], config)


def _write_verl(
    out: Path, ctx: Ctx, mapping: Mapping, train: list[dict], test: list[dict], task_name: str
) -> tuple[str, list[str]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = f"rlalgos/{task_name}"
    (out / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(_verl_rows(train, "train", source)), out / "data" / "train.parquet")
    pq.write_table(pa.Table.from_pylist(_verl_rows(test, "test", source)), out / "data" / "test.parquet")
    words = [shell_word(f"{k}={hydra_value(v)}") for k, v in mapping.values.items()]
    _write_run_sh(
        out, ["python -m verl.trainer.main_ppo \\"] + [f"    {w} \\" for w in words[:-1]] + [f"    {words[-1]}"]
    )
    return f"python -m verl.trainer.main_ppo with {len(words)} overrides", _verl_defaults_differ(mapping.values)


def _write_run_sh(out: Path, lines: list[str]) -> None:
    head = [
        "#!/usr/bin/env bash",
        "# Written by rlalgos export: runs the exported experiment from this folder.",
        "set -euo pipefail",
        'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        'cd "$HERE"',
    ]
    (out / "run.sh").write_text("\n".join(head + lines) + "\n")
    (out / "run.sh").chmod(0o755)


FILES = {
    "trl": "trl_config.yaml (the trainer, model, reward functions and every GRPOConfig/RLOOConfig field), train_trl.py (runs it), "
    "rewards.py + rlalgos_tasks.py (the reward functions), data/train.jsonl (+ data/test.jsonl: prompt and every column the rewards get)",
    "verl": "run.sh (the Hydra overrides), rewards.py + rlalgos_tasks.py (compute_score), data/train.parquet and data/test.parquet "
    "(prompt as chat messages, data_source, reward_model.ground_truth, extra_info)",
}
INSTALL = {
    "trl": "pip install trl accelerate datasets pyyaml",
    "verl": "pip install verl   # with vLLM and its other dependencies: see verl's install guide",
}


def _write_readme(
    out: Path, to: str, ctx: Ctx, mapping: Mapping, command: str, defaults: list[str], source: str
) -> None:
    engine = "TRL" if to == "trl" else "verl"
    lines = [
        f"# rlalgos {ctx.cfg.algo} exported to {engine}",
        "",
        f"Written by `rlalgos export --to {to}` from {source or 'rlalgos options'}; names checked against {engine} {CHECKED_AGAINST[to]}.",
        "",
        "```bash",
        INSTALL[to],
        "bash run.sh   # from any folder",
        "```",
        "",
        f"run.sh runs `{command}` on {ctx.gpus} GPU(s). Files: {FILES[to]}"
        + ("; model/: the shipped tiny model." if ctx.model_ref == "model" else "."),
        "",
        "## No equivalent, or mapped with a difference",
        "",
    ]
    lines += [f"- {n}" for n in mapping.notes] or ["- none"]
    lines += ["", f"## Set away from {engine}'s defaults", ""] + ([f"- {d}" for d in defaults] or ["- none"])
    lines += ["", "## Every setting", "", f"| rlalgos | {engine} | note |", "|---|---|---|"]
    lines += [f"| {s} | {v.replace('|', '/')} | {n} |" for s, v, n in mapping.table]
    (out / "README.md").write_text("\n".join(lines) + "\n")
