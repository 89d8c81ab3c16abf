"""Exercises that check themselves.

Notebooks 01 to 07, 09, 10, 12 and 13 have a few exercises each. Each is either a small piece
of code to write (a function the package already has, so the check compares
yours with it on fixed inputs) or a prediction about a run the notebook just
made (the check compares your answer with *that run's* measurements, so the
right answer is whatever this machine measured, including "within noise").

In a notebook::

    def my_group_advantages(rewards, group_size):
        ...                                   # your code

    check("03.1", my_group_advantages)

``check`` prints one line and returns ``True``/``False``: a tick and what was
measured, or a cross with what went wrong and a hint. A wrong answer, an
unanswered one (``...`` or ``None``) or code that raises all give that one line,
never a traceback. Each exercise's worked solution is the collapsed cell right
after it in the notebook (click to open); CI runs the notebooks with those
solution cells, so the checks and the solutions cannot drift apart.

:mod:`.judging` holds the registry and how answers are compared; the exercises
themselves are grouped by notebooks: :mod:`.foundations` (01-03), :mod:`.in_practice`
(04-07) and :mod:`.further` (09-13); importing this package registers them all.
"""

from . import foundations, further, in_practice  # noqa: F401  (registers their exercises)
from .foundations import KL_TARGETS
from .further import entropy_after_step, gradient_weight
from .in_practice import SYMPTOMS, token_weight
from .judging import EXERCISES, Exercise, NotAnswered, check, judge

__all__ = [
    "EXERCISES",
    "Exercise",
    "KL_TARGETS",
    "NotAnswered",
    "SYMPTOMS",
    "check",
    "entropy_after_step",
    "gradient_weight",
    "judge",
    "token_weight",
]
