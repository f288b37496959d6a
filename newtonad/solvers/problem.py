"""The solvers' view of an objective: flat float64 vectors and a few callbacks.

Every native solver works on 1-D vectors. :class:`FlatProblem` presents an objective
of the declared interface (:class:`~newtonad.objective_protocol.ObjectiveProtocol`:
``fun``, ``jac``, ``value_and_grad``, ``hessp``, ``linearize_hessp``, ``hess``,
``counters`` and the :class:`~newtonad.objective_protocol.Capabilities` saying which
of them the objective computes itself) in that view, reshaping between the user's
shape and the flat one with views (no copies). A hand-written object with only
``fun``, ``jac`` and ``hessp`` (or ``hess``) is adapted once, by
:func:`~newtonad.objective_protocol.as_objective`.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
from scipy import sparse

from ..objective_protocol import Capabilities, HessOperator, as_objective, dense_hessian

__all__ = ["FlatProblem", "check_x0", "HessOperator"]


def check_x0(x0: Any) -> np.ndarray:
    """Return ``x0`` as a new float64 array, or raise a ``ValueError`` saying what is wrong.

    Parameters
    ----------
    x0 : array_like
        Starting point, of any shape.

    Raises
    ------
    ValueError
        If ``x0`` is not a real numeric array, is empty, or has non-finite entries.
    """
    try:
        arr = np.array(x0)
    except ValueError as exc:  # ragged nested sequences
        raise ValueError(f"x0 must be a rectangular array of real numbers: {exc}") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise ValueError(f"x0 must be an array of real numbers, got dtype {arr.dtype}; "
                         "pass e.g. np.asarray(x0, dtype=float)")
    if arr.size == 0:
        raise ValueError(f"x0 is empty (shape {arr.shape}); give at least one variable")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.argwhere(bad)[:5].tolist()
        raise ValueError(f"x0 has {int(bad.sum())} non-finite entries (nan or inf), first at "
                         f"indices {where}; start from a finite point")
    return arr


#: side of the tiles :func:`_symmetrise` works on (two tiles of 256 x 256 float64 fit in L2)
_TILE = 256


def _symmetrise(h: np.ndarray) -> np.ndarray:
    """``(h + h.T) / 2`` written into ``h``, one pair of tiles at a time.

    The same bits as ``0.5 * (h + h.T)``, without an n x n temporary or a pass reading
    the transpose across all of memory: at n = 4000 about 0.05 s against 0.2-0.5 s,
    more than the compiled Hessian itself.
    """
    n = h.shape[0]
    for i in range(0, n, _TILE):
        rows = slice(i, min(n, i + _TILE))
        block = h[rows, rows]
        block += block.T.copy()
        block *= 0.5
        for j in range(i + _TILE, n, _TILE):
            cols = slice(j, min(n, j + _TILE))
            upper = h[rows, cols]
            upper += h[cols, rows].T
            upper *= 0.5
            h[cols, rows] = upper.T
    return h


class FlatProblem:
    """An objective seen on flat float64 vectors of length ``n``.

    Parameters
    ----------
    objective : ObjectiveProtocol or object
        An objective on arrays ``x`` of shape ``shape``: one of the declared interface,
        or anything with ``fun(x)``, ``jac(x)`` and ``hessp(x, p)`` or ``hess(x)``
        (adapted by :func:`~newtonad.objective_protocol.as_objective`).
    shape : tuple of int
        The shape of the objective's argument (the shape of ``x0``).
    dense_hessian_count : bool
        Report ``nhev`` as the number of dense Hessians formed (trust-exact, as
        scipy counts), instead of Hessian-vector products.

    Notes
    -----
    Arrays handed to the objective are never modified afterwards by the solvers,
    so an objective may cache on them. Counters are the objective's own when it
    keeps them (they count real evaluations), otherwise the calls made here.

    Attributes
    ----------
    objective : ObjectiveProtocol
        The objective, in the declared interface.
    capabilities : Capabilities
        What it computes itself.
    sparse_ordering : str or None
        The sparse trust-exact path's factorisation, chosen once per run.
    sparse_factor_cache : dict or None
        That path's symbolic analysis, kept for the run.
    """

    def __init__(self, objective: Any, shape: tuple[int, ...], *,
                 dense_hessian_count: bool = False,
                 counted_before: Optional[dict[str, int]] = None) -> None:
        self.objective = as_objective(objective)
        self.capabilities: Capabilities = self.objective.capabilities
        self.shape = tuple(shape)
        self.n = int(np.prod(self.shape, dtype=np.int64))
        self._flat = self.shape == (self.n,)
        self.dense_hessian_count = dense_hessian_count
        # nhev: Hessian-vector products (columns), nhess: dense Hessians formed here
        self._calls = {"nfev": 0, "njev": 0, "nhev": 0, "nhess": 0}
        #: how often the objective gave nan or inf: values and gradients at trial
        #: points, and points where the Hessian (or a product with it) was not finite
        self.nonfinite = {"fun": 0, "jac": 0, "hess": 0}
        caps = self.capabilities
        #: whether linearize_hessp takes reuse_output= (newtonad's Objective does)
        self._reuses_output = caps.reuse_output
        #: whether the objective counts its products (``nhev``): then :meth:`counts`
        #: reports its count, and products need no counting wrapper here
        self._counts_products = "nhev" in self.objective.counters()
        #: the objective's own counters when this run began (``counted_before``, else
        #: now): a run reports what it evaluated, as scipy's results do, not what an
        #: Objective used before it did
        if counted_before is None:
            counted_before = self.objective.counters()
        self._counted_before = {name: int(value) for name, value in counted_before.items()}
        #: splu ordering of the sparse trust-exact path, chosen once per run
        self.sparse_ordering: Optional[str] = None
        self.sparse_factor_cache: Optional[dict] = None
        #: answers of :meth:`sparse_hessian_fits` by ``max_nnz``
        self._sparse_fits: dict[int, bool] = {}

    # -- shapes ---------------------------------------------------------------
    def unflatten(self, x: np.ndarray) -> np.ndarray:
        """View a flat vector in the objective's shape."""
        return x if self._flat else x.reshape(self.shape)

    def _frame(self, v: np.ndarray) -> np.ndarray:
        return v if self._flat else v.reshape(self.shape + v.shape[1:])

    # -- evaluations ------------------------------------------------------------
    def fun(self, x: np.ndarray) -> float:
        """Objective value at flat ``x`` as a Python float (may be nan or inf)."""
        self._calls["nfev"] += 1
        f = float(self.objective.fun(self.unflatten(x)))
        if not math.isfinite(f):
            self.nonfinite["fun"] += 1
        return f

    def jac(self, x: np.ndarray) -> np.ndarray:
        """Gradient at flat ``x`` as a flat float64 vector."""
        self._calls["njev"] += 1
        g = np.asarray(self.objective.jac(self.unflatten(x)), dtype=np.float64).reshape(self.n)
        if not np.isfinite(g).all():
            self.nonfinite["jac"] += 1
        return g

    def value_and_grad(self, x: np.ndarray, check: bool = False) -> tuple[float, np.ndarray]:
        """Value and gradient at flat ``x`` (one pass when the objective offers it).

        With ``check=True`` (used at x0) a value that is not a scalar or a gradient
        of the wrong size raises a ``ValueError`` naming the shapes.
        """
        self._calls["nfev"] += 1
        self._calls["njev"] += 1
        xs = self.unflatten(x)
        f, g = self.objective.value_and_grad(xs)
        if check:
            if np.size(f) != 1:
                raise ValueError(f"the objective must return a scalar, but at x0 of shape "
                                 f"{self.shape} it returned an array of shape {np.shape(f)}; "
                                 "is x0 shaped as the objective expects?")
            if np.size(g) != self.n:
                raise ValueError(f"the gradient at x0 has shape {np.shape(g)} but x0 has "
                                 f"shape {self.shape}; is x0 shaped as the objective expects?")
        return float(np.asarray(f).reshape(())), np.asarray(g, dtype=np.float64).reshape(self.n)

    def linearize_hessp(self, x: np.ndarray, scratch: bool = False) -> HessOperator:
        """The Hessian at ``x`` as a map ``V -> H V`` on vectors (n,) or frames (n, k).

        With ``scratch`` (the inner loops) the map may write products of one vector into
        arrays it reuses: a result is valid until the second product after it.
        """
        xs = self.unflatten(x)
        calls = self._calls
        objective, caps = self.objective, self.capabilities
        if caps.linearized_products:
            lin = (objective.linearize_hessp(xs, reuse_output=True)
                   if scratch and self._reuses_output else objective.linearize_hessp(xs))
        elif caps.products:
            hessp = objective.hessp

            def lin(v: np.ndarray) -> np.ndarray:
                return hessp(xs, v)
        else:
            h = self.hess(x)

            def lin(v: np.ndarray) -> np.ndarray:
                return h @ v
            return lin
        if self._flat and self._counts_products:
            return lin  # one Python call less per product: the objective counts them
        if self._flat:
            def apply(v: np.ndarray) -> np.ndarray:
                calls["nhev"] += 1 if v.ndim == 1 else v.shape[1]
                return lin(v)
        else:
            def apply(v: np.ndarray) -> np.ndarray:
                calls["nhev"] += 1 if v.ndim == 1 else v.shape[1]
                return np.asarray(lin(self._frame(v))).reshape(v.shape)
        return apply

    def expect_products(self, x: np.ndarray) -> None:
        """Tell the objective, before its first gradient, that products will follow.

        A newtonad ``Objective`` keeps the Hessian's residuals with every gradient once
        it has linearised (its gradient pass then makes them), so linearising at ``x0``
        first -- which computes nothing until a product is asked for -- saves the one
        residual pass the first products at ``x0`` would otherwise make. Other
        objectives are left alone: their ``linearize_hessp`` may compute at once.
        """
        if self._reuses_output:
            self.objective.linearize_hessp(self.unflatten(x))

    def hess(self, x: np.ndarray) -> np.ndarray:
        """Dense symmetric Hessian at ``x`` as an (n, n) float64 array."""
        n = self.n
        self._calls["nhess"] += 1
        if self.capabilities.hess:
            h = self.objective.hess(self.unflatten(x))
            if sparse.issparse(h):  # Objective(f, sparse=True) on the dense path
                h = h.toarray()
            # a copy: the objective may keep the array it returned
            h = np.array(h, dtype=np.float64).reshape(n, n)
        else:  # assemble from identity frames, a block of columns at a time
            h = dense_hessian(self.linearize_hessp(x), (n,))
        return _symmetrise(h)

    def sparse_hess(self, x: np.ndarray) -> Any:
        """Sparse symmetric Hessian at ``x`` as an (n, n) ``csr_array`` (sparse trust-exact)."""
        self._calls["nhess"] += 1
        return sparse.csr_array(self.objective.sparse_hess(self.unflatten(x)), dtype=np.float64)

    def hess_sparsity(self, x: np.ndarray, max_nnz: int | None = None) -> Any:
        """The objective's Hessian pattern at x's shape, or None if it cannot give one.

        With ``max_nnz``, also None when the pattern has more non-zeros than that (found
        out early, without building the whole of a dense pattern).
        """
        from newtonad.ad.sparsity import PatternTooDense

        if not self.capabilities.sparse_hess:
            return None
        pattern = self.objective.hess_sparsity
        if max_nnz is None:
            return pattern(self.unflatten(x))
        try:
            return pattern(self.unflatten(x), max_nnz=max_nnz)
        except PatternTooDense:
            return None

    def sparse_hessian_fits(self, x: np.ndarray, max_nnz: int) -> bool:
        """Whether the objective gives sparse Hessians with at most ``max_nnz`` non-zeros
        (its pattern found once; the answer is kept for the run)."""
        known = self._sparse_fits.get(max_nnz)
        if known is None:
            known = self._sparse_fits[max_nnz] = self.hess_sparsity(x, max_nnz) is not None
        return known

    def note_nonfinite_hessian(self) -> None:
        """Record that the Hessian at the current point had nan or inf in it."""
        self.nonfinite["hess"] += 1

    # -- counters -----------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """Evaluation counters for the result: ``nfev``, ``njev``, ``nhev`` and ``nhvp``.

        ``nfev`` and ``njev`` are the objective's own counters where it keeps
        them (they count real evaluations; only those made since the run began,
        ``counted_before``, so an objective used before, or solved again, counts
        this run alone),
        else the calls made here. ``nhvp``
        is the objective's ``nhvp`` (or, lacking it, its ``nhev``: an
        ``Objective`` counts products) or the products asked here. ``nhev`` is
        the number of dense Hessians formed when ``dense_hessian_count`` is set,
        else the objective's ``nhev`` or the products asked here.
        """
        kept = self.objective.counters()

        def theirs(name: str) -> Optional[int]:
            value = kept.get(name)
            return None if value is None else int(value) - self._counted_before.get(name, 0)

        out = {}
        for name in ("nfev", "njev"):
            value = theirs(name)
            out[name] = self._calls[name] if value is None else value
        products = theirs("nhvp")
        if products is None:
            products = theirs("nhev")
        out["nhvp"] = self._calls["nhev"] if products is None else products
        if self.dense_hessian_count:
            out["nhev"] = self._calls["nhess"]
        else:
            value = theirs("nhev")
            out["nhev"] = self._calls["nhev"] if value is None else value
        return out
