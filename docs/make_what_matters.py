"""Write docs/what_matters.md, the "what matters when" table, from the claims records
(docs/claims/*.json), the committed benchmark rows (docs/bench/*.jsonl) and the committed
printouts that rlalgos/workbook/matters.py names. docs/extract_claims.py runs it too.

    python docs/make_what_matters.py
"""

from pathlib import Path

from rlalgos.workbook.matters_page import write_page

if __name__ == "__main__":
    print(f"wrote {write_page(Path(__file__).resolve().parents[1])}")
