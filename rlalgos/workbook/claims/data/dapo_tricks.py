"""Notebook 04's claims on DAPO's tricks one at a time: aggregation, zero-variance groups and dynamic
sampling, truncation and overlong shaping, clip-higher."""

from __future__ import annotations

from ...measures import BUDGET, SAMPLED, SIGNAL_ONLY
from .common import DAPO, DRGRPO, MECH, nb04
from ..model import Claim, Expect, Quote

CLAIMS = (
    Claim(
        "aggregation-long-answer",
        "Per-answer averaging (GRPO) dilutes each token of a long answer; token-level loss (DAPO) weighs every token the same",
        DAPO,
        "mechanism",
        "mechanism reproduced, but much smaller than the 6.4x in the loss weights: shared parameters and Adam's per-parameter normalisation carry most of the push to the long answer either way",
        **MECH,
        measure="aggregation",
        base="seq-mean-token-mean",
        expects=(Expect("token-mean", "dlogp_long", -1),),
        quotes=(
            Quote(
                "weight of one token of the long wrong answer / of a short wrong answer: 0.157 (seq-mean-token-mean) vs 1.000 (token-mean)"
            ),
            Quote(
                "paired difference -0.0216 (sd 0.0058, 3 seeds)",
                arm="token-mean",
                base="seq-mean-token-mean",
                metric="dlogp_long",
                direction=-1,
                pattern=r"paired difference (?P<diff>[+-]?[\d.]+) \(sd (?P<sd>[\d.]+), (?P<n>\d+) seeds\)",
            ),
        ),
    ),
    Claim(
        "token-mean-drgrpo-constant",
        "Token-mean and Dr. GRPO's sum / (B * L_max) differ only by a constant (Adam is invariant to it)",
        DRGRPO,
        "exact",
        "exact with Adam; with SGD the constant is a learning-rate change",
        **MECH,
        test="tests/test_core.py::test_aggregate_loss_modes_agree_on_full_equal_lengths",
        quotes=(Quote("token-mean vs Dr. GRPO's constant: long -0.1466 vs -0.1466, short -0.0093 vs -0.0093"),),
    ),
    Claim(
        "token-mean-learning",
        "Token-level vs per-answer loss changes learning",
        DAPO,
        "end-to-end",
        "not at this scale: the longest problems (5-6 terms) are all-wrong groups with advantage 0, so there is little length to reweight",
        **nb04("token_mean", cell=22),
        expects=(
            Expect("token_mean", "eval_accuracy", +1, cell=22),
            Expect("token_mean", "eval_completion_len", +1, headline=False, cell=22),
            Expect("token_mean", "eval_entropy", +1, headline=False, cell=22),
        ),
    ),
    Claim(
        "zero-variance-no-signal",
        "Zero-variance groups carry no signal; dynamic sampling keeps the batch full of signal",
        DAPO,
        "mechanism",
        "reproduced: the signal is missing, exactly, in every all-equal group",
        stated="reproduced (a census, no interval)",
        **{**MECH, "figure": "notebooks/04b_dapo_where_it_helps.ipynb#cell-18"},
        measure="signal",
        base=SIGNAL_ONLY,
        expects=(Expect(SAMPLED, "signal_frac", -1),),
        quotes=(Quote("groups that carry signal: 0.46 (per seed 0.52, 0.45, 0.42; 3 seeds x 64 prompts x 8)"),),
    ),
    Claim(
        "dynamic-sampling-keeps-easy",
        "Dynamic sampling biases training towards middling difficulty",
        DAPO,
        "mechanism",
        "reproduced: what dynamic sampling keeps is the easy half; the all-wrong hard problems are never trained on",
        stated="reproduced (a census, no interval)",
        **{**MECH, "figure": "notebooks/04b_dapo_where_it_helps.ipynb#cell-18"},
        measure="signal",
        base=SAMPLED,
        expects=(Expect(SIGNAL_ONLY, "mean_terms", -1),),
        quotes=(
            Quote("5            46      0.002      0.000      0.978         0.022"),
            Quote("5                          0.240                        0.011"),
            Quote("2                          0.203                        0.416"),
        ),
    ),
    Claim(
        "dynamic-sampling-speed",
        "Dynamic sampling learns faster per step",
        DAPO,
        "end-to-end",
        "not shown for accuracy (the closest call in the notebook; behind per generated answer); shown: it sharpens the policy faster",
        **nb04("dynamic_sampling", cell=18),
        expects=(
            Expect("dynamic_sampling", "eval_accuracy", +1, cell=18),
            Expect("dynamic_sampling", "eval_entropy", -1, headline=False, cell=18),
        ),
        quotes=(
            Quote(
                "groups sampled per step: 44.2 for a batch of 16 (2.76x the sampling); steps left short of a full batch: 0.12"
            ),
        ),
    ),
    Claim(
        "truncated-not-wrong",
        "A truncated answer is not necessarily a wrong one (why overlong filtering)",
        DAPO,
        "mechanism",
        "partial: only at one budget does the filter mask answers that are right",
        stated="partial (a census, no interval)",
        **{**MECH, "figure": "notebooks/04b_dapo_where_it_helps.ipynb#cell-12"},
        measure="truncation",
        base="if truncated meant wrong",
        expects=(Expect(f"truncated at {BUDGET} tokens", "truncated_correct_frac", +1),),
        quotes=(
            Quote("24              0.495  0.024                  0.170  0.017"),
            Quote("28              0.362  0.018                  0.000  0.000"),
        ),
    ),
    Claim(
        "overlong-shaping",
        "Overlong shaping changes learning under truncation",
        DAPO,
        "end-to-end",
        "not at this scale (at 64 tokens nothing reaches the buffer)",
        **nb04("overlong", cell=24),
        expects=(
            Expect("overlong", "eval_accuracy", +1),
            Expect("overlong", "eval_completion_len", -1, headline=False),
        ),
        quotes=(
            Quote("mean overlong penalty per answer: -0.0003; steps with any penalty: 0.050; truncated share: 0.0003"),
        ),
    ),
    Claim(
        "clip-higher-entropy",
        "Clip-higher slows entropy collapse",
        DAPO,
        "end-to-end",
        "not at this scale: the upper clip almost never binds; every token of a right answer here is a high-probability token",
        **nb04("clip_higher", cell=20),
        expects=(
            Expect("clip_higher", "eval_entropy", +1, cell=20),
            Expect("clip_higher", "eval_accuracy", +1, headline=False, cell=20),
        ),
        quotes=(
            Quote("grpo         clip_frac 0.0024 (high 0.0006, low 0.0018)"),
            Quote("clip_higher  clip_frac 0.0024 (high 0.0004, low 0.0020)"),
        ),
    ),
)
