"""What a preconditioner costs per iterate: the sparse Hessian, its factor, its solves.

Chained Rosenbrock (a tridiagonal Hessian) at ``--n`` on the numba engine, best and median
of ``--repeat`` calls after a warm-up:

* one HVP frame of k = 3 columns at a new point (``Objective.hessp``);
* ``Objective.sparse_hess`` at a new point: the path the preconditioners use, in which the
  pattern, colouring, seed and recovery plan are made once per traced program and each
  point costs one coloured frame and one gather;
* ``nad.hessian(f, sparse=True)``, the functional form, for comparison;
* the incomplete Cholesky factorisation of that Hessian and one ``C⁻¹ v`` / ``C⁻ᵀ v``.

::

    python benchmarks/preconditioner_costs.py --n 1000000
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

import newtonad as nad
from newtonad.solvers.ichol import incomplete_cholesky


def chained_rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def timed(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    n = args.n
    x = np.linspace(-1.0, 1.0, n)
    obj = nad.Objective(chained_rosenbrock, engine="numba")
    frame = np.random.default_rng(0).standard_normal((n, 3))
    step = itertools.count(1)

    def moved():  # a new point each call, so nothing is reused from the last one
        return x + next(step) * 1e-12

    obj.hessp(moved(), frame)
    h = obj.sparse_hess(moved())
    hessian = nad.hessian(chained_rosenbrock, sparse=True, engine="numba")
    hessian(x)
    ic = incomplete_cholesky(h)
    ic.left(x), ic.right(x)
    rows = [
        ("HVP frame, k = 3", lambda: obj.hessp(moved(), frame)),
        ("Objective.sparse_hess", lambda: obj.sparse_hess(moved())),
        ("nad.hessian(f, sparse=True)", lambda: hessian(x)),
        ("incomplete Cholesky (fill 5)", lambda: incomplete_cholesky(h)),
        ("C^-1 v", lambda: ic.left(x)),
        ("C^-T v", lambda: ic.right(x)),
    ]
    base = None
    print(f"chained Rosenbrock, n = {n}, nnz(H) = {h.nnz}")
    for label, fn in rows:
        best, median = timed(fn, args.repeat)
        base = best if base is None else base
        print(f"{label:32s} best {best * 1e3:9.2f} ms  median {median * 1e3:9.2f} ms  "
              f"{best / base:6.2f} x the frame")


if __name__ == "__main__":
    main()
