"""Bound-constrained elliptic problems on square grids, after MINPACK-2 and COPS.

Sources:

* B. M. Averick, R. G. Carter, J. J. Moré and G.-L. Xue, "The MINPACK-2 test
  problem collection", Preprint MCS-P153-0692, Argonne National Laboratory,
  1992; subroutines ``deptfg`` (elastic-plastic torsion) and ``dpjbfg``
  (pressure distribution in a journal bearing), MINPACK-2 release of 11/1993.
* E. D. Dolan, J. J. Moré and T. S. Munson, "Benchmarking optimization
  software with COPS 3.0", Technical Report ANL/MCS-TM-273, Argonne National
  Laboratory, 2004, problems 15-17.  Its tables give the optimal values
  used for ``fstar`` on its square 50 x 50 grid (``n = 2500``), to six
  significant digits; at other sizes ``fstar`` is None.

Each problem is a finite-element discretisation with piecewise-linear elements
on a uniform triangulation of a rectangle: ``m`` interior grid points in each
direction, so ``n = m**2`` unknowns, numbered as MINPACK-2 numbers them
(``k = m (j - 1) + i``, the first coordinate ``i`` fastest), i.e. ``x`` reshaped
to ``(m, m)`` is indexed ``[j, i]``.  Every cell ``[i, i+1] x [j, j+1]`` of the
padded grid (boundary values included) is split into a lower triangle with
right angle at ``(i, j)`` and an upper one with right angle at ``(i+1, j+1)``.
Written as whole-array NumPy, so they trace at any ``n`` (tested to 1e6).
"""

from __future__ import annotations

import math

import numpy as np

from ._registry import Problem, SizeRule, box, register

GRID = SizeRule(default=10_000, minimum=4, square=True)

# COPS 3.0's published optimal values on its 50 x 50 interior grid.
COPS_GRID = 50
COPS_TORSION_FSTAR = -4.18087e-1
COPS_BEARING_FSTAR = -1.5482e-1        # with COPS' own triangle weights
COPS_MINSURF_FSTAR = 2.51488


def _published(m: int, value: float) -> float | None:
    return value if m == COPS_GRID else None


def _padded(x, edges: np.ndarray):
    """The ``(m+2, m+2)`` grid: ``x`` inside, ``edges``' boundary values around it."""
    m = edges.shape[0] - 2
    inner = np.concatenate([edges[1:-1, :1], x.reshape(m, m), edges[1:-1, -1:]], axis=1)
    return np.concatenate([edges[:1, :], inner, edges[-1:, :]], axis=0)


def _triangle_vertices(v):
    """Vertex values of every lower and upper triangle of the padded grid ``v``.

    Returns ``(corner, right, top)`` of the lower triangles (right angle at
    ``[j, i]``, j, i = 0..m) and ``(corner, left, bottom)`` of the upper ones
    (right angle at ``[j, i]``, j, i = 1..m+1).  On this grid an upper
    triangle's left and bottom neighbours are the lower one's top and right.
    """
    corner, right, top = v[:-1, :-1], v[:-1, 1:], v[1:, :-1]
    return (corner, right, top), (v[1:, 1:], top, right)


def _distance_to_boundary(m: int) -> np.ndarray:
    """dist(x, boundary of the unit square) at the interior nodes, flattened."""
    h = 1.0 / (m + 1)
    steps = np.minimum(np.arange(1, m + 1), np.arange(m, 0, -1)) * h
    return np.minimum(steps[:, None], steps[None, :]).reshape(-1)


