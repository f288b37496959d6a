"""Linear algebra on traced arrays: ``np.linalg``, ``scipy.linalg`` and matrix helpers.

Each NumPy function is registered where it is defined (``@numpy_function(np.linalg.solve,
name="linalg.solve")``): in :data:`newtonad.ad.dispatch.FUNCTIONS`, where Var's
``__array_function__`` finds it, and in ``newtonad.numpy.linalg``. The
primitives underneath are in :mod:`newtonad.ad.primitives.decompositions` (solve, triangular_solve,
cholesky, eigh, svd, svdvals, qr, pinv, logabsdet, det_sign); everything else here is a
composition of them, so gradients and Hessians follow.

Supported (values match NumPy / SciPy; stacks of matrices ``(..., m, n)`` everywhere):

* ``np.linalg``: ``solve`` (NumPy 2 rules: a 1-D ``b`` is one vector, otherwise ``b`` is
  ``(..., n, k)`` and batch axes broadcast), ``inv`` (= solve(A, I)), ``det`` (= sign ·
  exp(log|det|)), ``slogdet``, ``cholesky`` (``upper=``), ``eigh`` / ``eigvalsh``
  (``UPLO=``), ``svd`` (``full_matrices=False``, or square matrices; ``compute_uv=``),
  ``svdvals``, ``qr`` (modes ``'reduced'``, ``'r'``, and ``'complete'`` when m <= n),
  ``pinv`` (``rcond=``, ``rtol=``, ``hermitian=``), ``matrix_power`` (negative powers
  through ``inv``), ``multi_dot`` (cheapest parenthesisation, as NumPy), ``cross``,
  ``matrix_norm``, ``vector_norm``, ``diagonal``, ``trace``; ``norm`` is in
  :mod:`.numpy_api`.
* ``np.kron``, ``np.triu``, ``np.tril``, ``np.cross`` (3-vectors, and 2-vectors as NumPy).
* ``scipy.linalg``: ``solve`` (``assume_a`` general, symmetric / positive definite,
  triangular or diagonal; ``lower``, ``transposed``), ``solve_triangular`` (``trans``,
  ``lower``, ``unit_diagonal``),
  ``cholesky`` (upper by default), ``cho_factor`` / ``cho_solve``. ``overwrite_*`` and
  ``check_finite`` are accepted: they do not change the result (traced values are never
  overwritten; non-finite input gives NaN instead of scipy's ValueError). They are
  registered by name (:data:`SCIPY_FUNCTIONS`): newtonad never imports ``scipy.linalg``
  (it costs ~90 ms); :mod:`.scipy_dispatch` routes them when the user does.

Not supported, with NotImplementedError naming the parameter: ``svd(hermitian=True)``,
``svd(full_matrices=True)`` of a non-square matrix (the extra columns are not unique: pass
``full_matrices=False``), ``qr`` modes ``'raw'`` and ``'complete'`` with m > n,
``multi_dot(out=)``, complex input. Derivatives do not exist (the formulas give huge, inf
or NaN values) for the eigenvectors of ``eigh`` with repeated eigenvalues and the singular
vectors of ``svd`` with repeated or zero singular values (eigenvalues and singular values
alone differentiate exactly, also when repeated),
``det`` / ``slogdet`` / ``inv`` / ``solve`` of singular matrices, ``qr`` of a wide matrix
(NotImplementedError) or one without full column rank; ``pinv``'s derivative is the one
at constant rank.
"""

from __future__ import annotations

import operator
import string
import warnings
from collections import namedtuple
from typing import Any, Callable

import numpy as np

from . import dispatch
from . import numpy_api as npa
from .dispatch import numpy_function
from .numpy_base import normalize_axes
from .primitives import decompositions as dec
from .primitives import elementwise as ew
from .primitives import linalg as la
from .primitives import structural as st
from .primitives.core import shape_of
from .var import Var

