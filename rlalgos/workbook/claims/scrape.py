"""Reading the published numbers back from the committed outputs: the notebooks' printed effect
lines (:func:`rlalgos.workbook.stats.describe`) and verdict lines (:func:`rlalgos.workbook.stats.verdict_line`),
the exact lines a :class:`~.model.Quote` names, and the records that :func:`write_published` writes
(``python docs/extract_claims.py``).

Notebook 09's committed outputs print some comparisons only as pandas tables (its
:func:`rlalgos.workbook.stats.effect_table` displays and its pass@k table). Its code cells now also
print a verdict line for each, and a verdict line wins wherever one is printed; until 09's next full
run (75 minutes) writes them into its committed outputs, :func:`effect_frame` and
:data:`PASSK_TABLE_ROW` read the tables. Delete both, and the ``frame`` fields, after that run.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Mapping, Sequence

from .model import PASSK_TABLE_ROW, Claim, Layout, Quote, effect, record, rounded
from ..stats import t975

_NUM = r"[+-]?(?:\d+\.?\d*(?:e[+-]?\d+)?|nan)"
EFFECT_LINE = re.compile(
    rf"^(?P<arm>.+?) vs (?P<base>.+?), (?P<metric>\S+): (?P<arm_mean>{_NUM}) vs (?P<base_mean>{_NUM}), paired diff (?P<diff>{_NUM}) "
    rf"\((?:95% CI (?P<ci_low>{_NUM})\.\.(?P<ci_high>{_NUM}), )?(?P<seeds>\d+) seeds?(?:; detectable >= {_NUM})?\): (?P<verdict>.+)$"
)


def cell_outputs(notebook: str | Path) -> dict[int, list[str]]:
    """Every code cell's committed text outputs (stream text and text/plain) of the notebook file ``notebook``, by cell index."""
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    out = {}
    for i, cell in enumerate(nb["cells"]):
        texts = []
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                texts.append("".join(o["text"]))
            elif "text/plain" in o.get("data", {}):
                texts.append("".join(o["data"]["text/plain"]))
        if texts:
            out[i] = texts
    return out


VERDICT_LINE = re.compile(
    rf"^(?P<metric>\S+)\s+(?P<arm>.+?) - (?P<base>.+?) = (?P<diff>{_NUM})(?P<points> points)? \(95% CI (?P<ci_low>{_NUM})\.\.(?P<ci_high>{_NUM}), "
    rf"(?P<seeds>\d+) seeds; detectable >= {_NUM}\) -> (?P<verdict>.+)$"
)


def effect_lines_in(texts: Sequence[str]) -> list[dict]:
    """The paired-effect lines in some printed text, parsed: :func:`rlalgos.workbook.stats.describe`'s
    and :func:`~rlalgos.workbook.stats.verdict_line`'s (whose points are read back as proportions; it prints no means)."""
    found = []
    for text in texts:
        for line in text.splitlines():
            if m := EFFECT_LINE.match(line.strip()):
                row = m.groupdict()
            elif m := VERDICT_LINE.match(line.strip()):
                row = {**m.groupdict(), "arm_mean": None, "base_mean": None}
                scale = 100.0 if row["points"] else 1.0
                row.update({k: str(float(row[k]) / scale) for k in ("diff", "ci_low", "ci_high")})
            else:
                continue
            found.append(
                {
                    **{k: float(row[k]) if row[k] is not None else math.nan for k in ("diff", "ci_low", "ci_high")},
                    # a verdict line prints no means: None (JSON null), as a quote's
                    **{k: float(row[k]) if row[k] is not None else None for k in ("arm_mean", "base_mean")},
                    "arm": row["arm"],
                    "base": row["base"],
                    "metric": row["metric"],
                    "seeds": int(row["seeds"]),
                    "line": line.strip(),
                }
            )
    return found


