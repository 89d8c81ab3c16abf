"""The run's knobs: :class:`TrainConfig` (what to train on, for how long, how to evaluate and log, the engine)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from ..losses.registry import require
from .algos import PPOConfig, algorithm_config
from .choices import LORA_INSTALL, one_of

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
