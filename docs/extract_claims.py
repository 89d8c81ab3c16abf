"""Write docs/claims/<id>.json for every claim of rlalgos/workbook/claims.py, from the
notebooks' committed outputs (and the committed docs for the benchmark rows), then
regenerate docs/claims.md, README.md's summary and docs/what_matters.md from them.

    python docs/extract_claims.py            # all claims
    python docs/extract_claims.py dapo-trap  # one
"""

import sys

from rlalgos.workbook.claims import report, write_published
from rlalgos.workbook.matters_page import write_page

if __name__ == "__main__":
    for path in write_published(ids=sys.argv[1:] or None):
        print(f"wrote {path}")
    for path in report():
        print(f"wrote {path}")
    print(f"wrote {write_page()}")
