"""What every native solver does between iterations: stop tests, callback, table, result.

A solver owns its loop and its mathematics; the :class:`Monitor` owns the rest:
the iteration budget and the wall clock, the user's callback with scipy's
semantics (``StopIteration`` halts the run), the ``disp`` table, ``return_all``,
and the assembly of the final :class:`scipy.optimize.OptimizeResult`.

Each row of the table is also an :class:`IterationRecord`, handed to the functions
registered with :func:`watch` whether or not ``disp`` is set: a front end (the
command line's progress bar and thinned table) reads the numbers, not printed text.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import numpy as np
from scipy.optimize import OptimizeResult

from .problem import FlatProblem

__all__ = ["Status", "Monitor", "wrap_callback", "nonfinite_note", "clock", "past",
           "DeadlinePassed", "IterationRecord", "watch"]


@dataclass(frozen=True)
class IterationRecord:
    """One row of a native solver's iteration table.

    Attributes
    ----------
    k : int
        Iteration (0 for the starting point).
    f, gnorm : float
        Objective value and gradient norm at the iterate.
    step : float
        Trust radius or step length; its name is ``step_label``.
    inner : int
        Inner (CG or Lanczos) iterations of this step.
    elapsed : float
        Seconds since the run started.
    step_label : str
        ``"radius"`` or ``"step"``.
    """

    k: int
    f: float
    gnorm: float
    step: float
    inner: int
    elapsed: float
    step_label: str


_WATCHERS: list[Callable[[IterationRecord], None]] = []


@contextlib.contextmanager
def watch(listener: Callable[[IterationRecord], None]) -> Iterator[None]:
    """Call ``listener(record)`` with every :class:`IterationRecord` of the native runs
    made inside the ``with`` block (row 0 included; ``disp`` need not be set).

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> rows = []
    >>> with watch(rows.append):
    ...     res = nad.minimize(lambda x: np.sum((x - 1.0) ** 2), np.zeros(3))
    >>> rows[0].k, rows[-1].k == res.nit
    (0, True)
    """
    _WATCHERS.append(listener)
    try:
        yield
    finally:
        _WATCHERS.remove(listener)


def clock() -> float:
    """Seconds on the solvers' clock (``time.perf_counter``), the one time source of
    every ``max_time`` test: a test replaces this function with a fake clock."""
    return time.perf_counter()


def past(deadline: float) -> bool:
    """Whether the :func:`clock` has reached ``deadline`` (never, for ``inf``)."""
    return deadline != math.inf and clock() >= deadline


class DeadlinePassed(Exception):
    """Raised by a subproblem that finds the ``max_time`` deadline passed before an
    expensive step (a Hessian, a factorisation); the driver then stops the run."""


class Status(enum.IntEnum):
    """Why a native solver stopped (the ``status`` field of the result)."""

    SUCCESS = 0
    MAXITER = 1
    NO_PROGRESS = 2
    NUMERICAL = 3
    MAX_TIME = 4
    NONFINITE_START = 5
    CALLBACK = 99

    @property
    def message(self) -> str:
        """The human-readable reason, scipy's wording where scipy has one."""
        return _MESSAGES[self]


_MESSAGES = {
    Status.SUCCESS: "Optimization terminated successfully.",
    Status.MAXITER: "Maximum number of iterations has been exceeded.",
    Status.NO_PROGRESS: "Desired error not necessarily achieved due to precision loss.",
    Status.NUMERICAL: "A linalg error occurred, such as a non-psd Hessian.",
    Status.MAX_TIME: "Maximum time (max_time) has been exceeded.",
    Status.NONFINITE_START: "The objective is not finite at the initial point.",
    Status.CALLBACK: "`callback` raised `StopIteration`.",
}


def wrap_callback(callback: Optional[Callable], unflatten: Callable[[np.ndarray], np.ndarray]
                  ) -> Optional[Callable[[np.ndarray, float], None]]:
    """Adapt a user callback to ``cb(x_flat, f)``, following scipy's convention.

    A callback whose only parameter is named ``intermediate_result`` receives an
    ``OptimizeResult`` with ``x`` (in the user's shape) and ``fun``; any other
    callback receives a copy of ``x``. ``StopIteration`` raised by it propagates
    to the :class:`Monitor`, which ends the run.
    """
    if callback is None:
        return None
    try:
        params = set(inspect.signature(callback).parameters)
    except (TypeError, ValueError):
        params = set()
    if params == {"intermediate_result"}:
        def call(x: np.ndarray, f: float) -> None:
            callback(intermediate_result=OptimizeResult(x=unflatten(x.copy()), fun=f))
    else:
        def call(x: np.ndarray, f: float) -> None:
            callback(unflatten(x.copy()))
    return call


