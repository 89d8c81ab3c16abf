"""Each token's weight in the policy-gradient loss, computed and drawn: the length dilution made visible.

* :func:`token_weights`: the weights by autograd through :func:`rlalgos.core.aggregate_loss`,
  so the picture cannot disagree with training.
* :func:`token_view`: one batch drawn token by token, each token coloured by its
  weight in the loss under two aggregations; :func:`token_view_from_rollout` draws a Rollout.

``python docs/make_figures.py`` renders the token view into docs/figures/.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import TwoSlopeNorm
from matplotlib.patches import Rectangle

from .. import core

TOKEN_CMAP = "RdBu"  # diverging: red = pushed down (A < 0), blue = pushed up (A > 0), white = 0
MODE_TITLES = {
    "seq-mean-token-mean": "per-answer mean (GRPO, seq-mean-token-mean): weight A_i / (B·|y_i|)",
    "token-mean": "token-level mean (DAPO, token-mean): weight A_i / Σ_j |y_j|",
    "seq-mean-token-sum-norm": "constant normaliser (Dr. GRPO, seq-mean-token-sum-norm): weight A_i / (B·T)",
}


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
