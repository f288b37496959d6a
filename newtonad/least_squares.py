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

from . import api
from .api import jacobian_sparsity, jvp, vjp

#: Jacobians with at most this many entries are always computed dense.
SMALL_ENTRIES = 10_000
#: A pattern with a larger fraction of non-zeros is treated as dense.
SPARSE_DENSITY = 0.2
_SCIPY_JAC_METHODS = ("2-point", "3-point", "cs")


def least_squares(fun: Callable, x0: Any, args: tuple = (), *, jac: Any = None,
                  engine: str | None = None, **kwargs: Any) -> Any:
    """Solve a nonlinear least-squares problem with scipy and an exact Jacobian.

    A drop-in for ``scipy.optimize.least_squares``: every keyword (``method``,
    ``bounds``, ``loss``, ``f_scale``, ``x_scale``, ``max_nfev``, ``ftol``, ``xtol``,
    ``gtol``, ``diff_step``, ``tr_solver``, ``tr_options``, ``jac_sparsity``,
    ``verbose``, ``kwargs``, ``callback``, ...) goes to scipy unchanged; only ``jac`` is
    supplied, as a dense array, a sparse array recovered by colouring, or a matrix-free
    ``LinearOperator`` (see the module docstring).

    Parameters
    ----------
    fun : callable
        ``fun(x, *args, **kwargs) -> ndarray`` of residuals, in plain NumPy.
    x0 : array_like, shape (n,)
        The starting point.
    args : tuple, optional
        Extra positional arguments of ``fun``.
    jac : callable or {'2-point', '3-point', 'cs'}, optional
        Given, it wins: scipy uses it and newtonad supplies nothing.
    engine : str, optional
        The newtonad engine for the derivative programs (default
        ``newtonad.api.DEFAULT_ENGINE``).
    **kwargs
        The other keywords of ``scipy.optimize.least_squares``.

    Returns
    -------
    scipy.optimize.OptimizeResult
        The result of scipy. Besides scipy's fields it has ``jac_mode`` (``"dense"``,
        ``"sparse"``, ``"operator"`` or ``"user"``) and ``jac_sparsity`` (the
        structural pattern when it was computed, else None).

    Raises
    ------
    TypeError
        When ``fun`` is not callable, or ``jac`` is neither callable nor a scipy
        finite-difference scheme.
    ValueError
        As scipy raises for bad keywords or points.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> res = nad.least_squares(lambda x: np.array([10 * (x[1] - x[0] ** 2), 1 - x[0]]),
    ...                         np.array([-1.2, 1.0]), engine="numpy")
    >>> np.round(res.x, 6), res.jac_mode
    (array([1., 1.]), 'dense')
    """
    from scipy import optimize

    if not callable(fun):
        raise TypeError(f"fun must be callable (the residual function), got "
                        f"{type(fun).__name__}")
    if jac is not None:
        if not (callable(jac) or (isinstance(jac, str) and jac in _SCIPY_JAC_METHODS)):
            raise TypeError(f"jac must be a callable or one of {_SCIPY_JAC_METHODS}, got "
                            f"{jac!r}; omit it to let newtonad supply the exact Jacobian")
        res = optimize.least_squares(fun, x0, jac=jac, args=args, **kwargs)
        res.jac_mode, res.jac_sparsity = "user", None
        return res
    if np.iscomplexobj(x0):
        raise ValueError("x0 must be real: least_squares works on real variables")
    x0 = np.atleast_1d(np.asarray(x0, dtype=float))
    if x0.ndim > 1:
        raise ValueError(f"x0 must have at most 1 dimension, got shape {x0.shape}; "
                         f"pass x0.ravel() and reshape inside fun")
    extra = kwargs.get("kwargs") or {}
    residuals = _bind_keywords(fun, extra)
    provider = _JacobianProvider(residuals, x0, tuple(args), engine or api.DEFAULT_ENGINE,
                                 kwargs)
    res = optimize.least_squares(provider.fun, x0, jac=provider.jac, args=args, **kwargs)
    res.jac_mode, res.jac_sparsity = provider.mode, provider.pattern
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
