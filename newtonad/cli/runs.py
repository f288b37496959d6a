"""Run one method on one problem and record what it cost.

Every run builds its own :class:`newtonad.Objective`, so the counters it reports
(value-and-gradient passes, Hessian-vector products) are what was really
computed, counted the same way for the native solvers and for scipy.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from .methods import load_minimize

__all__ = ["Run", "solve", "warm_up", "SOLVED_RTOL"]

#: a run "solved" a problem when f <= f* + SOLVED_RTOL * max(1, |f*|)
SOLVED_RTOL = 1e-5

_SCIPY_HESSP = frozenset({"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"})
_SCIPY_HESS = frozenset({"dogleg", "trust-exact"})
_SCIPY_NO_JAC = frozenset({"nelder-mead", "powell", "cobyla", "cobyqa"})


@dataclass
class Run:
    """The outcome of one solver run on one problem.

    Attributes
    ----------
    problem, n, fstar : str, int, float or None
        The problem, its size and its known optimal value.
    method : str
        The method as given (``"trust-ncg"``, ``"scipy:trust-ncg"``, ``"bfgs"``).
    fun, gnorm : float
        Final objective value and gradient norm (nan after an error).
    nit, nfev, nhev : int
        Iterations, value-and-gradient passes, Hessian-vector products.
    time : float
        Wall-clock seconds of the solve (tracing and compilation excluded when
        :func:`warm_up` ran first).
    success : bool
        The solver's own verdict.
    message : str
        The solver's message, or the error.
    error : str or None
        ``"ExceptionType: message"`` when the run raised.
    x : ndarray or None
        The final point.
    """

    problem: str
    n: int
    fstar: Optional[float]
    method: str
    fun: float = math.nan
    gnorm: float = math.nan
    nit: int = 0
    nfev: int = 0
    nhev: int = 0
    time: float = 0.0
    success: bool = False
    message: str = ""
    error: Optional[str] = None
    x: Optional[np.ndarray] = field(default=None, repr=False)

    @property
    def solved(self) -> Optional[bool]:
        """Whether ``fun`` reached ``fstar`` (None when ``fstar`` is unknown)."""
        if self.error is not None:
            return False
        if self.fstar is None:
            return None
        return bool(self.fun <= self.fstar + SOLVED_RTOL * max(1.0, abs(self.fstar)))


def _objective(fun: Callable, engine: Optional[str]) -> Any:
    import newtonad as nad

    return nad.Objective(fun, engine=engine)


def warm_up(fun: Callable, x0: np.ndarray, *, engine: Optional[str] = None,
            dense: bool = False) -> float:
    """Trace and compile ``fun``'s derived programs at ``x0``; return the seconds it took.

    Later Objectives of the same function reuse the compiled programs, so the
    timed runs measure solving, not tracing.

    Parameters
    ----------
    fun : callable
    x0 : ndarray
    engine : str, optional
    dense : bool
        Also build the dense Hessian (the identity frame trust-exact uses).
    """
    start = time.perf_counter()
    obj = _objective(fun, engine)
    obj.value_and_grad(x0)
    obj.hessp(x0, np.ones_like(x0))
    if dense:
        obj.hess(x0)
    return time.perf_counter() - start


def _scipy_minimize(obj: Any, x0: np.ndarray, method: str, tol: Optional[float],
                    options: dict, callback: Optional[Callable]) -> Any:
    """``scipy.optimize.minimize`` fed with the objective's exact derivatives."""
    import scipy.optimize

    kwargs: dict[str, Any] = {}
    if method not in _SCIPY_NO_JAC:
        kwargs["jac"] = obj.jac
    if method in _SCIPY_HESSP:
        kwargs["hessp"] = obj.hessp
    elif method in _SCIPY_HESS:
        kwargs["hess"] = obj.hess
    return scipy.optimize.minimize(obj.fun, x0, method=method, tol=tol, options=options,
                                   callback=callback, **kwargs)


def solve(problem: Any, method: str, *, engine: Optional[str] = None, tol: Optional[float] = None,
          options: Optional[dict] = None, callback: Optional[Callable] = None) -> Run:
    """Minimise ``problem`` with ``method`` and return a :class:`Run`.

    Parameters
    ----------
    problem : newtonad.problems.Problem
    method : str
        A native method (run by ``newtonad.minimize``), ``"scipy:<name>"`` (run by
        ``scipy.optimize.minimize`` with newtonad's ``jac`` and ``hessp``/``hess``),
        or another scipy method name (through ``newtonad.minimize``).
    engine : str, optional
        The AD engine (default: newtonad's default).
    tol : float, optional
        The generic tolerance of ``minimize`` (sets ``gtol`` / ``xtol``).
    options : dict, optional
        Solver options (``maxiter``, ``gtol``, ``disp``, ...).
    callback : callable, optional
        ``callback(intermediate_result)`` after each iteration.

    Returns
    -------
    Run
        Exceptions raised by the solver are caught and recorded in ``error``.
    """
    run = Run(problem.name, problem.n, problem.fstar, method)
    obj = _objective(problem.fun, engine)
    options = dict(options or {})
    minimize = load_minimize()
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. scipy's "maximum iterations" warnings
            if method.startswith("scipy:"):
                res = _scipy_minimize(obj, problem.x0.copy(), method[len("scipy:"):], tol,
                                      options, callback)
            else:
                res = minimize(obj, problem.x0.copy(), method=method, tol=tol, options=options,
                               callback=callback)
    except Exception as exc:  # noqa: BLE001  (a failing solver is a result to report)
        run.time = time.perf_counter() - start
        run.error = f"{type(exc).__name__}: {exc}"
        run.message = run.error
        return run
    run.time = time.perf_counter() - start
    run.fun = float(res.fun)
    run.x = np.asarray(res.x)
    jac = res.get("jac")
    run.gnorm = float(np.linalg.norm(jac)) if jac is not None else math.nan
    run.nit = int(res.get("nit", 0))
    run.nfev, run.nhev = int(obj.nfev), int(obj.nhev)
    run.success = bool(res.success)
    run.message = str(res.message)
    return run
