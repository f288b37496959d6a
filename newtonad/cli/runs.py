"""Run one method on one problem and record what it cost.

Every run builds its own :class:`newtonad.Objective`, so the counters it reports
(value-and-gradient passes, Hessian-vector products) are what was really
computed, counted the same way for the native solvers and for scipy. A
derivative-free method gets the plain function, as ``newtonad.minimize`` gives it
one: it is never traced, and only its values are counted.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from newtonad.solvers.methods import METHODS
from newtonad.solvers.scipy_bridge import HESS_METHODS, HESSP_METHODS, NO_JAC_METHODS

from .methods import LEAST_SQUARES, load_minimize

__all__ = ["CompileClock", "Prep", "Run", "prepare", "solve", "warm_up", "SOLVED_RTOL",
           "LEAST_SQUARES", "solve_least_squares", "warm_up_least_squares", "hessian_kind",
           "DERIVATIVE_FREE"]

_log = logging.getLogger("newtonad.cli")

#: a run "solved" a problem when f <= f* + SOLVED_RTOL * max(1, |f*|)
SOLVED_RTOL = 1e-5

# what scipy's methods take (the solvers' own lists, not a copy)
_SCIPY_HESSP = HESSP_METHODS
_SCIPY_HESS = HESS_METHODS
_SCIPY_NO_JAC = NO_JAC_METHODS
#: methods that use values only: no gradient is computed or counted for them
DERIVATIVE_FREE = _SCIPY_NO_JAC


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
    nit, nfev, njev, nhev : int
        Iterations, value passes, gradient passes (0 for a derivative-free method; a
        newtonad ``Objective`` computes both in one pass) and Hessian-vector products.
    nhess : int
        Hessians formed as matrices (trust-exact), 0 for the other methods.
    hessian : {"dense", "sparse"} or None
        The kind of Hessian matrix the method formed, if any.
    time : float
        Wall-clock seconds of the solve, less :attr:`compile_time` (tracing and
        compiling before it are excluded when :func:`warm_up` ran first).
    compile_time : float
        Seconds the engine spent compiling on the solver's path during the run (a
        kernel compiled lazily in the first iteration, say); not part of ``time``.
    background_compiles, background_time : int, float
        Kernels the ``auto`` engine's worker process compiled that the run switched to
        (at hand-over calls fixed in advance, so the count repeats run to run), and the
        worker's seconds for them: off the solver's path, so not subtracted.
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
    njev: int = 0
    nhess: int = 0
    hessian: Optional[str] = None
    time: float = 0.0
    success: bool = False
    message: str = ""
    error: Optional[str] = None
    x: Optional[np.ndarray] = field(default=None, repr=False)
    compile_time: float = 0.0
    background_compiles: int = 0
    background_time: float = 0.0

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


class CompileClock:
    """Wall time of a block, with the engine's compile time during it told apart.

    ``seconds`` is the wall time less ``compile_seconds``, the time the engine spent
    compiling on this thread's path (:func:`newtonad.ad.engine.timings`); ``background``
    is what the engine's background compiler did meanwhile.

    Examples
    --------
    >>> with CompileClock() as clock:
    ...     pass
    >>> clock.compile_seconds
    0.0
    """

    def __enter__(self) -> "CompileClock":
        from newtonad.ad import engine

        self._before = engine.timings()
        self._start = time.perf_counter()
        self.wall = self.compile_seconds = self.seconds = 0.0
        self.background: Any = None
        return self

    def __exit__(self, *exc: object) -> None:
        from newtonad.ad import engine

        self.wall = time.perf_counter() - self._start
        self.background = engine.timings() - self._before
        self.compile_seconds = min(self.wall, self.background.compile_seconds)
        self.seconds = self.wall - self.compile_seconds

    def charge(self, run: "Run") -> None:
        """Put the block's times on ``run``."""
        run.time, run.compile_time = self.seconds, self.compile_seconds
        # the block's own switches: a kernel that finishes now for an earlier block's
        # program, or is never switched to, is not this block's
        run.background_compiles = int(self.background.switches)
        run.background_time = float(self.background.switched_compile_seconds)


@dataclass
class Prep:
    """What :func:`prepare` cost: ``seconds`` in all, of which ``compile_seconds``
    compiling (the rest traces and derives programs and runs them once)."""

    seconds: float
    compile_seconds: float

    @property
    def trace_seconds(self) -> float:
        return self.seconds - self.compile_seconds


