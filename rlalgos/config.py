"""Every knob of rlalgos, with its docstring and its check.

The dataclasses here are the command line (``rlalgos train grpo --help`` shows
the first clause of each field's docstring, ``rlalgos algos grpo`` the whole of it)
and the Python API (``train(TrainConfig(...), make_config("grpo", lr=3e-4))``).
A docstring says what the knob is and why its default; the longer story of a
knob is in docs/knobs.md. This module imports neither torch nor transformers,
so the CLI answers ``--help`` and bad values at once.

Read the algorithm configs in order: each adds only what its algorithm adds.

    AlgoConfig -> ReinforceConfig                       (a baseline, KL in the reward)
    AlgoConfig -> ClippedConfig -> PPOConfig            (ratio clip; critic, GAE, KL per token in the reward)
                                -> GRPOConfig -> DAPOConfig   (group advantage, KL in the loss; the DAPO switches)
                                              -> GSPOConfig   (one importance ratio per answer)
"""

from __future__ import annotations

import difflib
import importlib.util
from dataclasses import dataclass, fields, replace

from .losses import LOSS_AGG_MODES, POLICY_LOSSES
from .losses.registry import require
from .tasks import DATA_DIR

BASE_MODEL_DIR = DATA_DIR / "base_model"
"""Where the shipped SFT base model lives (``rlalgos sft`` writes it)."""
REWARD_MODEL_DIR = DATA_DIR / "reward_model"
"""Where the shipped reward model lives (``rlalgos rm`` writes it)."""
TRAP_MODEL_DIR = DATA_DIR / "trap_model"
"""Where the exploration regime's base model lives (``rlalgos trap-model`` writes it)."""
SHIPPED_PARAMETERS = "0.87M"
"""The shipped base model's size (865,920 parameters), as the messages write it."""

