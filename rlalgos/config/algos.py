"""The algorithms' knobs, each config a small diff of the one it extends, and the registry of algorithms."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, fields, replace

from ..losses import POLICY_LOSSES
from ..losses.registry import require
from .choices import GRPO_KL_ESTIMATORS, KL_ESTIMATORS, SHIPPED_PARAMETERS, one_of

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
