"""Vector kernels for the inner loops: in place, no temporaries, no BLAS threads when large.

At n = 10^4 a temporary costs about as much as three BLAS calls, so the CG and
Lanczos loops update their vectors in place with these helpers, and the updates
one iteration makes are fused into one pass over memory where they can be
(:func:`cg_update`, :func:`lanczos_orthogonalise`).

Small vectors go to BLAS (level 1 runs on one thread below ten thousand entries).
Large ones go to serial loops compiled by numba: OpenBLAS starts its threads for
``ddot`` and ``daxpy`` above that size, and a level-1 operation is bound by memory
bandwidth, so the threads gain nothing, while every call waits for all of them.
On a machine whose cores are busy with other processes that wait is a scheduler
time slice: measured at n = 65536 on two loaded cores, ``a @ b`` took 5 µs at the
median and 1.2 ms on average, and trust-ncg on minimal-surface spent 160 ms per
Hessian-vector product (0.19 ms in the product itself) until its loop stopped
calling threaded BLAS.

One CG or Lanczos iteration's vector work is one function
(:func:`truncated_cg_step`, :func:`steihaug_step`, :func:`lanczos_step`) making the
calls the separate kernels made, so the iterates are theirs bit for bit at every
size, and the first CG iteration starts from ``z = 0``, ``r = g`` without a pass
zeroing ``z`` or copying ``g``. (At small sizes the BLAS calls cost 60-130 ns each; a
compiled call taking six arrays and returning a tuple costs about 0.9 µs.)
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np
from scipy.linalg import blas

__all__ = ["axpy", "scal", "scal_sub", "dot", "asum", "norm", "cg_update",
           "lanczos_orthogonalise", "SERIAL_FROM", "truncated_cg_step", "steihaug_step",
           "lanczos_step", "line_dots", "combine_rows", "along", "CONTINUE", "NOT_POSITIVE",
           "OUTSIDE", "CONVERGED"]

_daxpy = blas.daxpy
_dscal = blas.dscal
_ddot = blas.ddot
_dasum = blas.dasum

#: From this many entries the kernels below run as serial compiled loops instead of
#: BLAS calls (OpenBLAS threads level 1 from 10 000 entries).
SERIAL_FROM = 8192


# ---- the serial loops (compiled on first use with a large vector) ---------------------------
# fastmath "reassoc" lets LLVM vectorise the sums (the order of summation changes, as
# it does between BLAS builds); no flag that assumes finite values, so nan and inf
# propagate as the solvers' finiteness tests expect.

def _axpy_loop(a: float, x: np.ndarray, y: np.ndarray) -> None:
    for i in range(x.size):
        y[i] += a * x[i]


def _scal_loop(a: float, x: np.ndarray) -> None:
    for i in range(x.size):
        x[i] *= a


def _scal_sub_loop(beta: float, d: np.ndarray, r: np.ndarray, out: np.ndarray) -> None:
    for i in range(d.size):
        out[i] = beta * d[i] - r[i]


def _dot_loop(x: np.ndarray, y: np.ndarray) -> float:
    s = 0.0
    for i in range(x.size):
        s += x[i] * y[i]
    return s


def _asum_loop(x: np.ndarray) -> float:
    s = 0.0
    for i in range(x.size):
        s += abs(x[i])
    return s


def _cg_update_loop(alpha: float, d: np.ndarray, hd: np.ndarray, z: np.ndarray,
                    r: np.ndarray) -> tuple[float, float]:
    rr = 0.0
    r1 = 0.0
    for i in range(d.size):
        z[i] += alpha * d[i]
        ri = r[i] + alpha * hd[i]
        r[i] = ri
        rr += ri * ri
        r1 += abs(ri)
    return rr, r1


def _lanczos_loop(w: np.ndarray, delta: float, q: np.ndarray, gamma: float,
                  q_prev: np.ndarray) -> float:
    ww = 0.0
    for i in range(w.size):
        wi = w[i] - delta * q[i] - gamma * q_prev[i]
        w[i] = wi
        ww += wi * wi
    return ww


@functools.cache
def _compiled(loop: Callable) -> Callable:
    import numba

    return numba.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz"})(loop)


# ---- the kernels ------------------------------------------------------------------------------

def axpy(a: float, x: np.ndarray, y: np.ndarray) -> None:
    """``y += a * x`` in place (``y`` contiguous float64)."""
    if y.size < SERIAL_FROM:
        _daxpy(x, y, a=a)
    else:
        _compiled(_axpy_loop)(a, x, y)


def scal(a: float, x: np.ndarray) -> None:
    """``x *= a`` in place."""
    if x.size < SERIAL_FROM:
        _dscal(a, x)
    else:
        _compiled(_scal_loop)(a, x)


def scal_sub(beta: float, d: np.ndarray, r: np.ndarray, out: np.ndarray | None = None) -> None:
    """``out = beta * d - r`` (``out`` is ``d`` unless given): the CG direction update."""
    if out is None:
        out = d
    if d.size < SERIAL_FROM:
        if out is not d:
            np.multiply(d, beta, out=out)
        else:
            _dscal(beta, d)
        _daxpy(r, out, a=-1.0)
    else:
        _compiled(_scal_sub_loop)(beta, d, r, out)


def dot(x: np.ndarray, y: np.ndarray) -> float:
    """``x @ y`` of two 1-D float64 vectors, as a Python float."""
    if x.size < SERIAL_FROM:
        return float(_ddot(x, y))
    return float(_compiled(_dot_loop)(x, y))


def norm(x: np.ndarray) -> float:
    """The Euclidean norm of a 1-D float64 vector (``sqrt(x @ x)``, as the solvers use it)."""
    return math.sqrt(dot(x, x))


def asum(x: np.ndarray) -> float:
    """``sum(|x|)``, the 1-norm."""
    if x.size < SERIAL_FROM:
        return float(_dasum(x))
    return float(_compiled(_asum_loop)(x))


def cg_update(alpha: float, d: np.ndarray, hd: np.ndarray, z: np.ndarray,
              r: np.ndarray, l1: bool = False) -> tuple[float, float]:
    """One CG iterate update in one pass: ``z += α d``, ``r += α H d``.

    Returns
    -------
    rr, r1 : float
        ``r @ r`` and, with ``l1`` (or when free: large vectors), ``sum(|r|)`` of the
        updated residual; else ``r1`` is nan.
    """
    if d.size < SERIAL_FROM:
        _daxpy(d, z, a=alpha)
        _daxpy(hd, r, a=alpha)
        return float(_ddot(r, r)), float(_dasum(r)) if l1 else math.nan
    rr, r1 = _compiled(_cg_update_loop)(alpha, d, hd, z, r)
    return float(rr), float(r1)


def lanczos_orthogonalise(w: np.ndarray, delta: float, q: np.ndarray, gamma: float,
                          q_prev: Any) -> float:
    """``w -= δ q + γ q_prev`` in place (the three-term recurrence); returns ``w @ w``.

    ``q_prev`` None (the first step): ``w -= δ q``.
    """
    if w.size < SERIAL_FROM:
        _daxpy(q, w, a=-delta)
        if q_prev is not None:
            _daxpy(q_prev, w, a=-gamma)
        return float(_ddot(w, w))
    if q_prev is None:
        q_prev, gamma = q, 0.0
    return float(_compiled(_lanczos_loop)(w, delta, q, gamma, q_prev))


# ---- one iteration per call --------------------------------------------------------------------
# Large vectors: the serial loops above, called one after the other with the scalar work
# between them in Python, exactly as the separate kernels were. Fusing them into one
# compiled function that calls them was tried and dropped: the inlined sums were grouped
# differently depending on whether the called loop had been compiled in the process or
# loaded from numba's cache, so iterates changed in the last bit from run to run; and
# with "reassoc" on the whole function LLVM rewrote (rr_new / rr) * d[i] as
# rr_new * d[i] / rr. A call costs about 0.5 µs, a pass over 65536 entries 7-20 µs.

#: outcomes of :func:`steihaug_step`
CONTINUE, NOT_POSITIVE, OUTSIDE, CONVERGED = 0, 1, 2, 3


def _first_update_loop(alpha: float, d: np.ndarray, hd: np.ndarray, g: np.ndarray,
                       z: np.ndarray, r: np.ndarray) -> tuple[float, float]:
    # _cg_update_loop from z = 0, r = g: no zeroed z, no copy of g
    rr = 0.0
    r1 = 0.0
    for i in range(d.size):
        z[i] = alpha * d[i]
        ri = g[i] + alpha * hd[i]
        r[i] = ri
        rr += ri * ri
        r1 += abs(ri)
    return rr, r1


def _cg_iterate_large(alpha: float, d: np.ndarray, bd: np.ndarray, z: np.ndarray,
                      r: np.ndarray, g: np.ndarray, first: bool) -> tuple[float, float]:
    """``z += α d``, ``r += α H d`` (``first``: from ``z = 0``, ``r = g``) on vectors of
    ``SERIAL_FROM`` entries or more: ``r @ r`` and ``sum(|r|)``. (Small vectors make the
    same updates with inline BLAS calls in the callers: a call here costs more than
    their update.)"""
    if first:
        rr, r1 = _compiled(_first_update_loop)(alpha, d, bd, g, z, r)
        return float(rr), float(r1)
    return cg_update(alpha, d, bd, z, r)


def truncated_cg_step(d: np.ndarray, bd: np.ndarray, z: np.ndarray, r: np.ndarray,
                      g: np.ndarray, rr: float, first: bool) -> tuple[float, float, float]:
    """One iteration of truncated CG (newton-cg) after the product ``bd = H d``.

    ``curv = d @ bd``; when ``0 < curv < inf``: ``α = rr / curv``, ``z += α d``,
    ``r += α H d`` (with ``first``: ``z = α d`` and ``r = g + α H d``, so neither needs
    setting up) and ``d = β d - r`` with ``β = r @ r / rr``, in place.

    Returns
    -------
    curv, rr_new, r1 : float
        ``d @ H d`` and, after the update, ``r @ r`` and ``sum(|r|)`` (nan when ``curv``
        is not positive and finite: then nothing was updated).
    """
    if d.size >= SERIAL_FROM:
        curv = float(_compiled(_dot_loop)(d, bd))
        if not (curv > 0.0 and curv < math.inf):
            return curv, math.nan, math.nan
        rr_new, r1 = _cg_iterate_large(rr / curv, d, bd, z, r, g, first)
        _compiled(_scal_sub_loop)(rr_new / rr, d, r, d)
        return curv, rr_new, r1
    curv = float(_ddot(d, bd))  # the BLAS calls of dot, cg_update and scal_sub, inline
    if not (curv > 0.0 and curv < math.inf):
        return curv, math.nan, math.nan
    alpha = rr / curv
    if first:
        z.fill(0.0)
        np.copyto(r, g)
    _daxpy(d, z, a=alpha)
    _daxpy(bd, r, a=alpha)
    rr_new = float(_ddot(r, r))
    _dscal(rr_new / rr, d)
    _daxpy(r, d, a=-1.0)
    return curv, rr_new, float(_dasum(r))


def steihaug_step(d: np.ndarray, bd: np.ndarray, z: np.ndarray, r: np.ndarray,
                  g: np.ndarray, d_next: np.ndarray, rr: float, zz: float, zd: float,
                  dd: float, r2: float, tol2: float, first: bool
                  ) -> tuple[int, float, float, float, float]:
    """One iteration of Steihaug's CG after the product ``bd = H d``.

    ``curv = d @ bd``; unless it is not positive and finite: ``α = rr / curv`` and the
    squared norm ``end_sq = zz + α (2 zd + α dd)`` of ``z + α d``; unless that reaches
    ``r2``: ``z += α d``, ``r += α H d`` (with ``first`` from ``z = 0``, ``r = g``),
    and unless ``r @ r <= tol2``: ``d_next = β d - r`` (``d_next`` may be ``d``).

    Returns
    -------
    outcome : int
        :data:`CONTINUE`, :data:`NOT_POSITIVE` (also nan or inf; nothing updated),
        :data:`OUTSIDE` (nothing updated) or :data:`CONVERGED` (no new direction).
    curv, alpha, end_sq, rr_new : float
        As far as computed (0 beyond).
    """
    large = d.size >= SERIAL_FROM
    curv = float(_compiled(_dot_loop)(d, bd) if large else _ddot(d, bd))
    if not (curv > 0.0 and curv < math.inf):
        return NOT_POSITIVE, curv, 0.0, 0.0, 0.0
    alpha = rr / curv
    end_sq = zz + alpha * (2.0 * zd + alpha * dd)
    if end_sq >= r2:
        return OUTSIDE, curv, alpha, end_sq, 0.0
    if large:
        rr_new = _cg_iterate_large(alpha, d, bd, z, r, g, first)[0]
    else:  # the BLAS calls of cg_update, inline
        if first:
            z.fill(0.0)
            np.copyto(r, g)
        _daxpy(d, z, a=alpha)
        _daxpy(bd, r, a=alpha)
        rr_new = float(_ddot(r, r))
    if rr_new <= tol2:
        return CONVERGED, curv, alpha, end_sq, rr_new
    scal_sub(rr_new / rr, d, r, out=d_next)
    return CONTINUE, curv, alpha, end_sq, rr_new


def lanczos_step(q: np.ndarray, w: np.ndarray, q_prev: Any, gamma: float
                 ) -> tuple[float, float]:
    """After ``w = H q``: ``δ = q @ w``, then ``w -= δ q + γ q_prev`` in place.

    ``q_prev`` None (the first step): ``w -= δ q``. Returns ``δ`` and ``w @ w``.
    """
    delta = dot(q, w)
    return delta, lanczos_orthogonalise(w, delta, q, gamma, q_prev)


def line_dots(z: np.ndarray, d: np.ndarray) -> tuple[float, float, float]:
    """``z @ z``, ``z @ d`` and ``d @ d``."""
    return dot(z, z), dot(z, d), dot(d, d)


def _scaled_loop(a: float, x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = a * x[i]


def _first_four_rows_loop(h0: float, q0: np.ndarray, h1: float, q1: np.ndarray, h2: float,
                          q2: np.ndarray, h3: float, q3: np.ndarray, out: np.ndarray) -> None:
    for i in range(out.size):
        out[i] = ((h0 * q0[i] + h1 * q1[i]) + h2 * q2[i]) + h3 * q3[i]


def _four_rows_loop(h0: float, q0: np.ndarray, h1: float, q1: np.ndarray, h2: float,
                    q2: np.ndarray, h3: float, q3: np.ndarray, out: np.ndarray) -> None:
    for i in range(out.size):
        out[i] = (((out[i] + h0 * q0[i]) + h1 * q1[i]) + h2 * q2[i]) + h3 * q3[i]


@functools.cache
def _in_order(loop: Callable) -> Callable:
    """``loop`` compiled without "reassoc": its sums are added in the order written."""
    import numba

    return numba.njit(cache=True, nogil=True)(loop)


def combine_rows(h: np.ndarray, rows: Any, out: np.ndarray) -> np.ndarray:
    """``out = h @ rows[:h.size]`` for a 2-D array or a :class:`~.scratch.Rows` of
    vectors; returns ``out``.

    Large vectors: serial compiled loops taking four rows per pass over ``out`` (the
    basis does not fit in cache, so each pass reads ``out`` back from memory: a pass per
    row cost as much as the Lanczos steps' own vector work). The terms are added in the
    order of a sequence of axpys from 0, row by row, so the sums are theirs bit for bit.
    """
    k = h.size
    if out.size < SERIAL_FROM:
        block = rows[:k] if isinstance(rows, np.ndarray) else rows.stacked(k)
        return np.matmul(h, block, out=out)
    c = [float(v) for v in h]
    j = 0
    if k >= 4:
        _in_order(_first_four_rows_loop)(c[0], rows[0], c[1], rows[1], c[2], rows[2],
                                         c[3], rows[3], out)
        j = 4
        four = _in_order(_four_rows_loop)
        while j + 4 <= k:
            four(c[j], rows[j], c[j + 1], rows[j + 1], c[j + 2], rows[j + 2],
                 c[j + 3], rows[j + 3], out)
            j += 4
    else:
        _compiled(_scaled_loop)(c[0], rows[0], out)  # 0 + h0 q0, without zeroing out
        j = 1
    axpy_loop = _compiled(_axpy_loop)
    for i in range(j, k):
        axpy_loop(c[i], rows[i], out)
    return out


def _along_loop(z: np.ndarray, t: float, d: np.ndarray, out: np.ndarray) -> None:
    for i in range(z.size):
        out[i] = z[i] + t * d[i]


def along(z: np.ndarray, t: float, d: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = z + t d`` (large: in one pass); returns ``out``."""
    if z.size < SERIAL_FROM:
        np.copyto(out, z)
        _daxpy(d, out, a=t)
        return out
    _compiled(_along_loop)(z, t, d, out)
    return out
