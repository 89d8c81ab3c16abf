"""The fixed sets of values the knobs take, the shipped models' folders, and the one check of a choice."""

from __future__ import annotations

from ..losses import LOSS_AGG_MODES, POLICY_LOSSES
from ..losses.registry import require
from ..tasks import DATA_DIR

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
