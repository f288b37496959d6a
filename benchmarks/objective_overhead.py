"""Objective's overhead at a new point, against the bare kernel.

``nad.value_and_grad`` and ``Objective.value_and_grad`` run the same compiled program
(numba engine) at n = 1e6, at a new point every call: four arrays in turn (32 MB, as
large as the last-level cache here, so a point is read from memory), or with
``--hot`` a point written just before the call, as a solver's new iterate is. Two
objectives: Rosenbrock and a cheap one (sum of squares, one pass over
memory).

The contenders take turns call by call, in a new random order at every point, so that
a shared, noisy machine slows all of them alike. Each round prints medians; the last
lines give the overhead as a multiple of the kernel's time: the median over calls of
each call's time over the kernel's call at the same point, minus one. The compiled
runner is also timed alone, without ``nad.value_and_grad``'s checks of ``x`` (a
finiteness test over x, which the Objective does not make), and the overhead against
it is printed too.

``--call fun`` or ``--call fun+jac`` times those calls of the Objective instead (scipy's
``minimize(obj.fun, x0, jac=obj.jac)``), against the same kernel.

Then the per-call cost of a 2-variable Rosenbrock's ``jac`` (ns per call) at the
same x, and alternating between two points.

``--baseline path/to/objective.py`` adds another version of the Objective, loaded
into the same process (it runs on the same kernels): an A/B in one run::

    git show HEAD:newtonad/objective.py > /tmp/objective_base.py
    .venv/bin/python benchmarks/objective_overhead.py --baseline /tmp/objective_base.py
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from typing import Any, Callable

import numpy as np

import newtonad as nad
from newtonad.ad.transforms import value_and_grad_program


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def sum_of_squares(x):
    return np.sum(x * x)


def load_objective(path: str) -> type:
    """The ``Objective`` class of another ``objective.py``, imported inside the newtonad
    package (its relative imports resolve to this checkout's modules)."""
    spec = importlib.util.spec_from_file_location("newtonad._objective_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Objective


def objective_call(obj: Any, what: str) -> Callable[[np.ndarray], Any]:
    """The call of ``obj`` that the benchmark times at each point."""
    if what == "fun":
        return obj.fun
    if what == "fun+jac":  # scipy.optimize.minimize(obj.fun, x0, jac=obj.jac)
        return lambda x: (obj.fun(x), obj.jac(x))
    return obj.value_and_grad


def large_rounds(f: Callable, contenders: dict[str, type], n: int, rounds: int,
                 calls: int, hot: bool, what: str = "value_and_grad"
                 ) -> dict[str, np.ndarray]:
    """Seconds of each call, ``(rounds, calls)`` per contender (``"kernel"`` first); the
    contenders' calls of one column ran one after the other, at the same point."""
    rng = np.random.default_rng(0)
    points = [rng.standard_normal(n) for _ in range(4)]
    bare = nad.value_and_grad(f, engine="numba")
    calls_of: dict[str, Callable[[np.ndarray], Any]] = {"kernel": bare}
    for name, cls in contenders.items():
        calls_of[name] = objective_call(cls(f, engine="numba"), what)
    # the compiled runner alone, without nad.value_and_grad's checks of x (its test of
    # finiteness is a pass over x that the Objective does not make)
    run, data = nad.Objective(f, engine="numba")._compiled(
        points[0], "value_and_grad", 0, value_and_grad_program)
    calls_of["runner"] = lambda x: run(x, *data)
    names = list(calls_of)
    own = {name: np.empty(n) for name in names}  # --hot: each writes its own point
    for call in calls_of.values():  # compile and warm
        for x in points:
            call(x)
    times = {name: np.empty((rounds, calls)) for name in names}
    order = np.random.default_rng(1)
    for r in range(rounds):
        for i in range(calls):
            point = points[i % len(points)]
            # a new order at every point: who runs just before whom (and leaves the
            # caches to it) is not the same every time
            for j in order.permutation(len(names)):
                name = names[j]
                x = point
                if hot:
                    x = own[name]
                    np.copyto(x, point)  # a new iterate, in cache (the same array: the
                    # Objective must see the change in place)
                start = time.perf_counter()
                calls_of[name](x)
                times[name][r, i] = time.perf_counter() - start
    return times


def small_calls(contenders: dict[str, type], repeats: int = 7, calls: int = 20_000
                ) -> dict[str, tuple[float, float]]:
    """Nanoseconds per ``jac`` call of a 2-variable Rosenbrock: (same x, alternating x),
    the best block of ``calls`` over ``repeats`` blocks, contenders in turn."""
    x1, x2 = np.array([-1.2, 1.0]), np.array([0.5, 2.0])
    objectives = {name: cls(rosen, engine="numba") for name, cls in contenders.items()}
    best = {name: [np.inf, np.inf] for name in objectives}
    for obj in objectives.values():
        obj.jac(x1), obj.jac(x2)
    for _ in range(repeats):
        for name, obj in objectives.items():
            jac = obj.jac
            start = time.perf_counter()
            for _ in range(calls):
                jac(x1)
            same = (time.perf_counter() - start) / calls
            start = time.perf_counter()
            for _ in range(calls // 2):
                jac(x1)
                jac(x2)
            alternating = (time.perf_counter() - start) / calls
            best[name][0] = min(best[name][0], same)
            best[name][1] = min(best[name][1], alternating)
    return {name: (b[0] * 1e9, b[1] * 1e9) for name, b in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100, help="calls per round and contender")
    parser.add_argument("--hot", action="store_true", help="write each point just before the call")
    parser.add_argument("--baseline", help="another objective.py to compare with")
    parser.add_argument("--only", choices=["large", "small"], help="run one part")
    parser.add_argument("--call", choices=["value_and_grad", "fun", "fun+jac"],
                        default="value_and_grad", help="what the Objective is asked at n")
    opts = parser.parse_args()
    contenders: dict[str, type] = {"Objective": nad.Objective}
    if opts.baseline:
        contenders["baseline"] = load_objective(opts.baseline)
    if opts.only != "small":
        for f in (rosen, sum_of_squares):
            print(f"{f.__name__}, n = {opts.n}, Objective.{opts.call} at a new point every "
                  f"call{' (written just before it)' if opts.hot else ''}:")
            times = large_rounds(f, contenders, opts.n, opts.rounds, opts.calls, opts.hot,
                                 opts.call)
            kernel = np.median(times["kernel"], axis=1)
            for r in range(opts.rounds):
                print(f"  kernel {kernel[r] * 1e3:6.3f} ms  " + "  ".join(
                    f"{name} {np.median(times[name][r]) * 1e3:6.3f} ms "
                    f"({np.median(times[name][r]) / kernel[r] - 1:5.2f} x)"
                    for name in contenders))
            # each call against the kernel's call at the same point, just before or after
            # it: the load of the moment cancels out
            print("  overhead, median over calls of (call / kernel's call) - 1: " + "  ".join(
                f"{name} {np.median(times[name] / times['kernel']) - 1:.2f} x kernel"
                for name in contenders))
            print("  ... against the runner alone (no checks of x): " + "  ".join(
                f"{name} {np.median(times[name] / times['runner']) - 1:.2f} x runner"
                for name in contenders))
    if opts.only != "large":
        print("2-variable Rosenbrock, jac, ns per call (best block):")
        for name, (same, alternating) in small_calls(contenders).items():
            print(f"  {name:10s} same x {same:6.0f}   alternating {alternating:6.0f}")


if __name__ == "__main__":
    main()
