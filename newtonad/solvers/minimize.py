"""``newtonad.minimize``: the front of the native solvers and of the scipy bridge."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional, Union

import numpy as np
from scipy.optimize import BFGS, OptimizeResult, OptimizeWarning
from scipy.sparse import issparse

from .._suggest import did_you_mean
from ..objective_protocol import as_objective, function_name, is_objective
from .bounds import parse_bounds
from .derivatives import (
    CombinedObjective,
    DirectObjective,
    check_hessp,
    differences_gradient,
    gives_derivatives,
    hess_kind,
    jac_kind,
)
from .methods import (
    DEFAULT_METHOD,
    METHODS,
    NATIVE_METHODS,
    default_method,
    is_native,
    refine_default,
)
from .monitor import Status, wrap_callback
from .options import check_options_type, check_tol, parse_options
from .problem import FlatProblem, check_x0
from .scipy_bridge import (
    FD_JAC_METHODS,
    HESS_METHODS,
    HESSP_METHODS,
    NO_JAC_METHODS,
    SCIPY_METHODS,
    minimize_with_scipy,
    uses_gradient,
)
from .start import clipped_start, scipy_start_failure

__all__ = ["minimize", "choose_method", "DEFAULT_METHOD"]


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


def _dtype_of(x0: Any) -> Optional[np.dtype]:
    """The dtype of an array ``x0`` (NumPy's, or any array-like's as NumPy reads it), or
    ``None`` for a sequence or a scalar of Python's."""
    if isinstance(x0, (list, tuple, int, float, complex, bool)):
        return None
    try:
        return np.asarray(x0).dtype
    except (TypeError, ValueError):  # check_x0 says what is wrong with it
        return None


def _make_ad(args: tuple) -> Callable[[Callable], Any]:
    def make(f: Callable) -> Any:
        from newtonad.objective import Objective  # lazily: the AD core is imported on demand
        return Objective(f, args=args)
    return make


def _as_objective(fun: Any, args: tuple, jac: Any, hess: Any, hessp: Any,
                  direct: bool = False) -> Any:
    """The objective the solvers see.

    ``fun`` itself if it already is an objective and no derivative is given,
    a :class:`.DirectObjective` (``fun`` called as scipy calls it, never traced) when
    ``direct`` (a derivative-free method) and no gradient is given,
    ``Objective(fun, args)`` (all derivatives by AD) if no derivative is given,
    else a :class:`.CombinedObjective` of the caller's derivatives and AD.
    """
    protocol = is_objective(fun)
    if protocol and args:
        raise ValueError("args must be empty when fun is already an objective (it has "
                         "fun/jac/hessp); bind the arguments when you construct it")
    if not protocol and not callable(fun):
        raise TypeError(f"fun must be a callable fun(x, *args) -> float or an objective with "
                        f"fun/jac/hessp, got {type(fun).__name__} {_short_repr(fun)}; pass the "
                        f"function itself, nad.minimize(fun, x0), not its value fun(x0)")
    if direct and not protocol and jac_kind(jac) == "ad":
        return DirectObjective(fun, args)
    if gives_derivatives(jac, hess, hessp):
        return CombinedObjective(fun, args, jac, hess, hessp, _make_ad(args), protocol)
    return as_objective(fun) if protocol else _make_ad(args)(fun)


def _no_ad(f: Callable) -> Any:
    raise RuntimeError("the finite-difference objective of an untraceable fun asked for AD "
                       "derivatives; this is a bug in newtonad")


def _uses_hessian(meth: str) -> bool:
    """Whether ``meth`` (a native name, a scipy name or ``"_custom"``) takes a Hessian."""
    return is_native(meth) or meth in HESS_METHODS or meth in HESSP_METHODS or meth == "_custom"


