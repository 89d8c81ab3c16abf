"""The options of the commands that make the workbook's models: ``rlalgos sft``,
``trap-model``, ``emergence-model`` and ``rm``. Like :mod:`rlalgos.config`, this
module imports neither torch nor transformers, so ``--help`` answers at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..config import BASE_MODEL_DIR, REWARD_MODEL_DIR, TRAP_MODEL_DIR
from ..tasks import DATA_DIR


@dataclass
class SFTConfig:
    """Supervised fine-tuning of the tiny model on the addition task."""

    steps: int = 2000
    """Optimizer steps."""
    batch_size: int = 64
    """Examples per step."""
    lr: float = 3e-3
    """Peak AdamW learning rate (linear warmup over 5% of steps, cosine decay to 10%)."""
    direct_frac: float = 0.3
    """Share of targets written as a direct answer (``#204``) instead of the scratchpad."""
    hidden: int = 128
    """Model width."""
    layers: int = 4
    """Transformer blocks."""
    seed: int = 0
    """Seeds initialisation, data order and strategy choice."""
    out_dir: str = str(BASE_MODEL_DIR)
    """Where to ``save_pretrained`` the model and tokenizer."""
    overwrite: bool = False
    """Replace the model already in out_dir (its files only)."""
    data_dir: str = str(DATA_DIR)
    """Where the task's jsonl splits are (made with a fixed seed if missing)."""
    eval_prompts: int = 500
    """Test prompts for the accuracy report."""
    device: str = "auto"
    """``auto``, ``cpu`` or ``cuda``."""
    progress: bool = True
    """Show a progress bar."""


@dataclass
class TrapConfig:
    """The exploration regime's base model: a short fine-tune of the shipped one that makes
    direct answers reliable on easy prompts and the scratchpad rare everywhere (``--task trap``)."""

    steps: int = 300
    """Optimizer steps (each 32 easy + 32 hard prompts)."""
    lr: float = 1e-4
    """AdamW learning rate (constant, no weight decay)."""
    hard_scratchpad_frac: float = 0.1
    """Hard prompts whose target is the full scratchpad; the others teach only the choice, the first token ``#``."""
    easy_scratchpad_frac: float = 0.1
    """Easy prompts whose target is the scratchpad's first token only (the choice, never its working); the others are full direct answers."""
    base: str = ""
    """Model to start from; empty = the shipped base model."""
    seed: int = 0
    """Seeds the prompts and the targets."""
    out_dir: str = str(TRAP_MODEL_DIR)
    """Where to ``save_pretrained`` the model and tokenizer."""
    overwrite: bool = False
    """Replace the model already in out_dir (its files only)."""
    progress: bool = True
    """Show a progress bar."""


EMERGENCE_DIR = Path("data") / "emergence"
"""Where the emergence models go, under the working directory (the repository root for the notebooks and the commands)."""
EMERGENCE_KINDS = ("rare", "incompetent", "absent", "primed", "primed_wrong")


@dataclass
class EmergenceConfig:
    """A base model for the emergence experiments: the shipped model with the scratchpad made rare, incompetent or absent, or primed."""

    kind: Literal["rare", "incompetent", "absent", "primed", "primed_wrong"] = "rare"
    """What to make: ``rare`` (share ``share``, competence kept), ``incompetent`` (share ``share``, every sum trained wrong), ``absent`` (share below ``absent_share``), ``primed``/``primed_wrong`` (the incompetent model after ``prime_steps`` on right or half-wrong traces)."""
    share: float = 0.03
    """Target scratchpad share for ``rare`` and ``incompetent`` (the primed models start from the incompetent one at this share)."""
    lr: float = 3e-5
    """AdamW learning rate of the choice shift (constant, no weight decay)."""
    corrupt_steps: int = 150
    """``incompetent``: steps on wrong-sum traces (at lr 1e-4) before the choice shift."""
    prime_steps: int = 40
    """``primed``: steps of supervised fine-tuning on the priming traces (batches of 32, lr 1e-4)."""
    prime_traces: int = 256
    """``primed``: how many distinct training prompts the priming traces cover."""
    absent_share: float = 1e-4
    """``absent``: the share to shift below (40 steps of 16 x 8 answers then expect under one scratchpad answer)."""
    max_steps: int = 1000
    """Give up on the choice shift after this many steps (an error says how far it got)."""
    seed: int = 0
    """Seeds the prompts, the corruptions and the priming traces."""
    out_dir: str = ""
    """Where to ``save_pretrained``; empty = ``data/emergence/<kind>`` (with the share for ``rare``/``incompetent``)."""
    overwrite: bool = False
    """Replace the model already in out_dir (its files only)."""
    progress: bool = True
    """Show a progress bar."""

    def folder(self) -> Path:
        if self.out_dir:
            return Path(self.out_dir)
        name = f"{self.kind}_{self.share:g}" if self.kind in ("rare", "incompetent") else self.kind
        if self.kind in ("primed", "primed_wrong") and self.share != EmergenceConfig.share:
            name += f"_{self.share:g}"
        return EMERGENCE_DIR / name


@dataclass
class RMConfig:
    """Train a reward model on base-model samples labelled by the rule reward."""

    base: str = ""
    """Model whose trunk initialises the reward model and which samples the data; empty = the shipped base model."""
    prompts: int = 1200
    """Training prompts to sample completions for."""
    heldout_prompts: int = 200
    """Prompts (from the test split) held out for accuracy and AUC."""
    group_size: int = 8
    """Completions per prompt."""
    loss: str = "pairwise"
    """``pairwise`` (Bradley-Terry: -log sigmoid(r_chosen - r_rejected)) or ``bce`` (each completion against its 0/1 label)."""
    steps: int = 600
    """Optimizer steps."""
    batch_size: int = 64
    """Pairs (or completions) per step."""
    lr: float = 3e-4
    """AdamW learning rate."""
    seed: int = 0
    """Seeds sampling, pairing and initialisation."""
    out_dir: str = str(REWARD_MODEL_DIR)
    """Where to save_pretrained the reward model and its tokenizer."""
    overwrite: bool = False
    """Replace the model already in out_dir (its files only)."""
    device: str = "auto"
    """auto, cpu or cuda."""
    progress: bool = True
    """Show progress bars."""
