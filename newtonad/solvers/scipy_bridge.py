"""Delegation to ``scipy.optimize.minimize`` with the objective's exact derivatives.

Every scipy method that is not one of newtonad's native ones (and any method
prefixed ``"scipy:"``, e.g. ``"scipy:trust-ncg"``) runs in scipy, fed with the
objective's ``fun`` and — as far as that method accepts them — ``jac``,
``hess`` and ``hessp``, so scipy issues no "does not use" warnings. Derivatives
the caller gave ``minimize`` (:mod:`.derivatives`) reach scipy as it takes them:
finite-difference keywords and quasi-Newton strategies as given where the method
accepts them, callables otherwise (:func:`_derivative_kwargs`). ``bounds``
and ``constraints`` go to scipy; constraint functions written in plain numpy
without a ``jac`` get Jacobians from the AD core (reverse frames), and for
trust-constr the Hessian of ``v @ c(x)`` as a forward-over-reverse product, through
the hook :func:`constraint_derivatives` — only for the methods that use them
(SLSQP and trust-constr take Jacobians, only trust-constr a Hessian). A
constraint that cannot be traced (``float(x[0])``, a value-dependent ``if``)
keeps working as in scipy: its Jacobian is left to scipy's finite
differences, with a :class:`ConstraintFallbackWarning` saying why. trust-constr
gets the objective's sparse Hessian (one coloured HVP frame per iterate) instead of
Hessian-vector products when the pattern is sparse, as trust-exact does
(:func:`_sparse_trust_constr_hess`). An ``x0`` of any shape is flattened for scipy
and the result reshaped back.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable, Optional

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, NonlinearConstraint, OptimizeResult
from scipy.optimize import minimize as scipy_minimize
from scipy.sparse import issparse
from scipy.sparse.linalg import LinearOperator

from .._stack import user_stacklevel
from ..objective_protocol import as_objective, function_name
from .derivatives import given_derivatives

__all__ = ["minimize_with_scipy", "SCIPY_METHODS", "FD_JAC_METHODS", "NO_JAC_METHODS",
           "HESSP_METHODS", "HESS_METHODS", "ConstraintFallbackWarning",
           "constraint_derivatives", "uses_gradient"]

#: scipy.optimize.minimize's methods (scipy 1.10 – 1.17)
SCIPY_METHODS = ("nelder-mead", "powell", "cg", "bfgs", "newton-cg", "l-bfgs-b", "tnc",
                 "cobyla", "cobyqa", "slsqp", "trust-constr", "dogleg", "trust-ncg",
                 "trust-exact", "trust-krylov")
# which of them take a gradient, a Hessian, a Hessian-vector product (scipy's own
# lists in scipy/optimize/_minimize.py); hessp is preferred where both are taken
_NO_JAC = frozenset({"nelder-mead", "powell", "cobyla", "cobyqa"})
_HESSP = frozenset({"newton-cg", "trust-ncg", "trust-constr", "trust-krylov"})
_HESS = frozenset({"dogleg", "trust-exact"})
#: public names of the three lists above, for the command line
NO_JAC_METHODS, HESSP_METHODS, HESS_METHODS = _NO_JAC, _HESSP, _HESS
#: which take the gradient as a finite-difference keyword, and the Hessian as a keyword or a
#: HessianUpdateStrategy (scipy's lists in _minimize.py and the methods' own checks)
_FD_JAC = frozenset({"trust-constr", "bfgs", "cg", "l-bfgs-b", "tnc", "slsqp"})
FD_JAC_METHODS = _FD_JAC
_HESS_KEYWORDS = frozenset({"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"})
# which use constraint Jacobians, and the Hessian of the constraints' Lagrangian term
_CONSTRAINT_JAC = frozenset({"slsqp", "trust-constr", "_custom"})
_CONSTRAINT_HESS = frozenset({"trust-constr", "_custom"})


def uses_gradient(meth: str, jac: Any) -> bool:
    """Whether scipy's method ``meth`` asks the objective for gradients.

    Not the derivative-free methods, nor those that take a finite-difference keyword
    ``jac`` and estimate the gradient themselves (``"_custom"`` is given the gradient).
    """
    if meth in _NO_JAC:
        return False
    return not (isinstance(jac, str) and meth in _FD_JAC)


def constraint_derivatives(constraint: Callable, args: tuple = (), sparse: bool = False
                            ) -> tuple[Callable, Callable]:
    """AD derivatives of a constraint function ``c(x, *args)`` written in numpy.

    This is the one place where the solvers reach the AD core, imported lazily.

    Parameters
    ----------
    constraint : callable
        ``c(x, *args) -> scalar or 1-D array`` on arrays ``x`` of the shape of x0.
    args : tuple
        Extra arguments of ``c`` (data, not differentiated).

    Returns
    -------
    jac : callable
        ``jac(x) -> J`` of shape ``c(x).shape + x.shape`` (``newtonad.api.jacobian``);
        with ``sparse``, a ``scipy.sparse.csr_array`` of shape ``(c(x).size, x.size)``
        from one coloured frame (``jacobian(c, sparse=True)``).
    lagrangian_hvp : callable
        ``lagrangian_hvp(x, v, p) -> ∇²(v @ c)(x) p``: one forward-over-reverse
        pass with the multipliers ``v`` as the single cotangent column
        (``newtonad.api.hvp`` of ``x -> sum(v * c(x))``).
    """
    from newtonad.api import hvp, jacobian

    jac_c = jacobian(constraint, sparse=sparse)

    def jac(x: np.ndarray) -> np.ndarray:
        return jac_c(x, *args)

    def weighted(x: np.ndarray, v: np.ndarray, *rest: Any):
        return (constraint(x, *rest) * v).sum()

    def lagrangian_hvp(x: np.ndarray, v: np.ndarray, p: np.ndarray) -> np.ndarray:
        return hvp(weighted, x, p, args=(np.asarray(v, dtype=np.float64),) + tuple(args))

    return jac, lagrangian_hvp


class _Flat:
    """Reshaping between scipy's flat vectors and the user's shape."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.n = int(np.prod(shape, dtype=np.int64))
        self.trivial = shape == (self.n,)

    def x(self, x: np.ndarray) -> np.ndarray:
        return x if self.trivial else np.reshape(x, self.shape)

    def fun(self, fn: Callable, *args: Any) -> Callable:
        """``fn(x_shaped, *args)`` as a function of flat ``x``."""
        if self.trivial and not args:
            return fn
        return lambda x: fn(self.x(x), *args)

    def rows(self, fn: Callable, *args: Any) -> Callable:
        """A Jacobian-valued ``fn`` as a function of flat ``x`` returning (m, n).

        A scipy sparse matrix or array, or a ``LinearOperator``, is passed on as it is
        (scipy's constrained methods take them); a dense result is reshaped."""
        def jac_rows(x: np.ndarray) -> Any:
            out = fn(self.x(x), *args)
            if issparse(out) or isinstance(out, LinearOperator):
                return out
            return np.asarray(out, dtype=np.float64).reshape(-1, self.n)
        return jac_rows


