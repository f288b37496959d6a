"""Seeds and exact recovery of sparse derivatives from compressed frames.

With a colouring ``c`` of ``k`` colours the seed ``S`` (``n x k``) has ``S[j, c[j]] = 1``;
one frame ``B = J @ S`` (jvp), ``J.T @ S`` (vjp) or ``H @ S`` (HVP) then holds every
structural non-zero, read back without arithmetic (direct recovery, Gebremedhin,
Manne & Pothen 2005).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

#: Stored entries from which the gather runs on numba's threads: np.take reads one entry
#: at a time on one core (3e6 entries: 2.2 ms), a parallel loop over int32 positions
#: took 1.0 ms on 2 cores; below this, numba's import and launch are not repaid.
PARALLEL_GATHER_FROM = 1 << 18


def seed_matrix(colours: np.ndarray) -> np.ndarray:
    """The dense seed of a colouring: ``S[j, colours[j]] = 1``.

    Parameters
    ----------
    colours : ndarray of int, shape (n,)

    Returns
    -------
    ndarray of float64, shape (n, k)
        ``k = colours.max() + 1`` (0 for ``n = 0``).
    """
    colours = np.asarray(colours, dtype=np.int64)
    k = int(colours.max()) + 1 if colours.size else 0
    seed = np.zeros((colours.size, k))
    seed[np.arange(colours.size), colours] = 1.0
    return seed


def _canonical(pattern: sparse.sparray | np.ndarray) -> sparse.csr_array:
    matrix = sparse.csr_array(pattern, dtype=bool, copy=True)
    matrix.sum_duplicates()  # sorted indices, no duplicates
    return matrix


def _rows_cols(pattern: sparse.csr_array) -> tuple[np.ndarray, np.ndarray]:
    rows = np.repeat(np.arange(pattern.shape[0], dtype=np.int64), np.diff(pattern.indptr))
    return rows, pattern.indices.astype(np.int64)


def _width(colours: np.ndarray) -> int:
    return int(colours.max()) + 1 if colours.size else 0


def column_plan(pattern: sparse.sparray | np.ndarray, colours: np.ndarray) -> np.ndarray:
    """Where each stored entry of ``J`` sits in ``(J @ S).ravel()`` (column colouring).

    Parameters
    ----------
    pattern : sparse matrix or ndarray of bool, shape (m, n)
    colours : ndarray of int, shape (n,)

    Returns
    -------
    ndarray of int64
        One flat index per entry of ``pattern`` in canonical CSR order.
    """
    matrix = _canonical(pattern)
    rows, cols = _rows_cols(matrix)
    return rows * _width(colours) + colours[cols]


def row_plan(pattern: sparse.sparray | np.ndarray, colours: np.ndarray) -> np.ndarray:
    """Where each stored entry of ``J`` sits in ``(J.T @ S).ravel()`` (row colouring).

    Parameters
    ----------
    pattern : sparse matrix or ndarray of bool, shape (m, n)
    colours : ndarray of int, shape (m,)

    Returns
    -------
    ndarray of int64
    """
    matrix = _canonical(pattern)
    rows, cols = _rows_cols(matrix)
    return cols * _width(colours) + colours[rows]


def star_plan(pattern: sparse.sparray | np.ndarray, colours: np.ndarray) -> np.ndarray:
    """Where each stored entry of a symmetric ``H`` sits in ``(H @ S).ravel()`` (star colouring).

    ``H[i, i] = B[i, c[i]]`` (no neighbour of ``i`` shares its colour). Off the diagonal,
    ``H[i, j] = B[i, c[j]]`` when ``j`` is the only neighbour of ``i`` coloured ``c[j]``;
    otherwise the star property makes ``i`` the only neighbour of ``j`` coloured
    ``c[i]``, and ``H[i, j] = B[j, c[i]]``.

    Parameters
    ----------
    pattern : sparse matrix or ndarray of bool, shape (n, n)
        Symmetric.
    colours : ndarray of int, shape (n,)
        A star colouring of ``pattern``.

    Returns
    -------
    ndarray of int64
    """
    matrix = _canonical(pattern)
    rows, cols = _rows_cols(matrix)
    k = _width(colours)
    here = rows * k + colours[cols]
    off = rows != cols
    # How many neighbours of each vertex carry each colour.
    count = np.bincount(here[off], minlength=matrix.shape[0] * k)
    return np.where(~off | (count[here] == 1), here, cols * k + colours[rows])


def _index_dtype(*sizes: int) -> type:
    """int32 where every index fits, as scipy itself chooses: half the bytes to copy."""
    return np.int32 if max(sizes, default=0) < np.iinfo(np.int32).max else np.int64


def _csr(values: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
         shape: tuple[int, int]) -> sparse.csr_array:
    """A CSR array on arrays already canonical (sorted, no duplicates): no copies, and no
    check beyond scipy's O(1) one."""
    out = sparse.csr_array((values, indices, indptr), shape=shape, copy=False)
    out.has_canonical_format = True
    return out


def _as_canonical(pattern: sparse.sparray | np.ndarray) -> sparse.csr_array:
    """``pattern`` itself when it is a canonical CSR array, else a canonical copy."""
    if isinstance(pattern, sparse.csr_array) and pattern.has_canonical_format:
        return pattern
    return _canonical(pattern)


