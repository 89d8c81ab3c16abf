"""Notebook 06's broken setups, as tasks: a gamed reward, a length-paying judge, too-hard prompts,
and the medium-difficulty pool that fixes them.

Each is a function that returns a :class:`rlalgos.tasks.Task`, named by a string such as
``rlalgos.workbook.troubleshooting:concise_task`` (``:pool=16`` and the like set its arguments), so
that a :class:`rlalgos.config.TrainConfig` can carry it: a run trains on it in any process,
and a claim of the scorecard (:mod:`rlalgos.workbook.claims`) names it. Notebook 06 trains on these
and prints their source.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from ..tasks import RewardSet, Task, correctness_reward, format_reward, get_task, make_addition_split

MODULE = __name__
CONCISE = f"{MODULE}:concise_task"
VERBOSE = f"{MODULE}:verbose_task"
TOO_HARD = f"{MODULE}:too_hard_task"
MEDIUM = f"{MODULE}:medium_task"
L_MAX = 48  # the addition task's budget in tokens; the length judge counts characters up to it
MEDIUM_MAX_TOKENS = 64  # the too-hard and medium tasks' budget (5-term problems need more room than the default 48)


def concise_reward(prompts, completions, **_) -> list[float]:
    """1 for a well-formed answer of at most 8 characters (a 'be brief' term), else 0."""
    well_formed = format_reward(prompts, completions)
    return [1.0 if ok and len(c.strip()) <= 8 else 0.0 for c, ok in zip(completions, well_formed)]


def concise_task() -> Task:
    """(a) Reward hacking: the addition task paid for a right answer *and* for a short one, equally."""
    return replace(
        get_task("addition"),
        rewards=RewardSet([("correct", correctness_reward, 1.0), ("concise", concise_reward, 1.0)]),
        max_new_tokens=L_MAX,
    )


def length_judge(prompts, completions, **_) -> list[float]:
    """A length-biased judge: the longer the answer, the higher the score (0..1). Does not check correctness."""
    return [min(len(c), L_MAX) / L_MAX for c in completions]


def verbose_task() -> Task:
    """(c) Length runaway: a judge that pays for length (correctness logged, weight 0)."""
    base = get_task("addition")
    return replace(
        base,
        rewards=RewardSet([("length_judge", length_judge, 1.0), ("correct", correctness_reward, 0.0)]),
        max_new_tokens=L_MAX,
    )


def too_hard_task() -> Task:
    """(d) Too-hard prompts: training on 5-term problems only (the test set is the default one)."""
    return replace(
        get_task("addition"), train=make_addition_split(5000, seed=11, terms=(5,)), max_new_tokens=MEDIUM_MAX_TOKENS
    )


@cache
def medium_pool(seed: int = 0, pool: int = 256, pool_g: int = 8) -> tuple[list[dict], list[float]]:
    """``pool`` candidate prompts of 3-5 terms and each one's pass rate over ``pool_g`` samples of
    the shipped base model (sampling seed ``seed``). The global random state is left as it was."""
    import torch

    from ..engine.sampler import SamplingConfig
    from ..model import load_policy
    from ..rollout import rollout

    policy, tokenizer = load_policy(None, device="cpu")
    rows = make_addition_split(pool, seed=12, terms=(3, 4, 5))
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        scored = rollout(
            policy,
            tokenizer,
            rows,
            pool_g,
            get_task("addition").rewards,
            SamplingConfig(max_new_tokens=MEDIUM_MAX_TOKENS),
            old_logprobs=False,
        )
    return rows, scored.correct.view(-1, pool_g).mean(1).tolist()


def medium_task(seed: int = 0, pool: int = 256, pool_g: int = 8) -> Task:
    """(d) The fix: train only on the pool's prompts the base model sometimes solves and sometimes
    does not (0 < pass rate < 1), where a group of answers has both right and wrong ones."""
    rows, rate = medium_pool(seed, pool, pool_g)
    medium = [row for row, p in zip(rows, rate) if 0 < p < 1] or rows
    return replace(get_task("addition"), train=medium, max_new_tokens=MEDIUM_MAX_TOKENS)


MYSTERY_ARM = "c_verbose"
"""The arm whose metrics notebook 06's blind-diagnosis exercise shows without its label (kept here, out of the learner's sight)."""
