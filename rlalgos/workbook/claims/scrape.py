"""Reading the published numbers back from the committed outputs: the notebooks' printed verdict lines
(:func:`rlalgos.workbook.stats.verdict_line`, with or without both means),
the exact lines a :class:`~.model.Quote` names, and the records that :func:`write_published` writes
(``python docs/extract_claims.py``).
Every comparison a claim publishes is read from a line the notebook printed, never from a pandas table.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Mapping, Sequence

from .model import Claim, Layout, Quote, effect, record, rounded
from ..stats import t975

_NUM = r"[+-]?(?:\d+\.?\d*(?:e[+-]?\d+)?|nan)"


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
    rf"^(?P<metric>\S+)\s+(?P<arm>.+?) - (?P<base>.+?) = (?P<diff>{_NUM})(?P<points> points)? "
    rf"\((?:(?P<arm_mean>{_NUM}) vs (?P<base_mean>{_NUM}); )?95% CI (?P<ci_low>{_NUM})\.\.(?P<ci_high>{_NUM}), "
    rf"(?P<seeds>\d+) seeds; detectable >= {_NUM}\) -> (?P<verdict>.+)$"
)


_HEAD = re.compile(r"^\S+\s+.+? - .+? = ")
"""The start of a verdict line: ``metric  arm - base = ``."""


def unwrapped(text: str) -> list[str]:
    """``text``'s lines, where a verdict line wrapped onto indented continuation lines (``textwrap.fill(line, 88,
    subsequent_indent="    ")``, as the notebooks print them to fit the page) is joined back into one line."""
    out: list[str] = []
    for line in text.splitlines():
        prev = out[-1].strip() if out else ""
        still_open = _HEAD.match(prev) and (not VERDICT_LINE.match(prev) or prev.count("(") > prev.count(")"))
        if still_open and line.startswith("    ") and line.strip():
            out[-1] = out[-1].rstrip() + " " + line.strip()
        else:
            out.append(line)
    return out


def printed_in(texts: Sequence[str], line: str) -> bool:
    """Whether ``line`` is printed in one of ``texts`` (a cell's outputs): as it stands, or as a verdict line
    that the cell wrapped for the page (:func:`unwrapped`)."""
    return any(line in t or line in "\n".join(unwrapped(t)) for t in texts)


def effect_lines_in(texts: Sequence[str]) -> list[dict]:
    """The paired-effect lines in some printed text (wrapped ones joined back, :func:`unwrapped`), parsed:
    :func:`~rlalgos.workbook.stats.verdict_line`'s (points read back as proportions; means None where the line
    prints none)."""
    found = []
    for text in texts:
        for line in unwrapped(text):
            if m := VERDICT_LINE.match(line.strip()):
                row = m.groupdict()  # the means, where printed, are in the metric's own units
                scale = 100.0 if row["points"] else 1.0
                row.update({k: str(float(row[k]) / scale) for k in ("diff", "ci_low", "ci_high")})
            else:
                continue
            found.append(
                {
                    **{k: float(row[k]) if row[k] is not None else math.nan for k in ("diff", "ci_low", "ci_high")},
                    # a verdict line without means: None (JSON null), as a quote's
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
        if printed_in(texts, quote.line):
            return f"notebook {claim.notebook.split('_')[0]} cell {i}"
    raise ValueError(
        f"claim {claim.id}: the line {quote.line!r} is no longer in the committed output of notebooks/{claim.notebook}"
    )


def extract_published(claim: Claim, root: str | Path) -> dict:
    """The claim's published record (the JSON of ``docs/claims/<id>.json``), read from the committed
    outputs of the checkout at ``root``: effect and verdict lines for its :class:`~.model.Expect` s, the exact lines for its :class:`~.model.Quote` s.
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
        hit = printed_effect(outputs, e.cell, arm_name, base_name, e.metric, len(e.seeds) if e.seeds else None)
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
                rounded(h["arm_mean"]),
                rounded(h["base_mean"]),
                rounded(h["diff"]),
                rounded(h["ci_low"]),
                rounded(h["ci_high"]),
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


def _quote_effect(claim: Claim, q: Quote, source: str, outputs: Mapping[int, list[str]]) -> dict:
    """The paired effect a quote's line gives (read by its ``pattern``)."""
    base = q.base or claim.base
    m = re.search(q.pattern, q.line)
    if not m:
        raise ValueError(f"claim {claim.id}: the pattern of a quote does not match its line {q.line!r}")
    g = m.groupdict()
    scale = 0.01 if q.line[m.end("diff") :].startswith(" points") else 1.0  # a verdict line's points, as a proportion
    diff, line = float(g["diff"]) * scale, q.line
    if g.get("sd") is not None:
        n = int(g["n"])
        half = t975(n - 1) * float(g["sd"]) * scale / math.sqrt(n)
        lo, hi, seeds = diff - half, diff + half, (q.seeds or claim.seeds)[:n]
    else:
        lo, hi, seeds = float(g["lo"]) * scale, float(g["hi"]) * scale, q.seeds or claim.seeds
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
    from .data import CLAIMS, get_claim

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
