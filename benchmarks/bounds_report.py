"""Bound-constrained solvers side by side: tron, L-BFGS-B, trust-constr and IPOPT.

Problems: the grid problems of ``newtonad.problems`` (``torsion``,
``journal-bearing``, ``obstacle``; n = m^2, ``--sizes``, default 1e4, 1e5, 1e6,
each rounded up to a perfect square), and without bounds ``minimal-surface`` and
``chained-rosenbrock`` against the unpreconditioned native methods.

Solvers, in one process and interleaved (the order rotates from one run to the next):

* ``tron``: ``newtonad.minimize(method="tron")`` (exact Hessian products);
* ``L-BFGS-B``: scipy's, fed newtonad's exact value and gradient;
* ``trust-constr``: scipy's, with newtonad's exact Hessian products (``hessp``);
* ``ipopt``: IPOPT through CasADi, the objective written once with CasADi symbols
  (:func:`casadi_objective`, checked against the NumPy objective at two points),
  exact Hessian (CasADi's AD); skipped above ``--ipopt-max-n`` (memory) and limited to
  ``--max-time`` seconds; its setup (graph and Hessian construction) is timed apart;
* without bounds also ``newton-cg``, ``trust-ncg``, ``trust-krylov`` (native,
  unpreconditioned).

Each run is asked for a projected-gradient norm ``‖P[x - g] - x‖₂`` of ``--rtol``
(default 1e-6) times its value at x0, in the solver's own terms (tron: ``gtol`` on
that norm; L-BFGS-B and trust-constr: ``gtol`` on the max-norm, scaled the same way;
IPOPT: ``tol``), with ``--max-time`` seconds each (default 600). The table gives
iterations, Hessian(-vector) products, tron's incomplete Cholesky factorisations
(``factors``), wall time and the final projected-gradient
norm measured here with newtonad's gradient, relative to x0's. ``--json`` writes every
run (default ``benchmarks/results/bounds_report.json``; with ``--quick`` only when
given, so that a smoke run does not overwrite the saved figures) for the docs' figures.

Run::

    .venv/bin/python benchmarks/bounds_report.py --quick       # n = 1e4 only, short limits
    .venv/bin/python benchmarks/bounds_report.py               # 1e4, 1e5, 1e6
    .venv/bin/python benchmarks/bounds_report.py --sizes 1e5 --solvers tron L-BFGS-B
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import scipy.optimize
from scipy.optimize import Bounds

HERE = Path(__file__).resolve().parent
GRID_PROBLEMS = ("torsion", "journal-bearing", "obstacle")
FREE_PROBLEMS = ("minimal-surface", "chained-rosenbrock")
BOUNDED_SOLVERS = ("tron", "L-BFGS-B", "trust-constr", "ipopt")
#: compiled kernels, named: the tiered default would run its NumPy tier while they compile
ENGINE = "numba"
FREE_SOLVERS = ("tron", "newton-cg", "trust-ncg", "trust-krylov", "L-BFGS-B", "ipopt")


# ---- the objectives once more, in CasADi symbols ------------------------------------------

def casadi_objective(name: str, n: int, ca: Any) -> Any:
    """The problem ``name`` at size ``n`` as a CasADi SX expression of ``x`` (SX, n x 1).

    Grids: CasADi reshapes column-major, so ``V = reshape(x, m, m)`` is indexed
    ``V[i, j]`` (the first coordinate i along rows) where NumPy's ``x.reshape(m, m)``
    is ``[j, i]``; the formulas below are the NumPy ones with the two axes swapped.
    Returns ``(x, f)``.
    """
    x = ca.SX.sym("x", n)
    if name == "chained-rosenbrock":
        a, b = x[0:n - 1], x[1:n]
        return x, ca.sum1(100.0 * (a * a - b) ** 2 + (a - 1.0) ** 2)
    m = math.isqrt(n)

    def padded(edges: np.ndarray) -> Any:
        # edges: NumPy (m+2, m+2) in [j, i]; here [i, j]
        e = ca.DM(edges.T)
        inner = ca.horzcat(e[1:m + 1, 0], ca.reshape(x, m, m), e[1:m + 1, m + 1])
        return ca.vertcat(e[0, :], inner, e[m + 1, :])

    def triangles(v: Any) -> tuple:
        # lower: corner [i, j], right [i+1, j], top [i, j+1]; upper: corner [i+1, j+1]
        corner, right, top = v[0:m + 1, 0:m + 1], v[1:m + 2, 0:m + 1], v[0:m + 1, 1:m + 2]
        return (corner, right, top), (v[1:m + 2, 1:m + 2], top, right)

    def total(a: Any) -> Any:
        return ca.sum1(ca.sum2(a))

    if name == "torsion":
        h = 1.0 / (m + 1)
        (v, vr, vt), (w, wl, wb) = triangles(padded(np.zeros((m + 2, m + 2))))
        quad = total((vr - v) ** 2 + (vt - v) ** 2 + (w - wl) ** 2 + (w - wb) ** 2) / (h * h)
        lin = total(v + vr + vt + w + wl + wb)
        return x, 0.5 * h * h * (0.5 * quad - (5.0 / 3.0) * lin)
    if name == "journal-bearing":
        ecc, b = 0.1, 10.0
        hx, hy = 2.0 * math.pi / (m + 1), 2.0 * b / (m + 1)
        i = np.arange(m + 2, dtype=np.float64)
        wq = (1.0 + ecc * np.cos(i * hx)) ** 3
        lower = ca.repmat(ca.DM(hx * hy * (2.0 * wq[:-1] + wq[1:]) / 6.0), 1, m + 1)
        upper = ca.repmat(ca.DM(hx * hy * (2.0 * wq[1:] + wq[:-1]) / 6.0), 1, m + 1)
        load = ca.repmat(ca.DM(ecc * hx * hy * np.sin(i[1:-1] * hx)), 1, m)
        (v, vr, vt), (w, wl, wb) = triangles(padded(np.zeros((m + 2, m + 2))))
        quad = (total(lower * (((vr - v) / hx) ** 2 + ((vt - v) / hy) ** 2))
                + total(upper * (((w - wl) / hx) ** 2 + ((w - wb) / hy) ** 2)))
        return x, 0.5 * quad - total(load * ca.reshape(x, m, m))
    if name in ("obstacle", "minimal-surface"):
        # the same triangulated area; minimal-surface's grid is [row, column] =
        # NumPy's [j, i] too, with boundary data s^2 - t^2 all round
        h = 1.0 / (m + 1)
        s = np.arange(m + 2) * h
        if name == "obstacle":
            edges = np.zeros((m + 2, m + 2))
            edges[0, :] = edges[-1, :] = 1.0 - (2.0 * s - 1.0) ** 2
        else:
            edges = s[:, None] ** 2 - s[None, :] ** 2
        (v, vr, vt), (w, wl, wb) = triangles(padded(edges))
        return x, 0.5 * h * h * (total(ca.sqrt(1.0 + ((vr - v) / h) ** 2 + ((vt - v) / h) ** 2))
                                 + total(ca.sqrt(1.0 + ((wl - w) / h) ** 2
                                                 + ((wb - w) / h) ** 2)))
    raise ValueError(f"no CasADi form of {name!r}")


# ---- runs ---------------------------------------------------------------------------------

def projected_gradient_norm(x: np.ndarray, g: np.ndarray, bounds: Bounds | None) -> float:
    """``‖P[x - g] - x‖₂``, the first-order measure tron stops on."""
    if bounds is None:
        return float(np.linalg.norm(g))
    return float(np.linalg.norm(np.clip(x - g, bounds.lb, bounds.ub) - x))


class _Budget:
    """A scipy callback that stops a run after ``seconds`` (StopIteration)."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.perf_counter() + seconds

    def __call__(self, *args: Any) -> None:
        if time.perf_counter() > self.deadline:
            raise StopIteration


