"""Notebook 10's claims: CISPO and SAPO where the clip binds, and the rollout-trainer mismatch."""

from __future__ import annotations

from ...experiments import NB10, NB10_ARMS
from .common import MISMATCH, mm
from ..model import Claim, Expect

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
        "opposite: where the clip binds CISPO ended 8.7 points below GRPO (shown) and further from the reference (KL +0.548, shown); its larger drift from the sampling policy is within noise (could see >= 0.341)",
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
        "not shown: SAPO ended within noise of GRPO on accuracy (-0.7 points, could see >= 4.8), drift and entropy",
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
        "not at this scale: the bf16 gap is a few thousandths of a nat per token, almost no ratio leaves [1/2, 2] (0.03% of tokens in the worst step), and accuracy stays within noise (could see >= 3.1 points)",
        **mm("bf16"),
        expects=(Expect("bf16", "eval_accuracy", -1),),
    ),
    Claim(
        "stale-sampler",
        "A sampler several updates behind the trainer (asynchronous engines) changes learning",
        MISMATCH,
        "end-to-end",
        "not at this scale: even three updates stale, few ratios pass 2 and accuracy stays within the noise",
        **mm("stale"),
        expects=(Expect("stale", "eval_accuracy", -1), Expect("stale", "eval_entropy", -1, headline=False)),
    ),
    Claim(
        "rollout-correction",
        "Truncated (TIS) or masked (MIS) importance weights recover what a mismatched sampler costs",
        MISMATCH,
        "end-to-end",
        "not at this scale: both act as designed (TIS truncates a few tokens, masking drops a few answers), with nothing to recover",
        **mm("stale_tis", "stale_mis", base="stale"),
        expects=(Expect("stale_tis", "eval_accuracy", +1), Expect("stale_mis", "eval_accuracy", +1)),
    ),
)