class ConstraintFallbackWarning(UserWarning):
    """Warn that a constraint's Jacobian is left to scipy's finite differences.

    :func:`newtonad.minimize` issues it, once per constraint, when a
    constraint function given without ``jac`` cannot be traced (``float(x[0])``,
    a value-dependent ``if``). The message names the constraint by position and
    function name and gives the first line of the tracing error. The other
    constraints and the objective keep their exact AD derivatives.

    See Also
    --------
    HessianFallbackWarning : The same fallback for the objective's Hessian.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, newtonad as nad
    >>> from newtonad.solvers import ConstraintFallbackWarning
    >>> def budget(x):
    ...     return 1.0 - float(x[0]) - x[1]  # float() cannot be traced
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = nad.minimize(lambda x: np.sum((x - 1) ** 2), np.zeros(2),
    ...                        constraints={"type": "ineq", "fun": budget})
    >>> [w.category is ConstraintFallbackWarning for w in caught]
    [True]
    >>> res.message, np.round(res.x, 6).tolist()
    ('Optimization terminated successfully', [0.5, 0.5])
    """


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


#: constraint Jacobians with this many entries or more go to trust-constr sparse
_SPARSE_JAC_FROM = 1_000_000


def _ad_derivatives(fun: Callable, args: tuple, flat: _Flat, x0: np.ndarray, label: str,
                    with_hess: bool, sparse_ok: bool = False) -> Optional[tuple[Callable, Any]]:
    """AD derivatives of a constraint on flat vectors, or ``None`` if it cannot be traced.

    Constraints written for scipy's finite differences may use ``float(x[0])``,
    a value-dependent ``if`` or other code that evaluates but cannot be traced.
    The constraint is evaluated at ``x0`` first, so that its own errors propagate
    unchanged; then its Jacobian (and, ``with_hess``, one Lagrangian Hessian
    product) is taken at ``x0``. If that fails, a
    :class:`ConstraintFallbackWarning` says why and ``None`` tells the caller
    to leave this constraint's derivatives to scipy's finite differences.

    Returns
    -------
    (jac, hess) or None
        ``jac(x) -> (m, n)`` rows and ``hess(x, v) -> LinearOperator`` (``None``
        without ``with_hess``) on flat vectors.
    """
    xs = flat.x(x0)
    c0 = fun(xs, *args)
    # trust-constr takes sparse Jacobians: a large one is formed sparse (a dense one of
    # 1e5 rows and columns would not fit in memory)
    sparse = sparse_ok and np.size(c0) * flat.n >= _SPARSE_JAC_FROM
    ad_jac, ad_hvp = constraint_derivatives(fun, args, sparse=sparse)
    try:
        ad_jac(xs)
        if with_hess and ad_hvp is not None:
            ad_hvp(xs, np.ones(np.size(c0)), np.zeros_like(xs))
    except Exception as exc:  # whatever tracing raised: the constraint itself evaluates
        warnings.warn(f"{label} cannot be traced by newtonad ({_first_line(exc)}); scipy "
                      "estimates its Jacobian by finite differences instead. For exact "
                      "derivatives write it with traceable NumPy (np.where for a branch, "
                      "np.stack for arrays built from parts, no float()).",
                      ConstraintFallbackWarning, stacklevel=user_stacklevel())
        return None
    hess = None
    if with_hess and ad_hvp is not None:
        n = flat.n

        def hess(x: np.ndarray, v: np.ndarray) -> LinearOperator:
            xv = flat.x(x)
            return LinearOperator((n, n), dtype=np.float64, matvec=lambda p: np.asarray(
                ad_hvp(xv, v, flat.x(np.ravel(p)))).reshape(-1))
    return flat.rows(ad_jac), hess


