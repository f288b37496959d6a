"""Command line: ``python -m newtonad demo``."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def chained_rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def demo(n: int = 1000) -> int:
    """Minimise chained Rosenbrock with scipy's trust-ncg fed by newtonad's jac and hessp."""
    import scipy.optimize

    import newtonad as nad

    x0 = np.tile([-1.2, 1.0], n // 2)
    obj = nad.Objective(chained_rosenbrock)
    start = time.perf_counter()
    res = scipy.optimize.minimize(obj.fun, x0, jac=obj.jac, hessp=obj.hessp,
                                  method="trust-ncg", options={"gtol": 1e-8, "maxiter": 20000})
    elapsed = time.perf_counter() - start
    print(f"chained Rosenbrock, n = {n}: scipy.optimize.minimize(method='trust-ncg') "
          "with newtonad jac and hessp\n")
    print("| iterations | f evals | grad evals | Hessian-vector products | final f | time (s) |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| {res.nit} | {obj.nfev} | {obj.njev} | {obj.nhev} | {res.fun:.3e} | {elapsed:.2f} |")
    print(f"\n{res.message}")
    return 0 if res.fun < 1e-8 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m newtonad",
                                     description="newtonad: AD embedded in Newton solvers")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command")
    d = sub.add_parser("demo", help="minimise chained Rosenbrock and print a table")
    d.add_argument("--n", type=int, default=1000, help="number of variables (even)")
    args = parser.parse_args(argv)
    if args.version:
        import newtonad

        print(newtonad.__version__)
        return 0
    if args.command == "demo":
        return demo(args.n)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
