"""Small bound-constrained problems from the Hock-Schittkowski collection.

Source: W. Hock and K. Schittkowski, "Test Examples for Nonlinear Programming
Codes", Lecture Notes in Economics and Mathematical Systems 187, Springer, 1981
(problem numbers as printed there); the optimal values and minimisers are the
ones listed with each problem, also in K. Schittkowski, "An updated set of 306
test problems for nonlinear programming with validated optimal solutions",
University of Bayreuth, 2008.  Only the problems whose sole constraints are
bounds are here.
"""

from __future__ import annotations

import math

import numpy as np

from ._registry import Problem, as_array, box, register


def _hs(number: int, fun, x0, bounds: tuple, fstar: float, xstar, notes: str) -> Problem:
    x0 = as_array(x0)
    return Problem(name=f"hs{number:03d}", n=x0.size, fun=fun, x0=x0, fstar=float(fstar),
                   xstar=as_array(xstar), source=f"Hock & Schittkowski #{number}",
                   scalable=False, notes=notes, bounds=box(bounds[0], bounds[1], x0.size))


@register("hs003", bounded=True)
def hs3() -> Problem:
    """HS 3: f = x2 + 1e-5 (x2 - x1)^2, x2 >= 0."""
    def fun(x):
        return x[1] + 1e-5 * (x[1] - x[0]) ** 2
    return _hs(3, fun, [10.0, 1.0], ([-np.inf, 0.0], np.inf), 0.0, [0.0, 0.0],
               "The bound x2 >= 0 is active at the solution; f is nearly flat in "
               "x1 (curvature 2e-5), so x1 is badly determined.")


@register("hs004", bounded=True)
def hs4() -> Problem:
    """HS 4: f = (x1 + 1)^3 / 3 + x2, x1 >= 1, x2 >= 0."""
    def fun(x):
        return (x[0] + 1.0) ** 3 / 3.0 + x[1]
    return _hs(4, fun, [1.125, 0.125], ([1.0, 0.0], np.inf), 8.0 / 3.0, [1.0, 0.0],
               "Both bounds active at the solution (a vertex); unbounded below "
               "without them.")


@register("hs005", bounded=True)
def hs5() -> Problem:
    """HS 5: f = sin(x1 + x2) + (x1 - x2)^2 - 1.5 x1 + 2.5 x2 + 1 on a box."""
    def fun(x):
        return (np.sin(x[0] + x[1]) + (x[0] - x[1]) ** 2 - 1.5 * x[0] + 2.5 * x[1]
                + 1.0)
    third = math.pi / 3.0
    return _hs(5, fun, [0.0, 0.0], ([-1.5, -3.0], [4.0, 3.0]),
               -(3.0 ** 0.5) / 2.0 - third, [0.5 - third, -0.5 - third],
               "McCormick's function; bounds -1.5 <= x1 <= 4, -3 <= x2 <= 3, "
               "inactive at the solution x* = (1/2 - pi/3, -1/2 - pi/3), "
               "f* = -sqrt(3)/2 - pi/3.")


@register("hs025", bounded=True)
def hs25() -> Problem:
    """HS 25: the Gulf research problem on a box (99 residuals)."""
    i = np.arange(1, 100, dtype=np.float64)
    u = 25.0 + (-50.0 * np.log(0.01 * i)) ** (2.0 / 3.0)

    def residuals(x):
        # (u_i - x2)^x3 as exp(x3 log(u_i - x2)): u_i > 25.6 >= x2 inside the box
        power = np.exp(x[2] * np.log(u - x[1]))
        return -0.01 * i + np.exp(-power / x[0])

    def fun(x):
        r = residuals(x)
        return np.sum(r * r)
    fun.residuals = residuals  # type: ignore[attr-defined]  # read by Problem.residuals
    return _hs(25, fun, [100.0, 12.5, 3.0], ([0.1, 0.0, 0.0], [100.0, 25.6, 5.0]),
               0.0, [50.0, 25.0, 1.5],
               "m = 99 residuals; bounds 0.1 <= x1 <= 100, 0 <= x2 <= 25.6, "
               "0 <= x3 <= 5, inactive at x* = (50, 25, 1.5); x0 is on the bound "
               "x1 = 100.")


@register("hs038", bounded=True)
def hs38() -> Problem:
    """HS 38: Colville's (Wood's) function on the box -10 <= x <= 10."""
    def fun(x):
        x1, x2, x3, x4 = x[0], x[1], x[2], x[3]
        return (100.0 * (x2 - x1 ** 2) ** 2 + (1.0 - x1) ** 2
                + 90.0 * (x4 - x3 ** 2) ** 2 + (1.0 - x3) ** 2
                + 10.1 * ((x2 - 1.0) ** 2 + (x4 - 1.0) ** 2)
                + 19.8 * (x2 - 1.0) * (x4 - 1.0))
    return _hs(38, fun, [-3.0, -1.0, -3.0, -1.0], (-10.0, 10.0), 0.0, [1.0] * 4,
               "Bounds inactive at the solution x* = (1, 1, 1, 1).")


@register("hs045", bounded=True)
def hs45() -> Problem:
    """HS 45: f = 2 - x1 x2 x3 x4 x5 / 120, 0 <= x_i <= i."""
    def fun(x):
        return 2.0 - x[0] * x[1] * x[2] * x[3] * x[4] / 120.0
    return _hs(45, fun, [2.0] * 5, (0.0, [1.0, 2.0, 3.0, 4.0, 5.0]), 1.0,
               [1.0, 2.0, 3.0, 4.0, 5.0],
               "Every upper bound active at x* = (1, 2, 3, 4, 5). The published "
               "x0 = (2, ..., 2) is outside the box (x1 <= 1): solvers project it "
               "first, as L-BFGS-B does.")


@register("hs110", bounded=True)
def hs110() -> Problem:
    """HS 110: f = sum (log(x_i - 2)^2 + log(10 - x_i)^2) - (prod x_i)^0.2."""
    def fun(x):
        geometric = np.exp(0.2 * np.sum(np.log(x)))   # (prod x_i)^0.2, x_i > 2
        return np.sum(np.log(x - 2.0) ** 2 + np.log(10.0 - x) ** 2) - geometric
    return _hs(110, fun, [9.0] * 10, (2.001, 9.999), -45.77846971,
               [9.35025655] * 10,
               "n = 10; bounds 2.001 <= x_i <= 9.999, inactive at the solution "
               "x_i = 9.35025655; f defined only inside (2, 10).")
