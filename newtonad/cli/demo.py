"""``newtonad demo``: the built-in problem set, every native method, and scipy beside it.

For each problem and method the table shows the final f, iterations, value-and-
gradient passes and Hessian-vector products of ``newtonad.minimize`` and of scipy's
method of the same name fed with newtonad's ``jac`` and ``hessp`` (``hess`` for
trust-exact); ``--wide`` adds f* and the time of every run. Problems written from
residuals (``Problem.residuals``) get a ``least-squares`` row too:
``newtonad.least_squares`` (exact Jacobians) beside ``scipy.optimize.least_squares``
with ``jac="2-point"``, counting Jacobians and residual evaluations. Tracing and
compilation happen in a warm-up before the timed runs. The text table fits in 120
columns unless ``--wide`` is given; markdown tables always have every column.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from .args import add_engine_argument, positive_int
from .catalog import load_problem
from .cost import cost_warning
from .errors import UsageError
from .methods import COMPARED_METHODS, NATIVE_METHODS, suggest
from .progress import Progress
from .runs import (
    LEAST_SQUARES,
    SOLVED_RTOL,
    Run,
    hessian_kind,
    solve,
    solve_least_squares,
    warm_up,
    warm_up_least_squares,
)
from .table import Column, Table, fmt_float

__all__ = ["add_parser", "run", "counts_as_solved", "TEXT_WIDTH"]

_DENSE_LIMIT = 5000  # a dense Hessian above this n is not built: its run is skipped
# The demo solves ~57 small problems once each. The NumPy reference engine runs them as
# fast as the tiered "auto" engine does (18 s here) and, unlike it, the same way every
# time: "auto" switches to numba after a time budget, so where the switch falls (and
# with it the rounding) varies between runs, and ill-conditioned problems can flip. The
# numba default would compile ~200 kernels first (minutes on an empty cache).
DEMO_ENGINE = "numpy"
#: the text output (without --wide) fits in this many columns
TEXT_WIDTH = 120
_IMPLS = ("native", "scipy")
#: what the demo runs by default: the native methods, then least squares where it applies
DEMO_METHODS = (*COMPARED_METHODS, LEAST_SQUARES)
_METHOD_WIDTH = max(map(len, DEMO_METHODS))


def add_parser(sub: Any) -> None:
    """Register ``demo`` on the subcommand parsers ``sub``."""
    p = sub.add_parser("demo", help="solve the built-in problem set with every method",
                       description="Solve the built-in problem set with every native "
                                   "method (newtonad.minimize) and scipy's method of the "
                                   "same name fed with newtonad's exact derivatives, and "
                                   "compare final values, iterations and evaluations.")
    p.add_argument("--problems", nargs="+", metavar="NAME",
                   help="only these problems (default: all; see `newtonad problems`)")
    p.add_argument("--methods", nargs="+", metavar="M", default=list(DEMO_METHODS),
                   help=f"methods to compare (default: {' '.join(DEMO_METHODS)}; "
                        f"{LEAST_SQUARES} runs on the problems written from residuals)")
    p.add_argument("--n", type=positive_int, metavar="N",
                   help="size of the scalable problems (default: each problem's own)")
    p.add_argument("--no-scipy", action="store_true", help="skip the scipy comparison")
    add_engine_argument(p, DEMO_ENGINE,
                        note=f"{DEMO_ENGINE}: each of the many small problems is solved "
                             "once, and the table comes out the same on every run")
    p.add_argument("--format", choices=("text", "markdown"), default="text",
                   help="table format (default: text)")
    p.add_argument("--wide", action="store_true",
                   help=f"add the f* and time columns (wider than {TEXT_WIDTH} columns; "
                        "markdown always has them)")
    p.set_defaults(handler=run)


def _problems(names: Optional[Sequence[str]], n: Optional[int]) -> list:
    from newtonad import problems

    if n is not None and n < 1:
        raise UsageError(f"--n must be a positive integer, got {n}")
    if not names:
        return problems.all_problems(scalable_n=n)
    return [load_problem(name, n, nearest=True) for name in names]


def _methods(names: Sequence[str]) -> list[str]:
    out = []
    for name in names:
        meth = name.lower()
        if meth not in DEMO_METHODS:
            raise UsageError(f"unknown method {name!r}{suggest(meth, list(DEMO_METHODS))}; "
                             f"demo compares the native methods: {', '.join(NATIVE_METHODS)}, "
                             f"and {LEAST_SQUARES}")
        out.append(meth)
    return out


def _hessians(problem_list: list, methods: list[str], engine: Optional[str]) -> dict:
    """``(problem name, method) -> "dense" | "sparse"`` for the runs that form Hessian
    matrices: native trust-exact as ``newtonad.minimize`` decides, scipy's dense."""
    kinds = {}
    for problem in problem_list:
        for meth in methods:
            for name in (meth, f"scipy:{meth}"):
                kind = hessian_kind(problem, name, engine)
                if kind is not None:
                    kinds[problem.name, name] = kind
    return kinds


