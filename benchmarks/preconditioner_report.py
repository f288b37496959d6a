"""Preconditioned and unpreconditioned Newton-CG-type methods over ``newtonad.problems``.

For each unconstrained problem at ``--n`` (fixed-size problems at their own size) and each
method spec (``method:preconditioner``), one run through ``newtonad.minimize`` with a fresh
``Objective`` after a warm-up run (so compiling is not timed): iterations, Hessian-vector
products (the sparse Hessian frames of the preconditioner included), seconds, and whether
``f`` reached ``f*``. The summary gives, per spec, problems solved, total iterations and the
geometric mean of time relative to the first spec. This is the measurement behind the
default of ``method=None`` (see ``newtonad.solvers.methods``)::

    python benchmarks/preconditioner_report.py --n 1000 \\
        --specs trust-ncg:none newton-cg:none newton-cg:ichol trust-ncg:ichol
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

import newtonad as nad
from newtonad import problems

SOLVED_RTOL = 1e-5


def run(problem, meth, pc, maxiter):
    obj = nad.Objective(problem.fun, engine="numba")
    options = {"maxiter": maxiter}
    if pc is not None:
        options["preconditioner"] = pc
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = nad.minimize(obj, problem.x0.copy(), method=meth, options=options)
        except Exception as exc:  # noqa: BLE001  (a failure is a result)
            return None, f"{type(exc).__name__}: {exc}"
    res.seconds = time.perf_counter() - start
    return res, None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--specs", nargs="+", default=["trust-ncg:none", "newton-cg:ichol"])
    parser.add_argument("--problems", nargs="*", default=None)
    parser.add_argument("--maxiter", type=int, default=5000)
    args = parser.parse_args(argv)
    specs = [(s.split(":")[0], None if s.split(":")[1] == "none" else s.split(":")[1])
             for s in args.specs]
    names = args.problems or problems.names()
    table = {}
    for name in names:
        try:
            problem = problems.get(name, args.n)
        except ValueError:  # a problem of fixed size
            problem = problems.get(name)
        row = []
        for meth, pc in specs:
            run(problem, meth, pc, 3)  # warm-up: trace and compile
            res, error = run(problem, meth, pc, args.maxiter)
            if res is None:
                row.append(None)
                print(f"{name:28s} {meth}:{pc}: {error}", flush=True)
                continue
            solved = (problem.fstar is None or
                      res.fun <= problem.fstar + SOLVED_RTOL * max(1.0, abs(problem.fstar)))
            row.append((res.nit, res.nhev, res.seconds, bool(solved)))
        table[name] = row
        cells = " | ".join("error" if c is None else
                           f"{c[0]:5d} it {c[1]:7d} hv {c[2]:7.3f}s {'ok' if c[3] else 'NO'}"
                           for c in row)
        print(f"{name:28s} n={problem.n:6d} | {cells}", flush=True)
    print("\nspec                   solved  iterations  products  time/first (geo. mean)")
    for j, (meth, pc) in enumerate(specs):
        cells = [row[j] for row in table.values() if row[j] is not None]
        ratios = [row[j][2] / row[0][2] for row in table.values()
                  if row[j] is not None and row[0] is not None and row[0][2] > 0]
        geo = math.exp(np.mean(np.log(ratios))) if ratios else math.nan
        print(f"{meth + ':' + str(pc):22s} {sum(c[3] for c in cells):3d}/{len(table):3d} "
              f"{sum(c[0] for c in cells):10d} {sum(c[1] for c in cells):9d}  {geo:6.2f}")


if __name__ == "__main__":
    main()
