"""trust-exact: the dense trust-region subproblem by Moré–Sorensen with Cholesky.

J. J. Moré and D. C. Sorensen, "Computing a trust region step", SIAM J. Sci.
Stat. Comput. 4 (1983), 553–572, in the form of algorithm 7.3.6 of Conn, Gould
& Toint, *Trust-Region Methods* (2000), section 7.3, which scipy's trust-exact
also follows: Newton's method on ``φ(λ) = 1/Δ - 1/‖p(λ)‖`` with
``(H + λI) p(λ) = -g``, one Cholesky factorisation per iteration, safeguarded by
an interval ``[λ_L, λ_U]`` that starts from the Gershgorin, Frobenius and
infinity-norm bounds of section 7.3.8 and is tightened by failed
factorisations and by the LINPACK estimate of the smallest singular value
(Cline, Moler, Stewart & Wilkinson 1979). The first ``λ`` and every safeguarded
one is ``max(sqrt(λ_L λ_U), λ_L + θ (λ_U - λ_L))`` with ``θ = 0.01`` (eq.
7.3.14). The iteration ends

* inside, when ``H`` is positive definite and ``‖H⁻¹g‖ <= Δ``;
* on the boundary, when ``|‖p‖ - Δ| <= κ_easy Δ``;
* in the (nearly) hard case, when the step ``p + τz`` to the boundary along the
  near-null vector ``z`` satisfies ``τ² ‖Uz‖² <= κ_hard (‖Up‖² + λΔ²)``
  (Moré & Sorensen's test, ``H + λI = UᵀU``).

:class:`ExactSubproblem` uses CGT's (and scipy's) tolerances ``κ_easy = 0.1``,
``κ_hard = 0.2``: a nearly exact step is all a trust-region method needs, and
the outer iterations then match scipy's. :func:`solve_dense_trs` defaults to
tight tolerances for use on its own. An eigendecomposition settles the rare
subproblem the iteration does not finish within its budget.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import numpy as np
from scipy.linalg import lapack, solve_triangular

from .._programs import check_dense
from .linalg import dot
from .monitor import DeadlinePassed, past
from .trust_region import QuadraticModel, boundary_intersections

_EPS = float(np.finfo(float).eps)

__all__ = ["ExactSubproblem", "solve_dense_trs", "eigen_trs", "check_size", "MAX_DENSE_N",
           "HessianBounds", "DenseTRS", "safeguarded"]

#: largest n trust-exact accepts (the n-by-n Hessian then takes 200 MB)
MAX_DENSE_N = 5000

_THETA = 0.01    # CGT eq. 7.3.14: safeguarded λ a little right of λ_L


def check_size(n: int) -> None:
    """Refuse problems too large for a dense Hessian, saying what to use instead."""
    if n > MAX_DENSE_N:
        raise ValueError(
            f"trust-exact factorises the dense n-by-n Hessian and accepts at most "
            f"n = {MAX_DENSE_N} variables; this problem has n = {n} (its Hessian alone "
            f"would take {8 * n * n / 2**30:.1f} GiB), and its Hessian is not sparse "
            f"enough for the sparse path (at most 20% non-zeros, from a newtonad "
            f"Objective). Use method='trust-krylov' or 'trust-ncg', which need only "
            f"Hessian-vector products.")
    # the Hessian, its Cholesky factor and a shifted copy alive at once
    check_dense(n, n, "trust-exact", "Use method='trust-krylov' or 'trust-ncg', which need "
                "only Hessian-vector products, or a sparse Objective.", copies=3)


class DenseTRS(NamedTuple):
    """Solution ``p``, multiplier ``lam``, boundary flag, factorisations used, final ``λ_L``."""

    p: np.ndarray
    lam: float
    hits_boundary: bool
    iterations: int
    lam_lo: float = 0.0


class HessianBounds(NamedTuple):
    """What the λ-interval of a Hessian needs, computed once per Hessian (CGT 7.3.8)."""

    gersh_lo: float    # Gershgorin lower bound on the eigenvalues
    gersh_hi: float    # Gershgorin upper bound
    fro: float         # Frobenius norm
    inf: float         # infinity norm (largest absolute row sum)
    min_diag: float    # smallest diagonal entry

    @classmethod
    def of(cls, h: np.ndarray) -> "HessianBounds":
        """The bounds of the symmetric matrix ``h``."""
        d = np.diag(h)
        rows = np.abs(h).sum(axis=1)
        radii = rows - np.abs(d)
        return cls(float((d - radii).min()), float((d + radii).max()),
                   float(np.linalg.norm(h)), float(rows.max()), float(d.min()))

    def interval(self, gnorm: float, radius: float) -> tuple[float, float]:
        """``[λ_L, λ_U]`` containing the multiplier of the boundary solution."""
        hi = max(0.0, gnorm / radius + min(-self.gersh_lo, self.fro, self.inf))
        lo = max(0.0, -self.min_diag, gnorm / radius - min(self.gersh_hi, self.fro, self.inf))
        return lo, hi


def safeguarded(lo: float, hi: float) -> float:
    """Return a point of ``[λ_L, λ_U]`` near ``λ_L``, geometric when far (CGT eq. 7.3.14).

    Parameters
    ----------
    lo, hi : float
        The interval ``[λ_L, λ_U]`` of the multiplier, ``0 <= lo <= hi``.

    Returns
    -------
    float
        ``max(sqrt(λ_L λ_U), λ_L + θ (λ_U - λ_L))`` with θ = 0.01.
    """
    return max(math.sqrt(abs(lo * hi)), lo + _THETA * (hi - lo))


def _near_null_vector(u: np.ndarray) -> tuple[float, np.ndarray]:
    """``(σ, z)``: unit ``z`` with ``‖U z‖ = σ`` small, for upper triangular ``U``.

    The LINPACK estimate (Cline, Moler, Stewart & Wilkinson 1979; Golub & Van
    Loan, 4th ed., section 3.5.4): solve ``Uᵀ y = e`` choosing each ``e_k = ±1``
    to make ``y`` grow (with look-ahead on the partial sums), then ``U w = y``;
    ``z = w / ‖w‖`` and ``σ = ‖y‖ / ‖w‖`` estimates the smallest singular value.
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
    wn = float(np.linalg.norm(w))
    return float(np.linalg.norm(y)) / wn, w / wn


