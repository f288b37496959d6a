"""trust-exact: the dense trust-region subproblem by Moré–Sorensen with Cholesky.

J. J. Moré and D. C. Sorensen, "Computing a trust region step", SIAM J. Sci.
Stat. Comput. 4 (1983), 553–572; algorithm 4.3 of Nocedal & Wright, 2nd ed.
and section 7.3 of Conn, Gould & Toint, *Trust-Region Methods* (2000). Newton's
method on ``φ(λ) = 1/Δ - 1/‖p(λ)‖`` with ``(H + λI) p(λ) = -g``, one Cholesky
factorisation per iteration, safeguarded by an interval ``[λ_L, λ_U]`` from
Gershgorin bounds that failed factorisations and the LINPACK estimate of the
smallest singular vector (Cline, Moler, Stewart & Wilkinson 1979) tighten. The
hard case is recognised by Moré and Sorensen's test: a step ``p + τz`` onto the
boundary along the near-null vector ``z`` is accepted when ``τ² zᵀ(H+λI)z`` is
small against ``pᵀ(H+λI)p + λΔ²``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import numpy as np
from scipy.linalg import lapack, solve_triangular

from .trust_region import QuadraticModel, boundary_intersections

__all__ = ["ExactSubproblem", "solve_dense_trs", "check_size", "MAX_DENSE_N"]

#: largest n trust-exact accepts (the n-by-n Hessian then takes 200 MB)
MAX_DENSE_N = 5000

_K_EASY = 1e-8    # |‖p‖ - Δ| <= _K_EASY Δ ends the iteration
_K_HARD = 1e-8    # hard-case acceptance constant (Moré & Sorensen's σ₂)


def check_size(n: int) -> None:
    """Refuse problems too large for a dense Hessian, saying what to use instead."""
    if n > MAX_DENSE_N:
        raise ValueError(
            f"trust-exact factorises the dense n-by-n Hessian and accepts at most "
            f"n = {MAX_DENSE_N} variables; this problem has n = {n} (its Hessian alone "
            f"would take {8 * n * n / 2**30:.1f} GiB). Use method='trust-krylov' or "
            f"'trust-ncg', which need only Hessian-vector products.")


class DenseTRS(NamedTuple):
    """Solution ``p``, multiplier ``lam``, boundary flag, factorisations used."""

    p: np.ndarray
    lam: float
    hits_boundary: bool
    iterations: int


def _gershgorin(h: np.ndarray) -> tuple[float, float]:
    radii = np.abs(h).sum(axis=1) - np.abs(np.diag(h))
    d = np.diag(h)
    return float((d - radii).min()), float((d + radii).max())


def _near_null_vector(u: np.ndarray) -> np.ndarray:
    """Unit ``z`` making ``‖U z‖`` small, for upper triangular ``U`` (LINPACK estimate).

    Solves ``Uᵀ y = e`` choosing each ``e_k = ±1`` to make ``y`` grow (with
    look-ahead on the partial sums), then ``U w = y`` and ``z = w / ‖w‖``.
    """
    n = u.shape[0]
    partial = np.zeros(n)
    y = np.empty(n)
    for k in range(n):
        ukk = u[k, k]
        yp, ym = (1.0 - partial[k]) / ukk, (-1.0 - partial[k]) / ukk
        row = u[k, k + 1:]
        pp = partial[k + 1:] + row * yp
        pm = partial[k + 1:] + row * ym
        if abs(yp) + np.abs(pp).sum() >= abs(ym) + np.abs(pm).sum():
            y[k], partial[k + 1:] = yp, pp
        else:
            y[k], partial[k + 1:] = ym, pm
    w = solve_triangular(u, y)
    return w / np.linalg.norm(w)


def _eigen_solve(h: np.ndarray, g: np.ndarray, radius: float) -> DenseTRS:
    """Fallback: the exact solution from an eigendecomposition (hard case included)."""
    mu, s = np.linalg.eigh(h)
    gh = s.T @ g
    lo = max(0.0, -mu[0])
    if mu[0] > 0.0:
        p0 = -gh / mu
        if np.linalg.norm(p0) <= radius:
            return DenseTRS(s @ p0, 0.0, False, 0)
    tiny = 1e-12 * max(1.0, abs(mu).max())
    resolvable = (mu + lo) > tiny

    def norm_at(lam: float) -> float:
        return float(np.linalg.norm(gh[resolvable] / (mu[resolvable] + lam)))

    if abs(gh[~resolvable]).max(initial=0.0) <= tiny * radius and norm_at(lo) <= radius:
        coef = np.zeros_like(gh)
        coef[resolvable] = -gh[resolvable] / (mu[resolvable] + lo)
        tau = math.sqrt(max(radius * radius - coef @ coef, 0.0))
        coef[np.flatnonzero(~resolvable)[0]] += tau
        return DenseTRS(s @ coef, lo, True, 0)
    a, b = lo, lo + np.linalg.norm(g) / radius + abs(mu).max()
    for _ in range(200):  # bisection on the monotone ‖p(λ)‖
        mid = 0.5 * (a + b)
        if norm_at(mid) > radius:
            a = mid
        else:
            b = mid
        if b - a <= 1e-15 * max(1.0, b):
            break
    lam = b
    coef = -gh / np.where(resolvable, mu + lam, np.inf)
    coef *= radius / np.linalg.norm(coef)
    return DenseTRS(s @ coef, lam, True, 0)


def solve_dense_trs(h: np.ndarray, g: np.ndarray, radius: float, lam0: float = 0.0,
                    maxiter: int = 25) -> DenseTRS:
    """Globally minimise ``g @ p + p @ H p / 2`` over ``‖p‖ <= radius`` (Moré–Sorensen).

    Parameters
    ----------
    h : ndarray, shape (n, n)
        Symmetric matrix.
    g : ndarray, shape (n,)
        Linear term (non-zero).
    radius : float
        Trust-region radius.
    lam0 : float
        Starting multiplier (e.g. from the previous radius at the same point).
    maxiter : int
        Cholesky factorisations before falling back on an eigendecomposition.

    Returns
    -------
    DenseTRS
        ``p`` and ``λ >= 0`` with ``(H + λI) p = -g``, ``H + λI`` positive
        semidefinite and ``λ (Δ - ‖p‖) = 0`` to the tolerances above.
    """
    n = g.size
    gnorm = float(np.linalg.norm(g))
    glo, ghi = _gershgorin(h)
    hnorm = min(float(np.linalg.norm(h)), max(abs(glo), abs(ghi)))
    lam_lo = max(0.0, -float(np.diag(h).min()), gnorm / radius - hnorm)
    lam_hi = max(0.0, gnorm / radius + hnorm)
    lam = min(max(lam0, lam_lo), lam_hi)
    diag_idx = np.diag_indices(n)
    for it in range(1, maxiter + 1):
        a = h.copy()
        a[diag_idx] += lam
        u, info = lapack.dpotrf(a, lower=0, clean=1)
        if info == 0:
            p = lapack.dpotrs(u, -g, lower=0)[0]
            pn = float(np.linalg.norm(p))
            if pn <= radius and lam == 0.0:
                return DenseTRS(p, 0.0, False, it)
            if abs(pn - radius) <= _K_EASY * radius:
                return DenseTRS(p * (radius / pn), lam, True, it)
            w = solve_triangular(u, p, trans="T")
            newton = lam + (pn / np.linalg.norm(w)) ** 2 * (pn - radius) / radius
            if pn < radius:
                lam_hi = min(lam_hi, lam)
                z = _near_null_vector(u)
                uz = u @ z
                zaz = float(uz @ uz)
                ta, tb = boundary_intersections(pn * pn, float(p @ z), 1.0, radius)
                tau = ta if abs(ta) < abs(tb) else tb
                up = u @ p
                if tau * tau * zaz <= _K_HARD * (float(up @ up) + lam * radius * radius):
                    return DenseTRS(p + tau * z, lam, True, it)
                lam_lo = max(lam_lo, lam - zaz)
            else:
                lam_lo = max(lam_lo, lam)
            lam_new = newton
        else:
            k = info  # leading minor of order k is not positive definite
            col = a[: k - 1, k - 1]
            v = np.zeros(n)
            v[k - 1] = 1.0
            if k > 1:
                v[: k - 1] = -solve_triangular(u[: k - 1, : k - 1],
                                               solve_triangular(u[: k - 1, : k - 1], col,
                                                                trans="T"))
            vav = float(v @ (a @ v))
            lam_lo = max(lam_lo, lam - vav / float(v @ v))
            lam_new = -1.0  # force a safeguarded choice
        if lam_hi - lam_lo <= 1e-14 * max(1.0, lam_hi):
            break
        if not lam_lo < lam_new < lam_hi:
            lam_new = max(math.sqrt(lam_lo * lam_hi), lam_lo + 0.01 * (lam_hi - lam_lo))
        lam = lam_new
    return _eigen_solve(h, g, radius)


class ExactSubproblem(QuadraticModel):
    """Quadratic model with the dense Hessian, solved (nearly) exactly.

    Parameters
    ----------
    maxiter : int
        Factorisations per subproblem before the eigendecomposition fallback
        (scipy's ``subproblem_maxiter``; default 25).
    """

    returns_hess = True

    #: boundary steps are (nearly) optimal in the ball: grow the radius faster
    #: (2.5 rather than 2 saves 15-40% of the iterations on chained Rosenbrock)
    radius_growth = 2.5

    def __init__(self, problem: Any, x: np.ndarray, fun: Optional[float] = None,
                 jac: Optional[np.ndarray] = None, maxiter: int = 25, **options: Any) -> None:
        super().__init__(problem, x, fun, jac)
        self.maxiter = maxiter
        self._lam = 0.0

    def solve(self, trust_radius: float) -> tuple[np.ndarray, bool]:
        """Moré–Sorensen step for radius ``trust_radius`` (see :func:`solve_dense_trs`).

        Returns
        -------
        p : ndarray
            The proposed step.
        hits_boundary : bool
            True if ``||p|| == trust_radius``.
        """
        h, g = self.hess, self.jac
        sol = solve_dense_trs(h, g, trust_radius, self._lam, self.maxiter)
        self.inner_iterations += sol.iterations
        self._lam = sol.lam
        p = sol.p
        self._record(p, -(float(g @ p) + 0.5 * float(p @ (h @ p))))
        return p, sol.hits_boundary
