"""Moré–Garbow–Hillstrom test problems.

Source: J. J. Moré, B. S. Garbow and K. E. Hillstrom, "Testing unconstrained
optimization software", ACM Trans. Math. Software 7(1):17–41, 1981 ("MGH #k" is
problem k of that paper).  Every problem is a sum of squares ``f = sum r_i(x)**2``
of ``m`` residuals; each residual vector is written over its data index with
broadcasting.  Optimal values are the ones MGH report (six significant digits);
minimisers quoted to many digits come from the MINPACK-1 test results
(Moré, Garbow and Hillstrom, "User guide for MINPACK-1", ANL-80-74, 1980).

Chebyquad (MGH #35) is left out.
"""

from __future__ import annotations

import numpy as np

from ._registry import Problem, SizeRule, as_array, register, sum_of_squares

_MINPACK = "MINPACK-1 test results (ANL-80-74)"


def _fixed(name: str, number: int, fun, x0, fstar, xstar=None, notes: str = ""
           ) -> Problem:
    return Problem(name=name, n=len(x0), fun=fun, x0=as_array(x0),
                   fstar=fstar, xstar=None if xstar is None else as_array(xstar),
                   source=f"MGH #{number}", scalable=False, notes=notes)


def _scalable(name: str, number: int, n: int, fun, x0, fstar, xstar=None,
              notes: str = "") -> Problem:
    return Problem(name=name, n=n, fun=fun, x0=as_array(x0),
                   fstar=fstar, xstar=None if xstar is None else as_array(xstar),
                   source=f"MGH #{number}", scalable=True, notes=notes)


# ---------------------------------------------------------------------------
# Fixed-size problems (MGH #1 - #20)
# ---------------------------------------------------------------------------

@register("rosenbrock")
def rosenbrock() -> Problem:
    """MGH #1: r = (10 (x2 - x1^2), 1 - x1)."""
    def fun(x):
        return 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2
    return _fixed("rosenbrock", 1, fun, [-1.2, 1.0], 0.0, [1.0, 1.0],
                  notes="m = 2.")


@register("freudenstein-roth")
def freudenstein_roth() -> Problem:
    """MGH #2: r1 = -13 + x1 + ((5 - x2) x2 - 2) x2, r2 = -29 + x1 + ((x2 + 1) x2 - 14) x2."""
    def fun(x):
        r1 = -13.0 + x[0] + ((5.0 - x[1]) * x[1] - 2.0) * x[1]
        r2 = -29.0 + x[0] + ((x[1] + 1.0) * x[1] - 14.0) * x[1]
        return r1 ** 2 + r2 ** 2
    return _fixed("freudenstein-roth", 2, fun, [0.5, -2.0], 0.0, [5.0, 4.0],
                  notes="m = 2. Global minimum 0 at (5, 4); MGH also list the local "
                        "minimum f = 48.9842 at (11.41..., -0.8968...), which "
                        "descent methods started from x0 usually find.")


@register("powell-badly-scaled")
def powell_badly_scaled() -> Problem:
    """MGH #3: r1 = 1e4 x1 x2 - 1, r2 = exp(-x1) + exp(-x2) - 1.0001."""
    def fun(x):
        r1 = 1e4 * x[0] * x[1] - 1.0
        r2 = np.exp(-x[0]) + np.exp(-x[1]) - 1.0001
        return r1 ** 2 + r2 ** 2
    return _fixed("powell-badly-scaled", 3, fun, [0.0, 1.0], 0.0,
                  notes="m = 2. Minimum 0 at (1.098...e-5, 9.106...) (MGH give the "
                        "minimiser to four digits only, so xstar is None).")


@register("brown-badly-scaled")
def brown_badly_scaled() -> Problem:
    """MGH #4: r = (x1 - 1e6, x2 - 2e-6, x1 x2 - 2)."""
    def fun(x):
        return ((x[0] - 1e6) ** 2 + (x[1] - 2e-6) ** 2
                + (x[0] * x[1] - 2.0) ** 2)
    return _fixed("brown-badly-scaled", 4, fun, [1.0, 1.0], 0.0, [1e6, 2e-6],
                  notes="m = 3.")


