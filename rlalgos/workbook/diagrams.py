"""Teaching pictures drawn as boxes and arrows: GRPO's failure chain, the family tree, PPO vs GRPO data flow.

* :func:`failure_chain`: the failures of vanilla GRPO that feed each other, and
  where each of DAPO's tricks cuts the chain.
* :func:`dataflow`: which models PPO and GRPO run, and what each computes.
* :func:`family_tree`: the algorithm progression (REINFORCE -> PPO -> GRPO -> DAPO) and
  where each later variant, loss and the rollout correction sit, with their papers.
* :func:`course_map`: the course's notebooks in the learner's order, one of them marked "you are here".

The token-level picture of the loss weights is :mod:`rlalgos.workbook.loss_weights`.
``python docs/make_figures.py`` renders them into docs/figures/.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, Rectangle

from .drawing import BLUE, SKY, GREEN, ORANGE, VERMILLION, GREY, FILL, EDGE, arrow, box, canvas, cut

# --------------------------------------------------------------------------- #
# 1. The failure chain of vanilla GRPO
# --------------------------------------------------------------------------- #


def failure_chain(ax=None):
    """GRPO's failures as boxes and arrows, with DAPO's four tricks drawn as cuts.

    Top row: the symmetric clip (acting from a rollout's second optimizer step) starves
    rare tokens -> entropy collapse -> groups whose G answers all score the same (A = 0,
    no gradient) -> a smaller effective batch. Bottom row: per-answer averaging dilutes
    each token of a long answer -> answers grow -> truncation -> noisy rewards, which
    feed the noisy gradient too. DAPO's overlong shaping is two cuts: the soft penalty
    on answers growing into the limit, the filter (off by default) on truncation.
    Returns the Figure (``ax``'s figure when given; draw on a ~10 x 5.5 inch axis).
    """
    fig, ax = canvas(ax, (10, 5.5), (0, 10), (0, 5.5))
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

    box(
        ax,
        xs[0],
        top,
        w,
        h,
        "clip at 1 + ε (PPO's)",
        "from a rollout's 2nd optimizer\nstep, A > 0: no push past a\nratio of 1.2, so a rare good\ntoken is pushed up only ×1.2\nper rollout",
        "cause",
    )
    box(
        ax,
        xs[1],
        top,
        w,
        h,
        "entropy collapse",
        "the policy becomes\nnear-deterministic;\nexploration stops",
        "failure",
    )
    box(
        ax,
        xs[2],
        top,
        w,
        h,
        "zero-variance groups",
        "a sharp policy answers the\nsame way G times: equal\nrewards → A = 0 → no gradient",
        "failure",
    )
    box(
        ax,
        xs[3],
        top,
        w,
        h,
        "smaller effective batch",
        "fewer answers carry\nsignal → noisier gradient,\nlearning stalls",
        "effect",
    )
    box(
        ax,
        xs[0],
        bottom,
        w,
        h,
        "long answers diluted",
        "per-answer mean: a token\nweighs ∝ 1/|y|, so each token\nof a long wrong answer is\nbarely pushed",
        "failure",
    )
    box(ax, xs[1], bottom, w, h, "answers grow", "rambling costs little,\nso lengths drift up", "effect")
    box(ax, xs[2], bottom, w, h, "truncation", "answers run into\nmax_new_tokens", "failure")
    box(
        ax,
        xs[3],
        bottom,
        w,
        h,
        "noisy rewards",
        "an answer cut before its\nfinal number scores 0,\nhowever good its working",
        "effect",
    )

    for row in (top, bottom):
        for a, b in zip(xs, xs[1:]):
            arrow(ax, (a + w / 2, row), (b - w / 2, row))
    arrow(ax, (xs[3], bottom + h / 2), (xs[3], top - h / 2))
    arrow(ax, (xs[2], bottom + h / 2), (xs[2], top - h / 2), dashed=True)
    ax.text(
        xs[2] + 0.08,
        (top + bottom) / 2,
        "all G cut off\nand wrong\n→ all equal",
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
    cut(ax, gap[0], top, "clip-higher", "ε_high = 0.28: every token's cap\nrises from ×1.2 to ×1.28 (A > 0)", 4.45)
    cut(ax, gap[2], top, "dynamic sampling", "drop all-equal groups,\nresample to a full batch", 4.45)
    cut(ax, gap[0], bottom, "token-level loss (token-mean)", "every token weighs 1 / Σ_j |y_j|", 0.93)
    cut(ax, gap[1], bottom, "overlong penalty", "soft penalty over the\nlast L_c tokens", 0.93)
    cut(ax, gap[2], bottom, "overlong filter", "mask truncated answers\n(off by default)", 0.93)

    note_x, note_y = 3.0, (top + bottom) / 2
    ax.text(
        note_x,
        note_y,
        "optional side notes: KL off (β = 0) frees the policy\nfrom the reference; an entropy monitor can act on collapse",
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
            Rectangle((0, 0), 1, 1, fc=FILL["cause"], ec=EDGE["cause"], lw=1.5, label="cause (PPO's clip)"),
            Rectangle((0, 0), 1, 1, fc=FILL["failure"], ec=ORANGE, lw=1.5, label="failure"),
            Rectangle((0, 0), 1, 1, fc=FILL["effect"], ec=GREY, lw=1.5, label="consequence"),
            Rectangle((0, 0), 1, 1, fc=VERMILLION, ec=VERMILLION, label="cut by a DAPO trick"),
            Line2D([], [], color=GREY, ls="--", label="only in the extreme case"),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, 0.93),
        fontsize=7.5,
        frameon=False,
        ncol=2,
        handlelength=1.2,
    )
    return fig


# --------------------------------------------------------------------------- #
# 2. The family tree: the progression and where each variant sits
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
    fig, ax = canvas(ax, (12, 6), (0, 12), (0, 6))
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
        box(ax, x, top, w, h, title, body, "trained", size=7.5)
    for a, b in zip(xs, xs[1:]):
        arrow(ax, (a + w / 2, top), (b - w / 2, top))
    mid = 2.85
    box(ax, xs[0], mid, w, 1.45, *TREE_RLOO, "function", size=7.2)
    arrow(ax, (xs[0], top - h / 2), (xs[0], mid + 1.45 / 2))
    (va, vb), (la, lb) = TREE_VARIANTS, TREE_LOSSES
    box(ax, 5.35, mid, 3.75, 1.45, va, vb, "note", size=7.2)
    box(ax, 9.55, mid, 4.45, 1.45, la, lb, "note", size=7.2)
    arrow(ax, (xs[2] - 0.35, top - h / 2), (5.9, mid + 1.45 / 2))
    arrow(ax, (xs[2] + 0.35, top - h / 2), (9.0, mid + 1.45 / 2))
    box(ax, 6, 1.25, 11.4, 0.85, *TREE_SAMPLES, "note", size=7.2)
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
# 3. PPO vs GRPO data flow
# --------------------------------------------------------------------------- #

STEP_Y = [5.3 - 0.64 * i for i in range(8)]  # y of each pipeline step, top to bottom


def _pipeline(ax, title: str, steps: Sequence[tuple[str, str]], models: dict[int, tuple[str, str, str]], footer: str):
    """One panel: data steps (title, detail) down the right column, the model that computes a step beside it."""
    ax.text(2.9, 6.05, title, ha="center", va="center", fontsize=12.5, fontweight="bold")
    sx, sw, mx, mw, h = 3.75, 3.35, 1.0, 1.75, 0.48
    for i, (name, detail) in enumerate(steps):
        box(ax, sx, STEP_Y[i], sw, h, name, detail, kind="data", size=7.5)
        if i:
            arrow(ax, (sx, STEP_Y[i - 1] - h / 2), (sx, STEP_Y[i] + h / 2))
    for i, (name, role, kind) in models.items():
        box(ax, mx, STEP_Y[i], mw, h, name, role, kind, size=7)
        arrow(
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
        canvas(a, None, (0, 5.8), (-0.1, 6.35))
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
# 4. The course map: every notebook, one of them "you are here"
# --------------------------------------------------------------------------- #

# (notebook, short title, row, column): the learner's order, left to right, top row then bottom row
COURSE = (
    ("00", "the task and\nthe base model", 0, 0),
    ("01", "REINFORCE", 0, 1),
    ("02", "PPO", 0, 2),
    ("03", "GRPO", 0, 3),
    ("03b", "KL estimators\n(appendix)", 1, 3),
    ("04", "improved GRPO\n(DAPO)", 0, 4),
    ("04b", "where DAPO's\nfixes help", 0, 5),
    ("05", "the four\nside by side", 0, 6),
    ("12", "where reasoning\ncomes from", 0, 7),
    ("13", "expert\niteration", 0, 8),
    ("06", "trouble-\nshooting", 1, 4),
    ("07", "a learned\nreward model", 1, 5),
    ("08", "after DAPO\n(GSPO, Dr. GRPO...)", 1, 6),
    ("09", "exploration", 1, 7),
    ("09b", "pass@k, and\nDAPO's switches", 1, 8),
    ("10", "what the\nengines do now", 2, 7),
    ("11", "what matters\nwhen", 2, 8),
)


def course_map(here: str | None = None, ax=None):
    """The course's notebooks as boxes in the learner's order: 00-05 build the four algorithms and compare them
    (12 and 13, on where the reasoning comes from, may be read right after 05), 06-10 take them into practice and
    past DAPO, 03b is 03's optional appendix and 11 the synthesis. ``here`` (e.g. ``"05"``) is drawn filled and
    named in the title. Returns the Figure (draw on a ~9 x 2.6 inch axis)."""
    if here is not None and here not in {c[0] for c in COURSE}:
        raise ValueError(f"unknown notebook {here!r}; use one of {', '.join(c[0] for c in COURSE)}")
    fig, ax = canvas(ax, (9.0, 2.6), (0, 9.0), (0, 2.6))
    w, h, dx = 0.9, 0.56, 0.99
    x0, ys = 0.55, (1.98, 1.2, 0.42)
    pos = {nb: (x0 + col * dx, ys[row]) for nb, _, row, col in COURSE}
    for nb, title, row, _ in COURSE:
        x, y = pos[nb]
        mine = nb == here
        ax.add_patch(
            FancyBboxPatch(
                (x - w / 2, y - h / 2),
                w,
                h,
                boxstyle="round,pad=0,rounding_size=0.06",
                fc=ORANGE
                if mine
                else (FILL["note"] if nb == "03b" else FILL["trained"] if row == 0 else FILL["function"]),
                ec="black" if mine else (SKY if nb == "03b" else BLUE if row == 0 else GREEN),
                lw=2.2 if mine else 1.0,
                ls="--" if nb == "03b" else "-",
                zorder=2,
            )
        )
        ax.text(x, y + 0.13, nb, ha="center", va="center", fontsize=8.5, fontweight="bold", zorder=3)
        ax.text(x, y - 0.1, title, ha="center", va="center", fontsize=5.6, linespacing=1.0, zorder=3)
    main = ["00", "01", "02", "03", "04", "04b", "05", "06", "07", "08", "09", "09b", "10", "11"]
    for a, b in zip(main, main[1:]):
        (xa, ya), (xb, yb) = pos[a], pos[b]
        if ya == yb:
            arrow(ax, (xa + w / 2, ya), (xb - w / 2, yb))
        else:  # down a row and to the left: 05 -> 06, 09b -> 10
            arrow(ax, (xa - 0.2, ya - h / 2), (xb + 0.2, yb + h / 2))
    for a, b in (("05", "12"), ("12", "13")):
        arrow(ax, (pos[a][0] + w / 2, pos[a][1]), (pos[b][0] - w / 2, pos[b][1]), colour=GREY, dashed=True)
    arrow(ax, (pos["03"][0], pos["03"][1] - h / 2), (pos["03b"][0], pos["03b"][1] + h / 2), colour=GREY, dashed=True)
    ax.text(
        0.1,
        0.55,
        "black arrows: the main path\ngrey dashed: optional (03b), or another\norder (12-13 may follow 05; 11 comes last)",
        ha="left",
        va="center",
        fontsize=6.2,
        color="#333333",
    )
    title = "The course" if here is None else f"The course: you are here, at {here} (filled)"
    ax.text(4.5, 2.5, title, ha="center", va="center", fontsize=9.5, fontweight="bold")
    return fig
