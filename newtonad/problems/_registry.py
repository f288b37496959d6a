"""The `Problem` record and the registry behind `get`, `names` and `all_problems`.

Each problem family module (``mgh``, ``cutest``, ...) decorates one builder per
problem with :func:`register`.  A builder takes no argument for a fixed-size
problem and the dimension ``n`` for a scalable one, and returns a fresh
:class:`Problem` each call, so callers may modify ``x0`` freely.

Bound-constrained problems are registered with ``bounded=True``: :func:`get`
builds them like any other, while :func:`names` and :func:`all_problems` list
them only when asked (``bounded=True``), so code that solves the catalogue
without bounds never meets a problem whose optimum needs them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy.optimize import Bounds

Objective = Callable[[np.ndarray], Any]


@dataclass(frozen=True, eq=False)
class Problem:
    """A test problem ``min f(x)``, unconstrained or subject to ``lb <= x <= ub``.

    Instances come from :func:`get` and :func:`all_problems`; each parameter is
    also a read-only attribute of the same name.

    Parameters
    ----------
    name : str
        Registry name, lowercase with hyphens (e.g. ``"chained-rosenbrock"``).
    n : int
        Number of variables.
    fun : callable
        ``fun(x) -> scalar``, written in plain vectorised NumPy so that
        newtonad can trace it.
    x0 : ndarray of float64, shape (n,)
        The standard starting point of the source.
    fstar : float or None
        The optimal value reported in the literature, or None when no value
        is known for this ``n``.  See ``notes`` for local-versus-global caveats.
    xstar : ndarray or None
        A minimiser with value ``fstar`` when one is known, else None.
    source : str
        Citation of the problem definition (e.g. ``"MGH #1"``).
    scalable : bool
        Whether ``n`` may be chosen (``get(name, n=...)``).
    notes : str, optional
        Residual count ``m``, known local minima, provenance of ``fstar``, ...
    bounds : scipy.optimize.Bounds or None, optional
        The box ``lb <= x <= ub`` of a bound-constrained problem (entries may
        be infinite), in the form ``scipy.optimize.minimize`` takes; None (the
        default) for an unconstrained problem.  ``fstar`` and ``xstar`` are
        then the optimum over the box.

    See Also
    --------
    get : Build a problem by name.
    all_problems : Build every problem.

    Examples
    --------
    >>> import numpy as np
    >>> from newtonad import problems
    >>> p = problems.get("rosenbrock")
    >>> p
    Problem(name='rosenbrock', n=2, fstar=0.0, source='MGH #1')
    >>> p.x0, p.xstar
    (array([-1.2,  1. ]), array([1., 1.]))
    >>> bool(np.isclose(p.fun(p.xstar), p.fstar))
    True
    """

    name: str
    n: int
    fun: Objective
    x0: np.ndarray
    fstar: float | None
    xstar: np.ndarray | None
    source: str
    scalable: bool
    notes: str = ""
    bounds: Bounds | None = None

    @property
    def residuals(self) -> Callable[[np.ndarray], Any] | None:
        """The residual function ``r`` with ``fun(x) == sum(r(x)**2)``, or None.

        Set for the problems written as sums of squares of a residual vector (most
        MGH problems), so they can be solved by ``newtonad.least_squares``.

        Returns
        -------
        callable or None
            ``r(x) -> ndarray`` of shape ``(m,)``; None when the objective is not
            written from a residual vector.

        Examples
        --------
        >>> import numpy as np
        >>> from newtonad import problems
        >>> p = problems.get("box-3d")
        >>> r = p.residuals(p.x0)
        >>> r.shape, bool(np.isclose(np.sum(r ** 2), p.fun(p.x0)))
        ((10,), True)
        """
        return getattr(self.fun, "residuals", None)

    def __repr__(self) -> str:
        box = "" if self.bounds is None else ", bounded"
        return (f"Problem(name={self.name!r}, n={self.n}, fstar={self.fstar!r}, "
                f"source={self.source!r}{box})")


@dataclass(frozen=True)
class SizeRule:
    """Which dimensions a scalable problem accepts, and its default.

    Each scalable problem registers one rule; :func:`get` checks a requested
    ``n`` against it and :func:`all_problems` rounds a common ``n`` to it.

    Parameters
    ----------
    default : int
        Dimension used when ``get`` is called without ``n``.
    minimum : int, optional
        Smallest allowed ``n`` (inclusive, default 1).
    maximum : int or None, optional
        Largest allowed ``n`` (inclusive); ``None`` (the default): unbounded.
    multiple_of : int, optional
        ``n`` must be a multiple of this (default 1).
    square : bool, optional
        ``n`` must be a perfect square (2-D grid problems; default False).

    Examples
    --------
    >>> from newtonad.problems import SizeRule
    >>> rule = SizeRule(default=10, minimum=2, multiple_of=2)
    >>> rule.describe()
    'an integer n >= 2, n a multiple of 2'
    >>> rule.allows(7), rule.nearest(7)
    (False, 8)
    """

    default: int
    minimum: int = 1
    maximum: int | None = None
    multiple_of: int = 1
    square: bool = False

    def describe(self) -> str:
        """Describe the allowed dimensions in words, for error messages.

        Returns
        -------
        str
            For example ``"an integer n >= 2, n a multiple of 2"``.

        Examples
        --------
        >>> from newtonad.problems import SizeRule
        >>> SizeRule(default=16, minimum=4, square=True).describe()
        'an integer n >= 4, n a perfect square'
        """
        parts = [f"an integer n >= {self.minimum}"]
        if self.maximum is not None:
            parts.append(f"n <= {self.maximum}")
        if self.multiple_of > 1:
            parts.append(f"n a multiple of {self.multiple_of}")
        if self.square:
            parts.append("n a perfect square")
        return ", ".join(parts)

    def allows(self, n: int) -> bool:
        """Tell whether ``n`` is an allowed dimension.

        Parameters
        ----------
        n : int
            The dimension to check.

        Returns
        -------
        bool
            True when ``n`` satisfies every condition of the rule.

        Examples
        --------
        >>> from newtonad.problems import SizeRule
        >>> rule = SizeRule(default=12, multiple_of=3, maximum=30)
        >>> rule.allows(9), rule.allows(10), rule.allows(33)
        (True, False, False)
        """
        return (n >= self.minimum
                and (self.maximum is None or n <= self.maximum)
                and n % self.multiple_of == 0
                and (not self.square or math.isqrt(n) ** 2 == n))

    def nearest(self, n: int) -> int:
        """Round ``n`` to an allowed dimension.

        Parameters
        ----------
        n : int
            The wanted dimension.

        Returns
        -------
        int
            The smallest allowed dimension ``>= n``; above ``maximum``, the
            largest allowed dimension.

        Examples
        --------
        >>> from newtonad.problems import SizeRule
        >>> SizeRule(default=16, square=True).nearest(10)
        16
        >>> SizeRule(default=10, maximum=31).nearest(100)
        31
        """
        n = max(n, self.minimum)
        if self.maximum is not None and n > self.maximum:
            n = self.maximum
            while not self.allows(n):
                n -= 1
            return n
        while not self.allows(n):
            n += 1
        return n


@dataclass(frozen=True)
class _Entry:
    name: str
    build: Callable[..., Problem]
    size: SizeRule | None  # None: fixed-size problem
    bounded: bool = False


_REGISTRY: dict[str, _Entry] = {}


def register(name: str, size: SizeRule | None = None, *, bounded: bool = False
             ) -> Callable[[Callable[..., Problem]], Callable[..., Problem]]:
    """Register the decorated builder as the problem ``name``.

    Parameters
    ----------
    name : str
        Registry name; must be new.
    size : SizeRule, optional
        Allowed dimensions for a scalable problem; omit for a fixed-size one.
    bounded : bool, optional
        True for a bound-constrained problem (its builder sets
        ``Problem.bounds``); listed by ``names(bounded=True)`` only.
    """
    def decorate(build: Callable[..., Problem]) -> Callable[..., Problem]:
        if name in _REGISTRY:
            raise RuntimeError(f"problem {name!r} registered twice")
        _REGISTRY[name] = _Entry(name, build, size, bounded)
        return build
    return decorate


def names(bounded: bool = False) -> list[str]:
    """List the names of the built-in problems.

    Parameters
    ----------
    bounded : bool, optional
        False (the default): the unconstrained problems; True: the
        bound-constrained ones (``Problem.bounds`` set).

    Returns
    -------
    list of str
        The registry names, sorted; each one is accepted by :func:`get`.

    See Also
    --------
    get : Build a problem by name.

    Examples
    --------
    >>> from newtonad import problems
    >>> len(problems.names())
    57
    >>> problems.names()[:3]
    ['arwhead', 'bard', 'beale']
    >>> problems.names(bounded=True)[:3]
    ['hs003', 'hs004', 'hs005']
    """
    return sorted(name for name, entry in _REGISTRY.items() if entry.bounded == bounded)


def get(name: str, n: int | None = None) -> Problem:
    """Build the built-in problem ``name``.

    Parameters
    ----------
    name : str
        A name from :func:`names`.
    n : int, optional
        Dimension of a scalable problem; its documented default when omitted.
        Must not be given for a fixed-size problem.

    Returns
    -------
    Problem
        A fresh instance (``x0`` may be modified by the caller).

    Raises
    ------
    ValueError
        If ``name`` is unknown, if ``n`` is given for a fixed-size problem, or
        if ``n`` is not an allowed dimension (the message says which are).

    See Also
    --------
    names : The valid names.
    all_problems : Build every problem.

    Examples
    --------
    >>> from newtonad import problems
    >>> p = problems.get("extended-rosenbrock", n=4)
    >>> p.n, p.x0.tolist()
    (4, [-1.2, 1.0, -1.2, 1.0])
    >>> problems.get("extended-rosenbrock", n=3)
    Traceback (most recent call last):
        ...
    ValueError: problem 'extended-rosenbrock' needs an integer n >= 2, n a multiple of 2; got n=3
    """
    entry = _REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"unknown problem {name!r}; valid names are: "
                         + ", ".join(names()) + "; with bounds: "
                         + ", ".join(names(bounded=True)))
    if entry.size is None:
        if n is not None:
            fixed = entry.build().n
            raise ValueError(f"problem {name!r} has fixed size n={fixed}; "
                             f"call get({name!r}) without n")
        return entry.build()
    if n is None:
        n = entry.size.default
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"problem {name!r}: n must be an integer, got {n!r}")
    n = int(n)
    if not entry.size.allows(n):
        raise ValueError(f"problem {name!r} needs {entry.size.describe()}; "
                         f"got n={n}")
    return entry.build(n)


def all_problems(scalable_n: int | None = None, bounded: bool = False) -> list[Problem]:
    """Build every built-in problem, in name order.

    Parameters
    ----------
    scalable_n : int, optional
        Dimension for the scalable problems.  Each uses the smallest allowed
        dimension >= ``scalable_n`` (clipped to its allowed range, e.g. 31 for
        Watson), so one value serves problems that need even ``n``, multiples
        of 3 or 4, or perfect squares.  Default: each problem's own default.
    bounded : bool, optional
        False (the default): the unconstrained problems; True: the
        bound-constrained ones.

    Returns
    -------
    list of Problem
        One fresh instance per name of ``names(bounded)``, in that order.

    See Also
    --------
    get : Build one problem.

    Examples
    --------
    >>> from newtonad import problems
    >>> every = problems.all_problems(scalable_n=100)
    >>> len(every)
    57
    >>> {p.name: p.n for p in every if p.name in ("dixmaana", "watson", "wood")}
    {'dixmaana': 102, 'watson': 31, 'wood': 4}
    """
    out = []
    for name in names(bounded):
        size = _REGISTRY[name].size
        if size is None:
            out.append(get(name))
        elif scalable_n is None:
            out.append(get(name))
        else:
            out.append(get(name, size.nearest(int(scalable_n))))
    return out


def sum_of_squares(residuals: Callable[[np.ndarray], Any]) -> Objective:
    """Objective ``f(x) = sum(r(x)**2)`` for a vectorised residual function."""
    def fun(x: np.ndarray) -> Any:
        r = residuals(x)
        return np.sum(r * r)
    fun.__doc__ = residuals.__doc__
    fun.residuals = residuals  # type: ignore[attr-defined]  # read by Problem.residuals
    return fun


def as_array(values: Any) -> np.ndarray:
    """Copy ``values`` into a fresh 1-D float64 array."""
    return np.array(values, dtype=np.float64).reshape(-1)


def box(lower: Any, upper: Any, n: int) -> Bounds:
    """``scipy.optimize.Bounds`` for ``lower <= x <= upper``, each broadcast to ``(n,)``."""
    lb = np.broadcast_to(np.asarray(lower, dtype=np.float64), (n,)).copy()
    ub = np.broadcast_to(np.asarray(upper, dtype=np.float64), (n,)).copy()
    return Bounds(lb, ub)