def printed_effect(
    outputs: Mapping[int, list[str]], cell: int | None, arm: str, base: str, metric: str, seeds: int | None = None
) -> tuple[int, dict] | None:
    """The first printed effect or verdict line of ``arm`` minus ``base`` on ``metric`` (in ``cell``, or
    in any cell), with ``seeds`` seeds when given: (cell, :func:`effect_lines_in` row), or None."""
    for i, texts in sorted(outputs.items()):
        if cell is not None and i != cell:
            continue
        for h in effect_lines_in(texts):
            if (h["arm"], h["base"], h["metric"]) == (arm, base, metric) and seeds in (None, h["seeds"]):
                return i, h
    return None


# --------------------------------------------------------------------------- #
# Notebook 09's tables, read until its next full run prints verdict lines for them
# --------------------------------------------------------------------------- #


def _tokens(line: str) -> list[str]:
    return re.sub(r"(within noise|one seed)", lambda m: m.group(1).replace(" ", "_"), line).split()


def effect_frame(text: str) -> dict[tuple[str, str], dict]:
    """A displayed :func:`rlalgos.workbook.stats.effect_table` (pandas' wrapped text repr, two
    index levels ``metric``/``arm`` in either order) -> {(arm, metric): {column: value}}."""
    rows: dict[tuple[str, str], dict] = {}
    for block in [b for b in re.split(r"\n\s*\n", text) if b.strip()]:
        lines = block.splitlines()
        cols = [c for c in lines[0].split() if c != "\\"]
        names = lines[1].split()
        if len(names) != 2:
            continue
        first = ""
        for line in lines[2:]:
            tok = _tokens(line)
            if not line.startswith(" "):
                first, tok = tok[0], tok[1:]
            second, values = tok[0], tok[1:]
            key = dict(zip(names, (first, second)))
            cells = rows.setdefault((key["arm"], key["metric"]), {})
            for c, v in zip(cols, values):
                cells[c] = v.replace("_", " ") if c == "verdict" else float(v)
    return rows


# --------------------------------------------------------------------------- #
# The records
# --------------------------------------------------------------------------- #


def _find_quote(claim: Claim, quote: Quote, outputs: Mapping[int, list[str]], root: Path) -> str:
    """Where ``quote.line`` is printed: "notebook NN cell K" (``outputs``: the claim notebook's
    :func:`cell_outputs`) or the committed file; ValueError if nowhere."""
    if quote.file:
        if quote.line in (root / quote.file).read_text(encoding="utf-8"):
            return quote.file
        raise ValueError(f"claim {claim.id}: the line {quote.line!r} is no longer in {quote.file}")
    for i, texts in outputs.items():
        if any(quote.line in t for t in texts):
            return f"notebook {claim.notebook.split('_')[0]} cell {i}"
    raise ValueError(
        f"claim {claim.id}: the line {quote.line!r} is no longer in the committed output of notebooks/{claim.notebook}"
    )


def extract_published(claim: Claim, root: str | Path) -> dict:
    """The claim's published record (the JSON of ``docs/claims/<id>.json``), read from the committed
    outputs of the checkout at ``root``: effect and verdict lines (or, where a cell prints none, the
    effect tables) for its :class:`~.model.Expect` s, the exact lines for its :class:`~.model.Quote` s.
    A number that is no longer printed raises ValueError."""
    root = Layout(root).root
    effects, quotes = [], []
    needs_outputs = claim.expects or any(not q.file for q in claim.quotes)
    outputs = cell_outputs(Layout(root).notebooks / claim.notebook) if claim.notebook and needs_outputs else {}
    where = f"notebook {claim.notebook.split('_')[0]}"
    for e in claim.expects:
        base = e.base or claim.base
        seeds = e.seeds or claim.seeds
        arm_name, base_name = claim.names.get(e.arm, e.arm), claim.names.get(base, base)
        hit = printed_effect(
            outputs, e.cell, arm_name, base_name, e.metric, len(seeds) if e.frame is not None else None
        )
        if hit is None and e.frame is not None:
            effects.append(_table_effect(claim, e, base, seeds, outputs))
            continue
        if hit is None:
            continue  # not published: the registry names it for runs (e.g. a metric the notebook did not print)
        i, h = hit
        effects.append(
            effect(
                e.arm,
                base,
                e.metric,
                e.direction,
                e.headline,
                h["arm_mean"],
                h["base_mean"],
                h["diff"],
                h["ci_low"],
                h["ci_high"],
                seeds[: h["seeds"]] if len(seeds) >= h["seeds"] else seeds,
                f"{where} cell {i}",
                h["line"],
            )
        )
    for q in claim.quotes:
        source = _find_quote(claim, q, outputs, root)
        quotes.append({"source": source, "line": q.line})
        if q.arm:
            effects.append(_quote_effect(claim, q, source, outputs))
    return record(claim, effects, quotes, numbers_from="committed outputs")