def hessian_kind(problem: Any, method: str, engine: Optional[str] = None) -> Optional[str]:
    """``"dense"``, ``"sparse"`` or ``None``: the Hessian matrix ``method`` will form.

    A native method that needs a Hessian matrix (the method table's ``needs``:
    trust-exact) asks the library's own rule
    (:func:`newtonad.solvers.sparse_exact.use_sparse_hessian`: a large n and a sparse
    pattern take the sparse path); scipy's trust-exact and dogleg form dense ones.

    Examples
    --------
    >>> from newtonad import problems
    >>> p = problems.get("chained-rosenbrock", 10)
    >>> hessian_kind(p, "trust-ncg"), hessian_kind(p, "trust-exact")
    (None, 'dense')
    """
    from .cost import DENSE_HESSIAN

    meth = method.removeprefix("scipy:")
    native = METHODS.get(meth) if not method.startswith("scipy:") else None
    if native is not None:
        if "hessian" not in native.needs:
            return None
    elif meth not in DENSE_HESSIAN:
        return None
    else:
        return "dense"
    from newtonad.solvers.problem import FlatProblem
    from newtonad.solvers.sparse_exact import use_sparse_hessian

    flat = FlatProblem(_objective(problem.fun, engine), problem.x0.shape)
    return "sparse" if use_sparse_hessian(flat, problem.x0.reshape(-1)) else "dense"


def prepare(fun: Callable, x0: np.ndarray, *, engine: Optional[str] = None,
            dense: bool = False, hessian: Optional[str] = None) -> Prep:
    """Trace, derive and compile ``fun``'s programs at ``x0``; return what it cost.

    Later Objectives of the same function reuse the compiled programs, so the
    timed runs measure solving, not tracing. (With the ``auto`` engine kernels are
    compiled in the background, when the solve makes programs hot.)

    Parameters
    ----------
    fun : callable
    x0 : ndarray
    engine : str, optional
    dense : bool
        Also build the dense Hessian (the identity frame trust-exact uses); the same
        as ``hessian="dense"``.
    hessian : {"dense", "sparse"}, optional
        Also build the Hessian matrix of that kind (:func:`hessian_kind`).
    """
    kind = "dense" if dense else hessian
    with CompileClock() as clock:
        obj = _objective(fun, engine)
        obj.value_and_grad(x0)
        obj.hessp(x0, np.ones_like(x0))
        if kind == "dense":
            obj.hess(x0)
        elif kind == "sparse":
            obj.sparse_hess(x0)
    return Prep(clock.wall, clock.compile_seconds)


def warm_up(fun: Callable, x0: np.ndarray, *, engine: Optional[str] = None,
            dense: bool = False, hessian: Optional[str] = None) -> float:
    """:func:`prepare`, returning only the seconds it took in all."""
    return prepare(fun, x0, engine=engine, dense=dense, hessian=hessian).seconds


class _CountedValues:
    """``fun`` called directly (never traced), its calls counted: what a derivative-free
    method is given."""

    def __init__(self, fun: Callable) -> None:
        self.fun = fun
        self.nfev = 0

    def __call__(self, x: np.ndarray) -> float:
        self.nfev += 1
        return float(self.fun(x))


