"""Targets for sparse trust-exact: cost per iteration linear in n, and the
minimal surface at n = 65 536 against trust-ncg.

``scaling`` times the iterations of trust-exact on chained Rosenbrock and
broyden-tridiagonal at several n: a warm-up run (kernels, pattern, colouring and
ordering made) then a timed run of ``--maxiter`` iterations, whose callback stamps give
the time per iteration (mean and median of the intervals)::

    .venv/bin/python benchmarks/sparse_trust_exact_scaling.py scaling [--sizes 1e4 1e5 1e6]

``surface`` solves minimal-surface (default n = 65 536, a 256 x 256 grid) to the default
gtol with trust-ncg and trust-exact (warm kernels; with ``--repeats`` the order
alternates) and prints iterations and seconds::

    .venv/bin/python benchmarks/sparse_trust_exact_scaling.py surface [--n 65536] [--repeats 1]

``--profile`` prints the hottest functions of one timed run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import newtonad as nad
from newtonad import problems


def _run(fun, x0, method: str, maxiter: int | None, profile: bool = False):
    stamps = [time.perf_counter()]
    options = {} if maxiter is None else {"maxiter": maxiter}
    if profile:
        import cProfile
        import pstats
        profiler = cProfile.Profile()
        profiler.enable()
    start = time.perf_counter()
    res = nad.minimize(fun, x0, method=method, options=options,
                       callback=lambda x: stamps.append(time.perf_counter()))
    total = time.perf_counter() - start
    if profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        pstats.Stats(profiler).sort_stats("cumulative").print_callers(12)
    return res, total, np.diff(stamps)


def scaling(sizes: list[int], names: list[str], maxiter: int, profile: bool) -> None:
    for name in names:
        base = None
        for n in sizes:
            prob = problems.get(name, n=n)
            _run(prob.fun, prob.x0, "trust-exact", 2)  # warm-up: compile, pattern, colours
            res, total, steps = _run(prob.fun, prob.x0, "trust-exact", maxiter, profile)
            # the first interval holds the start (f, g and the first Hessian): leave it out
            per_iter = float(np.mean(steps[1:])) if steps.size > 1 else total / max(res.nit, 1)
            base = base or (n, per_iter)
            print(f"{name:22s} n = {n:8d}  nit = {res.nit:3d}  total {total:7.3f} s  "
                  f"per iteration mean {1e3 * per_iter:8.2f} ms  median "
                  f"{1e3 * statistics.median(steps[1:]) if steps.size > 1 else float('nan'):8.2f}"
                  f" ms  ratio to n = {base[0]}: {per_iter / base[1]:7.1f}"
                  f" (linear: {n / base[0]:.0f})")


def surface(n: int, methods: list[str], repeats: int, profile: bool) -> None:
    prob = problems.get("minimal-surface", n=n)
    for method in methods:  # warm-up: kernels, pattern, colouring
        _run(prob.fun, prob.x0, method, 1)
    rows: dict[str, list] = {m: [] for m in methods}
    for i in range(repeats):
        for method in (methods if i % 2 == 0 else methods[::-1]):
            res, total, _ = _run(prob.fun, prob.x0, method, None, profile)
            rows[method].append((res.nit, total, res.fun, float(np.abs(res.jac).max())))
            print(f"  {method}: nit = {res.nit}, {total:.2f} s, success = {res.success} "
                  f"({res.message})", flush=True)
    for method, runs in rows.items():
        times = [r[1] for r in runs]
        nit, _, fun, gnorm = runs[0]
        print(f"minimal-surface n = {n}  {method:12s} nit = {nit:4d}  seconds "
              f"{' '.join(f'{t:.2f}' for t in times)} (median {statistics.median(times):.2f})"
              f"  f = {fun:.12f}  |g|inf = {gnorm:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sc = sub.add_parser("scaling")
    sc.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    sc.add_argument("--problems", nargs="+",
                    default=["chained-rosenbrock", "broyden-tridiagonal"])
    sc.add_argument("--maxiter", type=int, default=10)
    sc.add_argument("--profile", action="store_true")
    su = sub.add_parser("surface")
    su.add_argument("--n", type=int, default=65536)
    su.add_argument("--methods", nargs="+", default=["trust-ncg", "trust-exact"])
    su.add_argument("--repeats", type=int, default=1)
    su.add_argument("--profile", action="store_true")
    opts = parser.parse_args()
    if opts.what == "scaling":
        scaling([int(s) for s in opts.sizes], opts.problems, opts.maxiter, opts.profile)
    else:
        surface(opts.n, opts.methods, opts.repeats, opts.profile)


if __name__ == "__main__":
    main()
