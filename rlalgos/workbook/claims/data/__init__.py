"""Every claim of the scorecard, in the scorecard's order (each module holds the claims of a few notebooks)."""

from __future__ import annotations

from ..model import Claim
from . import beyond_dapo, dapo_tricks, engines, exploration, kl_and_dapo, troubleshooting

CLAIMS: tuple[Claim, ...] = (
    dapo_tricks.CLAIMS
    + exploration.CLAIMS
    + engines.CLAIMS
    + kl_and_dapo.CLAIMS
    + troubleshooting.CLAIMS
    + beyond_dapo.CLAIMS
)
BY_ID = {c.id: c for c in CLAIMS}


def get_claim(claim_id: str) -> Claim:
    """The claim ``claim_id``; ValueError naming `rlalgos claims list` for an unknown one."""
    if claim_id not in BY_ID:
        raise ValueError(f"unknown claim {claim_id!r}; `rlalgos claims list` shows the ids")
    return BY_ID[claim_id]