@register("beale")
def beale() -> Problem:
    """MGH #5: r_i = y_i - x1 (1 - x2^i), y = (1.5, 2.25, 2.625)."""
    def fun(x):
        return ((1.5 - x[0] * (1.0 - x[1])) ** 2
                + (2.25 - x[0] * (1.0 - x[1] ** 2)) ** 2
                + (2.625 - x[0] * (1.0 - x[1] ** 3)) ** 2)
    return _fixed("beale", 5, fun, [1.0, 1.0], 0.0, [3.0, 0.5], notes="m = 3.")


@register("jennrich-sampson")
def jennrich_sampson() -> Problem:
    """MGH #6: r_i = 2 + 2i - (exp(i x1) + exp(i x2)), i = 1..10."""
    i = np.arange(1, 11, dtype=float)

    @sum_of_squares
    def residuals(x):
        return 2.0 + 2.0 * i - (np.exp(i * x[0]) + np.exp(i * x[1]))
    return _fixed("jennrich-sampson", 6, residuals, [0.3, 0.4], 124.362,
                  [0.257819926636811, 0.257829976764542],
                  notes="m = 10. f* = 124.362 at x1 = x2 = 0.2578 (MGH); xstar "
                        f"from the {_MINPACK}.")


@register("helical-valley")
def helical_valley() -> Problem:
    """MGH #7: r = (10 (x3 - 10 theta), 10 (sqrt(x1^2 + x2^2) - 1), x3).

    theta = arctan(x2 / x1) / (2 pi), plus 1/2 when x1 < 0.
    """
    def fun(x):
        theta = (np.arctan(x[1] / x[0]) / (2.0 * np.pi)
                 + np.where(x[0] < 0.0, 0.5, 0.0))
        r1 = 10.0 * (x[2] - 10.0 * theta)
        r2 = 10.0 * (np.sqrt(x[0] ** 2 + x[1] ** 2) - 1.0)
        return r1 ** 2 + r2 ** 2 + x[2] ** 2
    return _fixed("helical-valley", 7, fun, [-1.0, 0.0, 0.0], 0.0, [1.0, 0.0, 0.0],
                  notes="m = 3. theta jumps across x1 = 0 (undefined there).")


@register("bard")
def bard() -> Problem:
    """MGH #8: r_i = y_i - (x1 + u_i / (v_i x2 + w_i x3)).

    u_i = i, v_i = 16 - i, w_i = min(u_i, v_i).
    """
    y = np.array([0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39,
                  0.37, 0.58, 0.73, 0.96, 1.34, 2.10, 4.39])
    u = np.arange(1, 16, dtype=float)
    v = 16.0 - u
    w = np.minimum(u, v)

    @sum_of_squares
    def residuals(x):
        return y - (x[0] + u / (v * x[1] + w * x[2]))
    return _fixed("bard", 8, residuals, [1.0, 1.0, 1.0], 8.21487e-3,
                  [0.0824105765758334, 1.1330366534715, 2.34369463894115],
                  notes="m = 15. MGH also list f = 17.4286 at (0.8406..., -inf, -inf). "
                        f"xstar from the {_MINPACK}.")


@register("gaussian")
def gaussian() -> Problem:
    """MGH #9: r_i = x1 exp(-x2 (t_i - x3)^2 / 2) - y_i, t_i = (8 - i) / 2."""
    y = np.array([0.0009, 0.0044, 0.0175, 0.0540, 0.1295, 0.2420, 0.3521, 0.3989,
                  0.3521, 0.2420, 0.1295, 0.0540, 0.0175, 0.0044, 0.0009])
    t = (8.0 - np.arange(1, 16)) / 2.0

    @sum_of_squares
    def residuals(x):
        return x[0] * np.exp(-0.5 * x[1] * (t - x[2]) ** 2) - y
    return _fixed("gaussian", 9, residuals, [0.4, 1.0, 0.0], 1.12793e-8,
                  [0.398956137838762825, 1.00001908448786647, 0.0],
                  notes="m = 15. xstar and f = 1.12793276961872e-8 as certified in "
                        "the GSL nonlinear least-squares test suite.")


