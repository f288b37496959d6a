"""Per-call time quiet and beside CPU-bound neighbours: newtonad and JAX in one run.

Usage::

    python benchmarks/under_load.py                 # all problems, 2 busy neighbours
    python benchmarks/under_load.py --quick         # n = 1e5 problems only
    python benchmarks/under_load.py --busy 1 --json out.json

A shared node, a Dask worker, ``pytest -n``, a multiprocessing pool or a second
notebook all leave a library fewer cores than the machine has. This script times the
calls a solver makes -- ``nad.value_and_grad``, ``nad.hvp`` (one direction and a frame
of 8), ``Objective.hessp`` at a fixed point -- through newtonad's public functions on
the problems of ``compare.py`` (chained Rosenbrock at n = 1e5 and 1e6, the 512 x 512
minimal surface, L2 logistic regression with ``X`` of 20000 x 500), with
``engine="numba"`` (kernels compiled before timing), and the same computations in JAX
(``jax.jit`` of ``value_and_grad`` and of a vmapped forward-over-reverse product).

Each system runs in a fresh worker process with the machine's default threading (no
pinning: BLAS, numba and XLA may use every core), first on a quiet machine, then with
``--busy`` processes spinning on the CPU beside it. ``newtonad-serial`` is newtonad with
numba on one thread: beside ``newtonad`` it shows whether the parallel kernels lose
more than the cores they cannot get. Each figure is the median of
repeated calls within a time budget (the mean, which counts the long waits a busy
machine causes, is in the JSON). The table gives, per measure, the quiet and loaded
medians of each system and newtonad's loaded / quiet ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import compare  # noqa: E402  (the problems, their data and the JAX functions)

#: ``newtonad-serial``: numba on one thread, to show what the parallel kernels gain or lose
SYSTEMS = ("newtonad", "newtonad-serial", "jax")
BUSY = "while True: pass"


def problems(quick: bool) -> dict[str, dict]:
    """The problems of compare.py measured here."""
    specs = {"rosen-1e5": dict(kind="rosen", n=10**5), "rosen-1e6": dict(kind="rosen", n=10**6),
             "surface": dict(kind="surface", m=512),
             "logistic": dict(kind="logistic", m=20000, n=500)}
    if quick:
        specs = {k: v for k, v in specs.items() if k in ("rosen-1e5", "surface")}
    return specs


def timed(fn: Callable[[], Any], budget: float, min_reps: int = 7) -> dict[str, float]:
    """Median and mean seconds of ``fn()`` after a warm-up call."""
    fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < min_reps or (time.perf_counter() - start < budget and len(times) < 5000):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return {"median": float(np.median(times)), "mean": float(np.mean(times))}


def newtonad_ops(spec: dict, x: np.ndarray, args: tuple) -> dict[str, Callable[[], Any]]:
    import newtonad as nad

    f = compare.FUNCS[spec["kind"]]
    rng = np.random.default_rng(1)
    v, V = rng.normal(size=x.shape), rng.normal(size=x.shape + (8,))
    vg = nad.value_and_grad(f, engine="numba")
    obj = nad.Objective(f, args=args, engine="numba")
    obj.hessp(x, v)
    return {"value_and_grad": lambda: vg(x, *args),
            "hvp k=1": lambda: nad.hvp(f, x, v, args=args, engine="numba"),
            "hvp k=8": lambda: nad.hvp(f, x, V, args=args, engine="numba"),
            "Objective.hessp, same x": lambda: obj.hessp(x, v)}


def jax_ops(spec: dict, x: np.ndarray, args: tuple) -> dict[str, Callable[[], Any]]:
    import jax
    import jax.numpy as jnp

    f = compare.jax_function(spec["kind"])

    def hvp_frame(x, V, *a):
        def g(x):
            return jax.grad(f)(x, *a)
        return jax.vmap(lambda v: jax.jvp(g, (x,), (v,))[1], in_axes=-1, out_axes=-1)(V)

    def hvp_one(x, v, *a):
        return jax.jvp(lambda z: jax.grad(f)(z, *a), (x,), (v,))[1]

    rng = np.random.default_rng(1)
    jx, jargs = jnp.asarray(x), tuple(jnp.asarray(a) for a in args)
    jv, jV = jnp.asarray(rng.normal(size=x.shape)), jnp.asarray(rng.normal(size=x.shape + (8,)))
    vg, h1, h8 = jax.jit(jax.value_and_grad(f)), jax.jit(hvp_one), jax.jit(hvp_frame)
    return {"value_and_grad": lambda: jax.block_until_ready(vg(jx, *jargs)),
            "hvp k=1": lambda: h1(jx, jv, *jargs).block_until_ready(),
            "hvp k=8": lambda: h8(jx, jV, *jargs).block_until_ready()}


def worker(system: str, quick: bool, budget: float) -> dict[str, dict[str, float]]:
    build = jax_ops if system == "jax" else newtonad_ops
    out = {}
    for name, spec in problems(quick).items():
        x, args = compare.make_data(spec)
        for measure, fn in build(spec, x, args).items():
            out[f"{name}|{measure}"] = timed(fn, budget)
    return out


def available(system: str) -> bool:
    return system.startswith("newtonad") or compare.available(system)


def run_worker(system: str, quick: bool, budget: float) -> dict:
    args = [sys.executable, str(Path(__file__).resolve()), "--worker", system,
            "--budget", str(budget)] + (["--quick"] if quick else [])
    env = dict(os.environ)
    if system == "newtonad-serial":
        env["NUMBA_NUM_THREADS"] = "1"
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"{system} worker failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
        return {}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure_all(systems: list[str], quick: bool, budget: float, busy: int) -> dict:
    """``{phase: {system: results}}`` for the quiet phase and the loaded one."""
    results: dict[str, dict] = {"quiet": {}, "loaded": {}}
    for system in systems:  # also compiles newtonad's kernels into the disk cache
        results["quiet"][system] = run_worker(system, quick, budget)
    neighbours = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(busy)]
    try:
        time.sleep(0.5)
        for system in systems:
            results["loaded"][system] = run_worker(system, quick, budget)
    finally:
        for p in neighbours:
            p.kill()
            p.wait()
    return results


def fmt(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1e3:.3f} ms" if s >= 1e-4 else f"{s * 1e6:.1f} us"


def table(results: dict, systems: list[str]) -> str:
    keys = sorted({k for phase in results.values() for r in phase.values() for k in r},
                  key=lambda k: (k.split("|")[0], k))
    cols = [f"{s} {p}" for s in systems for p in ("quiet", "loaded")] + ["newtonad loaded/quiet",
                                                                          "newtonad/jax loaded"]
    rows = [["measure", *cols]]
    for key in keys:
        row = [key]
        get = {(s, p): results[p].get(s, {}).get(key, {}).get("median")
               for s in systems for p in ("quiet", "loaded")}
        row += [fmt(get[(s, p)]) for s in systems for p in ("quiet", "loaded")]
        nq, nl, jl = get.get(("newtonad", "quiet")), get.get(("newtonad", "loaded")), \
            get.get(("jax", "loaded"))
        row.append(f"{nl / nq:.2f}" if nq and nl else "-")
        row.append(f"{nl / jl:.2f}" if nl and jl else "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 1e5 Rosenbrock and the surface")
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound neighbours (default 2)")
    parser.add_argument("--budget", type=float, default=1.5, help="seconds per measure")
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    a = parser.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker, a.quick, a.budget)))
        return
    systems = [s for s in a.systems if available(s)]
    missing = sorted(set(a.systems) - set(systems))
    if missing:
        print(f"not installed, skipped: {', '.join(missing)}", file=sys.stderr)
    results = measure_all(systems, a.quick, a.budget, a.busy)
    print(f"{os.cpu_count()} cores, {a.busy} busy neighbours; medians per call")
    print(table(results, systems))
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
