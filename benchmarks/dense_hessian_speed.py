"""Dense Hessians on the compiled (numba) engine beside the NumPy evaluator.

Chained Rosenbrock at several n: ``nad.hessian(f)(x)``, ``Objective.hess`` at a new
point each time (as trust-exact asks) and the solvers' ``FlatProblem.hess`` (the
symmetrised (n, n) matrix trust-exact factorises), each engine warm (every kernel
compiled by a first call, which is not timed), the engines interleaved, medians::

    .venv/bin/python benchmarks/dense_hessian_speed.py [--n 1000 2000 4000] [--repeats 3]

The target is a compiled column no slower than the NumPy one.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import numpy as np

import newtonad as nad
from newtonad import problems
from newtonad.solvers.problem import FlatProblem

ENGINES = ("numba", "numpy")


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _ways(f: Callable, engine: str, n: int) -> dict[str, Callable[[np.ndarray], object]]:
    """The three ways of forming the dense Hessian, on one engine."""
    hessian = nad.hessian(f, engine=engine)
    obj = nad.Objective(f, engine=engine)
    flat = FlatProblem(obj, (n,), dense_hessian_count=True)
    return {"nad.hessian": hessian, "Objective.hess": obj.hess, "FlatProblem.hess": flat.hess}


def measure(n: int, repeats: int) -> dict[tuple[str, str], float]:
    """Median seconds per dense Hessian, by (way, engine), at size ``n``."""
    prob = problems.get("chained-rosenbrock", n=n)
    x = prob.x0.copy()
    ways = {engine: _ways(prob.fun, engine, n) for engine in ENGINES}
    reference = None
    for engine in ENGINES:  # warm: trace, derive, compile
        for way in ways[engine].values():
            h = np.asarray(way(x)).reshape(n, n)
            reference = h if reference is None else reference
            np.testing.assert_allclose(h, reference, rtol=1e-12, atol=1e-9)
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeats):
        x[0] += 1e-9  # a new point: the Objective caches per point
        for engine in ENGINES:
            for name, way in ways[engine].items():
                times.setdefault((name, engine), []).append(_timed(lambda way=way: way(x)))
    return {key: statistics.median(values) for key, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 2000, 4000])
    parser.add_argument("--repeats", type=int, default=3)
    opts = parser.parse_args()
    print(f"{'n':>6} {'way':<18} {'numba (s)':>10} {'numpy (s)':>10} {'numpy/numba':>12}")
    for n in opts.n:
        medians = measure(n, opts.repeats)
        for name in ("nad.hessian", "Objective.hess", "FlatProblem.hess"):
            fast, slow = medians[(name, "numba")], medians[(name, "numpy")]
            print(f"{n:6d} {name:<18} {fast:10.3f} {slow:10.3f} {slow / fast:12.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
