"""The data of a FiniteSum: checked, chunked by rows, and bundled one row block per task.

Every array of ``data`` is chunked along its rows only, all with the same row chunks;
NumPy arrays are chunked here (by ``chunk_rows``, or like the Dask arrays beside them).
Row block ``i`` of every array is bundled into one Dask task, so the arrays of a chunk
always live together on one worker; the bundles are built from the arrays' graphs, so a
lost bundle is recomputed by Dask from where it came from.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["check_data", "row_blocks", "default_chunk_rows"]

#: A default chunk holds at most this many bytes of data (all arrays together).
_CHUNK_BYTES = 64 * 2**20


def _name(i: int, count: int) -> str:
    return "data" if count == 1 else f"data[{i}]"


def _is_dask(a: Any) -> bool:
    return type(a).__module__.startswith("dask.array") and hasattr(a, "chunks")


def default_chunk_rows(nrows: int, row_bytes: int, n_workers: int) -> int:
    """Rows per chunk: two chunks per worker, at most ``_CHUNK_BYTES`` each."""
    by_workers = math.ceil(nrows / max(1, 2 * n_workers))
    by_bytes = max(1, _CHUNK_BYTES // max(1, row_bytes))
    return max(1, min(by_workers, by_bytes))


def check_data(data: Any, chunk_rows: int | None, n_workers: int) -> list[Any]:
    """``data`` as a list of Dask arrays with equal row chunks and whole columns.

    Parameters
    ----------
    data : array or tuple of arrays
        NumPy or Dask arrays with the same number of rows (axis 0).
    chunk_rows : int or None
        Rows per chunk for NumPy arrays (Dask arrays are rechunked to it when given).
    n_workers : int
        Workers of the cluster, for the default chunk size.

    Raises
    ------
    TypeError
        When ``data`` or one of its entries is not an array of numbers.
    ValueError
        When the arrays differ in rows or row chunks, or are chunked along another axis.
    """
    import dask.array as da

    arrays = list(data) if isinstance(data, (tuple, list)) else [data]
    if not arrays:
        raise ValueError("data is empty: give the arrays the term takes, data=(X, y)")
    for i, a in enumerate(arrays):
        if not (isinstance(a, np.ndarray) or _is_dask(a)):
            raise TypeError(f"{_name(i, len(arrays))} is a {type(a).__name__}, but FiniteSum's "
                            "data must be NumPy or Dask arrays (data=(X, y)); convert it with "
                            "np.asarray(...) or dask.array.from_array(...)")
        if a.ndim == 0:
            raise ValueError(f"{_name(i, len(arrays))} is a scalar; data arrays need rows "
                             "(axis 0) to sum over")
        if np.dtype(a.dtype).kind not in "biuf":
            raise TypeError(f"{_name(i, len(arrays))} has dtype {a.dtype}; data must be numbers")
    nrows = {int(a.shape[0]) for a in arrays}
    if len(nrows) != 1 or any(math.isnan(a.shape[0]) for a in arrays):
        shapes = ", ".join(f"{_name(i, len(arrays))}: {a.shape}" for i, a in enumerate(arrays))
        raise ValueError(f"the data arrays must have the same number of rows, known in "
                         f"advance; got {shapes}")
    (n,) = nrows
    lazy = [a for a in arrays if _is_dask(a)]
    for i, a in enumerate(arrays):
        if _is_dask(a) and any(len(c) > 1 for c in a.chunks[1:]):
            raise ValueError(f"{_name(i, len(arrays))} is chunked along its columns (chunks "
                             f"{a.chunks}); each chunk must hold whole rows: rechunk it with "
                             f".rechunk({{{', '.join(f'{ax}: -1' for ax in range(1, a.ndim))}}})")
    if chunk_rows is not None:
        if not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
            raise ValueError(f"chunk_rows must be a positive int, got {chunk_rows!r}")
        rows: Any = int(chunk_rows)
        arrays = [a.rechunk({0: rows}) if _is_dask(a) else a for a in arrays]
        lazy = [a for a in arrays if _is_dask(a)]
    if lazy:
        first = lazy[0].chunks[0]
        for i, a in enumerate(arrays):
            if _is_dask(a) and a.chunks[0] != first:
                raise ValueError(
                    f"{_name(i, len(arrays))}'s row chunks {a.chunks[0]} differ from "
                    f"{_name(arrays.index(lazy[0]), len(arrays))}'s {first}; each chunk of "
                    f"rows must be whole in every array: rechunk it with "
                    f".rechunk({{0: {_name(arrays.index(lazy[0]), len(arrays))}.chunks[0]}})")
        rows = first
    elif chunk_rows is None:
        row_bytes = sum(int(np.prod(a.shape[1:], dtype=np.int64)) * a.dtype.itemsize
                        for a in arrays)
        rows = default_chunk_rows(n, row_bytes, n_workers)
    return [a if _is_dask(a) else da.from_array(a, chunks=(rows,) + tuple(a.shape[1:]))
            for a in arrays]


def _bundle(*arrays: np.ndarray) -> tuple:
    """One row block of every array, as the term receives them."""
    return tuple(arrays)


def row_blocks(arrays: Sequence[Any]) -> list[Any]:
    """One ``dask.delayed`` per row block, computing the tuple of that block's arrays."""
    import dask

    per_array = [a.to_delayed().reshape(-1) for a in arrays]
    return [dask.delayed(_bundle, pure=True)(*(blocks[i] for blocks in per_array))
            for i in range(len(per_array[0]))]