def _indefinite_bound(a: np.ndarray, u: np.ndarray, k: int) -> float:
    """How far ``λ`` must grow at least when the Cholesky factorisation of ``a``
    (``H + λI``) fails at its leading minor of order ``k`` (CGT 7.3.8).

    With ``v = (-U_{k-1}⁻¹ U_{k-1}⁻ᵀ a[:k-1, k-1], 1, 0, ...)`` the Rayleigh
    quotient ``vᵀav / vᵀv <= 0`` bounds the smallest eigenvalue of ``a``.
    """
    n = a.shape[0]
    v = np.zeros(n)
    v[k - 1] = 1.0
    if k > 1:
        lead = u[: k - 1, : k - 1]
        v[: k - 1] = -solve_triangular(lead, solve_triangular(lead, a[: k - 1, k - 1],
                                                              trans="T"))
    return -float(v @ (a @ v)) / float(v @ v)


def eigen_trs(h: np.ndarray, g: np.ndarray, radius: float) -> DenseTRS:
    """The trust-region subproblem solved through an eigendecomposition of ``h``.

    The fallback of :func:`solve_dense_trs` (and of the tridiagonal solver):
    exact, the hard case included, at the cost of one ``eigh`` and a bisection
    on the monotone ``‖p(λ)‖``.

    Parameters
    ----------
    h : ndarray, shape (n, n)
        Finite symmetric matrix.
    g : ndarray, shape (n,)
        Linear term.
    radius : float
        Trust-region radius.

    Returns
    -------
    DenseTRS
        The step, its multiplier and whether it is on the boundary.
    """
    mu, s = np.linalg.eigh(h)
    gh = s.T @ g
    lo = max(0.0, -mu[0])
    if mu[0] > 0.0:
        p0 = -gh / mu
        if np.linalg.norm(p0) <= radius:
            return DenseTRS(s @ p0, 0.0, False, 0, 0.0)
    tiny = 1e-12 * max(1.0, abs(mu).max())
    resolvable = (mu + lo) > tiny

    def norm_at(lam: float) -> float:
        return float(np.linalg.norm(gh[resolvable] / (mu[resolvable] + lam)))

    if abs(gh[~resolvable]).max(initial=0.0) <= tiny * radius and norm_at(lo) <= radius:
        coef = np.zeros_like(gh)
        coef[resolvable] = -gh[resolvable] / (mu[resolvable] + lo)
        tau = math.sqrt(max(radius * radius - coef @ coef, 0.0))
        null = np.flatnonzero(~resolvable)[0]
        # along the null direction the model changes by tau (g . z): go the way it falls
        coef[null] -= math.copysign(tau, gh[null])
        return DenseTRS(s @ coef, lo, True, 0, lo)
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
    return DenseTRS(s @ coef, lam, True, 0, lo)


