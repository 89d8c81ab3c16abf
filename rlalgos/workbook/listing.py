"""Reading the package's own code in a notebook: its source, printed for the page.

Spinning Up's way of teaching an algorithm is to quote the exact lines it explains; notebook 04
shows DAPO as a diff of GRPO that way. These helpers fetch a method's source as a class sees it
(:func:`source_of`), list what a subclass overrides (:func:`overridden`), diff one method against
its parent's (:func:`method_diff`), number a listing so that prose can cite its lines
(:func:`numbered`), find where an algorithm computes its KL term (:func:`kl_source`), and wrap
every line to the book's text column (:func:`wrapped`). :func:`hand_rollout` builds the small
hand-made :class:`~rlalgos.record.Rollout` that the listed methods are then run on.
"""

from __future__ import annotations

import difflib
import inspect
import textwrap
from typing import Sequence

import torch

from ..record import Rollout

WIDTH = 88
"""The printed page's width in characters (the course's limit for a printed line)."""


def _wrap_line(line: str, width: int, diff: bool = False) -> tuple[list[str], list[str]]:
    """One source line wrapped for the page, as (the lines of a trailing comment moved above the
    code, the code's lines); the first list is empty unless a too-wide line had such a comment."""
    if len(line) <= width:
        return [], [line]
    mark, body = (line[0], line[1:]) if diff and line[0] in "+- " else ("", line)
    indent = " " * (len(body) - len(body.lstrip()))
    code, _, comment = body.partition("  # ")
    moved = bool(comment and code.strip())  # a trailing comment: it goes above the code

    def wrap(piece: str, cont: str) -> list[str]:
        return [
            mark + p
            for p in textwrap.wrap(
                piece, width - len(mark), subsequent_indent=cont, break_long_words=False, break_on_hyphens=False
            )
        ]

    above = wrap(indent + "# " + comment, indent + "# ") if moved else []
    return above, wrap(code if moved else body, indent + "    ")


def wrapped(text: str, width: int = WIDTH, diff: bool = False) -> str:
    """``text`` with every line wider than ``width`` wrapped for the page.

    A trailing comment (``code  # comment``) moves onto its own line above the code, and a
    continuation is indented 4 more than its line. With ``diff=True`` a line's first character,
    a unified diff's ``+``, ``-`` or space, stays in front of every piece of it. Lines that fit,
    and words longer than the width, are left whole."""
    out = []
    for line in text.splitlines():
        above, code = _wrap_line(line, width, diff)
        out += above + code
    return "\n".join(out)


def source_of(cls: type, name: str) -> tuple[str, str]:
    """The source of ``cls.name`` as ``cls`` sees it (the first class along its MRO that defines
    it; a property's getter, a static or class method's function), dedented, and that class's
    name."""
    owner = next(k for k in cls.__mro__ if name in vars(k))
    attr = vars(owner)[name]
    fn = attr.fget if isinstance(attr, property) else getattr(attr, "__func__", attr)
    return textwrap.dedent(inspect.getsource(fn)), owner.__name__


def overridden(cls: type, base: type, skip: Sequence[str] = ("name", "Config")) -> tuple[list[str], list[str]]:
    """What ``cls`` defines in its own body, split in two: the names ``base`` also has (overridden),
    and the names ``base`` lacks (new); dunder names and ``skip`` left out. Each list in the
    order of ``cls``'s body."""
    own = [n for n in vars(cls) if not n.startswith("__") and n not in skip]
    return [n for n in own if hasattr(base, n)], [n for n in own if not hasattr(base, n)]


def method_diff(base: type, cls: type, name: str, width: int = WIDTH, context: int = 1) -> str:
    """A unified diff of method ``name`` from ``base``'s version to ``cls``'s (``-`` lines are
    ``base``'s, ``+`` lines ``cls``'s; ``context`` unchanged lines around each change), headed
    ``Owner.name`` and ``Cls.name``, wrapped to ``width`` with each line's mark kept."""
    old, owner = source_of(base, name)
    new, _ = source_of(cls, name)
    diff = difflib.unified_diff(
        old.splitlines(True), new.splitlines(True), f"{owner}.{name}", f"{cls.__name__}.{name}", n=context
    )
    return wrapped("".join(diff), width, diff=True)


def numbered(src: str, width: int = WIDTH, lines: tuple[int, int] | None = None) -> str:
    """``src`` with its line numbers (two digits and a space in front), so that prose can cite
    them: the number always stands on a line's code. A line wider than the page continues,
    unnumbered and aligned under it; a trailing comment moved above its code (see
    :func:`wrapped`) stands unnumbered above the numbered code. With ``lines=(first, last)``
    only those source lines are printed (both included), still under their own numbers."""
    first, last = lines or (1, len(src.splitlines()))
    out = []
    for i, line in enumerate(src.splitlines(), 1):
        if first <= i <= last:
            above, code = _wrap_line(line, width - 3)
            out += [f"   {part}" for part in above]
            out += [f"{i:2d} {part}" if j == 0 else f"   {part}" for j, part in enumerate(code)]
    return "\n".join(out)


def kl_source(cls: type, methods: Sequence[str] = ("advantages", "loss")) -> tuple[str, str, str] | None:
    """Where ``cls`` computes its KL term: the first of ``methods``, looked up along ``cls``'s MRO
    (its own class first), whose source calls ``core.kl_estimate``, as (owning class's name,
    method name, source); None if none does."""
    for owner in cls.__mro__:
        for name in methods:
            fn = vars(owner).get(name)
            if fn is not None and "kl_estimate" in inspect.getsource(fn):
                return owner.__name__, name, inspect.getsource(fn)
    return None


def hand_rollout(
    rewards: Sequence[float] | torch.Tensor,
    group_size: int,
    completion_mask: torch.Tensor | None = None,
    truncated: Sequence[bool] | torch.Tensor | None = None,
    old_logprobs: torch.Tensor | None = None,
    ref_logprobs: torch.Tensor | None = None,
) -> Rollout:
    """A hand-made :class:`Rollout` of ``N = len(rewards)`` answers in groups of ``group_size``:
    the rewards (N,), and where given the completion mask (N, T; default one token each), which
    answers were cut off (N,; default none) and the sampling-time and reference log-probs (N, T).
    Everything else is a placeholder (prompt ``p0``, ``p1``... per group, empty texts, token id 1)
    that no advantage or loss reads."""
    rewards = torch.as_tensor(rewards, dtype=torch.float)
    N = len(rewards)
    assert N % group_size == 0, "give whole groups: len(rewards) a multiple of group_size"
    mask = torch.ones(N, 1) if completion_mask is None else torch.as_tensor(completion_mask, dtype=torch.float)
    cut = torch.zeros(N, dtype=torch.bool) if truncated is None else torch.as_tensor(truncated, dtype=torch.bool)
    return Rollout(
        prompts=[f"p{i // group_size}" for i in range(N)],
        completions=[""] * N,
        rows=[{}] * N,
        prompt_ids=torch.ones(N, 1, dtype=torch.long),
        prompt_mask=torch.ones(N, 1, dtype=torch.long),
        completion_ids=torch.ones(mask.shape, dtype=torch.long),
        completion_mask=mask,
        truncated=cut,
        old_logprobs=old_logprobs,
        ref_logprobs=ref_logprobs,
        rewards=rewards,
        reward_parts={},
        group_size=group_size,
    )
