"""Greedy graph colourings of sparsity patterns (Gebremedhin, Manne & Pothen 2005).

* :func:`column_colouring`: a distance-2 colouring of the columns of a Jacobian
  pattern -- no two columns of one colour share a row -- so ``J @ S`` with the seed
  ``S`` of the colouring holds every entry of ``J`` once (direct recovery).
* :func:`row_colouring`: the same for the rows (``J.T @ S``, vjp frames).
* :func:`star_colouring`: a star colouring of the adjacency graph of a symmetric
  pattern -- adjacent vertices differ and every path on four vertices uses at least
  three colours -- which admits direct recovery of a symmetric Hessian from ``H @ S``.

Vertices are visited in smallest-last order (Matula & Beck) or largest-first (by
degree); both are linear in the size of the graph. The defaults are the better of the
two on the problem catalogue: smallest-last for distance-2, largest-first for star.
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


def _smallest_last(indptr, indices, order):  # pragma: no cover
    """Smallest-last order (Matula & Beck): repeatedly remove a vertex of least degree in
    the remaining graph; colour in the reverse order of removal. Degree buckets as
    doubly linked lists; scalar loops compiled by numba."""
    n = indptr.size - 1
    degree = indptr[1:] - indptr[:-1]
    top = 0
    for v in range(n):
        top = max(top, degree[v])
    head = np.full(top + 1, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    prv = np.full(n, -1, dtype=np.int64)
    for v in range(n):
        nxt[v] = head[degree[v]]
        if head[degree[v]] >= 0:
            prv[head[degree[v]]] = v
        head[degree[v]] = v
    removed = np.zeros(n, dtype=np.bool_)
    d = 0
    for i in range(n - 1, -1, -1):
        while head[d] < 0:
            d += 1
        v = head[d]
        head[d] = nxt[v]
        if nxt[v] >= 0:
            prv[nxt[v]] = -1
        removed[v] = True
        order[i] = v
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if removed[u]:
                continue
            du = degree[u]  # unlink u from bucket du, push it onto du - 1
            if prv[u] >= 0:
                nxt[prv[u]] = nxt[u]
            else:
                head[du] = nxt[u]
            if nxt[u] >= 0:
                prv[nxt[u]] = prv[u]
            degree[u] = du - 1
            prv[u] = -1
            nxt[u] = head[du - 1]
            if head[du - 1] >= 0:
                prv[head[du - 1]] = u
            head[du - 1] = u
        d = max(d - 1, 0)


ORDERINGS = ("largest-first", "smallest-last")


def ordering_of(graph: sparse.csr_array, ordering: str) -> np.ndarray:
    """The order in which a greedy colouring visits the vertices of ``graph``.

    Parameters
    ----------
    graph : scipy.sparse.csr_array
        A symmetric adjacency pattern without diagonal.
    ordering : {"largest-first", "smallest-last"}

    Returns
    -------
    ndarray of int64
        A permutation of the vertices.
    """
    if ordering == "largest-first":
        return largest_first(graph).astype(np.int64)
    if ordering == "smallest-last":
        order = np.empty(graph.shape[0], dtype=np.int64)
        _compiled(_smallest_last)(graph.indptr.astype(np.int64),
                                  graph.indices.astype(np.int64), order)
        return order
    raise ValueError(f"unknown ordering {ordering!r}; use one of {ORDERINGS}")


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


def _run(kernel, graph: sparse.csr_array, ordering: str) -> np.ndarray:
    n = graph.shape[0]
    order = ordering_of(graph, ordering)
    colours = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)  # forbidden[c] == v: c is taken near v
    _compiled(kernel)(graph.indptr.astype(np.int64), graph.indices.astype(np.int64),
                      order, colours, forbidden)
    return colours


def column_colouring(pattern: sparse.sparray | np.ndarray,
                     ordering: str = "smallest-last") -> np.ndarray:
    """Distance-2 colouring of the columns of a Jacobian pattern.

    Parameters
    ----------
    pattern : sparse matrix or ndarray of bool, shape (m, n)
        The structural non-zeros of ``J``.
    ordering : {"smallest-last", "largest-first"}
        The order in which the greedy colouring visits the columns (smallest-last: 7
        colours for the minimal-surface Hessian's columns at n = 65536, largest-first 10).

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
    return _run(_greedy_distance1, _adjacency(intersection), ordering)


def row_colouring(pattern: sparse.sparray | np.ndarray,
                  ordering: str = "smallest-last") -> np.ndarray:
    """Distance-2 colouring of the rows of a Jacobian pattern (for vjp frames).

    Parameters
    ----------
    pattern : sparse matrix or ndarray of bool, shape (m, n)
    ordering : {"smallest-last", "largest-first"}

    Returns
    -------
    ndarray of int64, shape (m,)
        The colour of every row; two rows sharing a column differ.
    """
    return column_colouring(_check_pattern(pattern, square=False).T, ordering)


def star_colouring(pattern: sparse.sparray | np.ndarray,
                   ordering: str = "largest-first") -> np.ndarray:
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
    ordering : {"largest-first", "smallest-last"}
        The order in which the greedy colouring visits the vertices (on the problem
        catalogue the two differ by one colour on one problem, in largest-first's favour).

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
    return _run(_greedy_star, _adjacency(_check_pattern(pattern, square=True)), ordering)
