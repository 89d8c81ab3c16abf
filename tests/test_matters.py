"""The "what matters when" table (rlalgos.workbook.matters and matters_page, docs/what_matters.md) and the glossary (docs/glossary.md)."""

from __future__ import annotations

import re

import pytest

from rlalgos.workbook.stats import is_share
from pathlib import Path

from rlalgos.workbook import claims, matters, matters_page, matters_sources

ROOT = Path(__file__).resolve().parents[1]  # the checkout whose records and printouts the table reads
CHECKOUT = claims.Layout(ROOT)
TESTED = "tested here: effect and verdict"

TRICKS = (
    "dynamic sampling",
    "clip-higher",
    "token-mean loss",
    "overlong penalty",
    "overlong filter",
    "KL penalty",
    "entropy bonus",
    "temperature monitor",
    "Clip-Cov",
    "KL-Cov",
    "GSPO",
    "dual clip",
    "Dr. GRPO",
    "RLOO",
    "CISPO",
    "SAPO",
    "TIS (truncated IS)",
    "MIS (masked IS)",
    "PPO critic",
)


@pytest.fixture(scope="module")
def table():
    return matters_page.matters_table(ROOT)


def test_every_trick_has_a_row(table):
    assert set(TRICKS) <= set(table["trick"])
    assert table["trick"].is_unique and list(table.columns) == list(matters_page.COLUMNS)
    assert not table.isna().any().any() and (table.map(str).map(len) > 0).all().all()


def test_every_claim_named_exists_and_has_a_regime_name():
    for cid in matters.claim_ids():
        claims.get_claim(cid)
        assert cid in matters.REGIMES, cid
    assert set(matters.REGIMES) <= set(claims.BY_ID)


def test_every_knob_is_a_row_of_the_export_table():
    from rlalgos.tools.export.fields import FIELDS

    settings = {f.name for f in FIELDS}
    assert all(k in settings for t in matters.TRICKS for k in t.knobs)


def test_every_number_equals_the_published_records():
    """Each tested effect in the table is the record's own (diff, interval, seeds, verdict), and every effect of a record
    that a row names is shown."""
    records = claims.load_published(CHECKOUT.json_dir)
    table = matters_page.matters_table(ROOT).set_index("trick")
    for t in matters.TRICKS:
        cell = table.loc[t.name, TESTED]
        for s in t.tested:
            effects = matters_page.selected_effects(s, records[s.claim])
            if not effects:
                assert f"{s.claim} ({matters.REGIMES[s.claim]}): {records[s.claim]['verdict']}" in cell
            for e in effects:
                line = matters_page.effect_text(e)
                assert f"{s.claim} ({matters.REGIMES[s.claim]}): {line}" in cell
                scale = 100.0 if is_share(e["metric"]) else 1.0
                num = r"[+-]?\d+(?:\.\d*)?(?:e[+-]?\d+)?"
                m = re.search(
                    rf" = ({num})(?: points)? \(95% CI ({num})\.\.({num}), (\d+) seeds; detectable >= ({num})", line
                )
                tol = (
                    dict(abs=0.051, rel=0) if scale > 1 else dict(abs=1e-9, rel=5e-3)
                )  # points to 0.1; other units to 3 significant digits
                assert m, line
                assert float(m[1]) == pytest.approx(e["diff"] * scale, **tol)
                assert float(m[2]) == pytest.approx(e["ci_low"] * scale, **tol)
                assert float(m[3]) == pytest.approx(e["ci_high"] * scale, **tol)
                assert int(m[4]) == len(e["seeds"])
                assert float(m[5]) == pytest.approx((e["ci_high"] - e["ci_low"]) / 2 * scale, **tol)
                assert line.endswith(e["verdict"]) or (
                    e["verdict"] == "within noise" and "within noise (could see >= " in line
                )


def test_measured_numbers_come_from_their_sources(table):
    """Every measured frequency is read from its committed source, and is printed in the table with its citation."""
    records = claims.load_published(CHECKOUT.json_dir)
    fired = dict(zip(table["trick"], table[matters_page.COLUMNS[2]]))
    for t in matters.TRICKS:
        assert t.measured or t.unmeasured, t.name
        for text, cite in matters_page.measured_lines(t, records, ROOT):
            assert f"{text} [{cite}]" in fired[t.name]
        if not t.measured:
            assert fired[t.name].startswith(matters_page.NOT_MEASURED)


def test_every_trick_has_a_word_and_every_regime_a_definition(table):
    assert all(t.fires in matters.FIRES for t in matters.TRICKS)
    assert list(table["in a word"]) == [t.fires for t in matters.TRICKS]
    assert set(matters.REGIMES.values()) == set(matters.REGIME_DEFS)
    page = matters_page.render_page(table)
    assert all(f"* **{k}**: {v}" in page for k, v in matters.REGIME_DEFS.items())


