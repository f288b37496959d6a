"""scipy.sparse matrices and arrays as operands of traced products.

``A @ x``, ``A.dot(x)``, ``A.T @ y``, ``x @ A`` and ``np.dot`` / ``np.matmul`` of them, with
``A`` a ``scipy.sparse`` matrix or array of any format (a global, a closure's value, an
element of ``args``) and ``x`` traced, record one :mod:`~.primitives.sparse_matmul` step:
``A`` in canonical CSR form (sorted column indices, duplicates summed, float64 entries),
its pattern a program constant and its entries a data input of the program. scipy
reaches newtonad by deferring: its product returns ``NotImplemented`` for an operand
it cannot read as an array, and Python then calls ``Var.__rmatmul__`` (see
:mod:`.object_arrays`); nothing of scipy is patched.

Entries follow NumPy's promotion with a float operand (bool, integer and float32
matrices act as float64); complex matrices are refused, since derivatives here are real.
What keeps a captured matrix current between calls is the guard of :mod:`.captures`.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import numpy as np

from .primitives.sparse_matmul import sparse_matmul
from .primitives.structural import transpose
from .program import Slot
from .var import Var


def is_sparse(value: Any) -> bool:
    """Whether ``value`` is a scipy.sparse matrix or array (scipy is never imported here)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(value)


def defining_arrays(a: Any) -> tuple[np.ndarray, ...]:
    """The arrays a scipy.sparse matrix keeps its entries and pattern in (LIL and DOK
    keep Python lists and dicts: their CSR arrays stand for them)."""
    fmt = a.format
    if fmt in ("csr", "csc", "bsr"):
        return (a.data, a.indices, a.indptr)
    if fmt == "coo":
        return (a.data, *a.coords)
    if fmt == "dia":
        return (a.data, a.offsets)
    c = a.tocsr()
    return (c.data, c.indices, c.indptr)


class CSR(NamedTuple):
    """A sparse matrix in canonical CSR form: int64 pattern, float64 entries."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]


def canonical(a: Any) -> CSR:
    """``a`` (any scipy.sparse format) as canonical CSR arrays, without changing ``a``.

    Raises
    ------
    TypeError
        For a complex or non-numeric matrix, or one that is not 2-D.
    """
    from scipy import sparse

    kind = a.dtype.kind
    name = type(a).__name__
    if kind == "c":
        raise TypeError(f"a scipy.sparse {name} of complex dtype {a.dtype} meets a traced "
                        "value, but derivatives here are real: use A.real and A.imag as two "
                        "real matrices (A @ x = A.real @ x + 1j * (A.imag @ x))")
    if kind not in "biuf":
        raise TypeError(f"a scipy.sparse {name} of dtype {a.dtype} cannot multiply a traced "
                        "value: its entries must be numbers (bool, integer or float)")
    if a.ndim != 2:
        raise TypeError(f"a {a.ndim}-D scipy.sparse {name} of shape {a.shape} meets a traced "
                        "value; only 2-D sparse matrices are supported in products: reshape "
                        "it, e.g. A.reshape(1, -1)")
    csr = sparse.csr_array(a, dtype=np.float64, copy=True)  # a private copy to canonicalise
    csr.sum_duplicates()
    return CSR(csr.indptr.astype(np.int64), csr.indices.astype(np.int64), csr.data,
               (int(a.shape[0]), int(a.shape[1])))


def operands(a: Any) -> tuple[Var, Var, Var, tuple[int, int]]:
    """The pattern (constants) and entries of ``a`` as the operands of ``sparse_matmul``.

    The entries enter a trace as a data input, as a captured array does (a Var with a
    value, marked captured), so a matrix with other entries and the same pattern runs
    the same program; the value is the one read at trace time, kept current by the
    guard on what the function reads.
    """
    csr = canonical(a)
    indptr = Var(csr.indptr, const=True)
    indices = Var(csr.indices, const=True)
    data = Var(csr.data, aval=Slot(csr.data.shape, "float64"), captured=True)
    return indptr, indices, data, csr.shape


def _ndim(x: Any) -> int:
    return len(x.shape) if isinstance(x, Var) else np.ndim(x)


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` where one operand is a scipy.sparse matrix and the other traced.

    ``A @ x`` for ``x`` of shape ``(n,)`` or ``(n, k)``; ``x @ A`` for ``x`` of shape
    ``(m,)`` or ``(k, m)``, as ``(A.T @ x.T).T``.
    """
    if is_sparse(a) and is_sparse(b):
        return a @ b
    matrix, x, right = (a, b, True) if is_sparse(a) else (b, a, False)
    if not isinstance(x, Var):
        return a @ b  # nothing traced: scipy's own product
    nd = _ndim(x)
    if nd not in (1, 2):
        side = "A @ x" if right else "x @ A"
        raise ValueError(f"{side} with a scipy.sparse A needs a 1-D or 2-D traced x, got shape "
                         f"{x.shape}; for a stack, multiply each matrix of it (or reshape)")
    indptr, indices, data, shape = operands(matrix)
    if right:
        return sparse_matmul(indptr, indices, data, x, shape)
    if nd == 1:
        return sparse_matmul(indptr, indices, data, x, shape, adjoint=True)
    product = sparse_matmul(indptr, indices, data, transpose(x, (1, 0)), shape, adjoint=True)
    return transpose(product, (1, 0))


__all__ = ["CSR", "canonical", "is_sparse", "matmul", "operands"]