@register("torsion", GRID, bounded=True)
def torsion(n: int, c: float = 5.0) -> Problem:
    """Elastic-plastic torsion: ``min 1/2 |grad v|^2 - c v`` with ``|v| <= dist``."""
    m = math.isqrt(n)
    h = 1.0 / (m + 1)
    area = 0.5 * h * h
    edges = np.zeros((m + 2, m + 2))                # v = 0 on the boundary
    dist = _distance_to_boundary(m)

    def fun(x):
        (v, vr, vt), (w, wl, wb) = _triangle_vertices(_padded(x, edges))
        quad = (np.sum((vr - v) ** 2 + (vt - v) ** 2)
                + np.sum((w - wl) ** 2 + (w - wb) ** 2)) / (h * h)
        lin = np.sum(v + vr + vt) + np.sum(w + wl + wb)
        return area * (0.5 * quad - (c / 3.0) * lin)
    return Problem(
        name="torsion", n=n, fun=fun, x0=dist.copy(),
        fstar=_published(m, COPS_TORSION_FSTAR), xstar=None,
        source="MINPACK-2 elastic-plastic torsion, deptfg (Averick, Carter, Moré & "
               "Xue, ANL MCS-P153-0692, 1992); COPS 3.0 problem 15",
        scalable=True, bounds=box(-dist, dist, n),
        notes=f"c = {c:g} (the angle of twist per unit length; MINPACK-2's and COPS' "
              "value 5); D = unit square, n = m^2 interior nodes, default n = 1e4. "
              "Bounds -dist(x, boundary) <= v <= dist(x, boundary); x0 = dist (the "
              "upper bound, MINPACK-2's 'XS'). Strictly convex quadratic: one "
              "minimiser, with the plastic region (upper bound active) near the "
              "middle of the edges. fstar: COPS 3.0's value at n = 2500 (6 digits).")


def _bearing_weight(xi: np.ndarray, ecc: float) -> np.ndarray:
    return (1.0 + ecc * np.cos(xi)) ** 3


@register("journal-bearing", GRID, bounded=True)
def journal_bearing(n: int, ecc: float = 0.1, b: float = 10.0,
                    weights: str = "minpack2") -> Problem:
    """Pressure in a journal bearing: ``min 1/2 w_q |grad v|^2 - w_l v``, ``v >= 0``.

    ``weights`` chooses how ``w_q`` is averaged over a triangle: ``"minpack2"``
    (the default) by ``dpjbfg``'s rule, (2 w_q(i) + w_q(i+1)) / 3 on a lower
    triangle and (2 w_q(i) + w_q(i-1)) / 3 on an upper one; ``"cops"`` by COPS
    3.0's model, (w_q(i) + 2 w_q(i+1)) / 3 and (2 w_q(i) + 2 w_q(i-1)) / 3,
    whose optimal value COPS publishes.  The two differ by 15 % at n = 2500.
    """
    if weights not in ("minpack2", "cops"):
        raise ValueError(f"weights must be 'minpack2' or 'cops', not {weights!r}")
    m = math.isqrt(n)
    hx, hy = 2.0 * math.pi / (m + 1), 2.0 * b / (m + 1)
    hxhy = hx * hy
    edges = np.zeros((m + 2, m + 2))
    i = np.arange(m + 2, dtype=np.float64)
    weight = _bearing_weight(i * hx, ecc)
    left, right = weight[:-1], weight[1:]
    if weights == "minpack2":
        lower, upper = 2.0 * left + right, 2.0 * right + left      # lower: i = 0..m
    else:                                                          # upper: i = 1..m+1
        lower, upper = left + 2.0 * right, 2.0 * right + 2.0 * left
    lower = (hxhy * lower / 6.0)[None, :]
    upper = (hxhy * upper / 6.0)[None, :]
    load = (ecc * hxhy * np.sin(i[1:-1] * hx))[None, :]                 # i = 1..m
    start = np.broadcast_to(np.maximum(np.sin(i[1:-1] * hx), 0.0), (m, m)).reshape(-1)
    published = (ecc, b, weights) == (0.1, 10.0, "cops")

    def fun(x):
        (v, vr, vt), (w, wl, wb) = _triangle_vertices(_padded(x, edges))
        quad = (np.sum(lower * (((vr - v) / hx) ** 2 + ((vt - v) / hy) ** 2))
                + np.sum(upper * (((w - wl) / hx) ** 2 + ((w - wb) / hy) ** 2)))
        return 0.5 * quad - np.sum(load * x.reshape(m, m))
    return Problem(
        name="journal-bearing", n=n, fun=fun, x0=start.copy(),
        fstar=_published(m, COPS_BEARING_FSTAR) if published else None, xstar=None,
        source="MINPACK-2 pressure distribution in a journal bearing, dpjbfg "
               "(Averick, Carter, Moré & Xue, ANL MCS-P153-0692, 1992); COPS 3.0 "
               "problem 16",
        scalable=True, bounds=box(0.0, np.inf, n),
        notes=f"ecc = {ecc:g}, b = {b:g} (MINPACK-2's values): D = (0, 2 pi) x (0, 2b), "
              "w_q = (1 + ecc cos x1)^3, w_l = ecc sin x1; n = m^2 interior nodes, "
              "default n = 1e4. Bounds v >= 0; x0 = max(sin x1, 0) (MINPACK-2's "
              "'XS'). Strictly convex quadratic; the bound is active where "
              f"sin x1 < 0 (the cavitation region). Triangle weights: {weights}'s. "
              "fstar: none published for MINPACK-2's weights; with weights='cops', "
              "COPS 3.0's value at n = 2500 (5 digits).")


