"""The shared half of the export's mapping table: one :class:`Field` per rlalgos setting (a config
field, or a ``fixed`` behaviour rlalgos always has), with the conversion and the "no equivalent /
differs" text every engine's column shares. Each engine module names every field in its own table
(:attr:`rlalgos.tools.export.base.Engine.names`); :func:`apply_table` runs one engine's column for
one run. Imports neither torch nor transformers, nor any engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...config import EIConfig, ReinforceConfig
from ...losses import POLICY_LOSSES
from .base import Ctx, Engine, Mapped, Mapping, missing

NO_EI = (
    "ei is not exported: TRL 1.16.0 and verl 0.9.1 have no expert iteration (each subtracts a baseline, so wrong answers are "
    "pushed down); the nearest is rloo, or TRL's SFTTrainer on the kept answers"
)
"""Why an ``ei`` run has no export (one line: the export's error and the table's note)."""


@dataclass(frozen=True)
class Field:
    """One line of the mapping table: an rlalgos setting and what the engines' columns share."""

    name: str
    """The config field, or the key of a fixed behaviour (what each engine's ``names`` is keyed by)."""
    conversion: str
    note: str
    """What the engines do instead or differently (each export's notes say it with the run's values)."""
    fixed: str = ""
    """For a behaviour rlalgos always has (no config field): what it is; '' = a config field."""
    only: type = object
    """The algorithm config class a fixed behaviour applies to."""

    @property
    def setting(self) -> str:
        """How the table shows it: the field's name, or ``(fixed) ...``."""
        return f"(fixed) {self.fixed}" if self.fixed else self.name

    def applies(self, c: Ctx) -> bool:
        return (bool(self.fixed) or c.has(self.name)) and isinstance(c.algo, self.only)

    def shown(self, c: Ctx) -> str:
        """The setting with the run's value, as the export's notes and README show it."""
        return self.setting if self.fixed else f"`{self.name}` = {c.value(self.name)!r}"


def _or(names: list[str]) -> str:
    return " or ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " or " + names[-1]


def _loss_mode_field() -> Field:
    """The loss_mode field, its text made from the registered losses."""
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
    return Field(
        "loss_mode",
        f"clip -> verl vanilla (gspo: gspo); {', '.join(others)}: verl's names; {', '.join(trl)}: TRL loss_type of the same name",
        note,
    )


def _loss_param_fields() -> list[Field]:
    """A field per option of a registered loss (the engines set it only when the run uses that loss)."""
    return [
        Field(name, f"same value (with {loss.name})", "" if trl else f"TRL has no {loss.title or loss.name}")
        for loss in POLICY_LOSSES.values()
        for name, (trl, _) in loss.params.items()
    ]