@register("meyer")
def meyer() -> Problem:
    """MGH #10: r_i = x1 exp(x2 / (t_i + x3)) - y_i, t_i = 45 + 5 i."""
    y = np.array([34780.0, 28610.0, 23650.0, 19630.0, 16370.0, 13720.0, 11540.0,
                  9744.0, 8261.0, 7030.0, 6005.0, 5147.0, 4427.0, 3820.0,
                  3307.0, 2872.0])
    t = 45.0 + 5.0 * np.arange(1, 17)

    @sum_of_squares
    def residuals(x):
        return x[0] * np.exp(x[1] / (t + x[2])) - y
    return _fixed("meyer", 10, residuals, [0.02, 4000.0, 250.0], 87.9458,
                  [0.00560963647102661, 6181.34634628659, 345.223634624144],
                  notes=f"m = 16. Very badly scaled. xstar from the {_MINPACK}.")


@register("gulf")
def gulf() -> Problem:
    """MGH #11: r_i = exp(-|y_i - x2|^x3 / x1) - t_i, t_i = i/100, y_i = 25 + (-50 ln t_i)^(2/3)."""
    t = np.arange(1, 100) / 100.0
    y = 25.0 + (-50.0 * np.log(t)) ** (2.0 / 3.0)

    @sum_of_squares
    def residuals(x):
        # |y - x2|^x3 written as exp(x3 log|y - x2|): the exponent is a variable.
        power = np.exp(x[2] * np.log(np.abs(y - x[1])))
        return np.exp(-power / x[0]) - t
    return _fixed("gulf", 11, residuals, [5.0, 2.5, 0.15], 0.0, [50.0, 25.0, 1.5],
                  notes="Gulf research and development function, m = 99 "
                        "(MGH allow n <= m <= 100).")


@register("box-3d")
def box_3d() -> Problem:
    """MGH #12: r_i = exp(-t_i x1) - exp(-t_i x2) - x3 (exp(-t_i) - exp(-10 t_i)), t_i = i/10."""
    t = 0.1 * np.arange(1, 11)
    c = np.exp(-t) - np.exp(-10.0 * t)

    @sum_of_squares
    def residuals(x):
        return np.exp(-t * x[0]) - np.exp(-t * x[1]) - x[2] * c
    return _fixed("box-3d", 12, residuals, [0.0, 10.0, 20.0], 0.0, [1.0, 10.0, 1.0],
                  notes="m = 10. Zero also at (10, 1, -1) and on x1 = x2, x3 = 0.")


@register("powell-singular")
def powell_singular() -> Problem:
    """MGH #13: r = (x1 + 10 x2, 5^.5 (x3 - x4), (x2 - 2 x3)^2, 10^.5 (x1 - x4)^2)."""
    def fun(x):
        return ((x[0] + 10.0 * x[1]) ** 2 + 5.0 * (x[2] - x[3]) ** 2
                + (x[1] - 2.0 * x[2]) ** 4 + 10.0 * (x[0] - x[3]) ** 4)
    return _fixed("powell-singular", 13, fun, [3.0, -1.0, 0.0, 1.0], 0.0,
                  [0.0, 0.0, 0.0, 0.0],
                  notes="m = 4. The Hessian is singular at the minimiser.")


@register("wood")
def wood() -> Problem:
    """MGH #14: Wood function (Colville), 6 residuals."""
    def fun(x):
        return (100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2
                + 90.0 * (x[3] - x[2] ** 2) ** 2 + (1.0 - x[2]) ** 2
                + 10.0 * (x[1] + x[3] - 2.0) ** 2 + 0.1 * (x[1] - x[3]) ** 2)
    return _fixed("wood", 14, fun, [-3.0, -1.0, -3.0, -1.0], 0.0,
                  [1.0, 1.0, 1.0, 1.0], notes="m = 6.")


