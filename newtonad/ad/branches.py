"""The decisions a traced function takes on traced values: the guards of a guarded trace.

A function that branches on what it computes -- ``if x[0] > 0:``, ``while err > tol:``,
``max(a, b)`` of traced scalars, ``y if c else z`` -- cannot be recorded as one
straight-line program for every input. A *guarded trace* follows the branch taken at one
point: the function runs on tracers that carry that point's values, and every
``bool()`` of a traced value (what ``if``, ``while``, ``and``, ``assert`` and the
comparisons inside ``max`` call) is answered from the value and recorded here as a
decision: the traced condition and its outcome. The trace is then an ordinary program,
valid wherever all its decisions come out the same (:mod:`newtonad.ad.trace` builds the
program that checks them; :mod:`newtonad._programs` keeps one program per path).

One :class:`Recording` per trace level, per thread (a thread using eager
``newtonad.Var`` values while another traces is not affected). Like :mod:`.lifting`,
this module imports nothing else of newtonad.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

__all__ = ["Recording", "recording", "owner"]


class Recording:
    """The decisions of one guarded trace: ``(condition Var, outcome)`` in the order taken.

    Parameters
    ----------
    start : int
        The id of the trace's first Var: Vars with larger ids belong to it (or to a trace
        nested in it, which has its own recording).
    """

    __slots__ = ("start", "decisions", "_taken")

    def __init__(self, start: int):
        self.start = start
        self.decisions: list[tuple[Any, bool]] = []
        self._taken: dict[int, bool] = {}

    def decide(self, var: Any, value: Any) -> bool:
        """The outcome of ``bool(var)`` from its value ``value``, recorded once per Var."""
        if getattr(value, "size", 1) != 1:
            raise ValueError(
                "The truth value of a traced array with more than one element is ambiguous "
                f"(shape {tuple(value.shape)}): use np.any(c) or np.all(c) for a branch, or "
                "np.where(c, a, b) to choose elementwise")
        outcome = bool(value.reshape(()) if hasattr(value, "reshape") else value)
        if var.id not in self._taken:
            self._taken[var.id] = outcome
            self.decisions.append((var, outcome))
        return outcome


class _Levels(threading.local):
    def __init__(self) -> None:
        self.stack: list[Recording] = []


_levels = _Levels()


@contextlib.contextmanager
def recording(start: int) -> Iterator[Recording]:
    """Record the decisions on Vars made from id ``start`` on, while the block runs."""
    rec = Recording(start)
    _levels.stack.append(rec)
    try:
        yield rec
    finally:
        _levels.stack.pop()


def owner(var_id: int) -> Recording | None:
    """The innermost recording a Var of id ``var_id`` belongs to (``None``: no guarded
    trace made it -- an eager Var, or a Var of an abstract trace)."""
    stack = _levels.stack
    for rec in reversed(stack):
        if var_id >= rec.start:
            return rec
    return None