def test_percentages_are_read_as_decimals():
    m = matters_sources.Measured(
        "{0:.4f} and {1}", "here", file="x", line="on 2.12% and 7", pattern=r"on ([\d.]+)% and (\d)", percent=(0,)
    )
    assert m._groups() == [pytest.approx(0.0212), "7"] and m.text.format(*m._groups()) == "0.0212 and 7"
    assert "%" not in "".join(table_col for table_col in matters_page.matters_table(ROOT)["how often it fired here"])


def test_verdict_rows_are_the_tables_lines(table):
    """The long format holds exactly the lines of the tested column, row by row, in order."""
    rows = matters_page.verdict_rows(ROOT)
    for name, cell in zip(table["trick"], table[TESTED]):
        mine = rows[rows["trick"] == name]
        assert [f"{c} ({r}): {ln}" for c, r, ln in zip(mine["claim"], mine["regime"], mine["line"])] == cell.split("\n")
    effects = rows[rows["metric"] != ""]
    assert (effects["ci_low"] <= effects["diff"]).all() and (effects["diff"] <= effects["ci_high"]).all()


def test_text_table_fits_the_column(table):
    text = matters_page.text_table(table.drop(columns=[TESTED]), width=90)
    assert max(map(len, text.splitlines())) <= 90
    words = lambda x: "".join(x.split())  # noqa: E731
    assert all(words(t) in words(text) for t in table["trick"])


@pytest.mark.parametrize("file, line", matters.quoted_sources(), ids=lambda x: x[:40])
def test_quoted_source_lines_are_still_committed(file, line):
    """A number that exists only in a printout is quoted with its exact line: the line must still be there."""
    assert matters_sources.quoted_where(file, line, ROOT).startswith(file)


def test_page_is_what_the_generator_writes_now():
    assert CHECKOUT.what_matters.read_text(encoding="utf-8") == matters_page.render_page(
        matters_page.matters_table(ROOT)
    ), "docs/what_matters.md differs from the generator: run python docs/make_what_matters.py"


def test_the_page_and_the_glossary_are_in_the_book():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "what_matters.md" in nav and "glossary.md" in nav


# --------------------------------------------------------------------------- #
# The glossary
# --------------------------------------------------------------------------- #

GLOSSARY = ROOT / "docs" / "glossary.md"


def _metric_names() -> set[str]:
    """Every name docs/metrics.md lists (its first column, in backticks)."""
    names = set()
    for row in (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8").splitlines():
        if row.startswith("| `"):
            names |= set(re.findall(r"`([^`]+)`", row.split(" | ")[0]))
    return names


def test_glossary_metric_names_are_logged():
    """Every backticked name in the glossary's "metric:" parts is a logged metric (docs/metrics.md)."""
    text = GLOSSARY.read_text(encoding="utf-8")
    known = _metric_names()
    cited = [n for part in re.findall(r"Metric: ([^\n]*)", text) for n in re.findall(r"`([^`]+)`", part)]
    assert len(cited) >= 15
    missing = [
        n
        for n in cited
        if n not in known
        and not any(re.fullmatch(k.replace("<name>", r"\S+").replace("<level>", r"\S+"), n) for k in known)
    ]
    assert not missing, f"glossary metric names not in docs/metrics.md: {missing}"


def test_glossary_has_every_term():
    text = GLOSSARY.read_text(encoding="utf-8").lower()
    terms = [
        "k1",
        "k2",
        "k3",
        "whitened advantage",
        "gae",
        "importance ratio",
        "clip fraction",
        "clip-higher",
        "dual clip",
        "dynamic sampling",
        "zero-variance group",
        "token-mean",
        "seq-mean-token-mean",
        "seq-mean-token-sum-norm",
        "overlong",
        "kl penalty",
        "kl loss",
        "reference model",
        "entropy collapse",
        "clip-cov",
        "kl-cov",
        "cispo",
        "sapo",
        "gspo",
        "dr. grpo",
        "rloo",
        "tis",
        "mis",
        "pass@k",
        "scratchpad share",
        "within noise",
        "opposite",
        "detectable",
        "stop-gradient",
        "natural policy-gradient",
        "rare_pos_frac",
        "clip_frac_dual",
        "arxiv:2503.14476",
    ]
    assert not [t for t in terms if t not in text]


def test_glossary_notebooks_exist():
    text = GLOSSARY.read_text(encoding="utf-8")
    for nb in set(re.findall(r"\.\./notebooks/(\d\d[a-z]?_[a-z_]+\.ipynb)", text)):
        assert ((ROOT / "notebooks") / nb).exists(), nb