def nonfinite_note(counts: dict[str, int]) -> str:
    """A sentence on the nan / inf values met (``FlatProblem.nonfinite``), or ``""``."""
    parts = []
    if counts.get("fun"):
        parts.append(f"the objective's value at {counts['fun']} trial point(s)")
    if counts.get("jac"):
        parts.append(f"its gradient at {counts['jac']} trial point(s)")
    if counts.get("hess"):
        parts.append(f"its Hessian at {counts['hess']} iterate(s), where steepest-descent "
                     "steps were taken instead of Newton steps")
    if not parts:
        return ""
    return (" The objective returned nan or inf: " + "; ".join(parts)
            + ". The result is the best finite point found.")


class Monitor:
    """Stop tests, reporting and bookkeeping shared by the native solvers.

    Parameters
    ----------
    problem : FlatProblem
        The objective being minimised (for counters and shapes).
    maxiter : int
        Iteration budget.
    max_time : float or None
        Wall-clock budget in seconds, measured from construction.
    callback : callable or None
        ``cb(x_flat, f)`` as made by :func:`wrap_callback`.
    disp : bool
        Print an iteration table and a summary.
    return_all : bool
        Keep every iterate for ``result.allvecs``.
    step_label : str
        Header of the step column: ``"radius"`` or ``"step"``.
    started : float, optional
        :func:`clock` value at which the run started (``max_time`` and ``time`` count
        from it), when that was before construction: ``minimize`` evaluates ``x0``
        first.
    """

    def __init__(self, problem: FlatProblem, *, maxiter: int, max_time: Optional[float],
                 callback: Optional[Callable[[np.ndarray, float], None]], disp: bool,
                 return_all: bool, step_label: str = "radius",
                 started: Optional[float] = None) -> None:
        self.problem = problem
        self.maxiter = maxiter
        self.start = clock() if started is None else started
        self.deadline = math.inf if max_time is None else self.start + float(max_time)
        self.callback = callback
        self.disp = bool(disp)
        self.allvecs: Optional[list[np.ndarray]] = [] if return_all else None
        self.step_label = step_label
        self.inner_total = 0

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return clock() - self.start

    def out_of_time(self) -> bool:
        """Whether the wall-clock budget is spent."""
        return past(self.deadline)

    def start_run(self, x: np.ndarray, f: float, gnorm: float, step: float) -> None:
        """Record the starting point (table header and row 0)."""
        if self.allvecs is not None:
            self.allvecs.append(x.copy())
        if self.disp:
            print(f"{'iter':>6} {'f':>15} {'|g|':>10} {self.step_label:>10} "
                  f"{'cg':>5} {'time(s)':>8}")
        self._row(0, f, gnorm, step, 0)

    def _row(self, k: int, f: float, gnorm: float, step: float, inner: int) -> None:
        if not (self.disp or _WATCHERS):
            return
        record = IterationRecord(k, float(f), float(gnorm), float(step), int(inner),
                                 self.elapsed(), self.step_label)
        for listener in tuple(_WATCHERS):
            listener(record)
        if self.disp:
            print(f"{k:6d} {f:15.8e} {gnorm:10.3e} {step:10.3e} {inner:5d} "
                  f"{record.elapsed:8.3f}")

    def iteration(self, k: int, x: np.ndarray, f: float, gnorm: float, step: float,
                  inner: int) -> Optional[Status]:
        """Report iteration ``k``; return a stop status, or ``None`` to go on.

        Call after the iterate ``x`` (value ``f``, gradient norm ``gnorm``) is
        settled. The caller tests convergence itself, before or after this.
        """
        self.inner_total += inner
        if self.allvecs is not None:
            self.allvecs.append(x.copy())
        self._row(k, f, gnorm, step, inner)
        if self.callback is not None:
            try:
                self.callback(x, f)
            except StopIteration:
                return Status.CALLBACK
        if k >= self.maxiter:
            return Status.MAXITER
        if past(self.deadline):
            return Status.MAX_TIME
        return None

    def result(self, status: Status, x: np.ndarray, f: float, g: np.ndarray, nit: int,
               message: Optional[str] = None, **extra: Any) -> OptimizeResult:
        """Assemble the ``OptimizeResult`` (``x`` and ``jac`` in the user's shape).

        A run that did not succeed gets, after the reason it stopped, a note of
        the nan or inf values the objective gave on the way, which are most
        often why.
        """
        p = self.problem
        msg = status.message if message is None else message
        if status != Status.SUCCESS:
            msg = f"{msg}{nonfinite_note(p.nonfinite)}"
        res = OptimizeResult(x=p.unflatten(x.copy()), fun=float(f), jac=p.unflatten(g.copy()),
                             nit=nit, status=int(status), success=status == Status.SUCCESS,
                             message=msg, **p.counts())
        res["ncg"] = self.inner_total
        res["time"] = self.elapsed()
        res.update(extra)
        if self.allvecs is not None:
            res["allvecs"] = [p.unflatten(v) for v in self.allvecs]
        if self.disp:
            print(msg)
            print(f"         Current function value: {f:f}")
            print(f"         Iterations: {nit:d}")
            print(f"         Function evaluations: {res.nfev:d}")
            print(f"         Gradient evaluations: {res.njev:d}")
            print(f"         Hessian evaluations: {res.nhev:d}")
        return res