def _nonlinear(fun: Callable, lb: Any, ub: Any, args: tuple, flat: _Flat, meth: str,
               x0: np.ndarray, label: str, jac: Any = None, hess: Any = None,
               template: Optional[NonlinearConstraint] = None) -> NonlinearConstraint:
    """A NonlinearConstraint on flat x, derivatives from AD where ``meth`` uses them.

    The Jacobian comes from AD unless given as a callable (or ``meth`` never
    uses one); the Hessian of the Lagrangian term only for methods that use it
    (trust-constr): SLSQP warns that any ``hess`` but scipy's default is
    ignored. A constraint that cannot be traced gets ``jac='2-point'`` and the
    ``hess`` it came with, scipy's default quasi-Newton ``BFGS()`` unless the
    user chose otherwise (see :func:`_ad_derivatives`).
    """
    kwargs: dict[str, Any] = {}
    if template is not None:
        kwargs = {"keep_feasible": template.keep_feasible,
                  "finite_diff_rel_step": template.finite_diff_rel_step,
                  "finite_diff_jac_sparsity": template.finite_diff_jac_sparsity}
    if callable(jac):
        kwargs["jac"] = flat.rows(jac, *args)
    elif meth in _CONSTRAINT_JAC:
        with_hess = meth in _CONSTRAINT_HESS and not callable(hess)
        derived = _ad_derivatives(fun, args, flat, x0, label, with_hess,
                                  sparse_ok=meth == "trust-constr")
        kwargs["jac"] = "2-point" if derived is None else derived[0]
        if derived is not None and derived[1] is not None:
            hess = derived[1]
    elif jac is not None:
        kwargs["jac"] = jac
    if hess is not None:  # else scipy's default, the quasi-Newton BFGS()
        kwargs["hess"] = hess
    return NonlinearConstraint(flat.fun(fun, *args), lb, ub, **kwargs)


def _label(index: int, fun: Callable) -> str:
    """How warnings name a constraint: its place in the list and its function's name."""
    return f"constraint {index} ({function_name(fun)})"


