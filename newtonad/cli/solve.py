"""``newtonad solve PROBLEM``: minimise one built-in problem and report the result."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from typing import Any, Optional

import numpy as np

from newtonad.solvers.monitor import watch

from .args import add_engine_argument, positive_float, positive_int
from .catalog import load_problem
from .cost import cost_warning
from .disp import ALL_ROWS_UP_TO, IterationTable
from .errors import UsageError
from .methods import LEAST_SQUARES, NATIVE_METHODS, default_method, resolve_method
from .progress import Progress
from .runs import (
    DERIVATIVE_FREE,
    Prep,
    Run,
    hessian_kind,
    prepare,
    solve,
    solve_least_squares,
)
from .table import fmt_float

_log = logging.getLogger("newtonad.cli")

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
                    "bar with iterations, rate and f on a terminal, else a line on standard "
                    "error every "
                    f"{HEARTBEAT:g} s. Exit status 0 when the solver reports success, 1 "
                    "otherwise, 2 for a usage error.")
    p.add_argument("problem", metavar="PROBLEM", help="problem name, e.g. chained-rosenbrock")
    p.add_argument("--n", type=positive_int, metavar="N", help="size of a scalable problem")
    p.add_argument("--method", "-m", default=None, metavar="M",
                   help="newton-cg, trust-ncg, trust-krylov, trust-exact (sparse at large n "
                        "when the Hessian is, as in newtonad.minimize), any "
                        "scipy.optimize.minimize method, least-squares (problems written "
                        "from residuals), or scipy:<method> (default: newtonad.minimize's "
                        f"choice for method=None, {default_method()})")
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
                                    "solver's path (it ran on NumPy until it switched to "
                                    "each)"))
    return lines


def _evaluations(run: Run) -> str:
    """What the run computed, only what its method uses."""
    if run.method.removeprefix("scipy:") in DERIVATIVE_FREE:
        return f"{run.nfev} values (no gradients: the method is derivative-free)"
    if run.method.removeprefix("scipy:") == LEAST_SQUARES:
        return f"{run.nfev} residual vectors, {run.nit} Jacobians"
    text = f"{run.nfev} value+gradient passes, {run.nhev} Hessian-vector products"
    if run.nhess:
        kind = f" {run.hessian}" if run.hessian else ""
        text += f" ({run.nhess}{kind} Hessian{'s' if run.nhess > 1 else ''})"
    return text


def _report(run: Run, problem: Any, timing: list[tuple[str, str]], out: Any) -> None:
    lines = [("f", fmt_float(run.fun, 6))]
    if problem.fstar is not None:
        lines.append(("f - f*", fmt_float(run.fun - problem.fstar, 3)))
    lines += [
        ("|g|", fmt_float(run.gnorm, 3)),
        ("iterations", str(run.nit)),
        ("evaluations", _evaluations(run)),
        *timing,
        ("status", ("success: " if run.success else "failure: ") + run.message),
    ]
    if run.x is not None:
        x = np.array2string(run.x, precision=6, threshold=8, edgeitems=3,
                            max_line_width=10**6)
        lines.append(("x", x))
    for key, value in lines:
        print(f"  {key:<12} {value}", file=out)


def _options(args: argparse.Namespace, native: bool) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if args.maxiter is not None:
        options["maxiter"] = args.maxiter
    if args.disp and not native:  # native tables come from iteration records
        options["disp"] = True
    return options


def _residual_problems() -> list[str]:
    from newtonad import problems

    return [p.name for p in problems.all_problems() if p.residuals is not None]


def _least_squares(problem: Any, method: str, args: argparse.Namespace, out: Any) -> int:
    """``solve -m least-squares``: the problem's residuals to ``newtonad.least_squares``."""
    with Progress(desc=LEAST_SQUARES, heartbeat=HEARTBEAT) as status:
        status.update(f"{problem.name}: solving")
        result = solve_least_squares(problem, method, engine=args.engine)
    _report(result, problem, [("time", f"{result.time:.3f} s (tracing included)")], out)
    if result.error is not None:
        print(f"newtonad: solver error: {result.error}", file=sys.stderr)
        return 1
    return 0 if result.success else 1


