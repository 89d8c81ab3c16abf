"""``rlalgos claims list | run ID | report``: the claims scorecard's command, its arguments and what runs them.

Like :mod:`rlalgos.tools.cli`, nothing here imports torch at import time; :mod:`rlalgos.workbook.claims`
is imported when the command runs, in the repository checkout it is run from.
"""

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Union

import tyro


@dataclass
class ClaimsList:
    """Every claim of the scorecard: id, kind, published verdict, seeds, statement."""


@dataclass
class ClaimsRun:
    """Train (or reuse the finished run folders of) one claim's arms on some seeds and print the paired table and the
    verdict next to the published one; an exact claim runs its test. The record goes to OUT_DIR/ID.json."""

    claim: tyro.conf.Positional[str]
    """The claim's id (rlalgos claims list)."""
    seeds: str = ""
    """Comma-separated seeds, e.g. 20,21,22 (default: the published ones). Fewer than 3 run with a warning: a verdict needs 3."""
    jobs: int = 0
    """Runs trained side by side; 0 = auto (one per core on CPU, as compare), 1 = one after another."""
    out_dir: str = "runs/claims"
    """Folder for the record OUT_DIR/ID.json."""
    runs_dir: str = ""
    """Train under RUNS_DIR/ID/ARM/seedK instead of the notebook's own run folders (which are reused when finished)."""
    steps: int = 0
    """A cheap look: this many steps instead of the claim's (0: the claim's; the runs are then not the published ones)."""
    prompts: int = 0
    """A cheap look: prompts per step (0: the claim's)."""
    eval_prompts: int = 0
    """A cheap look: test prompts per evaluation (0: the claim's)."""
    overwrite: bool = False
    """Replace a run folder that holds another run (never done without it)."""
    publish: bool = False
    """Write the record over docs/claims/ID.json (the published numbers) instead of OUT_DIR."""


@dataclass
class ClaimsReport:
    """Write the scorecard page and README.md's summary block from the claims' JSON records."""

    out: str = "docs/claims.md"
    """The page to write."""
    json_dir: str = "docs/claims"
    """Folder of the claims' JSON records (the source of truth)."""
    readme: str = "README.md"
    """README whose claims block to regenerate ('' = none)."""


CLAIMS_ACTIONS = {"list": ClaimsList, "run": ClaimsRun, "report": ClaimsReport}
"""``rlalgos claims ACTION``: each action's arguments."""


@dataclass
class ClaimsArgs:
    """The claims scorecard as code: rlalgos claims list | run ID | report."""

    action: Union[
        tuple(Annotated[c, tyro.conf.subcommand(name, description=c.__doc__)] for name, c in CLAIMS_ACTIONS.items())
    ]  # noqa: UP007


# --------------------------------------------------------------------------- #


def cmd_claims(args: ClaimsArgs) -> None:
    import warnings

    from ..workbook import claims

    a = args.action
    checkout = claims.Layout(Path.cwd())  # rlalgos claims runs in the repository checkout, as its defaults say
    if isinstance(a, ClaimsList):
        import pandas as pd

        with pd.option_context("display.max_colwidth", 90, "display.width", 200):
            print(claims.list_claims(checkout.json_dir).to_string())
    elif isinstance(a, ClaimsReport):
        for path in claims.report(a.out, a.json_dir, a.readme or None):
            print(f"wrote {path}")
    else:
        claims.get_claim(a.claim)  # an unknown id answers before anything else
        seeds = claims.parse_seeds(a.seeds) if a.seeds else None
        if a.jobs < 0 or min(a.steps, a.prompts, a.eval_prompts) < 0:
            raise ValueError("--jobs, --steps, --prompts and --eval-prompts must be >= 0")
        over = {
            k: v
            for k, v in (("steps", a.steps), ("prompts_per_step", a.prompts), ("eval_prompts", a.eval_prompts))
            if v
        }
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = lambda message, *_, **__: print(f"rlalgos: warning: {message}", file=sys.stderr)
            claims.run_claim(
                a.claim,
                seeds,
                jobs=a.jobs,
                out_dir=a.out_dir,
                runs_dir=a.runs_dir or None,
                overwrite=a.overwrite,
                publish=a.publish,
                root=checkout.root,
                **over,
            )
