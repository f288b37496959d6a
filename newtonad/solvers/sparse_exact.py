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

The factorisation is chosen once per Hessian pattern (:func:`choose_ordering`):

* a narrow band (tridiagonal, pentadiagonal, ...): LAPACK's banded Cholesky
  (``dpbtrf``) in the natural order -- the dense path's factor, so its iterates to
  rounding, in O(n b²) and about fifteen times faster than SuperLU on a tridiagonal
  matrix (SuperLU's supernodal set-up costs ~0.7 µs per column there);
* otherwise SuperLU as above, in the natural order when its envelope holds no more
  than the minimum-degree factor of ``A + Aᵀ``, else in the minimum-degree order
  (on the 256 x 256 minimal-surface grid: 6.2 M entries in L + U, against 7.9 M for
  ``MMD_ATA`` and 9.1 M for ``COLAMD``, factorised in 2.0 s against 2.8 s and 2.9 s in
  one run on a loaded machine).

Work that does not depend on λ (the band storage; ``H`` in CSC with its diagonal
stored) is done once per Hessian, so each λ costs one factorisation.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np
from scipy import sparse

from . import monitor
from .exact import (
    MAX_DENSE_N,
    DenseTRS,
    ExactSubproblem,
    HessianBounds,
    check_size,
    eigen_trs,
    safeguarded,
)
from .linalg import dot, norm
from .monitor import DeadlinePassed, past
from .sparse_factors import Factor, bandwidth, choose_ordering, factoriser
from .trust_region import boundary_intersections, run_trust_region

_EPS = float(np.finfo(float).eps)

__all__ = ["SparseExactSubproblem", "solve_sparse_trs", "sparse_bounds", "choose_ordering",
           "bandwidth", "use_sparse_hessian", "MAX_DENSITY", "SPARSE_FROM", "run_native"]

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
    asked = problem.capabilities.sparse_requested
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
    h = sparse.csr_array(h)
    if not h.has_canonical_format:  # duplicates summed, so that |h| is read off its data
        h = h.copy()
        h.sum_duplicates()
    d = h.diagonal()
    magnitudes = np.abs(h.data)
    rows = sparse.csr_array((magnitudes, h.indices, h.indptr), shape=h.shape) @ np.ones(
        h.shape[1])
    radii = rows - np.abs(d)
    fro = norm(h.data) if h.nnz else 0.0
    return HessianBounds(float((d - radii).min()), float((d + radii).max()), fro,
                         float(rows.max()), float(d.min()))




def solve_sparse_trs(h: Any, g: np.ndarray, radius: float, *, k_easy: float = 1e-8,
                     k_hard: float = 1e-8, maxiter: int = 25,
                     bounds: Optional[HessianBounds] = None, lam_lo: float = 0.0,
                     ordering: Optional[str] = None,
                     factor_cache: Optional[dict] = None,
                     deadline: float = math.inf) -> DenseTRS:
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
        ``"BANDED"``, ``"AMD"`` (QDLDL) or a ``permc_spec`` of ``splu``; default
        :func:`choose_ordering` of ``h``.
    factor_cache : dict, optional
        Kept by the caller across subproblems of one run: the symbolic factorisation
        (``"AMD"``) is reused while the Hessian's pattern stays the same.
    deadline : float
        :func:`.monitor.clock` value after which no factorisation (nor the
        eigendecomposition fallback) starts.

    Returns
    -------
    DenseTRS
        ``p``, ``λ``, the boundary flag, factorisations used and the final ``λ_L``.

    Raises
    ------
    DeadlinePassed
        When ``deadline`` has passed before a factorisation.
    """
    n = g.size
    if bounds is None:
        bounds = sparse_bounds(h)
    if ordering is None:
        ordering = choose_ordering(h)
    factorise_now = factoriser(h, ordering, factor_cache)

    def factorise(lam: float) -> Factor:
        if past(deadline):  # a factorisation is the expensive step: not past the limit
            raise DeadlinePassed
        return factorise_now(lam)
    gnorm = norm(g)
    lo, hi = bounds.interval(gnorm, radius)
    lo = max(lo, lam_lo)
    lam = 0.0 if lo == 0.0 else safeguarded(lo, hi)
    tiny = n * _EPS * bounds.inf
    fac: Optional[Factor] = None
    last: Optional[DenseTRS] = None
    for it in range(1, maxiter + 1):
        if fac is None:
            fac = factorise(lam)
        if not fac.definite:
            lo = max(lo, lam + fac.indefinite_bound())
            lam, fac = safeguarded(lo, hi), None
            continue
        if gnorm <= tiny:  # g ≈ 0: only negative curvature gives a step
            if lam == 0.0:
                return DenseTRS(np.zeros(n), 0.0, False, it, lo)
            sigma2, z = fac.near_null()
            if sigma2 <= k_hard * lam:
                return DenseTRS(radius * z, lam, True, it, lo)
            hi, lo = lam, max(lo, lam - sigma2)
            lam, fac = safeguarded(lo, hi), None
            continue
        p = fac.solve(-g)
        pn = norm(p)
        if pn <= radius and lam == 0.0:
            return DenseTRS(p, 0.0, False, it, lo)
        wn2 = fac.inverse_norm2(p)
        newton = lam + pn * pn / wn2 * (pn - radius) / radius
        if pn >= radius:
            last = DenseTRS(p * (radius / pn), lam, True, it, lo)
            if pn - radius <= k_easy * radius:
                return DenseTRS(p, lam, True, it, lo)
            lo, lam, fac = lam, newton, None
            continue
        sigma2, z = fac.near_null()
        ta, tb = boundary_intersections(pn * pn, dot(p, z), 1.0, radius)
        tau = ta if abs(ta) < abs(tb) else tb
        up2 = fac.curvature(p)
        if tau * tau * sigma2 <= k_hard * (up2 + lam * radius * radius):
            return DenseTRS(p + tau * z, lam, True, it, lo)
        hi, lo = lam, max(lo, lam - sigma2)
        fac = factorise(newton)
        if fac.definite:
            lam = newton
        else:
            lo = max(lo, newton)
            lam, fac = safeguarded(lo, hi), None
    if n <= _DENSE_FALLBACK_N or last is None:
        if past(deadline):
            raise DeadlinePassed
        return eigen_trs(h.toarray(), g, radius)._replace(iterations=maxiter)
    return last._replace(iterations=maxiter)



class SparseExactSubproblem(ExactSubproblem):
    """:class:`.ExactSubproblem` on the sparse Hessian (:func:`solve_sparse_trs`).

    The Hessian comes from ``problem.sparse_hess``; its ordering is chosen once per run
    (the pattern is fixed) and shared through the problem.
    """

    # SuperLU raises RuntimeError on an exactly singular matrix
    _solve_errors = (ValueError, RuntimeError, np.linalg.LinAlgError)

    @property
    def hess(self) -> Any:
        """Sparse Hessian at ``x`` (``csr_array``)."""
        if self._h is None:
            self._h = self.problem.sparse_hess(self.x)
        return self._h

    def _bounds_of(self, h: Any) -> HessianBounds:
        return sparse_bounds(h)

    def _solve_trs(self, h: Any, g: np.ndarray, radius: float, lam_lo: float) -> DenseTRS:
        """The subproblem by :func:`solve_sparse_trs`, in the ordering chosen for the run."""
        ordering = self.problem.sparse_ordering
        cache = self.problem.sparse_factor_cache
        if ordering is None or cache is None:
            ordering, cache = choose_ordering(h), {}
            # both kept for the run: the pattern does not change
            self.problem.sparse_ordering = ordering
            self.problem.sparse_factor_cache = cache
        return solve_sparse_trs(h, g, radius, k_easy=self.k_easy, k_hard=self.k_hard,
                                maxiter=self.maxiter, bounds=self._bounds, lam_lo=lam_lo,
                                ordering=ordering, factor_cache=cache,
                                deadline=self.deadline)


def run_native(problem: Any, x0: np.ndarray, opts: dict,
               callback: Optional[Callable[[np.ndarray, float], None]],
               bounds: Optional[object] = None) -> Any:
    """trust-exact as ``minimize`` runs it: the sparse path when
    :func:`use_sparse_hessian` says so, else the dense one after its size check."""
    subproblem: type[ExactSubproblem]
    if use_sparse_hessian(problem, x0, bool(opts.get("disp"))):
        subproblem = SparseExactSubproblem
    else:
        subproblem = ExactSubproblem
        check_size(problem.n)
    sub_opts: dict[str, Any] = {}
    if opts.get("subproblem_maxiter") is not None:
        sub_opts["maxiter"] = int(opts["subproblem_maxiter"])
    opts.pop("subproblem_maxiter", None)
    # the clock starts after the size check, as the start is evaluated after it
    return run_trust_region(problem, x0, subproblem, opts, callback, sub_opts,
                            started=monitor.clock())
