"""What guarded traces cost: the branch check per comparison, and a piecewise solve.

1. The check at the 2-variable Rosenbrock. ``Objective.value_and_grad`` of Rosenbrock
   written plainly, and of the same function with ``m`` branches on traced values that
   hold everywhere on the points used (``if x[0] > -1e9 - i:``): each variant's kernel
   computes its branch test as one more output, and the runner checks it. Printed: the
   time per call at a new point (compiled, numba engine), and the extra time per call
   divided by ``m`` -- the cost per comparison (target: at most 0.2 µs).
2. A piecewise objective at n = 1e5, solved by trust-krylov: a weighted least-squares
   term plus a penalty on the squared norm beyond a radius, the penalty chosen with an
   ``if`` on the (scalar) excess -- and the same objective written with ``np.where``.
   Both compiled; each solve timed after a warm-up solve (every path compiled), best of
   a few. Printed: the two times and their ratio (target: at most 1.3).

3. The trace cache: the first Objective of a function (trace, derive, compile, a few
   calls and a short trust-ncg solve), then the same again for the same function and for
   a new function object of the same code over another captured value. Printed: the
   times, the derivations each made, and the ratios (target: at most 5 %).

Run ``python benchmarks/guards.py [--repeat R] [--only check|solve|cache]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

if __package__ in (None, ""):  # run as a script: import newtonad from this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import newtonad as nad  # noqa: E402

ENGINE = "numba"


# ---- 1. the check per comparison at the 2-variable Rosenbrock ---------------------------

def rosen(x: np.ndarray) -> object:
    return 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2


def branching_rosen(m: int) -> Callable:
    """Rosenbrock with ``m`` branches on traced values, each on its own comparison.

    Written out as source with the constants in it: a function reading a closure cell
    or a helper function has its captured values checked on every call, a cost that is
    not the branches'.
    """
    lines = [f"def rosen_with_{m}_branches(x):",
             "    value = 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2"]
    for i in range(m):  # each holds on every point used: one path
        lines += [f"    if x[{i % 2}] > {-1e9 - i!r}:", "        value = value + 0.0 * x[0]"]
    lines.append("    return value")
    namespace: dict = {}
    exec(compile("\n".join(lines), f"<rosen_with_{m}_branches>", "exec"), namespace)
    return namespace[f"rosen_with_{m}_branches"]


def per_call(objectives: list[nad.Objective], points: np.ndarray, repeat: int) -> list[float]:
    """Seconds per value_and_grad call at a new point for each objective: sweeps of a few
    hundred points, the objectives interleaved, the best sweep of each (a loaded machine
    slows some sweeps; the best is the cost itself)."""
    calls = [obj.value_and_grad for obj in objectives]
    for vg in calls:
        for x in points:
            vg(x)  # compiled and warm
    best = [np.inf] * len(calls)
    for _ in range(repeat):
        for j, vg in enumerate(calls):
            start = time.perf_counter()
            for x in points:
                vg(x)
            best[j] = min(best[j], (time.perf_counter() - start) / len(points))
    return best


def check_cost(repeat: int) -> None:
    rng = np.random.default_rng(0)
    points = rng.uniform(-2.0, 2.0, size=(400, 2))
    counts = (1, 4, 16, 64)
    objectives = [nad.Objective(rosen, engine=ENGINE)]
    objectives += [nad.Objective(branching_rosen(m), engine=ENGINE) for m in counts]
    plain, *guarded = per_call(objectives, points, repeat)
    print("1. branch check at the 2-variable Rosenbrock (Objective.value_and_grad at a new "
          f"point, numba, best of {repeat} interleaved sweeps)")
    print(f"   plain Rosenbrock: {plain * 1e6:.3f} µs per call")
    for m, t in zip(counts, guarded):
        extra = t - plain
        print(f"   {m:3d} comparisons: {t * 1e6:.3f} µs per call, {extra * 1e6:+.3f} µs, "
              f"{extra / m * 1e6:+.3f} µs per comparison")


# ---- 2. a piecewise objective at n = 1e5, trust-krylov ----------------------------------

N = 100_000
RADIUS2 = 0.25 * N


def data(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 1.5, n)


def with_if(x: np.ndarray, w: np.ndarray, c: np.ndarray) -> object:
    fit = 0.5 * np.sum(w * (x - c) ** 2) + np.sum(np.cos(x)) * 1e-3
    excess = np.sum(x ** 2) - RADIUS2
    if excess > 0:
        fit = fit + 1e-4 * excess ** 2
    return fit


def with_where(x: np.ndarray, w: np.ndarray, c: np.ndarray) -> object:
    fit = 0.5 * np.sum(w * (x - c) ** 2) + np.sum(np.cos(x)) * 1e-3
    excess = np.sum(x ** 2) - RADIUS2
    return fit + np.where(excess > 0, 1e-4 * excess ** 2, 0.0)


def solve_time(f: Callable, repeat: int) -> tuple[float, object]:
    w, c = data(N)
    x0 = np.zeros(N)
    obj = nad.Objective(f, args=(w, c), engine=ENGINE)
    res = nad.minimize(obj, x0, method="trust-krylov")  # warm-up: every path compiled
    best = np.inf
    for _ in range(repeat):
        obj = nad.Objective(f, args=(w, c), engine=ENGINE)  # the cached programs, cold point
        start = time.perf_counter()
        res = nad.minimize(obj, x0, method="trust-krylov")
        best = min(best, time.perf_counter() - start)
    return best, res


def piecewise_solve(repeat: int) -> None:
    t_where, r_where = solve_time(with_where, repeat)
    t_if, r_if = solve_time(with_if, repeat)
    print(f"2. piecewise objective, n = {N}, trust-krylov (numba, best of {repeat})")
    for name, t, r in (("np.where", t_where, r_where), ("if", t_if, r_if)):
        print(f"   {name:9s} {t * 1e3:8.1f} ms  nit {r.nit:3d}  nfev {r.nfev:3d}  "  # type: ignore[attr-defined]
              f"f {r.fun:.10g}  success {r.success}")  # type: ignore[attr-defined]
    print(f"   ratio if / np.where: {t_if / t_where:.2f} (target <= 1.3); "
          f"max |x_if - x_where| = {np.max(np.abs(r_if.x - r_where.x)):.2e}")  # type: ignore[attr-defined]


# ---- 3. the trace cache -------------------------------------------------------------------

def make_chained(scale: float) -> Callable:
    def chained(x: np.ndarray) -> object:
        return scale * np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    return chained


def first_use(f: Callable, x: np.ndarray) -> float:
    start = time.perf_counter()
    obj = nad.Objective(f, engine=ENGINE)
    obj.value_and_grad(x)
    obj.hessp(x, np.ones_like(x))
    obj.hessp(x, np.ones_like(x))
    nad.minimize(f, x, method="trust-ncg", options={"maxiter": 3})
    return time.perf_counter() - start


def trace_cache() -> None:
    from newtonad.ad import transforms as tf

    x = np.linspace(-1.0, 1.0, 1000)
    f = make_chained(3.0)
    rows = []
    for what, g in (("first Objective", f), ("same function again", f),
                    ("new function object, same code", make_chained(2.0))):
        before = sum(tf.DERIVATIONS.values())
        rows.append((what, first_use(g, x), sum(tf.DERIVATIONS.values()) - before))
    print(f"3. trace cache (n = {x.size}, {ENGINE}; a process that compiled these before "
          "loads kernels from the disk cache)")
    for what, t, derived in rows:
        print(f"   {what:32s} {t * 1e3:9.1f} ms  {derived} derivations  "
              f"{t / rows[0][1] * 100:6.2f} % of the first")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--only", choices=("check", "solve", "cache"))
    options = parser.parse_args()
    if options.only in (None, "check"):
        check_cost(options.repeat)
    if options.only in (None, "solve"):
        piecewise_solve(options.repeat)
    if options.only in (None, "cache"):
        trace_cache()


if __name__ == "__main__":
    main()
