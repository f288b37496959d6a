"""``newtonad solve PROBLEM``: minimise one built-in problem and report the result."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from .catalog import load_problem
from .errors import UsageError
from .methods import load_minimize, resolve_method
from .progress import Progress
from .runs import Run, solve, warm_up
from .table import fmt_float

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Register ``solve`` on the subcommand parsers ``sub``."""
    p = sub.add_parser(
        "solve", help="minimise one built-in problem",
        description="Minimise one built-in problem (see `newtonad problems`) and print the "
                    "final value, iterations, evaluations and time. Exit status 0 when the "
                    "solver reports success, 1 otherwise.")
    p.add_argument("problem", metavar="PROBLEM", help="problem name, e.g. chained-rosenbrock")
    p.add_argument("--n", type=int, metavar="N", help="size of a scalable problem")
    p.add_argument("--method", "-m", default="trust-ncg", metavar="M",
                   help="newton-cg, trust-ncg (default), trust-krylov, trust-exact, any "
                        "scipy.optimize.minimize method, or scipy:<method>")
    p.add_argument("--disp", action="store_true", help="print the solver's iteration table")
    p.add_argument("--maxiter", type=int, metavar="K", help="iteration limit")
    p.add_argument("--tol", type=float, metavar="TOL", help="tolerance (sets gtol)")
    p.add_argument("--engine", help="AD engine (default: newtonad's default)")
    p.set_defaults(handler=run)


def _report(run: Run, problem: Any, prep: float, out: Any) -> None:
    lines = [("f", fmt_float(run.fun, 6))]
    if problem.fstar is not None:
        lines.append(("f - f*", fmt_float(run.fun - problem.fstar, 3)))
    lines += [
        ("|g|", fmt_float(run.gnorm, 3)),
        ("iterations", str(run.nit)),
        ("evaluations", f"{run.nfev} value+gradient, {run.nhev} Hessian-vector products"),
        ("time", f"{run.time:.3f} s (+ {prep:.3f} s tracing and compiling)"),
        ("status", ("success: " if run.success else "failure: ") + run.message),
    ]
    if run.x is not None:
        x = np.array2string(run.x, precision=6, threshold=8, edgeitems=3,
                            max_line_width=10**6)
        lines.append(("x", x))
    for key, value in lines:
        print(f"  {key:<12} {value}", file=out)


def run(args: argparse.Namespace) -> int:
    """Solve and print; 0 on success, 1 on failure or a solver error."""
    import newtonad.api

    native = load_minimize() is not None
    method = resolve_method(args.method, native_available=native)
    problem = load_problem(args.problem, args.n)
    if args.maxiter is not None and args.maxiter < 1:
        raise UsageError(f"--maxiter must be positive, got {args.maxiter}")
    options: dict[str, Any] = {}
    if args.maxiter is not None:
        options["maxiter"] = args.maxiter
    if args.disp:
        options["disp"] = True
    engine = args.engine or newtonad.api.DEFAULT_ENGINE
    impl = ("scipy.optimize" if method.startswith("scipy:") or not native
            else "newtonad.minimize")
    out = sys.stdout
    fstar = "unknown" if problem.fstar is None else f"{problem.fstar:.6g}"
    print(f"{problem.name}  n = {problem.n}  f* = {fstar}  "
          f"({problem.source})", file=out)
    print(f"method {method.removeprefix('scipy:')} ({impl}), engine {engine!r}\n", file=out)
    out.flush()

    with Progress(enabled=None if not args.disp else False) as status:
        status.update("tracing and compiling")
        prep = warm_up(problem.fun, problem.x0, engine=args.engine,
                       dense=method.endswith(("trust-exact", "dogleg")))
        iterations = 0

        def callback(intermediate_result: Any) -> None:
            nonlocal iterations
            iterations += 1
            fun = getattr(intermediate_result, "fun", None)  # scipy passes x to some methods
            value = "" if fun is None else f", f = {fmt_float(float(fun), 6)}"
            status.update(f"{method}: iteration {iterations}{value}")

        status.update(f"{method}: starting")
        result = solve(problem, method, engine=args.engine, tol=args.tol, options=options,
                       callback=callback)
    if args.disp:
        print("", file=out)
    _report(result, problem, prep, out)
    if result.error is not None:
        print(f"newtonad: solver error: {result.error}", file=sys.stderr)
        return 1
    return 0 if result.success else 1
