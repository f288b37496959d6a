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
from scipy.linalg import lapack
from scipy.sparse import linalg as splinalg

try:  # OSQP's QDLDL: a sparse LDLᵀ with AMD ordering and numeric refactorisation
    import qdldl
except ImportError:  # pragma: no cover - a dependency; SuperLU's MMD ordering instead
    qdldl = None

from .exact import _THETA, MAX_DENSE_N, DenseTRS, ExactSubproblem, HessianBounds, eigen_trs
from .linalg import dot, norm
from .trust_region import boundary_intersections

_EPS = float(np.finfo(float).eps)

__all__ = ["SparseExactSubproblem", "solve_sparse_trs", "sparse_bounds", "choose_ordering",
           "bandwidth", "use_sparse_hessian", "MAX_DENSITY", "SPARSE_FROM"]

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


def _splu(a: Any, ordering: str) -> Any:
    return splinalg.splu(a, permc_spec=ordering, diag_pivot_thresh=0.0,
                         options={"SymmetricMode": True})


def bandwidth(h: Any) -> int:
    """The largest ``|i - j|`` over the stored entries of ``h``: from the first and last
    entry of each row of its sorted CSR form, in O(n)."""
    h = sparse.csr_array(h)
    if not h.has_sorted_indices:
        h = h.copy()
        h.sort_indices()
    starts, stops = h.indptr[:-1], h.indptr[1:]
    rows = np.flatnonzero(stops > starts)
    if rows.size == 0:
        return 0
    first, last = h.indices[starts[rows]], h.indices[stops[rows] - 1]
    return int(max((rows - first).max(), (last - rows).max()))


def _envelope(h: Any) -> int:
    """Entries of the lower envelope of a symmetric ``h`` (row ``i`` from its first stored
    column to ``i``), diagonal included: a bound on the Cholesky factor's in the natural
    order, which fills in only inside the envelope."""
    h = sparse.csr_array(h)
    if not h.has_sorted_indices:
        h = h.copy()
        h.sort_indices()
    n = h.shape[0]
    rows = np.arange(n)
    first = rows.copy()
    stored = h.indptr[1:] > h.indptr[:-1]
    first[stored] = np.minimum(h.indices[h.indptr[:-1][stored]], rows[stored])
    return int((rows - first).sum()) + n


#: The natural order is kept while its factor has at most NATURAL_FILL times the entries
#: of the fill-reducing order's, or at most NATURAL_ENTRIES entries (a few MB, factorised
#: in milliseconds): the λ iteration's indefinite bounds and near-null vectors depend on
#: the order, and only the natural order takes the dense path's iterates.
NATURAL_FILL = 4.0
NATURAL_ENTRIES = 2**20


def choose_ordering(h: Any) -> str:
    """How ``H + λI`` is factorised: ``"BANDED"``, ``"NATURAL"``, ``"AMD"`` or ``"MMD_AT_PLUS_A"``.

    ``"BANDED"`` (LAPACK's banded Cholesky, ``dpbtrf``) when the band of the natural
    order holds at most twice the entries of the upper triangle: tridiagonal and other
    narrow banded Hessians, where it costs O(n b²) with no symbolic work and SuperLU's
    supernodal machinery is ten times slower (measured: n = 1e6 tridiagonal, 47 ms
    against 730 ms). Otherwise SuperLU: ``"NATURAL"`` when its factor, which lies in
    the envelope, has at most :data:`NATURAL_ENTRIES` entries or :data:`NATURAL_FILL`
    times the entries of the fill-reducing one's, measured on
    ``H + sI`` with ``s`` making it diagonally dominant (the pattern is all that matters
    for fill without pivoting); else the latter. (The natural order is not factorised to
    find out: on a 256 x 256 grid that alone took ten times the minimum-degree one.)
    The fill-reducing alternative is ``"AMD"``, QDLDL's LDLᵀ in an approximate minimum
    degree order, whose symbolic analysis is made once per Hessian and reused for every
    λ (measured on minimal-surface n = 65536: 0.13 s per factorisation against SuperLU's
    0.28 s with ``"MMD_AT_PLUS_A"``, which is taken only when qdldl is missing).
    """
    n = h.shape[0]
    upper = 0.5 * (h.nnz + n)  # entries of the upper triangle, diagonal included (about)
    if (bandwidth(h) + 1) * n <= 2.0 * upper:
        return "BANDED"
    envelope = _envelope(h)
    if envelope <= NATURAL_ENTRIES:
        return "NATURAL"
    shift = float(np.asarray(abs(h).sum(axis=1)).max(initial=0.0)) + 1.0
    a = (h + shift * sparse.eye_array(n, format="csr")).tocsc()
    if qdldl is not None:
        factor_nnz = qdldl.Solver(a).factors()[0].nnz + n  # strict L, plus the diagonal
        return "NATURAL" if envelope <= NATURAL_FILL * factor_nnz else "AMD"
    lu = _splu(a, "MMD_AT_PLUS_A")
    # L and U of SuperLU each hold the Cholesky factor's pattern (with the diagonal)
    return ("NATURAL" if 2 * envelope <= NATURAL_FILL * (lu.L.nnz + lu.U.nnz)
            else "MMD_AT_PLUS_A")