def _table_effect(claim: Claim, e, base: str, seeds, outputs: Mapping[int, list[str]]) -> dict:
    """``e`` read from the ``e.frame``-th effect table its cell displayed."""
    frames = [t for t in outputs.get(e.cell, []) if "ci_low" in t]
    row = effect_frame(frames[e.frame]).get((e.arm, e.metric)) if e.frame < len(frames) else None
    if row is None:
        raise ValueError(
            f"claim {claim.id}: no {e.arm}/{e.metric} in effect table {e.frame} of notebook {claim.notebook} cell {e.cell}"
        )
    return effect(
        e.arm,
        base,
        e.metric,
        e.direction,
        e.headline,
        rounded(row.get("arm_mean", row.get("arm"))),
        rounded(row.get("base_mean", row.get(base))),
        rounded(row["diff"]),
        rounded(row["ci_low"]),
        rounded(row["ci_high"]),
        seeds,
        f"notebook {claim.notebook.split('_')[0]} cell {e.cell}, table {e.frame}",
    )


def _quote_effect(claim: Claim, q: Quote, source: str, outputs: Mapping[int, list[str]]) -> dict:
    """The paired effect a quote's line gives (read by its ``pattern``); a row of notebook 09's pass@k
    table gives way to the verdict line the notebook prints for the same comparison."""
    base = q.base or claim.base
    hit = q.pattern == PASSK_TABLE_ROW and printed_effect(outputs, None, claim.names.get(q.arm, q.arm), base, q.metric)
    if hit:
        i, h = hit
        diff, lo, hi = h["diff"], h["ci_low"], h["ci_high"]
        seeds, source, line = (
            (q.seeds or claim.seeds)[: h["seeds"]],
            f"notebook {claim.notebook.split('_')[0]} cell {i}",
            h["line"],
        )
    else:
        m = re.search(q.pattern, q.line)
        if not m:
            raise ValueError(f"claim {claim.id}: the pattern of a quote does not match its line {q.line!r}")
        g = m.groupdict()
        diff, line = float(g["diff"]), q.line
        if g.get("sd") is not None:
            n = int(g["n"])
            half = t975(n - 1) * float(g["sd"]) / math.sqrt(n)
            lo, hi, seeds = diff - half, diff + half, (q.seeds or claim.seeds)[:n]
        else:
            lo, hi, seeds = float(g["lo"]), float(g["hi"]), q.seeds or claim.seeds
    return effect(
        q.arm,
        base,
        q.metric,
        q.direction,
        q.headline,
        None,
        None,
        rounded(diff),
        rounded(lo),
        rounded(hi),
        seeds,
        source,
        line,
    )


def write_published(root: str | Path, ids: Sequence[str] | None = None) -> list[Path]:
    """:func:`extract_published` of every claim (or of ``ids``) into the checkout's ``docs/claims/<id>.json``.
    Without ``ids``, a record published by ``rlalgos claims run --publish`` (its numbers are from runs,
    not from a committed printout) is kept as it is; naming its id replaces it."""
    from .data import CLAIMS, get_claim  # the claims' data names this module's table pattern

    json_dir = Layout(root).json_dir
    json_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for claim in [get_claim(i) for i in ids] if ids else CLAIMS:
        path = json_dir / f"{claim.id}.json"
        if (
            not ids
            and path.exists()
            and json.loads(path.read_text(encoding="utf-8")).get("numbers_from") != "committed outputs"
        ):
            print(f"kept {path} (published by rlalgos claims run --publish)")
            continue
        path.write_text(
            json.dumps(extract_published(claim, root), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        paths.append(path)
    return paths
