"""``least_squares``: scipy.optimize.least_squares with exact Jacobians from newtonad.

The residual function is traced once; its Jacobian is supplied to scipy in one of
three forms, chosen from its size and structural sparsity pattern:

* ``"dense"`` — an ndarray from one jvp frame of identity columns (or one vjp frame of
  identity rows when there are fewer residuals than variables);
* ``"sparse"`` — a ``scipy.sparse.csr_array`` recovered from one coloured jvp or vjp
  frame, when the pattern has at most ``SPARSE_DENSITY`` of its entries non-zero;
* ``"operator"`` — a matrix-free ``LinearOperator`` (jvp for ``J v``, vjp for
  ``Jᵀ w``), for ``tr_solver="lsmr"`` on large problems with a dense pattern.

A jvp or vjp frame returns the residuals too, so the residual vector computed with a
Jacobian is kept: scipy's next call of ``fun`` at the same point reuses it.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ._settings import settings
from ._static_args import bind_static
from .api import jacobian_sparsity, jvp, vjp
from .fallback import is_real_array, probe, warn_fallback

#: Jacobians with at most this many entries are always computed dense.
SMALL_ENTRIES = 10_000
#: A pattern with a larger fraction of non-zeros is treated as dense.
SPARSE_DENSITY = 0.2
_SCIPY_JAC_METHODS = ("2-point", "3-point", "cs")


def least_squares(fun: Callable, x0: Any, jac: Any = None, bounds: Any = (-np.inf, np.inf),
                  method: str = "trf", ftol: Any = 1e-8, xtol: Any = 1e-8, gtol: Any = 1e-8,
                  x_scale: Any = None, loss: Any = "linear", f_scale: float = 1.0,
                  diff_step: Any = None, tr_solver: Any = None, tr_options: Any = None,
                  jac_sparsity: Any = None, max_nfev: Any = None, verbose: int = 0,
                  args: Any = (), kwargs: Any = None, callback: Any = None,
                  workers: Any = None, *, engine: str | None = None) -> Any:
    """Solve a nonlinear least-squares problem with scipy and an exact Jacobian.

    A drop-in for ``scipy.optimize.least_squares``: the same parameters in the same
    positional order, each going to scipy unchanged; only the default of ``jac``
    differs -- ``None``, newtonad's exact Jacobian, supplied as a dense array, a sparse
    array recovered by colouring, or a matrix-free ``LinearOperator`` (see the module
    docstring) -- where scipy's is ``'2-point'``.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args, **kwargs) -> ndarray`` of residuals, in plain NumPy.
    x0 : array_like, shape (n,)
        The starting point.
    jac : {None, '2-point', '3-point', 'cs', callable}, optional
        ``None`` (the default): the exact Jacobian by AD. Given, it wins: scipy uses
        it and newtonad supplies nothing (``'2-point'`` is scipy's own default).
    bounds : 2-tuple of array_like or Bounds, optional
        As for ``scipy.optimize.least_squares``.
    method : {'trf', 'dogbox', 'lm'}, optional
        As for ``scipy.optimize.least_squares``.
    ftol : float or None, optional
        As for ``scipy.optimize.least_squares``.
    xtol : float or None, optional
        As for ``scipy.optimize.least_squares``.
    gtol : float or None, optional
        As for ``scipy.optimize.least_squares``.
    x_scale : array_like or 'jac', optional
        As for ``scipy.optimize.least_squares``.
    loss : str or callable, optional
        As for ``scipy.optimize.least_squares``.
    f_scale : float, optional
        As for ``scipy.optimize.least_squares``.
    diff_step : None or array_like, optional
        As for ``scipy.optimize.least_squares``.
    tr_solver : {None, 'exact', 'lsmr'}, optional
        As for ``scipy.optimize.least_squares``.
    tr_options : dict, optional
        As for ``scipy.optimize.least_squares``.
    jac_sparsity : None, array_like or sparse matrix, optional
        As for ``scipy.optimize.least_squares``.
    max_nfev : None or int, optional
        As for ``scipy.optimize.least_squares``.
    verbose : {0, 1, 2}, optional
        As for ``scipy.optimize.least_squares``.
    args : tuple, optional
        Extra positional arguments of ``fun`` (a non-tuple is one argument). Python
        bool / int / float / str values are static while tracing; arrays are data.
    kwargs : dict, optional
        Extra keyword arguments of ``fun``.
    callback : callable, optional
        As for ``scipy.optimize.least_squares``; passed on only when given.
    workers : int or map-like callable, optional
        As for ``scipy.optimize.least_squares``; passed on only when given.
    engine : str, optional
        The newtonad engine for the derivative programs (default
        ``newtonad.settings.engine``); keyword only.

    Returns
    -------
    scipy.optimize.OptimizeResult
        The result of scipy. Besides scipy's fields it has ``jac_mode`` (``"dense"``,
        ``"sparse"``, ``"operator"``, ``"user"``, or ``"fallback"`` when ``fun`` could
        not be traced) and ``jac_sparsity`` (the structural pattern when it was
        computed, else None).

    Raises
    ------
    TypeError
        When ``fun`` is not callable.
    ValueError
        When ``jac`` is neither callable nor a scipy finite-difference scheme (as
        scipy raises), and as scipy raises for bad keywords or points.

    Warns
    -----
    TraceFallbackWarning
        When ``fun`` cannot be traced (``float(x[0])``, an ``if`` on a value, an
        unsupported function) but evaluates: it then runs as in scipy, with
        ``jac='2-point'``.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> res = nad.least_squares(lambda x: np.array([10 * (x[1] - x[0] ** 2), 1 - x[0]]),
    ...                         np.array([-1.2, 1.0]), engine="numpy")
    >>> np.round(res.x, 6), res.jac_mode
    (array([1., 1.]), 'dense')
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable (the residual function), got "
                        f"{type(fun).__name__}")
    args = args if isinstance(args, tuple) else (args,)
    options = {"bounds": bounds, "method": method, "ftol": ftol, "xtol": xtol, "gtol": gtol,
               "x_scale": x_scale, "loss": loss, "f_scale": f_scale, "diff_step": diff_step,
               "tr_solver": tr_solver, "tr_options": tr_options,
               "jac_sparsity": jac_sparsity, "max_nfev": max_nfev, "verbose": verbose,
               "kwargs": kwargs}
    options.update({name: value for name, value in (("callback", callback),
                                                     ("workers", workers))
                    if value is not None})
    if jac is not None:
        if not (callable(jac) or (isinstance(jac, str) and jac in _SCIPY_JAC_METHODS)):
            raise ValueError(f"jac must be a callable or one of {_SCIPY_JAC_METHODS}, got "
                             f"{jac!r}; omit it to let newtonad supply the exact Jacobian")
        res = _scipy()(fun, x0, jac=jac, args=args, **options)
        res.jac_mode, res.jac_sparsity = "user", None
        return res
    if np.iscomplexobj(x0):
        raise ValueError("x0 must be real: least_squares works on real variables")
    x0 = np.atleast_1d(np.asarray(x0, dtype=float))
    if x0.ndim > 1:
        raise ValueError(f"x0 must have at most 1 dimension, got shape {x0.shape}; "
                         f"pass x0.ravel() and reshape inside fun")
    if method == "lm" and jac_sparsity is not None:  # as scipy, whose default jac it is
        raise ValueError("method='lm' does not support `jac_sparsity`.")
    residuals, data = bind_static(_bind_keywords(fun, kwargs or {}), args)
    fallback = _probe(fun, residuals, x0, args, data, kwargs or {})
    if fallback is not None:
        return _least_squares_directly(fun, x0, args, options, fallback)
    provider = _JacobianProvider(residuals, x0, data, engine or settings.engine, options)
    res = _scipy()(provider.fun, x0, jac=provider.jac, args=args, **options)
    res.jac_mode, res.jac_sparsity = provider.mode, provider.pattern
    return res


