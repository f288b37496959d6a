"""Matrix solves and factorisations: the primitives under ``np.linalg`` and ``scipy.linalg``.

Layout shared by every primitive here: operands are stacks of matrices, ``batch + (m, n)``.
The batch axes of two operands must be equal (the NumPy layer broadcasts them first). The
right-hand side of a solve is ``batch + (n,) + tail``: any trailing axes are columns, so a
jvp's tangent frame (one more trailing axis) goes through the same primitive unchanged.

Factorisations that NumPy returns as several arrays return one *packed* array here, which
the NumPy layer slices (a program step has one output):

* ``eigh``  -> ``batch + (n + 1, n)``: row 0 the eigenvalues (ascending), rows 1.. the
  eigenvectors as columns;
* ``svd``   -> ``batch + (m + 1 + n, k)``, ``k = min(m, n)``: ``U`` rows, ``s``, ``V`` rows
  (``V = Vh^T``);
* ``qr``    -> ``batch + (m + n, k)``: ``Q`` rows, then ``R^T`` rows.

Triangle reading follows LAPACK and NumPy exactly: ``cholesky`` and ``eigh(uplo="L")``
read only the lower triangle (``uplo="U"``: the upper one), ``triangular_solve`` only its
triangle (and not the diagonal with ``unit_diagonal``). The jvp rules differentiate exactly
that function, so a perturbation of the unread triangle has a zero tangent, and finite
differences in any direction agree.

jvp rules are written in primitives (second order works); ``solve`` and
``triangular_solve`` are linear in the right-hand side and carry transpose rules. All are
``numpy_only``: the numba engine evaluates them with NumPy / SciPy (documented fallback).

Where derivatives do not exist, the rules return what the formulas give (huge, inf or NaN
values), as autograd and JAX do: eigenvectors of ``eigh`` with repeated eigenvalues (they
are not unique: exactly equal values get a zero in the gap matrix, nearly equal ones huge
entries), singular vectors of ``svd`` with repeated or zero singular values (functions of
the eigenvalues / singular values alone keep exact derivatives, also at repeated values),
``qr`` of a rank-deficient or wide matrix (``m < n`` raises NotImplementedError),
``logabsdet`` of a singular matrix, ``pinv`` where
its rank changes (the rule is the derivative at constant rank, Golub & Pereyra 1973).
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from ..program import Slot
from ..var import Var
from .core import Frame, Primitive, is_undef, shape_of
from .elementwise import add, div, eq, mul, neg, scale, select, sub
from .linalg import einsum, parse
from .structural import broadcast_to, concatenate, gather, reshape, slice_, transpose

_BATCH = string.ascii_uppercase
_TAIL = "abcdefgh"  # columns of a right-hand side (core letters are i..y, the frame is z)


# ---- helpers for the rules -----------------------------------------------------------------

def _nb(a: Any) -> int:
    """Number of batch axes of a stack of matrices."""
    return len(shape_of(a)) - 2


def contract(spec: str, x: Any, y: Any, nb: int) -> Any:
    """``einsum(spec)`` over the trailing matrix axes of two stacks with ``nb`` batch axes.

    An operand with one axis more than its subscripts carries a tangent frame: the frame
    letter is appended to it and to the output. Rules are linear in tangents, so at most
    one operand carries a frame.
    """
    (sx, sy), so = parse(spec)
    batch = _BATCH[:nb]
    fx = "z" if len(shape_of(x)) == nb + len(sx) + 1 else ""
    fy = "z" if len(shape_of(y)) == nb + len(sy) + 1 else ""
    if fx and fy:
        raise ValueError(f"contract {spec!r}: both operands carry a frame")
    return einsum(f"{batch}{sx}{fx},{batch}{sy}{fy}->{batch}{so}{fx or fy}", x, y)


def swap(x: Any, nb: int) -> Any:
    """The matrix transpose of a stack (axes ``nb``, ``nb + 1``), frame axes untouched."""
    perm = list(range(len(shape_of(x))))
    perm[nb], perm[nb + 1] = perm[nb + 1], perm[nb]
    return transpose(x, perm)


def rows(x: Any, nb: int, start: int, stop: int) -> Any:
    """Rows ``start:stop`` of a stack of (packed) matrices."""
    return slice_(x, [(0, n, 1) for n in shape_of(x)[:nb]] + [(start, stop, 1)])


def diag_part(p: Any, nb: int) -> Any:
    """The diagonal of a stack of square matrices (frames too): ``batch + (n,) + frame``."""
    shape = shape_of(p)
    n = shape[nb]
    flat = reshape(p, shape[:nb] + (n * n,) + shape[nb + 2:])
    return gather(flat, np.arange(n, dtype=np.int64) * (n + 1), nb)


def eye(n: int, batch: tuple[int, ...] = (), like: Any = None) -> Any:
    """The identity, broadcast over ``batch``: one n×n constant in a program when ``like``
    is traced (a Var), a plain NumPy array otherwise."""
    e = Var(np.eye(n), const=True) if isinstance(like, Var) else np.eye(n)
    return broadcast_to(e, batch + (n, n)) if batch else e


def triangle_mask(n: int, lower: bool, strict: bool = False) -> np.ndarray:
    """1.0 on the chosen triangle of an n×n matrix (without the diagonal if ``strict``)."""
    if lower:
        return np.tril(np.ones((n, n)), -1 if strict else 0)
    return np.triu(np.ones((n, n)), 1 if strict else 0)


def symmetric_from_triangle(frame: Frame, t: Any, nb: int, n: int, lower: bool) -> Any:
    """The symmetric matrix a LAPACK routine sees when it reads one triangle of ``t``."""
    part = scale(frame, t, triangle_mask(n, lower))
    return add(part, swap(scale(frame, t, triangle_mask(n, lower, strict=True)), nb))


def gap_inverse(v: Any, nb: int, squared: bool = False) -> Any:
    """``F[i, j] = 1 / (v_j - v_i)`` (``v_j² - v_i²`` if squared) where they differ, else 0."""
    shape = shape_of(v)
    n = shape[-1]
    vi = reshape(v, shape[:nb] + (n, 1))
    vj = reshape(v, shape[:nb] + (1, n))
    if squared:
        vi, vj = mul(vi, vi), mul(vj, vj)
    gap = sub(vj, vi)
    # Exactly equal values (the diagonal, or a repeated eigenvalue) get 0, not inf: a zero
    # cotangent then stays zero (0 * inf would be NaN), so functions of the values alone keep
    # their derivative at repeated eigenvalues.
    same = eq(gap, 0.0)
    return select(same, 0.0, div(1.0, select(same, 1.0, gap)))


def _check_square(a: Slot, what: str) -> tuple[int, ...]:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{what}: expected a stack of square matrices (..., n, n), got shape "
                         f"{a.shape}")
    return a.shape[:-2]


def _check_rhs(a: Slot, b: Slot, what: str) -> None:
    batch = _check_square(a, what)
    n = a.shape[-1]
    nb = len(batch)
    if b.ndim < nb + 1 or b.shape[:nb] != batch or b.shape[nb] != n:
        raise ValueError(f"{what}: right-hand side of shape {b.shape} does not fit matrices of "
                         f"shape {a.shape} (expected {batch + (n,)} + columns)")


def _as_columns(b: np.ndarray, nb: int) -> np.ndarray:
    """``batch + (n,) + tail`` as ``batch + (n, prod(tail))`` for LAPACK."""
    cols = int(np.prod(b.shape[nb + 1:], dtype=np.int64))
    return b.reshape(b.shape[:nb + 1] + (cols,))


def _apply(m: Any, x: Any, nb: int, transposed: bool = False) -> Any:
    """``M @ X`` (``M^T @ X``) for a stack of matrices M and a right-hand side X with tail."""
    tail = _TAIL[:len(shape_of(x)) - nb - 1]
    mi = "ji" if transposed else "ij"
    return contract(f"{mi},j{tail}->i{tail}", m, x, nb)


def _sub_any(a: Any, b: Any) -> Any:
    return neg(b) if a is None else sub(a, b)


# ---- solve: A X = B ----------------------------------------------------------------------------

def _solve_impl(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    nb = a.ndim - 2
    return np.linalg.solve(a, _as_columns(b, nb)).reshape(b.shape)


def _solve_shape(a: Slot, b: Slot) -> Slot:
    _check_rhs(a, b, "solve")
    return Slot(b.shape, "float64")


def _solve_jvp(frame, primals, tangents, out):
    (a, _), (ta, tb) = primals, tangents
    nb = _nb(a)
    rhs = tb if ta is None else _sub_any(tb, _apply(ta, out, nb))  # dB - dA X
    return solve(a, rhs)


def _solve_transpose(ct, a, b):
    if is_undef(a) or not is_undef(b):
        raise ValueError("solve in a linear program must be linear in its right-hand side only")
    return [None, solve(swap(a, _nb(a)), ct)]


solve_p = Primitive("solve", impl=_solve_impl, shape=_solve_shape, jvp=_solve_jvp,
                    transpose=_solve_transpose, linear_in=(1,), kind="matrix", numpy_only=True)


def solve(a, b):
    """``X`` with ``A X = B``: ``A`` of shape ``batch + (n, n)``, ``B`` ``batch + (n,) + tail``."""
    return solve_p(a, b)


# ---- triangular_solve: op(tri(A)) X = B --------------------------------------------------------

def _triangular_impl(a, b, *, lower, trans, unit_diagonal):
    from scipy.linalg import solve_triangular as lapack_solve_triangular

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    nb = a.ndim - 2
    cols = _as_columns(b, nb)
    out = np.empty_like(cols)
    for i in np.ndindex(*a.shape[:nb]):
        out[i] = lapack_solve_triangular(a[i], cols[i], trans=int(trans), lower=lower,
                                         unit_diagonal=unit_diagonal)
    return out.reshape(b.shape)


def _triangular_shape(a: Slot, b: Slot, **params) -> Slot:
    _check_rhs(a, b, "triangular_solve")
    return Slot(b.shape, "float64")


def _triangular_jvp(frame, primals, tangents, out, *, lower, trans, unit_diagonal):
    (a, _), (ta, tb) = primals, tangents
    nb = _nb(a)
    rhs = tb
    if ta is not None:
        # Only the triangle that is read (without the diagonal when it is taken as ones).
        da = scale(frame, ta, triangle_mask(shape_of(a)[-1], lower, strict=unit_diagonal))
        rhs = _sub_any(tb, _apply(da, out, nb, transposed=trans))
    return triangular_solve(a, rhs, lower=lower, trans=trans, unit_diagonal=unit_diagonal)


def _triangular_transpose(ct, a, b, *, lower, trans, unit_diagonal):
    if is_undef(a) or not is_undef(b):
        raise ValueError("triangular_solve in a linear program must be linear in its "
                         "right-hand side only")
    return [None, triangular_solve(a, ct, lower=lower, trans=not trans,
                                   unit_diagonal=unit_diagonal)]


triangular_solve_p = Primitive("triangular_solve", impl=_triangular_impl,
                               shape=_triangular_shape, jvp=_triangular_jvp,
                               transpose=_triangular_transpose, linear_in=(1,),
                               kind="matrix", numpy_only=True)


def triangular_solve(a, b, *, lower: bool, trans: bool = False, unit_diagonal: bool = False):
    """``X`` with ``op(T) X = B``: ``T`` the lower / upper triangle of ``A``, ``op`` the
    transpose if ``trans``, ones on the diagonal if ``unit_diagonal``."""
    return triangular_solve_p(a, b, lower=bool(lower), trans=bool(trans),
                              unit_diagonal=bool(unit_diagonal))


# ---- cholesky: A = L L^T, reading the lower triangle ------------------------------------------

def _cholesky_shape(a: Slot) -> Slot:
    _check_square(a, "cholesky")
    return Slot(a.shape, "float64")


def _cholesky_jvp(frame, primals, tangents, out):
    (a,), (ta,) = primals, tangents
    nb, n = _nb(a), shape_of(a)[-1]
    # dA = dL L^T + L dL^T, so L^{-1} dA L^{-T} = M + M^T with M = L^{-1} dL lower triangular:
    # M is its strict lower triangle plus half its diagonal.
    s = symmetric_from_triangle(frame, ta, nb, n, lower=True)
    y = triangular_solve(out, s, lower=True)                     # L^{-1} S
    z = triangular_solve(out, swap(y, nb), lower=True)           # L^{-1} S L^{-T}
    half = triangle_mask(n, lower=True, strict=True) + 0.5 * np.eye(n)
    return contract("ij,jk->ik", out, scale(frame, z, half), nb)


cholesky_p = Primitive("cholesky", impl=lambda a: np.linalg.cholesky(np.asarray(a, dtype=float)),
                       shape=_cholesky_shape, jvp=_cholesky_jvp, kind="matrix", numpy_only=True)


def cholesky(a):
    """The lower Cholesky factor, reading the lower triangle of ``a`` (as NumPy)."""
    return cholesky_p(a)


# ---- eigh: symmetric eigendecomposition, packed -------------------------------------------------

def _eigh_impl(a, *, uplo):
    w, v = np.linalg.eigh(np.asarray(a, dtype=np.float64), UPLO=uplo)
    return np.concatenate([w[..., None, :], v], axis=-2)


def _eigh_shape(a: Slot, *, uplo) -> Slot:
    batch = _check_square(a, "eigh")
    n = a.shape[-1]
    return Slot(batch + (n + 1, n), "float64")


def _eigh_jvp(frame, primals, tangents, out, *, uplo):
    (a,), (ta,) = primals, tangents
    nb, n = _nb(a), shape_of(a)[-1]
    w = reshape(rows(out, nb, 0, 1), shape_of(a)[:nb] + (n,))
    v = rows(out, nb, 1, n + 1)
    s = symmetric_from_triangle(frame, ta, nb, n, lower=(uplo == "L"))
    p = contract("ji,jk->ik", v, contract("ij,jk->ik", s, v, nb), nb)  # V^T dA V
    dw = diag_part(p, nb)
    dv = contract("ij,jk->ik", v, scale(frame, p, gap_inverse(w, nb)), nb)
    frame = shape_of(dw)[nb + 1:]
    return concatenate([reshape(dw, shape_of(a)[:nb] + (1, n) + frame), dv], nb)


eigh_p = Primitive("eigh", impl=_eigh_impl, shape=_eigh_shape, jvp=_eigh_jvp, kind="matrix",
                   numpy_only=True)


def eigh(a, uplo: str = "L"):
    """Packed ``(w, V)`` of a symmetric matrix read from its ``uplo`` triangle."""
    return eigh_p(a, uplo=uplo)


# ---- svd (thin), packed, and singular values alone ---------------------------------------------

def _svd_impl(a):
    u, s, vh = np.linalg.svd(np.asarray(a, dtype=np.float64), full_matrices=False)
    return np.concatenate([u, s[..., None, :], np.swapaxes(vh, -1, -2)], axis=-2)


def _svd_shape(a: Slot) -> Slot:
    if a.ndim < 2:
        raise ValueError(f"svd: expected a stack of matrices (..., m, n), got shape {a.shape}")
    m, n = a.shape[-2:]
    return Slot(a.shape[:-2] + (m + 1 + n, min(m, n)), "float64")


def _svd_parts(packed: Any, nb: int, m: int, n: int):
    k = min(m, n)
    u = rows(packed, nb, 0, m)
    s = reshape(rows(packed, nb, m, m + 1), shape_of(packed)[:nb] + (k,))
    v = rows(packed, nb, m + 1, m + 1 + n)
    return u, s, v


def _svd_jvp(frame, primals, tangents, out):
    (a,), (ta,) = primals, tangents
    nb = _nb(a)
    batch, (m, n) = shape_of(a)[:nb], shape_of(a)[nb:]
    k = min(m, n)
    u, s, v = _svd_parts(out, nb, m, n)
    dav = contract("ij,jk->ik", ta, v, nb)           # dA V
    p = contract("ji,jk->ik", u, dav, nb)            # U^T dA V
    ds = diag_part(p, nb)
    s_row, s_col = reshape(s, batch + (1, k)), reshape(s, batch + (k, 1))
    f = gap_inverse(s, nb, squared=True)             # 1 / (s_j² - s_i²)
    ps = scale(frame, p, s_row)                             # P S
    sp = scale(frame, p, s_col)                             # S P
    du = contract("ij,jk->ik", u, scale(frame, add(ps, swap(ps, nb)), f), nb)
    dv = contract("ij,jk->ik", v, scale(frame, add(sp, swap(sp, nb)), f), nb)
    if m > k:  # the part of dA V outside span(U)
        du = add(du, div(sub(dav, contract("ij,jk->ik", u, p, nb)), _lift_row(s_row, dav, nb)))
    if n > k:
        dau = contract("ji,jk->ik", ta, u, nb)       # dA^T U
        dv = add(dv, div(sub(dau, contract("ij,kj->ik", v, p, nb)), _lift_row(s_row, dau, nb)))
    frame = shape_of(ds)[nb + 1:]
    return concatenate([du, reshape(ds, batch + (1, k) + frame), dv], nb)


def _lift_row(s_row: Any, t: Any, nb: int) -> Any:
    """``s_row`` shaped to broadcast against ``t`` (one more trailing axis for a frame)."""
    extra = len(shape_of(t)) - nb - 2
    return reshape(s_row, shape_of(s_row) + (1,) * extra)


svd_p = Primitive("svd", impl=_svd_impl, shape=_svd_shape, jvp=_svd_jvp, kind="matrix",
                  numpy_only=True)


def _svdvals_shape(a: Slot) -> Slot:
    if a.ndim < 2:
        raise ValueError(f"svdvals: expected a stack of matrices (..., m, n), got shape {a.shape}")
    return Slot(a.shape[:-2] + (min(a.shape[-2:]),), "float64")


def _svdvals_jvp(frame, primals, tangents, out):
    (a,), (ta,) = primals, tangents
    nb = _nb(a)
    m, n = shape_of(a)[nb:]
    u, _, v = _svd_parts(svd(a), nb, m, n)
    return contract("ij,ij->j", u, contract("ij,jk->ik", ta, v, nb), nb)  # diag(U^T dA V)


svdvals_p = Primitive("svdvals",
                      impl=lambda a: np.linalg.svd(np.asarray(a, dtype=float), compute_uv=False),
                      shape=_svdvals_shape, jvp=_svdvals_jvp, kind="matrix", numpy_only=True)


def svd(a):
    """Packed thin SVD ``(U, s, V)`` (see the module docstring)."""
    return svd_p(a)


def svdvals(a):
    """Singular values, descending."""
    return svdvals_p(a)


# ---- qr (reduced), packed ------------------------------------------------------------------------

def _qr_impl(a):
    q, r = np.linalg.qr(np.asarray(a, dtype=np.float64), mode="reduced")
    return np.concatenate([q, np.swapaxes(r, -1, -2)], axis=-2)


def _qr_shape(a: Slot) -> Slot:
    if a.ndim < 2:
        raise ValueError(f"qr: expected a stack of matrices (..., m, n), got shape {a.shape}")
    m, n = a.shape[-2:]
    return Slot(a.shape[:-2] + (m + n, min(m, n)), "float64")


def _qr_jvp(frame, primals, tangents, out):
    (a,), (ta,) = primals, tangents
    nb = _nb(a)
    m, n = shape_of(a)[nb:]
    if m < n:
        raise NotImplementedError(f"the derivative of qr is implemented for m >= n (tall or "
                                  f"square matrices), got shape {(m, n)}")
    q = rows(out, nb, 0, m)
    r = swap(rows(out, nb, m, m + n), nb)
    # dA = dQ R + Q dR. With Y = dA R^{-1} and C = Q^T Y = Q^T dQ + dR R^{-1}: Q^T dQ is
    # skew-symmetric and dR R^{-1} upper triangular, so Ω = Q^T dQ is C's strict lower part
    # minus its transpose, dR = (C - Ω) R and dQ = Y - Q (C - Ω).
    y = swap(triangular_solve(r, swap(ta, nb), lower=False, trans=True), nb)
    c = contract("ji,jk->ik", q, y, nb)
    low = scale(frame, c, triangle_mask(n, lower=True, strict=True))
    c_minus_omega = sub(c, sub(low, swap(low, nb)))
    dq = sub(y, contract("ij,jk->ik", q, c_minus_omega, nb))
    dr = contract("ij,jk->ik", c_minus_omega, r, nb)
    return concatenate([dq, swap(dr, nb)], nb)


qr_p = Primitive("qr", impl=_qr_impl, shape=_qr_shape, jvp=_qr_jvp, kind="matrix",
                 numpy_only=True)


def qr(a):
    """Packed reduced QR ``(Q, R^T)`` (see the module docstring)."""
    return qr_p(a)


# ---- pinv ----------------------------------------------------------------------------------------

def _pinv_impl(a, *, options):
    return np.linalg.pinv(np.asarray(a, dtype=np.float64), **dict(options))


def _pinv_shape(a: Slot, *, options) -> Slot:
    if a.ndim < 2:
        raise ValueError(f"pinv: expected a stack of matrices (..., m, n), got shape {a.shape}")
    return Slot(a.shape[:-2] + (a.shape[-1], a.shape[-2]), "float64")


def _pinv_jvp(frame, primals, tangents, out, *, options):
    (a,), (ta,) = primals, tangents
    nb = _nb(a)
    batch, (m, n) = shape_of(a)[:nb], shape_of(a)[nb:]
    p = out
    # Golub & Pereyra (1973), the derivative at constant rank:
    # dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P
    dat = swap(ta, nb)
    first = contract("ij,jk->ik", p, contract("ij,jk->ik", ta, p, nb), nb)
    left_null = sub(eye(m, batch, a), contract("ij,jk->ik", a, p, nb))
    right_null = sub(eye(n, batch, a), contract("ij,jk->ik", p, a, nb))
    ppt = contract("ij,kj->ik", p, p, nb)
    ptp = contract("ji,jk->ik", p, p, nb)
    second = contract("ij,jk->ik", ppt, contract("ij,jk->ik", dat, left_null, nb), nb)
    third = contract("ij,jk->ik", right_null, contract("ij,jk->ik", dat, ptp, nb), nb)
    return add(sub(second, first), third)


pinv_p = Primitive("pinv", impl=_pinv_impl, shape=_pinv_shape, jvp=_pinv_jvp, kind="matrix",
                   numpy_only=True)


def pinv(a, **options):
    """NumPy's pseudo-inverse (``rcond`` / ``rtol`` / ``hermitian`` passed through)."""
    return pinv_p(a, options=tuple(sorted(options.items())))