def run_one(solver: str, p: Any, obj: Any, pg0: float, rtol: float, max_time: float,
            maxiter: int, ipopt_max_n: int) -> dict:
    """One solver on one problem: a dict of the measures (or the reason it was skipped)."""
    import newtonad as nad

    bounds = p.bounds
    x0 = p.x0 if bounds is None else np.clip(p.x0, bounds.lb, bounds.ub)
    target = rtol * pg0
    products = [0]

    def counted_hessp(x: np.ndarray, v: np.ndarray) -> np.ndarray:
        products[0] += 1
        return obj.hessp(x, v)

    setup = 0.0
    nfactor = 0  # tron's incomplete Cholesky factorisations
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if solver in ("tron", "newton-cg", "trust-ncg", "trust-krylov"):
            options: dict = {"maxiter": maxiter, "max_time": max_time}
            if solver == "newton-cg":   # it stops on the step; the gradient is reported
                options["xtol"] = 1e-9
            else:
                options["gtol"] = target
            try:
                res = nad.minimize(obj, x0, method=solver, bounds=bounds, options=options)
            except (ValueError, TypeError) as exc:   # e.g. a method not (yet) accepted
                return {"skipped": f"{type(exc).__name__}: {exc}"}
            x, nit = res.x, int(res.nit)
            nprod = int(getattr(res, "nhev", 0) or 0)
            nfactor = int(res.get("nfactor", 0) or 0)
        elif solver == "L-BFGS-B":
            res = scipy.optimize.minimize(
                obj.value_and_grad, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                callback=_Budget(max_time),
                options={"maxiter": maxiter, "ftol": 0.0, "gtol": target / math.sqrt(p.n),
                         "maxfun": 10 * maxiter})
            x, nit, nprod = res.x, int(res.nit), 0
        elif solver == "trust-constr":
            res = scipy.optimize.minimize(
                obj.fun, x0, jac=obj.jac, hessp=counted_hessp, method="trust-constr",
                bounds=bounds, callback=_Budget(max_time),
                options={"maxiter": maxiter, "gtol": target / math.sqrt(p.n), "xtol": 1e-14})
            x, nit, nprod = res.x, int(res.nit), products[0]
        elif solver == "ipopt":
            if p.n > ipopt_max_n:
                return {"skipped": f"n = {p.n} > --ipopt-max-n {ipopt_max_n} (memory)"}
            import casadi as ca
            xs, f = casadi_objective(p.name, p.n, ca)
            # unscaled, so tol bounds the max-norm of the Lagrangian's gradient itself;
            # complementarity is a product z (x - l): a bound with a small multiplier z
            # stays |x - l| ~ tol / z off, which P[x - g] - x measures, hence tol squared
            tol = target / math.sqrt(p.n)
            opts = {"print_time": False, "ipopt.print_level": 0, "ipopt.sb": "yes",
                    "ipopt.nlp_scaling_method": "none", "ipopt.tol": tol,
                    "ipopt.dual_inf_tol": tol, "ipopt.compl_inf_tol": tol * tol,
                    "ipopt.max_iter": maxiter,
                    "ipopt.max_wall_time": float(max_time),
                    "ipopt.hessian_approximation": "exact"}
            solver_fn = ca.nlpsol("ipopt", "ipopt", {"x": xs, "f": f}, opts)
            setup = time.perf_counter() - started
            started = time.perf_counter()
            lb = -np.inf * np.ones(p.n) if bounds is None else bounds.lb
            ub = np.inf * np.ones(p.n) if bounds is None else bounds.ub
            out = solver_fn(x0=x0, lbx=lb, ubx=ub)
            stats = solver_fn.stats()
            x = np.asarray(out["x"]).reshape(-1)
            nit = int(stats.get("iter_count", -1))
            nprod = int(stats.get("n_call_nlp_hess_l", -1))
            res = None
        else:
            raise ValueError(f"unknown solver {solver!r}")
    elapsed = time.perf_counter() - started
    fx, g = obj.value_and_grad(x)
    pg = projected_gradient_norm(x, np.asarray(g), bounds)
    message = str(res.message) if res is not None else str(stats.get("return_status"))
    return {"nit": nit, "products": nprod, "nfactor": nfactor, "time": elapsed, "setup": setup,
            "fun": float(fx), "pg": pg, "pg_rel": pg / pg0 if pg0 > 0 else 0.0, "message": message,
            "nactive": (None if bounds is None else
                        int(np.count_nonzero((x <= bounds.lb) | (x >= bounds.ub))))}


