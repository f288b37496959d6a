"""trust-exact on a sparse Hessian: Moré–Sorensen with a sparse LDLᵀ factorisation.

The iteration is that of :func:`.exact.solve_dense_trs` (CGT algorithm 7.3.6, the
same λ-interval, safeguards and tolerances) with each dense Cholesky factorisation
of ``H + λI`` replaced by SuperLU (``scipy.sparse.linalg.splu``) run as a symmetric
LDLᵀ factorisation: the same fill-reducing ordering for rows and columns
(``SymmetricMode``) and no pivoting off the diagonal (``diag_pivot_thresh=0``), so
``U = D Lᵀ`` and ``diag(U)`` are the pivots; ``H + λI`` is positive definite iff all
are positive. What the dense path reads off its Cholesky factor comes from the
sparse factors:

* Newton's step on ``φ(λ)`` needs ``‖R⁻ᵀp‖² = pᵀ(H + λI)⁻¹p``: one more solve;
* a failed factorisation, whose first non-positive pivot is ``d_k``, bounds the
  smallest eigenvalue by the Rayleigh quotient ``d_k / (1 + ‖U₁₁⁻¹u_k‖²)`` of
  ``v = (-B₁₁⁻¹b, 1, 0, …)`` in the factorised order -- the dense path's bound;
* the near-null vector of the hard case is the LINPACK estimate (Cline, Moler,
  Stewart & Wilkinson 1979) on the sparse Cholesky factor ``R = D^(-1/2) U``, in
  O(nnz(R)): the dense path's estimate, so the steps agree. (An exact smallest
  eigenvector from ``eigsh`` in shift-invert mode was tried first: its hard-case
  steps are as valid but differ from the dense path's, and so did the iterates.)

The ordering is chosen once per Hessian pattern: the natural order when it makes no
more fill than the minimum-degree ordering of ``A + Aᵀ`` (banded Hessians, where the
iterates then follow the dense path's to rounding), else the minimum-degree one.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
from scipy import sparse
from scipy.sparse import linalg as splinalg

from .exact import _THETA, MAX_DENSE_N, DenseTRS, ExactSubproblem, HessianBounds, eigen_trs
from .trust_region import boundary_intersections

_EPS = float(np.finfo(float).eps)

__all__ = ["SparseExactSubproblem", "solve_sparse_trs", "sparse_bounds", "choose_ordering",
           "use_sparse_hessian", "MAX_DENSITY", "SPARSE_FROM"]

#: patterns denser than this (non-zeros / n²) take the dense path
MAX_DENSITY = 0.2
#: from this many variables (where the dense path refuses) trust-exact tries the sparse
#: path on its own; ``Objective(f, sparse=True)`` asks for it at any n. Not lower: finding
#: the pattern of a dense Hessian is slow (over a minute at n = 1000), and below this the
#: dense path works.
SPARSE_FROM = MAX_DENSE_N + 1
#: largest n the eigendecomposition fallback densifies
_DENSE_FALLBACK_N = 2000


def use_sparse_hessian(problem: Any, x0: np.ndarray, disp: bool = False) -> bool:
    """Whether trust-exact takes the sparse path on ``problem``.

    It does when the objective gives sparse Hessians (a newtonad ``Objective``), asks
    for them (``sparse=True``) or has at least :data:`SPARSE_FROM` variables, and its
    pattern has at most :data:`MAX_DENSITY` non-zeros; a denser pattern takes the dense
    path, with a note when ``disp`` is set.
    """
    n = problem.n
    asked = bool(getattr(problem.objective, "sparse", False))
    if not (asked or n >= SPARSE_FROM):
        return False
    # Not asked for: give up on the pattern as soon as it is too dense to pay (a dense
    # n x n pattern costs O(n^3) to propagate), and take the dense path at once.
    budget = None if asked else int(MAX_DENSITY * n * n)
    pattern = problem.hess_sparsity(x0, max_nnz=budget) if budget else problem.hess_sparsity(x0)
    if pattern is None:
        if disp and budget:
            print(f"trust-exact: the Hessian pattern has more than {100 * MAX_DENSITY:.0f}% "
                  "non-zeros: using the dense path")
        return False
    density = pattern.nnz / float(n * n)
    if density > MAX_DENSITY:
        if disp:
            print(f"trust-exact: the Hessian pattern has {100 * density:.0f}% non-zeros "
                  f"(more than {100 * MAX_DENSITY:.0f}%): using the dense path")
        return False
    return True


def sparse_bounds(h: Any) -> HessianBounds:
    """The :class:`.HessianBounds` of a sparse symmetric ``h`` (CGT 7.3.8)."""
    d = h.diagonal()
    rows = np.asarray(abs(h).sum(axis=1)).ravel()
    radii = rows - np.abs(d)
    fro = float(splinalg.norm(h)) if h.nnz else 0.0
    return HessianBounds(float((d - radii).min()), float((d + radii).max()), fro,
                         float(rows.max()), float(d.min()))


def _splu(a: Any, ordering: str) -> Any:
    return splinalg.splu(a, permc_spec=ordering, diag_pivot_thresh=0.0,
                         options={"SymmetricMode": True})


def choose_ordering(h: Any) -> str:
    """``"NATURAL"`` when it makes no more fill than ``"MMD_AT_PLUS_A"``, else the latter.

    Measured on ``H + sI`` with ``s`` making it diagonally dominant (the pattern is all
    that matters for fill without pivoting).
    """
    shift = float(np.asarray(abs(h).sum(axis=1)).max(initial=0.0)) + 1.0
    a = (h + shift * sparse.eye_array(h.shape[0], format="csr")).tocsc()
    fill = {}
    for ordering in ("NATURAL", "MMD_AT_PLUS_A"):
        lu = _splu(a, ordering)
        fill[ordering] = lu.L.nnz + lu.U.nnz
    return "NATURAL" if fill["NATURAL"] <= fill["MMD_AT_PLUS_A"] else "MMD_AT_PLUS_A"


class _Factor:
    """``H + λI`` factorised as LDLᵀ in a fill-reducing order, or why it is not PD."""

    def __init__(self, h: Any, lam: float, ordering: str) -> None:
        n = h.shape[0]
        self.a = (h + lam * sparse.eye_array(n, format="csr")).tocsc()
        try:
            self.lu = _splu(self.a, ordering)
        except RuntimeError:  # an exactly zero pivot: singular, so not positive definite
            self.lu = None
            self.first_bad = -1
            return
        pivots = self.lu.U.diagonal()
        bad = np.flatnonzero(~(pivots > 0.0))
        self.first_bad = int(bad[0]) if bad.size else n

    @property
    def definite(self) -> bool:
        return self.lu is not None and self.first_bad == self.a.shape[0]

    def indefinite_bound(self) -> float:
        """How far λ must grow at least (the Rayleigh bound of the module docstring)."""
        if self.lu is None:
            return 0.0
        k, u = self.first_bad, self.lu.U.tocsc()
        d = float(u[k, k])
        if k == 0:
            return -d
        col = u[:k, [k]].toarray().ravel()
        y = splinalg.spsolve_triangular(u[:k, :k].tocsr(), col, lower=False)
        return -d / (1.0 + float(y @ y))

    def solve(self, b: np.ndarray) -> np.ndarray:
        assert self.lu is not None
        return self.lu.solve(b)

    def near_null(self) -> tuple[float, np.ndarray]:
        """``(σ², z)``: the LINPACK estimate of the smallest singular value ``σ`` of the
        Cholesky factor ``R = D^(-1/2) U`` and its unit near-null vector ``z``
        (``‖R z‖ = σ``), as the dense path computes it, in the original order."""
        assert self.lu is not None
        u = self.lu.U.tocsr()
        u.sort_indices()
        r = sparse.diags_array(1.0 / np.sqrt(u.diagonal())) @ u
        r = sparse.csr_array(r)
        r.sort_indices()
        y = _linpack_rhs(r.indptr, r.indices, r.data, r.shape[0])
        w = splinalg.spsolve_triangular(r, y, lower=False)
        wn = float(np.linalg.norm(w))
        sigma = float(np.linalg.norm(y)) / wn
        return sigma * sigma, (w / wn)[self.lu.perm_c]


def _linpack_rhs_py(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                    n: int) -> np.ndarray:
    """``y`` with ``Rᵀ y = e``, each ``e_k = ±1`` chosen to make ``y`` grow, with look-ahead
    on the partial sums (Cline, Moler, Stewart & Wilkinson 1979) -- for an upper
    triangular CSR ``R`` with sorted indices, in O(nnz): only row k's non-zeros change
    the partial sums, so only they enter the comparison."""
    partial = np.zeros(n)
    y = np.empty(n)
    for k in range(n):
        start, stop = indptr[k], indptr[k + 1]
        rkk = data[start]  # sorted upper triangular: the diagonal comes first
        yp = (1.0 - partial[k]) / rkk
        ym = (-1.0 - partial[k]) / rkk
        sp = abs(yp)
        sm = abs(ym)
        for q in range(start + 1, stop):
            j = indices[q]
            sp += abs(partial[j] + data[q] * yp)
            sm += abs(partial[j] + data[q] * ym)
        yk = yp if sp >= sm else ym
        y[k] = yk
        for q in range(start + 1, stop):
            partial[indices[q]] += data[q] * yk
    return y


def _compiled_linpack() -> Any:
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency
        return _linpack_rhs_py
    return numba.njit(cache=True, nogil=True)(_linpack_rhs_py)


_linpack_rhs = _compiled_linpack()


def solve_sparse_trs(h: Any, g: np.ndarray, radius: float, *, k_easy: float = 1e-8,
                     k_hard: float = 1e-8, maxiter: int = 25,
                     bounds: Optional[HessianBounds] = None, lam_lo: float = 0.0,
                     ordering: Optional[str] = None) -> DenseTRS:
    """Minimise ``g @ p + p @ H p / 2`` over ``‖p‖ <= radius`` for a sparse symmetric ``H``.

    Parameters
    ----------
    h : scipy sparse matrix, shape (n, n)
        Symmetric.
    g : ndarray, shape (n,)
        Linear term.
    radius : float
        Trust-region radius.
    k_easy, k_hard : float
        Tolerances of the boundary and hard-case tests (see :mod:`.exact`).
    maxiter : int
        Factorisations before the fallback (an eigendecomposition when ``n`` is small,
        else the last boundary step).
    bounds : HessianBounds, optional
        ``sparse_bounds(h)``, when already known.
    lam_lo : float
        A known lower bound on the multiplier (warm start at a smaller radius).
    ordering : str, optional
        ``permc_spec`` of ``splu``; default :func:`choose_ordering` of ``h``.

    Returns
    -------
    DenseTRS
        ``p``, ``λ``, the boundary flag, factorisations used and the final ``λ_L``.
    """
    n = g.size
    if bounds is None:
        bounds = sparse_bounds(h)
    if ordering is None:
        ordering = choose_ordering(h)
    gnorm = float(np.linalg.norm(g))
    lo, hi = bounds.interval(gnorm, radius)
    lo = max(lo, lam_lo)
    lam = 0.0 if lo == 0.0 else _safeguarded(lo, hi)
    tiny = n * _EPS * bounds.inf
    fac: Optional[_Factor] = None
    last: Optional[DenseTRS] = None
    for it in range(1, maxiter + 1):
        if fac is None:
            fac = _Factor(h, lam, ordering)
        if not fac.definite:
            lo = max(lo, lam + fac.indefinite_bound())
            lam, fac = _safeguarded(lo, hi), None
            continue
        if gnorm <= tiny:  # g ≈ 0: only negative curvature gives a step
            if lam == 0.0:
                return DenseTRS(np.zeros(n), 0.0, False, it, lo)
            sigma2, z = fac.near_null()
            if sigma2 <= k_hard * lam:
                return DenseTRS(radius * z, lam, True, it, lo)
            hi, lo = lam, max(lo, lam - sigma2)
            lam, fac = _safeguarded(lo, hi), None
            continue
        p = fac.solve(-g)
        pn = float(np.linalg.norm(p))
        if pn <= radius and lam == 0.0:
            return DenseTRS(p, 0.0, False, it, lo)
        wn2 = float(p @ fac.solve(p))
        newton = lam + pn * pn / wn2 * (pn - radius) / radius
        if pn >= radius:
            last = DenseTRS(p * (radius / pn), lam, True, it, lo)
            if pn - radius <= k_easy * radius:
                return DenseTRS(p, lam, True, it, lo)
            lo, lam, fac = lam, newton, None
            continue
        sigma2, z = fac.near_null()
        ta, tb = boundary_intersections(pn * pn, float(p @ z), 1.0, radius)
        tau = ta if abs(ta) < abs(tb) else tb
        up2 = float(p @ (fac.a @ p))
        if tau * tau * sigma2 <= k_hard * (up2 + lam * radius * radius):
            return DenseTRS(p + tau * z, lam, True, it, lo)
        hi, lo = lam, max(lo, lam - sigma2)
        fac = _Factor(h, newton, ordering)
        if fac.definite:
            lam = newton
        else:
            lo = max(lo, newton)
            lam, fac = _safeguarded(lo, hi), None
    if n <= _DENSE_FALLBACK_N or last is None:
        return eigen_trs(h.toarray(), g, radius)._replace(iterations=maxiter)
    return last._replace(iterations=maxiter)


def _safeguarded(lo: float, hi: float) -> float:
    """CGT eq. 7.3.14, as in :mod:`.exact`."""
    return max(math.sqrt(abs(lo * hi)), lo + _THETA * (hi - lo))


class SparseExactSubproblem(ExactSubproblem):
    """:class:`.ExactSubproblem` on the sparse Hessian (:func:`solve_sparse_trs`).

    The Hessian comes from ``problem.sparse_hess``; its ordering is chosen once per run
    (the pattern is fixed) and shared through the problem.
    """

    @property
    def hess(self) -> Any:
        """Sparse Hessian at ``x`` (``csr_array``)."""
        if self._h is None:
            self._h = self.problem.sparse_hess(self.x)
        return self._h

    def solve(self, trust_radius: float) -> tuple[np.ndarray, bool]:
        """Moré–Sorensen step on the sparse Hessian for radius ``trust_radius``.

        Returns
        -------
        p : ndarray
            The proposed step.
        hits_boundary : bool
            True if the step is on the boundary (to within ``κ_easy``).
        """
        if self.nonfinite_hessian:
            return self.steepest_descent_step(trust_radius)
        h, g = self.hess, self.jac
        if self._bounds is None:
            self._bounds = sparse_bounds(h)
            if not all(math.isfinite(b) for b in self._bounds):
                self.hessian_failed()
                return self.steepest_descent_step(trust_radius)
        ordering = getattr(self.problem, "sparse_ordering", None)
        if ordering is None:
            ordering = choose_ordering(h)
            try:
                self.problem.sparse_ordering = ordering
            except AttributeError:
                pass
        lam_lo = self._lam_lo if trust_radius < self._last_radius else 0.0
        try:
            sol: Optional[DenseTRS] = solve_sparse_trs(
                h, g, trust_radius, k_easy=self.k_easy, k_hard=self.k_hard,
                maxiter=self.maxiter, bounds=self._bounds, lam_lo=lam_lo, ordering=ordering)
        except (ValueError, RuntimeError, np.linalg.LinAlgError,
                splinalg.ArpackNoConvergence):
            sol = None
        if sol is None or not np.isfinite(sol.p).all():
            self.hessian_failed()
            return self.steepest_descent_step(trust_radius)
        self._last_radius, self._lam_lo = trust_radius, sol.lam_lo
        self.inner_iterations += sol.iterations
        p = sol.p
        self._record(p, -(float(g @ p) + 0.5 * float(p @ (h @ p))))
        return p, sol.hits_boundary