FIELDS: list[Field] = [
    # ---- the run ----
    Field(
        "algo",
        "GRPO family -> grpo (gspo: sequence level; its loss_mode: see loss_mode); reinforce, rloo -> rloo; ppo -> gae",
        "TRL 1.16 has no PPO trainer: ppo exports to verl only; neither engine has expert iteration: ei is not exported",
    ),
    Field(
        "model",
        "empty = the shipped tiny model, copied into the export as model/",
        "verl applies a chat template to every prompt; one that passes the prompt through is set for a tokenizer without one",
    ),
    Field(
        "task",
        "the train split; rewards.py holds the task's reward functions (TRL-shaped) and verl's compute_score",
        "",
    ),
    Field("steps", "TRL counts optimizer steps: steps x minibatches x epochs; verl counts rollouts", ""),
    Field(
        "prompts_per_step",
        "TRL: per_device_train_batch_size x GPUs x steps_per_generation = prompts_per_step x group_size sequences per generation; verl counts prompts",
        "",
    ),
    Field("group_size", "same number", ""),
    Field("max_new_tokens", "0 = the task's default (48 for addition), resolved", ""),
    Field("temperature", "same value", ""),
    Field("top_p", "same value (1.0 = the full distribution); no top-k in rlalgos", ""),
    Field(
        "chat_template",
        "",
        "the export writes plain-text prompts; TRL templates only conversational (message-list) prompts, verl templates every prompt (see `model`)",
    ),
    Field(
        "lora_rank",
        "same value (0 = off)",
        "train_trl.py trains every weight (TRL takes a peft LoraConfig as the trainer's peft_config)",
    ),
    Field("lora_alpha", "0 -> 2 x lora_rank", "TRL: see lora_rank"),
    Field("lora_dropout", "", "verl's LoRA has no dropout; TRL: see lora_rank"),
    Field("lora_targets", "all-linear, or the list of module names", "TRL: see lora_rank"),
    Field(
        "dtype",
        "auto = what the engines do: fp32 on CPU, bf16 mixed precision (fp32 master weights) on GPUs",
        "the engines have no bf16-weights mode",
    ),
    Field("score_batch_size", "", "TRL scores with its training micro-batch (per_device_train_batch_size)"),
    Field(
        "rollout_dtype",
        "bfloat16 / float16 -> the same name; float32 = no mismatch",
        "TRL has no rollout dtype (the export samples with generate); verl's vLLM samples in bfloat16 by default",
    ),
    Field(
        "rollout_sync_every",
        "1 = the engines' behaviour",
        "a stale sampler (k > 1) is the workbook's deliberate, larger mismatch; the exports sync every step",
    ),
    Field(
        "rollout_correction",
        "TRL: the same mode names (none -> correction False); verl: token_* -> token, sequence_* -> sequence (masking: see rollout_correction_threshold)",
        "TRL corrects only with use_vllm=True; RLOOTrainer has no correction",
    ),
    Field(
        "rollout_correction_threshold",
        'same value C; verl\'s masking is its IcePop bounds "1e-09_C" (no lower bound)',
        "TRL's default C is 3.0, verl's 2.0 (rlalgos's)",
    ),
    Field(
        "logits_chunk",
        "",
        "memory, not maths: TRL and verl bound logits memory their own way (verl's fused kernels; TRL's per-device batch)",
    ),
    Field(
        "sampler",
        "the engine's own generation; the same distribution",
        "TRL samples with transformers' generate (use_vllm=True for speed on GPUs); verl with vLLM",
    ),
    Field("eval_every", "0 = none during training", "the engines log reward means, not greedy accuracy or pass@k"),
    Field("eval_prompts", "the first eval_prompts test rows (0 = all)", ""),
    Field("eval_samples", "samples per test prompt", ""),
    Field(
        "reward_model",
        "not exported",
        "the learned reward model is not exported: the exported reward is the rule reward alone",
    ),
    Field("rm_weight", "not exported", "the learned reward model is not exported"),
    Field("rule_weight", "the rule reward's weight; other task rewards keep theirs (format: 0, logged only)", ""),
    Field("save_every", "0 = only at the end", ""),
    Field(
        "log_kl",
        "",
        "the KL to the reference is logged only when a KL term is trained (TRL: beta > 0; verl: use_kl_loss or use_kl_in_reward)",
    ),
    Field(
        "kl_sample_rows",
        "",
        "a logged-only KL measured on a subsample of answers: the engines log no KL without a KL term",
    ),
    Field(
        "entropy_probe",
        "",
        "the entropy mechanism (covariance, entropy before/after each update) is measured by rlalgos only; verl logs `actor/entropy`, TRL `entropy`",
    ),
    Field("seed", "same seed, different random streams", ""),
    Field("device", "cpu: use_cpu, fp32; else bf16 mixed precision on --gpus GPUs", ""),
    Field("out_dir", "output/ inside the export folder", ""),
    Field("overwrite", "", "the engines write checkpoints into output/ without rlalgos's run-folder rule"),
    Field("progress", "disable_tqdm = not progress", "verl prints a progress line per step"),
    Field("on_nonfinite", "", "no stop on a NaN/inf loss: the engines go on; watch the logged loss and grad_norm"),
    Field(
        "stop_on_collapse",
        "",
        "no stop on a collapsed policy: the engines go on; `rlalgos diagnose OUTPUT_DIR` reads their logs afterwards",
    ),
    Field("logging", "", "", fixed="a metrics row every step"),
    Field("report_to", "the same names (TRL also takes all / none); verl: console plus them", ""),
    # ---- every algorithm ----
    Field(
        "lr",
        "same value",
        "kept from the run; real-scale runs use 1e-6 (TRL's and verl's default) for billion-parameter models, rlalgos's 1e-4 suits its 0.87M-parameter model",
    ),
    Field("schedule", "TRL's default schedule is linear decay", "", fixed="AdamW at a constant learning rate"),
    Field("weight_decay", "same value (verl's default is 0.01)", ""),
    Field("max_grad_norm", "same value", ""),
    Field("epochs", "passes over each rollout", ""),
    Field(
        "minibatches",
        "a COUNT in rlalgos; TRL: optimizer steps per generation (x accumulation); verl: a SIZE in prompts = prompts_per_step / minibatches",
        "",
    ),
    Field("micro_batch_size", "0 = the whole minibatch share of a GPU in one pass", ""),
    Field(
        "length_buckets",
        "",
        "no length bucketing (same gradient): TRL pads each micro-batch to its longest answer; verl can drop padding (`model.use_remove_padding`)",
    ),
    Field(
        "loss_agg",
        "verl uses rlalgos's strings; Dr. GRPO's L_max = max_new_tokens in both",
        "RLOOTrainer has one fixed aggregation",
    ),
    Field(
        "kl_coef",
        "same value, in the loss or in the reward as rlalgos puts it",
        "TRL's default beta is 0 (grpo's is 0.04); verl's kl_loss_coef 0.001",
    ),
    Field(
        "kl_estimator",
        "verl takes rlalgos's k1 / k2 / k3, and k1+ / k3+ in the loss (GRPO family)",
        "TRL has one fixed estimator per trainer (nearest to k3+: `use_bias_correction_kl`)",
    ),
    Field("baseline", "leave_one_out", "none and batch_mean have no equivalent: both engines use leave-one-out"),
    Field("keep", "", NO_EI),
    Field("keep_threshold", "", NO_EI),
    Field(
        "reinforce_clip",
        "",
        "both engines clip the ratio: inert at epochs = minibatches = 1 (the ratio is exactly 1), active otherwise",
        fixed="REINFORCE does not clip the ratio",
        only=ReinforceConfig,
    ),
    Field("clip_low", "same value", "TRL's cispo has no lower bound on the weight"),
    Field("clip_high", "same value; cispo: TRL's epsilon_high = 1 + clip_high (it bounds the ratio itself)", ""),
    Field("clip_c", "0 (off) -> TRL delta None, verl 1e+09 (verl always dual-clips, default 3)", ""),
    _loss_mode_field(),
    *_loss_param_fields(),
    Field("adv_scale", "", ""),
    Field("adv_eps", "", "fixed in the engines: TRL divides by std + 1e-4, verl by std + 1e-6 (rlalgos's default)"),
    # ---- PPO ----
    Field("critic_lr", "same value", ""),
    Field("value_clip", "same value", ""),
    Field(
        "vf_coef",
        "",
        "verl's critic has its own optimizer, so its loss has no weight; rlalgos's critic is its own copy too, "
        "so vf_coef only rescales its gradient (Adam absorbs that, except in the shared gradient-norm clip)",
    ),
    Field("gamma", "same value", ""),
    Field("lam", "same value", ""),
    Field("whiten", "", "verl's GAE always whitens the advantages over the batch"),
    # ---- DAPO ----
    Field("kl_stages", "", "no KL schedule: the constant kl_coef is used"),
    Field(
        "dynamic_sampling",
        "resample -> enable (verl refills the batch)",
        "TRL has none; verl has no 'filter' without refill and no 'downweight'",
    ),
    Field(
        "max_resample_rounds",
        "",
        "TRL: no dynamic sampling; verl's V1 trainer refills until the batch is full (it ignores filter_groups.max_num_gen_batches)",
    ),
    Field("degenerate_weight", "", "no down-weighting of all-equal groups"),
    Field("overlong_penalty", "DAPO's soft penalty, the same formula", ""),
    Field("overlong_buffer", "L_c in tokens (at most max_new_tokens)", ""),
    Field("overlong_filter", "same switch", "verl has no switch that masks truncated answers out of the loss"),
    Field(
        "entropy_threshold",
        "the monitor fires at or below the threshold",
        "verl has only a constant bonus (actor.entropy_coeff): the monitor is not exported",
    ),
    Field("entropy_action", "", "raising the temperature has no equivalent"),
    Field("entropy_coef", "the bonus weight while the monitor fires", "verl: see entropy_threshold"),
    Field("temperature_step", "", "raising the temperature has no equivalent"),
    Field("max_temperature", "", "raising the temperature has no equivalent"),
]
"""The shared table: one field per rlalgos setting (config field) and per fixed behaviour, in the table's order."""


def _merge(into: dict, new: dict) -> None:
    for k, v in new.items():
        if k in into and isinstance(into[k], list) and isinstance(v, list):
            into[k] = into[k] + v
        else:
            into[k] = v


def apply_table(engine: Engine, c: Ctx) -> Mapping:
    """Run ``engine``'s conversion of every field that applies to this run."""
    engine.check(c)
    if isinstance(c.algo, EIConfig):
        raise ValueError(NO_EI)
    values, notes, table = {}, [], []
    for f in FIELDS:
        if not f.applies(c):
            continue
        name = engine.names[f.name]
        m: Mapped = name.convert(c) if name.convert else missing(f.note or f"{engine.title} has no equivalent")
        _merge(values, m.values)
        setting = f.shown(c)
        if m.note:
            notes.append(f"{'no equivalent' if not m.ok else 'differs'}: {setting}: {m.note}")
        shown = ", ".join(f"{k}={v!r}" for k, v in m.values.items()) or ("—" if not m.ok else "(in the files)")
        table.append((setting, shown.replace("@HERE@", "$HERE"), m.note))
    return Mapping(values, notes, table)
