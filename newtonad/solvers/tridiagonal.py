"""The trust-region subproblem for a symmetric tridiagonal matrix (Moré–Sorensen).

Solves ``min c @ h + h @ T h / 2`` subject to ``||h|| <= Δ`` for a small
tridiagonal ``T`` — the subproblem GLTR solves in the Krylov subspace. This is
the Moré–Sorensen method (J. J. Moré and D. C. Sorensen, "Computing a trust
region step", SIAM J. Sci. Stat. Comput. 4, 1983; Nocedal & Wright, 2nd ed.,
algorithm 4.3): Newton's method on the secular equation
``φ(λ) = 1/Δ - 1/||h(λ)|| = 0`` with ``(T + λI) h(λ) = -c``, using LDLᵀ
factorisations of the tridiagonal ``T + λI`` (LAPACK ``dpttrf``). For a
tridiagonal matrix the smallest eigenvalue ``λ₁`` costs O(k) by bisection
(``dstebz``), so the iteration starts left of the root, where ``φ`` is concave
and Newton's method converges monotonically, and the hard case (``c``
orthogonal to the eigenvector of ``λ₁``) is recognised exactly (Conn, Gould &
Toint, *Trust-Region Methods*, 2000, section 7.3).
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np
from scipy.linalg import lapack

from .exact import eigen_trs

__all__ = ["TRSSolution", "solve_tridiagonal_trs", "smallest_eigenpair"]

_RTOL = 1e-10       # |‖h‖ - Δ| <= _RTOL Δ ends the Newton iteration
#: ... and so does a step that no longer halves |‖h‖ - Δ| once it is below _STALL Δ:
#: Newton's method converges quadratically there, unless ‖h‖ is at its rounding level
#: (meyer's T spans 1e4 to 7e11: ‖h‖ jittered by 2e-8 of Δ and the steps wandered until
#: _MAXITER, 60 solves instead of 2-3, in 183 of 498 subproblems of a trust-krylov run)
_STALL = 1e-6
_MAXITER = 60
#: shifts tried right of the pole, growing tenfold from 1e-10 ‖T‖: by the last,
#: T + λI is diagonally dominant unless rounding spoiled the bisection's λ₁
_MAX_SHIFTS = 30


class TRSSolution(NamedTuple):
    """Solution ``h``, multiplier ``lam`` and whether ``‖h‖ = Δ``."""

    h: np.ndarray
    lam: float
    hits_boundary: bool


def smallest_eigenpair(diag: np.ndarray, off: np.ndarray, vector: bool = False):
    """Smallest eigenvalue of the tridiagonal matrix (and a unit eigenvector)."""
    k = diag.size
    if k == 1:
        return (float(diag[0]), np.ones(1)) if vector else float(diag[0])
    m, w, iblock, isplit, info = lapack.dstebz(diag, off, 3, 0.0, 0.0, 1, 1, 0.0, "E")
    if info != 0 or m < 1:
        w = np.linalg.eigvalsh(_dense(diag, off))
    lam1 = float(w[0])
    if not vector:
        return lam1
    z, info = lapack.dstein(diag, off, w[:1], iblock, isplit)
    v = z[:, 0] if info == 0 else np.linalg.eigh(_dense(diag, off))[1][:, 0]
    return lam1, v / np.linalg.norm(v)


def _dense(diag: np.ndarray, off: np.ndarray) -> np.ndarray:
    return np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)


def _solve_shifted(diag: np.ndarray, off: np.ndarray, lam: float, rhs: np.ndarray):
    """Factor ``T + lam I`` (LDLᵀ) and solve; ``None`` unless positive definite."""
    if diag.size == 1:  # LAPACK's wrappers reject the empty off-diagonal
        d = diag + lam
        return (d, off, rhs / d) if d[0] > 0.0 else None
    dl, el, info = lapack.dpttrf(diag + lam, off)
    if info != 0:
        return None
    x, info = lapack.dpttrs(dl, el, rhs)
    return (dl, el, x) if info == 0 else None


def _ldl_solve(dl: np.ndarray, el: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve with a factorisation from :func:`_solve_shifted`."""
    if dl.size == 1:
        return rhs / dl
    return lapack.dpttrs(dl, el, rhs)[0]


def _dot(u: np.ndarray, v: np.ndarray) -> float:
    return float(u @ v)


