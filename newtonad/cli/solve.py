"""``newtonad solve PROBLEM``: minimise one built-in problem and report the result."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

import numpy as np

from .args import add_engine_argument, positive_float, positive_int
from .catalog import load_problem
from .cost import DENSE_HESSIAN, cost_warning
from .disp import ALL_ROWS_UP_TO, IterationFilter
from .methods import resolve_method
from .progress import Progress
from .runs import Prep, Run, prepare, solve
from .table import fmt_float

__all__ = ["add_parser", "run", "timing_lines", "HEARTBEAT"]

#: seconds between progress lines on standard error when it is not a terminal
HEARTBEAT = 30.0


def add_parser(sub: Any) -> None:
    """Register ``solve`` on the subcommand parsers ``sub``."""
    p = sub.add_parser(
        "solve", help="minimise one built-in problem",
        description="Minimise one built-in problem (see `newtonad problems`) and print the "
                    "final value, iterations, evaluations and time. A method whose cost "
                    "grows fast with n (trust-exact's dense Hessian, for instance) is "
                    "warned about before it starts. Long runs show their progress: a "
                    "status line on a terminal, else a line on standard error every "
                    f"{HEARTBEAT:g} s. Exit status 0 when the solver reports success, 1 "
                    "otherwise, 2 for a usage error.")
    p.add_argument("problem", metavar="PROBLEM", help="problem name, e.g. chained-rosenbrock")
    p.add_argument("--n", type=positive_int, metavar="N", help="size of a scalable problem")
    p.add_argument("--method", "-m", default="trust-ncg", metavar="M",
                   help="newton-cg, trust-ncg (default), trust-krylov, trust-exact, any "
                        "scipy.optimize.minimize method, or scipy:<method>")
    p.add_argument("--disp", action="store_true", help="print the solver's iteration table")
    p.add_argument("--disp-every", type=positive_int, metavar="K",
                   help=f"print every K-th iteration and the last (implies --disp; default: "
                        f"every iteration up to {ALL_ROWS_UP_TO}, then every 10th, past 1000 "
                        "every 100th, ...)")
    p.add_argument("--maxiter", type=positive_int, metavar="K", help="iteration limit")
    p.add_argument("--tol", type=positive_float, metavar="TOL",
                   help="tolerance > 0 (sets gtol)")
    add_engine_argument(p)
    p.set_defaults(handler=run)


def background_note() -> str:
    """``"; 2 kernels compiling in the background"`` while the auto engine's worker has
    work, else ``""`` (for the progress line)."""
    from newtonad.ad.engine import background

    waiting = background.activity()
    if not waiting:
        return ""
    return f"; {waiting} kernel{'s' if waiting > 1 else ''} compiling in the background"


def timing_lines(run: Run, prep: Prep) -> list[tuple[str, str]]:
    """The report's time lines: the solve without compilation, and what compiling and
    tracing cost, before the solve and during it (on its path or in the background).

    Examples
    --------
    >>> run = Run("p", 2, 0.0, "trust-ncg", time=1.25, compile_time=0.5)
    >>> for key, value in timing_lines(run, Prep(seconds=0.75, compile_seconds=0.25)):
    ...     print(f"{key}: {value}")
    time: 1.250 s solving
    tracing: 0.500 s before the solve
    compiling: 0.750 s (0.250 s before the solve, 0.500 s during it, excluded from its time)
    """
    lines = [("time", f"{run.time:.3f} s solving"),
             ("tracing", f"{prep.trace_seconds:.3f} s before the solve")]
    compiling = prep.compile_seconds + run.compile_time
    if compiling > 0.0:
        lines.append(("compiling", f"{compiling:.3f} s ({prep.compile_seconds:.3f} s before the "
                                   f"solve, {run.compile_time:.3f} s during it, excluded from "
                                   "its time)"))
    if run.background_compiles:
        lines.append(("background", f"{run.background_compiles} kernels compiled in "
                                    f"{run.background_time:.3f} s by a worker process, off the "
                                    "solver's path (it ran on NumPy until each was ready)"))
    return lines


def _report(run: Run, problem: Any, prep: Prep, out: Any) -> None:
    lines = [("f", fmt_float(run.fun, 6))]
    if problem.fstar is not None:
        lines.append(("f - f*", fmt_float(run.fun - problem.fstar, 3)))
    lines += [
        ("|g|", fmt_float(run.gnorm, 3)),
        ("iterations", str(run.nit)),
        ("evaluations", f"{run.nfev} value+gradient, {run.nhev} Hessian-vector products"),
        *timing_lines(run, prep),
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

    method = resolve_method(args.method)
    problem = load_problem(args.problem, args.n)
    if args.disp_every is not None:  # asking for a stride asks for the table
        args.disp = True
    options: dict[str, Any] = {}
    if args.maxiter is not None:
        options["maxiter"] = args.maxiter
    if args.disp:
        options["disp"] = True
    engine = args.engine or newtonad.api.DEFAULT_ENGINE
    impl = "scipy.optimize" if method.startswith("scipy:") else "newtonad.minimize"
    out = sys.stdout
    fstar = "unknown" if problem.fstar is None else f"{problem.fstar:.6g}"
    print(f"{problem.name}  n = {problem.n}  f* = {fstar}  "
          f"({problem.source})", file=out)
    print(f"method {method.removeprefix('scipy:')} ({impl}), engine {engine!r}\n", file=out)
    out.flush()
    warning = cost_warning(method, problem.n)
    if warning:
        print(f"newtonad: warning: {warning}", file=sys.stderr)
    dense = method.removeprefix("scipy:") in DENSE_HESSIAN

    with Progress(heartbeat=HEARTBEAT) as status:
        status.update("tracing and compiling" + (f" (and a dense {problem.n} x {problem.n} "
                                                 "Hessian)" if dense else ""))
        prep = prepare(problem.fun, problem.x0, engine=args.engine, dense=dense)
        iterations = 0
        last = status.elapsed()

        def callback(intermediate_result: Any) -> None:
            nonlocal iterations, last
            iterations += 1
            now = status.elapsed()
            fun = getattr(intermediate_result, "fun", None)  # scipy passes x to some methods
            value = "" if fun is None else f", f = {fmt_float(float(fun), 6)}"
            status.update(f"{method}: iteration {iterations}{value} ({now - last:.1f} s)"
                          + background_note())
            last = now

        status.update(f"{method}: first iteration")
        table = IterationFilter(lambda line: status.write(line, out), every=args.disp_every)
        with contextlib.redirect_stdout(table):
            result = solve(problem, method, engine=args.engine, tol=args.tol, options=options,
                           callback=callback)
        table.finish()
    if args.disp:
        if table.hidden:
            print(f"({table.hidden} iteration rows not shown; --disp-every 1 shows all)",
                  file=out)
        print("", file=out)
    _report(result, problem, prep, out)
    if result.error is not None:
        print(f"newtonad: solver error: {result.error}", file=sys.stderr)
        return 1
    return 0 if result.success else 1