@register("kowalik-osborne")
def kowalik_osborne() -> Problem:
    """MGH #15: r_i = y_i - x1 (u_i^2 + u_i x2) / (u_i^2 + u_i x3 + x4)."""
    y = np.array([0.1957, 0.1947, 0.1735, 0.1600, 0.0844, 0.0627,
                  0.0456, 0.0342, 0.0323, 0.0235, 0.0246])
    u = np.array([4.0, 2.0, 1.0, 0.5, 0.25, 0.167, 0.125, 0.1,
                  0.0833, 0.0714, 0.0625])

    @sum_of_squares
    def residuals(x):
        return y - x[0] * (u * u + u * x[1]) / (u * u + u * x[2] + x[3])
    return _fixed("kowalik-osborne", 15, residuals, [0.25, 0.39, 0.415, 0.39],
                  3.07505e-4,
                  [0.192807810476249, 0.191262653354071, 0.123052801046931,
                   0.136053221150517],
                  notes="m = 11. MGH also list f = 1.02734e-3 at "
                        f"(+inf, -14.07..., -inf, -inf). xstar from the {_MINPACK}.")


@register("brown-dennis")
def brown_dennis() -> Problem:
    """MGH #16: r_i = (x1 + t_i x2 - exp(t_i))^2 + (x3 + x4 sin t_i - cos t_i)^2, t_i = i/5."""
    t = np.arange(1, 21) / 5.0
    et, st, ct = np.exp(t), np.sin(t), np.cos(t)

    @sum_of_squares
    def residuals(x):
        return (x[0] + t * x[1] - et) ** 2 + (x[2] + x[3] * st - ct) ** 2
    return _fixed("brown-dennis", 16, residuals, [25.0, 5.0, -5.0, -1.0], 85822.2,
                  [-11.59125141003, 13.2024883984741, -0.403574643314272,
                   0.236736269844604],
                  notes=f"m = 20. xstar from the {_MINPACK}.")


@register("osborne-1")
def osborne_1() -> Problem:
    """MGH #17: r_i = y_i - (x1 + x2 exp(-t_i x4) + x3 exp(-t_i x5)), t_i = 10 (i - 1)."""
    y = np.array([0.844, 0.908, 0.932, 0.936, 0.925, 0.908, 0.881, 0.850, 0.818,
                  0.784, 0.751, 0.718, 0.685, 0.658, 0.628, 0.603, 0.580, 0.558,
                  0.538, 0.522, 0.506, 0.490, 0.478, 0.467, 0.457, 0.448, 0.438,
                  0.431, 0.424, 0.420, 0.414, 0.411, 0.406])
    t = 10.0 * np.arange(33)

    @sum_of_squares
    def residuals(x):
        return y - (x[0] + x[1] * np.exp(-t * x[3]) + x[2] * np.exp(-t * x[4]))
    return _fixed("osborne-1", 17, residuals, [0.5, 1.5, -1.0, 0.01, 0.02],
                  5.46489e-5,
                  [0.375410049244025, 1.93584654543108, -1.46468676748716,
                   0.0128675339110439, 0.0221227011813076],
                  notes=f"m = 33. xstar from the {_MINPACK}.")


@register("biggs-exp6")
def biggs_exp6() -> Problem:
    """MGH #18: r_i = x3 e^(-t_i x1) - x4 e^(-t_i x2) + x6 e^(-t_i x5) - y_i, t_i = i/10."""
    t = 0.1 * np.arange(1, 14)
    y = np.exp(-t) - 5.0 * np.exp(-10.0 * t) + 3.0 * np.exp(-4.0 * t)

    @sum_of_squares
    def residuals(x):
        return (x[2] * np.exp(-t * x[0]) - x[3] * np.exp(-t * x[1])
                + x[5] * np.exp(-t * x[4]) - y)
    return _fixed("biggs-exp6", 18, residuals, [1.0, 2.0, 1.0, 1.0, 1.0, 1.0], 0.0,
                  [1.0, 10.0, 1.0, 5.0, 4.0, 3.0],
                  notes="m = 13. Global minimum 0 at (1, 10, 1, 5, 4, 3); MGH also "
                        "list the local minimum f = 5.65565e-3.")