def long_run_warnings(problem_list: list, methods: list[str], impls: list[str],
                      engine: Optional[str], hessians: dict) -> list[str]:
    """One sentence per method that will be slow on some of the problems (same
    rules as ``newtonad solve``'s warning), naming those problems."""
    slow: dict[str, tuple[list[str], str]] = {}
    for problem in problem_list:
        for meth in methods:
            for impl in impls:
                name = meth if impl == "native" else f"scipy:{meth}"
                kind = hessians.get((problem.name, name))
                if kind == "dense" and problem.n > _DENSE_LIMIT:
                    continue  # skipped, not slow
                text = cost_warning(name, problem.n, hessian=kind, engine=engine)
                if text is not None:
                    names, _ = slow.setdefault(name, ([], text))
                    names.append(f"{problem.name} (n = {problem.n})")
    return [f"{name} on {', '.join(names)}: {text}" for name, (names, text) in slow.items()]


def _group(title: str, wide: bool) -> list[Column]:
    cols = [Column("f", 9, group=title), Column("nit", 5, group=title),
            Column("nfev", 5, group=title), Column("nhev", 6, group=title)]
    return cols + ([Column("time", 6, group=title)] if wide else [])


def counts_as_solved(run: Run) -> bool:
    """Whether a run counts as solved: f reached f* (see ``Run.solved``) or, for a
    problem with no known f*, the solver reported success. An error is never solved.

    The table's ``*`` marks and the summary's ``solved`` counts both use this, so
    they agree.
    """
    if run.error is not None:
        return False
    return run.success if run.solved is None else run.solved


def _cells(run: Optional[Run], wide: bool) -> list[Any]:
    if run is None:
        return [""] * (5 if wide else 4)
    time = [f"{run.time:.3f}"] if wide else []
    if run.error is not None:
        return ["error", "", "", ""] + time
    mark = "" if counts_as_solved(run) else "*"
    nhev = "" if run.method.endswith(LEAST_SQUARES) else run.nhev  # no Hessian there
    return [fmt_float(run.fun, 2) + mark, run.nit, run.nfev, nhev] + time


@dataclass
class _Tally:
    """Totals of one method and implementation over the problem set."""

    runs: int = 0
    solved: int = 0
    errors: int = 0
    nit: int = 0
    nfev: int = 0
    nhev: int = 0
    time: float = 0.0
    failures: list = field(default_factory=list)

    def add(self, run: Run) -> None:
        self.runs += 1
        self.errors += run.error is not None
        self.solved += counts_as_solved(run)
        self.nit += run.nit
        self.nfev += run.nfev
        self.nhev += run.nhev
        self.time += run.time


