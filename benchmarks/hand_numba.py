"""Hand-written, hand-fused numba kernels: the baseline newtonad's engine is held to.

Each problem has its value, value+gradient, HVP-frame and linearised-HVP kernels
written out by hand with the derivatives worked on paper: one pass over the data,
frame columns innermost, outputs preallocated by the caller. ``benchmarks/compare.py``
checks them against newtonad's results before timing them.

Problems (same definitions as in ``compare.py``):

* chained Rosenbrock ``sum(100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2)``; its Hessian is
  tridiagonal;
* L2 logistic regression ``sum(log(1 + exp(-y * (X w)))) + lam/2 w.w``;
* minimal surface ``sum(sqrt(1 + (h a)^2 + (h b)^2))`` over the cells of a grid, with
  ``a``, ``b`` the forward differences of ``u`` along the two axes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

FLAGS = dict(cache=True, nogil=True, error_model="numpy",
             fastmath={"contract", "reassoc", "nsz", "arcp"})


# ---- chained Rosenbrock ---------------------------------------------------------------------

@njit(**FLAGS)
def rosen_value(x):
    f = 0.0
    for i in range(x.size - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        f += 100.0 * a * a + b * b
    return f


@njit(**FLAGS)
def rosen_value_and_grad(x, g):
    """One pass; the gradient in gather form (no loop-carried dependence)."""
    n = x.size
    f = 0.0
    for i in range(n - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        f += 100.0 * a * a + b * b
    g[0] = -400.0 * x[0] * (x[1] - x[0] * x[0]) - 2.0 * (1.0 - x[0])
    for i in range(1, n - 1):
        a = x[i + 1] - x[i] * x[i]
        g[i] = -400.0 * x[i] * a - 2.0 * (1.0 - x[i]) + 200.0 * (x[i] - x[i - 1] * x[i - 1])
    g[n - 1] = 200.0 * (x[n - 1] - x[n - 2] * x[n - 2])
    return f


@njit(**FLAGS)
def _rosen_hvp_row(x, V, out, i, n):
    k = V.shape[1]
    d = 0.0
    if i < n - 1:
        d += 1200.0 * x[i] * x[i] - 400.0 * x[i + 1] + 2.0
    if i > 0:
        d += 200.0
    for c in range(k):
        s = d * V[i, c]
        if i < n - 1:
            s -= 400.0 * x[i] * V[i + 1, c]
        if i > 0:
            s -= 400.0 * x[i - 1] * V[i - 1, c]
        out[i, c] = s


@njit(**FLAGS)
def rosen_hvp(x, V, out):
    """``H V`` for a frame ``V`` of shape (n, k): H is tridiagonal."""
    n, k = V.shape
    _rosen_hvp_row(x, V, out, 0, n)
    for i in range(1, n - 1):
        d = 1200.0 * x[i] * x[i] - 400.0 * x[i + 1] + 202.0
        up = -400.0 * x[i]
        lo = -400.0 * x[i - 1]
        for c in range(k):
            out[i, c] = d * V[i, c] + up * V[i + 1, c] + lo * V[i - 1, c]
    if n > 1:
        _rosen_hvp_row(x, V, out, n - 1, n)


@njit(**FLAGS)
def rosen_linearize(x, diag, off):
    """The residuals of the linearised HVP: the Hessian's diagonals."""
    n = x.size
    for i in range(n):
        d = 0.0
        if i < n - 1:
            d += 1200.0 * x[i] * x[i] - 400.0 * x[i + 1] + 2.0
            off[i] = -400.0 * x[i]
        if i > 0:
            d += 200.0
        diag[i] = d


@njit(**FLAGS)
def rosen_linear_apply(diag, off, V, out):
    n, k = V.shape
    for c in range(k):
        out[0, c] = diag[0] * V[0, c] + (off[0] * V[1, c] if n > 1 else 0.0)
    for i in range(1, n - 1):
        for c in range(k):
            out[i, c] = diag[i] * V[i, c] + off[i] * V[i + 1, c] + off[i - 1] * V[i - 1, c]
    if n > 1:
        for c in range(k):
            out[n - 1, c] = diag[n - 1] * V[n - 1, c] + off[n - 2] * V[n - 2, c]


# ---- logistic regression -------------------------------------------------------------------

@njit(**FLAGS)
def _softplus(t):
    return t + np.log1p(np.exp(-t)) if t > 0 else np.log1p(np.exp(t))