def _traceable(objective: Any, fun: Any, args: tuple, x: np.ndarray) -> Any:
    """``None`` when AD can trace ``fun`` at ``x`` (or AD gives no derivative here), else
    the :class:`~newtonad.fallback.Fallback` with the value of a direct call."""
    from newtonad._programs import traced_at
    from newtonad.fallback import is_real_scalar, probe
    from newtonad.objective import Objective

    ad = objective
    if isinstance(objective, CombinedObjective):
        if objective.jac_kind != "ad" or is_objective(fun):
            return None
        ad = objective.ad
    if not isinstance(ad, Objective) or ad is fun:
        return None  # a caller's own Objective falls back by itself, on its first call
    return probe(lambda: traced_at(ad.f, x, ad.args, scalar=True),
                 lambda: fun(x.copy(), *args), is_real_scalar)


def _fallback_objective(fun: Any, args: tuple, hess: Any, hessp: Any, meth: str,
                        x: np.ndarray, fallback: Any) -> Any:
    """The objective of an untraceable ``fun``, called directly; one
    :class:`~newtonad.TraceFallbackWarning`.

    A scipy method that differences ``fun`` itself when given no ``jac`` (BFGS, CG,
    L-BFGS-B, TNC, SLSQP, trust-constr) gets exactly that, as from scipy. Every other
    method gets scipy's ``'2-point'`` gradient (:mod:`.finite_diff`) and, where it takes
    a Hessian and the caller gave none, a quasi-Newton ``BFGS()`` one: on the native
    methods it took fewer evaluations than ``SR1()`` or differences of the gradient
    (see the sharp-bits page).
    """
    from newtonad.fallback import warn_fallback

    objective: Any
    if meth in FD_JAC_METHODS and hess is None and hessp is None:
        objective = DirectObjective(fun, args)
        instead = "scipy's own finite differences, as scipy does with no jac"
    else:
        quasi_newton = hess is None and hessp is None and _uses_hessian(meth)
        objective = CombinedObjective(fun, args, "2-point", BFGS() if quasi_newton else hess,
                                      hessp, _no_ad, False)
        instead = "scipy's '2-point' finite differences for the gradient" + (
            " and a quasi-Newton BFGS() Hessian" if quasi_newton else "")
    objective.seed(x, fallback.value)
    warn_fallback(function_name(fun), fallback, instead,
                  stacklevel=3)
    return objective


def _warn_unsuccessful(meth: str, res: OptimizeResult, opts: dict) -> None:
    """scipy's warning for a native run that stopped short, when ``disp`` is on: an
    ``OptimizeWarning`` for newton-cg, a ``RuntimeWarning`` for the trust methods."""
    if not opts.get("disp") or res.success or res.status == Status.NONFINITE_START:
        return
    category = (OptimizeWarning if METHODS[meth].failure_warning == "OptimizeWarning"
                else RuntimeWarning)
    warnings.warn(str(res.message), category, stacklevel=3)


def choose_method(method: Any, bounds: Any, constraints: Any) -> Any:
    """``method``, or for ``None`` the method ``scipy.optimize.minimize`` 1.17 would pick.

    scipy picks SLSQP when ``constraints`` is truthy (whatever kind they are:
    SLSQP takes dicts, ``NonlinearConstraint`` and ``LinearConstraint``),
    L-BFGS-B when only ``bounds`` are given, and BFGS otherwise; newtonad
    mirrors the first two and replaces BFGS by :data:`DEFAULT_METHOD`.
    """
    if method is not None:
        return method
    if isinstance(constraints, np.ndarray) and constraints.size > 1:
        constraints = list(constraints)  # scipy's ``if constraints`` would raise here
    return default_method(bounds, constraints)


def _run_native(meth: str, problem: FlatProblem, x0: np.ndarray, opts: dict,
                callback: Optional[Callable[[np.ndarray, float], None]],
                bounds: Any = None) -> OptimizeResult:
    """Run the native method ``meth`` through its entry in the method table."""
    return METHODS[meth].runner()(problem, x0, opts, callback, bounds=bounds)