def solve_tridiagonal_trs(diag: np.ndarray, off: np.ndarray, c, radius: float,
                          lam0: float = 0.0) -> TRSSolution:
    """Globally minimise ``c @ h + h @ T h / 2`` over ``||h|| <= radius``.

    Parameters
    ----------
    diag, off : ndarray
        Diagonal (k,) and off-diagonal (k - 1,) of the symmetric matrix ``T``.
    c : ndarray, shape (k,), or float
        Linear term; a number ``γ`` stands for ``γ e₁`` (the Lanczos case).
    radius : float
        Trust-region radius ``Δ > 0``.
    lam0 : float
        A guess for the multiplier (the previous solution's). When ``T + lam0 I``
        is positive definite and its solution at least ``radius`` long, the
        root lies right of it and Newton's method starts there at once.

    Returns
    -------
    TRSSolution
        ``h`` with ``(T + lam I) h = -c``, ``T + lam I`` positive semidefinite,
        ``lam >= 0`` and ``lam (radius - ||h||) = 0``.
    """
    if np.size(diag) <= _FEW and isinstance(c, (float, int, np.floating)):
        few = _solve_few([float(v) for v in np.reshape(diag, -1)],
                         [float(v) for v in np.reshape(off, -1)], -float(c), radius, lam0)
        if few is not None:
            return few
    diag = np.asarray(diag, dtype=np.float64)
    off = np.asarray(off, dtype=np.float64)
    if isinstance(c, (float, int, np.floating)):
        rhs = np.zeros(diag.size)
        rhs[0] = -float(c)
    else:
        rhs = -np.asarray(c, dtype=np.float64)
    if not (np.isfinite(diag).all() and np.isfinite(off).all() and np.isfinite(rhs).all()
            and math.isfinite(radius) and radius > 0.0):
        raise ValueError("solve_tridiagonal_trs needs finite T and c and a finite radius "
                         "> 0 (no positive definite shift exists for a matrix with nan)")
    solves = _Solves(lambda lam: _solve_shifted(diag, off, lam, rhs), _ldl_solve, _dot)
    sol = _more_sorensen(solves, diag, off, radius, lam0,
                         no_shift=lambda: _dense_solution(diag, off, rhs, radius),
                         hard=lambda lo: _hard_case(diag, off, rhs, radius, lo))
    assert sol is not None  # both fallbacks give a solution
    return sol


class _Solves(NamedTuple):
    """Solves with ``T + λI``: LAPACK on arrays, or its operations on Python floats."""

    shifted: Callable[[float], Any]     # λ -> (d, e, h), (T + λI) h = rhs; None unless PD
    solve: Callable[[Any, Any, Any], Any]  # (d, e, v) -> (T + λI)^-1 v with those factors
    dot: Callable[[Any, Any], float]


def _more_sorensen(solves: _Solves, diag: Any, off: Any, radius: float, lam0: float,
                   no_shift: Callable[[], TRSSolution | None],
                   hard: Callable[[float], TRSSolution | None]) -> TRSSolution | None:
    """Moré–Sorensen's iteration (module docstring) on ``solves``; where it cannot go on,
    ``no_shift()`` (no shift right of the pole factorised) or ``hard(lo)`` (the hard
    case at ``λ = lo``) gives the answer."""
    def norm(v: Any) -> float:
        return math.sqrt(solves.dot(v, v))

    lam, lo = 0.0, 0.0
    sol = solves.shifted(lam0) if lam0 > 0.0 else None
    if sol is not None and norm(sol[2]) >= radius:
        lam = lo = lam0  # left of the root, which is therefore positive: skip the checks below
    else:
        sol = solves.shifted(0.0)  # succeeds iff T is positive definite
        if sol is not None and norm(sol[2]) <= radius:
            return TRSSolution(np.asarray(sol[2]), 0.0, False)
        if sol is None:  # indefinite: start just right of the pole at -lam1
            diag_a, off_a = np.asarray(diag, dtype=np.float64), np.asarray(off, dtype=np.float64)
            lo = max(0.0, -smallest_eigenpair(diag_a, off_a))
            scale = max(1.0, float(np.abs(diag_a).max()),
                        float(np.abs(off_a).max()) if off_a.size else 0.0)
            shift = 1e-10 * scale
            for _ in range(_MAX_SHIFTS):
                lam = lo + shift
                sol = solves.shifted(lam)
                if sol is not None:
                    break
                shift *= 10.0
            else:  # no shift factorised (entries near overflow)
                return no_shift()
        if norm(sol[2]) <= radius:
            return hard(lo)
        if lam0 > lam:  # a warm start right of the left point: use it if it is left of the root
            warm = solves.shifted(lam0)
            if warm is not None and norm(warm[2]) >= radius:
                lam, sol = lam0, warm
    before = math.inf
    for _ in range(_MAXITER):
        dl, el, h = sol
        hn = norm(h)
        miss = abs(hn - radius)
        if miss <= _RTOL * radius or (miss <= _STALL * radius and miss > 0.5 * before):
            break
        before = miss
        hs = solves.dot(h, solves.solve(dl, el, h))
        step = (hn / radius - 1.0) * hn * hn / hs
        new = lam + step
        if new <= lo:  # from the right Newton may overshoot the pole: safeguard
            new = lo + 0.1 * (lam - lo)
        if new == lam:
            break
        trial = solves.shifted(new)
        if trial is None:  # rounding at the pole: stay right of it
            new = lo + 0.5 * (lam - lo)
            trial = solves.shifted(new)
            if trial is None:
                break
        lam, sol = new, trial
    h = np.array(sol[2], dtype=np.float64)
    h *= radius / norm(sol[2])  # remove the last rounding in the norm
    return TRSSolution(h, lam, True)