def run(args: argparse.Namespace) -> int:
    """Run the demo; exit status 1 if any solver raised, else 0."""
    problem_list = _problems(args.problems, args.n)
    methods = _methods(args.methods)
    impls = ["native"] + ([] if args.no_scipy else ["scipy"])
    engine = args.engine
    out = sys.stdout
    wide = args.wide or args.format == "markdown"

    groups = ({"native": "newtonad", "scipy": "scipy"} if args.format == "markdown" else
              {"native": "newtonad.minimize", "scipy": "scipy + newtonad derivatives"})
    name_width = max([7] + [len(p.name) for p in problem_list])
    columns = [Column("problem", name_width, "<"), Column("n", 5)]
    columns += [Column("f*", 9)] if wide else []
    columns += [Column("method", _METHOD_WIDTH, "<")]
    for impl in impls:
        columns += _group(groups[impl], wide)
    table = Table(columns, args.format)

    hessians = _hessians(problem_list, methods, engine) if "trust-exact" in methods else {}
    for text in long_run_warnings(problem_list, methods, impls, engine, hessians):
        print(_wrap(f"newtonad: warning: {text}", "text"), file=sys.stderr)
    sys.stderr.flush()

    print(f"newtonad demo: {len(problem_list)} problems x {len(methods)} methods"
          f"{', newtonad and scipy' if len(impls) == 2 else ''}, engine {engine!r}", file=out)
    print("", file=out)
    for line in table.header():
        print(line, file=out)
    out.flush()

    tallies = {(m, i): _Tally() for m in methods for i in impls}
    fewer = {m: [0, 0] for m in methods}  # problems where native nit <= scipy nit, compared
    errors: list[Run] = []
    skipped: list[str] = []
    warmup_time = 0.0
    with Progress(len(problem_list) * len(methods) * len(impls), desc="demo",
                  unit="run") as bar:
        for problem in problem_list:
            bar.update(f"{problem.name}: tracing")
            kind = hessians.get((problem.name, "trust-exact"))
            if kind == "dense" and problem.n > _DENSE_LIMIT:
                kind = None
            lsq = LEAST_SQUARES in methods and problem.residuals is not None
            try:
                warmup_time += warm_up(problem.fun, problem.x0, engine=engine, hessian=kind)
                if lsq:
                    warmup_time += warm_up_least_squares(problem.residuals, problem.x0,
                                                         engine=engine)
            except Exception as exc:  # noqa: BLE001  (reported per run below)
                bar.write(f"warning: {problem.name}: warm-up failed: {exc}", sys.stderr)
            rows: list[str] = []
            for meth in methods:
                if meth == LEAST_SQUARES and not lsq:
                    bar.advance(len(impls))  # not a sum of squares: no row
                    continue
                runs: dict[str, Optional[Run]] = {}
                for impl in impls:
                    name = meth if impl == "native" else f"scipy:{meth}"
                    if (hessians.get((problem.name, name)) == "dense"
                            and problem.n > _DENSE_LIMIT):
                        runs[impl] = None
                        bar.advance()
                        continue
                    label = f"{problem.name}: {meth} ({impl})"
                    bar.update(label)
                    if meth == LEAST_SQUARES:
                        result = solve_least_squares(problem, name, engine=engine)
                    else:
                        result = solve(problem, name, engine=engine,
                                       callback=_iterations(bar, label))
                    runs[impl] = result
                    tallies[meth, impl].add(result)
                    if result.error is not None:
                        errors.append(result)
                    bar.advance()
                native, other = runs["native"], runs.get("scipy")
                for impl, ran in runs.items():
                    if ran is None:  # a dense Hessian too large (scipy's, where ours is sparse)
                        skipped.append(f"{meth} ({impl}) on {problem.name} (n = {problem.n})")
                if native is not None and other is not None:
                    fewer[meth][1] += 1
                    fewer[meth][0] += native.nit <= other.nit
                first = not rows or args.format == "markdown"
                row = [problem.name if first else "", problem.n if first else ""]
                row += [fmt_float(problem.fstar, 2) if first else ""] if wide else []
                row += [meth]
                for impl in impls:
                    row += _cells(runs[impl], wide)
                rows.append(table.row(row))
            if rows:
                bar.write("\n".join(rows), out)
        total = bar.elapsed()

    unknown = [p.name for p in problem_list if p.fstar is None]
    note = (f"f: final value, * where not solved: above f* + {SOLVED_RTOL:g} max(1, |f*|)"
            + (f", or, without a known f* ({', '.join(unknown)}), the solver reported failure"
               if unknown else "")
            + "; nfev: value+gradient passes; nhev: Hessian-vector products; "
            + ("time: seconds, " if wide else "times: ")
            + f"excluding {warmup_time:.1f} s of tracing and compiling done beforehand."
            + (f" {LEAST_SQUARES} (problems written from residuals): newtonad.least_squares"
               " with exact Jacobians beside scipy.optimize.least_squares with "
               "jac='2-point'; nit: Jacobians, nfev: residual evaluations (scipy's "
               "n per finite-difference Jacobian included)." if LEAST_SQUARES in methods
               else ""))
    print("", file=out)
    print(_wrap(note, args.format), file=out)
    if skipped:
        print(f"not run (a dense Hessian above n = {_DENSE_LIMIT}): {'; '.join(skipped)}",
              file=out)
    _summary(tallies, methods, impls, groups, args.format, out)
    if len(impls) == 2 and any(c for _, c in fewer.values()):
        line = "outer iterations no more than scipy's same-named method: " + ", ".join(
            f"{m} {w}/{c}" for m, (w, c) in fewer.items() if c)
        print("\n" + _wrap(line, args.format), file=out)
    print(f"\ntotal {total:.1f} s", file=out)
    if errors:
        print(f"\n{len(errors)} runs raised:", file=out)
        for r in errors:
            print(f"  {r.problem} (n={r.n}) {r.method}: {r.error}", file=out)
        return 1
    return 0


def _iterations(bar: Progress, label: str) -> Any:
    """A solver callback that shows the run's iteration count in the bar's note."""
    count = 0

    def callback(intermediate_result: Any) -> None:
        nonlocal count
        count += 1
        bar.update(f"{label}, iteration {count}")

    return callback


def _wrap(text: str, fmt: str) -> str:
    """A paragraph wrapped to 100 columns in text output (names are never split)."""
    return textwrap.fill(text, 100, break_on_hyphens=False) if fmt == "text" else text


def _summary(tallies: dict, methods: list[str], impls: list[str], groups: dict, fmt: str,
             out: Any) -> None:
    table = Table([Column("method", _METHOD_WIDTH, "<"), Column("solver", 28, "<"),
                   Column("solved", 9), Column("errors", 6), Column("nit", 7),
                   Column("nfev", 7), Column("nhev", 9), Column("time", 8)], fmt)
    least_squares = {"native": "newtonad.least_squares", "scipy": "scipy, jac='2-point'"}
    print("", file=out)
    for line in table.header():
        print(line, file=out)
    for meth in methods:
        lsq = meth == LEAST_SQUARES
        for impl in impls:
            t = tallies[meth, impl]
            if lsq and not t.runs:
                continue  # no problem written from residuals in this set
            print(table.row([meth, (least_squares if lsq else groups)[impl],
                             f"{t.solved}/{t.runs}", t.errors, t.nit, t.nfev,
                             "" if lsq else t.nhev, f"{t.time:.2f}"]), file=out)
