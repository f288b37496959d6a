"""Constrained test problems: ``min f(x)`` subject to equalities, inequalities and bounds.

Each problem carries its constraints in scipy's own forms (:class:`scipy.optimize.
NonlinearConstraint` with ``lb <= c(x) <= ub``, :class:`~scipy.optimize.LinearConstraint`,
:class:`~scipy.optimize.Bounds`), so ``minimize(p.fun, p.x0, constraints=p.constraints,
bounds=p.bounds)`` works with newtonad's and scipy's methods alike. Objectives and
constraint functions are plain vectorised NumPy, so newtonad traces them.

The small problems are from W. Hock and K. Schittkowski, *Test Examples for Nonlinear
Programming Codes*, Lecture Notes in Economics and Mathematical Systems 187, Springer,
1981 (numbers as there; optimal values and points as printed there, rounded to the digits
given). The scalable problems have sparse constraint Jacobians and a solution known by
construction; each docstring says how.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, NonlinearConstraint

from ._registry import SizeRule
from .minpack2 import surface_area

Constraint = Union[NonlinearConstraint, LinearConstraint]


@dataclass(frozen=True, eq=False)
class ConstrainedProblem:
    """A test problem ``min f(x)`` subject to ``constraints`` and ``bounds``.

    Parameters
    ----------
    name : str
        Registry name, lowercase with hyphens (e.g. ``"hs071"``).
    n : int
        Number of variables.
    fun : callable
        ``fun(x) -> scalar`` in plain NumPy.
    x0 : ndarray of float64, shape (n,)
        The standard starting point of the source (it need not be feasible).
    constraints : tuple of NonlinearConstraint or LinearConstraint
        In scipy's forms; ``lb == ub`` marks an equality.
    bounds : Bounds or None
        Simple bounds, or None.
    fstar : float
        The optimal value given by the source (or known by construction).
    xstar : ndarray or None
        A minimiser with value ``fstar`` where the source gives one.
    source : str
        Citation of the definition.
    scalable : bool
        Whether ``n`` may be chosen.
    notes : str, optional
        Kind of constraints, provenance of ``fstar``, local minima.

    Examples
    --------
    >>> from newtonad.problems import constrained
    >>> p = constrained.get("hs071")
    >>> p
    ConstrainedProblem(name='hs071', n=4, equalities=1, inequalities=1, bounded=True)
    >>> round(p.fstar, 7)
    17.0140173
    """

    name: str
    n: int
    fun: Callable[[np.ndarray], Any]
    x0: np.ndarray
    constraints: tuple[Constraint, ...]
    bounds: Bounds | None
    fstar: float
    xstar: np.ndarray | None
    source: str
    scalable: bool = False
    notes: str = ""

    @property
    def equalities(self) -> int:
        """Number of equality rows (``lb == ub``) over all constraints."""
        return sum(int(np.sum(_lower(c) == _upper(c))) for c in self.constraints)

    @property
    def inequalities(self) -> int:
        """Number of inequality rows (``lb < ub``) over all constraints."""
        return sum(int(np.sum(_lower(c) != _upper(c))) for c in self.constraints)

    def violation(self, x: np.ndarray) -> float:
        """The largest violation of a constraint or bound at ``x`` (0 when feasible).

        Parameters
        ----------
        x : ndarray, shape (n,)
            The point.

        Returns
        -------
        float
            ``max(lb - c(x), c(x) - ub, 0)`` over every row, bounds included.
        """
        x = np.asarray(x, dtype=float)
        worst = 0.0
        for c in self.constraints:
            value = (np.asarray(c.A) @ x if isinstance(c, LinearConstraint)
                     else np.atleast_1d(c.fun(x)))
            worst = max(worst, float(np.max(_lower(c) - value, initial=0.0)),
                        float(np.max(value - _upper(c), initial=0.0)))
        if self.bounds is not None:
            lb, ub = np.broadcast_to(self.bounds.lb, x.shape), np.broadcast_to(self.bounds.ub,
                                                                               x.shape)
            worst = max(worst, float(np.max(lb - x, initial=0.0)),
                        float(np.max(x - ub, initial=0.0)))
        return worst

    def __repr__(self) -> str:
        return (f"ConstrainedProblem(name={self.name!r}, n={self.n}, "
                f"equalities={self.equalities}, inequalities={self.inequalities}, "
                f"bounded={self.bounds is not None})")


def _lower(c: Constraint) -> np.ndarray:
    return np.broadcast_to(np.asarray(c.lb, dtype=np.float64), np.shape(np.asarray(c.ub)))


def _upper(c: Constraint) -> np.ndarray:
    return np.broadcast_to(np.asarray(c.ub, dtype=np.float64), np.shape(np.asarray(c.lb)))


@dataclass(frozen=True)
class _Entry:
    build: Callable[..., ConstrainedProblem]
    size: SizeRule | None


_REGISTRY: dict[str, _Entry] = {}


def _register(name: str, size: SizeRule | None = None
              ) -> Callable[[Callable[..., ConstrainedProblem]], Callable[..., ConstrainedProblem]]:
    def decorate(build: Callable[..., ConstrainedProblem]) -> Callable[..., ConstrainedProblem]:
        if name in _REGISTRY:
            raise ValueError(f"constrained problem {name!r} is registered twice")
        _REGISTRY[name] = _Entry(build, size)
        return build
    return decorate


def names() -> list[str]:
    """The registered constrained problems' names, sorted.

    Returns
    -------
    list of str
        For :func:`get`.
    """
    return sorted(_REGISTRY)


def get(name: str, n: int | None = None) -> ConstrainedProblem:
    """Build the constrained problem ``name`` (a fresh copy each call).

    Parameters
    ----------
    name : str
        One of :func:`names`.
    n : int, optional
        The dimension of a scalable problem (default: its rule's default).

    Returns
    -------
    ConstrainedProblem

    Raises
    ------
    KeyError
        For an unknown name (the message lists the known ones).
    ValueError
        For ``n`` on a fixed-size problem, or an ``n`` the problem does not allow.
    """
    entry = _REGISTRY.get(name)
    if entry is None:
        raise KeyError(f"no constrained problem {name!r}; known: {', '.join(names())}")
    if entry.size is None:
        if n is not None:
            raise ValueError(f"{name!r} has a fixed size; call get({name!r}) without n")
        return entry.build()
    n = entry.size.default if n is None else int(n)
    if not entry.size.allows(n):
        raise ValueError(f"{name!r} takes {entry.size.describe()}; got n = {n}")
    return entry.build(n)


def all_problems(scalable: bool = False) -> list[ConstrainedProblem]:
    """Every fixed-size problem, and the scalable ones at their default size if asked.

    Parameters
    ----------
    scalable : bool, optional
        Include the scalable problems (default False).

    Returns
    -------
    list of ConstrainedProblem
    """
    return [get(name) for name in names()
            if scalable or _REGISTRY[name].size is None]


# ---- Hock & Schittkowski (1981) ---------------------------------------------------------

def _eq(fun: Callable[[np.ndarray], Any], m: int = 1) -> NonlinearConstraint:
    """``fun(x) == 0`` (``m`` rows)."""
    zero = np.zeros(m)
    return NonlinearConstraint(fun, zero, zero)


def _geq(fun: Callable[[np.ndarray], Any], m: int = 1) -> NonlinearConstraint:
    """``fun(x) >= 0`` (``m`` rows), Hock & Schittkowski's form of an inequality."""
    return NonlinearConstraint(fun, np.zeros(m), np.full(m, np.inf))


def _hs(number: int, n: int, fun: Callable[[np.ndarray], Any], x0: Sequence[float],
        constraints: Sequence[Constraint], fstar: float, xstar: Sequence[float] | None,
        bounds: Bounds | None = None, notes: str = "") -> ConstrainedProblem:
    return ConstrainedProblem(
        name=f"hs{number:03d}", n=n, fun=fun, x0=np.array(x0, dtype=float),
        constraints=tuple(constraints), bounds=bounds, fstar=fstar,
        xstar=None if xstar is None else np.array(xstar, dtype=float),
        source=f"Hock & Schittkowski (1981), problem {number}", notes=notes)


@_register("hs006")
def hs006() -> ConstrainedProblem:
    """min (1 - x1)^2  s.t.  10 (x2 - x1^2) = 0."""
    return _hs(6, 2, lambda x: (1.0 - x[0]) ** 2, [-1.2, 1.0],
               [_eq(lambda x: np.stack([10.0 * (x[1] - x[0] ** 2)]))], 0.0, [1.0, 1.0],
               notes="one equality")


@_register("hs007")
def hs007() -> ConstrainedProblem:
    """min log(1 + x1^2) - x2  s.t.  (1 + x1^2)^2 + x2^2 - 4 = 0."""
    return _hs(7, 2, lambda x: np.log(1.0 + x[0] ** 2) - x[1], [2.0, 2.0],
               [_eq(lambda x: np.stack([(1.0 + x[0] ** 2) ** 2 + x[1] ** 2 - 4.0]))],
               -math.sqrt(3.0), [0.0, math.sqrt(3.0)], notes="one equality")


@_register("hs009")
def hs009() -> ConstrainedProblem:
    """min sin(pi x1 / 12) cos(pi x2 / 16)  s.t.  4 x1 - 3 x2 = 0 (linear)."""
    return _hs(9, 2, lambda x: np.sin(np.pi * x[0] / 12.0) * np.cos(np.pi * x[1] / 16.0),
               [0.0, 0.0], [LinearConstraint([[4.0, -3.0]], 0.0, 0.0)], -0.5, [-3.0, -4.0],
               notes="one linear equality; minimisers (12k - 3, 16k - 4) for integer k")


@_register("hs010")
def hs010() -> ConstrainedProblem:
    """min x1 - x2  s.t.  -3 x1^2 + 2 x1 x2 - x2^2 + 1 >= 0."""
    return _hs(10, 2, lambda x: x[0] - x[1], [-10.0, 10.0],
               [_geq(lambda x: np.stack([-3.0 * x[0] ** 2 + 2.0 * x[0] * x[1]
                                         - x[1] ** 2 + 1.0]))],
               -1.0, [0.0, 1.0], notes="one inequality, active")


@_register("hs011")
def hs011() -> ConstrainedProblem:
    """min (x1 - 5)^2 + x2^2 - 25  s.t.  -x1^2 + x2 >= 0."""
    # on the active constraint x2 = x1^2 the stationarity condition is 2 x1^3 + x1 - 5 = 0
    x1 = float(np.real(next(r for r in np.roots([2.0, 0.0, 1.0, -5.0]) if abs(r.imag) < 1e-12)))
    return _hs(11, 2, lambda x: (x[0] - 5.0) ** 2 + x[1] ** 2 - 25.0, [4.9, 0.1],
               [_geq(lambda x: np.stack([x[1] - x[0] ** 2]))],
               -8.498464223, [x1, x1 * x1], notes="one inequality, active")


@_register("hs012")
def hs012() -> ConstrainedProblem:
    """min x1^2 / 2 + x2^2 - x1 x2 - 7 x1 - 7 x2  s.t.  25 - 4 x1^2 - x2^2 >= 0."""
    return _hs(12, 2, lambda x: 0.5 * x[0] ** 2 + x[1] ** 2 - x[0] * x[1] - 7.0 * x[0]
               - 7.0 * x[1], [0.0, 0.0],
               [_geq(lambda x: np.stack([25.0 - 4.0 * x[0] ** 2 - x[1] ** 2]))],
               -30.0, [2.0, 3.0], notes="one inequality, active")


@_register("hs014")
def hs014() -> ConstrainedProblem:
    """min (x1 - 2)^2 + (x2 - 1)^2  s.t.  x1 - 2 x2 + 1 = 0,  1 - x1^2 / 4 - x2^2 >= 0."""
    r7 = math.sqrt(7.0)
    return _hs(14, 2, lambda x: (x[0] - 2.0) ** 2 + (x[1] - 1.0) ** 2, [2.0, 2.0],
               [LinearConstraint([[1.0, -2.0]], -1.0, -1.0),
                _geq(lambda x: np.stack([1.0 - 0.25 * x[0] ** 2 - x[1] ** 2]))],
               9.0 - 23.0 * r7 / 8.0, [0.5 * (r7 - 1.0), 0.25 * (r7 + 1.0)],
               notes="a linear equality and an active inequality")


@_register("hs015")
def hs015() -> ConstrainedProblem:
    """min 100 (x2 - x1^2)^2 + (1 - x1)^2  s.t.  x1 x2 >= 1,  x1 + x2^2 >= 0,  x1 <= 1/2."""
    return _hs(15, 2, lambda x: 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2,
               [-2.0, 1.0],
               [_geq(lambda x: np.stack([x[0] * x[1] - 1.0, x[0] + x[1] ** 2]), 2)],
               306.5, [0.5, 2.0], bounds=Bounds([-np.inf, -np.inf], [0.5, np.inf]),
               notes="two inequalities and an upper bound; the first and the bound active")


@_register("hs021")
def hs021() -> ConstrainedProblem:
    """min x1^2 / 100 + x2^2 - 100  s.t.  10 x1 - x2 >= 10,  2 <= x1 <= 50, -50 <= x2 <= 50."""
    return _hs(21, 2, lambda x: 0.01 * x[0] ** 2 + x[1] ** 2 - 100.0, [-1.0, -1.0],
               [LinearConstraint([[10.0, -1.0]], 10.0, np.inf)], -99.96, [2.0, 0.0],
               bounds=Bounds([2.0, -50.0], [50.0, 50.0]),
               notes="a linear inequality and bounds; x0 violates the bounds")


@_register("hs026")
def hs026() -> ConstrainedProblem:
    """min (x1 - x2)^2 + (x2 - x3)^4  s.t.  (1 + x2^2) x1 + x3^4 - 3 = 0."""
    return _hs(26, 3, lambda x: (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 4, [-2.6, 2.0, 2.0],
               [_eq(lambda x: np.stack([(1.0 + x[1] ** 2) * x[0] + x[2] ** 4 - 3.0]))],
               0.0, [1.0, 1.0, 1.0], notes="one equality; a degenerate minimiser")


@_register("hs027")
def hs027() -> ConstrainedProblem:
    """min (x1 - 1)^2 / 100 + (x2 - x1^2)^2  s.t.  x1 + x3^2 + 1 = 0."""
    return _hs(27, 3, lambda x: 0.01 * (x[0] - 1.0) ** 2 + (x[1] - x[0] ** 2) ** 2,
               [2.0, 2.0, 2.0], [_eq(lambda x: np.stack([x[0] + x[2] ** 2 + 1.0]))],
               0.04, [-1.0, 1.0, 0.0], notes="one equality")


@_register("hs028")
def hs028() -> ConstrainedProblem:
    """min (x1 + x2)^2 + (x2 + x3)^2  s.t.  x1 + 2 x2 + 3 x3 = 1 (linear)."""
    return _hs(28, 3, lambda x: (x[0] + x[1]) ** 2 + (x[1] + x[2]) ** 2, [-4.0, 1.0, 1.0],
               [LinearConstraint([[1.0, 2.0, 3.0]], 1.0, 1.0)], 0.0, [0.5, -0.5, 0.5],
               notes="one linear equality")


@_register("hs035")
def hs035() -> ConstrainedProblem:
    """A convex quadratic with a linear inequality and x >= 0 (Beale)."""
    return _hs(35, 3, lambda x: (9.0 - 8.0 * x[0] - 6.0 * x[1] - 4.0 * x[2]
                                 + 2.0 * x[0] ** 2 + 2.0 * x[1] ** 2 + x[2] ** 2
                                 + 2.0 * x[0] * x[1] + 2.0 * x[0] * x[2]),
               [0.5, 0.5, 0.5], [LinearConstraint([[-1.0, -1.0, -2.0]], -3.0, np.inf)],
               1.0 / 9.0, [4.0 / 3.0, 7.0 / 9.0, 4.0 / 9.0], bounds=Bounds(0.0, np.inf),
               notes="x1 + x2 + 2 x3 <= 3, active; lower bounds inactive")


@_register("hs039")
def hs039() -> ConstrainedProblem:
    """min -x1  s.t.  x2 - x1^3 - x3^2 = 0,  x1^2 - x2 - x4^2 = 0."""
    return _hs(39, 4, lambda x: -x[0], [2.0, 2.0, 2.0, 2.0],
               [_eq(lambda x: np.stack([x[1] - x[0] ** 3 - x[2] ** 2,
                                        x[0] ** 2 - x[1] - x[3] ** 2]), 2)],
               -1.0, [1.0, 1.0, 0.0, 0.0], notes="two equalities")


@_register("hs040")
def hs040() -> ConstrainedProblem:
    """min -x1 x2 x3 x4  s.t.  x1^3 + x2^2 = 1,  x1^2 x4 - x3 = 0,  x4^2 - x2 = 0."""
    return _hs(40, 4, lambda x: -x[0] * x[1] * x[2] * x[3], [0.8, 0.8, 0.8, 0.8],
               [_eq(lambda x: np.stack([x[0] ** 3 + x[1] ** 2 - 1.0,
                                        x[0] ** 2 * x[3] - x[2],
                                        x[3] ** 2 - x[1]]), 3)],
               -0.25, [2.0 ** (-1.0 / 3.0), 2.0 ** -0.5, 2.0 ** (-11.0 / 12.0), 2.0 ** -0.25],
               notes="three equalities")


@_register("hs042")
def hs042() -> ConstrainedProblem:
    """min sum (x_i - i)^2  s.t.  x1 = 2,  x3^2 + x4^2 = 2."""
    r2 = math.sqrt(2.0)
    return _hs(42, 4, lambda x: ((x[0] - 1.0) ** 2 + (x[1] - 2.0) ** 2 + (x[2] - 3.0) ** 2
                                 + (x[3] - 4.0) ** 2), [1.0, 1.0, 1.0, 1.0],
               [LinearConstraint([[1.0, 0.0, 0.0, 0.0]], 2.0, 2.0),
                _eq(lambda x: np.stack([x[2] ** 2 + x[3] ** 2 - 2.0]))],
               28.0 - 10.0 * r2, [2.0, 2.0, 0.6 * r2, 0.8 * r2],
               notes="a linear and a nonlinear equality")


@_register("hs043")
def hs043() -> ConstrainedProblem:
    """Rosen–Suzuki: a convex quadratic with three convex quadratic inequalities."""
    def constraints(x):
        return np.stack([
            8.0 - x[0] ** 2 - x[1] ** 2 - x[2] ** 2 - x[3] ** 2 - x[0] + x[1] - x[2] + x[3],
            10.0 - x[0] ** 2 - 2.0 * x[1] ** 2 - x[2] ** 2 - 2.0 * x[3] ** 2 + x[0] + x[3],
            5.0 - 2.0 * x[0] ** 2 - x[1] ** 2 - x[2] ** 2 - 2.0 * x[0] + x[1] + x[3]])
    return _hs(43, 4, lambda x: (x[0] ** 2 + x[1] ** 2 + 2.0 * x[2] ** 2 + x[3] ** 2
                                 - 5.0 * x[0] - 5.0 * x[1] - 21.0 * x[2] + 7.0 * x[3]),
               [0.0, 0.0, 0.0, 0.0], [_geq(constraints, 3)], -44.0, [0.0, 1.0, 2.0, -1.0],
               notes="three inequalities, the first and third active")


@_register("hs046")
def hs046() -> ConstrainedProblem:
    """min (x1-x2)^2 + (x3-1)^2 + (x4-1)^4 + (x5-1)^6  s.t. two nonlinear equalities."""
    return _hs(46, 5, lambda x: ((x[0] - x[1]) ** 2 + (x[2] - 1.0) ** 2 + (x[3] - 1.0) ** 4
                                 + (x[4] - 1.0) ** 6),
               [0.5 * math.sqrt(2.0), 1.75, 0.5, 2.0, 2.0],
               [_eq(lambda x: np.stack([x[0] ** 2 * x[3] + np.sin(x[3] - x[4]) - 1.0,
                                        x[1] + x[2] ** 4 * x[3] ** 2 - 2.0]), 2)],
               0.0, [1.0, 1.0, 1.0, 1.0, 1.0], notes="two equalities; a degenerate minimiser")


@_register("hs048")
def hs048() -> ConstrainedProblem:
    """min (x1-1)^2 + (x2-x3)^2 + (x4-x5)^2  s.t.  two linear equalities."""
    return _hs(48, 5, lambda x: (x[0] - 1.0) ** 2 + (x[1] - x[2]) ** 2 + (x[3] - x[4]) ** 2,
               [3.0, 5.0, -3.0, 2.0, -2.0],
               [LinearConstraint([[1.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, -2.0, -2.0]],
                                 [5.0, -3.0], [5.0, -3.0])],
               0.0, [1.0, 1.0, 1.0, 1.0, 1.0], notes="two linear equalities")


@_register("hs071")
def hs071() -> ConstrainedProblem:
    """min x1 x4 (x1 + x2 + x3) + x3  s.t.  x1 x2 x3 x4 >= 25,  sum x^2 = 40,  1 <= x <= 5."""
    return _hs(71, 4, lambda x: x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2],
               [1.0, 5.0, 5.0, 1.0],
               [_geq(lambda x: np.stack([x[0] * x[1] * x[2] * x[3] - 25.0])),
                _eq(lambda x: np.stack([np.sum(x ** 2) - 40.0]))],
               17.0140173, [1.0, 4.7429994, 3.8211503, 1.3794082],
               bounds=Bounds(1.0, 5.0),
               notes="mixed: an inequality, an equality and bounds (IPOPT's example)")


@_register("hs076")
def hs076() -> ConstrainedProblem:
    """A convex quadratic with three linear inequalities and x >= 0."""
    return _hs(76, 4, lambda x: (x[0] ** 2 + 0.5 * x[1] ** 2 + x[2] ** 2 + 0.5 * x[3] ** 2
                                 - x[0] * x[2] + x[2] * x[3] - x[0] - 3.0 * x[1] + x[2]
                                 - x[3]),
               [0.5, 0.5, 0.5, 0.5],
               [LinearConstraint([[-1.0, -2.0, -1.0, -1.0], [-3.0, -1.0, -2.0, 1.0],
                                  [0.0, 1.0, 4.0, 0.0]], [-5.0, -4.0, 1.5], np.inf)],
               -4.681818181, [0.2727273, 2.090909, 0.0, 0.5454545],
               bounds=Bounds(0.0, np.inf), notes="linear inequalities; x3 = 0 at a bound")


@_register("hs078")
def hs078() -> ConstrainedProblem:
    """min x1 x2 x3 x4 x5  s.t.  sum x^2 = 10,  x2 x3 = 5 x4 x5,  x1^3 + x2^3 = -1."""
    return _hs(78, 5, lambda x: x[0] * x[1] * x[2] * x[3] * x[4], [-2.0, 1.5, 2.0, -1.0, -1.0],
               [_eq(lambda x: np.stack([np.sum(x ** 2) - 10.0,
                                        x[1] * x[2] - 5.0 * x[3] * x[4],
                                        x[0] ** 3 + x[1] ** 3 + 1.0]), 3)],
               -2.91970041, [-1.717143, 1.595709, 1.827247, -0.7636413, -0.7636450],
               notes="three equalities")


@_register("hs079")
def hs079() -> ConstrainedProblem:
    """A sum of even powers of differences with three nonlinear equalities."""
    r2 = math.sqrt(2.0)
    return _hs(79, 5, lambda x: ((x[0] - 1.0) ** 2 + (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 2
                                 + (x[2] - x[3]) ** 4 + (x[3] - x[4]) ** 4),
               [2.0, 2.0, 2.0, 2.0, 2.0],
               [_eq(lambda x: np.stack([x[0] + x[1] ** 2 + x[2] ** 3 - 2.0 - 3.0 * r2,
                                        x[1] - x[2] ** 2 + x[3] + 2.0 - 2.0 * r2,
                                        x[0] * x[4] - 2.0]), 3)],
               0.0787768209, [1.191127, 1.362603, 1.472818, 1.635017, 1.679081],
               notes="three equalities")


__all__ = ["ConstrainedProblem", "all_problems", "get", "names"]


# ---- scalable problems with sparse constraints ---------------------------------------------

def _chained_rosenbrock(x):
    return np.sum(100.0 * (x[:-1] ** 2 - x[1:]) ** 2 + (x[:-1] - 1.0) ** 2)


def _trig_exp_constraints(x):
    """Lukšan & Vlček's trigonometric-exponential equalities, one per consecutive triple."""
    a, b, c = x[:-2], x[1:-1], x[2:]
    return (3.0 * b ** 3 + 2.0 * c - 5.0 + np.sin(b - c) * np.sin(b + c) + 4.0 * b
            - a * np.exp(a - b) - 3.0)


@_register("chained-rosenbrock-trig-exp", SizeRule(default=1000, minimum=3))
def chained_rosenbrock_trig_exp(n: int) -> ConstrainedProblem:
    """Chained Rosenbrock with n - 2 trigonometric-exponential equality constraints.

    After L. Lukšan and J. Vlček, "Sparse and partially separable test problems for
    unconstrained and equality constrained optimization", Tech. Rep. 767, ICS AS CR,
    1999, problem 5.1. Each constraint couples three consecutive variables, so the
    constraint Jacobian is banded (3 non-zeros a row). ``x = 1`` satisfies every
    constraint and is the unconstrained minimiser of the objective, so it solves the
    problem with ``f* = 0`` and zero multipliers. The start is ``x0 = 2``: from chained
    Rosenbrock's start (-1.2, 1, -1.2, ...) SLSQP and trust-constr both stop at a feasible
    local minimiser with f = 6.2325 (n = 20), one variable far from 1.
    """
    x0 = np.full(n, 2.0)
    return ConstrainedProblem(
        name="chained-rosenbrock-trig-exp", n=n, fun=_chained_rosenbrock, x0=x0,
        constraints=(_eq(_trig_exp_constraints, n - 2),), bounds=None, fstar=0.0,
        xstar=np.ones(n), source="Lukšan & Vlček (1999), problem 5.1", scalable=True,
        notes="n - 2 equalities, banded Jacobian; a local minimiser with f > 0 exists")


@_register("cubic-control", SizeRule(default=1000, minimum=4, multiple_of=2))
def cubic_control(n: int) -> ConstrainedProblem:
    """Tracking control of ``y' = u - y^3`` on [0, 1], Euler steps as equality constraints.

    Variables ``z = (y_1..y_N, u_0..u_{N-1})`` with ``N = n / 2`` and ``y_0 = 1``;
    constraints ``y_{i+1} - y_i - h (u_i - y_i^3) = 0``; objective
    ``h/2 sum (y_i - d_i)^2 + alpha h/2 sum u_i^2`` with ``alpha = 0.1``, ``h = 1 / N``.
    The solution is known by construction: the control ``u(t) = cos(2 pi t)`` and its
    Euler trajectory ``y`` are feasible, and the target ``d`` is chosen so that they
    satisfy the KKT conditions with multipliers ``lambda_i = -alpha u_i`` (from the
    stationarity in ``u``; stationarity in ``y`` then fixes ``d``). The Lagrangian's
    Hessian is diagonal with entries ``h (1 - 6 lambda_i y_i) > 0`` and ``alpha h``, so the
    point is a strict minimiser. The constraint Jacobian has 3 non-zeros a row.
    """
    N = n // 2
    h = 1.0 / N
    alpha = 0.1
    t = h * np.arange(N)
    u_hat = np.cos(2.0 * np.pi * t)
    y_hat = np.empty(N + 1)
    y_hat[0] = 1.0
    for i in range(N):
        y_hat[i + 1] = y_hat[i] + h * (u_hat[i] - y_hat[i] ** 3)
    lam = -alpha * u_hat
    # d/dy_j of sum_i lam_i c_i: lam_{j-1} (from c_{j-1}) + lam_j (-1 + 3 h y_j^2) for j < N
    jt_lam = lam.copy()
    jt_lam[:-1] += lam[1:] * (-1.0 + 3.0 * h * y_hat[1:N] ** 2)
    d = y_hat[1:] - jt_lam / h

    def fun(z):
        y, u = z[:N], z[N:]
        return 0.5 * h * np.sum((y - d) ** 2) + 0.5 * alpha * h * np.sum(u ** 2)

    def dynamics(z):
        y, u = z[:N], z[N:]
        previous = np.concatenate([np.ones(1), y[:-1]])
        return y - previous - h * (u - previous ** 3)

    xstar = np.concatenate([y_hat[1:], u_hat])
    return ConstrainedProblem(
        name="cubic-control", n=n, fun=fun, x0=np.zeros(n),
        constraints=(_eq(dynamics, N),), bounds=None, fstar=float(fun(xstar)), xstar=xstar,
        source="discretised optimal control, solution by construction", scalable=True,
        notes="n / 2 equalities (the dynamics), banded Jacobian; x0 = 0 is infeasible")


def _surface_area_gradient(u: np.ndarray, h: float) -> np.ndarray:
    """The gradient of :func:`.minpack2.surface_area` in every grid value, written out by hand."""
    g = np.zeros_like(u)
    ds = (u[1:, :-1] - u[:-1, :-1]) / h
    dt = (u[:-1, 1:] - u[:-1, :-1]) / h
    a = np.sqrt(1.0 + ds * ds + dt * dt)
    g[1:, :-1] += 0.5 * h * ds / a
    g[:-1, 1:] += 0.5 * h * dt / a
    g[:-1, :-1] -= 0.5 * h * (ds + dt) / a
    es = (u[1:, 1:] - u[:-1, 1:]) / h
    et = (u[1:, 1:] - u[1:, :-1]) / h
    b = np.sqrt(1.0 + es * es + et * et)
    g[1:, 1:] += 0.5 * h * (es + et) / b
    g[:-1, 1:] -= 0.5 * h * es / b
    g[1:, :-1] -= 0.5 * h * et / b
    return g


@_register("loaded-surface-volume", SizeRule(default=1024, minimum=4, square=True))
def loaded_surface_volume(n: int) -> ConstrainedProblem:
    """A minimal surface under a load, with its enclosed volume fixed.

    The MINPACK-2 minimal-surface area on an ``m x m`` interior grid (``n = m^2``,
    boundary data ``s^2 - t^2``, as ``newtonad.problems.get("minimal-surface")``) plus a
    load ``p . u``, subject to the volume ``h^2 sum u = V`` (a dense linear row). The
    solution is known by construction: for the surface ``u* = s^2 - t^2 + sin(pi s)
    sin(pi t) / 2`` the load is ``p = h^2 lambda - grad area(u*)`` with ``lambda = 1``, and
    ``V`` is ``u*``'s volume, so ``u*`` is a KKT point; the problem is convex (a convex
    area, a linear load and a linear constraint), so ``u*`` is its minimiser.
    """
    m = math.isqrt(n)
    h = 1.0 / (m + 1)
    s = np.linspace(0.0, 1.0, m + 2)
    grid = s[:, None] ** 2 - s[None, :] ** 2
    bump = 0.5 * np.sin(np.pi * s)[:, None] * np.sin(np.pi * s)[None, :]
    u_star = grid + bump
    load = h * h * 1.0 - _surface_area_gradient(u_star, h)[1:-1, 1:-1].ravel()
    top, bottom = grid[:1, :], grid[-1:, :]
    left, right = grid[1:-1, :1], grid[1:-1, -1:]

    def fun(x):
        inner = np.concatenate([left, x.reshape(m, m), right], axis=1)
        u = np.concatenate([top, inner, bottom], axis=0)
        return surface_area(u, h) + load @ x

    xstar = u_star[1:-1, 1:-1].ravel()
    volume = h * h * float(np.sum(xstar))
    return ConstrainedProblem(
        name="loaded-surface-volume", n=n, fun=fun, x0=np.zeros(n),
        constraints=(LinearConstraint(np.full((1, n), h * h), volume, volume),), bounds=None,
        fstar=float(fun(xstar)), xstar=xstar,
        source="MINPACK-2 minimal surface (Averick, Carter, Moré & Xue, 1992) with a load "
               "and a volume constraint, solution by construction", scalable=True,
        notes="n = m^2; one linear equality (the volume); convex")
