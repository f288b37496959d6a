"""Each native method beside scipy's method of the same name, on ``newtonad.problems``.

For every unconstrained problem (scalable ones at ``--n``, default 1000) and every
native method (newton-cg, trust-ncg, trust-krylov, trust-exact), one process runs
``newtonad.minimize(obj, x0, method=m)`` and ``scipy.optimize.minimize(obj.fun, x0,
jac=obj.jac, hessp=obj.hessp, method=m)`` (``hess=obj.hess`` for trust-exact) on the
same ``nad.Objective`` (engine ``numba``), so both see the same derivatives at the
same cost. The two
runs alternate which goes first from one problem to the next (interleaved), after one
warm-up evaluation of the derivatives at x0 (compilation is not timed). Both get the
same ``maxiter`` (``--maxiter``, default 5000; scipy's own default is 200 n) and the
same gradient tolerance where scipy's method has one (:data:`GTOL`, newtonad's
defaults; scipy's Newton-CG has none: it stops on the length of the step).

A run *converged* when it reports success and ends at a stationary point by the
test newtonad's methods stop on, ``‖g‖₂ < gtol`` (or ``g = 0``), on the final
gradient it returns; both sides are judged by it. A success reported elsewhere is
not convergence: scipy's Newton-CG ends with success whenever a step is shorter
than ``n * xtol`` in the 1-norm, which on badly scaled problems happens far from a
stationary point (``‖g‖`` of 976 on Powell's badly scaled function) and on a
singular Hessian's noise floor (``‖g‖`` in the thousands on ``linear-rank-1`` at
n = 1000). Those runs are listed apart, as "scipy stopped unconverged", with both
sides' ``f`` and ``‖g‖``, and are not counted as problems scipy solves.

The report lists, per method, every problem where newtonad needs more than
``--factor`` (default 2) times scipy's iterations or time while scipy's run
converges, and every problem where scipy converges and newtonad does not; then the
runs where scipy stopped unconverged; then the geometric means of the ratios over
the problems both converge on. ``--json`` writes every run (default
``benchmarks/results/scipy_parity.json`` for a full run; a ``--quick`` run or a subset
of problems or methods writes none unless given, so it cannot overwrite the saved one).

Run::

    .venv/bin/python benchmarks/scipy_parity.py                       # all, n = 1000
    .venv/bin/python benchmarks/scipy_parity.py --quick               # n = 100
    .venv/bin/python benchmarks/scipy_parity.py --methods trust-ncg \\
        --problems linear-rank-1 linear-rank-1-zero biggs-exp6
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

HERE = Path(__file__).resolve().parent
METHODS = ("newton-cg", "trust-ncg", "trust-krylov", "trust-exact")
#: compiled kernels, named: the tiered default would run its NumPy tier while they compile
ENGINE = "numba"
# trust-exact factorises a dense n x n Hessian on scipy's side: skip it above this n
DENSE_LIMIT = 3000
#: the gradient tolerance both sides get, and the stationarity test of a run:
#: newtonad's defaults (scipy's for the trust-region methods)
GTOL = {"newton-cg": 1e-5, "trust-ncg": 1e-4, "trust-krylov": 1e-4, "trust-exact": 1e-4}


def stationary(gnorm: float | None, gtol: float) -> bool:
    """newtonad's gradient test (:func:`newtonad.solvers.trust_region.converged`)."""
    return gnorm is not None and (gnorm < gtol or gnorm == 0.0)


def converged(run: dict, gtol: float) -> bool:
    """Whether a run reports success and ends at a stationary point."""
    return bool(run["success"]) and stationary(run["gnorm"], gtol)


def _run(side: str, method: str, obj: Any, x0: np.ndarray, maxiter: int) -> dict:
    import newtonad as nad

    options = {"maxiter": maxiter}
    if side == "newtonad" or method != "newton-cg":  # scipy's Newton-CG has no gtol
        options["gtol"] = GTOL[method]
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if side == "newtonad":
                res = nad.minimize(obj, x0.copy(), method=method, options=options)
            else:
                derivative = ({"hess": obj.hess} if method == "trust-exact"
                              else {"hessp": obj.hessp})
                res = scipy.optimize.minimize(obj.fun, x0.copy(), jac=obj.jac, method=method,
                                              options=options, **derivative)
        except Exception as exc:  # a failure is a result here, not the end of the report
            return {"success": False, "nit": None, "fun": None, "gnorm": None,
                    "time": time.perf_counter() - started, "message": repr(exc)}
    elapsed = time.perf_counter() - started
    jac = getattr(res, "jac", None)
    gnorm = float(np.linalg.norm(jac)) if jac is not None else float("nan")
    return {"success": bool(res.success), "nit": int(getattr(res, "nit", -1)),
            "fun": float(res.fun), "gnorm": gnorm, "time": elapsed,
            "nfev": int(getattr(res, "nfev", -1)), "njev": int(getattr(res, "njev", -1)),
            "nhev": int(getattr(res, "nhev", -1)), "message": str(res.message)}


