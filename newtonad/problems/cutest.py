"""Scalable unconstrained problems from the CUTEst collection.

Definitions follow the CUTEst SIF files (N. I. M. Gould, D. Orban and
Ph. L. Toint, "CUTEst: a Constrained and Unconstrained Testing Environment with
safe threads", Comput. Optim. Appl. 60:545–557, 2015), whose headers cite the
original sources repeated in each problem's ``source``.  In SIF a group scale
``s`` divides the group, so a scale of 0.01 below reads as a factor 100.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ._registry import Problem, SizeRule, as_array, register


def _cutest(name: str, n: int, fun, x0, fstar, xstar, source: str, notes: str
            ) -> Problem:
    return Problem(name=name, n=n, fun=fun, x0=as_array(x0), fstar=fstar,
                   xstar=None if xstar is None else as_array(xstar),
                   source=source, scalable=True, notes=notes)


@register("arwhead", SizeRule(default=100, minimum=2))
def arwhead(n: int) -> Problem:
    """ARWHEAD: f = sum_{i<n} (x_i^2 + x_n^2)^2 - 4 x_i + 3."""
    def fun(x):
        head = x[:-1]
        return np.sum((head * head + x[-1] ** 2) ** 2 - 4.0 * head + 3.0)
    xstar = np.ones(n)
    xstar[-1] = 0.0
    return _cutest("arwhead", n, fun, np.ones(n), 0.0, xstar,
                   "CUTEst ARWHEAD; Conn, Gould, Lescrenier & Toint, Report 88/4, "
                   "FUNDP Namur, 1988, problem 55",
                   "Arrow-head Hessian; default n = 100; minimum 0 at "
                   "(1, ..., 1, 0).")


@register("dqdrtic", SizeRule(default=100, minimum=3))
def dqdrtic(n: int) -> Problem:
    """DQDRTIC: f = sum_{i<=n-2} x_i^2 + 100 x_{i+1}^2 + 100 x_{i+2}^2."""
    def fun(x):
        return np.sum(x[:-2] ** 2 + 100.0 * x[1:-1] ** 2 + 100.0 * x[2:] ** 2)
    return _cutest("dqdrtic", n, fun, np.full(n, 3.0), 0.0, np.zeros(n),
                   "CUTEst DQDRTIC; Toint, Report 83/4, FUNDP Namur, 1983, problem 22",
                   "Diagonal convex quadratic; default n = 100.")


# Optimal values of ENGVAL1.  n = 2: f >= x1^4 - 4 x1 + 3 = (x1 - 1)^2 (x1^2 + 2 x1 + 3)
# >= 0, with equality at (1, 0).  n = 10: the value listed by the OPM collection
# (Gratton & Toint, 2018, engval1.m).
_ENGVAL1_FSTAR = {2: 0.0, 10: 9.177469957181389}


@register("engval1", SizeRule(default=10, minimum=2))
def engval1(n: int) -> Problem:
    """ENGVAL1: f = sum_{i<n} (x_i^2 + x_{i+1}^2)^2 - 4 x_i + 3."""
    def fun(x):
        return np.sum((x[:-1] ** 2 + x[1:] ** 2) ** 2 - 4.0 * x[:-1] + 3.0)
    return _cutest("engval1", n, fun, np.full(n, 2.0), _ENGVAL1_FSTAR.get(n),
                   [1.0, 0.0] if n == 2 else None,
                   "CUTEst ENGVAL1; Toint, Report 83/4, FUNDP Namur, 1983, "
                   "problem 31",
                   "Default n = 10. f* known for n = 2 (0 at (1, 0)) and n = 10 "
                   "(9.177469957181389, OPM collection); fstar is None otherwise.")


@register("tridia", SizeRule(default=100, minimum=1))
def tridia(n: int) -> Problem:
    """TRIDIA: f = (x_1 - 1)^2 + sum_{i>=2} i (2 x_i - x_{i-1})^2 (alpha=2, beta=gamma=delta=1)."""
    i = np.arange(2, n + 1, dtype=float)

    def fun(x):
        return (x[0] - 1.0) ** 2 + np.sum(i * (2.0 * x[1:] - x[:-1]) ** 2)
    return _cutest("tridia", n, fun, np.ones(n), 0.0, 2.0 ** -np.arange(n),
                   "CUTEst TRIDIA (Shanno); Toint, Report 83/4, FUNDP Namur, 1983, "
                   "problem 8",
                   "Convex quadratic with tridiagonal Hessian; default n = 100; "
                   "minimum 0 at x_i = 2^(1-i).")


# Dixon-Maany parameters (alpha, beta, gamma, delta, (k1, k2, k3, k4)) of the
# CUTEst SIF files DIXMAANA ... DIXMAANL.
_DIXMAAN = {
    "a": (1.0, 0.0, 0.125, 0.125, (0, 0, 0, 0)),
    "b": (1.0, 0.0625, 0.0625, 0.0625, (0, 0, 0, 0)),
    "c": (1.0, 0.125, 0.125, 0.125, (0, 0, 0, 0)),
    "d": (1.0, 0.26, 0.26, 0.26, (0, 0, 0, 0)),
    "e": (1.0, 0.0, 0.125, 0.125, (1, 0, 0, 1)),
    "f": (1.0, 0.0625, 0.0625, 0.0625, (1, 0, 0, 1)),
    "g": (1.0, 0.125, 0.125, 0.125, (1, 0, 0, 1)),
    "h": (1.0, 0.26, 0.26, 0.26, (1, 0, 0, 1)),
    "i": (1.0, 0.0, 0.125, 0.125, (2, 0, 0, 2)),
    "j": (1.0, 0.0625, 0.0625, 0.0625, (2, 0, 0, 2)),
    "k": (1.0, 0.125, 0.125, 0.125, (2, 0, 0, 2)),
    "l": (1.0, 0.26, 0.26, 0.26, (2, 0, 0, 2)),
}


def _dixmaan(letter: str, n: int) -> Problem:
    """DIXMAAN*: n = 3m,

    f = 1 + sum_i alpha (i/n)^k1 x_i^2 + sum_{i<n} beta (i/n)^k2 x_i^2 (x_{i+1} + x_{i+1}^2)^2
          + sum_{i<=2m} gamma (i/n)^k3 x_i^2 x_{i+m}^4 + sum_{i<=m} delta (i/n)^k4 x_i x_{i+2m}.
    """
    alpha, beta, gamma, delta, (k1, k2, k3, k4) = _DIXMAAN[letter]
    m = n // 3
    r = np.arange(1, n + 1) / n
    a = alpha * r ** k1
    b = beta * r[:-1] ** k2
    c = gamma * r[:2 * m] ** k3
    d = delta * r[:m] ** k4

    def fun(x):
        sq = x * x
        return (1.0 + np.sum(a * sq)
                + np.sum(b * sq[:-1] * (x[1:] + sq[1:]) ** 2)
                + np.sum(c * sq[:2 * m] * sq[m:] ** 2)
                + np.sum(d * x[:m] * x[2 * m:]))
    name = f"dixmaan{letter}"
    return _cutest(name, n, fun, np.full(n, 2.0), 1.0, np.zeros(n),
                   f"CUTEst {name.upper()}; Dixon & Maany, TR 206, Numerical "
                   "Optimization Centre, Hatfield Polytechnic, 1988",
                   f"n = 3m, default n = 90; alpha, beta, gamma, delta = {alpha}, "
                   f"{beta}, {gamma}, {delta}; k = {k1, k2, k3, k4}. Minimum 1 at 0 "
                   "(the quartic terms are >= 0 and the quadratic part is positive "
                   "definite: |delta_i| < 2 sqrt(alpha_i alpha_{i+2m}) as "
                   "delta < 2 and k1 = k4).")


for _letter in _DIXMAAN:
    register(f"dixmaan{_letter}", SizeRule(default=90, minimum=3, multiple_of=3))(
        partial(_dixmaan, _letter))


@register("power", SizeRule(default=100, minimum=1))
def power(n: int) -> Problem:
    """POWER: f = (sum_i i x_i^2)^2."""
    i = np.arange(1, n + 1, dtype=float)

    def fun(x):
        return np.sum(i * x * x) ** 2
    return _cutest("power", n, fun, np.ones(n), 0.0, np.zeros(n),
                   "CUTEst POWER; Oren, Management Science 20(5):863-874, 1974",
                   "Default n = 100. Quartic: the Hessian vanishes at the minimiser.")


@register("quartc", SizeRule(default=100, minimum=1))
def quartc(n: int) -> Problem:
    """QUARTC: f = sum_i (x_i - i)^4."""
    i = np.arange(1, n + 1, dtype=float)

    def fun(x):
        return np.sum((x - i) ** 4)
    return _cutest("quartc", n, fun, np.full(n, 2.0), 0.0, i,
                   "CUTEst QUARTC (same function as DQRTIC); Buckley, TR 1989CS-3, "
                   "Dalhousie University, 1989, problem 157",
                   "Default n = 100. Singular Hessian at the minimiser x_i = i.")


@register("fletchcr", SizeRule(default=100, minimum=2))
def fletchcr(n: int) -> Problem:
    """FLETCHCR: f = sum_{i<n} 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 (SIF group scale 0.01)."""
    def fun(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    return _cutest("fletchcr", n, fun, np.zeros(n), 0.0, np.ones(n),
                   "CUTEst FLETCHCR; Fletcher, NA/145, University of Dundee, 1992",
                   "Chained Rosenbrock function as given by Fletcher, started at 0; "
                   "default n = 100.")


@register("liarwhd", SizeRule(default=100, minimum=2))
def liarwhd(n: int) -> Problem:
    """LIARWHD: f = sum_i 4 (x_i^2 - x_1)^2 + (x_i - 1)^2 (SIF group scale 0.25)."""
    def fun(x):
        return np.sum(4.0 * (x * x - x[0]) ** 2 + (x - 1.0) ** 2)
    return _cutest("liarwhd", n, fun, np.full(n, 4.0), 0.0, np.ones(n),
                   "CUTEst LIARWHD; G. Li, SIAM J. Optim., 1990",
                   "Default n = 100.")


@register("nondquar", SizeRule(default=100, minimum=3))
def nondquar(n: int) -> Problem:
    """NONDQUAR: f = (x_1 - x_2)^2 + (x_{n-1} - x_n)^2 + sum_{i<=n-2} (x_i + x_{i+1} + x_n)^4."""
    def fun(x):
        return ((x[0] - x[1]) ** 2 + (x[-2] - x[-1]) ** 2
                + np.sum((x[:-2] + x[1:-1] + x[-1]) ** 4))
    x0 = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return _cutest("nondquar", n, fun, x0, 0.0, np.zeros(n),
                   "CUTEst NONDQUAR; Conn, Gould, Lescrenier & Toint, Report 88/4, "
                   "FUNDP Namur, 1988, problem 57",
                   "Arrow-head Hessian with tridiagonal centre, singular at the "
                   "minimiser; default n = 100; x0 = (1, -1, 1, -1, ...).")