@register("osborne-2")
def osborne_2() -> Problem:
    """MGH #19: r_i = y_i - (x1 e^(-t_i x5) + sum_k x_k e^(-(t_i - x_{k+7})^2 x_{k+4})).

    t_i = (i-1)/10.
    """
    y = np.array([
        1.366, 1.191, 1.112, 1.013, 0.991, 0.885, 0.831, 0.847, 0.786, 0.725,
        0.746, 0.679, 0.608, 0.655, 0.616, 0.606, 0.602, 0.626, 0.651, 0.724,
        0.649, 0.649, 0.694, 0.644, 0.624, 0.661, 0.612, 0.558, 0.533, 0.495,
        0.500, 0.423, 0.395, 0.375, 0.372, 0.391, 0.396, 0.405, 0.428, 0.429,
        0.523, 0.562, 0.607, 0.653, 0.672, 0.708, 0.633, 0.668, 0.645, 0.632,
        0.591, 0.559, 0.597, 0.625, 0.739, 0.710, 0.729, 0.720, 0.636, 0.581,
        0.428, 0.292, 0.162, 0.098, 0.054])
    t = np.arange(65) / 10.0

    @sum_of_squares
    def residuals(x):
        return y - (x[0] * np.exp(-t * x[4])
                    + x[1] * np.exp(-(t - x[8]) ** 2 * x[5])
                    + x[2] * np.exp(-(t - x[9]) ** 2 * x[6])
                    + x[3] * np.exp(-(t - x[10]) ** 2 * x[7]))
    return _fixed("osborne-2", 19, residuals,
                  [1.3, 0.65, 0.65, 0.7, 0.6, 3.0, 5.0, 7.0, 2.0, 4.5, 5.5],
                  4.01377e-2,
                  [1.30997663810096, 0.43155248076, 0.633661261602859,
                   0.599428560991695, 0.754179768272449, 0.904300082378518,
                   1.36579949521007, 4.82373199748107, 2.39868475104871,
                   4.56887554791452, 5.67534206273052],
                  notes=f"m = 65. xstar from the {_MINPACK}.")


# ---------------------------------------------------------------------------
# Scalable problems (MGH #20 - #34)
# ---------------------------------------------------------------------------

# Watson optimal values reported by MGH for n = 6, 9, 12, and minimiser for n = 6
# from the MINPACK-1 test results.
_WATSON_FSTAR = {6: 2.28767e-3, 9: 1.39976e-6, 12: 4.72238e-10}
_WATSON_XSTAR = {6: [-0.0157249615083782, 1.01243488232965, -0.232991722387673,
                     1.26043101102818, -1.51373031394421, 0.99299727291842]}


@register("watson", SizeRule(default=6, minimum=2, maximum=31))
def watson(n: int) -> Problem:
    """MGH #20: r_i = sum_{j>=2} (j-1) x_j t_i^(j-2) - (sum_j x_j t_i^(j-1))^2 - 1, t_i = i/29.

    Plus r_30 = x1 and r_31 = x2 - x1^2 - 1.
    """
    t = np.arange(1, 30) / 29.0
    powers = t[:, None] ** np.arange(n)                 # (29, n): t_i^(j-1)
    dpowers = powers[:, :-1] * np.arange(1, n)          # (29, n-1): (j-1) t_i^(j-2)

    def fun(x):
        r = dpowers @ x[1:] - (powers @ x) ** 2 - 1.0
        return np.sum(r * r) + x[0] ** 2 + (x[1] - x[0] ** 2 - 1.0) ** 2
    return _scalable("watson", 20, n, fun, np.zeros(n), _WATSON_FSTAR.get(n),
                     _WATSON_XSTAR.get(n),
                     notes="m = 31, 2 <= n <= 31, default n = 6. MGH report f* for "
                           "n = 6, 9, 12 only (fstar is None otherwise).")


