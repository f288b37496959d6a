"""Greedy graph colourings of sparsity patterns (Gebremedhin, Manne & Pothen 2005).

* :func:`column_colouring`: a distance-2 colouring of the columns of a Jacobian
  pattern -- no two columns of one colour share a row -- so ``J @ S`` with the seed
  ``S`` of the colouring holds every entry of ``J`` once (direct recovery).
* :func:`row_colouring`: the same for the rows (``J.T @ S``, vjp frames).
* :func:`star_colouring`: a star colouring of the adjacency graph of a symmetric
  pattern -- adjacent vertices differ and every path on four vertices uses at least
  three colours -- which admits direct recovery of a symmetric Hessian from ``H @ S``.

Vertices are visited in largest-first order (by degree), which the paper finds a good
compromise between colour count and cost.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import sparse


def _adjacency(pattern: sparse.sparray) -> sparse.csr_array:
    """The graph of a symmetric pattern: its off-diagonal entries, as a boolean CSR."""
    graph = sparse.csr_array(pattern, dtype=bool, copy=True)  # the caller's stays whole
    graph.setdiag(False)
    graph.eliminate_zeros()
    graph.sort_indices()
    return graph


def largest_first(graph: sparse.csr_array) -> np.ndarray:
    """Vertices by decreasing degree (ties by number)."""
    return np.argsort(-np.diff(graph.indptr), kind="stable")


def _check_pattern(pattern: sparse.sparray | np.ndarray, square: bool) -> sparse.csr_array:
    matrix = sparse.csr_array(pattern, dtype=bool)
    if square and matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"a symmetric pattern must be square, got shape {matrix.shape}")
    return matrix


def _greedy_distance1(indptr, indices, order, colours, forbidden):  # pragma: no cover
    """Greedy distance-1 colouring (scalar loops, compiled by numba)."""
    for v in order:
        for p in range(indptr[v], indptr[v + 1]):
            c = colours[indices[p]]
            if c >= 0:
                forbidden[c] = v
        c = 0
        while forbidden[c] == v:
            c += 1
        colours[v] = c


def _greedy_star(indptr, indices, order, colours, forbidden):  # pragma: no cover
    """Greedy star colouring (scalar loops, compiled by numba); see star_colouring."""
    for v in order:
        for p in range(indptr[v], indptr[v + 1]):
            w = indices[p]
            cw = colours[w]
            if cw >= 0:
                forbidden[cw] = v
        for p in range(indptr[v], indptr[v + 1]):
            w = indices[p]
            cw = colours[w]
            for q in range(indptr[w], indptr[w + 1]):
                x = indices[q]
                cx = colours[x]
                if x == v or cx < 0:
                    continue
                if cw < 0:  # w not coloured yet: v and x must differ
                    forbidden[cx] = v
                    continue
                # v-w-x-y would be two-coloured if x has another neighbour coloured cw
                for r in range(indptr[x], indptr[x + 1]):
                    y = indices[r]
                    if y != w and colours[y] == cw:
                        forbidden[cx] = v
                        break
        c = 0
        while forbidden[c] == v:
            c += 1
        colours[v] = c


@functools.cache
def _compiled(kernel):
    import numba

    return numba.njit(cache=True, nogil=True)(kernel)


def _run(kernel, graph: sparse.csr_array) -> np.ndarray:
    n = graph.shape[0]
    colours = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)  # forbidden[c] == v: c is taken near v
    _compiled(kernel)(graph.indptr.astype(np.int64), graph.indices.astype(np.int64),
                      largest_first(graph).astype(np.int64), colours, forbidden)
    return colours


def column_colouring(pattern: sparse.sparray | np.ndarray) -> np.ndarray:
    """Distance-2 colouring of the columns of a Jacobian pattern.

    Parameters
    ----------
    pattern : sparse matrix or ndarray of bool, shape (m, n)
        The structural non-zeros of ``J``.

    Returns
    -------
    ndarray of int64, shape (n,)
        The colour (0, 1, ...) of every column; two columns sharing a row differ.

    Examples
    --------
    >>> import numpy as np
    >>> from newtonad.sparse import column_colouring
    >>> column_colouring(np.eye(3, dtype=bool)).tolist()
    [0, 0, 0]
    """
    J = _check_pattern(pattern, square=False)
    # Columns conflict when they share a row: the column intersection graph J^T J.
    intersection = (J.T.astype(np.int32) @ J.astype(np.int32)).astype(bool)
    return _run(_greedy_distance1, _adjacency(intersection))


def row_colouring(pattern: sparse.sparray | np.ndarray) -> np.ndarray:
    """Distance-2 colouring of the rows of a Jacobian pattern (for vjp frames).

    Parameters
    ----------
    pattern : sparse matrix or ndarray of bool, shape (m, n)

    Returns
    -------
    ndarray of int64, shape (m,)
        The colour of every row; two rows sharing a column differ.
    """
    return column_colouring(_check_pattern(pattern, square=False).T)


def star_colouring(pattern: sparse.sparray | np.ndarray) -> np.ndarray:
    """Greedy star colouring of a symmetric pattern's adjacency graph.

    Colouring ``v``, the colours forbidden are those of its neighbours; of vertices two
    steps away through a not yet coloured neighbour ``w`` (when ``w`` is coloured later
    no path ``v-w-x`` may carry one colour on both ends); and the colour of ``x`` two
    steps away through a coloured ``w`` when ``x`` has another neighbour of ``w``'s
    colour (``v-w-x-y`` would be a two-coloured path on four vertices).

    Parameters
    ----------
    pattern : sparse matrix or ndarray of bool, shape (n, n)
        A symmetric pattern; the diagonal is ignored.

    Returns
    -------
    ndarray of int64, shape (n,)
        The colour of every vertex.

    Examples
    --------
    >>> import numpy as np
    >>> from newtonad.sparse import star_colouring
    >>> band = np.abs(np.subtract.outer(np.arange(5), np.arange(5))) <= 1
    >>> int(star_colouring(band).max()) + 1
    3
    """
    return _run(_greedy_star, _adjacency(_check_pattern(pattern, square=True)))