def _prepare_constraints(constraints: Any, meth: str, flat: _Flat, x0: np.ndarray) -> list:
    if constraints is None:
        return []
    if isinstance(constraints, (dict, NonlinearConstraint, LinearConstraint)):
        constraints = [constraints]
    out = []
    for i, con in enumerate(constraints):
        if isinstance(con, LinearConstraint):
            out.append(con)
        elif isinstance(con, NonlinearConstraint):
            out.append(_nonlinear(con.fun, con.lb, con.ub, (), flat, meth, x0,
                                  _label(i, con.fun), con.jac, con.hess, con))
        elif isinstance(con, dict):
            args = tuple(con.get("args", ()))
            label = _label(i, con["fun"])
            if meth == "trust-constr":
                ub = 0.0 if con["type"] == "eq" else np.inf
                out.append(_nonlinear(con["fun"], 0.0, ub, args, flat, meth, x0, label,
                                      con.get("jac")))
                continue
            new = dict(con)
            new["args"] = ()
            new["fun"] = flat.fun(con["fun"], *args)
            if callable(con.get("jac")):
                new["jac"] = flat.rows(con["jac"], *args)
            elif meth in _CONSTRAINT_JAC:  # the derivative-free methods ignore jac
                derived = _ad_derivatives(con["fun"], args, flat, x0, label, False)
                if derived is not None:
                    new["jac"] = derived[0]
            out.append(new)
        else:
            raise TypeError(f"constraints must be dicts, NonlinearConstraint or "
                            f"LinearConstraint objects, got {type(con).__name__}")
    return out


def _prepare_bounds(bounds: Any, flat: _Flat) -> Any:
    if isinstance(bounds, Bounds) and not flat.trivial:
        lb = np.broadcast_to(bounds.lb, flat.shape).ravel()
        ub = np.broadcast_to(bounds.ub, flat.shape).ravel()
        keep = np.broadcast_to(bounds.keep_feasible, flat.shape).ravel()
        return Bounds(lb, ub, keep_feasible=keep)
    return bounds


def _prepare_callback(callback: Optional[Callable], flat: _Flat) -> Optional[Callable]:
    if callback is None or flat.trivial:
        return callback
    try:
        params = set(inspect.signature(callback).parameters)
    except (TypeError, ValueError):
        params = set()
    if params == {"intermediate_result"}:
        def new_style(intermediate_result: OptimizeResult) -> Any:
            res = OptimizeResult(intermediate_result)
            res.x = flat.x(np.asarray(res.x).copy())
            return callback(intermediate_result=res)
        return new_style

    def old_style(xk: np.ndarray, *rest: Any) -> Any:
        return callback(flat.x(xk), *rest)
    return old_style


def _derivative_kwargs(objective: Any, meth: str, flat: _Flat, method: Any) -> dict[str, Any]:
    """scipy's ``jac`` / ``hess`` / ``hessp`` for ``meth``: the caller's where given, else AD.

    Finite-difference keywords and quasi-Newton strategies go to scipy as given
    wherever scipy's method takes them (so its estimates respect ``bounds``);
    where it does not (scipy's trust methods and Newton-CG need a callable
    gradient, dogleg and trust-exact a callable Hessian), the objective computes
    them with scipy's own estimator or strategy and scipy receives a callable.
    Derivatives a method does not use are handed on only when the caller gave
    them, so scipy warns about them as it would.
    """
    given = given_derivatives(objective)
    jac, hess, hessp = given["jac"], given["hess"], given["hessp"]
    caps = objective.capabilities
    kwargs: dict[str, Any] = {}
    if meth in _FD_JAC and not caps.gradient:
        pass  # fun called directly: scipy's own default differences, as for jac=None
    elif meth in _NO_JAC:
        if jac is not None and bool(jac):  # scipy's own warning; fun unpacks (f, g) itself
            warnings.warn(f"Method {method} does not use gradient information (jac).",
                          RuntimeWarning, stacklevel=4)
    elif isinstance(jac, str) and meth in _FD_JAC:
        kwargs["jac"] = jac
    else:
        grad = objective.jac
        kwargs["jac"] = grad if flat.trivial else (lambda x: np.ravel(grad(flat.x(x))))
    dense = None if not caps.hess else (
        lambda x: _flat_matrix(objective.hess(flat.x(x)), flat.n))
    product = None if not caps.products else (
        lambda x, p: np.ravel(objective.hessp(flat.x(x), flat.x(p))))
    custom = meth == "_custom"
    if not (meth in _HESS or meth in _HESSP or custom):
        # BFGS, L-BFGS-B, ...: a Hessian given goes on only so that scipy warns it is unused
        kwargs.update({name: value for name, value in (("hess", hess), ("hessp", hessp))
                       if value is not None})
        return kwargs
    if callable(hess):
        user_hess, args = hess, objective.args
        kwargs["hess"] = lambda x: _flat_matrix(user_hess(flat.x(x), *args), flat.n)
    elif hess is not None:  # a keyword or an update strategy
        kwargs["hess"] = hess if (meth in _HESS_KEYWORDS or custom) else dense
    if hessp is not None:  # the caller's products; scipy warns if the method takes none
        kwargs["hessp"] = product if (meth in _HESSP or custom) else hessp
    # AD (or the caller's products, for a dense Hessian) supplies what is missing
    if custom:
        kwargs.setdefault("hess", dense)
        kwargs.setdefault("hessp", product)
    elif meth in _HESS:
        kwargs.setdefault("hess", dense)
    elif "hess" not in kwargs and "hessp" not in kwargs:
        if product is not None:
            kwargs["hessp"] = product
        else:
            kwargs["hess"] = dense
    return {name: value for name, value in kwargs.items() if value is not None}


