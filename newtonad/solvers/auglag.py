"""``method="auglag"``: an augmented-Lagrangian method whose subproblems are bound-constrained
Newton solves.

The problem is ``min f(x)`` subject to ``h(x) = 0``, ``g(x) <= 0`` and ``l <= x <= u``,
where ``h`` and ``g`` collect the rows of scipy's constraint objects
(:class:`~scipy.optimize.NonlinearConstraint`, :class:`~scipy.optimize.LinearConstraint`,
or the old dicts with ``'eq'`` / ``'ineq'``): a row with ``lb == ub`` is an equality, and a
finite ``lb`` or ``ub`` of any other row is an inequality. Bounds stay bounds: they are
handed to the subproblem solver (``tron`` by default), never penalised.

The outer iteration is ALGENCAN's (R. Andreani, E. G. Birgin, J. M. Martínez and
M. L. Schuverdt, "On augmented Lagrangian methods with general lower-level constraints",
SIAM J. Optim. 18 (2007) 1286-1309, Algorithm 3.1). With the Powell–Hestenes–Rockafellar
augmented Lagrangian (their eq. (2))

.. math::

    L_\\rho(x, \\lambda, \\mu) = f(x) + \\frac{\\rho}{2} \\Big(
        \\big\\| h(x) + \\lambda / \\rho \\big\\|^2
        + \\big\\| \\max(0,\\, g(x) + \\mu / \\rho) \\big\\|^2 \\Big),

iteration ``k``:

1. minimise :math:`L_{\\rho_k}(\\cdot, \\bar\\lambda_k, \\bar\\mu_k)` over the box to a
   projected-gradient norm :math:`\\varepsilon_k` (step 1; :math:`\\varepsilon_k \\to`
   ``gtol``);
2. update the multipliers (step 2, eqs. (3)-(4)):
   :math:`\\lambda_{k+1} = \\bar\\lambda_k + \\rho_k h(x_k)`,
   :math:`\\mu_{k+1} = \\max(0, \\bar\\mu_k + \\rho_k g(x_k))`, and keep the safeguarded
   :math:`\\bar\\lambda_{k+1} \\in [\\lambda_{\\min}, \\lambda_{\\max}]`,
   :math:`\\bar\\mu_{k+1} \\in [0, \\mu_{\\max}]`;
3. measure infeasibility and complementarity by
   :math:`V_k = \\max(g(x_k), -\\bar\\mu_k / \\rho_k)` and keep :math:`\\rho` when
   :math:`\\max(\\|h(x_k)\\|_\\infty, \\|V_k\\|_\\infty) \\le \\tau \\max(\\|h(x_{k-1})\\|_\\infty,
   \\|V_{k-1}\\|_\\infty)`, else :math:`\\rho_{k+1} = \\gamma \\rho_k` (step 3, with
   :math:`\\tau = 1/2`, :math:`\\gamma = 10`).

The first penalty is ALGENCAN's default,
:math:`\\rho_1 = \\max(10^{-8}, \\min(10 \\max(1, |f(x_0)|) / \\max(1, \\tfrac12
\\|h(x_0)\\|^2 + \\tfrac12 \\|g(x_0)_+\\|^2), 10^8))`.

The augmented Lagrangian is one traced function of ``x`` with the multipliers and the
penalty as data arguments, so newtonad derives its gradient and Hessian-vector products
once and every subproblem reuses the compiled kernels. At the solution,
:math:`\\nabla_x L_{\\rho_k}(x_k) = \\nabla f(x_k) + J_h^T \\lambda_{k+1} + J_g^T \\mu_{k+1}`:
the subproblem's projected gradient is the KKT residual.

The subproblem's Hessian is :math:`\\nabla^2 f + \\rho J^T J + \\sum_i (\\rho c_i +
\\lambda_i) \\nabla^2 c_i` (over the equalities and the active inequalities), so a
constraint row with ``k`` non-zeros adds a dense ``k x k`` block. tron's incomplete
Cholesky preconditioner is kept when the rows add few entries; otherwise the few densest
rows (a volume, a budget) are kept out of the sparse Hessian: their
:math:`\\rho\\, \\nabla c_i \\nabla c_i^T` is a low-rank term ``U U^T`` added to the
factor of the rest exactly (:class:`.preconditioners.SparsePlusLowRank`).

Consecutive subproblems differ only by the multipliers (and at times the penalty), so
each starts where the last one left off: from its point, with the trust radius tron
ended it with (tron's default, the first projected gradient's norm, is the length of a
gradient step; near a solution the Newton step of the next subproblem is many times
longer, and growing the radius by 4 per iteration cost cubic-control 2-6 iterations
per subproblem: 33 in all at n = 1e5, 14 with the radius kept), scaled by
:math:`\\sqrt{\\gamma}` when the penalty grows (tron's radius is in the Hessian's
energy norm, and :math:`\\rho J^T J` grows with :math:`\\rho`); and with the incomplete
Cholesky factor of an earlier iterate's Hessian while it still serves (``KeptFactor``:
a new sparse Hessian and factor when the penalty changes or CG with the kept factor
takes more than one iteration more than when it was new, and within the first
subproblem, which starts far from its solution).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, NonlinearConstraint, OptimizeResult
from scipy.sparse import identity, issparse

__all__ = ["minimize_auglag", "AUGLAG_OPTIONS", "default_preconditioner", "dense_rows"]

#: options of ``method="auglag"`` and their defaults
AUGLAG_OPTIONS: dict[str, Any] = {
    "gtol": 1e-8,            # projected gradient of the Lagrangian (KKT residual), inf-norm
    "ctol": 1e-8,            # constraint violation, inf-norm
    "maxiter": 100,          # outer iterations
    "inner_maxiter": 1000,   # iterations of each subproblem
    "inner_method": "tron",  # the bound-constrained subproblem solver
    "inner_options": None,   # further options of the subproblem solver (e.g. preconditioner)
    "initial_penalty": None,  # None: ALGENCAN's rule (module docstring)
    "max_penalty": 1e20,
    "disp": False,
    "max_time": None,
}

_TAU, _GAMMA = 0.5, 10.0               # Andreani et al. (2007), step 3
_LAMBDA_MAX = _MU_MAX = 1e20           # safeguards of step 2
_FIRST_INNER_GTOL = 1e-2               # epsilon_1; each outer iteration divides it by 10
#: the constraints may add this many entries per variable to the sparse Hessian
_ENTRIES_PER_VARIABLE = 50
#: at most this many dense rows are taken out of it as a low-rank term
_MAX_LOW_RANK = 20


@dataclass
class _Rows:
    """One scipy constraint object as rows of ``c(x)`` with their kinds."""

    fun: Callable[[Any], Any]   # x -> c(x), 1-D, traceable
    lb: np.ndarray
    ub: np.ndarray
    source: Any                 # the caller's object, for the result
    matrix: Any = None          # A of a linear constraint

    def row_counts(self, x: np.ndarray) -> np.ndarray:
        """Non-zeros of each row of the constraint Jacobian (its pattern at any x)."""
        if self.matrix is not None:
            if issparse(self.matrix):
                return np.diff(self.matrix.tocsr().indptr)
            return np.count_nonzero(self.matrix, axis=1)
        from newtonad.api import jacobian_sparsity
        return np.diff(jacobian_sparsity(self.fun)(x).indptr)


def _as_rows(constraint: Any, x0: np.ndarray) -> _Rows:
    if isinstance(constraint, dict):
        kind = constraint.get("type")
        if kind not in ("eq", "ineq"):
            raise ValueError(f"a constraint dict needs 'type': 'eq' or 'ineq', got {kind!r}")
        if "fun" not in constraint:
            raise ValueError("a constraint dict needs 'fun': fun(x, *args) -> array")
        cfun, cargs = constraint["fun"], tuple(constraint.get("args", ()))
        m = np.size(cfun(x0.copy(), *cargs))
        upper = np.zeros(m) if kind == "eq" else np.full(m, np.inf)
        return _Rows(lambda x: _flat(cfun(x, *cargs)), np.zeros(m), upper, constraint)
    if isinstance(constraint, LinearConstraint):
        A = constraint.A
        m = A.shape[0] if A.ndim == 2 else 1
        if issparse(A):
            matrix = A.tocsr()
        else:
            matrix = np.atleast_2d(np.asarray(A, dtype=float))
        return _Rows(_product(matrix), _broadcast(constraint.lb, m),
                     _broadcast(constraint.ub, m), constraint, matrix)
    if isinstance(constraint, NonlinearConstraint):
        cfun = constraint.fun
        m = np.size(cfun(x0.copy()))
        return _Rows(lambda x: _flat(cfun(x)), _broadcast(constraint.lb, m),
                     _broadcast(constraint.ub, m), constraint)
    raise TypeError(f"auglag takes NonlinearConstraint, LinearConstraint or dicts with "
                    f"'type' and 'fun'; got {type(constraint).__name__}")


def _product(matrix: Any) -> Callable[[Any], Any]:
    """``x -> matrix @ x``; on arrays, a dense ``matrix`` is applied without BLAS.

    numpy's ``@`` calls OpenBLAS's threaded ``dgemv``: on two busy cores the volume row of
    loaded-surface-volume (1 x 99 856) took 5 ms per product inside a solve (its threads
    wait for a time slice; 12 us alone), 0.3 s of an 8 s solve. einsum's own loop is
    serial (about 50 us). Traced values keep ``@`` (a contraction of the program).
    """
    if issparse(matrix):
        return lambda x: matrix @ x

    def product(x: Any) -> Any:
        if isinstance(x, np.ndarray) and x.dtype == np.float64:
            return np.einsum("ij,j->i", matrix, x)
        return matrix @ x
    return product


def _flat(value: Any) -> Any:
    # np.ndim reads traced values too; lists and tuples are made arrays by reshape
    if np.ndim(value) == 1 and not isinstance(value, (list, tuple)):
        return value
    return np.reshape(value, (-1,))


def _broadcast(bound: Any, m: int) -> np.ndarray:
    b = np.asarray(bound, dtype=float)
    try:
        return np.broadcast_to(b, (m,)).astype(float)
    except ValueError:
        raise ValueError(f"constraint bounds of shape {b.shape} do not match the {m} "
                         f"constraint values") from None


class _Split:
    """The rows of every constraint sorted into equalities and ``<= 0`` inequalities.

    ``h = c[eq] - target``; ``g = concat(c[up] - ub[up], lb[lo] - c[lo])``.
    """

    def __init__(self, rows: list[_Rows]) -> None:
        self.rows = rows
        self.sizes = [r.lb.size for r in rows]
        lb = np.concatenate([r.lb for r in rows]) if rows else np.zeros(0)
        ub = np.concatenate([r.ub for r in rows]) if rows else np.zeros(0)
        if np.isnan(lb).any() or np.isnan(ub).any():
            raise ValueError("constraint bounds contain NaN; use -np.inf / np.inf for a "
                             "missing bound")
        if (lb > ub).any():
            i = int(np.argmax(lb > ub))
            raise ValueError(f"constraint row {i}: lb = {lb[i]} > ub = {ub[i]}; each row "
                             f"needs lb <= ub (lb == ub for an equality)")
        equal = lb == ub
        self.eq = np.flatnonzero(equal)
        self.target = lb[self.eq]
        self.up = np.flatnonzero(~equal & np.isfinite(ub))
        self.ub = ub[self.up]
        self.lo = np.flatnonzero(~equal & np.isfinite(lb))
        self.lb = lb[self.lo]
        self.m_eq, self.m_in = self.eq.size, self.up.size + self.lo.size

    def values(self, x: Any) -> Any:
        parts = [r.fun(x) for r in self.rows]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def h_and_g(self, c: Any) -> tuple[Any, Any]:
        """``h`` and ``g`` from the stacked values; an empty part is None."""
        h = c[self.eq] - self.target if self.eq.size else None
        parts = ([c[self.up] - self.ub] if self.up.size else []) + (
            [self.lb - c[self.lo]] if self.lo.size else [])
        g = None if not parts else parts[0] if len(parts) == 1 else np.concatenate(parts)
        return h, g

    def multipliers(self, lam: np.ndarray, mu: np.ndarray) -> list[np.ndarray]:
        """scipy trust-constr's ``v``: per constraint, the row multipliers with
        ``grad f + sum J_i^T v_i = 0`` at a KKT point."""
        v = np.zeros(sum(self.sizes))
        v[self.eq] = lam
        np.add.at(v, self.up, mu[:self.up.size])
        np.add.at(v, self.lo, -mu[self.up.size:])
        return np.split(v, np.cumsum(self.sizes)[:-1]) if self.sizes else []


def _augmented_lagrangian(fun: Callable, args: tuple, split: _Split) -> Callable:
    """``L(x, lam, mu, rho, *args)``: traced once, multipliers and penalty as data."""
    def lagrangian(x, lam, mu, rho, *fargs):
        value = fun(x, *fargs)
        if not split.rows:
            return value
        h, g = split.h_and_g(split.values(x))
        r = rho[0]
        penalty = 0.0
        if h is not None:
            penalty = penalty + np.sum((h + lam / r) ** 2)
        if g is not None:
            penalty = penalty + np.sum(np.maximum(g + mu / r, 0.0) ** 2)
        return value + 0.5 * r * penalty
    return lagrangian


def dense_rows(split: _Split, x: np.ndarray) -> Optional[np.ndarray]:
    """The constraint rows to keep out of the sparse Hessian, as indices of the stacked
    constraint values: none when the rows add at most ``50 n`` entries to it, else the
    fewest densest rows that bring the rest within that; None when more than
    :data:`_MAX_LOW_RANK` would be needed, or a constraint cannot be traced.

    The penalty adds ``rho J^T J`` to the Hessian, so a row with ``k`` non-zeros adds up
    to ``k^2`` entries, and as many colours to the frame that recovers the sparse
    Hessian. Below ``50 n`` entries from the constraints the incomplete Cholesky factor
    cut the products of every scalable problem of ``newtonad.problems.constrained`` by 10x
    or more (``benchmarks/constrained_report.py``).

    Parameters
    ----------
    split : _Split
        The constraint rows.
    x : ndarray
        A point (the patterns do not depend on it).

    Returns
    -------
    ndarray of int or None
    """
    try:
        counts = np.concatenate([r.row_counts(x) for r in split.rows]).astype(np.int64) \
            if split.rows else np.zeros(0, np.int64)
    except Exception:  # an untraceable constraint: the fallback has no sparse Hessian
        return None
    entries = counts ** 2
    budget = _ENTRIES_PER_VARIABLE * x.size
    densest = np.argsort(-counts, kind="stable")
    # left[j]: the entries of the rows after the j densest are taken out
    left = int(entries.sum()) - np.concatenate([[0], np.cumsum(entries[densest])])
    taken = int(np.argmax(left <= budget))
    if taken > _MAX_LOW_RANK:
        return None
    return np.sort(densest[:taken])


def default_preconditioner(split: _Split, x: np.ndarray) -> Optional[str]:
    """``"ichol"`` when the augmented Lagrangian's Hessian stays sparse, else None.

    It stays sparse when :func:`dense_rows` takes no row out; a dense row (a volume, a
    budget) makes the Hessian dense, and a sparse Hessian for the preconditioner would
    cost ``n`` products (auglag then preconditions with :class:`_LowRankPenalty`).

    Parameters
    ----------
    split : _Split
        The constraint rows.
    x : ndarray
        A point (the patterns do not depend on it).

    Returns
    -------
    str or None
        ``"ichol"`` or None; None too when a constraint cannot be traced.
    """
    dense = dense_rows(split, x)
    return "ichol" if dense is not None and dense.size == 0 else None


def _rows_of(fun: Callable, rows: np.ndarray) -> Callable:
    """``x -> fun(x)[rows]``."""
    def picked(x):
        return fun(x)[rows]
    return picked


class _LowRankPenalty:
    """The subproblem's Hessian as ``S + U U^T`` with the dense rows' penalty in ``U``.

    For a dense equality row ``h_i`` the penalty :math:`\\tfrac{\\rho}{2}(h_i +
    \\lambda_i/\\rho)^2` has the Hessian :math:`\\rho\\, \\nabla h_i \\nabla h_i^T + (\\rho h_i
    + \\lambda_i) \\nabla^2 h_i`, and an inequality's :math:`\\tfrac{\\rho}{2} \\max(0, g_j +
    \\mu_j/\\rho)^2` the same with :math:`\\max(0, \\rho g_j + \\mu_j)` where it is active
    (zero elsewhere). ``U`` holds the columns :math:`\\sqrt\\rho\\, \\nabla c_i` of the
    equalities and the active inequalities; ``S`` is the sparse Hessian of the augmented
    Lagrangian with each dense row's penalty replaced by its weight at ``x`` times the
    row (:math:`w_i c_i(x)`, the curvature term), from a second traced function.

    Parameters
    ----------
    fun : callable
        The objective on flat ``x``.
    split : _Split
        The constraint rows.
    dense : ndarray of int
        The dense rows (indices of the stacked constraint values, :func:`dense_rows`).
    """

    def __init__(self, fun: Callable, split: _Split, dense: np.ndarray) -> None:
        from newtonad.api import hessian, jacobian

        self.split = split
        in_rows = np.concatenate([split.up, split.lo])  # the row of each entry of g
        self.dense_eq = np.flatnonzero(np.isin(split.eq, dense))
        self.sparse_eq = np.flatnonzero(~np.isin(split.eq, dense))
        self.dense_in = np.flatnonzero(np.isin(in_rows, dense))
        self.sparse_in = np.flatnonzero(~np.isin(in_rows, dense))
        # the gradient of each dense row: a linear constraint's row, else a Jacobian
        self.rows = np.asarray(dense)
        self.where = {int(row): k for k, row in enumerate(self.rows)}
        self.eq_rows = split.eq[self.dense_eq]
        self.in_rows = in_rows[self.dense_in]
        self._jacobians: list[tuple[np.ndarray, Any, Any]] = []
        start = 0
        for rows in split.rows:
            local = self.rows[(self.rows >= start) & (self.rows < start + rows.lb.size)]
            local = local - start
            if local.size:
                if rows.matrix is not None:
                    block = rows.matrix[local]
                    block = block.toarray() if issparse(block) else np.asarray(block, float)
                    self._jacobians.append((local + start, block, None))
                else:
                    self._jacobians.append((local + start, None,
                                            jacobian(_rows_of(rows.fun, local))))
            start += rows.lb.size
        self.function = self._sparse_part(fun)
        self.hessian = hessian(self.function, sparse=True)

    def _sparse_part(self, fun: Callable) -> Callable:
        """``S``'s function: ``L`` with the dense rows' penalty replaced by ``w . c``."""
        split = self.split
        sparse_eq, dense_eq = self.sparse_eq, self.dense_eq
        sparse_in, dense_in = self.sparse_in, self.dense_in

        def sparse_part(x, lam, mu, rho, w_eq, w_in, *fargs):
            h, g = split.h_and_g(split.values(x))
            r = rho[0]
            penalty = 0.0
            curvature = 0.0
            if sparse_eq.size:
                penalty = penalty + np.sum((h[sparse_eq] + lam[sparse_eq] / r) ** 2)
            if dense_eq.size:
                curvature = curvature + np.sum(w_eq * h[dense_eq])
            if sparse_in.size:
                penalty = penalty + np.sum(
                    np.maximum(g[sparse_in] + mu[sparse_in] / r, 0.0) ** 2)
            if dense_in.size:
                curvature = curvature + np.sum(w_in * g[dense_in])
            return fun(x, *fargs) + 0.5 * r * penalty + curvature
        return sparse_part

    def _gradients(self, x: np.ndarray) -> np.ndarray:
        """The dense rows' gradients at ``x``, one row each, in the order of ``rows``."""
        out = np.empty((self.rows.size, x.size))
        for rows, block, jac in self._jacobians:
            at = [self.where[int(r)] for r in rows]
            out[at] = block if block is not None else np.asarray(jac(x)).reshape(len(at), -1)
        return out

    def fits(self, x: np.ndarray, lam: np.ndarray, mu: np.ndarray, args: tuple) -> bool:
        """Whether ``S`` can be traced and is sparse enough to factorise."""
        from newtonad.api import hessian_sparsity

        from .preconditioners import MAX_NNZ_PER_ROW

        try:
            pattern = hessian_sparsity(self.function)(
                x, lam, mu, np.ones(1), np.ones(self.dense_eq.size),
                np.ones(self.dense_in.size), *args)
        except Exception:  # untraceable: the subproblem falls back, without S
            return False
        return pattern.nnz <= max(MAX_NNZ_PER_ROW * x.size, 1024)

    def preconditioner(self, lam: np.ndarray, mu: np.ndarray, rho: float,
                       args: tuple) -> Any:
        """The subproblem's :class:`.preconditioners.SparsePlusLowRank` at ``(lam, mu, rho)``."""
        from .preconditioners import SparsePlusLowRank

        return SparsePlusLowRank(self.parts(lam, mu, rho, args), "ichol")

    def parts(self, lam: np.ndarray, mu: np.ndarray, rho: float,
              args: tuple) -> Callable[[np.ndarray], tuple[Any, np.ndarray]]:
        """``x -> (S, U)`` of the subproblem at ``(lam, mu, rho)``."""
        split, penalty = self.split, np.array([rho])

        def parts(x: np.ndarray) -> tuple[Any, np.ndarray]:
            h, g = split.h_and_g(np.asarray(split.values(x), dtype=float))
            w_eq = rho * h[self.dense_eq] + lam[self.dense_eq] if h is not None \
                else np.zeros(0)
            w_in = np.maximum(0.0, rho * g[self.dense_in] + mu[self.dense_in]) \
                if g is not None else np.zeros(0)
            s = self.hessian(x, lam, mu, penalty, w_eq, w_in, *args)
            gradients = self._gradients(x)
            active = self.in_rows[w_in > 0.0]
            columns = [gradients[self.where[int(r)]] for r in (*self.eq_rows, *active)]
            u = math.sqrt(rho) * np.array(columns).T.reshape(x.size, len(columns))
            return s, u

        return parts


class _Counted:
    """A preconditioner that counts its ``left`` calls: CG on ``C⁻¹ H C⁻ᵀ`` makes one per
    iteration, and one more for its right-hand side."""

    def __init__(self, base: Any) -> None:
        self.base = base
        self.calls = 0

    def left(self, v: np.ndarray) -> np.ndarray:
        self.calls += 1
        return self.base.left(v)

    def right(self, v: np.ndarray) -> np.ndarray:
        return self.base.right(v)

    def solve(self, r: np.ndarray) -> np.ndarray:
        return self.base.solve(r)


def _kept_factor_class() -> type:
    from .preconditioners import SparsePlusLowRank

    class KeptFactor(SparsePlusLowRank):
        """tron's ``preconditioner``: the incomplete Cholesky factor of the subproblem's
        sparse Hessian, kept over tron's iterations and over outer iterations while it
        still serves, instead of a new sparse Hessian and factor at every iterate.

        Between outer iterations with the same penalty the Hessian of the augmented
        Lagrangian, :math:`\\nabla^2 f + \\rho J^T J + \\sum_i (\\rho c_i + \\lambda_i)
        \\nabla^2 c_i`, changes only through ``x`` and the multipliers, which move little
        once the iterates are near a solution, so the factor of an earlier iterate is still
        a good preconditioner; tron's trust region is measured in the energy norm of the
        true Hessian (:mod:`.tron`), so its steps do not depend on the factor, only the CG
        iterations that find them do. A factor is formed anew when the penalty changes (it
        scales the :math:`J^T J` part); when CG with the kept factor took more than
        ``k + 1`` iterations, ``k`` those with the factor when it was new; and at every
        iteration of the first subproblem but its first, which starts from ``x0``, far from
        where it ends. Later subproblems start at the solution of the one before, and their
        iterates stay near it. Every decision counts iterations, so a run gives the same
        bits every time.

        Where the incomplete factor is exact (a band of width 2, as chained Rosenbrock's),
        CG with the new factor solves the Newton system in one iteration, and with a kept
        one only to tron's tolerance (``min(0.1, sqrt(‖P g‖))`` relative): Newton's method
        then converges linearly. Kept through the first subproblem's iterations it cost
        trig-exp at n = 1e5 4 outer and 12 tron iterations instead of 1 and 7 (0.84 s
        against 0.71 s of CPU, medians of 3 x 4 warm solves); cubic-control (1-2 tron
        iterations per subproblem) loses nothing by refactoring there.

        ``update(parts, rho)`` sets the subproblem's ``parts`` (``x -> (S, U)`` as for
        :class:`.preconditioners.SparsePlusLowRank`) before each outer iteration.
        """

        def __init__(self) -> None:
            super().__init__(None, "ichol")
            self.rho: Optional[float] = None
            self.stale = True
            self.factor: Optional[_Counted] = None
            self.key: Any = None
            self.fresh: Optional[int] = None  # CG iterations with the factor when new
            self.last: Optional[int] = None   # ... and with it the last time
            self.factorisations = 0
            self.first = True
            self.updates = 0  # subproblems so far
            self.ordered: Optional[tuple[Any, Any]] = None  # (S, its fill-reducing order)

        def update(self, parts: Callable, rho: float) -> None:
            self.parts = parts
            self.first = True
            self.updates += 1
            if rho != self.rho:
                self.rho, self.stale = rho, True

        def _note_use(self) -> None:
            if self.factor is not None and self.factor.calls:
                self.last = self.factor.calls - 1
                if self.fresh is None:
                    self.fresh = self.last
                self.factor.calls = 0

        def sparse_hessian(self, n: int, x: np.ndarray) -> Any:
            self._note_use()
            worn = self.fresh is not None and self.last is not None and \
                self.last > self.fresh + 1
            first, self.first = self.first, False
            if self.stale or worn or not (first or self.updates > 1) or self._current is None:
                self.stale, self.factor, self.key = False, None, None
                return super().sparse_hessian(n, x)
            return self._current[0]

        def make(self, h: Any, order: Any = "choose",
                 subset: Optional[np.ndarray] = None) -> Any:
            if order is None:
                # tron orders only a named "ichol": an object gets its matrix's own order,
                # which for cubic-control (states, then controls) drops the coupling
                order = self._order(h, subset)
            key = (order, subset)
            self._note_use()
            if self.factor is not None and _same_key(self.key, key):
                return self.factor
            self.factor = _Counted(super().make(h, order, subset))
            self.key, self.fresh, self.last = key, None, None
            self.factorisations += 1
            return self.factor

        def _order(self, h: Any, subset: Optional[np.ndarray]) -> Optional[np.ndarray]:
            """:func:`.ichol.fill_reducing_order` of ``h`` (found once per matrix), induced
            on ``subset``."""
            from .ichol import fill_reducing_order
            from .preconditioners import restrict_order

            if self.ordered is None or self.ordered[0] is not h:
                self.ordered = (h, fill_reducing_order(h))
            order = self.ordered[1]
            if subset is None or order is None:
                return order
            free = np.zeros(h.shape[0], dtype=bool)
            free[subset] = True
            return restrict_order(order, free)

    return KeptFactor


def _same_key(a: Any, b: Any) -> bool:
    """Equal ``(order, subset)`` keys of ``KeptFactor.make`` (arrays by value)."""
    def same(u: Any, v: Any) -> bool:
        if u is None or v is None:
            return u is v
        if isinstance(u, str) or isinstance(v, str):
            return isinstance(u, str) and isinstance(v, str) and u == v
        return bool(np.array_equal(u, v))
    return a is not None and b is not None and all(same(u, v) for u, v in zip(a, b))


def _infeasibility(h: np.ndarray, g: np.ndarray, mu: np.ndarray, rho: float) -> float:
    """``max(||h||_inf, ||V||_inf)`` with ``V = max(g, -mu / rho)`` (step 3)."""
    v = np.maximum(g, -mu / rho)
    return max(float(np.max(np.abs(h), initial=0.0)), float(np.max(np.abs(v), initial=0.0)))


def _violation(h: np.ndarray, g: np.ndarray, x: np.ndarray, bounds: Optional[Bounds]) -> float:
    worst = max(float(np.max(np.abs(h), initial=0.0)), float(np.max(g, initial=0.0)))
    if bounds is not None:
        worst = max(worst, float(np.max(bounds.lb - x, initial=0.0)),
                    float(np.max(x - bounds.ub, initial=0.0)))
    return worst


def _as_bounds(bounds: Any, n: int) -> Optional[Bounds]:
    if bounds is None:
        return None
    if not isinstance(bounds, Bounds):
        pairs = list(bounds)
        if len(pairs) != n:
            raise ValueError(f"bounds has {len(pairs)} (low, high) pairs for {n} variables; "
                             f"give one pair per variable or a scipy.optimize.Bounds")
        lo = [-np.inf if p[0] is None else p[0] for p in pairs]
        hi = [np.inf if p[1] is None else p[1] for p in pairs]
        bounds = Bounds(lo, hi)
    lb = np.broadcast_to(np.asarray(bounds.lb, dtype=float), (n,)).copy()
    ub = np.broadcast_to(np.asarray(bounds.ub, dtype=float), (n,)).copy()
    if np.isnan(lb).any() or np.isnan(ub).any():
        raise ValueError("bounds contain NaN; use -np.inf / np.inf for a missing bound")
    if (lb > ub).any():
        i = int(np.argmax(lb > ub))
        raise ValueError(f"bounds: lower bound {lb[i]} > upper bound {ub[i]} of variable {i}")
    return Bounds(lb, ub)


def minimize_auglag(fun: Callable, x0: np.ndarray, args: tuple = (),
                    constraints: Sequence[Any] | Any = (), bounds: Any = None,
                    callback: Optional[Callable] = None, **options: Any) -> OptimizeResult:
    """Minimise ``fun`` subject to constraints and bounds by ALGENCAN's augmented Lagrangian.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args) -> float`` in plain NumPy (traced by newtonad).
    x0 : ndarray
        The start (projected onto the bounds; it need not satisfy the constraints).
    args : tuple
        Extra arguments of ``fun``.
    constraints : constraint or sequence of constraints
        :class:`~scipy.optimize.NonlinearConstraint`, :class:`~scipy.optimize.LinearConstraint`
        or dicts ``{'type': 'eq' | 'ineq', 'fun': ..., 'args': ...}`` (``'ineq'``: ``fun >= 0``).
        Constraint functions are traced with ``fun``; their own ``jac`` / ``hess`` are not used.
    bounds : Bounds or sequence of (low, high), optional
        Kept as bounds in every subproblem.
    callback : callable, optional
        ``callback(intermediate_result)`` (an ``OptimizeResult`` with ``x``, ``fun``,
        ``constr_violation``, ``penalty``) or ``callback(xk)``, after each outer iteration;
        raising ``StopIteration`` ends the run (status 3).
    **options
        See :data:`AUGLAG_OPTIONS`: ``gtol`` (KKT residual), ``ctol`` (constraint
        violation), ``maxiter`` (outer iterations), ``inner_maxiter``, ``inner_method``,
        ``inner_options`` (a dict for the subproblem solver; by default tron gets the
        preconditioner of :func:`default_preconditioner`), ``initial_penalty``,
        ``max_penalty``, ``disp``, ``max_time`` (seconds).

    Returns
    -------
    OptimizeResult
        As scipy's trust-constr reports it: ``x``, ``fun``, ``constr`` (values per
        constraint), ``constr_violation``, ``v`` (multipliers per constraint, with
        ``grad f + sum J_i^T v_i`` zero at a KKT point), ``optimality``, ``nit`` (inner
        iterations in all), ``nfev``, ``njev``, ``nhev``, ``status`` (0: ``maxiter``; 1:
        converged; 3: callback; 4: ``max_time``; 5: the penalty reached ``max_penalty``
        without feasibility), ``success``, ``message``; plus ``outer_iterations``,
        ``inner_iterations`` (per subproblem) and ``penalty``.
    """
    from newtonad.fallback import TraceFallbackWarning

    from .minimize import minimize
    from .monitor import IterationRecord, watch

    unknown = set(options) - set(AUGLAG_OPTIONS)
    if unknown:
        raise ValueError(f"auglag has no option(s) {sorted(unknown)}; its options are "
                         f"{sorted(AUGLAG_OPTIONS)}")
    opts = {**AUGLAG_OPTIONS, **options}
    started = time.perf_counter()
    x0 = np.asarray(x0, dtype=float)
    shape = x0.shape
    x = x0.ravel().copy()
    n = x.size
    box = _as_bounds(bounds, n)
    if box is not None:
        x = np.clip(x, box.lb, box.ub)
    if isinstance(constraints, (dict, LinearConstraint, NonlinearConstraint)):
        constraints = [constraints]
    flat_fun = (lambda z, *a: fun(z.reshape(shape), *a)) if len(shape) != 1 else fun
    split = _Split([_as_rows(c, x.reshape(shape) if len(shape) != 1 else x)
                    for c in constraints])
    lagrangian = _augmented_lagrangian(flat_fun, tuple(args), split)

    def constraint_parts(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        c = np.asarray(split.values(z), dtype=float) if split.rows else np.zeros(0)
        h, g = split.h_and_g(c)
        return c, np.zeros(0) if h is None else h, np.zeros(0) if g is None else g

    f0 = float(flat_fun(x, *args))
    _, h, g = constraint_parts(x)
    if not math.isfinite(f0) or not np.isfinite(h).all() or not np.isfinite(g).all():
        return OptimizeResult(x=x.reshape(shape), fun=f0, success=False, status=5,
                              message="the objective or a constraint is not finite at x0",
                              nit=0, nfev=1, njev=0, nhev=0, outer_iterations=0,
                              inner_iterations=[])
    rho = opts["initial_penalty"]
    if rho is None:
        spread = 0.5 * float(h @ h) + 0.5 * float(np.sum(np.maximum(g, 0.0) ** 2))
        rho = max(1e-8, min(10.0 * max(1.0, abs(f0)) / max(1.0, spread), 1e8))
    lam = np.zeros(split.m_eq)
    mu = np.zeros(split.m_in)
    chosen: dict[str, Any] = {}
    low_rank: Optional[_LowRankPenalty] = None
    kept: Any = None  # the factor kept over the subproblems' iterates (_kept_factor_class)
    al_hessian: Optional[Callable] = None
    if opts["inner_method"] == "tron" and "preconditioner" not in (opts["inner_options"] or {}):
        dense = dense_rows(split, x)
        chosen["preconditioner"] = None
        if dense is not None and dense.size == 0:
            al_hessian = _sparse_hessian_of(lagrangian, x, (lam, mu, np.ones(1), *args))
            chosen["preconditioner"] = "ichol" if al_hessian is None else None
        if dense is not None and dense.size:
            low_rank = _LowRankPenalty(flat_fun, split, dense)
            if not low_rank.fits(x, lam, mu, tuple(args)):
                low_rank = None
        if al_hessian is not None or low_rank is not None:
            kept = _kept_factor_class()()
    eps = max(opts["gtol"], _FIRST_INNER_GTOL)
    radius: Optional[float] = None  # the trust radius the last subproblem ended with
    warm_radius = opts["inner_method"] == "tron" and \
        "initial_trust_radius" not in (opts["inner_options"] or {})
    previous = math.inf
    counts = {"nfev": 1, "njev": 0, "nhev": 0}
    inner_iterations: list[int] = []
    status, message = 0, "the maximum number of outer iterations was reached"
    optimality = math.inf
    least = (math.inf, x.copy())  # (violation, point) of the least violation seen
    for outer in range(1, int(opts["maxiter"]) + 1):
        penalty = np.array([rho])
        if kept is not None:
            kept.update(low_rank.parts(lam, mu, rho, tuple(args)) if low_rank is not None
                        else _plain_parts(al_hessian, lam, mu, penalty, tuple(args)), rho)
            chosen["preconditioner"] = kept
        inner_options = {**chosen, **(opts["inner_options"] or {}),
                         "maxiter": int(opts["inner_maxiter"]), "gtol": eps}
        if opts["max_time"] is not None:
            left = opts["max_time"] - (time.perf_counter() - started)
            if left <= 0:
                status, message = 4, "max_time was reached"
                break
            inner_options["max_time"] = left
        # a plain function: minimize traces it, or (untraceable) falls back, warning once:
        # the later subproblems fall back for the same reason
        if warm_radius and radius is not None:
            inner_options["initial_trust_radius"] = radius
        records: list[IterationRecord] = []
        with warnings.catch_warnings(), watch(records.append):
            if outer > 1:
                warnings.simplefilter("ignore", TraceFallbackWarning)
            sub = minimize(lagrangian, x, args=(lam, mu, penalty, *args),
                           method=opts["inner_method"], bounds=box, options=inner_options)
        radius = _last_radius(records)
        x = np.asarray(sub.x, dtype=float).ravel()
        for key in counts:
            counts[key] += int(sub.get(key, 0))
        inner_iterations.append(int(sub.get("nit", 0)))
        _, h, g = constraint_parts(x)
        # step 2: first-order multiplier estimates, then their safeguarded copies
        lam_new = lam + rho * h
        mu_new = np.maximum(0.0, mu + rho * g)
        optimality = _projected_gradient_norm(sub, x, box)
        infeasible = _infeasibility(h, g, mu, rho)
        violation = _violation(h, g, x, box)
        if violation < least[0]:
            least = (violation, x.copy())
        if opts["disp"]:
            print(f"auglag {outer:3d}: f = {float(flat_fun(x, *args)):.8e}, violation = "
                  f"{violation:.2e}, optimality = {optimality:.2e}, penalty = {rho:.1e}, "
                  f"inner iterations {inner_iterations[-1]}")
        lam = np.clip(lam_new, -_LAMBDA_MAX, _LAMBDA_MAX)
        mu = np.minimum(mu_new, _MU_MAX)
        if callback is not None and _call_back(callback, x.reshape(shape),
                                                float(flat_fun(x, *args)), violation, rho):
            status, message = 3, "the callback asked to stop"
            break
        # feasibility and complementarity (V of step 3) within ctol, the KKT residual within
        # gtol: the subproblem may meet gtol before eps has come down to it
        if infeasible <= opts["ctol"] and optimality <= opts["gtol"]:
            status, message = 1, ("the KKT residual is below gtol, and the constraint "
                                  "violation and complementarity below ctol")
            break
        # step 3: keep the penalty while infeasibility falls fast enough
        if infeasible > _TAU * previous:
            if rho >= opts["max_penalty"]:
                status, message = 5, ("the penalty reached max_penalty without feasibility: "
                                      "the constraints may be infeasible; x is the point of "
                                      "least violation found")
                x = least[1]
                break
            grown = min(_GAMMA * rho, opts["max_penalty"])
            if radius is not None:
                # the penalty's Hessian rho J^T J grows with rho: so do the energy norms
                radius *= math.sqrt(grown / rho)
            rho = grown
        previous = infeasible
        eps = max(opts["gtol"], 0.1 * eps)
    c, h, g = constraint_parts(x)
    f = float(flat_fun(x, *args))
    multipliers = split.multipliers(lam, mu)
    values = np.split(c, np.cumsum(split.sizes)[:-1]) if split.sizes else []
    grad, jacobians = _first_derivatives(flat_fun, args, split, x)
    lagrangian_grad = grad + sum((J.T @ v for J, v in zip(jacobians, multipliers)),
                                 np.zeros(n))
    if box is not None:
        # as trust-constr: the bounds are one more constraint, x itself, whose multipliers
        # close the Lagrangian's gradient on the active bounds
        at_bound = (x <= box.lb) | (x >= box.ub)
        bound_v = np.where(at_bound, -lagrangian_grad, 0.0)
        multipliers.append(bound_v)
        values.append(x.copy())
        jacobians.append(identity(n, format="csr") if n * n >= _SPARSE_JACOBIAN_FROM
                         else np.eye(n))
        lagrangian_grad = lagrangian_grad + bound_v
    return OptimizeResult(
        x=x.reshape(shape), fun=f, grad=grad.reshape(shape), constr=values, jac=jacobians,
        lagrangian_grad=lagrangian_grad.reshape(shape),
        constr_violation=_violation(h, g, x, box), v=multipliers, optimality=optimality,
        nit=sum(inner_iterations), nfev=counts["nfev"], njev=counts["njev"],
        nhev=counts["nhev"], status=status, success=status == 1, message=message,
        outer_iterations=len(inner_iterations), inner_iterations=inner_iterations,
        penalty=rho, execution_time=time.perf_counter() - started, method="auglag")


#: constraint Jacobians with at least this many entries are returned sparse (CSR) when
#: their pattern is sparse
_SPARSE_JACOBIAN_FROM = 10_000


def _first_derivatives(fun: Callable, args: tuple, split: _Split, x: np.ndarray
                       ) -> tuple[np.ndarray, list[Any]]:
    """The objective's gradient and each constraint's Jacobian at the solution, as
    trust-constr reports them; a large Jacobian whose pattern is sparse comes as a
    ``scipy.sparse.csr_array`` (from one coloured frame)."""
    from newtonad.api import grad as ad_grad
    from newtonad.api import jacobian

    try:
        gradient = np.asarray(ad_grad(fun)(x, *args), dtype=float).ravel()
    except Exception:  # an untraceable objective (solved by the fallback): no AD gradient
        gradient = np.full(x.size, np.nan)
    jacobians: list[Any] = []
    for rows in split.rows:
        if rows.matrix is not None:
            jacobians.append(rows.matrix)
            continue
        m = rows.lb.size
        try:
            if m * x.size >= _SPARSE_JACOBIAN_FROM:
                jacobians.append(jacobian(rows.fun, sparse=True)(x))
            else:
                jacobians.append(np.asarray(jacobian(rows.fun)(x), dtype=float).reshape(m, -1))
        except Exception:  # untraceable constraint
            jacobians.append(np.full((m, x.size), np.nan))
    return gradient, jacobians


def _sparse_hessian_of(lagrangian: Callable, x: np.ndarray, args: tuple) -> Optional[Callable]:
    """The augmented Lagrangian's sparse Hessian ``(x, *args) -> csr``, or None when it cannot
    be traced or is too dense to factorise (then tron is given ``"ichol"`` and decides)."""
    from newtonad.api import hessian, hessian_sparsity

    from .preconditioners import MAX_NNZ_PER_ROW

    try:
        pattern = hessian_sparsity(lagrangian)(x, *args)
    except Exception:  # untraceable: the subproblem falls back
        return None
    if pattern.nnz > max(MAX_NNZ_PER_ROW * x.size, 1024):
        return None
    return hessian(lagrangian, sparse=True)


def _plain_parts(al_hessian: Any, lam: np.ndarray, mu: np.ndarray, penalty: np.ndarray,
                 args: tuple) -> Callable[[np.ndarray], tuple[Any, np.ndarray]]:
    """``x -> (S, U)`` with ``S`` the augmented Lagrangian's sparse Hessian, ``U`` empty."""
    def parts(x: np.ndarray) -> tuple[Any, np.ndarray]:
        return al_hessian(x, lam, mu, penalty, *args), np.zeros((x.size, 0))
    return parts


def _last_radius(records: list[Any]) -> Optional[float]:
    """The trust radius a subproblem ended with, from its iteration records; None
    when it reported none (another inner method, or the fallback)."""
    if not records or records[-1].step_label != "radius":
        return None
    radius = float(records[-1].step)
    return radius if math.isfinite(radius) and radius > 0.0 else None


def _projected_gradient_norm(sub: OptimizeResult, x: np.ndarray, box: Optional[Bounds]) -> float:
    """inf-norm of the subproblem's gradient projected onto the box's tangent cone at x."""
    grad = sub.get("jac")
    if grad is None:
        return math.inf
    grad = np.asarray(grad, dtype=float).ravel()
    if box is None:
        return float(np.max(np.abs(grad), initial=0.0))
    step = np.clip(x - grad, box.lb, box.ub) - x
    return float(np.max(np.abs(step), initial=0.0))


def _call_back(callback: Callable, x: np.ndarray, f: float, violation: float,
               rho: float) -> bool:
    """Call the user's callback as scipy does; True when it raised StopIteration."""
    import inspect

    try:
        params = set(inspect.signature(callback).parameters)
    except (TypeError, ValueError):
        params = set()
    try:
        if params == {"intermediate_result"}:
            callback(intermediate_result=OptimizeResult(x=x.copy(), fun=f,
                                                        constr_violation=violation,
                                                        penalty=rho))
        else:
            callback(x.copy())
    except StopIteration:
        return True
    return False


def run_constrained(fun: Callable, x0: np.ndarray, args: tuple, constraints: Any,
                    bounds: Any, callback: Optional[Callable], opts: dict) -> OptimizeResult:
    """The method table's entry point: ``minimize``'s arguments, options already parsed."""
    for name in ("ctol", "initial_penalty", "max_penalty"):
        value = opts.get(name)
        if value is not None and not (isinstance(value, (int, float)) and value >= 0):
            raise ValueError(f"option {name!r} must be a number >= 0, got {value!r}")
    if opts.get("inner_maxiter") is not None and int(opts["inner_maxiter"]) < 1:
        raise ValueError(f"option 'inner_maxiter' must be >= 1, got {opts['inner_maxiter']!r}")
    if opts.get("maxiter") is None:
        opts = {key: value for key, value in opts.items() if key != "maxiter"}
    return minimize_auglag(fun, x0, args=args, constraints=constraints, bounds=bounds,
                           callback=callback, **opts)
