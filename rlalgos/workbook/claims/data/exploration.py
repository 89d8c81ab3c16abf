"""Notebooks 09's and 09b's claims: entropy, exploration and pass@k in the trap regime built for them."""

from __future__ import annotations

from ...measures import BASE_MODEL
from ...experiments import TRAP_ABLATION_ARMS, TRAP_ARM_TRAIN, TRAP_ARMS, TRAP_PASSK_SEEDS
from .common import CUI, DAPO, nb09
from ..model import Claim, Expect, Quote

NB09B = "09b_pass_at_k_and_dapo.ipynb"

CLAIMS = (
    Claim(
        "entropy-covariance",
        "The entropy change of a policy-gradient step is minus the covariance of log-prob and advantage",
        CUI,
        "mechanism",
        "exact on the toy; on the tiny model only the pooled slope has the predicted sign (-0.0911, 95% CI -0.1101..-0.0720 over "
        "1,440 steps of 48 runs, the steps treated as independent, which steps of one run are not), and weakly: the covariance "
        "explains little of the entropy change (correlation -0.240), and the steps whose entropy change has the predicted sign "
        "(66.0%) are no more than independent signs would give (base rate 65.0%), so the sign agreement is no evidence for the law "
        "by itself; each step is 8 Adam updates on shared weights, and how much of the weakening that causes is not tested",
        stated="slope's sign as predicted, weakly; per-step sign at its base rate (a fit, no paired arms)",
        **{
            **nb09(*(a for a in TRAP_ARMS if a != "vanilla")),
            "figure": "notebooks/09_exploration.ipynb#cell-14",
        },
        fit="entropy_fit",
        quotes=(
            Quote("1440 steps from 48 runs: correlation -0.240, slope -0.0911 (95% CI -0.1101..-0.0720)"),
            Quote("steps whose entropy change has the sign the law predicts: 66.0% (base rate 65.0%)"),
            Quote("reward the likely token 0 +0.01000        +0.52835      -0.00528     -0.00528"),
            Quote("  reward the rare token 4 +0.01000        -0.06156      +0.00062     +0.00062"),
        ),
    ),
    Claim(
        "trap-vanilla-collapse",
        "Vanilla GRPO's entropy collapses and it locks into what was rewarded first",
        DAPO,
        "end-to-end",
        "not as stated: the entropy falls by 45% (-0.183 nats, shown) but the rare strategy is found (hard-prompt scratchpad share 7.7% -> 67.3%, "
        "+59.5 points, shown; no better scratchpad shown); what collapses is the easy skill (easy accuracy -46.2 points, shown, as the direct "
        "answers broke, -56.1, shown), for reasons not tested here (one candidate: all-right easy groups have advantage 0, so nothing in the loss "
        "defends them)",
        stated="not as stated (vanilla's end against its own start, paired by seed)",
        **{**nb09(), "figure": "notebooks/09_exploration.ipynb#cell-11"},
        quotes=(
            Quote(
                "eval_entropy  vanilla - base = -0.183 (95% CI -0.226..-0.139, 6 seeds; detectable >= 0.0431) -> shown"
            ),
            Quote(
                "eval_accuracy/easy  vanilla - base = -46.2 points (95% CI -57.4..-35.0, 6 seeds; detectable >= 11.2) -> shown"
            ),
            Quote(
                "eval_scratchpad_frac/hard  vanilla - base = +59.5 points (95% CI +43.7..+75.4, 6 seeds; detectable >= 15.8) -> shown"
            ),
        ),
    ),
    Claim(
        "rl-sharpens",
        "RL sharpens: it raises pass@1, not pass@k at large k, where the base model catches up",
        "Yue et al. 2025, arXiv:2504.13837",
        "end-to-end",
        "reproduced on the default task (intervals over 32 prompts, 3 seeds' models pooled): pass@1 up beyond the noise (GRPO +10.7 points, "
        "DAPO +10.2, shown), no gain shown from k = 16 on (pass@16 -1.3 and -2.1, within noise, could see >= 3.3 and 3.1; pass@64 GRPO -1.1, "
        "within noise, DAPO -2.8, shown, a lead), and at k = 256 GRPO and the base model both solve all 32 prompts (untestable at the "
        "ceiling; DAPO -1.0, within noise); in the trap every trained model ends below the base model at every k (pass@256: 7 of 8 arms "
        "shown below it, KL-Cov within noise) (docs/bench/claims_seeds_20_21_22/rl-sharpens.json: fresh seeds 20-22 gave the same on the "
        "default task)",
        notebook=NB09B,
        figure=f"notebooks/{NB09B}#cell-8",
        fit="passk",
        task="addition",
        run_dir="runs/exploration_default/{arm}_s{seed}",
        shared=dict(steps=30, eval_every=0, eval_prompts=200, eval_samples=4, save_every=0),
        arms={
            "grpo": ("grpo", {}),
            "dapo": ("dapo", {}),
        },  # notebook 09b's default-task runs (32 prompts x 8 per step, each algorithm's defaults)
        names={"grpo": "default task: grpo", "dapo": "default task: dapo"},  # as notebook 09b's verdict lines name them
        quotes=(
            Quote(
                "pass@1  default task: grpo - the base model = +10.7 points (95% CI +6.8..+14.6, 32 prompts; detectable >= 3.9) -> shown",
                arm="grpo",
                base=BASE_MODEL,
                metric="pass@1",
                direction=+1,
            ),
            Quote(
                "pass@1  default task: dapo - the base model = +10.2 points (95% CI +6.7..+13.8, 32 prompts; detectable >= 3.5) -> shown",
                arm="dapo",
                base=BASE_MODEL,
                metric="pass@1",
                direction=+1,
            ),
            Quote(
                "pass@256  vanilla - base = -18.8 points (95% CI -30.5..-7.0, 32 prompts; detectable >= 11.7) -> shown"
            ),
        ),
    ),
    Claim(
        "clip-higher-trap",
        "Clip-higher grows the rare strategy in a regime built for exploration",
        DAPO,
        "end-to-end",
        "the opposite at this scale: clip-higher ended with a smaller share of scratchpads on hard prompts than vanilla (-27.5 points, shown; "
        "with 42 intervals at 95% a lead until another sweep repeats it); the upper clip cut under 1% of the rare rewarded tokens it is for "
        "(0.76% under vanilla, 0.82% under clip-higher; means, no interval), so there was little to free",
        **nb09("clip_higher"),
        expects=(
            Expect("clip_higher", "eval_scratchpad_frac/hard", +1, cell=17, tail=1),
            Expect("clip_higher", "eval_accuracy/hard", +1, cell=17, tail=1, headline=False),
            Expect("clip_higher", "eval_entropy", +1, cell=17, tail=1, headline=False),
        ),
    ),
    Claim(
        "clip-cov-kl-cov",
        "Clip-Cov and KL-Cov keep the entropy up by acting on the highest-covariance tokens",
        CUI,
        "end-to-end",
        "exact against verl; end to end not shown: neither kept the entropy above vanilla's beyond the noise of 6 seeds (could see >= 0.0532 "
        "and >= 0.0693 nats), though their masks acted (on 0.0073 and 0.0433 of the tokens); KL-Cov lowered pass@4 (-4.5 points, shown, a lead)",
        test="tests/test_loss_modes.py::test_loss_and_gradient_equal_verl",
        **nb09("clip_cov", "kl_cov"),
        expects=(
            Expect("clip_cov", "eval_entropy", +1, cell=17, tail=1),
            Expect("kl_cov", "eval_entropy", +1, cell=17, tail=1),
            Expect("clip_cov", "eval_accuracy/hard", +1, cell=17, tail=1, headline=False),
            Expect("kl_cov", "eval_pass@4", +1, cell=17, tail=1, headline=False),
        ),
    ),
    Claim(
        "entropy-bonus-trap",
        "An entropy bonus, the temperature monitor or a KL term preserves exploration",
        DAPO,
        "end-to-end",
        "not shown: none kept the entropy above vanilla's beyond the noise (could see >= 0.0362 to 0.0632 nats), though the monitor fired in "
        "every seed and the bonus was on at every step after the first; the temperature monitor lowered the hard-prompt scratchpad share "
        "(-22.7 points), test accuracy (-3.5) and pass@4 (-7.4), all shown, leads until another sweep repeats them",
        **nb09("entropy_bonus", "temperature", "kl"),
        expects=(
            Expect("entropy_bonus", "eval_entropy", +1, cell=17, tail=1),
            Expect("temperature", "eval_entropy", +1, cell=17, tail=1),
            Expect("kl", "eval_entropy", +1, cell=17, tail=1),
            Expect("entropy_bonus", "eval_pass@4", +1, cell=17, tail=1, headline=False),
            Expect("temperature", "eval_scratchpad_frac/hard", +1, cell=17, tail=1, headline=False),
            Expect("temperature", "eval_accuracy", +1, cell=17, tail=1, headline=False),
        ),
    ),
    Claim(
        "dapo-trap",
        "Improved GRPO beats vanilla in a regime built for exploration",
        DAPO,
        "end-to-end",
        "shown over 6 seeds: improved GRPO is ahead on test accuracy (+9.7 points), hard-prompt accuracy (+6.5) and pass@4 (+11.1) with a lower "
        "entropy (-0.0576 nats), all shown, yet still ends below the base model (-5.6 points, shown); the arm was added after a 3-seed sweep had "
        "been read, and its dynamic sampling draws extra answers (notebook 09b: on seeds 0-2 it is within noise of vanilla)",
        **nb09("dapo"),
        expects=(
            Expect("dapo", "eval_accuracy", +1, cell=17, tail=1),
            Expect("dapo", "eval_pass@4", +1, cell=17, tail=1, headline=False),
            Expect("dapo", "eval_accuracy/hard", +1, cell=17, tail=1, headline=False),
            Expect("dapo", "eval_entropy", -1, cell=17, tail=1, headline=False),
        ),
    ),
    Claim(
        "dynamic-sampling-carries-dapo",
        "In the exploration regime the switch that carries DAPO's gain is dynamic sampling",
        DAPO,
        "end-to-end",
        "dynamic sampling alone lifts vanilla's test accuracy (+10.3 points, shown, drawing 2.46x vanilla's answers; not beyond the noise on "
        "the 32 pass@k prompts) and taking it out of DAPO raises the entropy (+0.0266 nats, shown, a lead), "
        "but DAPO is not told apart from vanilla given its sample count (-4.0 points, within noise, could see 9.3 points, 3 seeds), so better "
        "groups and more samples are not separated; inside DAPO it lowered pass@256 (taking it out: +11.5 points over 32 prompts, shown) "
        "with no pass@1 gain shown: lost reach, not sharpening",
        **{
            **nb09("dapo", *TRAP_ABLATION_ARMS),
            "notebook": NB09B,
            "figure": f"notebooks/{NB09B}#cell-16",
            "seeds": TRAP_PASSK_SEEDS,
            "train": TRAP_ARM_TRAIN,
        },
        expects=(
            Expect("dynamic_only", "eval_accuracy", +1, cell=15, tail=1),
            Expect("dapo_no_dynamic", "eval_accuracy", -1, cell=15, tail=1, base="dapo"),
            Expect("dynamic_only", "eval_pass@4", +1, cell=15, tail=1, headline=False),
            Expect("dynamic_only", "eval_entropy", -1, cell=15, tail=1, headline=False),
            Expect("vanilla_36_prompts", "eval_accuracy", +1, cell=15, tail=1, headline=False),
            Expect("dapo", "eval_accuracy", +1, cell=15, tail=1, base="vanilla_36_prompts"),
        ),
    ),
)
