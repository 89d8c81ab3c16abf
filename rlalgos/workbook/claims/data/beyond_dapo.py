"""The reward model (notebook 07), GRPO's successors (notebook 08) and where reasoning comes from
(notebooks 12 and 13)."""

from __future__ import annotations

from ...experiments import NB07, NB08, NB08_ARMS, NB08_TRAIN
from .common import DRGRPO, GANDHI, emergence
from ..model import Claim, Expect, Quote

CLAIMS = (
    Claim(
        "reward-model-overoptimised",
        "A learned reward model gets over-optimised; KL and a mixed reward hold it",
        "Gao et al. 2022, arXiv:2210.10760",
        "end-to-end",
        "reproduced: at lr 3e-4 the rule alone lifts accuracy (+6.1 points, shown) while the reward model alone sinks it (-36.3, shown) as "
        "its proxy ends above that of the control, which never trains on it (+0.759, shown); KL and a mixed reward keep it far above rm only "
        "(+20.7 and +28.5 points, shown) but hold neither the start (rm + KL -15.6, shown; rm + rule -7.8, within noise, could see >= 9.8) "
        "nor the rule-only arm (-21.7 and -13.9, shown)",
        **NB07,
        expects=(Expect("rm_KL", "eval_accuracy", +1), Expect("rm_rule", "eval_accuracy", +1)),
        quotes=(Quote("rm only    proxy +0.268 -> +1.787   eval accuracy 0.384 -> 0.021   kl end 0.967"),),
    ),
    Claim(
        "normalisation-no-signal",
        "Normalisation amplifies but cannot create signal",
        DRGRPO,
        "exact",
        "exact: an all-equal group has advantage 0 with or without the std division",
        notebook="04_improved_grpo.ipynb",
        test="tests/test_core.py::test_group_advantages_all_equal_and_group_of_one",
    ),
    Claim(
        "gspo-clip",
        "GSPO's sequence-level clip acts on far more tokens than GRPO's token clip, without hurting learning",
        "GSPO (Zheng et al. 2025, arXiv:2507.18071)",
        "end-to-end",
        "clip: reproduced (on 0.235 of tokens against 0.002, shown); accuracy: within noise (-0.2 points, could see >= 7.6: a harm up to "
        "7.8 points stays open)",
        **{
            **NB08,
            "figure": "notebooks/08_after_dapo.ipynb#cell-16",
            "arms": {a: NB08_ARMS[a] for a in ("grpo", "gspo")},
        },
        expects=(Expect("gspo", "clip_frac", +1), Expect("gspo", "eval_accuracy", +1, headline=False)),
    ),
    Claim(
        "drgrpo-length",
        "Dr. GRPO: per-answer normalisation lets wrong answers grow long",
        DRGRPO,
        "end-to-end",
        "not shown at this scale: on the default task Dr. GRPO's wrong answers end 1.2 tokens shorter, within noise (could see >= 2.7)",
        **{
            **NB08,
            "figure": "notebooks/08_after_dapo.ipynb#cell-19",
            "arms": {a: NB08_ARMS[a] for a in ("grpo", "drgrpo")},
        },
        expects=(
            Expect("drgrpo", "completion_len_wrong", -1),
            Expect("drgrpo", "eval_completion_len", -1, headline=False),
        ),
    ),
    Claim(
        "dual-clip",
        "Dual clip bounds the loss of negative-advantage tokens whose ratio runs far up",
        "Dual-clip PPO (Ye et al. 2020, arXiv:1912.09729)",
        "end-to-end",
        "mechanism exact (tests); rare here: even under this push the bound held 0.061% of tokens on average (0.44% in the worst step), "
        "and accuracy is within noise (+0.8 points, could see >= 9.3)",
        **{
            **NB08,
            "base": "grpo_push",
            "figure": "notebooks/08_after_dapo.ipynb#cell-25",
            "shared": {**NB08["shared"], **NB08_TRAIN["grpo_push"]},  # both arms are the push's
            "arms": {a: NB08_ARMS[a] for a in ("grpo_push", "dualclip_push")},
        },
        expects=(
            Expect("dualclip_push", "eval_accuracy", +1),
            Expect("dualclip_push", "approx_kl", -1, headline=False),
        ),
        quotes=(Quote("dual clip in force on 0.06136% of tokens on average (max over steps 0.43661%)"),),
    ),
    Claim(
        "rl-needs-competence",
        "RL needs a strategy that works: from the same 10% share, GRPO spreads an incompetent scratchpad less than a competent one",
        GANDHI,
        "end-to-end",
        "shown, but not the stall Gandhi et al. describe: the incompetent scratchpad spread too (0.11 -> 0.88), only less (-11.3 points against the competent one's 0.99) and to an accuracy 27.7 points lower; it was still a little better than the direct answer, and RL partly repaired its sums (+12.8 points)",
        **emergence("rare0.1", "incompetent"),
        base="rare0.1",
        figure="notebooks/12_where_reasoning_comes_from.ipynb",
        names={"rare0.1": "rare 0.1"},
        expects=(
            Expect("incompetent", "eval_scratchpad_frac", -1, tail=1),
            Expect("incompetent", "eval_accuracy", -1, tail=1, headline=False),
        ),
    ),
    Claim(
        "rl-does-not-invent",
        "RL does not spread a strategy that sampling never finds",
        "Yue et al. 2025, arXiv:2504.13837; " + GANDHI,
        "end-to-end",
        "reproduced: from a share of 4e-05 no scratchpad answer spread in 40 steps (share 0 in every seed, -99.1 points against the 1% start, which took over in every seed); accuracy moved -0.3 points (could see >= 0.7)",
        **emergence("rare0.01", "absent"),
        base="rare0.01",
        figure="notebooks/12_where_reasoning_comes_from.ipynb",
        names={"rare0.01": "rare 0.01"},
        expects=(Expect("absent", "eval_scratchpad_frac", -1, tail=1),),
    ),
    Claim(
        "priming-lifts-rl",
        "Priming an incompetent model with a few hundred reasoning traces makes RL work",
        GANDHI,
        "end-to-end",
        "partly: primed ends 28.6 points above incompetent (shown), but RL's own gain from the primed start is no different from incompetent's (+1.2 points, could see >= 16.7): the priming did most of the work by raising the share to 0.81",
        **emergence("incompetent", "primed"),
        base="incompetent",
        figure="notebooks/12_where_reasoning_comes_from.ipynb",
        expects=(
            Expect("primed", "eval_accuracy", +1, tail=1, headline=False),
            Expect("primed", "eval_scratchpad_frac", +1, tail=1, headline=False),
        ),
        quotes=(  # RL's own gain (step 40 - step 0), primed against incompetent, is the headline; `claims run` re-checks the ends
            Quote(
                "eval_accuracy_gain  primed - incompetent = +1.2 points (95% CI -15.6..+17.9, 3 seeds; detectable >= 16.7) -> within noise (could see >= 16.7 points)",
                arm="primed",
                metric="eval_accuracy_gain (points)",
                direction=+1,
                base="incompetent",
            ),
        ),
    ),
    Claim(
        "priming-wrong-traces",
        "... and traces with the right structure but wrong arithmetic prime it too",
        GANDHI,
        "end-to-end",
        "reproduced in miniature: traces with wrong sums primed the choice (share 0.81) and RL then gained 20.5 points more than from incompetent (shown), to 0.388; the arithmetic it recovered was latent in the model",
        **emergence("incompetent", "primed_wrong"),
        base="incompetent",
        figure="notebooks/12_where_reasoning_comes_from.ipynb",
        expects=(Expect("primed_wrong", "eval_accuracy", +1, tail=1, headline=False),),
        quotes=(
            Quote(
                "eval_accuracy_gain  primed_wrong - incompetent = +20.5 points (95% CI +10.7..+30.3, 3 seeds; detectable >= 9.8) -> shown",
                arm="primed_wrong",
                metric="eval_accuracy_gain (points)",
                direction=+1,
                base="incompetent",
            ),
        ),
    ),
    Claim(
        "ei-entropy",
        "Expert iteration matches GRPO's accuracy but collapses entropy faster (the negatives help exploration)",
        "Xiong et al. 2025, arXiv:2504.11343",
        "end-to-end",
        "not from the shipped model (test entropy -0.002 nats, within noise, could see >= 0.014); from a rare strategy (3% of answers) expert iteration's entropy ended 0.006 nats lower (shown, about 5%) at GRPO's accuracy (+0.5 points, within noise, could see >= 2.8)",
        **{**emergence("grpo_default", "ei_default", "grpo", "ei"), "notebook": "13_expert_iteration.ipynb"},
        base="grpo_default",
        figure="notebooks/13_expert_iteration.ipynb",
        names={
            "grpo_default": "grpo (shipped)",
            "ei_default": "ei (shipped)",
            "grpo": "grpo (rare 0.03)",
            "ei": "ei (rare 0.03)",
        },
        expects=(
            Expect("ei_default", "eval_entropy", -1, tail=1),
            Expect("ei_default", "eval_accuracy", +1, tail=1, headline=False),
            Expect("ei", "eval_entropy", -1, tail=1, base="grpo", headline=False),
            Expect("ei", "eval_accuracy", +1, tail=1, base="grpo", headline=False),
        ),
    ),
    Claim(
        "rloo-matches-grpo",
        "RLOO (REINFORCE + leave-one-out) matches GRPO",
        "RLOO (Ahmadian et al. 2024, arXiv:2402.14740)",
        "end-to-end",
        "within noise on accuracy in this run: RLOO ended 7.1 points below GRPO (CI -14.9..+0.8, could see >= 7.9), so neither a cost "
        "nor its absence is shown (an earlier run had -7.4, shown); its KL and test entropy are within noise too, and the preset changes "
        "four things at once, so even a shown gap would belong to the preset, not to the leave-one-out baseline",
        **{
            **NB08,
            "figure": "notebooks/08_after_dapo.ipynb#cell-22",
            "arms": {a: NB08_ARMS[a] for a in ("grpo", "rloo")},
        },
        expects=(
            Expect("rloo", "eval_accuracy", +1),
            Expect("rloo", "kl", +1, headline=False),
            Expect("rloo", "eval_entropy", -1, headline=False),
        ),
    ),
)
