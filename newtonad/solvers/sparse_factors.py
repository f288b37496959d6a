"""How ``H + λI`` is factorised for sparse trust-exact, for every λ of one subproblem.

A factor answers what the Moré–Sorensen iteration asks (:class:`Factor`): is
``H + λI`` positive definite, and if not, how far λ must grow (the Rayleigh bound of
the first non-positive pivot); solves; ``pᵀ(H + λI)⁻¹p``; the LINPACK near-null vector
of the hard case. Three factorisations, chosen once per pattern by
:func:`choose_ordering`:

* ``"BANDED"``: LAPACK's banded Cholesky (``dpbtrf``) for narrow bands;
* ``"NATURAL"``: SuperLU run as LDLᵀ in the natural order, the dense path's order, so
  its bounds and near-null vectors are the dense path's;
* ``"AMD"``: QDLDL's sparse LDLᵀ in an approximate-minimum-degree order, analysed
  once per pattern and refactorised numerically for each λ and Hessian (SuperLU's
  ``"MMD_AT_PLUS_A"`` when qdldl is missing).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
from scipy import sparse
from scipy.linalg import lapack
from scipy.sparse import linalg as splinalg

try:  # OSQP's QDLDL: a sparse LDLᵀ with AMD ordering and numeric refactorisation
    import qdldl
except ImportError:  # pragma: no cover - a dependency; SuperLU's MMD ordering instead
    qdldl = None

from .linalg import dot, norm

__all__ = ["choose_ordering", "bandwidth", "factoriser", "Factor", "NATURAL_FILL",
           "NATURAL_ENTRIES"]

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


class Factor:
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


class _LUFactor(Factor):
    """SuperLU run as LDLᵀ (module docstring) in a fill-reducing order."""

    def __init__(self, h: Any, shifted: Any, diagonal: np.ndarray, lam: float,
                 ordering: str) -> None:
        super().__init__(h, lam)
        a = shifted.copy()
        a.data[diagonal] += lam  # H + λI in CSC: the diagonal is stored (see factoriser)
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
        return -d / (1.0 + dot(y, y))

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


class _BandFactor(Factor):
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


class _LDLFactor(Factor):
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
        return -d / (1.0 + dot(y, y))

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


def factoriser(h: Any, ordering: str,
                cache: Optional[dict] = None) -> Callable[[float], Factor]:
    """Return ``λ -> factorisation of H + λI``, with the work that does not depend on λ
    done once (band storage, or :func:`_with_stored_diagonal`).

    Parameters
    ----------
    h : scipy sparse matrix, shape (n, n)
        The symmetric Hessian.
    ordering : str
        ``"BANDED"``, ``"AMD"`` or a SuperLU ``permc_spec`` (``"NATURAL"``,
        ``"MMD_AT_PLUS_A"``), as :func:`choose_ordering` returns.
    cache : dict, optional
        With ``"AMD"``, a dict kept for the run: it carries QDLDL's symbolic analysis
        from one Hessian to the next while the pattern stays the same.

    Returns
    -------
    callable
        ``factorise(lam) -> Factor``.
    """
    if ordering == "AMD":
        return _ldl_factoriser(h, {} if cache is None else cache)
    if ordering == "BANDED":
        band = _upper_band(h)
        return lambda lam: _BandFactor(h, band, lam)
    shifted, diagonal = _with_stored_diagonal(h)
    return lambda lam: _LUFactor(h, shifted, diagonal, lam, ordering)


def _ldl_factoriser(h: Any, cache: dict) -> Callable[[float], Factor]:
    """QDLDL on the upper triangle of ``H + λI`` (every diagonal entry stored): ordered and
    analysed once per pattern, refactorised numerically for each λ and each Hessian."""
    upper, diagonal = _with_stored_diagonal(sparse.triu(h, format="coo"))
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
