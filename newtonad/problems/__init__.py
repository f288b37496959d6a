"""Built-in unconstrained test problems.

Classic problems from Moré, Garbow & Hillstrom (1981), CUTEst, Lukšan & Vlček
and MINPACK-2, each a :class:`Problem` whose objective is plain vectorised NumPy
(so newtonad can trace it), with the standard starting point and, where the
literature gives it, the optimal value and a minimiser.

>>> from newtonad import problems
>>> p = problems.get("rosenbrock")
>>> float(p.fun(p.x0))
24.199999999999996
>>> problems.get("extended-rosenbrock", n=20).n
20
"""

from . import cutest, luksan, mgh, minpack2  # noqa: F401  (register the problems)
from ._registry import Problem, SizeRule, all_problems, get, names

__all__ = ["Problem", "SizeRule", "all_problems", "get", "names"]
