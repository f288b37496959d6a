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

One CG or Lanczos iteration's vector work is one function call
(:func:`truncated_cg_step`, :func:`steihaug_step`, :func:`lanczos_step`): for large
vectors one compiled call making the dot product, the updates and the next direction
in the fewest passes over memory the recurrence allows; for small ones the same BLAS
calls as the separate kernels (measured here: 60-130 ns each, while a compiled call
taking six arrays and returning a tuple costs about 0.9 µs), so small iterates are
those of the separate kernels bit for bit, large ones to rounding.
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
# A fused kernel is compiled without fastmath and calls the fastmath loops above for its
# sums: with "reassoc" on the whole kernel LLVM rewrote (rr_new / rr) * d[i] as
# rr_new * d[i] / rr. Inlined, a sum may still be grouped differently from the separate
# loop's (measured: equal in the last bit on some vectors, not on others), so large
# iterates agree with the unfused loops' to rounding, not bit for bit.

#: outcomes of :func:`steihaug_step`
CONTINUE, NOT_POSITIVE, OUTSIDE, CONVERGED = 0, 1, 2, 3

# the fastmath loops the fused kernels call, set by _compiled_step before they compile
_dot_jit: Any = None
_update_jit: Any = None
_first_update_jit: Any = None
_lanczos_jit: Any = None
_direction_jit: Any = None  # compiled without fastmath, as the kernels


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


def _direction(beta: float, d: np.ndarray, r: np.ndarray, out: np.ndarray) -> None:
    for i in range(d.size):
        out[i] = beta * d[i] - r[i]


def _truncated_cg_loop(d: np.ndarray, bd: np.ndarray, z: np.ndarray, r: np.ndarray,
                       g: np.ndarray, rr: float, first: bool) -> tuple[float, float, float]:
    curv = _dot_jit(d, bd)
    if not (curv > 0.0 and curv < math.inf):
        return curv, math.nan, math.nan
    alpha = rr / curv
    if first:
        rr_new, r1 = _first_update_jit(alpha, d, bd, g, z, r)
    else:
        rr_new, r1 = _update_jit(alpha, d, bd, z, r)
    _direction_jit(rr_new / rr, d, r, d)
    return curv, rr_new, r1


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
        return _compiled_step(_truncated_cg_loop)(d, bd, z, r, g, rr, first)
    curv = float(_ddot(d, bd))
    if not (curv > 0.0 and curv < math.inf):
        return curv, math.nan, math.nan
    alpha = rr / curv
    if first:
        z.fill(0.0)
        np.copyto(r, g)
    rr_new, r1 = cg_update(alpha, d, bd, z, r, l1=True)
    scal_sub(rr_new / rr, d, r)
    return curv, rr_new, r1


def _steihaug_loop(d: np.ndarray, bd: np.ndarray, z: np.ndarray, r: np.ndarray,
                   g: np.ndarray, d_next: np.ndarray, rr: float, zz: float, zd: float,
                   dd: float, r2: float, tol2: float, first: bool
                   ) -> tuple[int, float, float, float, float]:
    curv = _dot_jit(d, bd)
    if not (curv > 0.0 and curv < math.inf):  # nan and inf too: the caller tells them apart
        return NOT_POSITIVE, curv, 0.0, 0.0, 0.0
    alpha = rr / curv
    end_sq = zz + alpha * (2.0 * zd + alpha * dd)
    if end_sq >= r2:
        return OUTSIDE, curv, alpha, end_sq, 0.0
    if first:
        rr_new = _first_update_jit(alpha, d, bd, g, z, r)[0]
    else:
        rr_new = _update_jit(alpha, d, bd, z, r)[0]
    if rr_new <= tol2:
        return CONVERGED, curv, alpha, end_sq, rr_new
    _direction_jit(rr_new / rr, d, r, d_next)
    return CONTINUE, curv, alpha, end_sq, rr_new


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
    if d.size >= SERIAL_FROM:
        return _compiled_step(_steihaug_loop)(d, bd, z, r, g, d_next, rr, zz, zd, dd, r2,
                                              tol2, first)
    curv = float(_ddot(d, bd))
    if not (curv > 0.0 and curv < math.inf):
        return NOT_POSITIVE, curv, 0.0, 0.0, 0.0
    alpha = rr / curv
    end_sq = zz + alpha * (2.0 * zd + alpha * dd)
    if end_sq >= r2:
        return OUTSIDE, curv, alpha, end_sq, 0.0
    if first:
        z.fill(0.0)
        np.copyto(r, g)
    rr_new = cg_update(alpha, d, bd, z, r)[0]
    if rr_new <= tol2:
        return CONVERGED, curv, alpha, end_sq, rr_new
    scal_sub(rr_new / rr, d, r, out=d_next)
    return CONTINUE, curv, alpha, end_sq, rr_new


def _lanczos_step_loop(q: np.ndarray, w: np.ndarray, q_prev: np.ndarray,
                       gamma: float) -> tuple[float, float]:
    delta = _dot_jit(q, w)
    return delta, _lanczos_jit(w, delta, q, gamma, q_prev)


def lanczos_step(q: np.ndarray, w: np.ndarray, q_prev: Any, gamma: float
                 ) -> tuple[float, float]:
    """After ``w = H q``: ``δ = q @ w``, then ``w -= δ q + γ q_prev`` in place.

    ``q_prev`` None (the first step): ``w -= δ q``. Returns ``δ`` and ``w @ w``.
    """
    if w.size < SERIAL_FROM:
        delta = float(_ddot(q, w))
        return delta, lanczos_orthogonalise(w, delta, q, gamma, q_prev)
    if q_prev is None:
        q_prev, gamma = q, 0.0
    return _compiled_step(_lanczos_step_loop)(q, w, q_prev, gamma)


def _line_dots_loop(z: np.ndarray, d: np.ndarray) -> tuple[float, float, float]:
    return _dot_jit(z, z), _dot_jit(z, d), _dot_jit(d, d)


def line_dots(z: np.ndarray, d: np.ndarray) -> tuple[float, float, float]:
    """``z @ z``, ``z @ d`` and ``d @ d`` (one call)."""
    if z.size < SERIAL_FROM:
        return float(_ddot(z, z)), float(_ddot(z, d)), float(_ddot(d, d))
    return _compiled_step(_line_dots_loop)(z, d)


def _combine_rows_loop(h: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    for i in range(out.size):
        out[i] = 0.0
    for j in range(h.size):  # row by row, the order of a sequence of axpys
        hj = h[j]
        for i in range(out.size):
            out[i] += hj * rows[j, i]


def combine_rows(h: np.ndarray, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = h @ rows[:h.size]`` (large: serially, row by row); returns ``out``."""
    if out.size < SERIAL_FROM:
        return np.matmul(h, rows[: h.size], out=out)
    _compiled_step(_combine_rows_loop)(h, rows, out)
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
    _compiled_step(_along_loop)(z, t, d, out)
    return out


@functools.cache
def _compiled_step(loop: Callable) -> Callable:
    import numba

    global _dot_jit, _update_jit, _first_update_jit, _lanczos_jit, _direction_jit
    _dot_jit, _update_jit = _compiled(_dot_loop), _compiled(_cg_update_loop)
    _first_update_jit, _lanczos_jit = _compiled(_first_update_loop), _compiled(_lanczos_loop)
    # no fastmath (see above); error_model "numpy": a division by zero gives inf or nan,
    # not an exception (the callers test the results for finiteness)
    plain = numba.njit(cache=True, nogil=True, error_model="numpy")
    _direction_jit = _direction_jit or plain(_direction)
    return plain(loop)
