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
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np
from scipy.linalg import blas

__all__ = ["axpy", "scal", "scal_sub", "dot", "asum", "norm", "cg_update",
           "lanczos_orthogonalise", "SERIAL_FROM"]

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