def check_casadi(name: str, m: int = 6) -> float:
    """Largest relative difference between the CasADi and NumPy objectives at x0 and
    at a random point (a mistake in :func:`casadi_objective` shows here)."""
    import casadi as ca

    from newtonad import problems

    p = problems.get(name, m * m)
    xs, f = casadi_objective(name, p.n, ca)
    fn = ca.Function("f", [xs], [f])
    worst = 0.0
    for x in (p.x0, p.x0 + np.random.default_rng(0).uniform(-0.5, 0.5, p.n)):
        a, b = float(fn(x)), float(p.fun(x))
        worst = max(worst, abs(a - b) / max(1.0, abs(b)))
    return worst


def square_at_least(n: int) -> int:
    """The smallest perfect square >= n (the grids' sizes)."""
    m = math.isqrt(n)
    return m * m if m * m == n else (m + 1) ** 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["1e4", "1e5", "1e6"],
                        help="problem sizes (rounded up to perfect squares)")
    parser.add_argument("--quick", action="store_true",
                        help="n = 1e4 only, 60 s per run")
    parser.add_argument("--problems", nargs="+", default=list(GRID_PROBLEMS + FREE_PROBLEMS))
    every = sorted(set(BOUNDED_SOLVERS + FREE_SOLVERS))
    parser.add_argument("--solvers", nargs="+", default=None,
                        help="a subset of " + ", ".join(every))
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--max-time", type=float, default=600.0)
    parser.add_argument("--maxiter", type=int, default=100000)
    parser.add_argument("--ipopt-max-n", type=int, default=10 ** 6)
    parser.add_argument("--json", type=Path, default=None,
                        help="default results/bounds_report.json; none with --quick")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.max_time = ["1e4"], min(args.max_time, 60.0)
    elif args.json is None:
        args.json = HERE / "results" / "bounds_report.json"

    import newtonad as nad
    from newtonad import problems

    for name in args.problems:
        if "ipopt" in (args.solvers or BOUNDED_SOLVERS):
            err = check_casadi(name)
            if err > 1e-12:
                raise SystemExit(f"CasADi form of {name} differs from newtonad's: {err:.2e}")
    # warm-up: each solver once on each problem at n = 36, so the solvers' own compiled
    # kernels (tron's, newtonad's CG and line searches) are not timed in the first run
    for name in args.problems:
        tiny = problems.get(name, 36)
        tiny_obj = nad.Objective(tiny.fun, engine=ENGINE)
        for solver in (BOUNDED_SOLVERS if tiny.bounds is not None else FREE_SOLVERS):
            if args.solvers is None or solver in args.solvers:
                run_one(solver, tiny, tiny_obj, 1.0, 1e-3, 30.0, 50, args.ipopt_max_n)
    rows = []
    turn = 0
    header = (f"{'problem':17s} {'n':>8s} {'solver':13s} {'nit':>6s} {'products':>9s} "
              f"{'factors':>7s} {'time s':>8s} {'pg/pg0':>9s}  f")
    print(header)
    for size in (int(float(s)) for s in args.sizes):
        for name in args.problems:
            p = problems.get(name, size if name == "chained-rosenbrock" else square_at_least(size))
            obj = nad.Objective(p.fun, engine=ENGINE)
            x0 = p.x0 if p.bounds is None else np.clip(p.x0, p.bounds.lb, p.bounds.ub)
            f0, g0 = obj.value_and_grad(x0)          # warm-up: compiled before any timing
            obj.hessp(x0, np.ones_like(x0))
            obj.linearize_hessp(x0)(np.ones_like(x0))
            obj.sparse_hess(x0)  # tron's preconditioner's Hessian (colouring, kernels)
            pg0 = projected_gradient_norm(x0, np.asarray(g0), p.bounds)
            solvers = [s for s in (BOUNDED_SOLVERS if p.bounds is not None else FREE_SOLVERS)
                       if args.solvers is None or s in args.solvers]
            solvers = solvers[turn % len(solvers):] + solvers[:turn % len(solvers)]
            turn += 1
            for solver in solvers:
                out = run_one(solver, p, obj, pg0, args.rtol, args.max_time, args.maxiter,
                              args.ipopt_max_n)
                row = {"problem": name, "n": p.n, "solver": solver, "pg0": pg0, **out}
                rows.append(row)
                if "skipped" in out:
                    print(f"{name:17s} {p.n:8d} {solver:13s} skipped: {out['skipped']}",
                          flush=True)
                else:
                    extra = f" (+{out['setup']:.1f} s setup)" if out["setup"] else ""
                    print(f"{name:17s} {p.n:8d} {solver:13s} {out['nit']:6d} "
                          f"{out['products']:9d} {out['nfactor']:7d} {out['time']:8.2f} "
                          f"{out['pg_rel']:9.1e}  "
                          f"{out['fun']:.10g}{extra}", flush=True)
                if args.json is not None:
                    args.json.parent.mkdir(parents=True, exist_ok=True)
                    args.json.write_text(json.dumps({"rtol": args.rtol,
                                                     "max_time": args.max_time,
                                                     "runs": rows}, indent=1, default=float))
    if args.json is not None:
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
