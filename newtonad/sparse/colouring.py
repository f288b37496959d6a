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


def _distance1(graph: sparse.csr_array) -> np.ndarray:
    """Greedy distance-1 colouring of ``graph`` in largest-first order."""
    n = graph.shape[0]
    colours = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)  # forbidden[c] == v: c is taken near v
    indptr, indices = graph.indptr, graph.indices
    for v in largest_first(graph):
        forbidden[colours[indices[indptr[v]:indptr[v + 1]]]] = v  # -1 hits the spare slot
        c = 0
        while forbidden[c] == v:
            c += 1
        colours[v] = c
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
    return _distance1(_adjacency(intersection))


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
    graph = _adjacency(_check_pattern(pattern, square=True))
    n = graph.shape[0]
    colours = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)
    indptr, indices = graph.indptr, graph.indices

    def neighbours(v: int) -> np.ndarray:
        return indices[indptr[v]:indptr[v + 1]]

    for v in largest_first(graph):
        near = neighbours(v)
        forbidden[colours[near]] = v
        for w in near:
            beyond = neighbours(w)
            if colours[w] < 0:
                forbidden[colours[beyond]] = v
                continue
            for x in beyond:
                if x == v or colours[x] < 0:
                    continue
                around = neighbours(x)
                if np.any(colours[around[around != w]] == colours[w]):
                    forbidden[colours[x]] = v
        c = 0
        while forbidden[c] == v:
            c += 1
        colours[v] = c
    return colours
