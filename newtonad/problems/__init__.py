"""Built-in test problems, unconstrained and bound-constrained.

Classic problems from Moré, Garbow & Hillstrom (1981), CUTEst, Lukšan & Vlček
and MINPACK-2, each a :class:`Problem` whose objective is plain vectorised NumPy
(so newtonad can trace it), with the standard starting point and, where the
literature gives it, the optimal value and a minimiser.  Bound-constrained
problems (MINPACK-2's and COPS' grid problems, Hock & Schittkowski's boxes)
carry ``Problem.bounds`` and are listed by ``names(bounded=True)``.

>>> from newtonad import problems
>>> p = problems.get("rosenbrock")
>>> float(p.fun(p.x0))
24.199999999999996
>>> problems.get("extended-rosenbrock", n=20).n
20
>>> problems.get("torsion", n=10_000).bounds.lb[:2]
array([-0.00990099, -0.00990099])
"""

from . import (  # noqa: F401  (register the problems)
    bounded_grids,
    constrained,  # constrained problems: their own registry (constrained.get)
    cutest,
    hock_schittkowski,
    luksan,
    mgh,
    minpack2,
)
from ._registry import Problem, SizeRule, all_problems, get, names

__all__ = ["Problem", "SizeRule", "all_problems", "get", "names", "constrained"]