@register("extended-rosenbrock", SizeRule(default=10, minimum=2, multiple_of=2))
def extended_rosenbrock(n: int) -> Problem:
    """MGH #21: r_{2i-1} = 10 (x_{2i} - x_{2i-1}^2), r_{2i} = 1 - x_{2i-1}."""
    def fun(x):
        odd, even = x[0::2], x[1::2]
        return np.sum(100.0 * (even - odd ** 2) ** 2 + (1.0 - odd) ** 2)
    return _scalable("extended-rosenbrock", 21, n, fun, np.tile([-1.2, 1.0], n // 2),
                     0.0, np.ones(n),
                     notes="m = n, n even, default n = 10. Same function as CUTEst "
                           "SROSENBR.")


@register("extended-powell-singular", SizeRule(default=12, minimum=4, multiple_of=4))
def extended_powell_singular(n: int) -> Problem:
    """MGH #22: Powell singular function on each block of 4 variables."""
    def fun(x):
        a, b, c, d = x[0::4], x[1::4], x[2::4], x[3::4]
        return np.sum((a + 10.0 * b) ** 2 + 5.0 * (c - d) ** 2
                      + (b - 2.0 * c) ** 4 + 10.0 * (a - d) ** 4)
    return _scalable("extended-powell-singular", 22, n, fun,
                     np.tile([3.0, -1.0, 0.0, 1.0], n // 4), 0.0, np.zeros(n),
                     notes="m = n, n a multiple of 4, default n = 12. Singular "
                           "Hessian at the minimiser.")


_PENALTY_1_FSTAR = {4: 2.24997e-5, 10: 7.08765e-5}


@register("penalty-1", SizeRule(default=10, minimum=1))
def penalty_1(n: int) -> Problem:
    """MGH #23: r_i = a^.5 (x_i - 1), r_{n+1} = sum x_j^2 - 1/4, a = 1e-5."""
    a = 1e-5

    def fun(x):
        return a * np.sum((x - 1.0) ** 2) + (np.sum(x * x) - 0.25) ** 2
    return _scalable("penalty-1", 23, n, fun, np.arange(1, n + 1), _PENALTY_1_FSTAR.get(n),
                     notes="m = n + 1, default n = 10. MGH report f* for n = 4 and "
                           "n = 10 only (fstar is None otherwise).")


_PENALTY_2_FSTAR = {4: 9.37629e-6, 10: 2.93660e-4}


@register("penalty-2", SizeRule(default=10, minimum=2))
def penalty_2(n: int) -> Problem:
    """MGH #24: Penalty function II, m = 2n, a = 1e-5.

    r_1 = x1 - 0.2; r_i = a^.5 (e^(x_i/10) + e^(x_{i-1}/10) - y_i), 2 <= i <= n;
    r_i = a^.5 (e^(x_{i-n+1}/10) - e^(-1/10)), n < i < 2n;
    r_2n = sum_j (n - j + 1) x_j^2 - 1; y_i = e^(i/10) + e^((i-1)/10).
    """
    a = 1e-5
    i = np.arange(2, n + 1)
    y = np.exp(i / 10.0) + np.exp((i - 1) / 10.0)
    weights = np.arange(n, 0, -1, dtype=float)          # n - j + 1

    def fun(x):
        e = np.exp(x / 10.0)
        r_pairs = e[1:] + e[:-1] - y
        r_tail = e[1:] - np.exp(-0.1)
        return ((x[0] - 0.2) ** 2 + a * np.sum(r_pairs ** 2) + a * np.sum(r_tail ** 2)
                + (np.sum(weights * x * x) - 1.0) ** 2)
    return _scalable("penalty-2", 24, n, fun, np.full(n, 0.5), _PENALTY_2_FSTAR.get(n),
                     notes="m = 2n, default n = 10. MGH report f* for n = 4 and "
                           "n = 10 only (fstar is None otherwise).")


@register("variably-dimensioned", SizeRule(default=10, minimum=1))
def variably_dimensioned(n: int) -> Problem:
    """MGH #25: r_i = x_i - 1, r_{n+1} = sum j (x_j - 1), r_{n+2} = r_{n+1}^2."""
    j = np.arange(1, n + 1, dtype=float)

    def fun(x):
        s = np.sum(j * (x - 1.0))
        return np.sum((x - 1.0) ** 2) + s ** 2 + s ** 4
    return _scalable("variably-dimensioned", 25, n, fun, 1.0 - j / n, 0.0, np.ones(n),
                     notes="m = n + 2, default n = 10.")


@register("trigonometric", SizeRule(default=10, minimum=1))
def trigonometric(n: int) -> Problem:
    """MGH #26: r_i = n - sum_j cos x_j + i (1 - cos x_i) - sin x_i."""
    i = np.arange(1, n + 1, dtype=float)

    def fun(x):
        c = np.cos(x)
        r = n - np.sum(c) + i * (1.0 - c) - np.sin(x)
        return np.sum(r * r)
    return _scalable("trigonometric", 26, n, fun, np.full(n, 1.0 / n), 0.0,
                     notes="m = n, default n = 10. MGH give f* = 0 without a "
                           "minimiser; the function has non-zero local minima too.")


@register("brown-almost-linear", SizeRule(default=10, minimum=2))
def brown_almost_linear(n: int) -> Problem:
    """MGH #27: r_i = x_i + sum_j x_j - (n + 1), i < n; r_n = prod_j x_j - 1."""
    def fun(x):
        r = x[:-1] + np.sum(x) - (n + 1.0)
        return np.sum(r * r) + (np.prod(x) - 1.0) ** 2
    return _scalable("brown-almost-linear", 27, n, fun, np.full(n, 0.5), 0.0, np.ones(n),
                     notes="m = n, default n = 10. Minimum 0 at (a, ..., a, a^(1-n)) "
                           "with n a^n - (n+1) a^(n-1) + 1 = 0 (a = 1 is one root); "
                           "MGH also list f = 1 at (0, ..., 0, n+1).")


@register("discrete-boundary-value", SizeRule(default=10, minimum=1))
def discrete_boundary_value(n: int) -> Problem:
    """MGH #28: r_i = 2 x_i - x_{i-1} - x_{i+1} + h^2 (x_i + t_i + 1)^3 / 2, x_0 = x_{n+1} = 0."""
    h = 1.0 / (n + 1)
    t = h * np.arange(1, n + 1)
    zero = np.zeros(1)

    def fun(x):
        padded = np.concatenate([zero, x, zero])
        r = 2.0 * x - padded[:-2] - padded[2:] + 0.5 * h * h * (x + t + 1.0) ** 3
        return np.sum(r * r)
    return _scalable("discrete-boundary-value", 28, n, fun, t * (t - 1.0), 0.0,
                     notes="m = n, default n = 10. Minimum 0 at the solution of the "
                           "discretised two-point boundary value problem (no closed "
                           "form).")


@register("discrete-integral-equation", SizeRule(default=10, minimum=1))
def discrete_integral_equation(n: int) -> Problem:
    """MGH #29: r_i = x_i + h/2 [(1 - t_i) sum_{j<=i} t_j c_j + t_i sum_{j>i} (1 - t_j) c_j].

    c_j = (x_j + t_j + 1)^3, h = 1/(n+1), t_j = j h.
    """
    h = 1.0 / (n + 1)
    t = h * np.arange(1, n + 1)

    def fun(x):
        c = (x + t + 1.0) ** 3
        lower = np.cumsum(t * c)                                  # sum over j <= i
        tail = (1.0 - t) * c
        upper = np.sum(tail) - np.cumsum(tail)                    # sum over j > i
        r = x + 0.5 * h * ((1.0 - t) * lower + t * upper)
        return np.sum(r * r)
    return _scalable("discrete-integral-equation", 29, n, fun, t * (t - 1.0), 0.0,
                     notes="m = n, default n = 10. Minimum 0 at the solution of the "
                           "discretised integral equation (no closed form).")


@register("broyden-tridiagonal", SizeRule(default=10, minimum=1))
def broyden_tridiagonal(n: int) -> Problem:
    """MGH #30: r_i = (3 - 2 x_i) x_i - x_{i-1} - 2 x_{i+1} + 1, x_0 = x_{n+1} = 0."""
    zero = np.zeros(1)

    def fun(x):
        padded = np.concatenate([zero, x, zero])
        r = (3.0 - 2.0 * x) * x - padded[:-2] - 2.0 * padded[2:] + 1.0
        return np.sum(r * r)
    return _scalable("broyden-tridiagonal", 30, n, fun, np.full(n, -1.0), 0.0,
                     notes="m = n, default n = 10. Minimiser has no closed form.")


@register("broyden-banded", SizeRule(default=10, minimum=1))
def broyden_banded(n: int) -> Problem:
    """MGH #31: r_i = x_i (2 + 5 x_i^2) + 1 - sum_{j in J_i} x_j (1 + x_j).

    J_i = {j != i : max(1, i - 5) <= j <= min(n, i + 1)}.
    """
    lower, upper = 5, 1

    def fun(x):
        g = x * (1.0 + x)
        padded = np.concatenate([np.zeros(lower), g, np.zeros(upper)])
        band = sum(padded[lower + k: lower + k + n]
                   for k in range(-lower, upper + 1) if k != 0)
        r = x * (2.0 + 5.0 * x * x) + 1.0 - band
        return np.sum(r * r)
    return _scalable("broyden-banded", 31, n, fun, np.full(n, -1.0), 0.0,
                     notes="m = n, default n = 10, ml = 5, mu = 1. Minimiser has no "
                           "closed form.")


@register("linear-full-rank", SizeRule(default=10, minimum=1))
def linear_full_rank(n: int) -> Problem:
    """MGH #32: r_i = x_i - (2/m) sum_j x_j - 1 (i <= n), r_i = -(2/m) sum_j x_j - 1 (i > n).

    m = 2n.
    """
    m = 2 * n

    def fun(x):
        s = 2.0 / m * np.sum(x) + 1.0
        return np.sum((x - s) ** 2) + (m - n) * s ** 2
    return _scalable("linear-full-rank", 32, n, fun, np.ones(n), float(m - n),
                     -np.ones(n),
                     notes="m = 2n here (MGH allow any m >= n), default n = 10; "
                           "f* = m - n at x = -1.")


@register("linear-rank-1", SizeRule(default=10, minimum=1))
def linear_rank_1(n: int) -> Problem:
    """MGH #33: r_i = i (sum_j j x_j) - 1, i = 1..m; m = 2n."""
    m = 2 * n
    i = np.arange(1, m + 1, dtype=float)
    j = np.arange(1, n + 1, dtype=float)

    def fun(x):
        r = i * np.sum(j * x) - 1.0
        return np.sum(r * r)
    xstar = np.zeros(n)
    xstar[0] = 3.0 / (2 * m + 1)
    return _scalable("linear-rank-1", 33, n, fun, np.ones(n),
                     m * (m - 1) / (2.0 * (2 * m + 1)), xstar,
                     notes="m = 2n here, default n = 10; f* = m(m-1)/(2(2m+1)) on the "
                           "hyperplane sum j x_j = 3/(2m+1) (xstar is one point of it).")


@register("linear-rank-1-zero", SizeRule(default=10, minimum=3))
def linear_rank_1_zero(n: int) -> Problem:
    """MGH #34: r_1 = r_m = -1, r_i = (i - 1)(sum_{j=2}^{n-1} j x_j) - 1; m = 2n."""
    m = 2 * n
    i = np.arange(2, m, dtype=float)                  # rows 2 .. m-1
    j = np.arange(2, n, dtype=float)                  # columns 2 .. n-1

    def fun(x):
        r = (i - 1.0) * np.sum(j * x[1:-1]) - 1.0
        return np.sum(r * r) + 2.0
    xstar = np.zeros(n)
    xstar[1] = 3.0 / (2 * m - 3) / 2.0
    return _scalable("linear-rank-1-zero", 34, n, fun, np.ones(n),
                     (m * m + 3 * m - 6) / (2.0 * (2 * m - 3)), xstar,
                     notes="Linear function, rank 1 with zero columns and rows; "
                           "m = 2n here, n >= 3, default n = 10; f* = "
                           "(m^2+3m-6)/(2(2m-3)) on sum_{j=2}^{n-1} j x_j = 3/(2m-3).")
