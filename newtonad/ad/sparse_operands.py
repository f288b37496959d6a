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

import itertools
import sys
import threading
from typing import Any, NamedTuple

import numpy as np

from .lifting import once_per_trace, tracing
from .primitives.sparse_matmul import sparse_matmul
from .primitives.structural import transpose
from .program import Slot
from .var import Var


def is_sparse(value: Any) -> bool:
    """Whether ``value`` is a scipy.sparse matrix or array (scipy is never imported here)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(value)


def is_sparse_operand(value: Any) -> bool:
    """A scipy.sparse matrix, or a sparse matrix passed in ``args`` (:class:`SparseArgument`)."""
    return isinstance(value, SparseArgument) or is_sparse(value)


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
    """A sparse matrix in canonical CSR form: integer pattern, float64 entries."""

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
    shape = (int(a.shape[0]), int(a.shape[1]))
    if a.format == "csr" and a.dtype == np.float64 and a.has_canonical_format:
        # already canonical: its own arrays (no copy of a large matrix at each trace)
        return CSR(a.indptr, a.indices, a.data, shape)
    csr = sparse.csr_array(a, dtype=np.float64, copy=True)  # a private copy to canonicalise
    csr.sum_duplicates()
    return CSR(csr.indptr, csr.indices, csr.data, shape)


def operands(a: Any) -> tuple[Var, Var, Var, tuple[int, int], bool]:
    """The pattern (constants) and entries of ``a`` as the operands of ``sparse_matmul``,
    the CSR matrix's shape and whether ``a`` is its transpose.

    A captured matrix's entries enter a trace as a data input, as a captured array does
    (a Var with a value, marked captured): a matrix with other entries and the same
    pattern runs the same program. The value is the one read at trace time, kept
    current by the guard on what the function reads; outside a trace (eager Vars) they
    are a constant. A matrix passed in ``args``
    (:class:`SparseArgument`) brings its traced entries with it.
    """
    if isinstance(a, SparseArgument):
        p = a.pattern
        return (_index_const(p.indptr), _index_const(p.indices), a.data, p.shape, a.transposed)
    if not tracing():  # eager Vars: the matrix is a constant of the graph
        csr = canonical(a)
        return (_index_const(csr.indptr), _index_const(csr.indices), Var(csr.data, const=True),
                csr.shape, False)
    # one set of operands per matrix and trace: every product with it shares one input
    # (the matrix is kept with them, so that its id names it for the whole trace)
    return once_per_trace(("scipy.sparse", id(a)), lambda: (a, _traced_operands(a)))[1]


def _traced_operands(a: Any) -> tuple[Var, Var, Var, tuple[int, int], bool]:
    csr = canonical(a)
    data = Var(csr.data, aval=Slot(csr.data.shape, "float64"), captured=True)
    return _index_const(csr.indptr), _index_const(csr.indices), data, csr.shape, False


def _index_const(index: np.ndarray) -> Var:
    """A pattern array as a program constant (int64: the engines' one integer type)."""
    return Var(np.asarray(index, dtype=np.int64), const=True)


def _ndim(x: Any) -> int:
    return len(x.shape) if isinstance(x, Var) else np.ndim(x)


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` where one operand is a scipy.sparse matrix and the other traced.

    ``A @ x`` for ``x`` of shape ``(n,)`` or ``(n, k)``; ``x @ A`` for ``x`` of shape
    ``(m,)`` or ``(k, m)``, as ``(A.T @ x.T).T``.
    """
    if is_sparse_operand(a) and is_sparse_operand(b):
        raise TypeError("a product of two sparse matrices inside a traced function: newtonad "
                        "traces sparse-times-dense products only; form the product outside f")
    matrix, x, right = (a, b, True) if is_sparse_operand(a) else (b, a, False)
    if not isinstance(x, Var) and not isinstance(matrix, SparseArgument):
        return a @ b  # nothing traced: scipy's own product
    if not isinstance(x, Var):
        x = Var(np.asarray(x, dtype=np.float64), const=True)
    nd = _ndim(x)
    if nd not in (1, 2):
        side = "A @ x" if right else "x @ A"
        raise ValueError(f"{side} with a scipy.sparse A needs a 1-D or 2-D traced x, got shape "
                         f"{x.shape}; for a stack, multiply each matrix of it (or reshape)")
    indptr, indices, data, shape, transposed = operands(matrix)
    if right:  # A @ x
        return sparse_matmul(indptr, indices, data, x, shape, adjoint=transposed)
    if nd == 1:  # x @ A == A.T @ x
        return sparse_matmul(indptr, indices, data, x, shape, adjoint=not transposed)
    product = sparse_matmul(indptr, indices, data, transpose(x, (1, 0)), shape,
                            adjoint=not transposed)
    return transpose(product, (1, 0))


# ---- a sparse matrix passed in args -----------------------------------------------------------

class Pattern(NamedTuple):
    """The canonical CSR pattern of a matrix passed in ``args`` (part of the cache key)."""

    indptr: np.ndarray
    indices: np.ndarray
    shape: tuple[int, int]


class SparseArgument:
    """What the traced function receives for a scipy.sparse matrix passed in ``args``.

    Its entries are a data input of the program (traced, like an array in ``args``) and
    its pattern is part of the cache key, so a sweep over matrices of one pattern reuses
    the programs and kernels, and a matrix of another pattern traces again. Only its
    products trace (``A @ x``, ``A.dot(x)``, ``A.T @ y``, ``x @ A``, ``np.dot``); any other
    use of the matrix would read entries that are not there while tracing, and raises.
    """

    __array_ufunc__ = None  # NumPy's operators defer to this class: ``y @ A`` for an array y

    def __init__(self, data: Any, pattern: Pattern, transposed: bool = False):
        self.data = data
        self.pattern = pattern
        self.transposed = transposed

    @property
    def shape(self) -> tuple[int, int]:
        m, n = self.pattern.shape
        return (n, m) if self.transposed else (m, n)

    ndim = 2

    @property
    def nnz(self) -> int:
        return int(self.pattern.indices.size)

    @property
    def T(self) -> "SparseArgument":
        return SparseArgument(self.data, self.pattern, not self.transposed)

    def transpose(self, axes: Any = None) -> "SparseArgument":
        if axes is not None and tuple(axes) != (1, 0):
            raise ValueError(f"a 2-D sparse matrix has axes (1, 0) to transpose, got {axes}")
        return self.T

    def dot(self, other: Any) -> Any:
        return matmul(self, other)

    def __matmul__(self, other: Any) -> Any:
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return matmul(other, self)

    def __repr__(self) -> str:
        m, n = self.shape
        return f"<traced sparse matrix {m}x{n}, {self.nnz} stored entries (from args)>"

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"A.{name}: a scipy.sparse matrix passed in args reaches the traced function with "
            "traced entries, and only its products trace (A @ x, A.dot(x), A.T @ y, x @ A). "
            "For anything else, capture the matrix instead (a global or a closure's value): "
            "its entries are then read at trace time, and a change traces again")


#: Patterns seen in args, by (shape, nnz): compared by contents, numbered by first sight.
_PATTERNS: dict[tuple, list[tuple[int, Pattern]]] = {}
_MAX_PATTERNS = 64
_NUMBERS = itertools.count()
_PATTERNS_LOCK = threading.Lock()  # calls from several threads share the table


def split_argument(a: Any) -> tuple[tuple, np.ndarray, Pattern]:
    """A scipy.sparse matrix passed in ``args`` as ``(key, entries, pattern)``: the key
    names the pattern (equal patterns, equal keys), the entries are the data input.

    A canonical float64 CSR matrix is used as it is (its pattern compared, not hashed);
    another format or dtype is converted on every call.
    """
    indptr, indices, data, shape = canonical(a)
    with _PATTERNS_LOCK:
        seen = _PATTERNS.setdefault((shape, indices.size), [])
        for number, known in seen:
            if _same(known.indices, indices) and _same(known.indptr, indptr):
                return ("sparse", shape, indices.size, number), data, known
        # kept in the caller's index dtype, so that the next call compares without converting
        pattern = Pattern(np.array(indptr, copy=True), np.array(indices, copy=True), shape)
        if len(seen) >= _MAX_PATTERNS:
            seen.pop(0)
        number = next(_NUMBERS)
        seen.append((number, pattern))
    return ("sparse", shape, indices.size, number), data, pattern


def _same(known: np.ndarray, now: np.ndarray) -> bool:
    """Equal index arrays (one pass; stored in the caller's dtype, so no conversion)."""
    return known.shape == now.shape and bool((known == now).all())
