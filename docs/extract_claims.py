"""Write docs/claims/<id>.json for every claim of rlalgos/workbook/claims/, from the
notebooks' committed outputs (and the committed docs for the benchmark rows), then
regenerate docs/claims.md, README.md's summary and docs/what_matters.md from them.

    python docs/extract_claims.py            # all claims
    python docs/extract_claims.py dapo-trap  # one
"""

import sys
from pathlib import Path

from rlalgos.workbook.claims import Layout, report, write_published
from rlalgos.workbook.matters_page import write_page

CHECKOUT = Layout(Path(__file__).resolve().parents[1])  # this repository: its notebooks, docs and README

if __name__ == "__main__":
    for path in write_published(CHECKOUT.root, ids=sys.argv[1:] or None):
        print(f"wrote {path}")
    for path in report(CHECKOUT.page, CHECKOUT.json_dir, CHECKOUT.readme):
        print(f"wrote {path}")
    print(f"wrote {write_page(CHECKOUT.root)}")
