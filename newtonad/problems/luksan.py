"""Problems from the Lukšan–Vlček sparse test collection.

Source: L. Lukšan and J. Vlček, "Sparse and partially separable test problems
for unconstrained and equality constrained optimization", Technical Report
V-767, Institute of Computer Science, Academy of Sciences of the Czech
Republic, 1999.
"""

from __future__ import annotations

import numpy as np

from ._registry import Problem, SizeRule, as_array, register


@register("chained-rosenbrock", SizeRule(default=100, minimum=2))
def chained_rosenbrock(n: int) -> Problem:
    """Chained Rosenbrock: f = sum_{i>=2} 100 (x_{i-1}^2 - x_i)^2 + (x_{i-1} - 1)^2."""
    def fun(x):
        return np.sum(100.0 * (x[:-1] ** 2 - x[1:]) ** 2 + (x[:-1] - 1.0) ** 2)
    x0 = np.where(np.arange(n) % 2 == 0, -1.2, 1.0)
    return Problem(name="chained-rosenbrock", n=n, fun=fun, x0=as_array(x0),
                   fstar=0.0, xstar=np.ones(n),
                   source="Luksan & Vlcek, Report V-767, 1999, problem 1",
                   scalable=True,
                   notes="Default n = 100; x0 = (-1.2, 1, -1.2, 1, ...). Minimum 0 "
                         "at x = 1; for n >= 4 there is also a local minimiser near "
                         "x1 = -1 (Kok & Sandrock, Evol. Comput. 17(3), 2009). "
                         "Same function as CUTEst FLETCHCR.")