@njit(**FLAGS)
def logistic_value(w, X, y, lam):
    z = X @ w
    f = 0.0
    for i in range(z.size):
        f += _softplus(-y[i] * z[i])
    return f + 0.5 * lam * np.dot(w, w)


@njit(**FLAGS)
def logistic_value_and_grad(w, X, y, lam, g):
    z = X @ w
    f = 0.0
    r = np.empty_like(z)
    for i in range(z.size):
        t = -y[i] * z[i]
        f += _softplus(t)
        r[i] = -y[i] / (1.0 + np.exp(-t))
    g[:] = X.T @ r + lam * w
    return f + 0.5 * lam * np.dot(w, w)


@njit(**FLAGS)
def logistic_linearize(w, X, y, d):
    z = X @ w
    for i in range(z.size):
        s = 1.0 / (1.0 + np.exp(y[i] * z[i]))
        d[i] = y[i] * y[i] * s * (1.0 - s)


@njit(**FLAGS)
def logistic_linear_apply(d, X, lam, V, out):
    XV = X @ V
    for i in range(XV.shape[0]):
        for c in range(XV.shape[1]):
            XV[i, c] *= d[i]
    out[:, :] = X.T @ XV + lam * V


def logistic_hvp(w, X, y, lam, V, out, d):
    logistic_linearize(w, X, y, d)
    logistic_linear_apply(d, X, lam, V, out)


# ---- minimal surface -----------------------------------------------------------------------

@njit(**FLAGS)
def surface_value(u, h):
    m, n = u.shape
    f = 0.0
    for i in range(m - 1):
        for j in range(n - 1):
            a = (u[i + 1, j] - u[i, j]) * h
            b = (u[i, j + 1] - u[i, j]) * h
            f += np.sqrt(1.0 + a * a + b * b)
    return f


@njit(**FLAGS)
def surface_value_and_grad(u, h, g):
    m, n = u.shape
    g[:, :] = 0.0
    f = 0.0
    for i in range(m - 1):
        for j in range(n - 1):
            a = (u[i + 1, j] - u[i, j]) * h
            b = (u[i, j + 1] - u[i, j]) * h
            r = np.sqrt(1.0 + a * a + b * b)
            f += r
            ga = h * a / r
            gb = h * b / r
            g[i + 1, j] += ga
            g[i, j + 1] += gb
            g[i, j] -= ga + gb
    return f


@njit(**FLAGS)
def surface_hvp(u, h, V, out):
    m, n, k = V.shape
    out[:, :, :] = 0.0
    for i in range(m - 1):
        for j in range(n - 1):
            a = (u[i + 1, j] - u[i, j]) * h
            b = (u[i, j + 1] - u[i, j]) * h
            r = np.sqrt(1.0 + a * a + b * b)
            r3 = r * r * r
            haa = h * (1.0 / r - a * a / r3)
            hab = -h * a * b / r3
            hbb = h * (1.0 / r - b * b / r3)
            for c in range(k):
                da = (V[i + 1, j, c] - V[i, j, c]) * h
                db = (V[i, j + 1, c] - V[i, j, c]) * h
                ta = haa * da + hab * db
                tb = hab * da + hbb * db
                out[i + 1, j, c] += ta
                out[i, j + 1, c] += tb
                out[i, j, c] -= ta + tb


@njit(**FLAGS)
def surface_linearize(u, h, H):
    """Residuals: the 2x2 Hessian of each cell's area in its two differences."""
    m, n = u.shape
    for i in range(m - 1):
        for j in range(n - 1):
            a = (u[i + 1, j] - u[i, j]) * h
            b = (u[i, j + 1] - u[i, j]) * h
            r = np.sqrt(1.0 + a * a + b * b)
            r3 = r * r * r
            H[i, j, 0] = h * h * (1.0 / r - a * a / r3)
            H[i, j, 1] = -h * h * a * b / r3
            H[i, j, 2] = h * h * (1.0 / r - b * b / r3)


@njit(**FLAGS)
def surface_linear_apply(H, V, out):
    m, n, k = V.shape
    out[:, :, :] = 0.0
    for i in range(m - 1):
        for j in range(n - 1):
            haa, hab, hbb = H[i, j, 0], H[i, j, 1], H[i, j, 2]
            for c in range(k):
                da = V[i + 1, j, c] - V[i, j, c]
                db = V[i, j + 1, c] - V[i, j, c]
                ta = haa * da + hab * db
                tb = hab * da + hbb * db
                out[i + 1, j, c] += ta
                out[i, j + 1, c] += tb
                out[i, j, c] -= ta + tb
