"""Solver time per Hessian-vector product on the fixed-size problems, beside scipy's.

For each fixed-size problem of ``newtonad.problems`` (2 to 11 variables) and each method that
``newtonad.minimize`` and ``scipy.optimize.minimize`` both have (newton-cg, trust-ncg,
trust-krylov), one full run of each from the standard start, on the same derivatives:
a newtonad ``Objective`` (compiled kernels) passed to both as ``fun`` / ``jac`` /
``hessp``. Printed per problem and method, for each solver: products, and the run's
wall time outside the objective's calls (value, gradient, products) divided by the
products -- the solver's own time per product -- and the linearised product alone.
This is the time a Python solver spends around each product when the product itself
takes one or two microseconds. Run
``python benchmarks/small_solver_overhead.py [--only NAME ...]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.optimize

if __package__ in (None, ""):  # run as a script: import newtonad from this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import newtonad as nad  # noqa: E402
from newtonad import problems  # noqa: E402

METHODS = ("newton-cg", "trust-ncg", "trust-krylov")


class Timed:
    """The objective's calls, timed, counting Hessian-vector products."""

    def __init__(self, obj: nad.Objective) -> None:
        self.obj = obj
        self.inside = 0.0
        self.products = 0

    def _timed(self, call: Callable, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return call(*args)
        finally:
            self.inside += time.perf_counter() - start

    def fun(self, x: Any) -> float:
        return self._timed(self.obj.fun, x)

    def jac(self, x: Any) -> np.ndarray:
        return self._timed(self.obj.jac, x)

    def hessp(self, x: Any, p: Any) -> np.ndarray:
        self.products += 1
        return self._timed(self.obj.hessp, x, p)

    def linearize_hessp(self, x: Any, **kw: Any) -> Callable:
        op = self.obj.linearize_hessp(x, **kw)

        def counted(v: Any) -> np.ndarray:
            self.products += 1
            return self._timed(op, v)
        return counted


def per_product(name: str, method: str, ours: bool, repeats: int = 5) -> tuple[int, float]:
    """(products, seconds per product outside the objective), the least of ``repeats``."""
    p = problems.get(name)
    best = (0, np.inf)
    for _ in range(repeats):
        t = Timed(nad.Objective(p.fun, engine="numba"))
        start = time.perf_counter()
        if ours:
            nad.minimize(t, p.x0, method=method)
        else:
            scipy.optimize.minimize(t.fun, p.x0, jac=t.jac, hessp=t.hessp, method=method)
        total = time.perf_counter() - start
        if t.products:
            best = min(best, (t.products, (total - t.inside) / t.products), key=lambda r: r[1])
    return best


def apply_seconds(name: str) -> float:
    p = problems.get(name)
    obj = nad.Objective(p.fun, engine="numba")
    lin = obj.linearize_hessp(p.x0)
    v = np.ones(p.n)
    lin(v)
    start = time.perf_counter()
    for _ in range(2000):
        lin(v)
    return (time.perf_counter() - start) / 2000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*")
    ns = ap.parse_args(argv)
    names = ns.only or [n for n in problems.names() if _fixed(n)]
    print(f"{'problem':24s} {'n':>3s} {'method':13s} {'apply us':>8s} {'ours prods':>10s} "
          f"{'us/prod':>8s} {'scipy prods':>11s} {'us/prod':>8s}")
    for name in names:
        for method in METHODS:
            for ours in (True, False):  # warm-up: trace, compile
                per_product(name, method, ours, repeats=1)
            a = apply_seconds(name)
            n_ours, s_ours = per_product(name, method, True)
            n_scipy, s_scipy = per_product(name, method, False)
            print(f"{name:24s} {problems.get(name).n:3d} {method:13s} {a * 1e6:8.2f} "
                  f"{n_ours:10d} {s_ours * 1e6:8.2f} {n_scipy:11d} {s_scipy * 1e6:8.2f}",
                  flush=True)
    return 0


def _fixed(name: str) -> bool:
    from newtonad.problems._registry import _REGISTRY

    return _REGISTRY[name].size is None


if __name__ == "__main__":
    sys.exit(main())
