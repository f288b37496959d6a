"""``newtonad.minimize``: the front of the native solvers and of the scipy bridge."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional, Union

import numpy as np
from scipy.optimize import OptimizeResult

from .monitor import wrap_callback
from .options import NATIVE_METHODS, check_options_type, check_tol, parse_options
from .problem import FlatProblem, check_x0, has_objective_protocol
from .scipy_bridge import SCIPY_METHODS, minimize_with_scipy

__all__ = ["minimize"]


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_arguments(options: Any, tol: Any, callback: Any) -> None:
    """Reject ``options``, ``tol`` and ``callback`` of the wrong kind before any work."""
    check_options_type(options)
    check_tol(tol)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, callback(intermediate_result) or "
                        f"callback(xk), or None; got {type(callback).__name__} "
                        f"{_short_repr(callback)}")


def _as_objective(f: Any, args: tuple) -> Any:
    """``f`` itself if it already is an objective, else ``Objective(f, args)``."""
    if has_objective_protocol(f):
        if args:
            raise ValueError("args must be empty when f is already an objective (it has "
                             "fun/jac/hessp); bind the arguments when you construct it")
        return f
    if not callable(f):
        raise TypeError(f"f must be a callable f(x, *args) -> float or an objective with "
                        f"fun/jac/hessp, got {type(f).__name__} {_short_repr(f)}; pass the "
                        f"function itself, nad.minimize(f, x0), not its value f(x0)")
    from newtonad.objective import Objective  # lazily: the AD core is imported on demand
    return Objective(f, args=args)


def _run_native(meth: str, problem: FlatProblem, x0: np.ndarray, opts: dict,
                callback: Optional[Callable[[np.ndarray, float], None]]) -> OptimizeResult:
    if meth == "newton-cg":
        from .newton_cg import minimize_newton_cg
        return minimize_newton_cg(problem, x0, callback=callback, **opts)
    from .trust_region import minimize_trust_region
    sub_opts = {}
    if meth == "trust-ncg":
        from .steihaug import SteihaugSubproblem as subproblem
    elif meth == "trust-krylov":
        from .gltr import GLTRSubproblem as subproblem
        sub_opts["inexact"] = bool(opts.pop("inexact", True))
    else:
        from .exact import ExactSubproblem as subproblem
        from .exact import check_size
        check_size(problem.n)
        if opts.get("subproblem_maxiter") is not None:
            sub_opts["maxiter"] = int(opts["subproblem_maxiter"])
        opts.pop("subproblem_maxiter", None)
    return minimize_trust_region(problem, x0, subproblem, callback=callback,
                                 subproblem_options=sub_opts, **opts)


def minimize(f: Any, x0: Any, args: Union[tuple, Any] = (), method: Union[str, Callable] = "trust-ncg",
             tol: Optional[float] = None, options: Optional[dict] = None,
             callback: Optional[Callable] = None, bounds: Any = None,
             constraints: Any = ()) -> OptimizeResult:
    """Minimise a scalar function of an array, with exact derivatives.

    Parameters
    ----------
    f : callable or objective
        Either ``f(x, *args) -> float`` written in plain NumPy — it is wrapped as
        ``newtonad.objective.Objective(f, args)``, which derives its gradient and
        Hessian-vector products by AD — or any object that already has the
        objective protocol (``fun(x)``, ``jac(x)`` and ``hessp(x, p)`` or
        ``hess(x)``; optionally ``value_and_grad``, ``linearize_hessp`` and the
        counters ``nfev``, ``njev``, ``nhev``), which is used as is.
    x0 : array_like
        Starting point, of any shape; the result's ``x`` has the same shape.
    args : tuple
        Extra arguments of ``f`` (data, not differentiated).
    method : str or callable
        Native methods (case-insensitive):

        ``"newton-cg"``
            truncated Newton with quadratic forcing, negative curvature and a
            strong Wolfe line search (:mod:`.newton_cg`);
        ``"trust-ncg"``
            Steihaug–Toint CG trust region (:mod:`.steihaug`), the default;
        ``"trust-krylov"``
            Lanczos / GLTR trust region (:mod:`.gltr`);
        ``"trust-exact"``
            dense Hessian and Moré–Sorensen (:mod:`.exact`), n <= 5000.

        Any other ``scipy.optimize.minimize`` method (``"BFGS"``, ``"L-BFGS-B"``,
        ``"SLSQP"``, ``"trust-constr"``, ...), a custom method callable, or a
        native name prefixed ``"scipy:"`` runs in scipy with the objective's
        ``jac``, ``hess`` and ``hessp`` as that method accepts them.
    tol : float, optional
        Sets ``gtol`` (and ``xtol`` for newton-cg) as scipy does.
    options : dict, optional
        scipy's option names for the same-named method (newton-cg: ``xtol``,
        ``maxiter``, ``disp``, ``return_all``, ``c1``; trust methods: ``gtol``,
        ``initial_trust_radius``, ``max_trust_radius``, ``eta``, ``maxiter``,
        ``disp``, ``return_all``, ``inexact``, ``subproblem_maxiter``), with
        scipy's defaults — ``gtol`` 1e-4 on the Euclidean gradient norm for
        the trust methods — except ``max_trust_radius`` (1e10, not 1000);
        plus ``gtol`` for newton-cg (default 1e-5; its ``xtol`` test is off
        unless given, since scipy's stops far from the minimum on badly
        scaled problems) and ``max_time`` (seconds of wall clock) for every
        native method. Unknown
        names warn with ``OptimizeWarning``. ``disp=True`` prints a table of
        iteration, f, ‖g‖, radius or step length, inner iterations and time.
    callback : callable, optional
        ``callback(intermediate_result)`` receives an ``OptimizeResult`` with
        ``x`` and ``fun`` after each iteration (``callback(xk)`` receives ``x``);
        raising ``StopIteration`` ends the run with status 99.
    bounds, constraints : optional
        Passed to scipy (L-BFGS-B, TNC, SLSQP, trust-constr, ...); constraint
        functions without a ``jac`` get AD Jacobians (and, for trust-constr,
        AD Hessians). A constraint that cannot be traced (``float(x[0])``, a
        value-dependent ``if``) gets scipy's finite differences instead, with a
        :class:`~newtonad.solvers.ConstraintFallbackWarning`. Native methods
        are unconstrained and ignore them with a ``RuntimeWarning``, as scipy does.

    Returns
    -------
    OptimizeResult
        ``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``njev``, ``nhev``, ``status``,
        ``success``, ``message`` (native methods also ``ncg``, the total of inner
        iterations, and ``time``). ``x`` is the best point found, whatever
        stopped the run, and always finite; ``fun`` is the value there. Native
        methods end within ``maxiter`` and ``max_time`` whatever ``f`` returns:
        trial points where ``f`` or its gradient is nan or inf are rejected,
        a Hessian with nan or inf in it gives a steepest-descent step, and a
        run that does not succeed says in ``message`` how many such values it
        met. A gradient exactly zero is success, even with ``gtol=0``.
        Exceptions raised by ``f`` propagate unchanged.

    Raises
    ------
    TypeError
        For an ``f`` that is not callable, ``options`` that is not a dict, a
        ``tol`` or numeric option that is not a number, or a ``callback`` that
        is not callable.
    ValueError
        For a non-finite, empty or non-numeric ``x0``, an ``f(x0)`` or gradient
        at ``x0`` that is not finite, an unknown method, bad option values, or
        trust-exact above its size limit.
    """
    _check_arguments(options, tol, callback)
    x0 = check_x0(x0)
    if not isinstance(args, tuple):
        args = (args,)
    objective = _as_objective(f, args)
    if callable(method):
        return minimize_with_scipy(objective, x0, method, tol=tol, options=options,
                                   callback=callback, bounds=bounds, constraints=constraints)
    meth = str(method).lower()
    if meth.startswith("scipy:"):
        meth = meth[len("scipy:"):]
    elif meth in NATIVE_METHODS:
        if bounds is not None:
            warnings.warn(f"Method {method} cannot handle bounds.", RuntimeWarning, stacklevel=2)
        if constraints is not None and not (isinstance(constraints, (list, tuple))
                                            and len(constraints) == 0):
            warnings.warn(f"Method {method} cannot handle constraints.", RuntimeWarning,
                          stacklevel=2)
        opts = parse_options(meth, options, tol)
        problem = FlatProblem(objective, x0.shape)
        res = _run_native(meth, problem, x0.reshape(-1), opts,
                          wrap_callback(callback, problem.unflatten))
        if "hess" in res:
            res["hess"] = res["hess"].reshape(x0.shape + x0.shape)
        return res
    if meth not in SCIPY_METHODS:
        raise ValueError(f"Unknown solver {method}; native methods are {', '.join(NATIVE_METHODS)}"
                         f" and scipy's are {', '.join(SCIPY_METHODS)}")
    return minimize_with_scipy(objective, x0, meth, tol=tol, options=options,
                               callback=callback, bounds=bounds, constraints=constraints)
