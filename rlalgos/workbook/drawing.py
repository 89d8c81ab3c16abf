"""Boxes, arrows and cuts for the teaching pictures of :mod:`rlalgos.workbook.diagrams`: the palette
and the drawing helpers (coordinates in data units; the diagrams use 1 unit ~ 1 inch)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

# Okabe-Ito: distinguishable under the common colour-vision deficiencies.
BLUE, SKY, GREEN, ORANGE, VERMILLION, GREY = "#0072B2", "#56B4E9", "#009E73", "#E69F00", "#D55E00", "#7F7F7F"
FILL = {
    "failure": "#FCE9C4",
    "effect": "#EDEDED",
    "cause": "#FFFFFF",
    "trained": "#D3E6F3",
    "frozen": "#E6E6E6",
    "function": "#CDEBE1",
    "data": "#FFFFFF",
    "absent": "#FFFFFF",
    "note": "#FFFFFF",
}
EDGE = {
    "failure": ORANGE,
    "effect": GREY,
    "cause": "#333333",
    "trained": BLUE,
    "frozen": GREY,
    "function": GREEN,
    "data": "#333333",
    "absent": "#AAAAAA",
    "note": SKY,
}


def canvas(ax, size: tuple[float, float] | None, xlim: tuple[float, float], ylim: tuple[float, float]):
    """A blank axis with fixed limits (a new figure of ``size`` inches when ``ax`` is None)."""
    if ax is None:
        fig = plt.figure(figsize=size)
        ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_axis_off()
    return ax.figure, ax


def box(
    ax, x: float, y: float, w: float, h: float, title: str, body: str = "", kind: str = "failure", size: float = 8.0
):
    """A rounded box centred at (x, y): a bold title line and a smaller body under it."""
    dashed = kind in ("absent", "note")
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y - h / 2),
            w,
            h,
            boxstyle="round,pad=0,rounding_size=0.08",
            fc=FILL[kind],
            ec=EDGE[kind],
            lw=1.0 if dashed else 1.6,
            ls="--" if dashed else "-",
            zorder=2,
        )
    )
    colour = "#888888" if kind == "absent" else "black"
    if not body:
        ax.text(x, y, title, ha="center", va="center", fontsize=size + 1, fontweight="bold", color=colour, zorder=3)
        return
    lines = body.count("\n") + 1
    line_h = size * 1.25 / 72  # inches per body line
    top = y + (lines * line_h + (size + 1) * 1.3 / 72) / 2
    ax.text(x, top, title, ha="center", va="top", fontsize=size + 1, fontweight="bold", color=colour, zorder=3)
    ax.text(
        x,
        top - (size + 1) * 1.35 / 72,
        body,
        ha="center",
        va="top",
        fontsize=size,
        color=colour,
        linespacing=1.1,
        zorder=3,
    )


def arrow(ax, start, end, colour: str = "#333333", dashed: bool = False, rad: float = 0.0):
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=14,
            lw=1.5,
            color=colour,
            ls="--" if dashed else "-",
            connectionstyle=f"arc3,rad={rad}",
            shrinkA=0,
            shrinkB=0,
            zorder=1,
        )
    )


def cut(ax, x: float, y: float, label: str, detail: str, label_y: float):
    """A trick that cuts a link: a vermillion bar across the arrow at (x, y), and the trick's
    name (bold, with a scissors mark) and detail (boxed) at ``label_y``, above or below, joined by a leader."""
    ax.plot([x, x], [y - 0.22, y + 0.22], color=VERMILLION, lw=5, solid_capstyle="butt", zorder=4)
    above = label_y > y
    ax.plot([x, x], [y + (0.22 if above else -0.22), label_y], color=VERMILLION, lw=0.8, ls=":", zorder=1)
    boxed = dict(
        ha="center",
        fontsize=8,
        linespacing=1.15,
        zorder=5,
        bbox=dict(boxstyle="round,pad=0.3", fc="white", ec=VERMILLION, lw=1.2),
    )
    heading = dict(ha="center", fontsize=8.5, fontweight="bold", zorder=5)
    if above:  # the box sits on label_y, the name on top of it
        box = ax.text(x, label_y + 0.04, detail, va="bottom", **boxed)
        ax.annotate(
            f"✂ {label}", (0.5, 1), xycoords=box, xytext=(0, 4), textcoords="offset points", va="bottom", **heading
        )
    else:  # the name hangs from label_y, the box under it
        name = ax.text(x, label_y, f"✂ {label}", va="top", **heading)
        ax.annotate(detail, (0.5, 0), xycoords=name, xytext=(0, -5), textcoords="offset points", va="top", **boxed)