try:  # NumPy's own result types, so code reading `.eigenvalues` / `.logabsdet` works
    from numpy.linalg._linalg import EighResult, QRResult, SlogdetResult, SVDResult
except ImportError:  # pragma: no cover - older or future NumPy layouts
    EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")
    QRResult = namedtuple("QRResult", "Q R")
    SlogdetResult = namedtuple("SlogdetResult", "sign logabsdet")
    SVDResult = namedtuple("SVDResult", "U S Vh")


# ---- shapes -------------------------------------------------------------------------------------

def _matrices(a: Any, what: str, square: bool = False) -> tuple[Any, tuple[int, ...]]:
    a = npa.asvar_or_array(a)
    shape = shape_of(a)
    if len(shape) < 2:
        raise np.linalg.LinAlgError(f"{len(shape)}-dimensional array given to {what}. Array "
                                    "must be at least two-dimensional")
    if square and shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError(f"{what}: last 2 dimensions of the array must be square, "
                                    f"got shape {shape}")
    return a, shape


def _solve_operands(a: Any, b: Any, what: str) -> tuple[Any, Any, bool]:
    """Broadcast ``A`` and ``b`` as NumPy 2 does: a 1-D ``b`` is a vector, else ``(..., n, k)``."""
    a, sa = _matrices(a, what, square=True)
    b = npa.asvar_or_array(b)
    sb = shape_of(b)
    n = sa[-1]
    if len(sb) == 1:
        if sb[0] != n:
            raise ValueError(f"{what}: b of shape {sb} does not match matrices of shape {sa}")
        return a, st.broadcast_to(b, sa[:-2] + (n,)), True
    if len(sb) == 0 or sb[-2] != n:
        raise ValueError(f"{what}: b of shape {sb} does not match matrices of shape {sa} "
                         "(b must be (n,) or (..., n, k))")
    batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    return st.broadcast_to(a, batch + sa[-2:]), st.broadcast_to(b, batch + sb[-2:]), False


def _reject(function: str, **given: tuple[Any, Any]) -> None:
    """NotImplementedError for each parameter given a value other than its supported one."""
    for name, (value, supported) in given.items():
        if value is not supported and not (np.ndim(value) == 0 and value == supported):
            raise NotImplementedError(f"newtonad's {function} does not support {name}={value!r} "
                                      f"(only {name}={supported!r})")


# ---- np.linalg -----------------------------------------------------------------------------------

@numpy_function(np.linalg.solve, name="linalg.solve")
def solve(a, b):
    """``np.linalg.solve``: ``x`` with ``a @ x == b``."""
    a, b, _ = _solve_operands(a, b, "solve")
    return dec.solve(a, b)


@numpy_function(np.linalg.inv, name="linalg.inv")
def inv(a):
    """Traced version of numpy.linalg.inv."""
    a, shape = _matrices(a, "inv", square=True)
    return dec.solve(a, dec.eye(shape[-1], shape[:-2], a))


@numpy_function(np.linalg.slogdet, name="linalg.slogdet")
def slogdet(a):
    """Traced version of numpy.linalg.slogdet."""
    a, _ = _matrices(a, "slogdet", square=True)
    return SlogdetResult(dec.det_sign(a), dec.logabsdet(a))


@numpy_function(np.linalg.det, name="linalg.det")
def det(a):
    """Traced version of numpy.linalg.det."""
    sign, logabs = slogdet(a)
    return ew.mul(sign, ew.exp(logabs))


@numpy_function(np.linalg.cholesky, name="linalg.cholesky")
def cholesky(a, /, *, upper=False):
    """Traced version of numpy.linalg.cholesky.

    The lower factor, reading the lower triangle; ``upper=True``: ``U``, reading the
    upper one.
    """
    a, shape = _matrices(a, "cholesky", square=True)
    if upper:
        nb = len(shape) - 2
        return dec.swap(dec.cholesky(dec.swap(a, nb)), nb)
    return dec.cholesky(a)


