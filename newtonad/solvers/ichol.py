"""Incomplete Cholesky with limited memory and a diagonal shift on breakdown.

This is the ``icfs`` factorisation of C.-J. Lin and J. J. Moré, "Incomplete
Cholesky factorizations with limited memory", SIAM J. Sci. Comput. 21 (1999),
24–45, the preconditioner of TRON: for a symmetric ``A`` (made unit-diagonal by
the scaling ``D^{-1/2} A D^{-1/2}``, ``D = |diag A|``), a left-looking column
Cholesky in which column ``j`` of ``L`` keeps the largest ``nnz_j + p`` entries in
magnitude, ``nnz_j`` the entries of ``A``'s column ``j`` below the diagonal (section
2 of the paper). When a pivot is not positive the factorisation restarts on
``A + α I`` with ``α`` doubled from ``1e-3`` (section 3), so ``L Lᵀ`` is always
positive definite. With ``p >= n`` nothing is dropped and an SPD ``A`` is factorised
exactly.

A symmetric ordering ``P`` may be given (``order``): then ``P A Pᵀ`` is factorised, and
the preconditioner's ``C = Pᵀ S L`` still gives ``M = C Cᵀ ≈ A`` in the caller's order.
The permutation is folded into the kernel that reads ``A``, so no permuted copy of ``A``
is made. :func:`fill_reducing_order` chooses one (see there for the rule and the
measurements behind it).

No maintained Python package offers this: scipy.sparse.linalg has ``spilu`` (an
incomplete LU with a drop tolerance, whose factors are not symmetric) but no
incomplete Cholesky, and PyPI's ``ilupp`` (which has one) had its last release in
2021 with no wheels for current Pythons; so it is written here, compiled by numba.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
from scipy import sparse

__all__ = ["IncompleteCholesky", "incomplete_cholesky", "fill_reducing_order",
           "DEFAULT_FILL"]

#: extra entries kept per column beyond ``A``'s own (Lin & Moré's p; TRON uses 5)
DEFAULT_FILL = 5
#: the first diagonal shift, and the factor it grows by on each breakdown
_ALPHA0 = 1e-3
_MAX_SHIFTS = 60
#: columns up to this long are sorted by insertion, longer ones by numpy's sorts
_SMALL = 48


def _factor_loop(n: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                 adiag: np.ndarray, alpha: float, fill: int, lptr: np.ndarray, lrow: np.ndarray,
                 lval: np.ndarray, diag: np.ndarray) -> bool:
    """Left-looking limited-memory incomplete Cholesky of ``A + alpha I``, given as its
    strictly lower part (CSC: ``indptr``, ``indices``, ``data``, rows in any order) and its
    diagonal ``adiag``; False on a non-positive pivot."""
    work = np.zeros(n)           # the column being formed, dense
    marked = np.zeros(n, np.bool_)
    rows = np.empty(n, np.int64)  # the non-zero rows of work
    # columns k < j whose next unused entry (row >= j) is in row i: linked lists
    head = np.full(n, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    pos = np.zeros(n, np.int64)  # per column k: position of its next unused entry
    mags = np.empty(n)
    chosen = np.empty(n, np.int64)
    top = 0
    for j in range(n):
        count = 0
        for t in range(indptr[j], indptr[j + 1]):
            i = indices[t]
            work[i] += data[t]  # (duplicate entries add up, as in scipy's products)
            if not marked[i]:
                marked[i] = True
                rows[count] = i
                count += 1
        own = count
        pivot = adiag[j] + alpha
        k = head[j]
        while k != -1:
            k_next = nxt[k]
            p0 = pos[k]
            ljk = lval[p0]
            pivot -= ljk * ljk
            for t in range(p0 + 1, lptr[k + 1]):
                i = lrow[t]
                if not marked[i]:
                    marked[i] = True
                    rows[count] = i
                    count += 1
                work[i] -= lval[t] * ljk
            # column k's next entry is its first row after j: relink it there
            p0 += 1
            pos[k] = p0
            if p0 < lptr[k + 1]:
                r = lrow[p0]
                nxt[k] = head[r]
                head[r] = k
            k = k_next
        if not pivot > 0.0:
            return False
        d = math.sqrt(pivot)
        diag[j] = d
        keep = min(count, own + fill)
        if count > _SMALL:  # long columns: numpy's sorts
            if keep < count:  # the largest entries in magnitude
                for t in range(count):
                    mags[t] = -abs(work[rows[t]])
                order = np.argsort(mags[:count])
                chosen[:keep] = np.sort(rows[:count][order[:keep]])
            else:
                chosen[:keep] = np.sort(rows[:count])
        else:  # short ones (the usual case): insertion sorts, nothing allocated
            for t in range(count):
                chosen[t] = rows[t]
            if keep < count:  # by decreasing magnitude, then the first keep
                for t in range(1, count):
                    r = chosen[t]
                    m = abs(work[r])
                    u = t - 1
                    while u >= 0 and abs(work[chosen[u]]) < m:
                        chosen[u + 1] = chosen[u]
                        u -= 1
                    chosen[u + 1] = r
            for t in range(1, keep):  # by row
                r = chosen[t]
                u = t - 1
                while u >= 0 and chosen[u] > r:
                    chosen[u + 1] = chosen[u]
                    u -= 1
                chosen[u + 1] = r
        start = top
        for t in range(keep):
            i = chosen[t]
            lrow[top] = i
            lval[top] = work[i] / d
            top += 1
        lptr[j + 1] = top
        for t in range(count):
            i = rows[t]
            work[i] = 0.0
            marked[i] = False
        if keep > 0:
            pos[j] = start
            r = lrow[start]
            nxt[j] = head[r]
            head[r] = j
    return True


def _forward_loop(n: int, lptr: np.ndarray, lrow: np.ndarray, lval: np.ndarray,
                  diag: np.ndarray, y: np.ndarray) -> None:
    """``y <- L⁻¹ y``: ``L`` is ``diag`` on the diagonal and the strictly lower CSC."""
    for j in range(n):
        yj = y[j] / diag[j]
        y[j] = yj
        for t in range(lptr[j], lptr[j + 1]):
            y[lrow[t]] -= lval[t] * yj


def _backward_loop(n: int, lptr: np.ndarray, lrow: np.ndarray, lval: np.ndarray,
                   diag: np.ndarray, y: np.ndarray) -> None:
    """``y <- L⁻ᵀ y``."""
    for j in range(n - 1, -1, -1):
        s = y[j]
        for t in range(lptr[j], lptr[j + 1]):
            s -= lval[t] * y[lrow[t]]
        y[j] = s / diag[j]


def _prepare_loop(n: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                  perm: np.ndarray, inverse: np.ndarray, aptr: np.ndarray, arow: np.ndarray,
                  aval: np.ndarray, adiag: np.ndarray, scale: np.ndarray) -> None:
    """From a symmetric CSR, ordered by ``perm`` (row ``perm[j]`` of the CSR is row ``j``
    of ``B = P A Pᵀ``, or of a principal submatrix of it when ``perm`` has fewer rows;
    ``inverse`` is ``perm``'s inverse, -1 for rows left out): ``scale = sqrt(|diag B|)`` (1
    where the diagonal is 0 or not finite), the scaled diagonal ``adiag`` and the scaled
    strictly lower part of ``B`` in CSC (column j of the lower part is row j's entries
    right of j; their rows unsorted, which the factorisation allows)."""
    for j in range(n):
        r = perm[j]
        d = 0.0
        for t in range(indptr[r], indptr[r + 1]):
            if indices[t] == r:
                d += data[t]
        a = abs(d)
        if not (a > 0.0 and a < np.inf):
            a = 1.0
        scale[j] = math.sqrt(a)
        adiag[j] = d / a
    top = 0
    for j in range(n):
        aptr[j] = top
        r = perm[j]
        for t in range(indptr[r], indptr[r + 1]):
            i = inverse[indices[t]]
            if i > j:
                arow[top] = i
                aval[top] = data[t] / (scale[i] * scale[j])
                top += 1
    aptr[n] = top


#: the ordering found last, for the pattern it was found for (a solver factorises the
#: Hessians of one pattern at every iterate): (indptr, indices, order or None)
_LAST_ORDER: list[tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]] = []


def _profile(csr: sparse.csr_array, inverse: Optional[np.ndarray]) -> int:
    """The envelope of the symmetric ``csr`` reordered by ``inverse`` (new index of each old
    one; None for none): sum over rows of the distance from the first entry in the row to
    the diagonal, the rows that Cholesky without dropping can fill."""
    n = csr.shape[0]
    counts = np.diff(csr.indptr)
    nonempty = np.flatnonzero(counts)
    rows = np.arange(n) if inverse is None else inverse
    cols = csr.indices if inverse is None else inverse[csr.indices]
    first = rows.copy()
    if nonempty.size:
        first[nonempty] = np.minimum(rows[nonempty],
                                     np.minimum.reduceat(cols, csr.indptr[nonempty]))
    return int(np.sum(rows - first))


def fill_reducing_order(a: Any) -> Optional[np.ndarray]:
    """A symmetric ordering of the sparse symmetric ``a`` for :func:`incomplete_cholesky`:
    scipy's reverse Cuthill–McKee (:func:`scipy.sparse.csgraph.reverse_cuthill_mckee`),
    or None to keep ``a``'s own order.

    The rule: keep ``a``'s order when its bandwidth is at most its densest row's count
    (no ordering can make the bandwidth less than half that count, so little is left to
    gain, and RCM would cost more than the factorisation); else take RCM's order when its
    envelope (the entries an exact Cholesky factor can fill) is smaller than ``a``'s own.

    Measured on this machine (the scripts are in the report of the change that added
    it): CG iterations to 1e-6 with the factor of the Hessian at the standard start, in
    ``a``'s order against RCM's.

    ============================  ========  ================  =============
    problem                       n         natural           RCM
    ============================  ========  ================  =============
    cubic-control, rho = 100      10 000    12                1
    cubic-control, rho = 1e4      10 000    5 000 (shifted)   1
    torsion                       99 856    77                59
    journal-bearing               99 856    93                37
    obstacle                      99 856    75                61
    minimal-surface               99 856    131               99
    ============================  ========  ================  =============

    cubic-control's variables come as all states, then all controls, so a state and its
    control are ``n / 2`` apart: in that order the limited-memory factor drops the
    coupling (and with a large penalty needs a shift), while RCM interleaves them into a
    band of width 2. On the grids both orders have bandwidth ``sqrt(n)``, and RCM's
    envelope is a third smaller. Chained Rosenbrock (bandwidth 2) keeps its order.

    The last pattern's ordering is kept, so the iterates of a solve pay for RCM once
    (checking the pattern costs a comparison of its index arrays).

    Parameters
    ----------
    a : scipy sparse matrix, shape (n, n)
        Symmetric, with its structural pattern (both triangles).

    Returns
    -------
    ndarray of int64, shape (n,), or None
        ``order[j]`` is the row of ``a`` that becomes row ``j``.
    """
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    csr = a if isinstance(a, sparse.csr_array) else sparse.csr_array(a)
    if _LAST_ORDER:
        indptr, indices, kept = _LAST_ORDER[0]
        if (indptr.shape == csr.indptr.shape and indices.shape == csr.indices.shape
                and np.array_equal(indptr, csr.indptr)
                and np.array_equal(indices, csr.indices)):
            return kept
    n = csr.shape[0]
    counts = np.diff(csr.indptr)
    rows = np.repeat(np.arange(n), counts)
    width = int(np.max(np.abs(csr.indices - rows), initial=0))
    order: Optional[np.ndarray] = None
    if width > int(np.max(counts, initial=0)):
        rcm = np.asarray(reverse_cuthill_mckee(csr, symmetric_mode=True), dtype=np.int64)
        inverse = np.empty(n, np.int64)
        inverse[rcm] = np.arange(n)
        if _profile(csr, inverse) < _profile(csr, None):
            order = rcm
    _LAST_ORDER[:] = [(csr.indptr.copy(), csr.indices.copy(), order)]
    return order


_KERNELS: dict[str, Any] = {}


def _kernel(name: str) -> Any:
    """The numba-compiled loop ``name`` (compiled, or loaded from numba's cache, once)."""
    fn = _KERNELS.get(name)
    if fn is None:
        import numba

        loop = {"factor": _factor_loop, "forward": _forward_loop,
                "backward": _backward_loop, "prepare": _prepare_loop}[name]
        fn = _KERNELS[name] = numba.njit(cache=True, nogil=True)(loop)
    return fn


class IncompleteCholesky:
    """``M = Pᵀ S L Lᵀ S P ≈ A`` (``S = D^{1/2}``, ``P`` the ordering, or ``I``); the
    factor of :func:`incomplete_cholesky`.

    Attributes
    ----------
    shift : float
        The ``α`` of the factorisation that succeeded (0 when none was needed).
    nnz : int
        Entries of ``L`` (its diagonal included).
    order : ndarray or None
        The ordering: row ``order[j]`` of ``A`` is row ``j`` of the matrix factorised
        (None: ``A``'s own order).
    """

    def __init__(self, n: int, scale: np.ndarray, lptr: np.ndarray, lrow: np.ndarray,
                 lval: np.ndarray, diag: np.ndarray, shift: float,
                 order: Optional[np.ndarray] = None) -> None:
        self.n = n
        self.scale = scale
        self.lptr, self.lrow, self.lval, self.diag = lptr, lrow, lval, diag
        self.shift = shift
        self.nnz = int(lptr[-1]) + n
        self.order = order

    def left(self, v: np.ndarray) -> np.ndarray:
        """``C⁻¹ v`` for ``M = C Cᵀ``, ``C = Pᵀ S L`` (a new array)."""
        y = (v if self.order is None else v[self.order]) / self.scale
        _kernel("forward")(self.n, self.lptr, self.lrow, self.lval, self.diag, y)
        return y

    def right(self, v: np.ndarray) -> np.ndarray:
        """``C⁻ᵀ v`` (a new array)."""
        y = np.array(v, dtype=np.float64)
        _kernel("backward")(self.n, self.lptr, self.lrow, self.lval, self.diag, y)
        y /= self.scale
        if self.order is None:
            return y
        out = np.empty_like(y)
        out[self.order] = y
        return out

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``M⁻¹ r``."""
        return self.right(self.left(r))

    def factor(self) -> sparse.csc_array:
        """``C = Pᵀ S L`` as a sparse matrix, lower triangular when there is no ordering
        (for tests and inspection)."""
        n = self.n
        cols = np.repeat(np.arange(n), np.diff(self.lptr))
        rows = np.concatenate([np.arange(n), self.lrow[: self.lptr[-1]]])
        cols = np.concatenate([np.arange(n), cols])
        vals = np.concatenate([self.diag, self.lval[: self.lptr[-1]]])
        vals = vals * self.scale[rows]
        if self.order is not None:
            rows = self.order[rows]
        return sparse.csc_array((vals, (rows, cols)), shape=(n, n))


def incomplete_cholesky(a: Any, fill: int = DEFAULT_FILL,
                        order: Optional[np.ndarray] = None,
                        subset: Optional[np.ndarray] = None) -> IncompleteCholesky:
    """Lin & Moré's limited-memory incomplete Cholesky of the symmetric sparse ``a``.

    Parameters
    ----------
    a : scipy sparse matrix, shape (n, n)
        Symmetric (each row is read right of its diagonal). Need not be positive definite:
        a diagonal shift is added until the factorisation succeeds.
    fill : int
        Entries kept per column of ``L`` beyond ``a``'s own below the diagonal
        (Lin & Moré's ``p``); ``fill >= n`` keeps everything (an exact Cholesky
        factor of an SPD ``a``).
    order : ndarray of int, shape (n,), optional
        A symmetric ordering (a permutation: row ``order[j]`` of ``a`` becomes row
        ``j``), such as :func:`fill_reducing_order` gives; None keeps ``a``'s order.
        With ``subset``, a permutation of the submatrix's rows.
    subset : ndarray of int, optional
        Sorted rows of ``a``: factorise the principal submatrix ``a[subset][:, subset]``
        (read from ``a`` itself, without forming it), as a solver does for its free
        variables; vectors are then in the submatrix's numbering.

    Returns
    -------
    IncompleteCholesky
        ``M = C Cᵀ`` positive definite, with ``C = Pᵀ S L`` (lower triangular
        without an ordering).
    """
    csr = a if isinstance(a, sparse.csr_array) else sparse.csr_array(a)
    if csr.dtype != np.float64:
        csr = csr.astype(np.float64)
    # rows need not be sorted (nor duplicates summed): the kernels read them in any order
    full = csr.shape[0]
    rows = None if subset is None else np.asarray(subset, dtype=np.int64)
    n = full if rows is None else rows.size
    natural = np.arange(n, dtype=np.int64)
    if order is not None:
        order = np.asarray(order, dtype=np.int64)
        if order.shape != (n,):
            raise ValueError(f"order has shape {order.shape}; a permutation of {n} rows "
                             "is needed")
    # perm: the row of csr that becomes row j; inverse: -1 for the rows left out
    perm = rows if order is None else order if rows is None else rows[order]
    if perm is None:
        perm = inverse = natural
    else:
        inverse = np.full(full, -1, np.int64)
        inverse[perm] = natural
    # symmetric: the rows of the CSR are the columns of the CSC, so no transpose is made
    indptr = np.zeros(n + 1, np.int64)
    indices = np.empty(max(csr.nnz, 1), np.int64)  # a bound for the submatrix's too
    data = np.empty(max(csr.nnz, 1))
    adiag, scale = np.empty(n), np.empty(n)
    _kernel("prepare")(n, csr.indptr, csr.indices, csr.data, perm, inverse, indptr, indices,
                       data, adiag, scale)
    fill = int(min(max(fill, 0), n))
    cap = int(indptr[-1]) + fill * n
    lptr = np.zeros(n + 1, np.int64)
    lrow = np.empty(max(cap, 1), np.int64)
    lval = np.empty(max(cap, 1))
    diag = np.empty(n)
    # the shift: none while the scaled diagonal (±1, or 0) is positive (Lin & Moré, §3)
    low = float(adiag.min()) if n else 1.0
    alpha = 0.0 if low > 0.0 else _ALPHA0 - low
    factor = _kernel("factor")
    for _ in range(_MAX_SHIFTS):
        if factor(n, indptr, indices, data, adiag, alpha, fill, lptr, lrow, lval, diag):
            return IncompleteCholesky(n, scale, lptr, lrow, lval, diag, alpha, order)
        alpha = max(2.0 * alpha, _ALPHA0)
    raise np.linalg.LinAlgError("incomplete Cholesky failed even with a diagonal shift of "
                                f"{alpha:g}: the matrix has nan or inf entries")