#: subproblems of at most this many Lanczos steps are solved on Python floats
_FEW = 3


def _shifted_few(diag: list[float], off: list[float], lam: float, rhs: list[float]
                 ) -> tuple[list[float], list[float], list[float]] | None:
    """:func:`_solve_shifted` on Python floats: LAPACK's ``dpttrf`` and ``dpttrs``,
    operation for operation (the same bits)."""
    d = [a + lam for a in diag]
    e = list(off)
    for i in range(len(e)):
        if d[i] <= 0.0:
            return None
        ei = e[i]
        e[i] = ei / d[i]
        d[i + 1] = d[i + 1] - e[i] * ei
    if d[-1] <= 0.0:
        return None
    return d, e, _ldl_few(d, e, rhs)


def _ldl_few(d: list[float], e: list[float], rhs: list[float]) -> list[float]:
    """:func:`_ldl_solve` on Python floats (``dptts2``; one entry: ``rhs / d``)."""
    b = list(rhs)
    k = len(b)
    for i in range(1, k):
        b[i] = b[i] - b[i - 1] * e[i - 1]
    b[k - 1] = b[k - 1] / d[k - 1]
    for i in range(k - 2, -1, -1):
        b[i] = b[i] / d[i] - b[i + 1] * e[i]
    return b


def _dot_few(u: list[float], v: list[float]) -> float:
    total = 0.0
    for a, b in zip(u, v):
        total += a * b  # in order, as BLAS ddot sums a few entries
    return total


def _solve_few(diag: list[float], off: list[float], rhs0: float, radius: float,
               lam0: float) -> TRSSolution | None:
    """:func:`solve_tridiagonal_trs` for ``T`` of at most :data:`_FEW` rows and
    ``c = -rhs0 e₁`` (the Lanczos case), on Python floats: the same iteration on the
    same operations (GLTR's first steps end most small subproblems, where the array
    and LAPACK calls cost about 20 µs), so the result is the same to the last bit.
    ``None`` where that path would give up on the shifts or meet the hard case, or for
    values that are not finite: solve it there."""
    if not (all(map(math.isfinite, diag)) and all(map(math.isfinite, off))
            and math.isfinite(rhs0) and 0.0 < radius < math.inf):
        return None
    rhs = [rhs0] + [0.0] * (len(diag) - 1)
    solves = _Solves(lambda lam: _shifted_few(diag, off, lam, rhs), _ldl_few, _dot_few)
    return _more_sorensen(solves, diag, off, radius, lam0, no_shift=lambda: None,
                          hard=lambda lo: None)


def _dense_solution(diag: np.ndarray, off: np.ndarray, rhs: np.ndarray, radius: float
                    ) -> TRSSolution:
    """The exact solution from an eigendecomposition of the dense ``T``."""
    sol = eigen_trs(_dense(diag, off), -rhs, radius)
    return TRSSolution(sol.p, sol.lam, sol.hits_boundary)


def _hard_case(diag: np.ndarray, off: np.ndarray, rhs: np.ndarray, radius: float,
               lo: float) -> TRSSolution:
    """``λ = -λ₁``: minimum-norm solution plus a multiple of the eigenvector.

    ``T + lo I`` is singular along ``v``; the minimum-norm solution solves the
    deflated system ``(T + lo I + σ v vᵀ) h = rhs - (rhs @ v) v``. Then
    ``h + τ v`` with ``‖h + τ v‖ = Δ``, taking the root of lower model value.
    """
    lam1, v = smallest_eigenpair(diag, off, vector=True)
    a = _dense(diag, off)
    a[np.diag_indices_from(a)] += lo
    sigma = max(1.0, float(np.abs(a).max()))
    b = rhs - (rhs @ v) * v
    h = np.linalg.solve(a + sigma * np.outer(v, v), b)
    h -= (h @ v) * v
    hh = float(h @ h)
    tau = math.sqrt(max(radius * radius - hh, 0.0))
    # m(h + tau v) - m(h - tau v) = 2 tau c @ v: take the sign with tau c @ v <= 0
    if (rhs @ v) < 0.0:
        tau = -tau
    return TRSSolution(h + tau * v, lo, True)
