"""Notebook 10's claims: CISPO and SAPO where the clip binds, and the rollout-trainer mismatch."""

from __future__ import annotations

from ...experiments import NB10, NB10_ARMS
from .common import MISMATCH, mm
from ..model import Claim, Expect, Quote

CLAIMS = (
    Claim(
        "cispo-sapo-exact",
        "CISPO and SAPO are what TRL's and verl's cispo / sapo compute",
        "CISPO (MiniMax-M1, arXiv:2506.13585); SAPO (arXiv:2511.20347)",
        "exact",
        "exact to rtol 1e-6; end to end: cispo-push and sapo-push",
        test="tests/test_loss_modes.py::test_loss_and_gradient_equal_verl",
    ),
    Claim(
        "cispo-push",
        "Keeping the gradient of every token the hard clip silences (CISPO) learns better where the clip binds",
        "CISPO (MiniMax-M1, arXiv:2506.13585)",
        "end-to-end",
        "opposite: where the clip binds CISPO ended 9.2 points below GRPO on test accuracy (shown; greedy -13.0, shown); its distance from "
        "the reference (kl +0.419, could see >= 0.554), its drift from the sampling policy (approx_kl +0.105, could see >= 0.108) and its "
        "test entropy are within noise; which of CISPO's differences cost the accuracy these runs do not separate",
        **{**NB10, "arms": {a: NB10_ARMS[a] for a in ("grpo", "cispo")}},
        expects=(
            Expect("cispo", "eval_accuracy", +1),
            Expect("cispo", "approx_kl", +1, headline=False),
            Expect("cispo", "eval_entropy", +1, headline=False),
        ),
    ),
    Claim(
        "sapo-push",
        "A soft gate on the ratio (SAPO) learns better than the hard clip where the clip binds",
        "SAPO (Gao et al. 2025, arXiv:2511.20347)",
        "end-to-end",
        "not shown: SAPO ended within noise of GRPO on accuracy (-0.2 points, could see >= 14.3: even a loss as large as CISPO's is not "
        "excluded) and on test entropy; it drifted further from the sampling policy per rollout, not less (approx_kl +0.0652, shown)",
        **{**NB10, "arms": {a: NB10_ARMS[a] for a in ("grpo", "sapo")}},
        expects=(
            Expect("sapo", "eval_accuracy", +1),
            Expect("sapo", "approx_kl", -1, headline=False),
            Expect("sapo", "eval_entropy", +1, headline=False),
        ),
    ),
    Claim(
        "bf16-mismatch",
        "Sampling in bf16 for an fp32 trainer (the engines' setup) makes training off-policy enough to change learning",
        MISMATCH,
        "end-to-end",
        "not shown at this scale: the bf16 gap is a few thousandths of a nat per token (0.0024), almost no ratio leaves [1/2, 2] (0.03% of "
        "tokens in the worst step), and accuracy is within noise (-0.4 points, could see >= 3.7: a cost up to 4.1 points stays possible)",
        **mm("bf16"),
        expects=(Expect("bf16", "eval_accuracy", -1),),
    ),
    Claim(
        "stale-sampler",
        "A sampler several updates behind the trainer (asynchronous engines) changes learning",
        MISMATCH,
        "end-to-end",
        "shown at this scale: a sampler up to three updates stale cost 3.4 points of test accuracy (CI -4.7..-2.0), though few ratios "
        "leave [1/2, 2] (0.16% of tokens, 1.51% in the worst step); its test entropy is within noise (+4.39 millinats, could see >= 7.22)",
        **mm("stale"),
        expects=(Expect("stale", "eval_accuracy", -1), Expect("stale", "eval_entropy", -1, headline=False)),
        quotes=(  # notebook 10 prints the entropy in millinats: the line `eval_entropy` no longer matches
            Quote(
                "eval_entropy (millinats)  stale - fresh = +4.39 (127 vs 123; 95% CI -2.83..+11.6, 3 seeds; detectable >= 7.22) -> within noise (could see >= 7.22)",
                arm="stale",
                metric="eval_entropy (millinats)",
                direction=-1,
                headline=False,
                pattern=r"= (?P<diff>[+-][\d.]+) \([^;]*; 95% CI (?P<lo>[+-]?[\d.]+)\.\.(?P<hi>[+-]?[\d.]+)",
            ),
        ),
    ),
    Claim(
        "rollout-correction",
        "Truncated (TIS) or masked (MIS) importance weights recover what a mismatched sampler costs",
        MISMATCH,
        "end-to-end",
        "partly, not credited: against the stale sampler (which cost 3.4 points, shown) TIS won back 2.9 points (shown, CI +0.3..+5.6) "
        "while moving most tokens' weights only slightly (it caps the 0.03% past 2), so whether it or chance did it 3 seeds do not "
        "separate; masking (it dropped the answers holding 0.70% of the tokens) is within noise (+1.0 points, could see >= 7.5)",
        **mm("stale_tis", "stale_mis", base="stale"),
        expects=(Expect("stale_tis", "eval_accuracy", +1), Expect("stale_mis", "eval_accuracy", +1)),
    ),
)
