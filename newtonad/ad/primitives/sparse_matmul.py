"""A sparse matrix in compressed sparse row (CSR) form times a dense array.

``sparse_matmul(indptr, indices, data, x, shape=(M, N), adjoint=False)`` is ``A @ x``
for the ``M x N`` matrix ``A`` with CSR arrays ``indptr`` (``M + 1``), ``indices`` and
``data`` (``nnz`` each); ``adjoint=True`` is ``A.T @ x``. ``x`` has the rows of the
product's inner axis and any trailing axes (several right-hand sides, a frame's
column axis), which are carried through.

The pattern (``indptr``, ``indices``) is a program constant, so Hessian and Jacobian
sparsity see the pattern of ``A``; ``data`` is a data operand (a sweep over matrices
of one pattern reuses the program). The primitive is linear in ``x``; its transpose is
the same product with ``adjoint`` flipped (``(A x)^T = x^T A^T``), so second order
needs nothing more. The derivative in ``data`` (never asked for by a derivative in
``x``, but rules are complete) is a gather of ``x`` by ``indices``, scaled entry by
entry, summed by rows: ``d(A x)_i = sum_p dA_p x_(indices p)`` over the entries ``p``
of row ``i``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..program import Slot
from .core import Frame, Primitive, is_undef, shape_of
from .elementwise import add_any, mul
from .structural import gather, reshape, scatter_add


def _check(indptr: Slot, indices: Slot, data: Slot, shape: tuple[int, int]) -> None:
    m, n = shape
    for name, slot in (("indptr", indptr), ("indices", indices)):
        if np.dtype(slot.dtype).kind not in "iu" or slot.ndim != 1:
            raise TypeError(f"sparse_matmul: {name} must be a 1-D integer array, got {slot}")
    if indptr.shape != (m + 1,):
        raise ValueError(f"sparse_matmul: indptr has shape {indptr.shape}, a {m} x {n} CSR "
                         f"matrix needs ({m + 1},)")
    if data.ndim != 1 or data.shape != indices.shape:
        raise ValueError(f"sparse_matmul: data {data.shape} and indices {indices.shape} "
                         "must be 1-D arrays of one length")


def _shape(indptr: Slot, indices: Slot, data: Slot, x: Slot, *, shape: tuple[int, int],
           adjoint: bool) -> Slot:
    _check(indptr, indices, data, shape)
    rows, cols = shape[::-1] if adjoint else shape
    if x.ndim == 0 or x.shape[0] != cols:
        what = "A.T @ x" if adjoint else "A @ x"
        raise ValueError(f"{what}: A is {shape[0]} x {shape[1]}, so x needs {cols} rows, "
                         f"got shape {x.shape}")
    dtype = np.result_type(np.dtype(data.dtype), np.dtype(x.dtype), np.float64).name
    return Slot((rows,) + x.shape[1:], dtype)


def _impl(indptr, indices, data, x, *, shape, adjoint):
    from scipy import sparse

    a = sparse.csr_array((data, indices, indptr), shape=shape)
    x = np.asarray(x, dtype=np.result_type(x, np.float64))
    if adjoint:
        a = a.T
    flat = x.reshape(x.shape[0], -1)
    out = np.asarray(a @ flat)
    return out.reshape((out.shape[0],) + x.shape[1:])


def row_of_entry(indptr: np.ndarray) -> np.ndarray:
    """The row of each stored entry of a CSR matrix (int64, ``nnz`` of them)."""
    indptr = np.asarray(indptr)
    return np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))


def _pattern(v: Any, what: str) -> np.ndarray:
    value = getattr(v, "value", v)  # a constant Var, or an array
    if value is None:
        raise ValueError(f"sparse_matmul: the derivative in data needs the {what} as a "
                         "constant (it is computed from values here)")
    return np.asarray(value)


def _data_tangent(frame: Frame, indptr, indices, dd, x, shape, adjoint):
    """``dA @ x`` for the tangent ``dd`` of the stored entries (same pattern as A)."""
    rows = row_of_entry(_pattern(indptr, "row pointers"))
    cols = _pattern(indices, "column indices")
    take, put = (rows, cols) if adjoint else (cols, rows)
    tail = shape_of(x)[1:]
    picked = gather(x, take, 0)  # x at each entry's column (its row, for A.T)
    if frame.framed:
        picked = reshape(picked, shape_of(picked) + (1,))
    scale = reshape(dd, (shape_of(dd)[0],) + (1,) * len(tail) + frame.cols)
    out_rows = shape[1] if adjoint else shape[0]
    return scatter_add(mul(scale, picked), put, 0, (out_rows,) + tail)


def _jvp(frame, primals, tangents, out, *, shape, adjoint):
    indptr, indices, data, x = primals
    _, _, dd, dx = tangents
    via_x = None if dx is None else sparse_matmul(indptr, indices, data, dx, shape, adjoint)
    via_data = None if dd is None else _data_tangent(frame, indptr, indices, dd, x, shape,
                                                     adjoint)
    return add_any(via_x, via_data)


def _transpose(ct, indptr, indices, data, x, *, shape, adjoint):
    if not is_undef(x) or any(is_undef(a) for a in (indptr, indices, data)):
        raise ValueError("sparse_matmul is linear in x only, with the matrix known")
    return [None, None, None, sparse_matmul(indptr, indices, data, ct, shape, not adjoint)]


def _sparsity(in_avals, out_aval, consts, *, shape, adjoint):
    """Output entry ``(i, t)`` depends on ``x`` at ``(j, t)`` for the stored ``A[i, j]``
    (``A[j, i]`` for the adjoint), and on those stored entries of ``data``."""
    indptr, indices = consts[0], consts[1]
    x = in_avals[3]
    floats = [np.dtype(a.dtype).kind in "fc" for a in in_avals]
    if indptr is None or indices is None:  # a pattern computed from values: conservative
        return [None, None, "dense" if floats[2] else None, "dense" if floats[3] else None]
    rows = row_of_entry(indptr)
    cols = np.asarray(indices, dtype=np.int64)
    out_rows, in_rows = (cols, rows) if adjoint else (rows, cols)
    width = int(np.prod(x.shape[1:], dtype=np.int64))
    t = np.arange(width, dtype=np.int64)
    out_index = (out_rows[:, None] * width + t).ravel()
    x_map = (out_index, (in_rows[:, None] * width + t).ravel())
    data_map = (out_index, np.repeat(np.arange(cols.size, dtype=np.int64), width))
    return [None, None, data_map if floats[2] else None, x_map if floats[3] else None]


sparse_matmul_p = Primitive(
    "sparse_matmul", impl=_impl, shape=_shape, jvp=_jvp, transpose=_transpose,
    linear_in=(3,), kind="gather", sparsity=_sparsity)


def sparse_matmul(indptr, indices, data, x, shape, adjoint=False):
    """``A @ x`` (``A.T @ x`` with ``adjoint``) for the CSR matrix ``A`` of ``shape``."""
    return sparse_matmul_p(indptr, indices, data, x,
                           shape=(int(shape[0]), int(shape[1])), adjoint=bool(adjoint))


__all__ = ["row_of_entry", "sparse_matmul", "sparse_matmul_p"]
