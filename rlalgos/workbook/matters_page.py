"""What matters when, the table and its page: the facts of :mod:`rlalgos.workbook.matters` joined
with the published claims records (``docs/claims/<id>.json``, via
:func:`rlalgos.workbook.claims.load_published`) and the committed sources each measured number is read from.

:func:`matters_table` builds the table as a pandas DataFrame; :func:`render_page` writes
``docs/what_matters.md`` from it (``python docs/make_what_matters.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import textwrap

import pandas as pd

from .claims import Layout, load_published
from .matters import FIRES, REGIME_DEFS, REGIMES, TRICKS, Tested, Trick
from .stats import is_share, verdict_line

NOT_MEASURED = "not measured"

COLUMNS = (
    "trick",
    "trigger (when it changes the gradient)",
    "how often it fired here",
    "in a word",
    "tested here: effect and verdict",
    "its paper",
)

# --------------------------------------------------------------------------- #
# Reading the records
# --------------------------------------------------------------------------- #


def effect_text(e: Mapping) -> str:
    """One effect of a published record in the course's verdict format (:func:`rlalgos.workbook.stats.verdict_line`), e.g.
    ``eval_accuracy  dapo - grpo = +7.7 points (95% CI +1.9..+13.5, 6 seeds; detectable >= 5.8) -> shown``."""
    return verdict_line({**e, "seeds": len(e["seeds"])}, e["arm"], e["base"])


def selected_effects(t: Tested, record: Mapping) -> list[dict]:
    """The effects of ``record`` that ``t`` names (see :class:`Tested`)."""
    if t.arm or t.metric:
        return [
            e
            for e in record["effects"]
            if (not t.arm or e["arm"] == t.arm) and (not t.metric or e["metric"] == t.metric)
        ]
    return [e for e in record["effects"] if e["headline"]]


def context_note(t: Tested) -> str:
    """The mark after a context line (one shown beside the trick's tests, not counted as one of them)."""
    return f" [context, not counted: {t.context}]" if t.context else ""


def tested_lines(t: Tested, records: Mapping[str, dict]) -> list[str]:
    """``t``'s lines: ``claim-id (regime): effect`` per selected effect, or the claim's verdict."""
    record = records[t.claim]
    head = f"{t.claim} ({REGIMES[t.claim]})"
    effects = selected_effects(t, record)
    if not effects:
        if t.arm or t.metric:
            raise ValueError(f"docs/claims/{t.claim}.json has no effect {t.arm or '*'}/{t.metric or '*'}")
        seeds = "" if record["kind"] == "exact" else f", {len(record['seeds'])} seeds"
        return [f"{head}: {record['verdict']}{seeds}{context_note(t)}"]
    return [f"{head}: {effect_text(e)}{context_note(t)}" for e in effects]


def measured_lines(trick: Trick, records: Mapping[str, dict], root: Path) -> list[tuple[str, str]]:
    """(what fired, where it is committed under the checkout ``root``) for each of the trick's measured sources."""
    out = []
    for m in trick.measured:
        values, cite = m.read(records, root)
        out.append((f"{m.text.format(*values)}; {m.where}", cite))
    return out


def matters_table(root: str | Path) -> pd.DataFrame:
    """The table, one row per trick: its trigger, how often the trigger fired in this project's runs
    (with the committed file each number is read from), every tested effect with its 95% interval,
    seeds and verdict, and its paper. Multi-entry cells are joined by newlines. ``root`` is the
    checkout whose records (``docs/claims/``), benchmark rows and notebooks it reads."""
    records = load_published(Layout(root).json_dir)
    rows = []
    for t in TRICKS:
        fired = [f"{text} [{cite}]" for text, cite in measured_lines(t, records, Path(root))] or [
            f"{NOT_MEASURED}: {t.unmeasured}"
        ]
        tested = [line for s in t.tested for line in tested_lines(s, records)]
        rows.append(dict(zip(COLUMNS, (t.name, t.trigger, "\n".join(fired), t.fires, "\n".join(tested), t.paper))))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def verdict_rows(root: str | Path) -> pd.DataFrame:
    """The table's tests in long format, one row per comparison and trick: ``trick``, ``fires`` (the trick's
    word for how often its trigger fired), ``claim``, ``regime`` (its short name), ``metric``, ``arm``, ``base``,
    ``verdict``, ``diff``, ``ci_low``, ``ci_high`` (in points for a share), ``seeds`` and ``line`` (the verdict
    line; where the claim has no paired number, a census, a fit, a cost or an exact test, its verdict, with
    ``metric`` empty) and ``counted`` (False for a context line: one that does not switch the trick on alone
    or measures its trigger, not an outcome; see :attr:`Tested.context`)."""
    records = load_published(Layout(root).json_dir)
    rows = []
    for t in TRICKS:
        for s in t.tested:
            record = records[s.claim]
            head = dict(trick=t.name, fires=t.fires, claim=s.claim, regime=REGIMES[s.claim], counted=not s.context)
            effects = selected_effects(s, record)
            if not effects:
                seeds = "" if record["kind"] == "exact" else f", {len(record['seeds'])} seeds"
                rows.append(
                    {
                        **head,
                        "metric": "",
                        "arm": "",
                        "base": "",
                        "verdict": record["verdict"],
                        "line": f"{record['verdict']}{seeds}{context_note(s)}",
                    }
                )
            for e in effects:
                scale = 100.0 if is_share(e["metric"]) else 1.0
                rows.append(
                    {
                        **head,
                        "metric": e["metric"],
                        "arm": e["arm"],
                        "base": e["base"],
                        "verdict": e["verdict"],
                        "diff": e["diff"] * scale,
                        "ci_low": e["ci_low"] * scale,
                        "ci_high": e["ci_high"] * scale,
                        "seeds": len(e["seeds"]),
                        "line": effect_text(e) + context_note(s),
                    }
                )
    return pd.DataFrame(rows)


def wrap(text: str, width: int = 90, indent: str = "") -> list[str]:
    """``text``'s lines wrapped to ``width`` characters at spaces, continuation lines indented 4 more than ``indent``."""
    return [
        w
        for line in text.split("\n")
        for w in textwrap.wrap(
            line,
            width,
            initial_indent=indent,
            subsequent_indent=indent + "    ",
            break_on_hyphens=False,
            break_long_words=False,
        )
    ]


def text_table(df: pd.DataFrame, width: int = 90) -> str:
    """``df`` as plain text no wider than ``width``: one block per row, the first column's value, then each other
    column's name and its lines, wrapped (the text view of a table whose cells hold several lines)."""
    out = []
    for row in df.itertuples(index=False):
        out.append(str(row[0]))
        for name, value in zip(df.columns[1:], row[1:]):
            out += wrap(f"{name}: {value}".replace("\n", "\n  "), width, "  ")
        out.append("")
    return "\n".join(out)


def decisions(root: str | Path) -> pd.DataFrame:
    """The table as a decision list, one row per trick: the metric to read in your own run, how often the
    trigger fired here (its word), the counted paired lines' verdicts (shown / within noise / opposite) and
    the decision they support (:attr:`Trick.when`)."""
    rows = verdict_rows(root)
    paired = rows[(rows.metric != "") & rows.counted]
    out = []
    for t in TRICKS:
        v = paired[paired.trick == t.name].verdict
        counts = f"{(v == 'shown').sum()} shown, {(v == 'within noise').sum()} within noise, {(v == 'opposite').sum()} opposite"
        out.append(
            {
                "trick": t.name,
                "read first": t.read,
                "fired here": t.fires,
                "paired lines": counts,
                "turn it on when": t.when,
            }
        )
    return pd.DataFrame(out)


def engine_names() -> pd.DataFrame:
    """Each trick's rlalgos settings with their TRL and verl names, from the export's mapping table."""
    from ..tools.export import ENGINES

    rows = []
    for t in TRICKS:
        for k in t.knobs:
            trl, verl = ENGINES["trl"].names[k].prose, ENGINES["verl"].names[k].prose
            rows.append({"trick": t.name, "rlalgos": k, "TRL": trl or "(none)", "verl": verl or "(none)"})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- #
# The page
# --------------------------------------------------------------------------- #

INTRO = """\
# What matters when: which trick to turn on, and when

Every trick of the improved-GRPO family changes the gradient only when something happens: a group
whose rewards are all equal, a token whose ratio has moved past a bound, an answer cut at the length
limit. This page puts, for each trick, that **trigger** next to **how often it fired** in this
project's runs, the **regimes where it was tested** (effect, 95% interval, seeds, verdict) and
**what its paper reports** at its own scale. It is generated from the claims registry
(`rlalgos/workbook/claims/`), its published records (`docs/claims/*.json`, see the
[claims scorecard](claims.md)) and the committed benchmark rows and printouts
(`python docs/make_what_matters.py`; `rlalgos/workbook/matters.py` holds the static facts),
so its numbers cannot drift from the runs.

**How to read it: "should I turn X on?"** Find X's row and measure its trigger in your own runs
first (the metric names are in [Metrics](metrics.md)). If the trigger fires often and a regime like
yours shows an effect, turn it on and check the same metric. If the trigger rarely fires, X acts on
few tokens there, which is not the same as acting weakly: in this project's trap regime clip-higher,
whose bound binds on under 0.01 of tokens, changed the hard prompts' scratchpad share against the
expectation (its row). A trick whose trigger is common and whose tests are within noise needs more
seeds before a conclusion.

**The verdict format** is the course's: `metric arm - base = diff (95% CI low..high, n seeds;
detectable >= x) -> verdict`, the arm minus its baseline at the end of the runs, paired by seed.
**shown**: the interval excludes 0 in the expected direction; **opposite**: it excludes 0 the other
way; **within noise (could see >= x)**: it includes 0, and x, the interval's half-width, is the
smallest effect this comparison could have told from zero. A null rules out only the effects
beyond its interval's ends: `-1.5 points (95% CI -7.8..+4.8)` rules out a gain above 4.8 points
and a loss beyond 7.8, and leaves every effect in between possible, as well as any effect in a
regime where the trigger fires more often. Differences of rates and shares are in points (0.01 = 1
point); "detectable" is in the metric's units.
"""


def _legend() -> str:
    """The page's legend of the words of the "in a word" column and of the regime names, from matters.py."""
    words = "; ".join(f"**{k}**: {v}" for k, v in FIRES.items())
    regimes = "\n".join(f"* **{k}**: {v}" for k, v in REGIME_DEFS.items())
    return f"**In a word**, how often the trigger fired here: {words}.\n\n**Regime names** (the tested column's):\n\n{regimes}\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def render_page(table: pd.DataFrame) -> str:
    """docs/what_matters.md from :func:`matters_table`."""
    out = [
        "<!-- generated by `python docs/make_what_matters.py` from docs/claims/*.json, docs/bench/*.jsonl and committed printouts: do not edit by hand -->",
        "",
        INTRO,
        _legend(),
        "| " + " | ".join(table.columns) + " |",
        "|" + "---|" * len(table.columns),
    ]
    out += ["| " + " | ".join(_cell(str(v)) for v in row) + " |" for row in table.itertuples(index=False)]
    names = engine_names()
    out += [
        "",
        "## The same knobs in TRL and verl",
        "",
        "From the export's mapping table (`rlalgos export --to trl|verl`, [Moving to TRL or verl](engines.md)); (none): the engine has no such setting.",
        "",
        "| trick | rlalgos | TRL | verl |",
        "|---|---|---|---|",
    ]
    out += [f"| {r.trick} | `{r.rlalgos}` | {_cell(r.TRL)} | {_cell(r.verl)} |" for r in names.itertuples(index=False)]
    return "\n".join(out) + "\n"


def write_page(root: str | Path) -> Path:
    """Write ``docs/what_matters.md`` of the checkout ``root`` from its own records and printouts."""
    out = Layout(root).what_matters
    out.write_text(render_page(matters_table(root)), encoding="utf-8")
    return out
