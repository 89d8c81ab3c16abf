"""The exercises' machinery: the registry, the one-line verdict, and how answers are compared."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..stats import paired_effect, verdict_line


class NotAnswered(Exception):
    """The learner has not written an answer yet."""


@dataclass(frozen=True)
class Exercise:
    """One exercise: its id (``"NN.k"``, notebook NN), a title, a hint, and the judge.

    ``judge(answer, **measured) -> (right, detail)``: ``detail`` says what was
    compared (the measured numbers for a prediction, the offending input for code).
    """

    id: str
    title: str
    hint: str
    judge: Callable[..., tuple[bool, str]]


EXERCISES: dict[str, Exercise] = {}
"""exercise id -> :class:`Exercise`."""


def exercise(id: str, title: str, hint: str):
    """Register ``judge`` as the exercise ``id``."""

    def register(judge):
        EXERCISES[id] = Exercise(id, title, hint, judge)
        return judge

    return register


def judge(exercise_id: str, answer: Any, **measured) -> tuple[bool, str]:
    """``(right, one line)`` for ``answer``; never raises for a learner's mistake."""
    if exercise_id not in EXERCISES:
        raise ValueError(f"no exercise {exercise_id!r}; the exercises are {', '.join(sorted(EXERCISES))}")
    ex = EXERCISES[exercise_id]
    try:
        if _unanswered(answer):
            raise NotAnswered
        ok, detail = ex.judge(answer, **measured)
    except NotAnswered:
        return False, f"… {ex.id} {ex.title}: not answered yet (replace the ... above). Hint: {ex.hint}"
    except Exception as e:  # the learner's code raised: say what, not where
        ok, detail = False, f"your answer raised {type(e).__name__}: {e}"
    line = (
        f"✓ {ex.id} {ex.title}: right. {detail}" if ok else f"✗ {ex.id} {ex.title}: not yet. {detail}. Hint: {ex.hint}"
    )
    return ok, " ".join(line.split())  # one line, whatever the detail held


def _unanswered(answer) -> bool:
    """``None``, ``...``, or a list/tuple/dict still holding a ``...``."""
    if answer is None or answer is Ellipsis:
        return True
    if isinstance(answer, (list, tuple)):
        return any(_unanswered(a) for a in answer)
    if isinstance(answer, dict):
        return any(_unanswered(a) for a in answer.values())
    return False


WIDTH = 88
"""Printed verdicts wrap at this many characters (the book's text column, as tests/test_outputs.py counts it)."""


def check(exercise_id: str, answer: Any, **measured) -> None:
    """Print the verdict on ``answer`` (one line, wrapped at :data:`WIDTH` characters so that it fits the book's
    column). It returns nothing, so that a notebook cell ending in ``check(...)`` shows the verdict alone;
    :func:`judge` returns ``(right, line)`` for code that needs the answer's truth."""
    ok, line = judge(exercise_id, answer, **measured)
    print(textwrap.fill(line, width=WIDTH, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False))


# --------------------------------------------------------------------------- #
# How answers are compared
# --------------------------------------------------------------------------- #


def call(fn, *args):
    """Call the learner's function; ``None`` back means the body is still ``...``."""
    if not callable(fn):
        raise TypeError(f"expected a function, got {type(fn).__name__}")
    out = fn(*args)
    if out is None:
        raise NotAnswered
    return out


def _fmt(t: torch.Tensor) -> str:
    return str([round(v, 4) for v in t.flatten().tolist()])


def same(
    got, want: torch.Tensor, what: str, atol: float = 1e-4, rtol: float = 1e-3, against: str = "the package"
) -> tuple[bool, str]:
    """Compare a learner's numbers with the right ones (``against`` says where those come from):
    count, finiteness, then values within ``atol + rtol * |want|`` each."""
    got = torch.as_tensor(got, dtype=torch.float32).detach()
    want = want.detach().float()
    if got.numel() != want.numel():
        return False, f"for {what} you gave {got.numel()} numbers, expected {want.numel()} (shape {tuple(want.shape)})"
    got = got.reshape(want.shape)
    if not torch.isfinite(got).all():
        return False, f"for {what} you returned non-finite values {_fmt(got)}"
    if not torch.allclose(got, want, atol=atol, rtol=rtol):
        return False, f"for {what} you returned {_fmt(got)}, expected {_fmt(want)}"
    return True, f"matches {against} on {what}: {_fmt(want)}"


def choice(answer, truth, options: list[str], evidence: str) -> tuple[bool, str]:
    """A multiple-choice prediction; ``truth`` is a string or a set of accepted strings."""
    a = str(answer).strip().lower()
    opts = [o.lower() for o in options]
    if a not in opts:
        return False, f"answer one of {', '.join(repr(o) for o in options)}; you wrote {answer!r}"
    accepted = {truth.lower()} if isinstance(truth, str) else {t.lower() for t in truth}
    return a in accepted, f"this run measured: {evidence}"


def noise_verdict(base_runs, arm_runs, key: str, base: str, arm: str) -> tuple[str, str]:
    """Which side ended higher on ``key``, by the paired-over-seeds interval: ``arm``,
    ``base`` or ``noise`` (the interval contains 0, or there is one seed)."""
    e = paired_effect(base_runs, arm_runs, key)
    evidence = verdict_line(e, arm, base, means=True)
    if e["verdict"] != "shown":
        return "noise", evidence
    return (arm if e["diff"] > 0 else base), evidence


def which_higher(answer, runs, base: str, arm: str, key: str) -> tuple[bool, str]:
    """A prediction "which of two arms ended higher on ``key``, or noise", judged by their paired interval."""
    truth, evidence = noise_verdict(runs[base], runs[arm], key, base, arm)
    return choice(answer, truth, [base, arm, "noise"], evidence)
