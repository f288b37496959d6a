"""Target: the sparse Hessian of chained Rosenbrock at n = 1e6 (3 colours) in at
most 3x the time of one k = 3 HVP frame.

Both are timed warm in one process (kernels compiled, pattern / colouring / recovery plan
cached), interleaved, and the medians compared::

    .venv/bin/python benchmarks/sparse_hessian_speed.py [--n 1000000] [--repeats 15]

``--profile`` also times the pieces of one sparse Hessian (the HVP frame through the api,
recovery) so the overhead over the frame can be located.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import newtonad as nad
from newtonad import problems
from newtonad.sparse import star_colouring


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--profile", action="store_true")
    opts = parser.parse_args()

    prob = problems.get("chained-rosenbrock", n=opts.n)
    f, x = prob.fun, prob.x0.copy()
    hess = nad.hessian(f, sparse=True)
    obj = nad.Objective(f, sparse=True)
    V = np.random.default_rng(0).standard_normal((opts.n, 3))

    # warm: compile kernels, build pattern, colouring, seed and plan
    h = hess(x)
    nad.hvp(f, x, V)
    obj.sparse_hess(x)
    k = int(star_colouring(nad.hessian_sparsity(f)(x)).max()) + 1  # colours
    print(f"chained Rosenbrock n = {opts.n}: nnz = {h.nnz}, colours = {k}, "
          f"ratio nnz / n = {h.nnz / opts.n:.2f}")

    times: dict[str, list[float]] = {"hvp k=3": [], "hessian(sparse=True)": [],
                                      "Objective.sparse_hess": []}
    for _ in range(opts.repeats):
        times["hvp k=3"].append(_timed(lambda: nad.hvp(f, x, V)))
        times["hessian(sparse=True)"].append(_timed(lambda: hess(x)))
        # a new point each time, as in a solver (the Objective caches per point)
        x[0] += 1e-9
        times["Objective.sparse_hess"].append(_timed(lambda: obj.sparse_hess(x)))
    base = statistics.median(times["hvp k=3"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:24s} median {1e3 * med:8.2f} ms   ratio to hvp {med / base:5.2f}")

    if opts.profile:
        _profile(f, x, hess, opts.repeats)


def _profile(f, x, hess, repeats: int) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeats):
        hess(x)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
