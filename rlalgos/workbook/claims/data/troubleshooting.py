"""Notebook 06's failures (reward hacking, a learning rate too large, length runaway, too-hard
prompts, entropy collapse) and notebook 05's cost of the critic."""

from __future__ import annotations

from ...troubleshooting import CONCISE, MEDIUM, TOO_HARD, VERBOSE  # notebook 06's tasks, by name
from ...experiments import GRPO_SWITCHES, NB06, NB06_MONITOR_THRESHOLD, VANILLA_GRPO
from .common import DAPO, GRPO_PAPER, PPO_PAPER
from ..model import Claim, Expect, Quote

OVERLONG_FIX = {
    **{k: VANILLA_GRPO[k] for k in ("clip_high", "loss_agg", "dynamic_sampling", "kl_coef")},
    **dict(lr=3e-4, overlong_penalty=True, overlong_buffer=16, overlong_filter=True),
}  # vanilla GRPO with DAPO's overlong shaping, in notebook 06's order (the published record prints the options)

CLAIMS = (
    Claim(
        "reward-hacking",
        "A reward that pays for something other than correctness gets gamed: reward up, accuracy down",
        "reward over-optimisation (Gao et al. 2022, arXiv:2210.10760)",
        "end-to-end",
        "reproduced (accuracy -34.4 points, shown; scratchpad share -69.5, shown), and again on fresh seeds 20-22 (accuracy -0.350, CI "
        "-0.362..-0.338; the KL arm +0.068, CI +0.017..+0.118); a KL term slows the slide but does not stop it (beta 0.5: +6.4 points over "
        "the gamed run, still -28.0 against the baseline, both shown)",
        **NB06,
        figure="notebooks/06_troubleshooting.ipynb#cell-10",
        arms={"baseline": ("grpo", {}), "a_concise": ("grpo", {}), "a_concise_kl": ("grpo", {"kl_coef": 0.5})},
        train={"a_concise": {"task": CONCISE}, "a_concise_kl": {"task": CONCISE}},
        expects=(
            Expect("a_concise", "reward_mean", +1),
            Expect("a_concise", "eval_accuracy", -1),
            Expect("a_concise_kl", "eval_accuracy", +1, base="a_concise", headline=False),
        ),
    ),
    Claim(
        "lr-collapse",
        "Too large a learning rate collapses training",
        PPO_PAPER,
        "end-to-end",
        "reproduced",
        **NB06,
        figure="notebooks/06_troubleshooting.ipynb#cell-12",
        arms={"baseline": ("grpo", {}), "b_lr3e-3": ("grpo", {"lr": 3e-3})},
        train={
            "b_lr3e-3": {"stop_on_collapse": False}
        },  # the whole collapse is the lesson: the run doctor would stop it
        expects=(Expect("b_lr3e-3", "eval_accuracy", -1), Expect("b_lr3e-3", "kl", +1, headline=False)),
    ),
    Claim(
        "length-runaway",
        "A length-biased reward makes length run away; overlong shaping holds it",
        DAPO,
        "end-to-end",
        "the runaway reproduced on seeds 0-2 (length +11.4 tokens, cut-off answers +33.8 points, both shown), the hold not shown: overlong "
        "shaping cut the cut-off answers (-33.4 points, shown) but its length (-9.65 tokens, could see >= 10) and its accuracy (+14.6 points, "
        "could see >= 34.4; still -35.9 against the baseline, shown) are within noise, and no shaping makes a reward that ignores correctness "
        "teach it; on fresh seeds 20-22 length grew in all three runs but by +3 to +24 tokens (one ran away to 80% truncated, one barely "
        "moved), so the interval includes 0: within noise there",
        **NB06,
        figure="notebooks/06_troubleshooting.ipynb#cell-14",
        arms={
            "baseline": ("grpo", {}),
            "c_verbose": ("grpo", {"lr": 3e-4}),
            "c_verbose_overlong": ("dapo", OVERLONG_FIX),
        },
        train={"c_verbose": {"task": VERBOSE}, "c_verbose_overlong": {"task": VERBOSE}},
        expects=(
            Expect("c_verbose", "completion_len", +1),
            Expect("c_verbose_overlong", "completion_len", -1, base="c_verbose"),
            Expect("c_verbose_overlong", "eval_accuracy", +1, base="c_verbose", headline=False),
        ),
    ),
    Claim(
        "too-hard-prompts",
        "Too-hard prompts give all-equal groups and no gradient; medium-difficulty prompts restore the signal",
        DAPO,
        "end-to-end",
        "reproduced, and again on fresh seeds 20-22 (all-equal share +0.59 on too-hard prompts, -0.77 and accuracy +0.110 with the medium pool)",
        **NB06,
        figure="notebooks/06_troubleshooting.ipynb#cell-18",
        arms={"baseline": ("grpo", {}), "d_too_hard": ("grpo", {}), "d_medium": ("grpo", {})},
        train={"d_too_hard": {"task": TOO_HARD}, "d_medium": {"task": MEDIUM}},
        expects=(
            Expect("d_too_hard", "zero_std_frac", +1),
            Expect("d_medium", "zero_std_frac", -1, base="d_too_hard"),
            Expect("d_medium", "eval_accuracy", +1, base="d_too_hard", headline=False),
        ),
    ),
    Claim(
        "entropy-monitor",
        "A hard push (no KL, lr 2e-4, 4 minibatches) collapses entropy; an entropy monitor fixes it",
        DAPO,
        "end-to-end",
        "partial: the push's accuracy cost reproduces (-9.5 points, shown; pass@4 -14.0, shown), its entropy drop does not (-0.00795 nats, "
        "within noise, could see >= 0.0144: no collapse shown), and the monitor's fix is not shown (test entropy -0.00385 against the push, "
        "could see >= 0.00664; accuracy +3.3 points, could see >= 10.9); fresh seeds 20-22 gave the same (the accuracy cost again, -0.100, "
        "CI -0.187..-0.013; the entropy drop within noise, -0.006, CI -0.020..+0.009; the monitor within noise of the push, -0.0003, CI "
        "-0.013..+0.012)",
        **NB06,
        figure="notebooks/06_troubleshooting.ipynb#cell-20",
        arms={
            "baseline": ("grpo", {}),
            "e_sharpen": ("grpo", {"lr": 2e-4, "kl_coef": 0.0, "minibatches": 4}),
            "e_monitor": (
                "dapo",
                {
                    **GRPO_SWITCHES,
                    "entropy_threshold": NB06_MONITOR_THRESHOLD,
                    "entropy_action": "temperature",
                    "temperature_step": 0.1,
                    "max_temperature": 1.5,
                    "lr": 2e-4,
                    "kl_coef": 0.0,
                    "minibatches": 4,
                },
            ),
        },
        expects=(
            Expect("e_sharpen", "eval_entropy", -1),
            Expect("e_monitor", "eval_entropy", +1, base="e_sharpen"),
            Expect("e_sharpen", "eval_accuracy", -1, headline=False),
        ),
    ),
    Claim(
        "critic-cost",
        "Dropping the critic saves memory and time",
        GRPO_PAPER,
        "end-to-end",
        "reproduced (a cost, deterministic)",
        stated="reproduced (a cost, measured)",
        notebook="05_side_by_side.ipynb",
        figure="notebooks/05_side_by_side.ipynb#cell-11",
        task="addition",
        base="grpo",
        run_dir="runs/nb05_{arm}_s{seed}",
        shared=dict(steps=40, prompts_per_step=16, group_size=8, eval_prompts=100, eval_samples=4, eval_every=5),
        arms={"grpo": ("grpo", {}), "ppo": ("ppo", {})},
        expects=(Expect("ppo", "step_seconds", +1, tail=40),),
        quotes=(
            Quote("x GRPO                      1.005     4.146     1.000     1.420"),
            Quote("MB weights+grads+AdamW (fp32)      13.2     29.7     16.5     13.2"),
        ),
    ),
)