# ---- log |det A| and the sign of det A -----------------------------------------------------------

def _det_shape(a: Slot) -> Slot:
    return Slot(_check_square(a, "slogdet"), "float64")


def _logabsdet_jvp(frame, primals, tangents, out):
    (a,), (ta,) = primals, tangents
    nb, n = _nb(a), shape_of(a)[-1]
    # d log|det A| = trace(A^{-1} dA) = sum(A^{-T} * dA); A^{-T} is known once per point.
    inv_t = swap(solve(a, eye(n, shape_of(a)[:nb], a)), nb)
    return contract("ij,ij->", inv_t, ta, nb)


logabsdet_p = Primitive(
    "logabsdet", impl=lambda a: np.linalg.slogdet(np.asarray(a, dtype=float))[1],
    shape=_det_shape, jvp=_logabsdet_jvp, kind="matrix", numpy_only=True)

det_sign_p = Primitive(
    "det_sign", impl=lambda a: np.linalg.slogdet(np.asarray(a, dtype=float))[0],
    shape=_det_shape, jvp=lambda frame, p, t, out: None, kind="matrix",
    numpy_only=True)  # piecewise constant


def logabsdet(a):
    return logabsdet_p(a)


def det_sign(a):
    return det_sign_p(a)


__all__ = ["solve", "triangular_solve", "cholesky", "eigh", "svd", "svdvals", "qr", "pinv",
           "logabsdet", "det_sign", "contract", "swap", "rows", "eye", "triangle_mask"]
