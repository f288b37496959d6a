"""Objective's overhead at a new point (issue 13 item 6), against the bare kernel.

``nad.value_and_grad`` and ``Objective.value_and_grad`` on the same compiled kernel, at
points that change every call (four arrays in turn), medians per round::

    .venv/bin/python benchmarks/objective_overhead.py [--n 1000000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import newtonad as nad


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def median_seconds(call, points, repeats: int = 60) -> float:
    times = []
    for i in range(repeats):
        x = points[i % len(points)]
        start = time.perf_counter()
        call(x)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    rng = np.random.default_rng(0)
    points = [rng.standard_normal(opts.n) for _ in range(4)]
    bare = nad.value_and_grad(rosen, engine="numba")
    obj = nad.Objective(rosen, engine="numba")
    for x in points:  # compile and warm both
        bare(x)
        obj.value_and_grad(x)
    print(f"n = {opts.n}: kernel = nad.value_and_grad, new point every call")
    for _ in range(opts.rounds):
        kernel = median_seconds(bare, points)
        objective = median_seconds(obj.value_and_grad, points)
        print(f"  kernel {kernel * 1e3:7.3f} ms   Objective {objective * 1e3:7.3f} ms   "
              f"overhead {(objective - kernel) / kernel:5.2f} x kernel")


if __name__ == "__main__":
    main()
