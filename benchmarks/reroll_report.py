"""What re-rolling loops buys: first-call and steady-state times of a Rosenbrock loop.

For the Rosenbrock function written as a Python loop of ``m`` scalar terms,
with re-rolling on and off (``newtonad.ad.reroll.REROLL``), this script
measures in a fresh process with an empty kernel cache (``NEWTONAD_CACHE_DIR`` set to a
new temporary directory):

* the number of steps of the traced program;
* the time from ``import newtonad`` done to the first ``grad`` (trace, derive, compile,
  run), and separately, in another fresh process, to the first ``hvp``;
* the steady-state time per call of ``grad`` and ``hvp`` (median of repeated calls),
  beside the vectorised Rosenbrock's in the same process;

and checks each result against the vectorised form to 1e-10. A child that runs longer
than ``--timeout`` seconds is stopped and reported as such. Usage::

    python benchmarks/reroll_report.py                       # m = 500, 2000; numpy, numba
    python benchmarks/reroll_report.py --terms 100 --engines numpy --timeout 60
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np


def rosen_loop(x: Any) -> Any:
    """Rosenbrock as a Python loop over scalar terms."""
    s = 0.0
    for i in range(len(x) - 1):
        s = s + 100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return s


def rosen(x: Any) -> Any:
    """The vectorised Rosenbrock."""
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _median_call(fun, repeat: int = 200) -> float:
    fun()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fun()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def child(terms: int, engine: str, reroll: bool | None, what: str) -> dict:
    """One measurement in this (fresh) process; returns a JSON-able record.
    ``reroll=None`` measures the vectorised form instead of the loop."""
    import newtonad as nad
    from newtonad.ad import reroll as rr

    objective = rosen if reroll is None else rosen_loop
    rr.REROLL = bool(reroll)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(terms + 1)
    v = rng.standard_normal(terms + 1)
    record: dict[str, Any] = {"terms": terms, "engine": engine, "reroll": reroll, "what": what}
    t0 = time.perf_counter()
    if what == "grad":
        got = nad.grad(objective, engine=engine)(x)
        record["first"] = time.perf_counter() - t0
        want = nad.grad(rosen, engine="numpy")(x)
    else:
        got = nad.hvp(objective, x, v, engine=engine)
        record["first"] = time.perf_counter() - t0
        want = nad.hvp(rosen, x, v, engine="numpy")
    record["rel_err"] = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    record["steps"] = len(nad.trace(objective, x).steps)
    if what == "grad":
        g_loop, g_vec = nad.grad(objective, engine=engine), nad.grad(rosen, engine=engine)
        record["per_call_loop"] = _median_call(lambda: g_loop(x))
        record["per_call_vec"] = _median_call(lambda: g_vec(x))
    else:
        record["per_call_loop"] = _median_call(lambda: nad.hvp(objective, x, v, engine=engine))
        record["per_call_vec"] = _median_call(lambda: nad.hvp(rosen, x, v, engine=engine))
    return record


def measure(terms: int, engine: str, reroll: bool | None, what: str, timeout: float) -> dict:
    """Run :func:`child` in a fresh process with an empty kernel cache."""
    with tempfile.TemporaryDirectory(prefix="reroll-report-") as cache:
        env = dict(os.environ, NEWTONAD_CACHE_DIR=cache)
        flag = "vec" if reroll is None else str(int(reroll))
        cmd = [sys.executable, __file__, "--child", str(terms), engine, flag, what]
        try:
            out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                 timeout=timeout, check=True)
        except subprocess.TimeoutExpired:
            return {"terms": terms, "engine": engine, "reroll": reroll, "what": what,
                    "first": None, "note": f"stopped after {timeout:.0f} s"}
        except subprocess.CalledProcessError as e:
            return {"terms": terms, "engine": engine, "reroll": reroll, "what": what,
                    "first": None, "note": e.stderr.strip().splitlines()[-1][:80]}
        return json.loads(out.stdout.strip().splitlines()[-1])


def _fmt(value: float | None, unit: float = 1.0, digits: int = 3) -> str:
    return "—" if value is None else f"{value * unit:.{digits}g}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--terms", default="500,2000")
    parser.add_argument("--engines", default="numpy,numba")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", help="also write the records to this file")
    parser.add_argument("--modes", default="vec,on,off",
                        help="vec: the vectorised form; on / off: the loop, re-rolled or not")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        terms, engine, reroll, what = args.child
        print(json.dumps(child(int(terms), engine,
                               None if reroll == "vec" else bool(int(reroll)), what)))
        return
    records = []
    modes = [{"vec": None, "on": True, "off": False}[m] for m in args.modes.split(",")]
    print("| terms | engine | reroll | steps | first grad s | first hvp s | grad/call µs "
          "(vectorised) | hvp/call µs (vectorised) |")
    print("|---|---|---|---|---|---|---|---|")
    for terms in map(int, args.terms.split(",")):
        for engine in args.engines.split(","):
            for reroll in modes:
                g = measure(terms, engine, reroll, "grad", args.timeout)
                h = measure(terms, engine, reroll, "hvp", args.timeout)
                records += [g, h]
                steps = g.get("steps", h.get("steps", "?"))
                notes = "; ".join(r["note"] for r in (g, h) if "note" in r)
                mode = "vectorised" if reroll is None else "on" if reroll else "off"
                print(f"| {terms} | {engine} | {mode} | {steps} | "
                      f"{_fmt(g['first'])} | {_fmt(h['first'])} | "
                      f"{_fmt(g.get('per_call_loop'), 1e6)} ({_fmt(g.get('per_call_vec'), 1e6)})"
                      f" | {_fmt(h.get('per_call_loop'), 1e6)} "
                      f"({_fmt(h.get('per_call_vec'), 1e6)}) |" + (f" {notes}" if notes else ""),
                      flush=True)
                for r in (g, h):
                    if r.get("rel_err") is not None and r["rel_err"] > 1e-10:
                        print(f"  !! {r['what']} differs from the vectorised form: "
                              f"{r['rel_err']:.2e}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(records, fh, indent=1)


if __name__ == "__main__":
    main()