def solve_dense_trs(h: np.ndarray, g: np.ndarray, radius: float, *, k_easy: float = 1e-8,
                    k_hard: float = 1e-8, maxiter: int = 25,
                    bounds: Optional[HessianBounds] = None,
                    lam_lo: float = 0.0, deadline: float = math.inf) -> DenseTRS:
    """Minimise ``g @ p + p @ H p / 2`` over ``‖p‖ <= radius`` (Moré–Sorensen, CGT 7.3).

    Parameters
    ----------
    h : ndarray, shape (n, n)
        Symmetric matrix.
    g : ndarray, shape (n,)
        Linear term.
    radius : float
        Trust-region radius.
    k_easy, k_hard : float
        Tolerances of the boundary and hard-case tests (module docstring);
        the defaults solve to about ``1e-8`` relative.
    maxiter : int
        Cholesky factorisations before falling back on an eigendecomposition.
    bounds : HessianBounds, optional
        ``HessianBounds.of(h)``, when already known.
    lam_lo : float
        A known lower bound on the multiplier: the final ``lam_lo`` of a solve
        for a larger radius with the same ``h`` and ``g``.
    deadline : float
        :func:`.monitor.clock` value after which no factorisation (nor the
        eigendecomposition fallback) starts.

    Returns
    -------
    DenseTRS
        ``p`` and ``λ >= 0`` with ``(H + λI) p = -g``, ``H + λI`` positive
        semidefinite and ``λ (Δ - ‖p‖) = 0`` to the tolerances above, and the
        final lower bound ``lam_lo`` for a warm start at a smaller radius.

    Raises
    ------
    DeadlinePassed
        When ``deadline`` has passed before a factorisation.
    """
    n = g.size
    if bounds is None:
        bounds = HessianBounds.of(h)
    gnorm = float(np.linalg.norm(g))
    lo, hi = bounds.interval(gnorm, radius)
    lo = max(lo, lam_lo)
    lam = 0.0 if lo == 0.0 else safeguarded(lo, hi)
    tiny = n * _EPS * bounds.inf  # below this g is indistinguishable from 0
    diag_idx = np.diag_indices(n)
    u = None
    for it in range(1, maxiter + 1):
        if u is None:
            a = h.copy()
            a[diag_idx] += lam
            u, info = _cholesky(a, deadline)
        else:
            info = 0  # factorised at this λ in the previous iteration
        if info != 0:  # H + λI is not positive definite: λ is too small
            lo = max(lo, lam + _indefinite_bound(a, u, info))
            lam, u = safeguarded(lo, hi), None
            continue
        if gnorm <= tiny:  # g ≈ 0: only negative curvature gives a step
            if lam == 0.0:
                return DenseTRS(np.zeros(n), 0.0, False, it, lo)
            sigma, z = _near_null_vector(u)
            if sigma * sigma <= k_hard * lam:
                return DenseTRS(radius * z, lam, True, it, lo)
            hi, lo = lam, max(lo, lam - sigma * sigma)
            lam, u = safeguarded(lo, hi), None
            continue
        p = lapack.dpotrs(u, -g, lower=0)[0]
        pn = float(np.linalg.norm(p))
        if pn <= radius and lam == 0.0:
            return DenseTRS(p, 0.0, False, it, lo)
        w = solve_triangular(u, p, trans="T")
        newton = lam + (pn / float(np.linalg.norm(w))) ** 2 * (pn - radius) / radius
        if pn >= radius:  # left of the root: Newton's method converges monotonically
            if pn - radius <= k_easy * radius:
                return DenseTRS(p, lam, True, it, lo)
            lo, lam, u = lam, newton, None
            continue
        # inside with λ > 0: right of the root, or the hard case
        sigma, z = _near_null_vector(u)
        ta, tb = boundary_intersections(pn * pn, float(p @ z), 1.0, radius)
        tau = ta if abs(ta) < abs(tb) else tb
        up = u @ p
        if tau * tau * sigma * sigma <= k_hard * (float(up @ up) + lam * radius * radius):
            return DenseTRS(p + tau * z, lam, True, it, lo)
        hi, lo = lam, max(lo, lam - sigma * sigma)
        a = h.copy()
        a[diag_idx] += newton
        u, info = _cholesky(a, deadline)
        if info == 0:
            lam = newton
        else:
            lo = max(lo, newton)
            lam, u = safeguarded(lo, hi), None
    if past(deadline):
        raise DeadlinePassed
    sol = eigen_trs(h, g, radius)
    return _no_worse_than_cauchy(h, g, radius, sol._replace(iterations=maxiter))