class Recovery:
    """A recovery plan made once per pattern and colouring; each call is one gather.

    It keeps the pattern's canonical CSR structure (int32 indices where they fit) and,
    for each stored entry, its flat position in the compressed frame, so recovering a
    derivative costs one :func:`numpy.take` into a new data array and copies of the
    index arrays (the result owns its arrays: callers may change them in place).

    Parameters
    ----------
    pattern : sparse matrix or ndarray of bool
    plan : ndarray of int
        From :func:`column_plan`, :func:`row_plan` or :func:`star_plan` of ``pattern``.

    Examples
    --------
    >>> import numpy as np
    >>> from newtonad.sparse import Recovery, seed_matrix, star_colouring, star_plan
    >>> H = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 4.0], [0.0, 4.0, 5.0]])
    >>> colours = star_colouring(H != 0)
    >>> recover = Recovery(H != 0, star_plan(H != 0, colours))
    >>> bool((recover(H @ seed_matrix(colours)).toarray() == H).all())
    True
    """

    def __init__(self, pattern: sparse.sparray | np.ndarray, plan: np.ndarray) -> None:
        matrix = _as_canonical(pattern)
        self.shape: tuple[int, int] = (int(matrix.shape[0]), int(matrix.shape[1]))
        index = _index_dtype(matrix.nnz, *self.shape)
        self.indptr = matrix.indptr.astype(index)  # copies: the pattern's stay untouched
        self.indices = matrix.indices.astype(index)
        self.plan = np.asarray(plan, dtype=np.intp)
        if self.plan.shape != (matrix.nnz,):
            raise ValueError(f"the plan has shape {self.plan.shape}, but the pattern has "
                             f"{matrix.nnz} stored entries: make it from this pattern")
        #: entries the compressed frame must have at least
        self.frame_size = int(self.plan.max()) + 1 if self.plan.size else 0
        # the threaded gather reads half the bytes of positions where they fit in int32
        self._threaded_plan = (self.plan.astype(_index_dtype(self.frame_size))
                               if self.plan.size >= PARALLEL_GATHER_FROM else None)

    def __call__(self, compressed: np.ndarray) -> sparse.csr_array:
        """The derivative as a ``csr_array`` of float64 from the frame ``compressed``."""
        frame = np.asarray(compressed, dtype=np.float64).reshape(-1)  # a view of a C frame
        if frame.size < self.frame_size:
            raise ValueError(f"the compressed frame has {frame.size} entries, but this "
                             f"recovery plan reads {self.frame_size}: pass the product with "
                             "the seed of the plan's own colouring")
        # each result owns its index arrays (a caller may change them in place)
        if self._threaded_plan is not None:
            from .. import _threaded  # numba, imported here only when needed

            values, indices = _threaded.gather_entries(
                np.ascontiguousarray(frame), self._threaded_plan, self.indices)
            return _csr(values, indices, _threaded.copy(self.indptr), self.shape)
        # one gather; mode="clip" skips numpy's bounds pass (every index is in range)
        values = np.take(frame, self.plan, mode="clip")
        return _csr(values, self.indices.copy(), self.indptr.copy(), self.shape)


def assemble(pattern: sparse.sparray | np.ndarray, plan: np.ndarray,
             compressed: np.ndarray) -> sparse.csr_array:
    """The derivative as a CSR array: ``pattern``'s structure, values read by ``plan``.

    For repeated use make a :class:`Recovery` once instead.

    Parameters
    ----------
    pattern : sparse matrix or ndarray of bool
    plan : ndarray of int64
        From :func:`column_plan`, :func:`row_plan` or :func:`star_plan`.
    compressed : ndarray
        The frame the plan was made for.

    Returns
    -------
    scipy.sparse.csr_array of float64
    """
    matrix = _as_canonical(pattern)
    values = np.asarray(compressed, dtype=np.float64).reshape(-1)[plan]
    return _csr(values, matrix.indices.copy(), matrix.indptr.copy(), matrix.shape)


def recover_columns(pattern: sparse.sparray, colours: np.ndarray,
                    compressed: np.ndarray) -> sparse.csr_array:
    """``J`` from ``B = J @ S`` of a distance-2 column colouring: ``J[i, j] = B[i, c[j]]``.

    Parameters
    ----------
    pattern : sparse matrix of bool, shape (m, n)
    colours : ndarray of int, shape (n,)
    compressed : ndarray, shape (m, k)

    Returns
    -------
    scipy.sparse.csr_array of float64, shape (m, n)
    """
    return assemble(_canonical(pattern), column_plan(pattern, colours), compressed)


def recover_rows(pattern: sparse.sparray, colours: np.ndarray,
                 compressed: np.ndarray) -> sparse.csr_array:
    """``J`` from ``B = J.T @ S`` of a distance-2 row colouring: ``J[i, j] = B[j, c[i]]``.

    Parameters
    ----------
    pattern : sparse matrix of bool, shape (m, n)
    colours : ndarray of int, shape (m,)
    compressed : ndarray, shape (n, k)

    Returns
    -------
    scipy.sparse.csr_array of float64, shape (m, n)
    """
    return assemble(_canonical(pattern), row_plan(pattern, colours), compressed)


def recover_star(pattern: sparse.sparray, colours: np.ndarray,
                 compressed: np.ndarray) -> sparse.csr_array:
    """A symmetric ``H`` from ``B = H @ S`` of a star colouring (see :func:`star_plan`).

    Parameters
    ----------
    pattern : sparse matrix of bool, shape (n, n)
        Symmetric.
    colours : ndarray of int, shape (n,)
        A star colouring of ``pattern``.
    compressed : ndarray, shape (n, k)

    Returns
    -------
    scipy.sparse.csr_array of float64, shape (n, n)
    """
    return assemble(_canonical(pattern), star_plan(pattern, colours), compressed)
