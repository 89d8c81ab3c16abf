"""What a run saves beside its weights, so that a resumed run continues the same numbers:
the order training prompts are drawn in, the algorithm's state (optimizer included), the
step and every random stream. :func:`save_run_checkpoint` writes it with the weights
(:func:`rlalgos.engine.runs.save_checkpoint`); :func:`restore_trainer_state` puts it back.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch

from . import distributed
from .runs import save_checkpoint


class PromptSampler:
    """Draws training rows without replacement, reshuffling each epoch (seeded, resumable)."""

    def __init__(self, rows: list[dict], seed: int):
        self.rows, self.rng, self.order = rows, random.Random(seed), []

    def __call__(self, n: int) -> list[dict]:
        out = []
        for _ in range(n):
            if not self.order:
                self.order = list(range(len(self.rows)))
                self.rng.shuffle(self.order)
            out.append(self.rows[self.order.pop()])
        return out

    def state_dict(self) -> dict:
        return {"rng": self.rng.getstate(), "order": list(self.order)}

    def load_state_dict(self, state: dict) -> None:
        self.rng.setstate(state["rng"])
        self.order = list(state["order"])


def save_run_checkpoint(run_dir: Path, policy, tokenizer, algo, step: int, prompts: PromptSampler) -> Path:
    """Model, tokenizer and trainer state (optimizer, algorithm, RNGs, prompt order, step)."""
    state = {
        "step": step,
        "algo": algo.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "prompts": prompts.state_dict(),
    }
    if torch.cuda.is_available():
        state["cuda_rng"] = torch.cuda.get_rng_state_all()
    state.update(
        distributed.rng_states()
    )  # several processes: each one's random state (a collective: every process calls this)
    return save_checkpoint(run_dir, policy, tokenizer, state) if distributed.is_main() else run_dir / "checkpoint"


def restore_trainer_state(state: dict, algo, prompts: PromptSampler) -> None:
    """The trainer state :func:`save_run_checkpoint` wrote back into ``algo``, ``prompts`` and the
    random streams (each process its own); the weights are the caller's."""
    algo.load_state_dict(state["algo"])
    prompts.load_state_dict(state["prompts"])
    torch.set_rng_state(state["torch_rng"])
    if "cuda_rng" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    distributed.restore_rng(state)