def run(names: list[str] | None, methods: list[str], n: int, maxiter: int,
        progress: bool = True, partial: Path | None = None) -> list[dict]:
    """Every (problem, method) pair, both sides; rows of dicts (also written to
    ``partial`` after each pair, so a long run that is stopped keeps its rows)."""
    import newtonad as nad
    from newtonad import problems

    chosen = [p for p in problems.all_problems(scalable_n=n)
              if names is None or p.name in names]
    # warm-up: each method once on a small problem, so the solvers' own compiled
    # kernels are loaded before the first timed run
    tiny = problems.get("rosenbrock")
    tiny_obj = nad.Objective(tiny.fun, engine=ENGINE)
    for method in methods:
        for side in ("newtonad", "scipy"):
            _run(side, method, tiny_obj, tiny.x0, 50)
    rows = []
    for index, p in enumerate(chosen):
        obj = nad.Objective(p.fun, engine=ENGINE)
        x0 = p.x0
        obj.value_and_grad(x0)                 # warm-up: compile outside the timings
        obj.hessp(x0, np.ones_like(x0))
        obj.linearize_hessp(x0)(np.ones_like(x0))
        for method in methods:
            if method == "trust-exact" and p.n > DENSE_LIMIT:
                continue
            if method == "trust-exact":
                obj.hess(x0)
            order = ("newtonad", "scipy") if index % 2 == 0 else ("scipy", "newtonad")
            result = {side: _run(side, method, obj, x0, maxiter) for side in order}
            for side in order:
                result[side]["converged"] = converged(result[side], GTOL[method])
            row = {"problem": p.name, "n": p.n, "method": method, "fstar": p.fstar,
                   "gtol": GTOL[method],
                   **{side: result[side] for side in ("newtonad", "scipy")}}
            rows.append(row)
            if partial is not None:
                partial.write_text(json.dumps({"n": n, "runs": rows}, indent=1, default=float))
            if progress:
                a, b = row["newtonad"], row["scipy"]
                print(f"{p.name:28s} {method:13s} nit {a['nit']!s:>6} / {b['nit']!s:>6}  "
                      f"time {a['time']:7.3f} / {b['time']:7.3f}  "
                      f"ok {a['success']!s:5} / {b['success']!s:5}  "
                      f"converged {a['converged']!s:5} / {b['converged']!s:5}", file=sys.stderr,
                      flush=True)
    return rows


def _ratio(a: float | None, b: float | None, floor: float = 0.0) -> float:
    if a is None or b is None:
        return math.nan
    return max(a, floor) / max(b, floor) if max(b, floor) > 0 else math.inf


def findings(rows: list[dict], factor: float) -> dict[str, list[dict]]:
    """Per method, the problems where newtonad is behind scipy's same method.

    Behind means: scipy converges (:func:`converged`) and newtonad does not, or both
    converge and newtonad needs more than ``factor`` times scipy's iterations (at
    least one) or time (at least 10 ms, so timer noise on tiny runs is not counted).
    """
    out: dict[str, list[dict]] = {}
    for row in rows:
        a, b = row["newtonad"], row["scipy"]
        if not b["converged"]:
            continue
        reasons = []
        if not a["converged"]:
            reasons.append(f"unsolved ({a['message']}; f {_num(a['fun'])} vs "
                           f"{_num(b['fun'])}, |g| {_num(a['gnorm'])} vs "
                           f"{_num(b['gnorm'])}, iterations {a['nit']} vs {b['nit']})")
        else:
            if _ratio(a["nit"], b["nit"], 1.0) > factor:
                reasons.append(f"iterations {a['nit']} vs {b['nit']}")
            if _ratio(a["time"], b["time"], 0.01) > factor:
                reasons.append(f"time {a['time']:.3f} s vs {b['time']:.3f} s")
        if reasons:
            out.setdefault(row["method"], []).append({**row, "reasons": reasons})
    return out


def _num(v: float | None) -> str:
    return "None" if v is None else f"{v:.6g}"


def scipy_unconverged(rows: list[dict]) -> dict[str, list[dict]]:
    """Per method, the runs where scipy reports success at a point that is not
    stationary (``‖g‖ >= gtol``): not counted as problems scipy solves."""
    out: dict[str, list[dict]] = {}
    for row in rows:
        b = row["scipy"]
        if b["success"] and not b["converged"]:
            out.setdefault(row["method"], []).append(row)
    return out


