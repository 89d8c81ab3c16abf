"""The rollout-trainer mismatch, token by token: what a notebook plots.

An engine samples with one copy of the policy (vLLM in bf16, perhaps with top-p)
and trains with another (fp32), so the log-prob the sampler gave a token is not
the log-prob the trainer computes for it. :func:`logprob_gaps` samples one batch
the way a run with ``rollout_dtype`` / ``top_p`` does and returns both numbers for
every completion token, ready for a histogram of the gap.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd
import torch

from ..engine.precision import SamplingCopy
from ..engine.sampler import SamplingConfig
from ..rollout import rollout
from ..tasks import Task


@torch.no_grad()
def logprob_gaps(
    policy,
    tokenizer,
    task: Task,
    rows: Sequence[dict],
    dtype: str = "bfloat16",
    top_p: float = 1.0,
    group_size: int = 1,
    temperature: float = 1.0,
    max_new_tokens: int = 0,
    seed: int = 0,
) -> pd.DataFrame:
    """Sample ``group_size`` completions per row once, with the policy's weights in
    ``dtype`` (``"float32"``: the policy itself) and nucleus ``top_p``, and score them
    with the policy itself (the trainer). One DataFrame row per completion token:

    ``answer`` (the completion's index), ``position``, ``token`` (its id),
    ``rollout_logprob`` (the sampler's, under the distribution it drew from),
    ``trainer_logprob`` (the trainer's full softmax at ``temperature``), ``gap``
    (trainer - sampler: the log of the importance ratio a correction would use),
    ``correct`` (the answer's correctness reward).

    Sampling runs in a forked RNG seeded with ``seed`` (the caller's stream is untouched).
    """
    sampling = SamplingConfig(
        max_new_tokens=max_new_tokens or task.max_new_tokens, temperature=temperature, top_p=top_p
    )
    sampler = SamplingCopy(policy, dtype).sync() if dtype != "float32" else None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        ro = rollout(
            policy,
            tokenizer,
            rows,
            group_size,
            task.rewards,
            sampling,
            correct_key=task.correct_key,
            sampler=sampler,
            rollout_logprobs=True,
        )
    valid = ro.completion_mask > 0  # (N, T)
    answer, position = valid.nonzero(as_tuple=True)
    rollout_lp, trainer_lp = ro.rollout_logprobs[valid], ro.old_logprobs[valid]
    return pd.DataFrame(
        {
            "answer": answer.tolist(),
            "position": position.tolist(),
            "token": ro.completion_ids[valid].tolist(),
            "rollout_logprob": rollout_lp.tolist(),
            "trainer_logprob": trainer_lp.tolist(),
            "gap": (trainer_lp - rollout_lp).tolist(),
            "correct": ro.correct[answer].tolist(),
        }
    )
