"""Regenerate the teaching pictures in docs/figures/ (deterministic, no training, a few seconds).

    python docs/make_figures.py [--out docs/figures]

writes failure_chain.png, dataflow.png, family_tree.png, token_view.png and course_map/NN.png (the course map
with notebook NN marked, shown in that notebook's first cell).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from rlalgos import core  # noqa: E402
from rlalgos.workbook import diagrams, loss_weights  # noqa: E402

FIGURES = Path(__file__).resolve().parent / "figures"
EOS = "<eos>"


def example_batch():
    """One group of three answers to ``46+76+82=`` (right answer 204): two short, one long and wrong.

    Returns (tokens, advantages (3,), mask (3, T), rewards (3,)), advantages from core.group_advantages.
    """
    import torch

    answers = ["#204", "#214", "46+76=112;112+82=194#194"]
    rewards = np.array([1.0, 0.0, 0.0])
    T = max(len(a) for a in answers) + 1
    tokens = [list(a) + [EOS] + ["<pad>"] * (T - len(a) - 1) for a in answers]
    mask = np.array([[1.0] * (len(a) + 1) + [0.0] * (T - len(a) - 1) for a in answers])
    adv = core.group_advantages(torch.tensor(rewards), group_size=3).numpy()
    return tokens, adv, mask, rewards


def main(argv=None) -> list[Path]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=FIGURES, help="folder for the PNGs (default docs/figures)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tokens, adv, mask, rewards = example_batch()
    figures = {  # name -> how to draw it (each drawn, saved and closed in turn)
        "failure_chain": diagrams.failure_chain,
        "dataflow": diagrams.dataflow,
        "family_tree": diagrams.family_tree,
        "token_view": lambda: loss_weights.token_view(
            tokens,
            adv,
            mask,
            rewards,
            title="One group, rewards 1, 0, 0: the long wrong answer under the two aggregations",
        ),
    }
    figures.update({f"course_map/{nb}": (lambda nb=nb: diagrams.course_map(nb)) for nb, *_ in diagrams.COURSE})
    (args.out / "course_map").mkdir(exist_ok=True)
    written = []
    for name, draw in figures.items():
        fig = draw()
        path = args.out / f"{name}.png"
        fig.savefig(path, dpi=110, metadata={"Software": None})
        matplotlib.pyplot.close(fig)
        written.append(path)
        print(path)
    return written


if __name__ == "__main__":
    main()
