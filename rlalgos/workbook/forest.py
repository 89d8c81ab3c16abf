"""Notebook 11's results figure: the "what matters when" table's counted paired lines as a forest plot.

Each counted paired verdict line of :func:`rlalgos.workbook.matters_page.verdict_rows` (a line that switches
one trick on and measures an outcome; context lines and claims with no interval are left out) is one row:
its mean paired difference as a dot, its 95% interval over seeds as a bar, both signed so that right of 0
is the direction its claim expects (the ``direction`` of the published record's effect), coloured by the
word for how often the trick's trigger fired (:data:`rlalgos.workbook.matters.FIRES`). The dot's marker is
the verdict. Differences of shares are drawn in points with the line's detectable (the interval's
half-width) marked; the other metrics (entropy, KL, lengths, log-probs) share no unit, so a second panel
draws them in units of their own detectable, where +1 is the line a dot must pass to be shown.

:func:`forest_rows` reads the lines of a checkout; :func:`plot_forest` draws them.
"""

from __future__ import annotations

from pathlib import Path
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .claims import Layout, load_published
from .matters import FIRES
from .matters_page import verdict_rows
from .plots import PALETTE
from .stats import is_share

WORD_COLORS = {
    "common": "#0072b2",
    "rare": "#d55e00",
    "by regime": "#cc79a7",
    "every step": "#7f3c8d",
    "not measured": "#8c8c8c",
    "its switches'": PALETTE["dapo"],  # DAPO as a whole keeps DAPO's colour
}
"""One colour per word of :data:`~rlalgos.workbook.matters.FIRES` (colour-blind-safe hues)."""

MARKERS = {"shown": ("o", True), "within noise": ("o", False), "opposite": ("X", True)}
"""The dot of each verdict: (matplotlib marker, filled)."""


def signed(lines: pd.DataFrame) -> pd.DataFrame:
    """``lines`` (rows of :func:`verdict_rows` with a ``direction`` column, +1 or -1) with the columns the
    plot draws: ``toward``, ``low``, ``high`` (the difference and its interval times the direction, so
    positive is the expected way), ``detectable`` (the half-width) and ``in_points`` (a share's line)."""
    d = lines["direction"].astype(float)
    a, b = d * lines["ci_low"], d * lines["ci_high"]
    return lines.assign(
        toward=d * lines["diff"],
        low=pd.concat([a, b], axis=1).min(axis=1),
        high=pd.concat([a, b], axis=1).max(axis=1),
        detectable=(lines["ci_high"] - lines["ci_low"]) / 2,
        in_points=lines["metric"].map(is_share).astype(bool),
    )


def forest_rows(root: str | Path) -> pd.DataFrame:
    """The counted paired lines of the checkout ``root`` (its ``docs/claims/*.json``), one row each, in the
    table's order, with each effect's expected ``direction`` and the columns of :func:`signed`."""
    rows = verdict_rows(root)
    lines = rows[(rows.metric != "") & rows.counted].reset_index(drop=True)
    records = load_published(Layout(root).json_dir)

    def direction(r) -> int:
        effects = records[r.claim]["effects"]
        hits = [e["direction"] for e in effects if (e["arm"], e["base"], e["metric"]) == (r.arm, r.base, r.metric)]
        if not hits:
            raise ValueError(f"docs/claims/{r.claim}.json has no effect {r.arm} - {r.base} on {r.metric}")
        return int(hits[0])

    return signed(lines.assign(direction=[direction(r) for r in lines.itertuples()]))


def label(r) -> str:
    """A row's label: the trick, the comparison and its regime."""
    return f"{r.trick}: {r.metric}, {r.arm} - {r.base} ({r.regime})"


def _panel(ax, rows: pd.DataFrame, in_detectables: bool) -> None:
    y = range(len(rows))
    for i, r in zip(y, rows.itertuples()):
        color = WORD_COLORS.get(r.fires, "#333333")
        scale = r.detectable if in_detectables else 1.0
        x, lo, hi = r.toward / scale, r.low / scale, r.high / scale
        ax.plot([lo, hi], [i, i], color=color, lw=2.2, solid_capstyle="butt")
        marker, filled = MARKERS.get(r.verdict, ("o", False))
        ax.plot(x, i, marker=marker, ms=6.5, color=color, mfc=color if filled else "white", mew=1.4, zorder=3)
        if not in_detectables:
            ax.plot(r.detectable, i, marker="|", ms=9, mew=1.6, color="black", zorder=2)
    tricks = list(rows.trick)
    for i in range(1, len(tricks)):
        if tricks[i] != tricks[i - 1]:
            ax.axhline(i - 0.5, color="#dddddd", lw=0.6)
    ax.axvline(0, color="black", lw=0.9)
    if in_detectables:
        for v in (-1, 1):
            ax.axvline(v, color="black", lw=0.8, ls=":")
    ax.set_yticks(list(y), [label(r) for r in rows.itertuples()], fontsize=7.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="#eeeeee", lw=0.6)
    ax.set_axisbelow(True)


def plot_forest(rows: pd.DataFrame, title: str | None = None) -> Figure:
    """The forest plot of ``rows`` (:func:`forest_rows`): the lines in points on top, the others below in
    units of their detectable. ``title`` defaults to one naming the lines, regimes and seeds."""
    pts, other = rows[rows.in_points], rows[~rows.in_points]
    panels = [(p, d) for p, d in ((pts, False), (other, True)) if len(p)]
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(11, 0.24 * len(rows) + 1.2 * len(panels) + 1.4),
        gridspec_kw={"height_ratios": [len(p) + 2 for p, _ in panels]},
        squeeze=False,
        layout="constrained",
    )
    for ax, (p, in_det) in zip(axes[:, 0], panels):
        _panel(ax, p, in_det)
        ax.set_title(
            f"{len(p)} lines of other metrics (entropy, KL, lengths, log-probs): each in units of its detectable"
            if in_det
            else f"{len(p)} lines of shares (accuracies, pass@4, scratchpad share), in points",
            fontsize=9,
            loc="left",
        )
        ax.set_xlabel(
            "difference in the direction the claim expects, in units of the line's detectable (dotted: \u00b11)"
            if in_det
            else "difference in the direction the claim expects, points (100 x a difference of shares)",
            fontsize=8.5,
        )
    seeds = " or ".join(str(int(s)) for s in sorted(rows.seeds.unique()))
    fig.suptitle(
        title
        or f"What each trick did: {len(rows)} counted paired lines in {rows.regime.nunique()} regimes "
        f"(named in each label), {seeds} seeds each",
        fontsize=10.5,
    )
    handles = [Patch(color=WORD_COLORS[w], label=f"trigger: {w}") for w in FIRES if w in set(rows.fires)]
    handles += [
        Line2D([], [], ls="", marker=m, color="#444444", mfc="#444444" if f else "white", mew=1.4, label=v)
        for v, (m, f) in MARKERS.items()
    ]
    handles += [
        Line2D([], [], color="#444444", lw=2.2, label="bar: 95% CI over seeds (paired by seed)"),
        Line2D([], [], ls="", marker="|", ms=9, mew=1.6, color="black", label="| : +detectable (right of it: shown)"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=4, fontsize=7.5, frameon=False)
    return fig