class _Factor:
    """``H + λI`` factorised, or the first pivot that shows it is not positive definite.

    ``first_bad`` is the order of the leading minor found not positive definite (``n``
    when the factorisation succeeded, ``-1`` when it stopped at an exact zero).
    """

    def __init__(self, h: Any, lam: float) -> None:
        self.h, self.lam, self.n = h, lam, h.shape[0]
        self.first_bad = self.n

    @property
    def definite(self) -> bool:
        return self.first_bad == self.n

    def curvature(self, p: np.ndarray) -> float:
        """``pᵀ (H + λI) p``."""
        return dot(p, self.h @ p) + self.lam * dot(p, p)

    def solve(self, b: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def inverse_norm2(self, p: np.ndarray) -> float:
        """``pᵀ (H + λI)⁻¹ p``, for Newton's step on ``φ(λ)``."""
        return dot(p, self.solve(p))

    def indefinite_bound(self) -> float:  # pragma: no cover - abstract
        """How far λ must grow at least (the Rayleigh bound of the module docstring)."""
        raise NotImplementedError

    def near_null(self) -> tuple[float, np.ndarray]:  # pragma: no cover - abstract
        """``(σ², z)``: the LINPACK estimate of the smallest singular value ``σ`` of the
        Cholesky factor ``R`` and its unit near-null vector ``z`` (``‖R z‖ = σ``), as the
        dense path computes it, in the original order."""
        raise NotImplementedError


def _linpack_near_null(r: Any, solve_r: Any) -> tuple[float, np.ndarray]:
    """The LINPACK estimate on an upper triangular CSR ``r``; ``solve_r(y) = R⁻¹ y``."""
    r.sort_indices()
    y = _linpack_rhs(r.indptr, r.indices, r.data, r.shape[0])
    w = solve_r(y)
    wn = norm(w)
    return (norm(y) / wn) ** 2, w / wn


class _LUFactor(_Factor):
    """SuperLU run as LDLᵀ (module docstring) in a fill-reducing order."""

    def __init__(self, h: Any, shifted: Any, diagonal: np.ndarray, lam: float,
                 ordering: str) -> None:
        super().__init__(h, lam)
        a = shifted.copy()
        a.data[diagonal] += lam  # H + λI in CSC: the diagonal is stored (see _factoriser)
        try:
            self.lu = _splu(a, ordering)
        except RuntimeError:  # an exactly zero pivot: singular, so not positive definite
            self.lu = None
            self.first_bad = -1
            return
        pivots = self.lu.U.diagonal()
        bad = np.flatnonzero(~(pivots > 0.0))
        self.first_bad = int(bad[0]) if bad.size else self.n

    def indefinite_bound(self) -> float:
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
        assert self.lu is not None
        u = sparse.csc_array(self.lu.U, copy=True)  # lu.U is cached: scale a copy
        scale = 1.0 / np.sqrt(u.diagonal())
        u.data *= scale[u.indices]  # R = D^(-1/2) U: row i scaled
        sigma2, w = _linpack_near_null(
            u.tocsr(), lambda y: splinalg.spsolve_triangular(u, y, lower=False))
        return sigma2, w[self.lu.perm_c]


def _with_stored_diagonal(h: Any) -> tuple[Any, np.ndarray]:
    """``H`` in CSC with every diagonal entry stored, and their positions in its data:
    adding λ is then an in-place update of the diagonal, not a sparse sum."""
    n = h.shape[0]
    coo = sparse.coo_array(h)
    diag = np.arange(n)
    shifted = sparse.csc_array(  # duplicates summed: h[i, i] + 0.0 = h[i, i]
        (np.concatenate([coo.data, np.zeros(n)]),
         (np.concatenate([coo.row, diag]), np.concatenate([coo.col, diag]))), shape=(n, n))
    shifted.sum_duplicates()
    cols = np.repeat(diag, np.diff(shifted.indptr))
    return shifted, np.flatnonzero(shifted.indices == cols)


class _BandFactor(_Factor):
    """LAPACK's banded Cholesky ``H + λI = UᵀU`` in the natural order (``dpbtrf``)."""

    def __init__(self, h: Any, band: np.ndarray, lam: float) -> None:
        super().__init__(h, lam)
        shifted = band.copy()
        shifted[-1] += lam
        self.band = shifted
        self.u, info = lapack.dpbtrf(shifted, lower=0)
        if info < 0:  # pragma: no cover - a malformed call, not a property of H
            raise ValueError(f"dpbtrf: argument {-info} is invalid")
        self.first_bad = info - 1 if info > 0 else self.n

    def _solve_u(self, b: np.ndarray, k: int, trans: str) -> np.ndarray:
        """``U₁₁⁻¹ b`` (``trans="N"``) or ``U₁₁⁻ᵀ b`` for the leading ``k x k`` block."""
        x, info = lapack.dtbtrs(self.u[:, :k], b, uplo="U", trans=trans)
        if info != 0:
            raise np.linalg.LinAlgError(f"dtbtrs: info = {info}")
        return x

    def indefinite_bound(self) -> float:
        # As the dense path: v = (-U₁₁⁻¹U₁₁⁻ᵀ a₁₂, 1, 0, ...) with a = H + λI, whose
        # Rayleigh quotient bounds the smallest eigenvalue of a.
        k, b = self.first_bad, self.band.shape[0] - 1
        v = np.zeros(self.n)
        v[k] = 1.0
        if k > 0:
            top = max(0, k - b)
            col = np.zeros(k)
            col[top:] = self.band[b - (k - top):b, k]  # a[top:k, k]
            v[:k] = -self._solve_u(self._solve_u(col, k, "T"), k, "N")
        return -self.curvature(v) / dot(v, v)

    def solve(self, b: np.ndarray) -> np.ndarray:
        x, info = lapack.dpbtrs(self.u, b, lower=0)
        if info != 0:  # pragma: no cover - a malformed call
            raise np.linalg.LinAlgError(f"dpbtrs: info = {info}")
        return x

    def inverse_norm2(self, p: np.ndarray) -> float:
        w = self._solve_u(p, self.n, "T")  # ‖U⁻ᵀp‖², as the dense path: one triangular solve
        return dot(w, w)

    def near_null(self) -> tuple[float, np.ndarray]:
        b = self.u.shape[0] - 1
        # band row b - o holds the o-th superdiagonal: a DIA array with offsets 0..b
        r = sparse.dia_array((self.u[::-1], np.arange(b + 1)), shape=(self.n, self.n))
        return _linpack_near_null(r.tocsr(), lambda y: self._solve_u(y, self.n, "N"))


class _LDLFactor(_Factor):
    """QDLDL's ``P(I + L)D(I + L)ᵀPᵀ`` of ``H + λI`` in an AMD order ``P``; positive
    definite iff ``D > 0``. One solver per Hessian: a new λ refactorises it numerically,
    so a factor is valid only until the next λ (the λ iteration holds one at a time)."""

    def __init__(self, h: Any, refactorise: Callable[[float], Any], lam: float) -> None:
        super().__init__(h, lam)
        try:
            self.solver = refactorise(lam)
        except RuntimeError:  # an exactly zero pivot: singular, so not positive definite
            self.solver = None
            self.first_bad = -1
            return
        self.lower, self.d, self.perm = self.solver.factors()
        bad = np.flatnonzero(~(self.d > 0.0))
        self.first_bad = int(bad[0]) if bad.size else self.n

    def _unit_upper(self, k: int) -> Any:
        """``(I + L₁₁)ᵀ`` of the leading ``k x k`` block, as upper triangular CSR."""
        lower = sparse.csr_array(self.lower)[:k, :k]
        return sparse.csr_array(lower.T + sparse.eye_array(k, format="csr"))

    def indefinite_bound(self) -> float:
        # v = (-B₁₁⁻¹b, 1, 0, ...) in the factorised order, B₁₁⁻¹b = (I + L₁₁)⁻ᵀ l_k with
        # l_k row k of L: its Rayleigh quotient is d_k / (1 + ‖B₁₁⁻¹b‖²).
        k = self.first_bad
        if k < 0:
            return 0.0
        d = float(self.d[k])
        if k == 0:
            return -d
        row = sparse.csr_array(self.lower)[[k], :k].toarray().ravel()
        y = splinalg.spsolve_triangular(self._unit_upper(k), row, lower=False,
                                        unit_diagonal=True)
        return -d / (1.0 + float(y @ y))

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self.solver.solve(b)

    def near_null(self) -> tuple[float, np.ndarray]:
        # R = D^(1/2) (I + L)ᵀ, upper triangular in the factorised order
        r = sparse.csr_array(sparse.diags_array(np.sqrt(self.d)) @ self._unit_upper(self.n))
        sigma2, w = _linpack_near_null(
            r, lambda y: splinalg.spsolve_triangular(r, y, lower=False))
        z = np.empty_like(w)
        z[self.perm] = w  # back to the original order
        return sigma2, z


def _upper_band(h: Any) -> np.ndarray:
    """LAPACK's upper band storage of a symmetric ``h``: ``ab[b + i - j, j] = h[i, j]``."""
    b = bandwidth(h)
    band = np.zeros((b + 1, h.shape[0]))
    for k in range(b + 1):  # one O(nnz) pass per diagonal: b is small here
        band[b - k, k:] = h.diagonal(k)
    return band


def _factoriser(h: Any, ordering: str,
                cache: Optional[dict] = None) -> Callable[[float], _Factor]:
    """``λ -> factorisation of H + λI``, with the work that does not depend on λ done once
    (band storage, or :func:`_with_stored_diagonal`). With ``"AMD"``, ``cache``
    (a dict kept for the run) carries QDLDL's symbolic analysis from one Hessian to the
    next while the pattern stays the same."""
    if ordering == "AMD":
        return _ldl_factoriser(h, {} if cache is None else cache)
    if ordering == "BANDED":
        band = _upper_band(h)
        return lambda lam: _BandFactor(h, band, lam)
    shifted, diagonal = _with_stored_diagonal(h)
    return lambda lam: _LUFactor(h, shifted, diagonal, lam, ordering)


def _ldl_factoriser(h: Any, cache: dict) -> Callable[[float], _Factor]:
    """QDLDL on the upper triangle of ``H + λI`` (every diagonal entry stored): ordered and
    analysed once per pattern, refactorised numerically for each λ and each Hessian."""
    n = h.shape[0]
    diag = np.arange(n)
    coo = sparse.coo_array(h)
    keep = coo.row <= coo.col
    upper = sparse.csc_array(  # duplicates summed: h[i, i] + 0.0 = h[i, i]
        (np.concatenate([coo.data[keep], np.zeros(n)]),
         (np.concatenate([coo.row[keep], diag]), np.concatenate([coo.col[keep], diag]))),
        shape=(n, n))
    upper.sum_duplicates()
    cols = np.repeat(diag, np.diff(upper.indptr))
    diagonal = np.flatnonzero(upper.indices == cols)
    same = ("indptr" in cache and np.array_equal(cache["indptr"], upper.indptr)
            and np.array_equal(cache["indices"], upper.indices))
    if not same:
        cache.clear()
        cache.update(indptr=upper.indptr, indices=upper.indices, solver=None)

    def refactorise(lam: float) -> Any:
        a = upper.copy()
        a.data[diagonal] += lam
        if cache["solver"] is None:
            cache["solver"] = qdldl.Solver(a, upper=True)  # ordering and symbolic analysis
        else:
            cache["solver"].update(a, upper=True)
        return cache["solver"]

    return lambda lam: _LDLFactor(h, refactorise, lam)


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
                     ordering: Optional[str] = None,
                     factor_cache: Optional[dict] = None) -> DenseTRS:
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
    factorise = _factoriser(h, ordering, factor_cache)
    gnorm = norm(g)
    lo, hi = bounds.interval(gnorm, radius)
    lo = max(lo, lam_lo)
    lam = 0.0 if lo == 0.0 else _safeguarded(lo, hi)
    tiny = n * _EPS * bounds.inf
    fac: Optional[_Factor] = None
    last: Optional[DenseTRS] = None
    for it in range(1, maxiter + 1):
        if fac is None:
            fac = factorise(lam)
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
        ordering = getattr(self.problem, "sparse_ordering", None)
        cache = getattr(self.problem, "sparse_factor_cache", None)
        if ordering is None or cache is None:
            ordering, cache = choose_ordering(h), {}
            try:  # both kept for the run: the pattern does not change
                self.problem.sparse_ordering = ordering
                self.problem.sparse_factor_cache = cache
            except AttributeError:
                pass
        return solve_sparse_trs(h, g, radius, k_easy=self.k_easy, k_hard=self.k_hard,
                                maxiter=self.maxiter, bounds=self._bounds, lam_lo=lam_lo,
                                ordering=ordering, factor_cache=cache)
