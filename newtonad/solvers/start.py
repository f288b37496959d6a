"""The one rule for a start where the objective or its gradient is not finite.

``newtonad.minimize`` evaluates the objective at ``x0`` (and its gradient, for every
method that uses one) before handing the problem to a solver, native or scipy's. If
either has nan or inf in it, no method is run: the result has ``success=False``,
``status`` :attr:`~.monitor.Status.NONFINITE_START` (5, the same for every method),
``x`` a copy of ``x0``, ``fun`` the value there and a message that says which was not
finite. scipy's own methods disagree on such a start -- most fail, some after moving
``x`` to nan or to 1e99, L-BFGS-B and COBYLA may even report success -- while scipy's
tests ask only that ``success`` be False; one rule keeps every method to that and
never returns a nan ``x``.

Methods that clip ``x0`` into ``bounds`` before evaluating (L-BFGS-B, TNC, SLSQP,
Nelder-Mead, Powell) start from the clipped point; the test is made there, for every
bounded method, and the failed result's ``x`` is that point.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
from scipy.optimize import Bounds, OptimizeResult

from .monitor import Status
from .problem import FlatProblem

__all__ = ["start_message", "start_failure", "scipy_start_failure", "clipped_start",
           "native_start"]


def start_message(f0: float, g0: Optional[np.ndarray]) -> Optional[str]:
    """Why ``(f0, g0)`` cannot start a run, or ``None`` when both are finite.

    Parameters
    ----------
    f0 : float
        The objective's value at ``x0``.
    g0 : ndarray or None
        Its gradient there, or ``None`` for a method that uses no gradient.
    """
    if not math.isfinite(f0):
        return (f"The objective is not finite at the initial point: f(x0) = {f0}. "
                "Start from a point where it is finite.")
    if g0 is None:
        return None
    bad = int(np.count_nonzero(~np.isfinite(g0)))
    if bad == 0:
        return None
    return (f"The gradient of the objective is not finite at the initial point: {bad} of "
            f"its {np.size(g0)} entries are nan or inf, though f(x0) = {f0} is finite. "
            "Start from a point where the objective is differentiable.")


def start_failure(x0: np.ndarray, f0: float, g0: Optional[np.ndarray], message: str,
                  counts: dict[str, int]) -> OptimizeResult:
    """The result of a run refused at its start (see the module docstring).

    Parameters
    ----------
    x0 : ndarray
        The starting point, in the caller's shape; the result holds a copy.
    f0, g0 : float and ndarray or None
        Value and gradient (if evaluated) at ``x0``.
    message : str
        From :func:`start_message`.
    counts : dict
        ``nfev``, ``njev``, ``nhev`` (and any other counters) for the result.
    """
    res = OptimizeResult(x=np.array(x0, dtype=np.float64), fun=float(f0), nit=0,
                         status=int(Status.NONFINITE_START), success=False, message=message,
                         **counts)
    if g0 is not None:
        g = np.array(g0, dtype=np.float64)
        res["jac"] = g.reshape(np.shape(x0)) if g.size == np.size(x0) else g
    return res


def _bounds_arrays(bounds: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds as flat arrays of ``n`` entries (``None`` as ∓inf)."""
    if isinstance(bounds, Bounds):
        lb, ub = np.asarray(bounds.lb, dtype=float), np.asarray(bounds.ub, dtype=float)
    else:
        pairs = [(-np.inf if lo is None else lo, np.inf if hi is None else hi)
                 for lo, hi in bounds]
        lb, ub = np.asarray(pairs, dtype=float).reshape(-1, 2).T
    return np.broadcast_to(lb.reshape(-1), (n,)), np.broadcast_to(ub.reshape(-1), (n,))


def clipped_start(x0: np.ndarray, bounds: Any) -> np.ndarray:
    """``x0`` clipped into ``bounds``, as the bounded scipy methods do before starting.

    Bounds scipy would refuse (wrong length, lower above upper) leave ``x0`` as it is:
    scipy then raises its own error. A nan bound is no bound, as L-BFGS-B and TNC read
    it (``np.clip`` would make the entry nan, and the start check would blame the
    objective); trust-constr then raises its own error.
    """
    if bounds is None:
        return x0
    try:
        lb, ub = _bounds_arrays(bounds, x0.size)
    except (TypeError, ValueError):
        return x0
    if np.any(ub < lb):
        return x0
    lb = np.where(np.isnan(lb), -np.inf, lb)
    ub = np.where(np.isnan(ub), np.inf, ub)
    return np.clip(x0.reshape(-1), lb, ub).reshape(x0.shape)


def scipy_start_failure(objective: Any, x0: np.ndarray, uses_gradient: bool,
                        bounds: Any) -> Optional[OptimizeResult]:
    """Evaluate a delegated run's start; the refused result, or ``None`` to go on.

    The value (and, with ``uses_gradient``, the gradient) at ``x0`` -- clipped into
    ``bounds`` -- is computed through the objective, whose cache of the last point
    gives scipy's own first evaluation there for free. A value that is not a scalar
    is left for scipy to report.
    """
    x = clipped_start(x0, bounds)
    g0: Optional[np.ndarray] = None
    if not uses_gradient:
        value = objective.fun(x)
    else:
        value, g0 = objective.value_and_grad(x)
    if np.size(value) != 1:
        return None
    f0 = float(np.asarray(value, dtype=np.float64).reshape(()))
    message = start_message(f0, g0)
    if message is None:
        return None
    counts = {"nfev": 1, "njev": int(g0 is not None), "nhev": 0}
    return start_failure(x, f0, g0, message, counts)


def native_start(problem: FlatProblem, x0: np.ndarray, products: bool = True
                 ) -> "tuple[float, np.ndarray] | OptimizeResult":
    """Value and gradient at ``x0`` for a native run, or the refused result.

    With ``products`` (the methods of Hessian-vector products) the objective is told
    first, so that the gradient pass at ``x0`` keeps the residuals the first products
    need (:meth:`.FlatProblem.expect_products`).
    """
    if products:
        problem.expect_products(x0)
    f0, g0 = problem.value_and_grad(x0, check=True)
    message = start_message(f0, g0)
    if message is None:
        return f0, g0
    return start_failure(problem.unflatten(x0), f0, problem.unflatten(g0), message,
                         problem.counts())