@register("obstacle", GRID, bounded=True)
def obstacle(n: int) -> Problem:
    """Minimal surface above an obstacle: ``min area(v)``, ``v >= 1`` on a central square."""
    m = math.isqrt(n)
    h = 1.0 / (m + 1)
    area = 0.5 * h * h
    s = np.arange(m + 2) * h
    edges = np.zeros((m + 2, m + 2))
    edges[0, :] = edges[-1, :] = 1.0 - (2.0 * s - 1.0) ** 2   # v on x2 = 0 and x2 = 1
    t = np.arange(1, m + 1)
    # COPS' index rule for the obstacle's nodes: floor(0.25/h) <= t <= ceil(0.75/h)
    inside = (t >= math.floor(0.25 / h)) & (t <= math.ceil(0.75 / h))
    lower = np.where(inside[:, None] & inside[None, :], 1.0, 0.0).reshape(-1)
    start = np.broadcast_to(1.0 - (2.0 * s[1:-1] - 1.0) ** 2, (m, m)).reshape(-1)

    def fun(x):
        (v, vr, vt), (w, wl, wb) = _triangle_vertices(_padded(x, edges))
        return area * (np.sum(np.sqrt(1.0 + ((vr - v) / h) ** 2 + ((vt - v) / h) ** 2))
                       + np.sum(np.sqrt(1.0 + ((wl - w) / h) ** 2 + ((wb - w) / h) ** 2)))
    return Problem(
        name="obstacle", n=n, fun=fun, x0=np.maximum(start, lower),
        fstar=_published(m, COPS_MINSURF_FSTAR), xstar=None,
        source="COPS 3.0 problem 17, minimal surface with obstacle (Dolan, Moré & "
               "Munson, ANL/MCS-TM-273, 2004), MINPACK-2's triangulation",
        scalable=True, bounds=box(lower, np.inf, n),
        notes="Area of the piecewise-linear surface over the unit square; boundary "
              "v = 1 - (2 x1 - 1)^2 on x2 = 0, 1 and v = 0 on x1 = 0, 1; obstacle "
              "v >= 1 on the nodes of [0.25, 0.75]^2 (COPS' floor/ceil rule), v >= 0 "
              "elsewhere; n = m^2 interior nodes, default n = 1e4. x0 = COPS' start "
              "1 - (2 x1 - 1)^2 raised onto the obstacle (COPS' start is below it "
              "near the obstacle's corners). Strictly convex: one minimiser. Its slope is "
              "unbounded at the obstacle's corners (the largest slope between grid "
              "neighbours is 19, 34, 51 and 77 at m = 100, 200, 316 and 500, at (0.25, "
              "0.25) and (0.75, 0.75); elsewhere below 17), so the discrete problem grows "
              "more nonlinear as the grid is refined and Newton iterations grow with n, "
              "for interior-point and active-set methods alike. fstar: COPS 3.0's "
              "value at n = 2500 (6 digits).")