def _geomean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values)))) if values else math.nan


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per method: pairs, pairs both converged on, geometric-mean time and iteration
    ratios over them, and the counts converged on by one side only."""
    out = {}
    for method in sorted({r["method"] for r in rows}):
        both = [r for r in rows if r["method"] == method
                and r["newtonad"]["converged"] and r["scipy"]["converged"]]
        t = [_ratio(r["newtonad"]["time"], r["scipy"]["time"], 1e-4) for r in both]
        k = [_ratio(r["newtonad"]["nit"], r["scipy"]["nit"], 1.0) for r in both]
        out[method] = {
            "pairs": sum(r["method"] == method for r in rows), "both_solved": len(both),
            "time_ratio_geomean": float(np.exp(np.mean(np.log(t)))) if t else math.nan,
            "nit_ratio_geomean": float(np.exp(np.mean(np.log(k)))) if k else math.nan,
            "scipy_only": sum(r["method"] == method and r["scipy"]["converged"]
                              and not r["newtonad"]["converged"] for r in rows),
            "newtonad_only": sum(r["method"] == method and r["newtonad"]["converged"]
                                 and not r["scipy"]["converged"] for r in rows),
            "nit_ratio_geomean_both_success": _geomean(
                [_ratio(r["newtonad"]["nit"], r["scipy"]["nit"], 1.0) for r in rows
                 if r["method"] == method and r["newtonad"]["success"]
                 and r["scipy"]["success"]]),
            "scipy_unconverged_success": sum(
                r["method"] == method and r["scipy"]["success"]
                and not r["scipy"]["converged"] for r in rows)}
    return out


def report(rows: list[dict], factor: float) -> str:
    lines = []
    behind = findings(rows, factor)
    unconverged = scipy_unconverged(rows)
    for method, stats in summary(rows).items():
        lines.append(f"## {method}: {stats['pairs']} problems, both converged "
                     f"{stats['both_solved']}, newtonad/scipy geometric mean time "
                     f"{stats['time_ratio_geomean']:.2f}x, iterations "
                     f"{stats['nit_ratio_geomean']:.2f}x; converged for scipy only "
                     f"{stats['scipy_only']}, for newtonad only {stats['newtonad_only']} "
                     f"(|g| < {GTOL[method]:g}); scipy success unconverged "
                     f"{stats['scipy_unconverged_success']}; iterations "
                     f"{stats['nit_ratio_geomean_both_success']:.2f}x where both report "
                     "success")
        for item in behind.get(method, []):
            lines.append(f"   {item['problem']} (n = {item['n']}): " + "; ".join(item["reasons"]))
        if not behind.get(method):
            lines.append(f"   never more than {factor:g}x behind scipy where scipy converges")
        for row in unconverged.get(method, []):
            a, b = row["newtonad"], row["scipy"]
            lines.append(f"   scipy stopped unconverged: {row['problem']} (n = {row['n']}): "
                         f"scipy success at |g| {_num(b['gnorm'])}, f {_num(b['fun'])}, "
                         f"{b['nit']} iterations; newtonad |g| {_num(a['gnorm'])}, "
                         f"f {_num(a['fun'])}, {a['nit']} iterations, "
                         f"{'converged' if a['converged'] else 'status: ' + a['message']}"
                         + (f" [more than {factor:g}x scipy's iterations]"
                            if _ratio(a["nit"], b["nit"], 1.0) > factor else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="size of the scalable problems")
    parser.add_argument("--quick", action="store_true", help="n = 100")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--problems", nargs="+", default=None, help="problem names (all)")
    parser.add_argument("--maxiter", type=int, default=5000)
    parser.add_argument("--factor", type=float, default=2.0)
    parser.add_argument("--json", type=Path, default=None,
                        help="default results/scipy_parity.json for a full run; a --quick "
                             "run or a subset of problems or methods writes none unless given")
    args = parser.parse_args(argv)
    n = 100 if args.quick else args.n
    full = not args.quick and args.problems is None and set(args.methods) == set(METHODS)
    if args.json is None and full:
        args.json = HERE / "results" / "scipy_parity.json"
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
    rows = run(args.problems, args.methods, n, args.maxiter, partial=args.json)
    print(report(rows, args.factor))
    if args.json is not None:
        args.json.write_text(json.dumps({"n": n, "maxiter": args.maxiter,
                                         "factor": args.factor, "summary": summary(rows),
                                         "behind": findings(rows, args.factor),
                                         "scipy_unconverged": scipy_unconverged(rows),
                                         "runs": rows}, indent=1, default=float))
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
