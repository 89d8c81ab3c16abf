"""Every knob of rlalgos, with its docstring and its check, and nothing else.

The dataclasses here are the command line (``rlalgos train grpo --help`` prints
their field docstrings) and the Python API (``train(TrainConfig(...),
make_config("grpo", lr=3e-4))``). This module imports neither torch nor
transformers, so the CLI answers ``--help`` and bad values at once.

Read the algorithm configs in order: each adds only what its algorithm adds.

    AlgoConfig -> ReinforceConfig                       (a baseline, KL in the reward)
    AlgoConfig -> ClippedConfig -> PPOConfig            (ratio clip; critic, GAE, KL per token in the reward)
                                -> GRPOConfig -> DAPOConfig   (group advantage, KL in the loss; the DAPO switches)
                                              -> GSPOConfig   (one importance ratio per answer)
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib.util
import inspect
import json
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Literal

from .losses import LOSS_AGG_MODES, POLICY_LOSSES
from .tasks import DATA_DIR

BASE_MODEL_DIR = DATA_DIR / "base_model"
"""Where the shipped SFT base model lives (``rlalgos sft`` writes it)."""
REWARD_MODEL_DIR = DATA_DIR / "reward_model"
TRAP_MODEL_DIR = DATA_DIR / "trap_model"
"""Where the shipped reward model lives (``rlalgos rm`` writes it)."""

BASELINES = ("none", "batch_mean", "leave_one_out")
EI_KEEP = ("correct", "best")
"""Which answers expert iteration (``ei``) trains on: every one whose reward reaches ``keep_threshold``, or only its group's best."""
KL_ESTIMATORS = ("k1", "k2", "k3")
GRPO_KL_ESTIMATORS = KL_ESTIMATORS + ("k1+", "k3+")
"""Every kind :func:`rlalgos.core.kl_estimate` knows, and what a KL *in the loss* may use: also verl's straight-through k1+ / k3+ (the value of k1 / k3, the gradient of k2: the reverse KL's; notebook 03 section 7)."""
DYNAMIC_SAMPLING = ("resample", "filter", "downweight", "off")
LOSS_MODES = tuple(POLICY_LOSSES)
"""The policy losses a clipped algorithm can use (``loss_mode``; verl's ``policy_loss.loss_mode``, clip = verl's vanilla): the modules of :mod:`rlalgos.losses`."""
DTYPES = ("auto", "float32", "bfloat16", "bfloat16-weights", "float16-weights")
ROLLOUT_DTYPES = ("float32", "bfloat16", "float16")
"""What ``rollout_dtype`` may name: the precision of the sampling copy of the policy (float32: no copy, the policy samples)."""
ROLLOUT_CORRECTIONS = ("none", "token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
"""The sampler-trainer mismatch corrections (``rollout_correction``; TRL's ``vllm_importance_sampling_mode`` names): :func:`rlalgos.core.rollout_correction_weights`."""
LORA_INSTALL = "pip install rlalgos[lora]"
"""What a missing peft (the ``lora`` extra) tells the user to run."""
TRACKERS = ("tensorboard", "wandb", "trackio")
"""The trackers ``report_to`` may name (each is also the name of its pip extra and of its package)."""


def installed(name: str) -> bool:
    """Whether the package ``name`` can be imported (without importing it)."""
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def parse_report_to(text: str, check_installed: bool = True) -> list[str]:
    """``"tensorboard,wandb"`` -> ``["tensorboard", "wandb"]``; ``"none"`` or ``""`` -> ``[]``;
    ``"all"`` -> every tracker that is installed (TRL's meaning).

    Raises ``ValueError`` with one line for an unknown name or, with
    ``check_installed``, a tracker whose package is missing."""
    names = [n.strip().lower() for n in str(text).split(",") if n.strip()]
    if names in ([], ["none"]):
        return []
    if "all" in names or "none" in names:
        if len(names) > 1:
            raise ValueError(
                f"report_to {text!r}: 'all' and 'none' stand alone; give one of them or a list such as tensorboard,wandb"
            )
        return [n for n in TRACKERS if installed(n)]
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise ValueError(
            f"unknown report_to {', '.join(unknown)}; use none, all or a comma-separated list of {', '.join(TRACKERS)}"
        )
    names = list(dict.fromkeys(names))
    if check_installed:
        for n in names:
            if not installed(n):
                raise ValueError(
                    f"--report-to {n} needs the {n} package, which is not installed: pip install rlalgos[{n}]"
                )
    return names


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """``{field: the docstring under it}`` of a config dataclass: the one place an option is
    documented, which the command line's help (tyro) and other commands' options read."""
    docs, body = {}, ast.parse(inspect.getsource(cls)).body[0].body
    for node, nxt in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(nxt, ast.Expr)
            and isinstance(getattr(nxt, "value", None), ast.Constant)
        ):
            docs[node.target.id] = " ".join(str(nxt.value.value).split())
    return docs


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


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
    """Numeric precision of the policy. ``auto``: ``bfloat16`` on CUDA, ``float32`` on CPU. ``float32``: float32 weights, float32 maths. ``bfloat16``: mixed precision, the standard scheme (TRL's bf16, verl's FSDP): float32 weights (the optimizer's master copy, so a step of 1e-6 of a weight still counts) and every forward pass (sampling, scoring, the update) under ``torch.autocast(bfloat16)``; log-probs and losses stay float32. ``bfloat16-weights`` / ``float16-weights``: the weights themselves in that dtype, half the memory, no autocast: a step smaller than about 1/256 of a weight is rounded away (at lr 1e-6 most are), and float16 has no loss scaling; for memory-starved runs only (with LoRA they are safe: only the frozen base is in that dtype, the adapters stay float32). The weights' dtype applies when rlalgos loads the model; a model passed to ``train()`` in Python keeps its own, and every forward pass of the run (sampling, scoring, the update) runs under this setting's autocast (:mod:`rlalgos.engine.precision`)."""
    lora_rank: int = 0
    """LoRA rank r (needs ``pip install rlalgos[lora]``): train rank-r adapters on the layers named by lora_targets, every other weight frozen, instead of every weight; the reference policy is the same model with its adapters switched off (no second copy), and a checkpoint holds the adapters (load_policy / ``rlalgos eval --model RUN_DIR/checkpoint`` merge them into the base). 0 = off: full fine-tuning. Not with ppo (its critic is a full copy of the trunk)."""
    lora_alpha: float = 0.0
    """LoRA scale: the adapters' output is multiplied by lora_alpha / lora_rank; 0 = 2 x lora_rank (a scale of 2, as TRL's r=16, alpha=32)."""
    lora_dropout: float = 0.0
    """Dropout on the adapters' input in the update (peft's lora_dropout); 0 keeps the first update pass equal to the sampling policy (ratio 1)."""
    lora_targets: str = "all-linear"
    """Layers that get adapters: ``all-linear`` (every linear projection of attention and MLP, not the LM head) or comma-separated module names, e.g. ``q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj`` (Llama, Qwen)."""
    chat_template: bool = False
    """Wrap each task prompt in the tokenizer's chat template (one user turn, then the assistant's turn), for instruct models; training and evaluation alike."""
    task: str = "addition"
    """Task name (``addition``), ``addition:terms=2-6`` (a difficulty regime), ``gsm8k:TRAIN.jsonl[,TEST.jsonl]`` (without TEST, 10% of TRAIN is held out), ``gsm8k:DATASET``, or ``MODULE:FUNCTION[:key=value]`` (the Task a function of yours returns)."""
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
    """Nucleus sampling for training rollouts and the sampled eval: sample from the smallest set of tokens holding this much probability; 1.0 = off. Below 1 the samples no longer come from the policy: the log-probs for the ratio and the KL are still the full softmax at the temperature (as in TRL and verl)."""
    rollout_dtype: str = "float32"
    """Precision the training rollouts are sampled in, while the trainer scores them in ``dtype`` (the rollout-trainer mismatch of engines that sample with vLLM/SGLang in bf16 and train in fp32). ``float32``: the policy itself samples (no mismatch beyond ``top_p``). ``bfloat16`` / ``float16``: a copy of the policy with its weights in that dtype samples, its weights re-synced from the trained ones before every rollout (an engine's weight sync). Then (or with ``top_p`` < 1, or a ``rollout_correction``) the sampler's own log-probs of its tokens (``rollout_logprobs``, under the distribution it sampled from: temperature and top-p applied, like vLLM's processed_logprobs) are kept and the gap to the trainer's is logged every step (``mismatch_logp_gap_mean`` ...). The sampled eval always uses the policy itself."""
    rollout_sync_every: int = 1
    """Steps between weight syncs of the sampling copy: 1 = before every step's rollout (the sampler differs from the trainer only by ``rollout_dtype`` and ``top_p``). k > 1: the sampler keeps the weights of the last sync, so its rollouts come from a policy up to k - 1 updates old (an asynchronous engine's staleness; a larger, deliberate mismatch), in ``rollout_dtype`` (a float32 copy if that is float32). A resumed run syncs at its first step."""
    rollout_correction: str = "none"
    """Correct the policy loss for the rollout-trainer mismatch with an importance weight ``r = pi_trainer / pi_sampler`` (of the sampled tokens; detached, times each token's policy loss; :func:`rlalgos.core.rollout_correction_weights`): ``token_truncate`` (TIS: ``min(r_t, C)``), ``token_mask`` (``r_t``, 0 where ``r_t > C``), ``sequence_truncate`` / ``sequence_mask`` (the same with one ratio per answer, the product of its token ratios); ``none`` = off. TRL's ``vllm_importance_sampling_mode``, verl's ``algorithm.rollout_correction``. The trainer's log-probs are then recomputed in a no-grad pass after sampling, as both engines do."""
    rollout_correction_threshold: float = 2.0
    """C of ``rollout_correction``: the cap (truncate) or the cut-off (mask) on the ratio; >= 1. verl's rollout_is_threshold defaults to 2.0, TRL's vllm_importance_sampling_clip_max to 3.0."""
    logits_chunk: int = -1
    """Tokens per LM-head chunk in every log-prob pass (scoring and update): at most this many tokens' full-vocabulary logits exist at once, so their memory grows with the chunk, not with batch x length (Qwen's 151,936-token vocabulary: ~0.7 GB at 256, ~1.3 GB at 512, where a 64 x 256 batch unchunked needs 30-40 GB). -1 = auto: 2**25 logits per chunk (~220 tokens at Qwen's vocabulary; the shipped model's batches fit in one, so it runs unchunked); 0 = the whole batch at once."""
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
    """When the KL is only logged (the algorithm's KL coefficient is 0): measure it on this many answers per step (per process under torchrun), evenly spread over the groups, instead of all of them; the reference pass then costs that share of a full one. ``kl`` becomes an estimate and ``kl_stderr`` its standard error. 0 = every answer (exact). A KL in the loss or the reward is always exact."""
    entropy_probe: bool = False
    """Measure the entropy mechanism of every update (Cui et al. 2025): log ``entropy_cov``, the covariance over the rollout's tokens of sampling log-prob and advantage (to first order the entropy change is minus it), and ``entropy_before`` / ``entropy_after`` / ``entropy_change``, the exact entropy on the rollout's own states before and after the update (one or two extra no-grad passes)."""
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
    """Stop a run whose policy has collapsed (reward near 0 with KL to the reference far above a healthy run's, for several steps in a row; :func:`rlalgos.engine.doctor.collapse`): write the row with the reason, keep the checkpoint on disk (none is written while a collapse is under way), raise :class:`rlalgos.engine.doctor.RunCollapsed` (the CLI exits with status 2). Off: train on; the progress bar still names it."""
    report_to: str = "none"
    """Experiment trackers that also get every metrics row (TRL's flag): ``none``, ``all`` (every one installed) or a comma-separated list of ``tensorboard`` (event files in out_dir/tensorboard/), ``wandb`` (out_dir/wandb/, offline without an API key) and ``trackio``. Each is an extra: pip install rlalgos[tensorboard]. metrics.jsonl stays the record: a tracker that fails gets a warning and the run goes on."""

    def validate(self) -> None:
        """Raise ``ValueError`` with one line saying what to change."""
        algorithm_config(self.algo)
        for name in ("steps", "prompts_per_step", "group_size", "eval_samples"):
            _check(getattr(self, name) >= 1, f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("eval_every", "eval_prompts", "save_every", "max_new_tokens", "kl_sample_rows"):
            _check(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")
        _check(
            self.logits_chunk >= -1,
            f"logits_chunk must be -1 (auto), 0 (off) or a number of tokens, got {self.logits_chunk}",
        )
        _check(self.temperature > 0, f"temperature must be > 0, got {self.temperature}")
        _check(0 < self.top_p <= 1, f"top_p must be in (0, 1] (1 = off), got {self.top_p}")
        _check(self.score_batch_size >= 1, f"score_batch_size must be >= 1, got {self.score_batch_size}")
        _check(self.dtype in DTYPES, f"unknown dtype {self.dtype!r}; use one of {', '.join(DTYPES)}")
        _check(
            self.rollout_dtype in ROLLOUT_DTYPES,
            f"unknown rollout_dtype {self.rollout_dtype!r}; use one of {', '.join(ROLLOUT_DTYPES)}",
        )
        _check(
            self.rollout_correction in ROLLOUT_CORRECTIONS,
            f"unknown rollout_correction {self.rollout_correction!r}; use one of {', '.join(ROLLOUT_CORRECTIONS)}",
        )
        _check(
            self.rollout_sync_every >= 1,
            f"rollout_sync_every must be >= 1 (1 = sync the sampler before every step), got {self.rollout_sync_every}",
        )
        _check(
            self.rollout_correction_threshold >= 1,
            f"rollout_correction_threshold must be >= 1 (a bound on the ratio trainer / sampler; verl uses 2, TRL 3), got {self.rollout_correction_threshold}",
        )
        _check(
            self.rm_weight >= 0 and self.rule_weight >= 0,
            f"rm_weight and rule_weight must be >= 0, got {self.rm_weight} and {self.rule_weight}",
        )
        _check(
            self.rule_weight > 0 or bool(self.reward_model),
            "rule_weight 0 leaves nothing to train on; give --reward-model PATH or a rule_weight > 0",
        )
        _check(self.sampler in ("compact", "hf"), f"sampler must be 'compact' or 'hf', got {self.sampler!r}")
        _check(
            self.on_nonfinite in ("stop", "skip"), f"on_nonfinite must be 'stop' or 'skip', got {self.on_nonfinite!r}"
        )
        _check(
            self.lora_rank >= 0 and self.lora_alpha >= 0,
            f"lora_rank and lora_alpha must be >= 0 (lora_rank 0 = off), got {self.lora_rank} and {self.lora_alpha}",
        )
        _check(
            0 <= self.lora_dropout < 1 and bool(self.lora_targets.strip(", ")),
            f"lora_dropout must be in [0, 1) and lora_targets not empty, got {self.lora_dropout} and {self.lora_targets!r}",
        )
        if self.lora_rank:
            _check(
                importlib.util.find_spec("peft") is not None,
                f"lora_rank {self.lora_rank} needs peft, which is not installed: {LORA_INSTALL}",
            )
            _check(
                not issubclass(algorithm_config(self.algo).config, PPOConfig),
                f"lora_rank with {self.algo}: a LoRA critic is not supported (PPO's critic is a full copy of the trunk); use lora_rank 0, or a critic-free algorithm (grpo, dapo, reinforce, ...)",
            )
        parse_report_to(self.report_to)  # an unknown name or a tracker that is not installed: one line

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
    """Forward/backward passes per minibatch: its rows sorted by length and cut into this many
    runs, each padded only to its own longest row. Same gradient, less padding; 1 = one pass."""
    loss_agg: str = "token-mean"
    """How the per-token loss becomes a scalar: token-mean, seq-mean-token-mean or seq-mean-token-sum-norm."""
    kl_coef: float = 0.0
    """Weight of the KL-to-reference term (what it is added to depends on the algorithm)."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        """Raise ``ValueError`` with one line saying what to change."""
        _check(self.lr > 0, f"lr must be > 0, got {self.lr}")
        _check(self.weight_decay >= 0 and self.max_grad_norm > 0, "weight_decay must be >= 0 and max_grad_norm > 0")
        _check(
            self.epochs >= 1 and self.minibatches >= 1,
            f"epochs and minibatches must be >= 1, got {self.epochs} and {self.minibatches}",
        )
        _check(
            num_sequences % self.minibatches == 0,
            f"{num_sequences} sequences per step do not split into {self.minibatches} minibatches; pick minibatches dividing prompts_per_step x group_size",
        )
        _check(self.micro_batch_size >= 0, "micro_batch_size must be >= 0 (0 = no limit)")
        _check(self.length_buckets >= 1, f"length_buckets must be >= 1, got {self.length_buckets}")
        _check(
            self.loss_agg in LOSS_AGG_MODES,
            f"unknown loss_agg {self.loss_agg!r}; use one of {', '.join(LOSS_AGG_MODES)}",
        )
        _check(self.kl_coef >= 0, f"kl_coef must be >= 0, got {self.kl_coef}")


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
        _check(self.baseline in BASELINES, f"unknown baseline {self.baseline!r}; use one of {', '.join(BASELINES)}")
        _check(
            self.baseline != "leave_one_out" or group_size >= 2,
            "baseline 'leave_one_out' needs group_size >= 2; raise group_size or use baseline 'batch_mean'",
        )
        _check(self.kl_estimator in KL_ESTIMATORS, f"unknown kl_estimator {self.kl_estimator!r}; use k1, k2 or k3")


@dataclass
class EIConfig(ReinforceConfig):
    """Expert iteration: REINFORCE with a 0/1 weight on the kept answers, no baseline, no negatives."""

    keep: str = "correct"
    """Which answers are trained on: ``correct`` (every answer whose reward is at least keep_threshold: STaR, RAFT++) or ``best`` (only those with their group's highest reward, if it reaches keep_threshold: RAFT's best-of-G); the same on a 0/1 reward."""
    keep_threshold: float = 1.0
    """The reward an answer needs to be kept (1.0: a right answer on the 0/1 task)."""
    baseline: str = "none"
    """ei has no baseline (``none`` only): a kept answer weighs 1, the rest are out of the loss."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        _check(self.keep in EI_KEEP, f"unknown keep {self.keep!r}; use one of {', '.join(EI_KEEP)}")
        _check(
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
    """Dual clip (Ye et al. 2020; verl's clip_ratio_c, 3 there): where A < 0 a token's loss is at most -A * clip_c, however far its ratio rises (so it acts only on ratios above clip_c: set minibatches or epochs > 1); 0 = off."""
    loss_mode: str = "clip"
    """The per-token policy loss (verl's policy_loss.loss_mode), one module of rlalgos/losses each, which says what it does: ``clip`` is PPO's clipped ratio (verl's vanilla); Clip-Cov, KL-Cov, CISPO, SAPO and the others replace it. Only clip takes clip_c."""
    clip_cov_ratio: float = 2e-4
    """clip_cov: share of the valid tokens (at least one per forward pass) whose gradient is cut, drawn at random from those with covariance in (clip_cov_lb, clip_cov_ub)."""
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
        _check(
            0 < self.clip_low < 1 and self.clip_high > 0,
            f"clip_low must be in (0, 1) and clip_high > 0; got {self.clip_low} and {self.clip_high}",
        )
        _check(
            self.loss_mode in LOSS_MODES, f"unknown loss_mode {self.loss_mode!r}; use one of {', '.join(LOSS_MODES)}"
        )
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
        _check(self.value_clip > 0, f"value_clip must be > 0, got {self.value_clip}")
        _check(
            0 <= self.gamma <= 1 and 0 <= self.lam <= 1,
            f"gamma and lam must be in [0, 1], got {self.gamma} and {self.lam}",
        )
        _check(self.critic_lr > 0 and self.vf_coef >= 0, "critic_lr must be > 0 and vf_coef >= 0")


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
        _check(
            group_size >= 2,
            f"group methods compare answers within a group, so group_size must be >= 2; got {group_size}",
        )
        _check(self.adv_scale in ("std", "none"), f"unknown adv_scale {self.adv_scale!r}; use std or none")
        _check(
            self.kl_estimator in GRPO_KL_ESTIMATORS,
            f"unknown kl_estimator {self.kl_estimator!r}; use one of {', '.join(GRPO_KL_ESTIMATORS)}",
        )


@dataclass
class DAPOConfig(GRPOConfig):
    """GRPO plus the DAPO switches, with DAPO's values as defaults."""

    clip_high: float = 0.28
    """Clip-higher: the upper bound is 1 + 0.28, wider than the lower 1 - 0.2. Like any clip it acts only once the policy moves inside a rollout: set minibatches or epochs > 1 (DAPO itself takes many minibatch steps per rollout)."""
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
        _check(
            self.dynamic_sampling in DYNAMIC_SAMPLING,
            f"unknown dynamic_sampling {self.dynamic_sampling!r}; use one of {', '.join(DYNAMIC_SAMPLING)}",
        )
        _check(
            self.max_resample_rounds >= 0 and 0 <= self.degenerate_weight <= 1,
            "max_resample_rounds must be >= 0 and degenerate_weight in [0, 1]",
        )
        _check(self.overlong_buffer >= 1, f"overlong_buffer must be >= 1, got {self.overlong_buffer}")
        _check(
            self.entropy_action in ("bonus", "temperature"),
            f"unknown entropy_action {self.entropy_action!r}; use bonus or temperature",
        )
        _check(
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
    """Per answer then over answers: GSPO's mean over answers. The others are allowed, as in TRL: they weight each answer's loss by its length (token-mean) or length / L_max."""
    minibatches: int = 4
    """Optimizer steps per epoch (TRL's GSPO recipe: steps_per_generation 4): the ratio is 1 in the first, so the clip acts only in the later ones."""

    def validate(self, group_size: int, num_sequences: int) -> None:
        super().validate(group_size, num_sequences)
        _check(
            self.loss_mode == "clip",
            f"gspo clips one ratio per answer and has no loss_mode {self.loss_mode!r}; use loss_mode clip, or grpo --loss-mode {self.loss_mode} (token ratios)",
        )


LARGE_MODEL = 50_000_000
"""Parameters above which the learning-rate defaults (set for the 0.86M-parameter shipped model) are far too high."""


def lr_warning(n_params: int, algo_name: str, algo_cfg: AlgoConfig) -> str:
    """A line to print when a model much larger than the shipped one (``n_params``)
    would train at the default learning rate, or ''."""
    default = make_config(algo_name).lr
    if n_params <= LARGE_MODEL or algo_cfg.lr != default:
        return ""
    critic = " (and a lower --critic-lr)" if isinstance(algo_cfg, PPOConfig) else ""
    return (
        f"lr is the default {default:g}, set for the 0.86M-parameter shipped model, but this model has {n_params / 1e6:.0f}M parameters; "
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
        _check(out[-1][1] >= 0, f"kl_stages coefficients must be >= 0, got {part!r}")
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
    _check(name in ALGORITHMS, f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


def make_config(name: str, **overrides) -> AlgoConfig:
    """The named algorithm's config (its preset applied) with ``overrides`` (unknown keys are an error)."""
    spec = algorithm_config(name)
    known = {f.name for f in fields(spec.config)}
    bad = sorted(set(overrides) - known)
    near = [m for b in bad for m in difflib.get_close_matches(b, sorted(known), n=1, cutoff=0.6)]
    _check(
        not bad,
        f"{name} has no option {', '.join(bad)}; "
        + (f"did you mean {', '.join(near)}?" if near else f"its options are {', '.join(sorted(known))}"),
    )
    return replace(spec.config(**spec.preset), **overrides)


def parse_algo_spec(spec: str) -> tuple[str, dict]:
    """``dapo:minibatches=4:clip_high=0.3`` -> ("dapo", {"minibatches": 4, "clip_high": 0.3}),
    each value converted to the type of that option's default."""
    name, *pairs = spec.strip().split(":")
    algorithm_config(name)
    defaults = {f.name: f for f in fields(ALGORITHMS[name].config)}
    options = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if key not in defaults:
            near = difflib.get_close_matches(key, list(defaults), n=1, cutoff=0.6)
            _check(
                False,
                f"{name} has no option {key!r} in {spec!r}"
                + (f"; did you mean {near[0]}?" if near else f"; its options: {', '.join(defaults)}"),
            )
        _check(bool(eq), f"bad option {pair!r} in {spec!r}; write NAME:OPTION=VALUE, e.g. {name}:lr=3e-4")
        typ = type(getattr(ALGORITHMS[name].config(), key))
        try:
            options[key] = {"true": True, "false": False}[value.lower()] if typ is bool else typ(value)
        except (KeyError, ValueError):
            raise ValueError(f"bad value {value!r} for {name}'s {key} (a {typ.__name__}) in {spec!r}") from None
    return name, options


# --------------------------------------------------------------------------- #
# Making the models the workbook ships
# --------------------------------------------------------------------------- #


@dataclass
class SFTConfig:
    """Supervised fine-tuning of the tiny model on the addition task."""

    steps: int = 2000
    """Optimizer steps."""
    batch_size: int = 64
    """Examples per step."""
    lr: float = 3e-3
    """Peak AdamW learning rate (linear warmup over 5% of steps, cosine decay to 10%)."""
    direct_frac: float = 0.3
    """Share of targets written as a direct answer (``#204``) instead of the scratchpad."""
    hidden: int = 128
    """Model width."""
    layers: int = 4
    """Transformer blocks."""
    seed: int = 0
    """Seeds initialisation, data order and strategy choice."""
    out_dir: str = str(BASE_MODEL_DIR)
    """Where to ``save_pretrained`` the model and tokenizer."""
    overwrite: bool = False
    """Replace the model already in out_dir (its files only)."""
    data_dir: str = str(DATA_DIR)
    """Where the task's jsonl splits are (made with a fixed seed if missing)."""
    eval_prompts: int = 500
    """Test prompts for the accuracy report."""
    device: str = "auto"
    """``auto``, ``cpu`` or ``cuda``."""
    progress: bool = True
    """Show a progress bar."""


@dataclass
class TrapConfig:
    """The exploration regime's base model: a short fine-tune of the shipped one that makes
    direct answers reliable on easy prompts and the scratchpad rare everywhere (``--task trap``)."""

    steps: int = 300
    """Optimizer steps (each 32 easy + 32 hard prompts)."""
    lr: float = 1e-4
    """AdamW learning rate (constant, no weight decay)."""
    hard_scratchpad_frac: float = 0.1
    """Hard prompts whose target is the full scratchpad; the others teach only the choice, the first token ``#``."""
    easy_scratchpad_frac: float = 0.1
    """Easy prompts whose target is the scratchpad's first token only (the choice, never its working); the others are full direct answers."""
    base: str = ""
    """Model to start from; empty = the shipped base model."""
    seed: int = 0
    """Seeds the prompts and the targets."""
    out_dir: str = str(TRAP_MODEL_DIR)
    """Where to ``save_pretrained`` the model and tokenizer."""
    overwrite: bool = False
    """Replace the model already in out_dir (its files only)."""
    progress: bool = True
    """Show a progress bar."""


EMERGENCE_DIR = (
    Path("data") / "emergence"
)  # under the working directory (the repository root for the notebooks and the commands)
EMERGENCE_KINDS = ("rare", "incompetent", "absent", "primed", "primed_wrong")


@dataclass
class EmergenceConfig:
    """A base model for the emergence experiments: the shipped model with the scratchpad made rare, incompetent or absent, or primed."""

    kind: Literal["rare", "incompetent", "absent", "primed", "primed_wrong"] = "rare"
    """What to make: ``rare`` (share ``share``, competence kept), ``incompetent`` (share ``share``, every sum trained wrong), ``absent`` (share below ``absent_share``), ``primed``/``primed_wrong`` (the incompetent model after ``prime_steps`` on right or half-wrong traces)."""
    share: float = 0.03
    """Target scratchpad share for ``rare`` and ``incompetent`` (the primed models start from the incompetent one at this share)."""
    lr: float = 3e-5
    """AdamW learning rate of the choice shift (constant, no weight decay)."""
    corrupt_steps: int = 150
    """``incompetent``: steps on wrong-sum traces (at lr 1e-4) before the choice shift."""
    prime_steps: int = 40
    """``primed``: steps of supervised fine-tuning on the priming traces (batches of 32, lr 1e-4)."""
    prime_traces: int = 256
    """``primed``: how many distinct training prompts the priming traces cover."""
    absent_share: float = 1e-4
    """``absent``: the share to shift below (40 steps of 16 x 8 answers then expect under one scratchpad answer)."""
    max_steps: int = 1000
    """Give up on the choice shift after this many steps (an error says how far it got)."""
    seed: int = 0
    """Seeds the prompts, the corruptions and the priming traces."""
    out_dir: str = ""
    """Where to ``save_pretrained``; empty = ``data/emergence/<kind>`` (with the share for ``rare``/``incompetent``)."""
    overwrite: bool = False
    """Replace the model already in out_dir (its files only)."""
    progress: bool = True
    """Show a progress bar."""

    def folder(self) -> Path:
        if self.out_dir:
            return Path(self.out_dir)
        name = f"{self.kind}_{self.share:g}" if self.kind in ("rare", "incompetent") else self.kind
        if self.kind in ("primed", "primed_wrong") and self.share != EmergenceConfig.share:
            name += f"_{self.share:g}"
        return EMERGENCE_DIR / name


@dataclass
class RMConfig:
    """Train a reward model on base-model samples labelled by the rule reward."""

    base: str = ""
    """Model whose trunk initialises the reward model and which samples the data; empty = the shipped base model."""
    prompts: int = 1200
    """Training prompts to sample completions for."""
    heldout_prompts: int = 200
    """Prompts (from the test split) held out for accuracy and AUC."""
    group_size: int = 8
    """Completions per prompt."""
    loss: str = "pairwise"
    """``pairwise`` (Bradley-Terry: -log sigmoid(r_chosen - r_rejected)) or ``bce`` (each completion against its 0/1 label)."""
    steps: int = 600
    """Optimizer steps."""
    batch_size: int = 64
    """Pairs (or completions) per step."""
    lr: float = 3e-4
    """AdamW learning rate."""
    seed: int = 0
    """Seeds sampling, pairing and initialisation."""
    out_dir: str = str(REWARD_MODEL_DIR)
    """Where to save_pretrained the reward model and its tokenizer."""
    overwrite: bool = False
    """Replace the model already in out_dir (its files only)."""
    device: str = "auto"
    """auto, cpu or cuda."""
    progress: bool = True
    """Show progress bars."""


def load_run_config(run_dir: str | Path) -> tuple[TrainConfig, AlgoConfig]:
    """The (TrainConfig, algorithm config) a run folder was started with."""
    path = Path(run_dir) / "config.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found; is {run_dir} a run folder?")
    saved = json.loads(path.read_text())
    cfg = TrainConfig(**saved["train"])
    return cfg, algorithm_config(cfg.algo).config(**saved["algo"])
