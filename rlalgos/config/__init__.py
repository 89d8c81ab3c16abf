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

from ..losses import LOSS_AGG_MODES  # noqa: F401  (the config names the aggregations too)
from .choices import (  # noqa: F401
    BASE_MODEL_DIR,
    REWARD_MODEL_DIR,
    TRAP_MODEL_DIR,
    SHIPPED_PARAMETERS,
    BASELINES,
    EI_KEEP,
    KL_ESTIMATORS,
    GRPO_KL_ESTIMATORS,
    ADV_SCALES,
    DYNAMIC_SAMPLING,
    ENTROPY_ACTIONS,
    LOSS_MODES,
    DTYPES,
    ROLLOUT_DTYPES,
    ROLLOUT_CORRECTIONS,
    SAMPLERS,
    ON_NONFINITE,
    CHOICES,
    LORA_INSTALL,
    one_of,
)
from .algos import (  # noqa: F401
    AlgoConfig,
    ReinforceConfig,
    EIConfig,
    ClippedConfig,
    PPOConfig,
    GRPOConfig,
    DAPOConfig,
    GSPOConfig,
    LARGE_MODEL,
    lr_warning,
    parse_stages,
    AlgorithmSpec,
    ALGORITHMS,
    algorithm_config,
    check_options,
    make_config,
    parse_algo_spec,
)
from .run import (  # noqa: F401
    TrainConfig,
)
