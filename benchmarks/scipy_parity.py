"""Each native method beside scipy's method of the same name, on ``newtonad.problems``.

For every unconstrained problem (scalable ones at ``--n``, default 1000) and every
native method (newton-cg, trust-ncg, trust-krylov, trust-exact), one process runs
``newtonad.minimize(obj, x0, method=m)`` and ``scipy.optimize.minimize(obj.fun, x0,
jac=obj.jac, hessp=obj.hessp, method=m)`` (``hess=obj.hess`` for trust-exact) on the
same ``nad.Objective`` (engine ``numba``), so both see the same derivatives at the
same cost. The two
runs alternate which goes first from one problem to the next (interleaved), after one
warm-up evaluation of the derivatives at x0 (compilation is not timed). Both get the
same ``maxiter`` (``--maxiter``, default 5000; scipy's own default is 200 n).

The report lists, per method, every problem where newtonad needs more than
``--factor`` (default 2) times scipy's iterations or time while scipy's run succeeds,
and every problem where scipy succeeds and newtonad does not; then the geometric
means of the ratios. ``--json`` writes every run (default
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


def _run(side: str, method: str, obj: Any, x0: np.ndarray, maxiter: int) -> dict:
    import newtonad as nad

    options = {"maxiter": maxiter}
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
            row = {"problem": p.name, "n": p.n, "method": method, "fstar": p.fstar,
                   **{side: result[side] for side in ("newtonad", "scipy")}}
            rows.append(row)
            if partial is not None:
                partial.write_text(json.dumps({"n": n, "runs": rows}, indent=1, default=float))
            if progress:
                a, b = row["newtonad"], row["scipy"]
                print(f"{p.name:28s} {method:13s} nit {a['nit']!s:>6} / {b['nit']!s:>6}  "
                      f"time {a['time']:7.3f} / {b['time']:7.3f}  "
                      f"ok {a['success']!s:5} / {b['success']!s:5}", file=sys.stderr,
                      flush=True)
    return rows


def _ratio(a: float | None, b: float | None, floor: float = 0.0) -> float:
    if a is None or b is None:
        return math.nan
    return max(a, floor) / max(b, floor) if max(b, floor) > 0 else math.inf


def findings(rows: list[dict], factor: float) -> dict[str, list[dict]]:
    """Per method, the problems where newtonad is behind scipy's same method.

    Behind means: scipy succeeds and newtonad does not, or both succeed and newtonad
    needs more than ``factor`` times scipy's iterations (at least one) or time (at
    least 10 ms, so timer noise on tiny runs is not counted).
    """
    out: dict[str, list[dict]] = {}
    for row in rows:
        a, b = row["newtonad"], row["scipy"]
        if not b["success"]:
            continue
        reasons = []
        if not a["success"]:
            reasons.append(f"unsolved ({a['message']})")
        else:
            if _ratio(a["nit"], b["nit"], 1.0) > factor:
                reasons.append(f"iterations {a['nit']} vs {b['nit']}")
            if _ratio(a["time"], b["time"], 0.01) > factor:
                reasons.append(f"time {a['time']:.3f} s vs {b['time']:.3f} s")
        if reasons:
            out.setdefault(row["method"], []).append({**row, "reasons": reasons})
    return out


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per method: pairs, pairs both solved, geometric-mean time and iteration ratios."""
    out = {}
    for method in sorted({r["method"] for r in rows}):
        both = [r for r in rows if r["method"] == method
                and r["newtonad"]["success"] and r["scipy"]["success"]]
        t = [_ratio(r["newtonad"]["time"], r["scipy"]["time"], 1e-4) for r in both]
        k = [_ratio(r["newtonad"]["nit"], r["scipy"]["nit"], 1.0) for r in both]
        out[method] = {
            "pairs": sum(r["method"] == method for r in rows), "both_solved": len(both),
            "time_ratio_geomean": float(np.exp(np.mean(np.log(t)))) if t else math.nan,
            "nit_ratio_geomean": float(np.exp(np.mean(np.log(k)))) if k else math.nan,
            "scipy_only": sum(r["method"] == method and r["scipy"]["success"]
                              and not r["newtonad"]["success"] for r in rows),
            "newtonad_only": sum(r["method"] == method and r["newtonad"]["success"]
                                 and not r["scipy"]["success"] for r in rows)}
    return out


def report(rows: list[dict], factor: float) -> str:
    lines = []
    behind = findings(rows, factor)
    for method, stats in summary(rows).items():
        lines.append(f"## {method}: {stats['pairs']} problems, both solved {stats['both_solved']}, "
                     f"newtonad/scipy geometric mean time {stats['time_ratio_geomean']:.2f}x, "
                     f"iterations {stats['nit_ratio_geomean']:.2f}x; solved by scipy only "
                     f"{stats['scipy_only']}, by newtonad only {stats['newtonad_only']}")
        for item in behind.get(method, []):
            lines.append(f"   {item['problem']} (n = {item['n']}): " + "; ".join(item["reasons"]))
        if not behind.get(method):
            lines.append(f"   never more than {factor:g}x behind scipy where scipy succeeds")
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
                                         "runs": rows}, indent=1, default=float))
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