def _sparse_trust_constr_hess(objective: Any, flat: _Flat, x0: np.ndarray,
                              options: Optional[dict]) -> Optional[Callable]:
    """trust-constr's ``hess``: the objective's sparse Hessian when its pattern is sparse.

    scipy's trust-constr applies ``hess(x)`` to many vectors per iterate (projected CG),
    and takes it as a sparse matrix: one coloured HVP frame per iterate
    (``Objective.sparse_hess``) then makes every product a sparse mat-vec instead of
    an HVP pass. The choice is trust-exact's (:func:`.sparse_exact.use_sparse_hessian`):
    for an ``Objective(f, sparse=True)`` or above the dense limit, when the pattern has
    at most 20% non-zeros. ``None`` keeps the Hessian-vector products otherwise, and for
    objectives that give no sparse Hessian (callables of the caller, finite differences).
    """
    if not objective.capabilities.sparse_hess:
        return None
    from .problem import FlatProblem
    from .sparse_exact import use_sparse_hessian

    problem = FlatProblem(objective, flat.shape)
    disp = bool((options or {}).get("disp", False))
    if not use_sparse_hessian(problem, x0.reshape(-1), disp):
        return None
    return problem.sparse_hess


def _flat_matrix(h: Any, n: int) -> Any:
    """A Hessian as scipy wants it: (n, n) dense, or the sparse matrix / operator as is."""
    if issparse(h) or isinstance(h, LinearOperator):
        return h
    return np.reshape(np.asarray(h, dtype=np.float64), (n, n))


def minimize_with_scipy(objective: Any, x0: np.ndarray, method: Any, *, tol: Optional[float],
                        options: Optional[dict], callback: Optional[Callable], bounds: Any,
                        constraints: Any) -> OptimizeResult:
    """Run ``scipy.optimize.minimize`` on an objective with exact derivatives.

    Parameters
    ----------
    objective : object
        Has ``fun``, ``jac`` and ``hessp`` or ``hess`` on arrays of x0's shape.
    x0 : ndarray
        Starting point (any shape; scipy sees it flattened).
    method : str or callable
        A scipy method name (lower case, without any ``"scipy:"`` prefix) or a
        custom method callable.
    tol, options, callback, bounds, constraints
        As for ``scipy.optimize.minimize``.

    Returns
    -------
    OptimizeResult
        scipy's result with ``x`` (and ``jac``) reshaped to x0's shape.
    """
    objective = as_objective(objective)
    flat = _Flat(x0.shape)
    meth = "_custom" if callable(method) else method
    kwargs = _derivative_kwargs(objective, meth, flat, method)
    given = given_derivatives(objective)
    if meth == "trust-constr" and given.get("hess") is None and given.get("hessp") is None:
        sparse_hess = _sparse_trust_constr_hess(objective, flat, x0, options)
        if sparse_hess is not None:
            kwargs.pop("hessp", None)
            kwargs["hess"] = sparse_hess
    if meth == "_custom":  # scipy hands a custom method bounds and constraints untouched
        kwargs["bounds"], kwargs["constraints"] = bounds, constraints
    else:
        if bounds is not None:
            kwargs["bounds"] = _prepare_bounds(bounds, flat)
        cons = _prepare_constraints(constraints, meth, flat, x0.ravel())
        if cons:
            kwargs["constraints"] = cons
    res = scipy_minimize(flat.fun(objective.fun), x0.ravel(), method=method, tol=tol,
                         options=options, callback=_prepare_callback(callback, flat), **kwargs)
    if not flat.trivial:
        res.x = flat.x(np.asarray(res.x))
        if "jac" in res and np.size(res.jac) == flat.n:
            res.jac = flat.x(np.asarray(res.jac))
    return res