def run(args: argparse.Namespace) -> int:
    """Solve and print; 0 on success, 1 on failure or a solver error."""
    import newtonad

    problem = load_problem(args.problem, args.n)
    method = resolve_method(args.method, getattr(problem, "bounds", None))
    if args.disp_every is not None:  # asking for a stride asks for the table
        args.disp = True
    bare = method.removeprefix("scipy:")
    native = method in NATIVE_METHODS
    engine = args.engine or newtonad.settings.engine
    impl = "scipy.optimize" if method.startswith("scipy:") else "newtonad.minimize"
    if bare == LEAST_SQUARES:
        impl = ("scipy.optimize.least_squares, jac='2-point'" if method.startswith("scipy:")
                else "newtonad.least_squares")
    if bare == LEAST_SQUARES and problem.residuals is None:
        raise UsageError(f"problem {problem.name!r} is not written from residuals, so "
                         f"{LEAST_SQUARES} cannot solve it; these are: "
                         f"{', '.join(_residual_problems())}")
    chosen = ", newtonad.minimize's choice for method=None" if args.method is None else ""
    out = sys.stdout
    fstar = "unknown" if problem.fstar is None else f"{problem.fstar:.6g}"
    print(f"{problem.name}  n = {problem.n}  f* = {fstar}  "
          f"({problem.source})", file=out)
    print(f"method {bare} ({impl}{chosen}), engine {engine!r}\n", file=out)
    out.flush()
    if bare == LEAST_SQUARES:
        return _least_squares(problem, method, args, out)
    direct = bare in DERIVATIVE_FREE
    hessian = None if direct else hessian_kind(problem, method, args.engine)
    warning = cost_warning(method, problem.n, hessian=hessian, engine=engine)
    if warning:
        print(f"newtonad: warning: {warning}", file=sys.stderr)
    _log.info("solve %s (n = %d) with %s, engine %r, Hessian matrix: %s", problem.name,
              problem.n, method, engine, hessian or "none")

    with Progress(args.maxiter, desc=bare, unit="it", heartbeat=HEARTBEAT) as status:
        prep: Optional[Prep] = None
        if not direct:  # derivative-free methods call the function itself: nothing to trace
            status.update("tracing and compiling" + (
                f" (and a {hessian} {problem.n} x {problem.n} Hessian)" if hessian else ""))
            prep = prepare(problem.fun, problem.x0, engine=args.engine, hessian=hessian)
            _log.info("tracing and compiling took %.3f s (%.3f s compiling)", prep.seconds,
                      prep.compile_seconds)

        def callback(intermediate_result: Any) -> None:
            fun = getattr(intermediate_result, "fun", None)  # scipy passes x to some methods
            value = "" if fun is None else f"f = {fmt_float(float(fun), 6)}"
            status.advance(note=value + background_note())

        status.update("first iteration")
        table = IterationTable(lambda line: status.write(line, out), every=args.disp_every)
        watching = watch(table) if args.disp and native else contextlib.nullcontext()
        with watching:
            result = solve(problem, method, engine=args.engine, tol=args.tol,
                           options=_options(args, native), callback=callback)
        table.finish()
    _log.info("%s stopped after %d iterations in %.3f s: %s", method, result.nit,
              result.time, result.message)
    if args.disp:
        if native:
            print(result.message, file=out)  # closes the table, as the solvers' disp does
        if table.hidden:
            print(f"({table.hidden} iteration rows not shown; --disp-every 1 shows all)",
                  file=out)
        print("", file=out)
    timing = (timing_lines(result, prep) if prep is not None else
              [("time", f"{result.time:.3f} s solving (the function is called directly: no "
                        "tracing)")])
    _report(result, problem, timing, out)
    if result.error is not None:
        print(f"newtonad: solver error: {result.error}", file=sys.stderr)
        return 1
    return 0 if result.success else 1
