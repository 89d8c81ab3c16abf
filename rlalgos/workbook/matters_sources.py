"""Where a measured number of the "what matters when" table comes from: a committed source, read, never typed.

A :class:`Measured` reads how often a trick's trigger fired from a printed line kept in a published
record (``docs/claims/<id>.json``), an effect of a record, a row of ``docs/bench/*.jsonl``, or,
where the number was only printed, the exact committed line of a notebook output or a docs page
(:func:`quoted_where` finds it, and fails once the line is gone).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from dataclasses import dataclass, field
from typing import Mapping

from .claims import cell_outputs
from .claims.scrape import printed_in


@dataclass(frozen=True)
class Measured:
    """How often a trick's trigger fired in one regime, read from a committed source.

    ``text`` is a ``str.format`` template over the values read; ``where`` names the regime.
    Exactly one source: ``claim`` with ``line`` (a line the record quotes) or with ``effect``
    (``(arm, metric)`` of one of its effects and ``fields`` of it, e.g. ``("arm_mean",)``);
    ``file`` a ``docs/bench/*.jsonl`` with ``match`` (the row whose items include these) and
    ``fields``; or ``file`` a notebook or page with ``line`` (its committed output or text).
    ``pattern`` reads the values off ``line`` (its groups, as printed); ``percent`` names the groups
    printed as percentages, read as decimals (2.12% -> 0.0212) so the table writes every share one way."""

    text: str
    where: str
    claim: str = ""
    file: str = ""
    line: str = ""
    pattern: str = ""
    effect: tuple[str, str] | None = None
    match: Mapping = field(default_factory=dict)
    fields: tuple[str, ...] = ()
    percent: tuple[int, ...] = ()

    def read(self, records: Mapping[str, dict], root: Path) -> tuple[list, str]:
        """(the values, the citation: the committed file and, for a printout, its cell); ``root`` is the
        checkout whose ``docs/`` and ``notebooks/`` hold the sources."""
        if self.claim and self.line:
            rec = records[self.claim]
            hits = [q for q in rec["quotes"] if q["line"] == self.line]
            if not hits:
                raise ValueError(f"docs/claims/{self.claim}.json no longer quotes {self.line!r}")
            return self._groups(), f"docs/claims/{self.claim}.json ({hits[0]['source']})"
        if self.claim and self.effect:
            rec = records[self.claim]
            arm, metric = self.effect
            hits = [e for e in rec["effects"] if (e["arm"], e["metric"]) == (arm, metric)]
            if not hits:
                raise ValueError(f"docs/claims/{self.claim}.json has no effect {arm}/{metric}")
            return [hits[0][f] for f in self.fields], f"docs/claims/{self.claim}.json ({hits[0]['source']})"
        if self.file.endswith(".jsonl"):
            rows = [
                json.loads(x) for x in (Path(root) / self.file).read_text(encoding="utf-8").splitlines() if x.strip()
            ]
            hits = [r for r in rows if all(r.get(k) == v for k, v in self.match.items())]
            if len(hits) != 1:
                raise ValueError(f"{self.file}: {len(hits)} rows match {dict(self.match)}, expected 1")
            return [hits[0][f] for f in self.fields], self.file
        return self._groups(), quoted_where(self.file, self.line, root)

    def _groups(self) -> list:
        m = re.search(self.pattern, self.line)
        if not m:
            raise ValueError(f"the pattern {self.pattern!r} does not match its line {self.line!r}")
        return [float(g) / 100 if i in self.percent else g for i, g in enumerate(m.groups())]


def quoted_where(file: str, line: str, root: Path) -> str:
    """``file`` (a path under the checkout ``root``; for a notebook, with the cell) where ``line`` is
    committed (in a notebook's outputs, a verdict line the cell wrapped counts whole:
    :func:`~rlalgos.workbook.claims.scrape.printed_in`); ValueError if it is not."""
    path = Path(root) / file
    if path.suffix == ".ipynb":
        for i, texts in cell_outputs(path).items():
            if printed_in(texts, line):
                return f"{file} cell {i}"
        raise ValueError(f"the line {line!r} is no longer in the committed output of {file}")
    if line in path.read_text(encoding="utf-8"):
        return file


def printed_cell(file: str, row: str, column: str, root: Path) -> tuple[float, str]:
    """One number of a table a notebook printed (pandas' text layout: values right-aligned under their
    column's name): the value in the row whose first word is ``row``, under the column named ``column``,
    read from the committed output of ``file`` (a notebook under the checkout ``root``), with its citation
    ``file cell i``. ValueError once no committed table has that row and column."""
    for i, texts in cell_outputs(Path(root) / file).items():
        for text in texts:
            lines = text.splitlines()
            for j, head in enumerate(lines):
                at = head.find(column)
                if at < 0:
                    continue
                end = at + len(column)
                for line in lines[j + 1 :]:
                    if not line.strip():
                        break
                    if line.split()[0] != row:
                        continue
                    hits = [m.group() for m in re.finditer(r"\S+", line) if m.end() == end]
                    if hits:
                        return float(hits[0]), f"{file} cell {i}"
    raise ValueError(f"no committed table of {file} has the row {row!r} under the column {column!r}")


def setting(record: Mapping, key: str) -> str:
    """One setting of a published record's ``regime`` text (``"task trap, ..., prompts_per_step 16, ..."``)."""
    for part in record["regime"].split(", "):
        name, _, value = part.partition(" ")
        if name == key:
            return value
    raise ValueError(f"the record {record.get('id', '?')!r} names no {key!r} in its regime")


def trap_answer_counts(records: Mapping[str, dict], root: Path) -> dict:
    """Answers per training step in notebook 09's trap, for the matched-answers arm of the claim
    ``dynamic-sampling-carries-dapo``: ``group_size``, vanilla GRPO's ``vanilla_prompts`` (the regime's),
    the matched arm's ``matched_prompts`` (its own setting), and ``dapo_drawn``, the answers DAPO drew a
    step with dynamic sampling's refills (notebook 09b's cost table, its "answers drawn" column),
    with ``cite``, that table's notebook and cell."""
    rec = records["dynamic-sampling-carries-dapo"]
    drawn, cite = printed_cell("notebooks/09b_pass_at_k_and_dapo.ipynb", "dapo", "answers drawn", root)
    return {
        "group_size": int(setting(rec, "group_size")),
        "vanilla_prompts": int(setting(rec, "prompts_per_step")),
        "matched_prompts": int(rec["arms"]["vanilla_36_prompts"][2]["prompts_per_step"]),
        "dapo_drawn": drawn,
        "cite": cite,
    }