def _no_worse_than_cauchy(h: np.ndarray, g: np.ndarray, radius: float,
                          sol: DenseTRS) -> DenseTRS:
    """``sol``, or the Cauchy step where rounding left ``sol`` with less model decrease.

    Near the hard case (an eigenvalue of ``h`` at rounding level) the eigendecomposition's
    step can come out with a model value above the Cauchy point's, even above 0; a
    trust-region method needs at least the Cauchy decrease (Nocedal & Wright, 2nd ed.,
    eq. (4.20)), and with none it would stop on "no predicted decrease".
    """
    gnorm = float(np.linalg.norm(g))
    if gnorm == 0.0:
        return sol
    hg = h @ g
    curvature = float(g @ hg)
    t = radius / gnorm
    if curvature > 0.0:
        t = min(t, gnorm * gnorm / curvature)
    cauchy = -t * g
    model = float(g @ sol.p + 0.5 * (sol.p @ (h @ sol.p)))
    model_cauchy = -t * gnorm * gnorm + 0.5 * t * t * curvature
    if model <= model_cauchy:
        return sol
    return DenseTRS(cauchy, 0.0, bool(t * gnorm >= radius), sol.iterations, sol.lam_lo)


def _cholesky(a: np.ndarray, deadline: float) -> tuple[np.ndarray, int]:
    """LAPACK's upper Cholesky factor of ``a`` and its ``info``, unless ``deadline`` has
    passed (:class:`.DeadlinePassed`): an O(n³) step the time limit must come before."""
    if past(deadline):
        raise DeadlinePassed
    u, info = lapack.dpotrf(a, lower=0, clean=1)
    return u, info


class ExactSubproblem(QuadraticModel):
    """Quadratic model with the dense Hessian, solved nearly exactly (CGT 7.3).

    The tolerances are CGT's and scipy's, ``κ_easy = 0.1`` and ``κ_hard = 0.2``.
    When the driver shrinks the radius after a rejected step, the solve at the
    smaller radius starts from the previous lower bound on ``λ`` (the
    multiplier grows as the radius shrinks), as CGT section 7.3.8 suggests.

    A Hessian with nan or inf in it (or entries so large that the
    factorisations overflow) gives :meth:`~.QuadraticModel.steepest_descent_step`.

    Parameters
    ----------
    maxiter : int
        Factorisations per subproblem before the eigendecomposition fallback
        (scipy's ``subproblem_maxiter``; default 25).
    """

    returns_hess = True
    k_easy = 0.1
    k_hard = 0.2

    def __init__(self, problem: Any, x: np.ndarray, fun: Optional[float] = None,
                 jac: Optional[np.ndarray] = None, maxiter: int = 25, **options: Any) -> None:
        super().__init__(problem, x, fun, jac, **options)
        self.maxiter = maxiter
        self._bounds: Optional[HessianBounds] = None
        self._last_radius = math.inf
        self._lam_lo = 0.0

    #: what a failed subproblem solve raises (λ overflowed: LAPACK met inf)
    _solve_errors: tuple[type[BaseException], ...] = (ValueError, np.linalg.LinAlgError)

    def _bounds_of(self, h: Any) -> HessianBounds:
        """The λ-interval data of ``h`` (CGT 7.3.8)."""
        return HessianBounds.of(h)

    def _solve_trs(self, h: Any, g: np.ndarray, radius: float, lam_lo: float) -> DenseTRS:
        """The subproblem at ``radius`` (:func:`solve_dense_trs`)."""
        return solve_dense_trs(h, g, radius, k_easy=self.k_easy, k_hard=self.k_hard,
                               maxiter=self.maxiter, bounds=self._bounds, lam_lo=lam_lo,
                               deadline=self.deadline)

    def solve(self, trust_radius: float) -> tuple[np.ndarray, bool]:
        """Moré–Sorensen step for radius ``trust_radius`` (see :func:`solve_dense_trs`).

        Returns
        -------
        p : ndarray
            The proposed step.
        hits_boundary : bool
            True if the step is on the boundary (to within ``κ_easy``).
        """
        if self.nonfinite_hessian:
            return self.steepest_descent_step(trust_radius)
        h, g = self.hess_in_time(), self.jac
        if self._bounds is None:
            self._bounds = self._bounds_of(h)
            if not all(math.isfinite(b) for b in self._bounds):  # nan / inf in H, or |H| ~ 1e308
                self.hessian_failed()
                return self.steepest_descent_step(trust_radius)
        lam_lo = self._lam_lo if trust_radius < self._last_radius else 0.0
        try:
            sol: Optional[DenseTRS] = self._solve_trs(h, g, trust_radius, lam_lo)
        except self._solve_errors:
            sol = None
        if sol is None or not np.isfinite(sol.p).all():
            self.hessian_failed()
            return self.steepest_descent_step(trust_radius)
        self._last_radius, self._lam_lo = trust_radius, sol.lam_lo
        self.inner_iterations += sol.iterations
        p = sol.p
        self._record(p, -(dot(g, p) + 0.5 * dot(p, h @ p)))
        return p, sol.hits_boundary
