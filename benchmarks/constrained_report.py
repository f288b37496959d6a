"""Constrained problems side by side: newtonad's auglag, scipy's SLSQP and trust-constr, IPOPT.

Usage::

    python benchmarks/constrained_report.py                 # HS set + scalable at 1e3, 1e4, 1e5
    python benchmarks/constrained_report.py --quick         # HS set + scalable at 1e3
    python benchmarks/constrained_report.py --sizes 1000 100000 --json out.json

Every run happens in a fresh process with a time limit (``--timeout``, default 600 s), one
run after another (the machine has two cores: nothing runs beside a measured run). SLSQP
and trust-constr go through ``newtonad.minimize`` with ``method="SLSQP"`` /
``"trust-constr"``, which hands scipy newtonad's exact gradient, constraint Jacobians
(sparse when their pattern is) and, for trust-constr, the Lagrangian's Hessian products.
IPOPT runs through CasADi (``pip install casadi``) with the exact Hessian of the
Lagrangian: each problem is written once with CasADi symbols (the Hock–Schittkowski
functions are the package's NumPy functions evaluated on CasADi ``SX`` symbols; the
scalable problems have their CasADi form below). A run counts as solved when its point
violates the constraints and bounds by at most 1e-6 and its value is within
1e-6 (1 + |f*|) of the known optimum. Times are wall-clock seconds of the solve, after the
problem is built. newtonad's methods run twice in their process: the time shown is the
second solve, "first" the first one, which also traces, derives and compiles (or loads the
kernels from the disk cache; "kernels": the seconds of the first solve the engine's
``Timings`` count for that on the caller's path, the rest is tracing, derivation,
sparsity patterns and the solve); IPOPT's "model" time builds the CasADi graph ("graph")
and the solver (``nlpsol``, which derives the Lagrangian's Hessian and the constraints'
Jacobian with their sparsity). CasADi's import comes before the model and is not timed;
numba's is in newtonad's first solve (newtonad imports it on first use).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
METHODS = ["auglag", "SLSQP", "trust-constr", "ipopt"]
SCALABLE = ["chained-rosenbrock-trig-exp", "cubic-control", "loaded-surface-volume"]
#: SLSQP factorises dense matrices of n x n: beyond this it is not run
SLSQP_MAX_N = 2000


# ---- one run, in the child process ---------------------------------------------------------

def _problem(name: str, n: int | None) -> Any:
    from newtonad.problems import constrained
    return constrained.get(name, n)


def _run_newtonad(p: Any, method: str) -> dict:
    import warnings

    import newtonad as nad

    options = {"maxiter": 3000} if method != "auglag" else {}

    def solve() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return nad.minimize(p.fun, p.x0, method=method, constraints=p.constraints,
                                bounds=p.bounds, options=options)

    from newtonad.ad import engine

    # the first solve traces, derives and compiles (or loads kernels from the disk cache);
    # the second, in the same process, pays none of that: their difference is that cost.
    # Of the first solve, "kernels" is what the engine's Timings count on the caller's
    # path: compiling or loading kernels, and waiting for the background compiler
    before = engine.timings()
    start = time.perf_counter()
    solve()
    cold = time.perf_counter() - start
    spent = engine.timings() - before
    kernels = spent.compile_seconds + spent.handover_seconds + spent.handover_wait_seconds
    start = time.perf_counter()
    res = solve()
    seconds = time.perf_counter() - start
    return {"x": np.asarray(res.x).tolist(), "fun": float(res.fun), "seconds": seconds,
            "first_seconds": cold, "kernel_seconds": kernels,
            "nit": int(res.get("nit", 0)), "outer": res.get("outer_iterations"),
            "nfev": int(res.get("nfev", 0)), "nhev": int(res.get("nhev", 0) or 0),
            "status": int(res.status), "message": str(res.message)}


def _casadi_vector(value: Any) -> Any:
    import casadi as ca

    if isinstance(value, (ca.SX, ca.MX)):
        return value
    return ca.vertcat(*np.ravel(np.asarray(value, dtype=object)).tolist())


def _casadi_form(p: Any) -> tuple[Any, Any, list, list]:
    """``(x, f, g, lbg, ubg)`` for CasADi: the problem written with SX symbols."""
    import casadi as ca
    from scipy.optimize import LinearConstraint

    x = ca.SX.sym("x", p.n)
    if p.name == "chained-rosenbrock-trig-exp":
        a, b, c = x[:-2], x[1:-1], x[2:]
        f = ca.sum1(100 * (x[:-1] ** 2 - x[1:]) ** 2 + (x[:-1] - 1) ** 2)
        g = [3 * b ** 3 + 2 * c - 5 + ca.sin(b - c) * ca.sin(b + c) + 4 * b
             - a * ca.exp(a - b) - 3]
        return x, f, g, [np.zeros(p.n - 2)], [np.zeros(p.n - 2)]
    if p.name == "cubic-control":
        N = p.n // 2
        h, alpha = 1.0 / N, 0.1
        d = _cubic_control_target(p)
        y, u = x[:N], x[N:]
        f = 0.5 * h * ca.sumsqr(y - d) + 0.5 * alpha * h * ca.sumsqr(u)
        previous = ca.vertcat(1, y[:-1])
        g = [y - previous - h * (u - previous ** 3)]
        return x, f, g, [np.zeros(N)], [np.zeros(N)]
    if p.name == "loaded-surface-volume":
        return _casadi_surface(p, x)
    # the Hock-Schittkowski functions index and combine scalars: they evaluate on SX as is
    f = p.fun(x[0] if p.n == 1 else _Indexable(x))
    g, lbg, ubg = [], [], []
    for con in p.constraints:
        if isinstance(con, LinearConstraint):
            value = ca.mtimes(ca.DM(np.atleast_2d(np.asarray(con.A, dtype=float))), x)
            m = value.shape[0]
        else:
            value = _casadi_vector(con.fun(_Indexable(x)))
            m = value.shape[0]
        g.append(value)
        lbg.append(np.broadcast_to(np.asarray(con.lb, dtype=float), (m,)))
        ubg.append(np.broadcast_to(np.asarray(con.ub, dtype=float), (m,)))
    return x, f, g, lbg, ubg


class _Indexable:
    """An SX column that NumPy code can index, sum and square as a vector."""

    def __init__(self, x: Any) -> None:
        self.x = x

    def __getitem__(self, i: Any) -> Any:
        return self.x[i]

    def __pow__(self, k: Any) -> Any:
        return _Indexable(self.x ** k)

    def __array_function__(self, func, types, args, kwargs):  # np.sum(x ** 2)
        import casadi as ca
        if func is np.sum:
            return ca.sum1(args[0].x)
        return NotImplemented


def _cubic_control_target(p: Any) -> np.ndarray:
    # the tracking target d is the problem's data: read it back from f's closure
    for cell in p.fun.__closure__ or ():
        value = cell.cell_contents
        if isinstance(value, np.ndarray) and value.shape == (p.n // 2,):
            return value
    raise RuntimeError("cubic-control's target not found")


def _casadi_surface(p: Any, x: Any) -> tuple:
    import casadi as ca

    m = math.isqrt(p.n)
    h = 1.0 / (m + 1)
    s = np.linspace(0.0, 1.0, m + 2)
    grid = s[:, None] ** 2 - s[None, :] ** 2
    load = next(c.cell_contents for c in p.fun.__closure__
                if isinstance(c.cell_contents, np.ndarray) and c.cell_contents.shape == (p.n,))
    # u on the full grid, row-major like the NumPy form, as an (m+2)^2 SX column
    u = ca.SX(grid.ravel())
    inner = np.add.outer(np.arange(1, m + 1) * (m + 2), np.arange(1, m + 1)).ravel()
    for k, idx in enumerate(inner):
        u[int(idx)] = x[k]
    w = m + 2

    def at(i0, i1, j0, j1):  # rows i0:i1, columns j0:j1 of u, row-major, as a column
        idx = (np.arange(i0, i1)[:, None] * w + np.arange(j0, j1)[None, :]).ravel()
        return u[idx.tolist()]

    ds = (at(1, w, 0, w - 1) - at(0, w - 1, 0, w - 1)) / h
    dt = (at(0, w - 1, 1, w) - at(0, w - 1, 0, w - 1)) / h
    es = (at(1, w, 1, w) - at(0, w - 1, 1, w)) / h
    et = (at(1, w, 1, w) - at(1, w, 0, w - 1)) / h
    f = 0.5 * h * h * (ca.sum1(ca.sqrt(1 + ds ** 2 + dt ** 2))
                       + ca.sum1(ca.sqrt(1 + es ** 2 + et ** 2))) + ca.dot(ca.DM(load), x)
    (con,) = p.constraints
    volume = float(np.asarray(con.lb).ravel()[0])
    return x, f, [h * h * ca.sum1(x)], [np.array([volume])], [np.array([volume])]


def _run_ipopt(p: Any) -> dict:
    import casadi as ca

    # the model: the SX graph, then the solver, whose construction derives the
    # Lagrangian's Hessian and the Jacobian with their sparsity (IPOPT's counterpart of
    # newtonad's tracing and derivation, so it is timed with the graph)
    start = time.perf_counter()
    x, f, g, lbg, ubg = _casadi_form(p)
    graph = time.perf_counter() - start
    nlp = {"x": x, "f": f, "g": ca.vertcat(*g)}
    solver = ca.nlpsol("ipopt", "ipopt", nlp, {
        "print_time": False, "ipopt.print_level": 0, "ipopt.sb": "yes",
        "ipopt.tol": 1e-8, "ipopt.max_iter": 3000})
    built = time.perf_counter() - start
    lbx = -np.inf * np.ones(p.n) if p.bounds is None else np.broadcast_to(p.bounds.lb, (p.n,))
    ubx = np.inf * np.ones(p.n) if p.bounds is None else np.broadcast_to(p.bounds.ub, (p.n,))
    start = time.perf_counter()
    sol = solver(x0=p.x0, lbx=lbx, ubx=ubx, lbg=np.concatenate(lbg), ubg=np.concatenate(ubg))
    seconds = time.perf_counter() - start
    stats = solver.stats()
    return {"x": np.asarray(sol["x"]).ravel().tolist(), "fun": float(sol["f"]),
            "seconds": seconds, "build_seconds": built, "graph_seconds": graph,
            "nit": int(stats.get("iter_count", 0)),
            "outer": None, "nfev": None, "nhev": None,
            "status": 0 if stats.get("success") else 1,
            "message": str(stats.get("return_status"))}


def _child(name: str, n: int | None, method: str) -> None:
    p = _problem(name, n)
    out = _run_ipopt(p) if method == "ipopt" else _run_newtonad(p, method)
    x = np.asarray(out.pop("x"))
    out["violation"] = float(p.violation(x))
    out["solved"] = bool(out["violation"] <= 1e-6
                         and abs(out["fun"] - p.fstar) <= 1e-6 * (1 + abs(p.fstar)))
    print("RESULT " + json.dumps(out))


def hvp_cost(name: str, n: int, repeats: int = 20) -> dict:
    """Medians of one augmented-Lagrangian HVP against f's HVP plus c's JVP and VJP.

    All on the numba engine, compiled first; the augmented Lagrangian is auglag's own
    (its multipliers and penalty at 1), so this is the product a subproblem's CG pays.
    """
    import newtonad as nad
    from newtonad.solvers.auglag import _as_rows, _augmented_lagrangian, _Split

    p = _problem(name, n)
    x = p.x0 + 0.01
    split = _Split([_as_rows(c, x) for c in p.constraints])
    lag = _augmented_lagrangian(p.fun, (), split)
    lam, mu, rho = np.ones(split.m_eq), np.ones(split.m_in), np.array([1.0])
    v = np.linspace(-1.0, 1.0, p.n)
    cfun = split.values
    # the cotangent has the constraints' size, found here, not inside the timed call
    w = np.ones(np.size(cfun(x)))

    def median(call: Any) -> float:
        call()
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
        return float(np.median(times))

    al = median(lambda: nad.hvp(lag, x, v, args=(lam, mu, rho), engine="numba"))
    f_hvp = median(lambda: nad.hvp(p.fun, x, v, engine="numba"))
    c_jvp = median(lambda: nad.jvp(cfun, x, v, engine="numba"))
    c_vjp = median(lambda: nad.vjp(cfun, x, w, engine="numba"))
    return {"problem": name, "n": p.n, "al_hvp": al, "f_hvp": f_hvp, "c_jvp": c_jvp,
            "c_vjp": c_vjp, "ratio": al / (f_hvp + c_jvp + c_vjp)}


# ---- the parent: one process per run -------------------------------------------------------

def run_one(name: str, n: int | None, method: str, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--child", name, str(n or 0), method]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, PYTHONWARNINGS="ignore"))
    except subprocess.TimeoutExpired:
        return {"solved": False, "message": f"over {timeout:.0f} s", "seconds": timeout}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"solved": False, "message": f"failed: {tail[:120]}", "seconds": math.nan}


def _cell(r: dict) -> str:
    if "fun" not in r:
        return r["message"]
    mark = "yes" if r["solved"] else "NO"
    iters = r["nit"] if r.get("outer") is None else f"{r['outer']}/{r['nit']}"
    first = r.get("first_seconds", r.get("build_seconds"))
    if first is None:
        setup = ""
    elif "first_seconds" in r:
        # what the first solve paid beyond the second: tracing, derivation, patterns,
        # colouring, imports and NumPy-tier calls; "kernels" of it on the engine's Timings
        kernels = r.get("kernel_seconds")
        setup = f" (first {first:.2f} s: one-off {first - r['seconds']:.2f} s" + (
            f", of it kernels {kernels:.2f} s)" if kernels is not None else ")")
    else:
        graph = r.get("graph_seconds")
        setup = f" (+ model {first:.2f} s" + (
            f", of it graph {graph:.2f} s)" if graph is not None else ")")
    return f"{mark} {iters} it, viol {r['violation']:.0e}, {r['seconds']:.2f} s{setup}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="scalable problems at n = 1e3")
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="sizes of the scalable problems (default 1e3 1e4 1e5)")
    parser.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    parser.add_argument("--problems", nargs="+", default=None, help="a subset by name")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--hvp-cost", action="store_true",
                        help="instead: one augmented-Lagrangian HVP against f's HVP plus the "
                             "constraints' JVP and VJP (numba, medians)")
    args = parser.parse_args(argv)
    if args.child:
        name, n, method = args.child
        _child(name, int(n) or None, method)
        return 0
    if args.hvp_cost:
        print("| problem | n | AL hvp | f hvp | c jvp | c vjp | AL / (f hvp + c jvp + c vjp) |")
        print("|---|---|---|---|---|---|---|")
        for name in SCALABLE:
            for n in args.sizes or [100_000]:
                r = hvp_cost(name, _nearest(name, n))
                print(f"| {name} | {r['n']} | {r['al_hvp'] * 1e3:.2f} ms | "
                      f"{r['f_hvp'] * 1e3:.2f} ms | {r['c_jvp'] * 1e3:.2f} ms | "
                      f"{r['c_vjp'] * 1e3:.2f} ms | {r['ratio']:.2f} |", flush=True)
        return 0
    from newtonad.problems import constrained

    sizes = args.sizes or ([1000] if args.quick else [1000, 10_000, 100_000])
    runs: list[tuple[str, int | None]] = []
    for name in args.problems or constrained.names():
        if name in SCALABLE:
            for n in sizes:
                rule_n = constrained.get(name, _nearest(name, n)).n
                runs.append((name, rule_n))
        else:
            runs.append((name, None))
    print(f"# constrained problems: {', '.join(args.methods)}\n", flush=True)
    print(f"machine: {platform.node()} ({platform.machine()}, {os.cpu_count()} cores), "
          f"Python {platform.python_version()}, {date.today().isoformat()}; "
          f"cell: solved, iterations (auglag: outer/inner), violation, seconds\n")
    print("| problem | n | " + " | ".join(args.methods) + " |")
    print("|---|---|" + "---|" * len(args.methods))
    results = []
    for name, n in runs:
        p = constrained.get(name, n)
        row = {}
        for method in args.methods:
            if method == "SLSQP" and p.n > SLSQP_MAX_N:
                row[method] = {"solved": False, "message": f"not run (dense, n > {SLSQP_MAX_N})"}
                continue
            row[method] = run_one(name, n, method, args.timeout)
        results.append({"problem": name, "n": p.n, "runs": row})
        print(f"| {name} | {p.n} | " + " | ".join(_cell(row[m]) for m in args.methods) + " |",
              flush=True)
    solved = {m: sum(r["runs"][m].get("solved", False) for r in results) for m in args.methods}
    print("\nsolved: " + ", ".join(f"{m} {solved[m]}/{len(results)}" for m in args.methods))
    if args.json:
        args.json.write_text(json.dumps({"machine": platform.node(),
                                         "date": date.today().isoformat(),
                                         "results": results}, indent=1))
    return 0


def _nearest(name: str, n: int) -> int:
    if name == "loaded-surface-volume":
        return math.isqrt(n) ** 2
    return n - n % 2


if __name__ == "__main__":
    sys.exit(main())