def _run_constrained(meth: str, fun: Any, x0: np.ndarray, args: tuple, jac: Any, hess: Any,
                     hessp: Any, bounds: Any, constraints: Any, callback: Optional[Callable],
                     opts: dict) -> OptimizeResult:
    """A native method of constraints (``auglag``): it builds its own objective from ``fun``."""
    if not callable(fun) or is_objective(fun):
        raise TypeError(f"method {meth!r} needs fun(x, *args) -> float written in NumPy (it "
                        f"traces fun with the constraints); got {type(fun).__name__}")
    if gives_derivatives(jac, hess, hessp):
        warnings.warn(f"method {meth!r} differentiates the augmented Lagrangian of fun and the "
                      f"constraints by AD; the jac, hess and hessp given are not used",
                      RuntimeWarning, stacklevel=3)
    return METHODS[meth].runner()(fun, x0, args, constraints, bounds, callback, opts)


def minimize(fun: Any, x0: Any, args: Union[tuple, Any] = (),
             method: Union[str, Callable, None] = None, jac: Any = None, hess: Any = None,
             hessp: Optional[Callable] = None, bounds: Any = None, constraints: Any = (),
             tol: Optional[float] = None, callback: Optional[Callable] = None,
             options: Optional[dict] = None) -> OptimizeResult:
    """Minimise a scalar function of an array, with exact derivatives.

    The signature, argument order and meaning are those of
    ``scipy.optimize.minimize``, so ``newtonad.minimize`` can replace it in
    existing code; derivatives the caller does not give come from AD.

    Parameters
    ----------
    fun : callable or objective
        Either ``fun(x, *args) -> float`` written in plain NumPy — wrapped as
        ``newtonad.objective.Objective(fun, args)``, which derives the gradient
        and Hessian-vector products by AD — or an objective: one of the declared
        interface (:class:`~newtonad.objective_protocol.ObjectiveProtocol`, such as
        ``Objective`` or ``FiniteSum``), used as is, or any object with ``fun(x)``,
        ``jac(x)`` and ``hessp(x, p)`` or ``hess(x)`` (optionally
        ``value_and_grad``, ``linearize_hessp`` and the counters ``nfev``, ``njev``,
        ``nhev``), adapted once by :func:`~newtonad.objective_protocol.as_objective`.
    x0 : array_like
        Starting point, of any shape; the result's ``x`` has the same shape
        (scipy takes only 1-D ``x0``; a scalar becomes shape ``(1,)`` as in scipy).
    args : tuple, optional
        Extra arguments of ``fun``, ``jac``, ``hess`` and ``hessp`` (data, not
        differentiated); a non-tuple is wrapped in a 1-tuple, as scipy does.
    method : str or callable, optional
        Native methods (case-insensitive):

        ``"newton-cg"``
            truncated Newton with quadratic forcing, negative curvature and a
            strong Wolfe line search (:mod:`.newton_cg`);
        ``"trust-ncg"``
            Steihaug–Toint CG trust region (:mod:`.steihaug`);
        ``"trust-krylov"``
            Lanczos / GLTR trust region (:mod:`.gltr`);
        ``"trust-exact"``
            Moré–Sorensen on the Hessian (:mod:`.exact`): dense for n <= 5000; on
            the sparse Hessian from one coloured HVP frame (:mod:`.sparse_exact`)
            when fun is ``Objective(f, sparse=True)`` or n > 5000, and the pattern
            has at most 20% non-zeros.

        Any other ``scipy.optimize.minimize`` method (``"BFGS"``, ``"L-BFGS-B"``,
        ``"SLSQP"``, ``"trust-constr"``, ...), a custom method callable, or a
        native name prefixed ``"scipy:"`` runs in scipy with the derivatives
        that method accepts.

        ``None`` chooses as scipy 1.17 does when there are constraints or
        bounds: ``"SLSQP"`` if ``constraints`` is non-empty (scipy never picks
        trust-constr by itself), else ``"L-BFGS-B"`` if ``bounds`` is given.
        Without either, scipy's choice is BFGS; newtonad's is ``"trust-ncg"``
        (:data:`DEFAULT_METHOD`): with exact Hessian-vector products it takes
        Newton steps, needs no dense matrix, and copes with indefinite
        Hessians, so it scales to large ``n``. From ``n = 10 000`` on, when
        ``fun`` gives sparse Hessians (a plain function or a newtonad
        ``Objective``) and the options are newton-cg's, it is ``"newton-cg"``
        with ``preconditioner="ichol"`` instead (the rule and the measurements
        behind it: :mod:`newtonad.solvers.methods`).

        ``"tron"`` is the bound-constrained trust-region Newton method of Lin
        & Moré (:mod:`.tron`); it handles ``bounds`` (and runs without them).

        ``"auglag"`` is an augmented-Lagrangian method for ``constraints`` (and
        ``bounds``, kept as bounds in its tron subproblems; :mod:`.auglag`). Its
        result has trust-constr's fields (``constr``, ``constr_violation``, ``v``,
        ``jac`` of the constraints, ``lagrangian_grad``, ``optimality``) and the
        outer and inner iteration counts; its options are ``gtol`` (KKT residual,
        default 1e-8), ``ctol`` (constraint violation, 1e-8), ``maxiter`` (outer
        iterations), ``inner_maxiter``, ``inner_method``, ``inner_options``,
        ``initial_penalty``, ``max_penalty``, ``disp`` and ``max_time``.

        ``options={"preconditioner": None | "diagonal" | "ichol"}`` on
        newton-cg, trust-ncg, trust-krylov and tron preconditions CG (or
        Lanczos) with the Hessian's diagonal or its incomplete Cholesky factor,
        formed at each iterate from one coloured HVP frame
        (:mod:`.preconditioners`).
    jac : {callable, True, "2-point", "3-point", "cs", None}, optional
        The gradient. A callable ``jac(x, *args)`` returning an array shaped
        like ``x``; ``True``: ``fun`` returns ``(f, gradient)`` (``fun`` is
        then not traced for values or gradients); a finite-difference keyword:
        scipy's estimate (handed to the scipy methods that take it, computed
        with scipy's estimator for the others and the native methods); ``None``
        or ``False``: AD (scipy would use finite differences). Anything else
        raises ``ValueError``, where scipy would silently use differences.
    hess : {callable, "2-point", "3-point", "cs", HessianUpdateStrategy, None}, optional
        The Hessian. A callable ``hess(x, *args)`` returning a dense array
        (``(n, n)`` or ``x.shape + x.shape``), a scipy sparse matrix or a
        ``LinearOperator``; a finite-difference keyword (differences of the
        gradient, by scipy's estimator); a
        :class:`~scipy.optimize.HessianUpdateStrategy` such as
        ``scipy.optimize.BFGS()`` or ``SR1()`` (quasi-Newton, updated at each
        point where the Hessian is asked for); ``None``: AD. Native methods
        form Hessian-vector products as ``H(x) @ p`` from it; scipy methods
        that take it receive it as given.
    hessp : callable, optional
        ``hessp(x, p, *args) -> H(x) @ p``. Used for the products when given
        (also alongside ``hess``, as scipy's trust-region methods do);
        trust-exact builds its dense Hessian from it, one column per product,
        when no ``hess`` is given.

        Every derivative the caller gives wins over AD, for that derivative
        only: e.g. ``jac=callable`` with neither ``hess`` nor ``hessp`` gets
        exact AD Hessian products of ``fun`` (with ``jac=True``, of ``fun``'s
        first output). If ``fun`` cannot be traced for those products and the
        caller gave the gradient (``jac`` callable, ``True`` or a keyword), the
        products fall back to forward differences of that gradient, with a
        :class:`~newtonad.solvers.HessianFallbackWarning`.
    bounds : sequence or scipy.optimize.Bounds, optional
        Passed to scipy (L-BFGS-B, TNC, SLSQP, trust-constr, ...), or used by
        ``"tron"`` (``x0`` outside is projected onto them, as L-BFGS-B does;
        lower above upper, the wrong number or nan bounds raise ``ValueError``,
        with scipy's messages where scipy has one). The other native methods
        are unconstrained and ignore them with a ``RuntimeWarning``, as scipy's
        do.
    constraints : dict, constraint object or sequence of them, optional
        Passed to scipy (SLSQP, trust-constr, COBYLA, COBYQA); constraint
        functions without a ``jac`` get AD Jacobians (and, for trust-constr,
        AD Hessians). A constraint that cannot be traced (``float(x[0])``, a
        value-dependent ``if``) gets scipy's finite differences instead, with
        a :class:`~newtonad.solvers.ConstraintFallbackWarning`. Native methods
        ignore them with a ``RuntimeWarning``, as scipy's do.
    tol : float, optional
        Sets ``gtol`` (and ``xtol`` for newton-cg) as scipy does.
    callback : callable, optional
        ``callback(intermediate_result)`` receives an ``OptimizeResult`` with
        ``x`` and ``fun`` after each iteration (``callback(xk)`` receives ``x``);
        raising ``StopIteration`` ends the run with status 99.
    options : dict, optional
        Options under scipy's names for the same-named method (newton-cg: ``xtol``,
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

    Returns
    -------
    OptimizeResult
        ``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``njev``, ``nhev``, ``status``,
        ``success``, ``message``. Native methods also give ``ncg`` (the total of
        inner iterations), ``time`` and ``nhvp``. ``x`` is the best point found,
        whatever stopped the run, and always finite; ``fun`` is the value
        there. If ``f(x0)``, or the gradient at ``x0`` for a method that uses
        one, is nan or inf, no method runs, native or scipy's: ``success`` is
        False, ``status`` 5, ``x`` a copy of ``x0`` (clipped into ``bounds``)
        and ``message`` says which was not finite (:mod:`.start`). Native
        methods end within ``maxiter`` and ``max_time`` whatever ``fun``
        returns: trial points where ``fun`` or its gradient is nan or
        inf are rejected, a Hessian with nan or inf in it gives a
        steepest-descent step, and a run that does not succeed says in
        ``message`` how many such values it met. A gradient exactly zero is
        success, even with ``gtol=0``. Exceptions raised by ``fun`` propagate
        unchanged.

        The counters count what scipy counts for the method: ``nfev`` and
        ``njev`` evaluations of the value and the gradient (a value-and-gradient
        AD pass counts once in each; finite-difference evaluations count);
        ``nhev`` Hessian-vector products — or, for trust-exact, dense Hessians
        formed, and for a ``hess`` given as a callable, a keyword or an update
        strategy, Hessian matrices evaluated (plus any ``hessp`` calls). For
        native methods ``nhvp`` counts every Hessian-vector product formed,
        however it was formed (the ``n`` columns of each dense Hessian, products
        ``H @ p`` with a given matrix), which is the cost to compare across
        methods. Methods run in scipy report scipy's counts.

    Raises
    ------
    TypeError
        For a ``fun`` that is not callable, ``options`` that is not a dict, a
        ``tol`` or numeric option that is not a number, a ``hessp`` or
        ``callback`` that is not callable.
    ValueError
        For a non-finite, empty or non-numeric ``x0``, an unknown method, a ``jac`` or ``hess``
        of a kind scipy does not document, ``jac=True`` with a ``fun`` that does
        not return ``(f, gradient)``, bad option values, or trust-exact above
        its size limit.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> from scipy.optimize import rosen, rosen_der
    >>> res = nad.minimize(rosen, np.array([-1.2, 1.0]), jac=rosen_der)  # AD Hessian products
    >>> bool(res.success), np.round(res.x, 6).tolist()
    (True, [1.0, 1.0])
    """
    _check_arguments(options, tol, callback)
    jac_kind(jac)
    hess_kind(hess)
    check_hessp(hessp)
    given_dtype = _dtype_of(x0)
    x0 = check_x0(x0)
    if x0.ndim == 0:
        x0 = x0.reshape(1)  # as scipy's np.atleast_1d
    if not isinstance(args, tuple):
        args = (args,)
    chosen = method is None  # newtonad's choice: refined once the objective is known
    method = choose_method(method, bounds, constraints)
    meth = "_custom" if callable(method) else str(method).lower()
    native = is_native(meth)
    meth = meth.removeprefix("scipy:")
    if native and METHODS[meth].constraints:
        return _run_constrained(meth, fun, x0, args, jac, hess, hessp, bounds, constraints,
                                callback, parse_options(meth, options, tol))
    objective = _as_objective(fun, args, jac, hess, hessp, direct=meth in NO_JAC_METHODS)
    # an Objective may have been used before: this run's counts start here, so that the
    # evaluations of the checks below are this run's
    counted_before = dict(objective.counters())  # a copy: an objective may keep one dict
    box = None
    if native and METHODS[meth].bounds and bounds is not None:
        box = parse_bounds(bounds, x0.size)  # scipy's errors, before any evaluation
        x_start = np.clip(x0.reshape(-1), *box).reshape(x0.shape)
    else:
        x_start = x0 if native else clipped_start(x0, bounds)
    fallback = _traceable(objective, fun, args, x_start)
    if fallback is not None:
        objective = _fallback_objective(fun, args, hess, hessp, meth, x_start, fallback)
        counted_before = {}  # a new objective: everything it counts is this run's
        jac = "2-point"  # no gradient asked of the objective at the start check
    if callable(method):
        return _delegate(objective, x0, method, "_custom", jac, tol=tol, options=options,
                         callback=callback, bounds=bounds, constraints=constraints)
    if native:
        entry = METHODS[meth]
        if bounds is not None and not entry.bounds:
            warnings.warn(f"Method {method} cannot handle bounds.", RuntimeWarning, stacklevel=2)
        if constraints is not None and not (isinstance(constraints, (list, tuple))
                                            and len(constraints) == 0):
            warnings.warn(f"Method {method} cannot handle constraints.", RuntimeWarning,
                          stacklevel=2)
        problem = FlatProblem(objective, x0.shape,
                              dense_hessian_count=entry.dense_hessian_count,
                              counted_before=counted_before)
        if chosen and meth == DEFAULT_METHOD:
            meth, extra = refine_default(problem, x0.reshape(-1), options)
            options = {**extra, **(options or {})}
        opts = parse_options(meth, options, tol)
        res = _run_native(meth, problem, x0.reshape(-1), opts,
                          wrap_callback(callback, problem.unflatten),
                          bounds=box)
        _warn_unsuccessful(meth, res, opts)
        if "hess" in res and not issparse(res["hess"]):  # the sparse path's stays (n, n)
            res["hess"] = res["hess"].reshape(x0.shape + x0.shape)
        return res
    if meth not in SCIPY_METHODS:
        hint = did_you_mean(meth, [*NATIVE_METHODS, *SCIPY_METHODS])
        raise ValueError(f"Unknown solver {method}{hint}; native methods are "
                         f"{', '.join(NATIVE_METHODS)}"
                         f" and scipy's are {', '.join(SCIPY_METHODS)}")
    if meth in NO_JAC_METHODS and given_dtype is not None and given_dtype.kind == "f":
        # scipy's derivative-free methods keep a float32 x0's type: fun sees it
        x0 = x0.astype(given_dtype)
    return _delegate(objective, x0, meth, meth, jac, tol=tol, options=options,
                     callback=callback, bounds=bounds, constraints=constraints)


def _delegate(objective: Any, x0: np.ndarray, method: Any, meth: str, jac: Any,
              **kwargs: Any) -> OptimizeResult:
    """Run a scipy method, unless its start is refused (:mod:`.start`)."""
    refused = scipy_start_failure(objective, x0, uses_gradient(meth, jac), kwargs["bounds"])
    if refused is not None:
        return refused
    res = minimize_with_scipy(objective, x0, method, **kwargs)
    if differences_gradient(objective) and meth not in FD_JAC_METHODS:
        # the gradient was differenced here, not in scipy: count the calls of fun it made
        res.nfev, res.njev = objective.nfev, objective.njev
    return res