BASELINES = ("none", "batch_mean", "leave_one_out")
EI_KEEP = ("correct", "best")
"""Which answers expert iteration (``ei``) trains on: every one whose reward reaches ``keep_threshold``, or only its group's best."""
KL_ESTIMATORS = ("k1", "k2", "k3")
GRPO_KL_ESTIMATORS = KL_ESTIMATORS + ("k1+", "k3+")
"""What a KL *in the loss* may use: also verl's straight-through k1+ / k3+ (:func:`rlalgos.core.kl_estimate`)."""
ADV_SCALES = ("std", "none")
DYNAMIC_SAMPLING = ("resample", "filter", "downweight", "off")
ENTROPY_ACTIONS = ("bonus", "temperature")
LOSS_MODES = tuple(POLICY_LOSSES)
"""The policy losses a clipped algorithm can use (``loss_mode``): the modules of :mod:`rlalgos.losses`."""
DTYPES = ("auto", "float32", "bfloat16", "bfloat16-weights", "float16-weights")
ROLLOUT_DTYPES = ("float32", "bfloat16", "float16")
"""What ``rollout_dtype`` may name (float32: no copy, the policy samples)."""
ROLLOUT_CORRECTIONS = ("none", "token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
"""The sampler-trainer mismatch corrections (``rollout_correction``): :func:`rlalgos.core.rollout_correction_weights`."""
SAMPLERS = ("compact", "hf")
ON_NONFINITE = ("stop", "skip")
CHOICES = {
    "dtype": DTYPES,
    "rollout_dtype": ROLLOUT_DTYPES,
    "rollout_correction": ROLLOUT_CORRECTIONS,
    "sampler": SAMPLERS,
    "on_nonfinite": ON_NONFINITE,
    "loss_agg": LOSS_AGG_MODES,
    "baseline": BASELINES,
    "keep": EI_KEEP,
    "loss_mode": LOSS_MODES,
    "adv_scale": ADV_SCALES,
    "dynamic_sampling": DYNAMIC_SAMPLING,
    "entropy_action": ENTROPY_ACTIONS,
}
"""Options whose values come from a fixed set: validate() checks them, --help lists them (kl_estimator's set
depends on the algorithm: KL_ESTIMATORS in the reward, GRPO_KL_ESTIMATORS in the loss)."""
LORA_INSTALL = "pip install rlalgos[lora]"
"""What a missing peft (the ``lora`` extra) tells the user to run."""


def one_of(cfg, name: str, choices=None) -> None:
    """A one-line ``ValueError`` unless ``cfg``'s option ``name`` is one of ``choices`` (default: ``CHOICES[name]``)."""
    value, choices = getattr(cfg, name), choices or CHOICES[name]
    require(value in choices, f"unknown {name} {value!r}; use one of {', '.join(choices)}")


# --------------------------------------------------------------------------- #
# The run
# --------------------------------------------------------------------------- #


@dataclass
class TrainConfig:
    """Everything about a run that is not the algorithm's own hyperparameters."""

    algo: str = "reinforce"
    """Algorithm name (see ``rlalgos algos``); on the command line it is the word after ``train``."""
    model: str = ""
    """Policy to start from: a local folder or hub name; empty = the shipped base model in data/base_model."""
    dtype: str = "auto"
    """Numeric precision of the policy: ``auto`` (``bfloat16`` on CUDA, ``float32`` on CPU), ``float32``, ``bfloat16`` (float32 weights, every forward pass under bfloat16 autocast: TRL's and verl's scheme) or ``bfloat16-weights`` / ``float16-weights`` (the weights themselves in that dtype, for memory-starved runs). What each mode rounds away: docs/knobs.md#dtype."""
    lora_rank: int = 0
    """LoRA rank r (``pip install rlalgos[lora]``): train rank-r adapters on lora_targets, every other weight frozen; 0 = off (full fine-tuning). Not with ppo; the reference and the checkpoint with LoRA: docs/knobs.md#lora_rank."""
    lora_alpha: float = 0.0
    """LoRA scale: the adapters' output is multiplied by lora_alpha / lora_rank; 0 = 2 x lora_rank (a scale of 2, as TRL's r=16, alpha=32)."""
    lora_dropout: float = 0.0
    """Dropout on the adapters' input in the update (peft's lora_dropout); 0 keeps the first update pass equal to the sampling policy (ratio 1)."""
    lora_targets: str = "all-linear"
    """Layers that get adapters: ``all-linear`` (every linear projection of attention and MLP, not the LM head) or comma-separated module names such as ``q_proj,k_proj,v_proj,o_proj``."""
    chat_template: bool = False
    """Wrap each task prompt in the tokenizer's chat template (one user turn, then the assistant's turn), for instruct models; training and evaluation alike."""
    task: str = "addition"
    """Task: ``addition``, ``addition:terms=2-6``, ``gsm8k:TRAIN.jsonl[,TEST.jsonl]``, ``gsm8k:DATASET`` or ``MODULE:FUNCTION[:key=value]`` (the Task a function of yours returns). Each form: docs/knobs.md#task."""
    steps: int = 60
    """Training steps (one rollout and one update each)."""
    prompts_per_step: int = 32
    """Distinct prompts sampled per step."""
    group_size: int = 8
    """Completions per prompt (G); the batch is prompts_per_step x group_size sequences."""
    max_new_tokens: int = 0
    """Longest completion in tokens; 0 = the task's default (48 for addition)."""
    temperature: float = 1.0
    """Sampling temperature for training rollouts and the sampled eval (the one place it is set)."""
    top_p: float = 1.0
    """Nucleus sampling for training rollouts and the sampled eval; 1.0 = off. Below 1 the samples no longer come from the policy whose log-probs the ratio and the KL use (docs/knobs.md#top_p)."""
    rollout_dtype: str = "float32"
    """Precision of a copy of the policy that samples the training rollouts while the trainer scores them in ``dtype`` (the mismatch of engines that sample in bf16); ``float32`` = no copy, the policy samples. What is kept and logged then: docs/knobs.md#rollout_dtype."""
    rollout_sync_every: int = 1
    """Steps between weight syncs of the sampling copy; 1 = before every rollout. k > 1 samples from a policy up to k - 1 updates old, an asynchronous engine's staleness (docs/knobs.md#rollout_sync_every)."""
    rollout_correction: str = "none"
    """Weight each token's policy loss by ``r = pi_trainer / pi_sampler`` to correct the rollout-trainer mismatch: ``token_truncate`` (TIS), ``token_mask``, ``sequence_truncate`` or ``sequence_mask``; ``none`` = off. The formulas and the engines' names: docs/knobs.md#rollout_correction."""
    rollout_correction_threshold: float = 2.0
    """C of ``rollout_correction``: the cap (truncate) or the cut-off (mask) on the ratio, >= 1. 2.0 is verl's default (TRL's is 3.0)."""
    logits_chunk: int = -1
    """Tokens per LM-head chunk in every log-prob pass, so the full-vocabulary logits take memory per chunk, not per batch; 0 = the whole batch at once. -1 = auto, 2**25 logits per chunk (the shipped model's batches fit in one); sizes: docs/knobs.md#logits_chunk."""
    sampler: str = "compact"
    """``compact`` (rlalgos' sampling loop, drops finished answers from the batch) or ``hf`` (transformers' generate)."""
    score_batch_size: int = 512
    """Sequences per no-grad scoring pass (the sampling policy's and the reference's log-probs, eval entropy); lower it when a big model's logits do not fit."""
    eval_every: int = 20
    """Evaluate on the test split every this many steps (and before the first and after the last)."""
    eval_prompts: int = 200
    """Test prompts per evaluation (0 = the whole test split)."""
    eval_samples: int = 4
    """Sampled completions per test prompt: eval_accuracy is their mean (pass@1), and pass@k uses all of them."""
    reward_model: str = ""
    """Folder of a learned reward model (``rlalgos rm``) to add as the reward ``rm``; empty = rule rewards only."""
    rm_weight: float = 1.0
    """Weight of the reward model's score in the total reward."""
    rule_weight: float = 1.0
    """Weight of the rule (correctness) reward; 0 = train on the reward model alone (accuracy is still measured by the rule)."""
    save_every: int = 10
    """Write a checkpoint every this many steps and at the end, so a killed run can be resumed (0 = only at the end)."""
    log_kl: bool = True
    """Measure KL to the reference every step even when the algorithm does not train on it (one extra no-grad forward)."""
    kl_sample_rows: int = 0
    """When the KL is only logged (the algorithm's kl_coef is 0): measure it on this many evenly spread answers per step, so ``kl`` is an estimate with standard error ``kl_stderr``; 0 = every answer. A KL the algorithm trains on is always exact."""
    entropy_probe: bool = False
    """Measure the entropy mechanism of every update (Cui et al. 2025): ``entropy_cov`` and the exact ``entropy_before`` / ``entropy_after`` / ``entropy_change`` on the rollout's own states. Off by default: it costs one or two extra no-grad passes (docs/metrics.md)."""
    seed: int = 0
    """Seeds prompt order, sampling and initialisation; same seed, same numbers on CPU."""
    device: str = "auto"
    """``auto`` (CUDA if present, else CPU), ``cpu``, ``cuda`` or ``cuda:N``."""
    out_dir: str = "runs/run"
    """Run folder: metrics.jsonl, samples.jsonl, config.json, checkpoint/."""
    overwrite: bool = False
    """Replace the run already in out_dir (only a run folder, only its own files, only once the new run has started)."""
    progress: bool = True
    """Show a tqdm progress bar."""
    on_nonfinite: str = "stop"
    """A NaN/inf loss or gradient: ``stop`` (write the row, keep the last good checkpoint, raise) or ``skip`` (drop that update, go on)."""
    stop_on_collapse: bool = True
    """Stop a run whose policy has collapsed (reward near 0 with KL far above a healthy run's, several steps in a row), keeping the last good checkpoint; the CLI exits with status 2. Off: train on, the progress bar still names it (docs/knobs.md#stop_on_collapse)."""
    report_to: str = "none"
    """Experiment trackers that also get every metrics row (TRL's flag): ``none``, ``all`` (every one installed) or a comma-separated list of ``tensorboard``, ``wandb``, ``trackio``. metrics.jsonl stays the record; where each writes: docs/knobs.md#report_to."""

    def validate(self) -> None:
        """Raise ``ValueError`` with one line saying what to change."""
        algorithm_config(self.algo)
        for name in ("steps", "prompts_per_step", "group_size", "eval_samples"):
            require(getattr(self, name) >= 1, f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("eval_every", "eval_prompts", "save_every", "max_new_tokens", "kl_sample_rows"):
            require(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")
        require(
            self.logits_chunk >= -1,
            f"logits_chunk must be -1 (auto), 0 (off) or a number of tokens, got {self.logits_chunk}",
        )
        require(self.temperature > 0, f"temperature must be > 0, got {self.temperature}")
        require(0 < self.top_p <= 1, f"top_p must be in (0, 1] (1 = off), got {self.top_p}")
        require(self.score_batch_size >= 1, f"score_batch_size must be >= 1, got {self.score_batch_size}")
        for name in ("dtype", "rollout_dtype", "rollout_correction", "sampler", "on_nonfinite"):
            one_of(self, name)
        require(
            self.rollout_sync_every >= 1,
            f"rollout_sync_every must be >= 1 (1 = sync the sampler before every step), got {self.rollout_sync_every}",
        )
        require(
            self.rollout_correction_threshold >= 1,
            f"rollout_correction_threshold must be >= 1 (a bound on the ratio trainer / sampler; verl uses 2, TRL 3), got {self.rollout_correction_threshold}",
        )
        require(
            self.rm_weight >= 0 and self.rule_weight >= 0,
            f"rm_weight and rule_weight must be >= 0, got {self.rm_weight} and {self.rule_weight}",
        )
        require(
            self.rule_weight > 0 or bool(self.reward_model),
            "rule_weight 0 leaves nothing to train on; give --reward-model PATH or a rule_weight > 0",
        )
        require(
            self.lora_rank >= 0 and self.lora_alpha >= 0,
            f"lora_rank and lora_alpha must be >= 0 (lora_rank 0 = off), got {self.lora_rank} and {self.lora_alpha}",
        )
        require(
            0 <= self.lora_dropout < 1 and bool(self.lora_targets.strip(", ")),
            f"lora_dropout must be in [0, 1) and lora_targets not empty, got {self.lora_dropout} and {self.lora_targets!r}",
        )
        if self.lora_rank:
            require(
                importlib.util.find_spec("peft") is not None,
                f"lora_rank {self.lora_rank} needs peft, which is not installed: {LORA_INSTALL}",
            )
            require(
                not issubclass(algorithm_config(self.algo).config, PPOConfig),
                f"lora_rank with {self.algo}: a LoRA critic is not supported (PPO's critic is a full copy of the trunk); use lora_rank 0, or a critic-free algorithm (grpo, dapo, reinforce, ...)",
            )

    @property
    def records_rollout_logprobs(self) -> bool:
        """Whether the sampler keeps its own log-probs (``rollout_logprobs``): it samples from
        another distribution than the trainer scores (``rollout_dtype``, ``rollout_sync_every``, ``top_p``), or a
        ``rollout_correction`` needs them."""
        return self.uses_sampling_copy or self.top_p < 1 or self.rollout_correction != "none"

    @property
    def uses_sampling_copy(self) -> bool:
        """Whether a copy of the policy samples (``rollout_dtype`` below float32, or a stale sampler)."""
        return self.rollout_dtype != "float32" or self.rollout_sync_every > 1


# --------------------------------------------------------------------------- #
# The algorithms, each a small diff of the previous one
# --------------------------------------------------------------------------- #


@dataclass
class AlgoConfig:
    """Optimisation settings every algorithm has."""

    lr: float = 1e-4
    """AdamW learning rate of the policy."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Clip the global gradient norm to this (the logged ``grad_norm`` is before clipping)."""
    epochs: int = 1
    """Passes over each rollout. 1 = strictly on-policy: the ratio is exactly 1."""
    minibatches: int = 1
    """Optimizer steps per epoch; the rollout is shuffled and split into this many parts."""
    micro_batch_size: int = 0
    """At most this many sequences per forward/backward (gradient accumulation); 0 = no limit."""
    length_buckets: int = 4
    """Forward/backward passes per minibatch, its rows sorted by length and each pass padded only to its own longest row: the same gradient, less padding. 1 = one pass."""
    loss_agg: str = "token-mean"
    """How the per-token loss becomes a scalar: token-mean, seq-mean-token-mean or seq-mean-token-sum-norm."""
    kl_coef: float = 0.0
    """Weight of the KL-to-reference term (what it is added to depends on the algorithm)."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        """Raise ``ValueError`` with one line saying what to change."""
        require(self.lr > 0, f"lr must be > 0, got {self.lr}")
        require(self.weight_decay >= 0 and self.max_grad_norm > 0, "weight_decay must be >= 0 and max_grad_norm > 0")
        require(
            self.epochs >= 1 and self.minibatches >= 1,
            f"epochs and minibatches must be >= 1, got {self.epochs} and {self.minibatches}",
        )
        require(
            num_sequences % self.minibatches == 0,
            f"{num_sequences} sequences per step do not split into {self.minibatches} minibatches; pick minibatches dividing prompts_per_step x group_size",
        )
        require(self.micro_batch_size >= 0, "micro_batch_size must be >= 0 (0 = no limit)")
        require(self.length_buckets >= 1, f"length_buckets must be >= 1, got {self.length_buckets}")
        one_of(self, "loss_agg")
        require(self.kl_coef >= 0, f"kl_coef must be >= 0, got {self.kl_coef}")


@dataclass
class ReinforceConfig(AlgoConfig):
    """REINFORCE: a baseline, and an optional KL penalty taken off the answer's reward."""

    baseline: str = "leave_one_out"
    """``none`` (r), ``batch_mean`` (r - mean of the batch) or ``leave_one_out`` (r - mean of the other answers to the same prompt: RLOO)."""
    kl_coef: float = 0.0
    """beta in ``r - beta * sum_t KL_t``: a per-answer KL penalty to the reference, taken off the reward."""
    kl_estimator: str = "k1"
    """Which per-token KL estimate the penalty sums: k1 (log-ratio, classic RLHF), k2 or k3."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        one_of(self, "baseline")
        require(
            self.baseline != "leave_one_out" or group_size >= 2,
            "baseline 'leave_one_out' needs group_size >= 2; raise group_size or use baseline 'batch_mean'",
        )
        one_of(self, "kl_estimator", KL_ESTIMATORS)


@dataclass
class EIConfig(ReinforceConfig):
    """Expert iteration: REINFORCE with a 0/1 weight on the kept answers, no baseline, no negatives."""

    keep: str = "correct"
    """Which answers are trained on: ``correct`` (every one whose reward reaches keep_threshold: STaR, RAFT++) or ``best`` (only its group's best, if it reaches keep_threshold: RAFT's best-of-G)."""
    keep_threshold: float = 1.0
    """The reward an answer needs to be kept (1.0: a right answer on the 0/1 task)."""
    baseline: str = "none"
    """ei has no baseline (``none`` only): a kept answer weighs 1, the rest are out of the loss."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        one_of(self, "keep")
        require(
            self.baseline == "none",
            f"ei has no baseline (it trains on the kept answers alone), got baseline {self.baseline}; use rloo or reinforce for a baseline",
        )


@dataclass
class ClippedConfig(AlgoConfig):
    """What PPO adds to the policy update, and GRPO keeps: the clipped importance ratio."""

    clip_low: float = 0.2
    """The ratio is clipped at 1 - clip_low where A < 0."""
    clip_high: float = 0.2
    """The ratio is clipped at 1 + clip_high where A > 0 (symmetric in PPO and vanilla GRPO)."""
    clip_c: float = 0.0
    """Dual clip (Ye et al. 2020; verl's clip_ratio_c, 3 there): where A < 0 a token's loss is at most -A * clip_c however far its ratio rises; 0 = off. It acts only on ratios above clip_c, so only with minibatches or epochs > 1."""
    loss_mode: str = "clip"
    """The per-token policy loss (verl's policy_loss.loss_mode), one module of rlalgos/losses each: ``clip`` is PPO's clipped ratio, the others replace it (docs/algorithms.md). Only clip takes clip_c."""
    clip_cov_ratio: float = 2e-4
    """clip_cov: share of the valid tokens (at least one per forward pass) whose gradient is cut, drawn from those with covariance in (clip_cov_lb, clip_cov_ub)."""
    clip_cov_lb: float = 1.0
    """clip_cov: a token is a candidate only if its covariance (A - mean A) * (log pi - mean log pi) is above this."""
    clip_cov_ub: float = 5.0
    """clip_cov: ... and below this (verl's clip_cov_ub)."""
    kl_cov_ratio: float = 2e-4
    """kl_cov: share of the valid tokens (at least one per forward pass), those with the largest covariance, that get the |log ratio| penalty."""
    kl_cov_coef: float = 0.1
    """kl_cov: weight of the |log ratio| penalty (verl's policy_loss.ppo_kl_coef)."""
    sapo_tau_pos: float = 1.0
    """sapo: gate temperature where A > 0 (verl's tau_pos, TRL's sapo_temperature_pos); larger = the gradient fades faster as the ratio leaves 1."""
    sapo_tau_neg: float = 1.05
    """sapo: gate temperature where A <= 0 (verl's tau_neg, TRL's sapo_temperature_neg)."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        require(
            0 < self.clip_low < 1 and self.clip_high > 0,
            f"clip_low must be in (0, 1) and clip_high > 0; got {self.clip_low} and {self.clip_high}",
        )
        one_of(self, "loss_mode")
        for loss in POLICY_LOSSES.values():  # each loss checks its own options, used or not
            loss.check(self)


@dataclass
class PPOConfig(ClippedConfig):
    """PPO: a critic, GAE, the clipped ratio, several epochs over minibatches."""

    epochs: int = 2
    """Passes over each rollout (the ratio moves away from 1 after the first minibatch)."""
    minibatches: int = 4
    """Optimizer steps per epoch."""
    critic_lr: float = 3e-4
    """AdamW learning rate of the critic."""
    value_clip: float = 0.2
    """The new value may move at most this far from the rollout-time value in the clipped value loss."""
    vf_coef: float = 0.5
    """Weight of the value loss in the total loss."""
    gamma: float = 1.0
    """Discount per token (1.0: a reasoning answer is one episode)."""
    lam: float = 0.95
    """GAE lambda: 1 = Monte-Carlo return minus V (unbiased, noisy), 0 = one-step TD (biased by V, quiet)."""
    whiten: bool = True
    """Normalise advantages to zero mean and unit variance over the batch."""
    kl_coef: float = 0.05
    """Per-token KL penalty (k1) to the reference, subtracted from the reward."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        require(self.value_clip > 0, f"value_clip must be > 0, got {self.value_clip}")
        require(
            0 <= self.gamma <= 1 and 0 <= self.lam <= 1,
            f"gamma and lam must be in [0, 1], got {self.gamma} and {self.lam}",
        )
        require(self.critic_lr > 0 and self.vf_coef >= 0, "critic_lr must be > 0 and vf_coef >= 0")


@dataclass
class GRPOConfig(ClippedConfig):
    """Vanilla GRPO: the critic replaced by the group, k3 KL in the loss, per-answer aggregation."""

    adv_scale: str = "std"
    """``std``: divide by the group's unbiased std + eps (GRPO); ``none``: only centre (Dr. GRPO)."""
    adv_eps: float = 1e-6
    """eps added to the group std (outside the square root), as in verl."""
    kl_coef: float = 0.04
    """beta: weight of the k3 KL-to-reference term in the loss (0 = no reference needed)."""
    kl_estimator: str = "k3"
    """KL estimate used in the loss: k1, k2, k3, or verl's straight-through k1+ / k3+ (value of k1 / k3, gradient of k2)."""
    loss_agg: str = "seq-mean-token-mean"
    """Per answer then over answers (GRPO); ``token-mean`` (DAPO); ``seq-mean-token-sum-norm`` (Dr. GRPO)."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        require(
            group_size >= 2,
            f"group methods compare answers within a group, so group_size must be >= 2; got {group_size}",
        )
        one_of(self, "adv_scale")
        one_of(self, "kl_estimator", GRPO_KL_ESTIMATORS)


@dataclass
class DAPOConfig(GRPOConfig):
    """GRPO plus the DAPO switches, with DAPO's values as defaults."""

    clip_high: float = 0.28
    """Clip-higher: the upper bound is 1 + 0.28, wider than the lower 1 - 0.2. Like any clip it acts only once the policy moves inside a rollout (minibatches or epochs > 1)."""
    loss_agg: str = "token-mean"
    """Token-level loss: sum over all tokens / all tokens in the batch."""
    kl_coef: float = 0.0
    """No KL to the reference by default."""
    kl_stages: str = ""
    """KL schedule as STEP:COEF pairs, e.g. ``0:0.0,40:0.02`` (from step 40 on, beta = 0.02); empty = constant kl_coef."""
    dynamic_sampling: str = "resample"
    """``resample``: drop all-equal groups and sample more; ``filter``: drop, no refill; ``downweight``: keep, weight ``degenerate_weight``; ``off``."""
    max_resample_rounds: int = 3
    """At most this many extra sampling rounds per step; then train on what there is."""
    degenerate_weight: float = 0.1
    """With ``downweight``: weight of an all-equal group's tokens in the loss."""
    overlong_penalty: bool = True
    """Add DAPO's soft overlong penalty to the reward."""
    overlong_buffer: int = 8
    """L_c: the penalty ramps from 0 to -1 over the last this many tokens before max_new_tokens."""
    overlong_filter: bool = False
    """Mask truncated answers (no EOS) out of the loss."""
    entropy_threshold: float = 0.0
    """Entropy monitor: act when the mean entropy (nats/token) falls below this; 0 = only log it."""
    entropy_action: str = "bonus"
    """What the monitor does: ``bonus`` (add entropy_coef * entropy to the objective) or ``temperature`` (raise it)."""
    entropy_coef: float = 0.01
    """Entropy bonus weight while the monitor is firing."""
    temperature_step: float = 0.1
    """Temperature increase per firing (``temperature`` action), up to max_temperature."""
    max_temperature: float = 1.5
    """Ceiling for the sampling temperature."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        one_of(self, "dynamic_sampling")
        require(
            self.max_resample_rounds >= 0 and 0 <= self.degenerate_weight <= 1,
            "max_resample_rounds must be >= 0 and degenerate_weight in [0, 1]",
        )
        require(self.overlong_buffer >= 1, f"overlong_buffer must be >= 1, got {self.overlong_buffer}")
        one_of(self, "entropy_action")
        require(
            min(self.entropy_threshold, self.entropy_coef, self.temperature_step) >= 0,
            "entropy_threshold, entropy_coef and temperature_step must be >= 0",
        )
        parse_stages(self.kl_stages)


@dataclass
class GSPOConfig(GRPOConfig):
    """GSPO (Zheng et al. 2025): GRPO with one importance ratio per answer, with the paper's values as defaults."""

    clip_low: float = 3e-4
    """The answer's ratio is clipped at 1 - 3e-4 where A < 0 (GSPO paper v2, sec. 5.1): a length-normalised ratio moves far less than a token's."""
    clip_high: float = 4e-4
    """The answer's ratio is clipped at 1 + 4e-4 where A > 0 (GSPO paper v2, sec. 5.1)."""
    kl_coef: float = 0.0
    """No KL to the reference (GSPO, and TRL's GSPO recipe: beta = 0)."""
    loss_agg: str = "seq-mean-token-mean"
    """Per answer then over answers: GSPO's mean over answers. The others are allowed, as in TRL, and weight each answer's loss by its length or length / L_max."""
    minibatches: int = 4
    """Optimizer steps per epoch (TRL's GSPO recipe: steps_per_generation 4): the ratio is 1 in the first, so the clip acts only in the later ones."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        require(
            self.loss_mode == "clip",
            f"gspo clips one ratio per answer and has no loss_mode {self.loss_mode!r}; use loss_mode clip, or grpo --loss-mode {self.loss_mode} (token ratios)",
        )


LARGE_MODEL = 50_000_000
"""Parameters above which the learning-rate defaults (set for the shipped model, :data:`SHIPPED_PARAMETERS`) are far too high."""


def lr_warning(n_params: int, algo_name: str, algo_cfg: AlgoConfig) -> str:
    """A line to print when a model much larger than the shipped one (``n_params``)
    would train at the default learning rate, or ''."""
    default = make_config(algo_name).lr
    if n_params <= LARGE_MODEL or algo_cfg.lr != default:
        return ""
    critic = " (and a lower --critic-lr)" if isinstance(algo_cfg, PPOConfig) else ""
    return (
        f"lr is the default {default:g}, set for the {SHIPPED_PARAMETERS}-parameter shipped model, but this model has {n_params / 1e6:.0f}M parameters; "
        f"TRL and verl train models this size at 1e-6: pass --lr 1e-6{critic}"
    )


def parse_stages(text: str) -> list[tuple[int, float]]:
    """``"0:0.0,40:0.02"`` -> ``[(0, 0.0), (40, 0.02)]`` (sorted by step)."""
    if not text.strip():
        return []
    out = []
    for part in text.split(","):
        try:
            step, coef = part.split(":")
            out.append((int(step), float(coef)))
        except ValueError:
            raise ValueError(f"bad kl_stages entry {part!r}; write STEP:COEF pairs like 0:0.0,40:0.02") from None
        require(out[-1][1] >= 0, f"kl_stages coefficients must be >= 0, got {part!r}")
    return sorted(out)


@dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm: its config class, the defaults it changes, and one line on what it is."""

    config: type
    preset: dict
    summary: str


ALGORITHMS: dict[str, AlgorithmSpec] = {
    "reinforce": AlgorithmSpec(
        ReinforceConfig,
        {},
        "REINFORCE: answer reward minus a baseline (leave-one-out by default) times grad log-prob, one on-policy step",
    ),
    "ppo": AlgorithmSpec(
        PPOConfig,
        {},
        "PPO: a learned critic and GAE, the clipped ratio, KL per token in the reward, 2 epochs x 4 minibatches",
    ),
    "grpo": AlgorithmSpec(
        GRPOConfig, {}, "vanilla GRPO (DeepSeekMath): group-relative advantage instead of a critic, k3 KL in the loss"
    ),
    "dapo": AlgorithmSpec(
        DAPOConfig,
        {},
        "improved GRPO (DAPO): dynamic sampling, clip-higher, token-level loss, overlong shaping, no KL, entropy monitor",
    ),
    "drgrpo": AlgorithmSpec(
        GRPOConfig,
        {"adv_scale": "none", "loss_agg": "seq-mean-token-sum-norm"},
        "Dr. GRPO: GRPO without the std division, with a constant length normaliser (grpo --adv-scale none --loss-agg seq-mean-token-sum-norm)",
    ),
    "rloo": AlgorithmSpec(
        ReinforceConfig,
        {"baseline": "leave_one_out"},
        "RLOO: REINFORCE with the leave-one-out baseline (the same as reinforce's default)",
    ),
    "ei": AlgorithmSpec(
        EIConfig,
        {},
        "expert iteration (STaR, RAFT): keep the right answers and maximise their log-likelihood; REINFORCE with a 0/1 reward, no baseline, no negatives",
    ),
    "dualclip": AlgorithmSpec(
        GRPOConfig,
        {"clip_c": 3.0},
        "GRPO with dual-clip PPO (verl's clip_ratio_c = 3): a negative-advantage token's loss is bounded at -A*c however far its ratio rises",
    ),
    "gspo": AlgorithmSpec(
        GSPOConfig,
        {},
        "GSPO (Qwen): GRPO with one length-normalised importance ratio per answer, clipped per answer (1 -/+ 3e-4/4e-4), no KL, 4 minibatches",
    ),
    "clipcov": AlgorithmSpec(
        GRPOConfig,
        {"loss_mode": "clip_cov"},
        "GRPO with Clip-Cov (Cui et al. 2025; verl's clip_cov): the clipped loss, and 0.02% of tokens, drawn among those whose log-prob x advantage covariance is in (1, 5), get no gradient",
    ),
    "klcov": AlgorithmSpec(
        GRPOConfig,
        {"loss_mode": "kl_cov"},
        "GRPO with KL-Cov (Cui et al. 2025; verl's kl_cov): no ratio clip; the 0.02% of tokens with the largest covariance get a 0.1 x |log ratio| penalty",
    ),
    "cispo": AlgorithmSpec(
        GRPOConfig,
        {"loss_mode": "cispo"},
        "GRPO with CISPO (MiniMax-M1): -sg(clip(r, 0.8, 1.2)) * A * log pi per token: the weight is clipped, every token keeps its gradient",
    ),
    "sapo": AlgorithmSpec(
        GRPOConfig,
        {"loss_mode": "sapo"},
        "GRPO with SAPO (Qwen): a smooth gate sigmoid(tau (r - 1)) * 4 / tau instead of the hard clip (tau 1.0 where A > 0, 1.05 where A < 0)",
    ),
}
"""name -> :class:`AlgorithmSpec`. The classes that run them are in ``rlalgos.algorithms``."""


def algorithm_config(name: str) -> AlgorithmSpec:
    require(name in ALGORITHMS, f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


def check_options(name: str, given, where: str = "") -> None:
    """A one-line ``ValueError`` naming the options in ``given`` that algorithm ``name`` does not
    have, with the nearest one it has (``where``: the text they came from, for the message)."""
    known = [f.name for f in fields(algorithm_config(name).config)]
    bad = [k for k in given if k not in known]
    near = [m for b in bad for m in difflib.get_close_matches(b, known, n=1, cutoff=0.6)]
    require(
        not bad,
        f"{name} has no option {', '.join(map(repr, bad))}{where}; "
        + (f"did you mean {', '.join(near)}?" if near else f"its options are {', '.join(known)}"),
    )


def make_config(name: str, **overrides) -> AlgoConfig:
    """The named algorithm's config (its preset applied) with ``overrides`` (unknown keys are an error)."""
    check_options(name, sorted(overrides))
    spec = ALGORITHMS[name]
    return replace(spec.config(**spec.preset), **overrides)


def parse_algo_spec(spec: str) -> tuple[str, dict]:
    """``dapo:minibatches=4:clip_high=0.3`` -> ("dapo", {"minibatches": 4, "clip_high": 0.3}),
    each value converted to the type of that option's default."""
    name, *pairs = spec.strip().split(":")
    algorithm_config(name)
    options = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        check_options(name, [key], f" in {spec!r}")
        require(bool(eq), f"bad option {pair!r} in {spec!r}; write NAME:OPTION=VALUE, e.g. {name}:lr=3e-4")
        typ = type(getattr(ALGORITHMS[name].config(), key))
        try:
            options[key] = {"true": True, "false": False}[value.lower()] if typ is bool else typ(value)
        except (KeyError, ValueError):
            raise ValueError(f"bad value {value!r} for {name}'s {key} (a {typ.__name__}) in {spec!r}") from None
    return name, options
