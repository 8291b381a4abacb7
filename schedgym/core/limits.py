"""Refusals to compute a reference value at the size asked.

Some reference values of an episode (an offline optimum, an online ceiling) cost more than a
machine has beyond some size: a linear program with millions of variables, a dense Newton
system, an exact dynamic program. Their solvers then raise :class:`NotComputed` (or a subclass,
such as DeadlineWelfare's ``P1TooLarge``) with a one-line reason naming the size and the
largest they take, instead of running out of memory. ``schedgym compare`` reports such a value
as "not computed" with that reason and goes on with the rest of the table.
"""

from __future__ import annotations


class NotComputed(ValueError):
    """A reference value not computed at this size (the message says why, in one line).

    ``benchmark``: the name under which the value would have been reported (an offline
    benchmark's key such as ``"optimum"``, or an agent's name such as ``"myopic-opt"``);
    ``None`` when the raiser does not say."""

    benchmark: str | None = None

    def __init__(self, message: str, benchmark: str | None = None) -> None:
        super().__init__(message)
        if benchmark is not None:
            self.benchmark = benchmark

    @property
    def reason(self) -> str:
        """The message as one line."""
        return " ".join(str(self).split())