def _uplo(UPLO: str) -> str:
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO


@numpy_function(np.linalg.eigh, name="linalg.eigh")
def eigh(a, UPLO="L"):
    """Traced version of numpy.linalg.eigh.

    Eigenvalues (ascending) and eigenvectors of a symmetric matrix. Derivatives of the
    eigenvectors need distinct eigenvalues (repeated ones give inf / NaN).
    """
    a, shape = _matrices(a, "eigh", square=True)
    packed = dec.eigh(a, _uplo(UPLO))
    nb, n = len(shape) - 2, shape[-1]
    w = st.reshape(dec.rows(packed, nb, 0, 1), shape[:-2] + (n,))
    return EighResult(w, dec.rows(packed, nb, 1, n + 1))


@numpy_function(np.linalg.eigvalsh, name="linalg.eigvalsh")
def eigvalsh(a, UPLO="L"):
    """Traced version of numpy.linalg.eigvalsh."""
    return eigh(a, UPLO).eigenvalues


@numpy_function(np.linalg.svd, name="linalg.svd")
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Traced version of numpy.linalg.svd.

    The thin SVD ``U, S, Vh`` (square matrices also with ``full_matrices=True``).
    """
    a, shape = _matrices(a, "svd")
    _reject("np.linalg.svd", hermitian=(hermitian, False))
    if not compute_uv:
        return dec.svdvals(a)
    m, n = shape[-2:]
    if full_matrices and m != n:
        raise NotImplementedError(
            f"newtonad's np.linalg.svd supports full_matrices=True only for square matrices "
            f"(got {m}x{n}: the extra singular vectors are not unique, so they have no "
            "derivative); pass full_matrices=False")
    nb, k = len(shape) - 2, min(m, n)
    packed = dec.svd(a)
    s = st.reshape(dec.rows(packed, nb, m, m + 1), shape[:-2] + (k,))
    vh = dec.swap(dec.rows(packed, nb, m + 1, m + 1 + n), nb)
    return SVDResult(dec.rows(packed, nb, 0, m), s, vh)


@numpy_function(getattr(np.linalg, "svdvals", None), name="linalg.svdvals")
def svdvals(x, /):
    """Traced version of numpy.linalg.svdvals."""
    x, _ = _matrices(x, "svdvals")
    return dec.svdvals(x)


@numpy_function(np.linalg.qr, name="linalg.qr")
def qr(a, mode="reduced"):
    """Traced version of numpy.linalg.qr.

    Reduced QR (``mode='r'``: R only); derivatives need m >= n and full column rank.
    """
    a, shape = _matrices(a, "qr")
    m, n = shape[-2:]
    if mode == "complete" and m > n:
        raise NotImplementedError("newtonad's np.linalg.qr supports mode='complete' only when "
                                  "m <= n (otherwise the extra columns of Q are not unique); "
                                  "use mode='reduced'")
    if mode not in ("reduced", "complete", "r"):
        raise NotImplementedError(f"newtonad's np.linalg.qr does not support mode={mode!r} "
                                  "(supported: 'reduced', 'r', 'complete' with m <= n)")
    nb = len(shape) - 2
    packed = dec.qr(a)
    r = dec.swap(dec.rows(packed, nb, m, m + n), nb)
    if mode == "r":
        return r
    return QRResult(dec.rows(packed, nb, 0, m), r)


_UNSET = object()


@numpy_function(np.linalg.pinv, name="linalg.pinv")
def pinv(a, rcond=None, hermitian=False, *, rtol=_UNSET):
    """Traced version of numpy.linalg.pinv."""
    a, _ = _matrices(a, "pinv")
    options: dict[str, Any] = {}
    for name, value in (("rcond", rcond), ("rtol", rtol)):
        if value is _UNSET or value is None:
            continue
        if np.ndim(value) != 0 or isinstance(value, Var):
            raise NotImplementedError(f"newtonad's np.linalg.pinv needs a constant scalar "
                                      f"{name}, got {value!r}")
        options[name] = float(value)
    if hermitian:
        options["hermitian"] = True
    return dec.pinv(a, **options)


@numpy_function(np.linalg.matrix_power, name="linalg.matrix_power")
def matrix_power(a, n):
    """Traced version of numpy.linalg.matrix_power."""
    a, shape = _matrices(a, "matrix_power", square=True)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        return dec.eye(shape[-1], shape[:-2], a)
    if n < 0:
        a, n = inv(a), -n
    result, power = None, a
    while n:  # binary powering: log2(n) products
        if n & 1:
            result = power if result is None else npa.matmul(result, power)
        n >>= 1
        if n:
            power = npa.matmul(power, power)
    return result


@numpy_function(np.linalg.multi_dot, name="linalg.multi_dot")
def multi_dot(arrays, *, out=None):
    """Traced version of numpy.linalg.multi_dot.

    ``A @ B @ ...`` in the cheapest order (NumPy's dynamic programme over the shapes).
    """
    _reject("np.linalg.multi_dot", out=(out, None))
    arrays = [npa.asvar_or_array(x) for x in arrays]
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    first_vector, last_vector = len(shape_of(arrays[0])) == 1, len(shape_of(arrays[-1])) == 1
    if first_vector:
        arrays[0] = st.reshape(arrays[0], (1,) + shape_of(arrays[0]))
    if last_vector:
        arrays[-1] = st.reshape(arrays[-1], shape_of(arrays[-1]) + (1,))
    for x in arrays:
        if len(shape_of(x)) != 2:
            raise ValueError(f"multi_dot: {len(shape_of(x))}-dimensional array given. Array "
                             "must be two-dimensional")
    result = _chain(arrays, _chain_order(arrays), 0, len(arrays) - 1)
    if first_vector:
        result = st.reshape(result, shape_of(result)[1:])
    if last_vector:
        result = st.reshape(result, shape_of(result)[:-1])
    return result


def _chain_order(arrays) -> list[list[int]]:
    """Split points of the cheapest parenthesisation (the matrix-chain programme)."""
    dims = [shape_of(arrays[0])[0]] + [shape_of(x)[1] for x in arrays]
    n = len(arrays)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(arrays, split, i: int, j: int):
    if i == j:
        return arrays[i]
    k = split[i][j]
    return npa.matmul(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j))


@numpy_function(getattr(np.linalg, "matrix_norm", None), name="linalg.matrix_norm")
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Traced version of numpy.linalg.matrix_norm."""
    return npa.norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


@numpy_function(getattr(np.linalg, "vector_norm", None), name="linalg.vector_norm")
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Traced version of numpy.linalg.vector_norm."""
    x = npa.asvar_or_array(x)
    if axis is None:  # every axis, as one vector
        out = npa.norm(npa.ravel(x), ord=ord, axis=0)
        return st.reshape(out, (1,) * len(shape_of(x))) if keepdims else out
    if isinstance(axis, (tuple, list)) and len(axis) != 1:
        shape = shape_of(x)
        axes = normalize_axes(tuple(axis), len(shape))
        rest = [i for i in range(len(shape)) if i not in axes]
        moved = st.transpose(x, rest + list(axes))
        size = int(np.prod([shape[i] for i in axes], dtype=np.int64))
        flat = st.reshape(moved, tuple(shape[i] for i in rest) + (size,))
        out = npa.norm(flat, ord=ord, axis=-1)
        if keepdims:
            out = st.reshape(out, tuple(1 if i in axes else n for i, n in enumerate(shape)))
        return out
    return npa.norm(x, ord=ord, axis=axis, keepdims=keepdims)


@numpy_function(getattr(np.linalg, "diagonal", None), name="linalg.diagonal")
def linalg_diagonal(x, /, *, offset=0):
    """Traced version of numpy.linalg.diagonal."""
    return npa.diagonal(x, offset, -2, -1)


@numpy_function(getattr(np.linalg, "trace", None), name="linalg.trace")
def linalg_trace(x, /, *, offset=0, dtype=None):
    """Traced version of numpy.linalg.trace."""
    return npa.trace(x, offset, -2, -1, dtype=dtype)


# ---- matrix helpers ------------------------------------------------------------------------------

@numpy_function(np.kron)
def kron(a, b):
    """``np.kron``: block ``(i, j)`` of the result is ``a[i, j] * b``, in any dimension."""
    a, b = npa.asvar_or_array(a), npa.asvar_or_array(b)
    nd = max(len(shape_of(a)), len(shape_of(b)))
    sa = (1,) * (nd - len(shape_of(a))) + shape_of(a)
    sb = (1,) * (nd - len(shape_of(b))) + shape_of(b)
    if nd == 0:
        return ew.mul(a, b)
    letters_a, letters_b = string.ascii_letters[:nd], string.ascii_letters[nd:2 * nd]
    interleaved = "".join(x + y for x, y in zip(letters_a, letters_b))
    outer = la.einsum(f"{letters_a},{letters_b}->{interleaved}",
                      st.reshape(a, sa), st.reshape(b, sb))
    return st.reshape(outer, tuple(x * y for x, y in zip(sa, sb)))


def _triangle(m, k: int, lower: bool):
    m = npa.asvar_or_array(m)
    shape = shape_of(m)
    if len(shape) == 0:
        raise ValueError("tril/triu need an array of at least one dimension")
    rows_, cols = (shape[-2], shape[-1]) if len(shape) >= 2 else (shape[-1], shape[-1])
    keep = np.tri(rows_, cols, k=k, dtype=bool) if lower else \
        ~np.tri(rows_, cols, k=k - 1, dtype=bool)
    return ew.select(keep, m, 0.0)


@numpy_function(np.tril)
def tril(m, k=0):
    """Traced version of numpy.tril."""
    return _triangle(m, operator.index(k), lower=True)


@numpy_function(np.triu)
def triu(m, k=0):
    """Traced version of numpy.triu."""
    return _triangle(m, operator.index(k), lower=False)


@numpy_function(np.cross, getattr(np.linalg, "cross", None), name=("cross", "linalg.cross"))
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Traced version of numpy.cross and numpy.linalg.cross.

    3-vectors; 2-vectors are taken with a zero third component (two 2-vectors give the
    scalar third component, as in NumPy).
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a = npa.moveaxis(npa.asvar_or_array(a), axisa, -1)
    b = npa.moveaxis(npa.asvar_or_array(b), axisb, -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if na == 2 or nb == 2:  # as NumPy 2 warns
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=2)

    def part(x, n, i):
        return npa.getitem(x, (Ellipsis, i)) if i < n else None

    a0, a1, a2 = (part(a, na, i) for i in range(3))
    b0, b1, b2 = (part(b, nb, i) for i in range(3))

    def term(x, y, u, v):  # x*y - u*v, where a missing (zero) component drops its product
        left = None if x is None or y is None else ew.mul(x, y)
        right = None if u is None or v is None else ew.mul(u, v)
        if right is None:
            return left
        return ew.neg(right) if left is None else ew.sub(left, right)

    cz = term(a0, b1, a1, b0)
    if na == 2 and nb == 2:
        return cz
    cx, cy = term(a1, b2, a2, b1), term(a2, b0, a0, b2)
    c = npa.stack([cx, cy, cz], axis=-1)
    return npa.moveaxis(c, -1, axisc)


# ---- scipy.linalg --------------------------------------------------------------------------------

_TRANS = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """``scipy.linalg.solve_triangular``: reads only the ``lower`` / upper triangle of ``a``."""
    if trans not in _TRANS:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    a, b, _ = _solve_operands(a, b, "solve_triangular")
    return dec.triangular_solve(a, b, lower=lower, trans=_TRANS[trans], unit_diagonal=unit_diagonal)


_SYMMETRIC = ("sym", "symmetric", "her", "hermitian", "pos", "positive definite")


def scipy_solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
                assume_a=None, transposed=False):
    """``scipy.linalg.solve``: reads the part of ``a`` that ``assume_a`` names, as SciPy.

    ``None`` / ``'general'``: all of ``a``; ``'sym'``, ``'pos'`` (and ``'her'`` for real
    input): the ``lower`` / upper triangle, mirrored; ``'lower triangular'``, ``'upper
    triangular'``: that triangle; ``'diagonal'``: the diagonal. ``'tridiagonal'`` and
    ``'banded'`` raise NotImplementedError.
    """
    a, b, _ = _solve_operands(a, b, "solve")
    kind = "general" if assume_a in (None, "gen", "general") else assume_a
    if kind in _SYMMETRIC:  # the matrix read is symmetric: transposed changes nothing
        t = tril(a) if lower else triu(a)
        return dec.solve(t + npa.swapaxes(t, -1, -2) - _diag_part(a), b)
    if kind in ("lower triangular", "upper triangular"):
        return dec.triangular_solve(a, b, lower=kind.startswith("lower"), trans=bool(transposed))
    if kind == "diagonal":
        d = npa.diagonal(a, axis1=-2, axis2=-1)
        return b / (d if len(shape_of(b)) == len(shape_of(d)) else npa.expand_dims(d, -1))
    if kind != "general":
        raise NotImplementedError(f"newtonad's scipy.linalg.solve does not support "
                                  f"assume_a={assume_a!r}: use None, 'general', 'sym', 'pos', "
                                  "'lower triangular', 'upper triangular' or 'diagonal'")
    return dec.solve(npa.swapaxes(a, -1, -2) if transposed else a, b)


def _diag_part(a):
    n = shape_of(a)[-1]
    return a * np.eye(n)


def scipy_cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cholesky``: upper factor reading the upper triangle unless ``lower``."""
    return cholesky(a, upper=not lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``(c, lower)``: the factor in one triangle of ``c``, ``a``'s entries in the other
    (as SciPy)."""
    a, shape = _matrices(a, "cho_factor", square=True)
    factor = cholesky(a, upper=not lower)
    n = shape[-1]
    mine = np.tri(n, n, dtype=bool) if lower else ~np.tri(n, n, k=-1, dtype=bool)
    return ew.select(mine, factor, a), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``scipy.linalg.cho_solve``: solve ``A x = b`` from ``cho_factor``'s ``(c, lower)``."""
    c, lower = c_and_lower
    c, b, _ = _solve_operands(c, b, "cho_solve")
    if lower:  # A = L L^T
        y = dec.triangular_solve(c, b, lower=True)
        return dec.triangular_solve(c, y, lower=True, trans=True)
    y = dec.triangular_solve(c, b, lower=False, trans=True)  # A = U^T U
    return dec.triangular_solve(c, y, lower=False)


SCIPY_FUNCTIONS: dict[str, Callable] = {
    "scipy.linalg.solve": scipy_solve, "scipy.linalg.solve_triangular": solve_triangular,
    "scipy.linalg.cholesky": scipy_cholesky,
    "scipy.linalg.cho_factor": cho_factor, "scipy.linalg.cho_solve": cho_solve,
}
"""scipy.linalg functions by public name (no import of SciPy here), registered in
:data:`newtonad.ad.dispatch.SCIPY_FUNCTIONS`: :mod:`.scipy_dispatch` routes them once
scipy.linalg is imported (by the user, or by anything else)."""

dispatch.SCIPY_FUNCTIONS.update(SCIPY_FUNCTIONS)
