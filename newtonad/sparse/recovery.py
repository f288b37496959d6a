"""Seeds and exact recovery of sparse derivatives from compressed frames.

With a colouring ``c`` of ``k`` colours the seed ``S`` (``n x k``) has ``S[j, c[j]] = 1``;
one frame ``B = J @ S`` (jvp), ``J.T @ S`` (vjp) or ``H @ S`` (HVP) then holds every
structural non-zero, read back without arithmetic (direct recovery, Gebremedhin,
Manne & Pothen 2005).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse


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


def _entries(pattern: sparse.sparray) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    coo = sparse.coo_array(sparse.csr_array(pattern, dtype=bool))
    return coo.row.astype(np.int64), coo.col.astype(np.int64), coo.shape


def _assemble(rows, cols, values, shape) -> sparse.csr_array:
    out = sparse.csr_array((np.asarray(values, dtype=np.float64), (rows, cols)), shape=shape)
    out.sort_indices()
    return out


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
    rows, cols, shape = _entries(pattern)
    return _assemble(rows, cols, compressed[rows, colours[cols]], shape)


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
    rows, cols, shape = _entries(pattern)
    return _assemble(rows, cols, compressed[cols, colours[rows]], shape)


def recover_star(pattern: sparse.sparray, colours: np.ndarray,
                 compressed: np.ndarray) -> sparse.csr_array:
    """A symmetric ``H`` from ``B = H @ S`` of a star colouring (direct recovery).

    ``H[i, i] = B[i, c[i]]`` (no neighbour of ``i`` shares its colour). Off the diagonal,
    ``H[i, j] = B[i, c[j]]`` when ``j`` is the only neighbour of ``i`` coloured ``c[j]``;
    otherwise the star property makes ``i`` the only neighbour of ``j`` coloured
    ``c[i]``, and ``H[i, j] = B[j, c[i]]``.

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
    rows, cols, shape = _entries(pattern)
    k = compressed.shape[1]
    off = rows != cols
    # How many neighbours of each vertex carry each colour.
    count = np.zeros((shape[0], k), dtype=np.int64)
    np.add.at(count, (rows[off], colours[cols[off]]), 1)
    unique = count[rows, colours[cols]] == 1
    values = np.where(unique | ~off, compressed[rows, colours[cols]],
                      compressed[cols, colours[rows]])
    return _assemble(rows, cols, values, shape)