def _scipy_minimize(obj: Any, x0: np.ndarray, method: str, tol: Optional[float],
                    options: dict, callback: Optional[Callable], bounds: Any = None) -> Any:
    """``scipy.optimize.minimize`` fed with the objective's exact derivatives."""
    import scipy.optimize

    if method in _SCIPY_NO_JAC:  # obj is the function itself
        return scipy.optimize.minimize(obj, x0, method=method, tol=tol, options=options,
                                       callback=callback, bounds=bounds)
    kwargs: dict[str, Any] = {"jac": obj.jac}
    if method in _SCIPY_HESSP:
        kwargs["hessp"] = obj.hessp
    elif method in _SCIPY_HESS:
        kwargs["hess"] = obj.hess
    return scipy.optimize.minimize(obj.fun, x0, method=method, tol=tol, options=options,
                                   callback=callback, bounds=bounds, **kwargs)


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
    bare = method.removeprefix("scipy:")
    direct = bare in DERIVATIVE_FREE
    # a derivative-free method gets the function itself, as newtonad.minimize gives it
    obj: Any = _CountedValues(problem.fun) if direct else _objective(problem.fun, engine)
    options = dict(options or {})
    minimize = load_minimize()
    try:
        with CompileClock() as clock, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. scipy's "maximum iterations" warnings
            # a bound-constrained problem's bounds go to the method, as minimize takes them
            bounds = getattr(problem, "bounds", None)
            if method.startswith("scipy:"):
                res = _scipy_minimize(obj, problem.x0.copy(), method[len("scipy:"):], tol,
                                      options, callback, bounds)
            else:
                res = minimize(obj, problem.x0.copy(), method=method, tol=tol, options=options,
                               callback=callback, bounds=bounds)
    except Exception as exc:  # noqa: BLE001  (a failing solver is a result to report)
        clock.charge(run)
        _log.info("%s on %s raised %s", method, problem.name, exc)
        run.error = f"{type(exc).__name__}: {exc}"
        run.message = run.error
        return run
    clock.charge(run)
    run.fun = float(res.fun)
    run.x = np.asarray(res.x)
    jac = res.get("jac")
    run.gnorm = float(np.linalg.norm(jac)) if jac is not None else math.nan
    run.nit = int(res.get("nit", 0))
    if direct:
        run.nfev = int(obj.nfev)
    else:
        run.nfev, run.njev, run.nhev = int(obj.nfev), int(obj.njev), int(obj.nhev)
    native = METHODS.get(bare) if not method.startswith("scipy:") else None
    if (native is not None and native.dense_hessian_count) or method == "scipy:trust-exact":
        # native: the Hessians formed (the solver counts them); scipy: one per iteration
        run.nhess = int(res.get("nhev", 0))
        hess = res.get("hess")
        if hess is not None:
            run.hessian = "sparse" if _is_sparse(hess) else "dense"
    run.success = bool(res.success)
    run.message = str(res.message)
    return run


def _is_sparse(matrix: Any) -> bool:
    from scipy.sparse import issparse

    return bool(issparse(matrix))


def warm_up_least_squares(residuals: Callable, x0: np.ndarray, *,
                          engine: Optional[str] = None) -> float:
    """Trace ``residuals``' identity jvp frame (the dense Jacobian of a small problem)."""
    import newtonad as nad

    start = time.perf_counter()
    nad.jvp(residuals, x0, np.eye(x0.size).reshape(x0.shape + (x0.size,)), engine=engine)
    return time.perf_counter() - start


def solve_least_squares(problem: Any, method: str = LEAST_SQUARES, *,
                        engine: Optional[str] = None) -> Run:
    """Solve a sum-of-squares problem through its residuals and return a :class:`Run`.

    Parameters
    ----------
    problem : newtonad.problems.Problem
        A problem with ``residuals`` (``fun(x) == sum(residuals(x)**2)``).
    method : str
        ``"least-squares"``: ``newtonad.least_squares`` (exact Jacobians by AD);
        ``"scipy:least-squares"``: ``scipy.optimize.least_squares`` with
        ``jac="2-point"``. Both run scipy's default ``trf``.
    engine : str, optional
        The AD engine of ``newtonad.least_squares``.

    Returns
    -------
    Run
        ``fun`` is ``sum(r**2)`` (the problem's objective, comparable with ``fstar``);
        ``nit`` the Jacobians evaluated (one per accepted step); ``nfev`` every
        residual evaluation, the ``n`` of each finite-difference Jacobian included
        (scipy's ``nfev`` leaves them out for trf); ``nhev`` 0.
    """
    import scipy.optimize

    import newtonad as nad

    run = Run(problem.name, problem.n, problem.fstar, method)
    residuals = problem.residuals
    if residuals is None:
        raise ValueError(f"{problem.name} is not written from residuals: least squares needs "
                         "a problem with residuals (see Problem.residuals)")
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if method.startswith("scipy:"):
                res = scipy.optimize.least_squares(residuals, problem.x0.copy(), jac="2-point")
                evaluations = int(res.nfev) + int(res.njev) * problem.n
            else:
                res = nad.least_squares(residuals, problem.x0.copy(), engine=engine)
                evaluations = int(res.nfev)
    except Exception as exc:  # noqa: BLE001  (a failing solver is a result to report)
        run.time = time.perf_counter() - start
        run.error = run.message = f"{type(exc).__name__}: {exc}"
        return run
    run.time = time.perf_counter() - start
    run.fun = float(np.sum(np.square(res.fun)))
    run.x = np.asarray(res.x)
    run.gnorm = float(np.linalg.norm(2.0 * np.asarray(res.grad)))  # of sum(r**2)
    run.nit = int(res.njev)
    run.nfev = evaluations
    run.success = bool(res.success)
    run.message = str(res.message)
    return run
