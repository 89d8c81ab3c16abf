"""The claims scorecard as code: every claim, its regime, its arms, its published numbers.

Each :class:`Claim` says what is claimed (and which paper it comes from), how it is
measured here (the task, the base model, the settings every arm shares, the arms as
algorithm specs, the metrics with the direction the claim expects, the seeds), and
where its published numbers come from (the notebook cell whose committed output
printed them, and the run folders that notebook writes). The verdict rule is one for
all: *shown* when the paired 95% t-interval of (arm - base) over seeds
(:func:`rlalgos.workbook.stats.paired_effect`) excludes 0 in the expected direction,
*opposite* when it excludes 0 the other way, *within noise* otherwise. Claims of kind
``exact`` have no arms: the pytest test named by ``test`` proves them.

The parts:

* :mod:`.model`: what a claim is, the verdict rule, the record's shape, the checkout :class:`Layout`;
* :mod:`.data`: the claims themselves (their experiments are :mod:`rlalgos.workbook.experiments`');
* :mod:`.scrape`: reading the published numbers from the notebooks' committed outputs into
  ``docs/claims/<id>.json`` (:func:`write_published`, run by ``python docs/extract_claims.py``);
* :mod:`.measure`: measuring a claim again (:func:`run_claim`, ``rlalgos claims run ID``);
* :mod:`.render`: ``docs/claims.md`` and README.md's summary from the records (:func:`report`,
  ``rlalgos claims report``) and :func:`list_claims` (``rlalgos claims list``).

The package reads and writes a repository checkout's files only where its caller names the checkout
(a root, or the files themselves): it works the same from a wheel.
"""

from .data import BY_ID, CLAIMS, get_claim
from .measure import run_claim, run_test
from .model import KINDS, MIN_SEEDS, Claim, Expect, Layout, Quote, claim_verdict, directed_verdict, parse_seeds
from .render import list_claims, load_published, readme_with_block, render_page, render_readme_block, report
from .scrape import cell_outputs, effect_lines_in, extract_published, write_published

__all__ = [
    "BY_ID",
    "CLAIMS",
    "KINDS",
    "MIN_SEEDS",
    "Claim",
    "Expect",
    "Layout",
    "Quote",
    "cell_outputs",
    "claim_verdict",
    "directed_verdict",
    "effect_lines_in",
    "extract_published",
    "get_claim",
    "list_claims",
    "load_published",
    "parse_seeds",
    "readme_with_block",
    "render_page",
    "render_readme_block",
    "report",
    "run_claim",
    "run_test",
    "write_published",
]
