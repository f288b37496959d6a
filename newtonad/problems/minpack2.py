"""A minimal-surface problem on a square grid, in the style of MINPACK-2.

Source: B. M. Averick, R. G. Carter, J. J. Moré and G.-L. Xue, "The MINPACK-2
test problem collection", Preprint MCS-P153-0692, Argonne National Laboratory,
1992 (minimal surface area, DMSA).  Each grid cell is split into a lower and an
upper triangle; the area of the piecewise-linear surface over a triangle with
legs h is (h^2 / 2) sqrt(1 + u_s^2 + u_t^2) with forward differences u_s, u_t.
Here the boundary data are g(s, t) = s^2 - t^2 on the unit square (MINPACK-2
uses Enneper's surface), so no optimal value is known in closed form.
"""

from __future__ import annotations

import math

import numpy as np

from ._registry import Problem, SizeRule, register


def surface_area(u, h: float):
    """Area of the piecewise-linear surface over the triangulated grid ``u`` of spacing ``h``.

    Each cell is split into a lower triangle (corner (i, j), legs to (i+1, j) and
    (i, j+1)) and an upper one (corner (i+1, j+1), legs to (i, j+1) and (i+1, j)).

    Parameters
    ----------
    u : array_like, shape (m + 2, m + 2)
        Heights on the full grid, boundary included (NumPy or traced values).
    h : float
        Grid spacing.

    Returns
    -------
    scalar
        The sum of the triangles' areas ``(h^2 / 2) sqrt(1 + u_s^2 + u_t^2)``.
    """
    ds = (u[1:, :-1] - u[:-1, :-1]) / h
    dt = (u[:-1, 1:] - u[:-1, :-1]) / h
    es = (u[1:, 1:] - u[:-1, 1:]) / h
    et = (u[1:, 1:] - u[1:, :-1]) / h
    return 0.5 * h * h * (np.sum(np.sqrt(1.0 + ds * ds + dt * dt))
                          + np.sum(np.sqrt(1.0 + es * es + et * et)))


@register("minimal-surface", SizeRule(default=100, minimum=1, square=True))
def minimal_surface(n: int) -> Problem:
    """Minimal-surface area over an m x m interior grid, n = m^2 unknowns."""
    m = math.isqrt(n)
    h = 1.0 / (m + 1)
    s = np.linspace(0.0, 1.0, m + 2)
    g = s[:, None] ** 2 - s[None, :] ** 2          # boundary data on the full grid
    top, bottom = g[:1, :], g[-1:, :]
    left, right = g[1:-1, :1], g[1:-1, -1:]

    def fun(x):
        inner = np.concatenate([left, x.reshape(m, m), right], axis=1)
        u = np.concatenate([top, inner, bottom], axis=0)          # (m+2, m+2)
        return surface_area(u, h)
    return Problem(name="minimal-surface", n=n, fun=fun, x0=np.zeros(n),
                   fstar=None, xstar=None,
                   source="MINPACK-2 minimal surface area (Averick, Carter, Moré "
                          "& Xue, ANL MCS-P153-0692, 1992), boundary s^2 - t^2",
                   scalable=True,
                   notes="n = m^2 (a perfect square), default n = 100 (10 x 10 "
                         "interior grid); x0 = 0 in the interior. f* not known in "
                         "closed form; f > 1 (area of a non-planar graph over the "
                         "unit square).")
