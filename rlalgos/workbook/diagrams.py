"""Teaching pictures: GRPO's failure chain, PPO vs GRPO data flow, and per-token loss weights.

* :func:`failure_chain`: the failures of vanilla GRPO that feed each other, and
  where each of DAPO's tricks cuts the chain.
* :func:`dataflow`: which models PPO and GRPO run, and what each computes.
* :func:`family_tree`: the algorithm progression (REINFORCE -> PPO -> GRPO -> DAPO) and
  where each later variant, loss and the rollout correction sit, with their papers.
* :func:`token_view`: one batch drawn token by token, each token coloured by its
  weight in the loss under two aggregations (the length dilution made visible).
  :func:`token_weights` computes those weights by autograd through
  :func:`rlalgos.core.aggregate_loss`, so the picture cannot disagree with training.

``python docs/make_figures.py`` renders them into docs/figures/.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import TwoSlopeNorm
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from .. import core

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
TOKEN_CMAP = "RdBu"  # diverging: red = pushed down (A < 0), blue = pushed up (A > 0), white = 0
MODE_TITLES = {
    "seq-mean-token-mean": "per-answer mean (GRPO, seq-mean-token-mean): weight A_i / (B·|y_i|)",
    "token-mean": "token-level mean (DAPO, token-mean): weight A_i / Σ_j |y_j|",
    "seq-mean-token-sum-norm": "constant normaliser (Dr. GRPO, seq-mean-token-sum-norm): weight A_i / (B·T)",
}


# --------------------------------------------------------------------------- #
# Drawing helpers (coordinates in data units; the diagrams use 1 unit ~ 1 inch)
# --------------------------------------------------------------------------- #


def _canvas(ax, size: tuple[float, float] | None, xlim: tuple[float, float], ylim: tuple[float, float]):
    """A blank axis with fixed limits (a new figure of ``size`` inches when ``ax`` is None)."""
    if ax is None:
        fig = plt.figure(figsize=size)
        ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_axis_off()
    return ax.figure, ax


def _box(
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


def _arrow(ax, start, end, colour: str = "#333333", dashed: bool = False, rad: float = 0.0):
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


def _cut(ax, x: float, y: float, label: str, detail: str, label_y: float):
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


# --------------------------------------------------------------------------- #
# 1. The failure chain of vanilla GRPO
# --------------------------------------------------------------------------- #


def failure_chain(ax=None):
    """GRPO's failures as boxes and arrows, with DAPO's four tricks drawn as cuts.

    Top row: the symmetric clip starves rare tokens -> entropy collapse -> groups
    whose G answers all score the same (A = 0, no gradient) -> a smaller effective
    batch. Bottom row: per-answer averaging dilutes long answers -> answers grow ->
    truncation -> noisy rewards, which feed the noisy gradient too.
    Returns the Figure (``ax``'s figure when given; draw on a ~10 x 5.5 inch axis).
    """
    fig, ax = _canvas(ax, (10, 5.5), (0, 10), (0, 5.5))
    xs, w, h = (1.2, 3.7, 6.2, 8.7), 2.05, 1.12
    top, bottom = 3.62, 1.55
    ax.text(
        5,
        5.38,
        "Vanilla GRPO's failure chain, and where DAPO's tricks cut it",
        ha="center",
        va="center",
        fontsize=13,
        fontweight="bold",
    )

    _box(
        ax,
        xs[0],
        top,
        w,
        h,
        "clip at 1 + ε (PPO's)",
        "ratio capped at 1.2 where\nA > 0: a rare good token\ngains at most ×1.2 a step",
        "cause",
    )
    _box(
        ax,
        xs[1],
        top,
        w,
        h,
        "entropy collapse",
        "the policy becomes\nnear-deterministic;\nexploration stops",
        "failure",
    )
    _box(
        ax,
        xs[2],
        top,
        w,
        h,
        "zero-signal groups",
        "a sharp policy answers the\nsame way G times: equal\nrewards → A = 0 → no gradient",
        "failure",
    )
    _box(
        ax,
        xs[3],
        top,
        w,
        h,
        "smaller effective batch",
        "fewer answers carry\nsignal → noisier gradient,\nlearning stalls",
        "effect",
    )
    _box(
        ax,
        xs[0],
        bottom,
        w,
        h,
        "long answers diluted",
        "per-answer mean: a token\nweighs 1/|y|, so a long\nwrong answer is barely pushed",
        "failure",
    )
    _box(ax, xs[1], bottom, w, h, "answers grow", "rambling costs little,\nso lengths drift up", "effect")
    _box(ax, xs[2], bottom, w, h, "truncation", "answers run into\nmax_new_tokens", "failure")
    _box(ax, xs[3], bottom, w, h, "noisy rewards", "a right answer cut off\nscores 0", "effect")

    for row in (top, bottom):
        for a, b in zip(xs, xs[1:]):
            _arrow(ax, (a + w / 2, row), (b - w / 2, row))
    _arrow(ax, (xs[3], bottom + h / 2), (xs[3], top - h / 2))
    _arrow(ax, (xs[2], bottom + h / 2), (xs[2], top - h / 2), dashed=True)
    ax.text(
        xs[2] + 0.08,
        (top + bottom) / 2,
        "all G cut off\n→ all score 0",
        ha="left",
        va="center",
        fontsize=7.5,
        style="italic",
    )
    ax.text(
        xs[3] + 0.08,
        (top + bottom) / 2,
        "wrong labels\nin the batch",
        ha="left",
        va="center",
        fontsize=7.5,
        style="italic",
    )

    gap = [(a + b) / 2 for a, b in zip(xs, xs[1:])]
    _cut(ax, gap[0], top, "clip-higher", "ε_high = 0.28: rare tokens\ncan rise faster", 4.45)
    _cut(ax, gap[2], top, "dynamic sampling", "drop all-equal groups,\nresample to a full batch", 4.45)
    _cut(ax, gap[0], bottom, "token-level loss (token-mean)", "every token weighs 1 / Σ_j |y_j|", 0.93)
    _cut(
        ax,
        gap[2],
        bottom,
        "overlong shaping",
        "soft penalty over the last L_c tokens\n(or filter: mask truncated answers)",
        0.93,
    )

    note_x, note_y = 3.0, (top + bottom) / 2
    ax.text(
        note_x,
        note_y,
        "optional side notes: KL off (β = 0) frees the policy\nfrom the reference; an entropy monitor warns of collapse",
        ha="center",
        va="center",
        fontsize=7.5,
        color="#333333",
        zorder=3,
        bbox=dict(boxstyle="round,pad=0.3", fc="white", ec=SKY, lw=1.0, ls="--"),
    )
    ax.plot(
        [xs[1], xs[1]], [note_y + 0.26, top - h / 2], color=SKY, lw=1.0, ls=":", zorder=1
    )  # the note is about entropy
    ax.legend(
        handles=[
            Rectangle((0, 0), 1, 1, fc=FILL["failure"], ec=ORANGE, lw=1.5, label="failure"),
            Rectangle((0, 0), 1, 1, fc=FILL["effect"], ec=GREY, lw=1.5, label="consequence"),
            Rectangle((0, 0), 1, 1, fc=VERMILLION, ec=VERMILLION, label="cut by a DAPO trick"),
        ],
        loc="lower right",
        bbox_to_anchor=(1.0, 0.0),
        fontsize=7.5,
        frameon=False,
        ncol=1,
        handlelength=1.2,
    )
    return fig


# --------------------------------------------------------------------------- #
# 1b. The family tree: the progression and where each variant sits
# --------------------------------------------------------------------------- #

TREE_MAIN = (
    ("REINFORCE", "reward - baseline, x grad log pi;\none on-policy update per batch\nWilliams 1992 · notebook 01"),
    (
        "PPO + critic",
        "GAE from a learned critic;\nclipped ratio, several updates\nSchulman 2017, arXiv:1707.06347 · nb 02",
    ),
    ("GRPO", "group-normalised reward, no critic;\nk3 KL in the loss\nShao 2024, arXiv:2402.03300 · nb 03"),
    (
        "DAPO (improved GRPO)",
        "dynamic sampling, clip-higher,\ntoken-mean, overlong shaping\nYu 2025, arXiv:2503.14476 · nb 04",
    ),
)
TREE_VARIANTS = (
    "the advantage, the aggregation or the ratio (nb 08)",
    "Dr. GRPO: no std, sum / (B·L_max) · arXiv:2503.20783\n"
    "GSPO: one ratio per answer, clipped · arXiv:2507.18071\n"
    "dual-clip: for A < 0 the loss is at most -A·c · arXiv:1912.09729",
)
TREE_LOSSES = (
    "the clip replaced (loss_mode; nb 09, 10)",
    "Clip-Cov / KL-Cov: act on high-covariance tokens · arXiv:2505.22617\n"
    "CISPO: the clipped ratio as a weight, every token keeps\nits gradient · MiniMax-M1, arXiv:2506.13585\n"
    "SAPO: a smooth gate sigmoid(tau (r - 1)) · arXiv:2511.20347",
)
TREE_RLOO = (
    "the baseline or the reward",
    "RLOO: leave-one-out baseline\nAhmadian 2024, arXiv:2402.14740 · nb 08\n"
    "expert iteration (ei): the right answers\nonly, no baseline, no negatives\nSTaR arXiv:2203.14465 · RAFT arXiv:2304.06767",
)
TREE_SAMPLES = (
    "for any algorithm: the sampler is not the trainer (nb 10)",
    "the engine samples in bf16 / with top-p / with stale weights, the trainer scores in fp32: weigh each token by "
    "r = pi_trainer / pi_sampler\ntruncated (TIS, Yao et al. 2025: min(r, C)) or masked (MIS: drop tokens or answers "
    "with r > C) · TRL vllm_importance_sampling_*, verl rollout_correction",
)


def family_tree(ax=None):
    """The algorithm progression as a picture: REINFORCE -> PPO -> GRPO -> DAPO along the
    top, each a small diff of the last; RLOO and expert iteration under REINFORCE; under GRPO the variants that
    change its advantage, aggregation or ratio, and the losses that replace its clip; and
    along the bottom the rollout correction, which any of them can take. Each entry names
    its paper and the notebook that measures it.
    Returns the Figure (``ax``'s figure when given; draw on a ~12 x 6 inch axis).
    """
    fig, ax = _canvas(ax, (12, 6), (0, 12), (0, 6))
    ax.text(
        6,
        5.82,
        "The algorithms, each a small diff of the last, and where the later ideas sit",
        ha="center",
        va="center",
        fontsize=13,
        fontweight="bold",
    )
    xs, w, h, top = (1.5, 4.5, 7.5, 10.5), 2.75, 1.12, 4.85
    for x, (title, body) in zip(xs, TREE_MAIN):
        _box(ax, x, top, w, h, title, body, "trained", size=7.5)
    for a, b in zip(xs, xs[1:]):
        _arrow(ax, (a + w / 2, top), (b - w / 2, top))
    mid = 2.85
    _box(ax, xs[0], mid, w, 1.45, *TREE_RLOO, "function", size=7.2)
    _arrow(ax, (xs[0], top - h / 2), (xs[0], mid + 1.45 / 2))
    (va, vb), (la, lb) = TREE_VARIANTS, TREE_LOSSES
    _box(ax, 5.35, mid, 3.75, 1.45, va, vb, "note", size=7.2)
    _box(ax, 9.55, mid, 4.45, 1.45, la, lb, "note", size=7.2)
    _arrow(ax, (xs[2] - 0.35, top - h / 2), (5.9, mid + 1.45 / 2))
    _arrow(ax, (xs[2] + 0.35, top - h / 2), (9.0, mid + 1.45 / 2))
    _box(ax, 6, 1.25, 11.4, 0.85, *TREE_SAMPLES, "note", size=7.2)
    ax.legend(
        handles=[
            Rectangle(
                (0, 0), 1, 1, fc=FILL["trained"], ec=BLUE, lw=1.5, label="the four algorithms (rlalgos/algorithms/)"
            ),
            Rectangle(
                (0, 0), 1, 1, fc=FILL["function"], ec=GREEN, lw=1.5, label="a preset or a small diff of one of them"
            ),
            Rectangle(
                (0, 0),
                1,
                1,
                fc="white",
                ec=SKY,
                lw=1.0,
                ls="--",
                label="options of an algorithm (presets, loss_mode, rollout_*)",
            ),
        ],
        loc="lower center",
        bbox_to_anchor=(0.5, 0.02),
        fontsize=7.5,
        frameon=False,
        ncol=3,
        handlelength=1.2,
    )
    return fig


# --------------------------------------------------------------------------- #
# 2. PPO vs GRPO data flow
# --------------------------------------------------------------------------- #

STEP_Y = [5.3 - 0.64 * i for i in range(8)]  # y of each pipeline step, top to bottom


def _pipeline(ax, title: str, steps: Sequence[tuple[str, str]], models: dict[int, tuple[str, str, str]], footer: str):
    """One panel: data steps (title, detail) down the right column, the model that computes a step beside it."""
    ax.text(2.9, 6.05, title, ha="center", va="center", fontsize=12.5, fontweight="bold")
    sx, sw, mx, mw, h = 3.75, 3.35, 1.0, 1.75, 0.48
    for i, (name, detail) in enumerate(steps):
        _box(ax, sx, STEP_Y[i], sw, h, name, detail, kind="data", size=7.5)
        if i:
            _arrow(ax, (sx, STEP_Y[i - 1] - h / 2), (sx, STEP_Y[i] + h / 2))
    for i, (name, role, kind) in models.items():
        _box(ax, mx, STEP_Y[i], mw, h, name, role, kind, size=7)
        _arrow(
            ax,
            (mx + mw / 2, STEP_Y[i]),
            (sx - sw / 2, STEP_Y[i]),
            colour="#AAAAAA" if kind == "absent" else EDGE[kind],
            dashed=kind == "absent",
        )
    ax.text(
        2.9,
        0.12,
        footer,
        ha="center",
        va="bottom",
        fontsize=8,
        linespacing=1.2,
        bbox=dict(boxstyle="round,pad=0.3", fc="#F5F5F5", ec="#BBBBBB", lw=0.8),
    )


def dataflow(ax=None):
    """PPO (left) vs GRPO (right): the models each runs, what each computes, the forward passes.

    ``ax``: None for a new 11.5 x 6.6 inch figure, or a pair of axes. Returns the Figure.
    """
    if ax is None:
        fig, axes = plt.subplots(1, 2, figsize=(11.5, 6.6))
        fig.subplots_adjust(left=0.01, right=0.99, top=0.99, bottom=0.06, wspace=0.04)
    else:
        axes, fig = ax, ax[0].figure
    for a in axes:
        _canvas(a, None, (0, 5.8), (-0.1, 6.35))
    _pipeline(
        axes[0],
        "PPO: a learned critic, per-token advantages",
        [
            ("prompts", "a batch of P"),
            ("sample", "1 answer per prompt (or G)"),
            ("score", "s per answer"),
            ("log-probs", r"log $\pi_{old}$ and log $\pi_{ref}$ at every token"),
            ("per-token reward", r"$r_t = -\beta\,\mathrm{KL}_t$  (+ s at the last token)"),
            ("values", r"$V(s_t)$ at every token"),
            ("GAE(γ, λ)", r"an advantage $A_t$ per token (whitened)"),
            (r"loss → update $\pi_\theta$ and $V_\phi$", r"clipped surrogate($A_t$) + value loss"),
        ],
        {
            1: (r"policy $\pi_\theta$", "trained; samples, log-probs", "trained"),
            2: ("reward fn", "scores each answer", "function"),
            3: (r"reference $\pi_{ref}$", "frozen copy, for the KL", "frozen"),
            5: (r"critic $V_\phi$", "trained; a trunk copy\nwith a scalar head", "trained"),
        },
        "forward passes per step: policy, reference, critic (3 models)\ntrained: policy and critic (two models' optimiser states)",
    )
    _pipeline(
        axes[1],
        "GRPO: the group replaces the critic",
        [
            ("prompts", "a batch of P"),
            ("sample", "G answers per prompt"),
            ("score", r"$r_i$ per answer"),
            ("group statistics", "mean and std of the G scores"),
            ("advantage", r"$A_i = (r_i - \mathrm{mean}) / \mathrm{std}$, shared by all its tokens"),
            ("log-probs", r"log $\pi_{old}$ and log $\pi_{ref}$ at every token"),
            (
                r"loss → update $\pi_\theta$",
                r"clipped surrogate($A_i$) + $\beta$ · k3 KL($\pi_\theta \,\|\, \pi_{ref}$)",
            ),
        ],
        {
            1: (r"policy $\pi_\theta$", "trained; samples, log-probs", "trained"),
            2: ("reward fn", "scores each answer", "function"),
            3: ("no critic", "replaced by the group", "absent"),
            5: (r"reference $\pi_{ref}$", "frozen; its KL is in the loss", "frozen"),
        },
        "forward passes per step: policy, reference (2 models; no critic)\ntrained: the policy only (β = 0, as in DAPO, drops the reference too)",
    )
    fig.legend(
        handles=[
            Rectangle((0, 0), 1, 1, fc=FILL[k], ec=EDGE[k], lw=1.5, ls="--" if k == "absent" else "-", label=lab)
            for k, lab in (
                ("trained", "trained model"),
                ("frozen", "frozen model"),
                ("function", "reward function (no weights)"),
                ("absent", "absent"),
                ("data", "data / computation"),
            )
        ],
        loc="lower center",
        ncol=5,
        fontsize=8.5,
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
        handlelength=1.4,
    )
    return fig


# --------------------------------------------------------------------------- #
# 3. Token-level view of the loss weights
# --------------------------------------------------------------------------- #


def token_weights(advantages, mask, mode: str = "token-mean", max_len: int | None = None) -> np.ndarray:
    """Each token's weight in the policy-gradient loss: ``-d loss / d logp`` for
    ``loss = core.aggregate_loss(-A * logp, mask, mode)``, by autograd (so it is what training uses).

    Positive: the token's log-prob is pushed up; negative: down; 0 on padding.
    ``seq-mean-token-mean`` gives ``A_i / (B·|y_i|)``, ``token-mean`` gives ``A_i / Σ_j |y_j|``.

    advantages: (B,) one per answer, or (B, T) per token; mask: (B, T). Returns (B, T) float64.
    """
    m = torch.as_tensor(np.asarray(mask, dtype=np.float64))  # (B, T)
    a = torch.as_tensor(np.asarray(advantages, dtype=np.float64))
    a = a[:, None].expand_as(m) if a.dim() == 1 else a  # (B, T)
    logp = torch.zeros_like(m, requires_grad=True)
    core.aggregate_loss(-a * logp, m, mode, max_len).backward()
    return (-logp.grad * m).numpy()


def _display_token(tok: str) -> str:
    """Whitespace as visible marks, ``<eos>`` as ``eos``."""
    if len(tok) > 2 and tok[0] == "<" and tok[-1] == ">":
        return tok[1:-1]
    return {" ": "␣", "\n": "⏎", "\t": "⇥"}.get(tok, tok)


def token_view(
    tokens: Sequence[Sequence[str]],
    advantages,
    mask,
    rewards=None,
    rows: Sequence[int] | None = None,
    modes: Sequence[str] = ("seq-mean-token-mean", "token-mean"),
    max_tokens: int | None = None,
    title: str | None = None,
):
    """One batch drawn token by token, each token coloured by its loss weight under each aggregation.

    tokens: B lists of token strings, row i covering at least its masked positions (padding may be omitted);
    advantages: (B,) or (B, T); mask: (B, T), 1 on completion tokens; rewards: optional (B,), printed at the row's end.
    The weights (:func:`token_weights`) are computed on all B rows, since the aggregation normalises over
    the whole batch; ``rows`` picks the rows drawn (default all); ``max_tokens`` cuts the display width (…).
    One panel per mode, stacked, each with its own diverging colour scale centred at 0
    (blue: log-prob pushed up, red: pushed down). Returns the Figure.
    """
    mask = np.asarray(mask, dtype=np.float64)
    rows = list(range(mask.shape[0])) if rows is None else list(rows)
    lengths = mask.sum(1).astype(int)
    longest = int(max(lengths[rows]))
    width = longest if max_tokens is None else min(longest, max_tokens)
    cell, row_h = (0.27 if width <= 40 else 0.2), 0.36  # inches per token box, per row
    grid_w, label_w, cbar_w = width * cell + 0.3, 1.1, 0.75
    panel_h, head, gap = len(rows) * row_h, 0.32, 0.22
    top = 0.42 if title else 0.08
    fig_w = max(6.0, 0.1 + grid_w + label_w + cbar_w)
    fig_h = top + len(modes) * (head + panel_h) + (len(modes) - 1) * gap + 0.42
    fig = plt.figure(figsize=(fig_w, fig_h))
    if title:
        fig.text(0.1 / fig_w, 1 - 0.22 / fig_h, title, ha="left", va="center", fontsize=11, fontweight="bold")
    cmap = plt.get_cmap(TOKEN_CMAP)
    y = fig_h - top
    for mode in modes:
        w = token_weights(advantages, mask, mode)  # (B, T)
        vmax = float(np.abs(w[rows]).max()) or 1.0
        norm = TwoSlopeNorm(0.0, -vmax, vmax)
        y -= head + panel_h
        ax = fig.add_axes([0.1 / fig_w, y / fig_h, (grid_w + label_w) / fig_w, (panel_h + head) / fig_h])
        ax.set_xlim(0, (grid_w + label_w) / cell)
        ax.set_ylim(len(rows), -head / row_h)
        ax.set_axis_off()
        ax.text(
            0, -head / row_h / 2, MODE_TITLES.get(mode, mode), ha="left", va="center", fontsize=9.5, fontweight="bold"
        )
        for r, i in enumerate(rows):
            pos = np.flatnonzero(mask[i])
            for c, t in enumerate(pos[:width]):
                ax.add_patch(Rectangle((c + 0.04, r + 0.08), 0.92, 0.84, fc=cmap(norm(w[i, t])), ec="#BBBBBB", lw=0.4))
                tok = _display_token(tokens[i][t])
                ax.text(
                    c + 0.5,
                    r + 0.52,
                    tok,
                    ha="center",
                    va="center",
                    fontsize=7.5 if len(tok) < 2 else 6 if len(tok) < 4 else 4.5,
                    color="white" if abs(w[i, t]) > 0.6 * vmax else "black",
                    family="monospace",
                )
            if len(pos) > width:
                ax.text(width + 0.1, r + 0.5, "…", ha="left", va="center", fontsize=9)
            reward = f"r = {float(rewards[i]):g}, " if rewards is not None else ""
            ax.text(
                grid_w / cell,
                r + 0.5,
                f"{reward}{lengths[i]} tokens\nΣw = {w[i].sum():+.3f}",
                ha="left",
                va="center",
                fontsize=7,
                linespacing=1.1,
            )
        cax = fig.add_axes([(0.1 + grid_w + label_w + 0.05) / fig_w, y / fig_h, 0.12 / fig_w, panel_h / fig_h])
        cb = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), cax=cax)
        cb.set_ticks([-vmax, 0, vmax])
        cb.ax.tick_params(labelsize=6.5)
        cb.ax.yaxis.set_major_formatter(lambda v, _: f"{v:+.3f}" if v else "0")
        y -= gap
    fig.text(
        0.1 / fig_w,
        0.2 / fig_h,
        "colour: each token's weight w = −∂loss/∂log p (blue: pushed up, red: pushed down; scale per panel);"
        " Σw: the answer's total push",
        ha="left",
        va="center",
        fontsize=7.5,
        color="#333333",
    )
    return fig


def token_view_from_rollout(
    ro,
    tokenizer,
    rows: Sequence[int] | None = None,
    modes: Sequence[str] = ("seq-mean-token-mean", "token-mean"),
    adv_scale: str = "std",
    max_tokens: int | None = 60,
    title: str | None = None,
):
    """:func:`token_view` of a :class:`rlalgos.record.Rollout`: advantages from
    :func:`rlalgos.core.group_advantages` on its rewards, weights over the whole batch,
    drawn for ``rows`` (default: the first group)."""
    adv = core.group_advantages(ro.rewards, ro.group_size, adv_scale)  # (N,)
    tokens = [tokenizer.convert_ids_to_tokens(ids) for ids in ro.completion_ids.tolist()]
    rows = list(range(ro.group_size)) if rows is None else rows
    return token_view(
        tokens,
        adv.cpu().numpy(),
        ro.completion_mask.cpu().numpy(),
        ro.rewards.cpu().numpy(),
        rows,
        modes,
        max_tokens,
        title,
    )