def _scipy() -> Callable:
    """scipy's own least_squares, from its defining module (so that a replacement of
    ``scipy.optimize.least_squares`` by this function does not call itself)."""
    try:
        from scipy.optimize._lsq.least_squares import least_squares as scipy_least_squares
    except ImportError:  # pragma: no cover - a scipy that moved it
        from scipy.optimize import least_squares as scipy_least_squares
    return scipy_least_squares


def _probe(fun: Callable, residuals: Callable, x0: np.ndarray, args: tuple, data: tuple,
           kwargs: dict) -> Any:
    """``None`` when the residuals trace at ``x0``, else the fallback (:mod:`.fallback`)."""
    from ._programs import as_data, traced_at

    def trace() -> Any:
        return traced_at(residuals, x0, tuple(as_data(a) for a in data), scalar=False)
    return probe(trace, lambda: fun(x0.copy(), *args, **kwargs), is_real_array)


def _least_squares_directly(fun: Callable, x0: np.ndarray, args: tuple, options: dict,
                            fallback: Any) -> Any:
    """scipy's least_squares on ``fun`` itself with ``jac='2-point'``, after one
    :class:`~newtonad.TraceFallbackWarning`; the direct call at ``x0`` made while
    probing is scipy's first evaluation there."""
    warn_fallback(getattr(fun, "__name__", type(fun).__name__), fallback,
                  "scipy's '2-point' finite differences for the Jacobian", stacklevel=3)
    kept = [x0.tobytes(), fallback.value]

    def once_kept(x: np.ndarray, *a: Any, **kw: Any) -> Any:
        if kept and np.asarray(x).tobytes() == kept[0]:
            value = kept[1]
            kept.clear()
            return value
        kept.clear()
        return fun(x, *a, **kw)
    res = _scipy()(once_kept, x0, jac="2-point", args=args, **options)
    res.jac_mode, res.jac_sparsity = "fallback", None
    return res


def _bind_keywords(fun: Callable, extra: dict) -> Callable:
    """``fun`` with scipy's ``kwargs`` bound, so newtonad sees ``f(x, *args)``."""
    if not extra:
        return fun

    def bound(x, *args):
        return fun(x, *args, **extra)

    return bound


class _JacobianProvider:
    """The ``fun`` and ``jac`` callbacks given to scipy, sharing the last residuals."""

    def __init__(self, residuals: Callable, x0: np.ndarray, args: tuple, engine: str,
                 options: dict):
        self.residuals = residuals
        self.args = args
        self.engine = engine
        self.pattern: Any = None
        self.mode = "dense"
        self.colouring: tuple[str, np.ndarray, np.ndarray] | None = None
        y0 = np.asarray(residuals(x0, *args), dtype=float)
        self.y_shape = y0.shape
        self.m, self.n = y0.size, x0.size
        # scipy's first call of fun is at x0 (made strictly feasible for trf)
        self.cached_x, self.cached_y = x0.copy(), y0
        m, n = self.m, self.n
        if m * n > SMALL_ENTRIES:
            self._choose_large(x0, options)

    def _choose_large(self, x0: np.ndarray, options: dict) -> None:
        """Pick the sparse or matrix-free form when scipy can use it."""
        from .sparse import column_colouring, column_plan, row_colouring, row_plan, seed_matrix

        method = options.get("method", "trf")
        tr_solver = options.get("tr_solver")
        if method == "lm" or tr_solver == "exact":
            return  # these need a dense ndarray
        from .ad.sparsity import PatternTooDense

        try:  # give up early on a dense pattern: propagating it would cost more than it saves
            budget = int(SPARSE_DENSITY * self.m * self.n)
            pattern = jacobian_sparsity(self.residuals, max_nnz=budget)(x0, *self.args)
        except PatternTooDense:
            pattern = None
        self.pattern = pattern
        if pattern is not None and pattern.nnz <= SPARSE_DENSITY * self.m * self.n:
            columns, rows = column_colouring(pattern), row_colouring(pattern)
            # the recovery plan (where each non-zero sits in the compressed frame) is made
            # once here, not at every Jacobian
            if _count(columns) <= _count(rows):
                self.colouring = ("columns", column_plan(pattern, columns), seed_matrix(columns))
            else:
                self.colouring = ("rows", row_plan(pattern, rows), seed_matrix(rows))
            self.mode = "sparse"
        elif tr_solver == "lsmr" and not _scales_by_jac(options.get("x_scale")):
            self.mode = "operator"

    # ---- callbacks given to scipy -----------------------------------------------------------

    def fun(self, x: np.ndarray, *args: Any, **kwargs: Any) -> np.ndarray:
        if np.array_equal(x, self.cached_x):
            return self.cached_y.copy()
        return np.asarray(self.residuals(x, *self.args), dtype=float)

    def jac(self, x: np.ndarray, *args: Any, **kwargs: Any) -> Any:
        x = np.array(x, dtype=float)
        if self.mode == "operator":
            return self._operator(x)
        if self.mode == "sparse":
            y, J = self._sparse(x)
        else:
            y, J = self._dense(x)
        self.cached_x, self.cached_y = x, np.asarray(y, dtype=float)
        return J

    # ---- the three forms ----------------------------------------------------------------------

    def _dense(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m, n = self.m, self.n
        if n <= m:
            y, t = jvp(self.residuals, x, np.eye(n), self.args, engine=self.engine)
            return y, np.asarray(t).reshape(m, n)
        y, ct = vjp(self.residuals, x, np.eye(m).reshape(self.y_shape + (m,)), self.args,
                    engine=self.engine)
        return y, np.asarray(ct).reshape(n, m).T.copy()

    def _sparse(self, x: np.ndarray) -> tuple[np.ndarray, Any]:
        from .sparse import assemble

        assert self.colouring is not None
        side, plan, seed = self.colouring
        if side == "columns":
            y, t = jvp(self.residuals, x, seed, self.args, engine=self.engine)
            return y, assemble(self.pattern, plan, t)
        y, ct = vjp(self.residuals, x, seed, self.args, engine=self.engine)
        return y, assemble(self.pattern, plan, ct)

    def _operator(self, x: np.ndarray) -> Any:
        from scipy.sparse.linalg import LinearOperator

        f, args, engine = self.residuals, self.args, self.engine

        def matvec(v):
            return np.asarray(jvp(f, x, np.ravel(v), args, engine=engine)[1]).ravel()

        def rmatvec(w):
            return np.asarray(vjp(f, x, np.ravel(w), args, engine=engine)[1]).ravel()

        def matmat(V):
            return np.asarray(jvp(f, x, V, args, engine=engine)[1]).reshape(self.m, -1)

        def rmatmat(W):
            return np.asarray(vjp(f, x, W, args, engine=engine)[1]).reshape(self.n, -1)

        return LinearOperator((self.m, self.n), matvec=matvec, rmatvec=rmatvec,
                              matmat=matmat, rmatmat=rmatmat, dtype=float)


def _count(colours: np.ndarray) -> int:
    return int(colours.max()) + 1 if colours.size else 0


def _scales_by_jac(x_scale: Any) -> bool:
    return isinstance(x_scale, str) and x_scale == "jac"
