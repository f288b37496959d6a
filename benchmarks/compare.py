"""Compare newtonad with hand-fused numba and, where installed, JAX, torch.func and autograd.

Usage::

    python benchmarks/compare.py            # full run (the full sizes)
    python benchmarks/compare.py --quick    # small sizes, a minute or so
    python benchmarks/compare.py --systems newtonad-numba hand-numba --json out.json

Every system runs in its own process (``--worker``), so one system's imports, JIT
caches and allocations cannot disturb another's. Each process is pinned to one core,
with BLAS and numba on one thread, unless ``--threads N`` says otherwise: then every
system may use N cores (XLA splits its fused loops over them, newtonad runs its large
loops on N numba threads; the hand kernels stay serial). Each measure is the
median of repeated calls after a warm-up call; with ``--rounds N`` the systems take
turns N times and each measure keeps its best median. Inputs and outputs start on a cache
line for every system. Outputs are preallocated or reused where the system allows it
(newtonad: ``run.reusing_outputs()``). The table gives medians
and, in brackets, the ratio to the fastest system on that row.

Problems: chained Rosenbrock (n = 1e3, 1e5, 1e6), L2 logistic regression with
``X`` (20000 x 500) and ``y`` passed as arguments, a 512 x 512 minimal surface written
with slicing, and the 2-variable Rosenbrock for per-call overhead (called through
``newtonad.Objective``, as scipy would). Measures: value; value+gradient; HVP frames
for k = 1, 2, 4, ..., 64 (total, and per column in the table); linearised-HVP setup
and apply; peak memory of an HVP frame; cold start in a fresh process (interpreter
start to first HVP) with an empty and with a warm cache.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
SYSTEMS = ["newtonad-numba", "newtonad-numpy", "hand-numba", "jax", "torch", "autograd"]
PEERS = {"jax": "jax", "torch": "torch", "autograd": "autograd"}


# ---- problems -------------------------------------------------------------------------------

def problems(quick: bool) -> dict[str, dict]:
    """Name -> sizes; the data are made in the worker from a fixed seed."""
    if quick:
        return {"rosen-1e3": dict(kind="rosen", n=1000), "rosen-1e5": dict(kind="rosen", n=10**5),
                "logistic": dict(kind="logistic", m=2000, n=100),
                "surface": dict(kind="surface", m=128), "rosen-2": dict(kind="rosen", n=2)}
    return {"rosen-1e3": dict(kind="rosen", n=1000), "rosen-1e5": dict(kind="rosen", n=10**5),
            "rosen-1e6": dict(kind="rosen", n=10**6),
            "logistic": dict(kind="logistic", m=20000, n=500),
            "surface": dict(kind="surface", m=512), "rosen-2": dict(kind="rosen", n=2)}


def ks(quick: bool, spec: dict) -> list[int]:
    if spec["kind"] == "rosen" and spec["n"] == 2:
        return [1]
    return [1, 16] if quick else [1, 2, 4, 8, 16, 32, 64]


def empty_aligned_like(a: np.ndarray) -> np.ndarray:
    """``np.empty_like(a)`` starting on a cache line. NumPy aligns to 16 bytes, and where a
    frame starts decides whether vector loads split across cache lines (up to 1.6x at
    k = 64, any kernel): every system gets the same, aligned, inputs and outputs."""
    from newtonad.ad.engine.numba_buffers import aligned_array

    return aligned_array(a.shape, a.dtype)


def aligned(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` starting on a cache line (see :func:`empty_aligned_like`)."""
    out = empty_aligned_like(a)
    out[...] = a
    return out


def make_data(spec: dict) -> tuple[np.ndarray, tuple]:
    x, args = _make_data(spec)
    return aligned(x), tuple(aligned(a) for a in args)


def _make_data(spec: dict) -> tuple[np.ndarray, tuple]:
    rng = np.random.default_rng(0)
    if spec["kind"] == "rosen":
        return rng.uniform(-1.0, 1.0, spec["n"]), ()
    if spec["kind"] == "logistic":
        X = rng.normal(size=(spec["m"], spec["n"])) / np.sqrt(spec["n"])
        y = np.sign(rng.normal(size=spec["m"]))
        return rng.normal(size=spec["n"]) * 0.1, (X, y, np.array(1e-2))
    m = spec["m"]
    return rng.normal(size=(m, m)) * 0.1, (np.array(1.0 / (m - 1)),)


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def logistic(w, X, y, lam):
    return np.sum(np.logaddexp(0, -y * (X @ w))) + 0.5 * lam * (w @ w)


def surface(u, h):
    return np.sum(np.sqrt(1 + ((u[1:, :-1] - u[:-1, :-1]) * h) ** 2
                          + ((u[:-1, 1:] - u[:-1, :-1]) * h) ** 2))


FUNCS = {"rosen": rosen, "logistic": logistic, "surface": surface}


# ---- timing ----------------------------------------------------------------------------------

def median_time(fn: Callable[[], Any], budget: float, min_reps: int = 5) -> float:
    fn()  # warm-up (and JIT)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < min_reps or (time.perf_counter() - start < budget and len(times) < 10000):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


# ---- systems (each builds callables for one problem) ----------------------------------------

def newtonad_system(engine: str):
    def build(spec: dict, x: np.ndarray, args: tuple, kmax: int):
        import newtonad as nad
        from newtonad.ad import transforms as tf
        from newtonad.ad.engine import compile_program

        if engine == "numba":
            import newtonad.ad.engine.numba_engine  # noqa: F401  (registers the engine)
        f = FUNCS[spec["kind"]]
        program = nad.trace(f, x, *args)

        def fast(p):
            run = compile_program(p, engine)
            return run.reusing_outputs() if hasattr(run, "reusing_outputs") else run

        value = fast(program)
        vg = fast(tf.value_and_grad_program(program))
        ops: dict[str, Callable] = {"f": lambda: value(x, *args), "vg": lambda: vg(x, *args)}
        results: dict[str, Any] = {"vg": lambda: [np.array(a, copy=True) for a in vg(x, *args)]}

        def hvp(k: int, V: np.ndarray):
            run = fast(tf.hvp_program(program, k))
            return lambda: run(x, *args, V)

        def linearized(k: int, V: np.ndarray):
            residual, linear = tf.linearized_hvp(program, k)
            rrun, lrun = fast(residual), fast(linear)
            res = [np.array(a, copy=True) for a in rrun(x, *args)[2:]]  # after f and ∇f
            return (lambda: rrun(x, *args)), (lambda: lrun(x, *args, *res, V))

        extra = {}
        if spec["kind"] == "rosen" and spec["n"] == 2:
            obj = nad.Objective(f, engine=engine)
            xs = [x.copy(), x + 1e-3]
            state = {"i": 0}

            def jac():
                state["i"] ^= 1
                return obj.jac(xs[state["i"]])

            p = np.ones(2)

            def hessp():
                state["i"] ^= 1
                return obj.hessp(xs[state["i"]], p)

            def hessp_same_x():  # what a CG iteration does: the linearisation is reused
                return obj.hessp(xs[0], p)

            extra = {"objective jac, new x each call": jac,
                     "objective hessp, new x each call": hessp,
                     "objective hessp, same x": hessp_same_x}
        return ops, hvp, linearized, results, extra

    return build


def hand_system():
    def build(spec: dict, x: np.ndarray, args: tuple, kmax: int):
        sys.path.insert(0, str(HERE))
        import hand_numba as H

        kind = spec["kind"]
        if kind == "rosen":
            g = empty_aligned_like(x)
            ops = {"f": lambda: H.rosen_value(x), "vg": lambda: H.rosen_value_and_grad(x, g)}
            results = {"vg": lambda: [np.array(H.rosen_value_and_grad(x, g)), g.copy()]}

            def hvp(k, V):
                out = empty_aligned_like(V)
                return lambda: (H.rosen_hvp(x, V, out), out)[1]

            def linearized(k, V):
                diag, off, out = empty_aligned_like(x), empty_aligned_like(x), empty_aligned_like(V)
                H.rosen_linearize(x, diag, off)
                return ((lambda: H.rosen_linearize(x, diag, off)),
                        (lambda: (H.rosen_linear_apply(diag, off, V, out), out)[1]))
        elif kind == "logistic":
            X, y, lam = args
            lamf = float(lam)
            g, d = empty_aligned_like(x), np.empty(X.shape[0])
            ops = {"f": lambda: H.logistic_value(x, X, y, lamf),
                   "vg": lambda: H.logistic_value_and_grad(x, X, y, lamf, g)}
            results = {"vg": lambda: [np.array(H.logistic_value_and_grad(x, X, y, lamf, g)),
                                      g.copy()]}

            def hvp(k, V):
                out = empty_aligned_like(V)
                return lambda: (H.logistic_hvp(x, X, y, lamf, V, out, d), out)[1]

            def linearized(k, V):
                out = empty_aligned_like(V)
                H.logistic_linearize(x, X, y, d)
                return ((lambda: H.logistic_linearize(x, X, y, d)),
                        (lambda: (H.logistic_linear_apply(d, X, lamf, V, out), out)[1]))
        else:
            h = float(args[0])
            g = empty_aligned_like(x)
            ops = {"f": lambda: H.surface_value(x, h),
                   "vg": lambda: H.surface_value_and_grad(x, h, g)}
            results = {"vg": lambda: [np.array(H.surface_value_and_grad(x, h, g)), g.copy()]}

            def hvp(k, V):
                out = empty_aligned_like(V)
                return lambda: (H.surface_hvp(x, h, V, out), out)[1]

            def linearized(k, V):
                Hm, out = np.empty(x.shape + (3,)), empty_aligned_like(V)
                H.surface_linearize(x, h, Hm)
                return ((lambda: H.surface_linearize(x, h, Hm)),
                        (lambda: (H.surface_linear_apply(Hm, V, out), out)[1]))
        extra = {}
        if kind == "rosen" and spec["n"] == 2:
            # the hand kernels have no Objective: their raw calls are the floor
            hvp1 = hvp(1, np.ones((2, 1)))
            extra = {"objective jac, new x each call": ops["vg"],
                     "objective hessp, new x each call": hvp1, "objective hessp, same x": hvp1}
        return ops, hvp, linearized, results, extra

    return build


def jax_function(kind: str) -> Callable:
    """The problem ``kind`` written with ``jax.numpy`` (x64 enabled)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    if kind == "rosen":
        def f(x):
            return jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    elif kind == "logistic":
        def f(w, X, y, lam):
            return jnp.sum(jnp.logaddexp(0, -y * (X @ w))) + 0.5 * lam * (w @ w)
    else:
        def f(u, h):
            return jnp.sum(jnp.sqrt(1 + ((u[1:, :-1] - u[:-1, :-1]) * h) ** 2
                                    + ((u[:-1, 1:] - u[:-1, :-1]) * h) ** 2))
    return f


def jax_system():
    def build(spec, x, args, kmax):
        import jax
        import jax.numpy as jnp

        f = jax_function(spec["kind"])
        jx, jargs = jnp.asarray(x), tuple(jnp.asarray(a) for a in args)
        fv = jax.jit(f)
        vg = jax.jit(jax.value_and_grad(f))
        ops = {"f": lambda: fv(jx, *jargs).block_until_ready(),
               "vg": lambda: jax.block_until_ready(vg(jx, *jargs))}
        results = {"vg": lambda: [np.asarray(a) for a in vg(jx, *jargs)]}

        def hvp_frame(x, V, *a):
            def g(x):
                return jax.grad(f)(x, *a)
            return jax.vmap(lambda v: jax.jvp(g, (x,), (v,))[1], in_axes=-1, out_axes=-1)(V)

        jh = jax.jit(hvp_frame)

        def hvp(k, V):
            jV = jnp.asarray(V)
            return lambda: jh(jx, jV, *jargs).block_until_ready()

        def linearized(k, V):
            jV = jnp.asarray(V)
            setup = jax.jit(lambda x, *a: jax.linearize(lambda x: jax.grad(f)(x, *a), x)[1])
            lin = setup(jx, *jargs)
            apply = jax.jit(jax.vmap(lin, in_axes=-1, out_axes=-1))

            def relinearize():
                return jax.block_until_ready(jax.linearize(lambda z: jax.grad(f)(z, *jargs), jx))

            return relinearize, (lambda: apply(jV).block_until_ready())

        return ops, hvp, linearized, results, {}

    return build


def torch_system():
    def build(spec, x, args, kmax):
        import torch
        from torch.func import grad, jvp, vmap

        torch.set_default_dtype(torch.float64)
        kind = spec["kind"]
        if kind == "rosen":
            def f(x):
                return torch.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        elif kind == "logistic":
            def f(w, X, y, lam):
                return (torch.sum(torch.logaddexp(torch.zeros(()), -y * (X @ w)))
                        + 0.5 * lam * (w @ w))
        else:
            def f(u, h):
                return torch.sum(torch.sqrt(1 + ((u[1:, :-1] - u[:-1, :-1]) * h) ** 2
                                            + ((u[:-1, 1:] - u[:-1, :-1]) * h) ** 2))
        tx, targs = torch.from_numpy(x), tuple(torch.from_numpy(np.asarray(a)) for a in args)
        from torch.func import grad_and_value

        gv = grad_and_value(f)
        ops = {"f": lambda: f(tx, *targs), "vg": lambda: gv(tx, *targs)}
        results = {"vg": lambda: [gv(tx, *targs)[1].numpy(), gv(tx, *targs)[0].numpy()]}

        def hvp(k, V):
            tV = torch.from_numpy(V)

            def g(x):
                return grad(f)(x, *targs)
            frame = vmap(lambda v: jvp(g, (tx,), (v,))[1], in_dims=-1, out_dims=-1)
            return lambda: frame(tV)

        return ops, hvp, None, results, {}

    return build


def autograd_system():
    def build(spec, x, args, kmax):
        import autograd
        import autograd.numpy as anp

        kind = spec["kind"]
        if kind == "rosen":
            def f(x):
                return anp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        elif kind == "logistic":
            def f(w, X, y, lam):
                return anp.sum(anp.logaddexp(0, -y * anp.dot(X, w))) + 0.5 * lam * anp.dot(w, w)
        else:
            def f(u, h):
                return anp.sum(anp.sqrt(1 + ((u[1:, :-1] - u[:-1, :-1]) * h) ** 2
                                        + ((u[:-1, 1:] - u[:-1, :-1]) * h) ** 2))
        vg = autograd.value_and_grad(f)
        ops = {"f": lambda: f(x, *args), "vg": lambda: vg(x, *args)}
        results = {"vg": lambda: list(vg(x, *args))}
        hvp1 = autograd.hessian_vector_product(f)  # hvp1(x, *args, v): the vector comes last

        def hvp(k, V):
            return lambda: np.stack([hvp1(x, *args, V[..., c]) for c in range(k)], axis=-1)

        return ops, hvp, None, results, {}

    return build


BUILDERS = {"newtonad-numba": newtonad_system("numba"), "newtonad-numpy": newtonad_system("numpy"),
            "hand-numba": hand_system(), "jax": jax_system(), "torch": torch_system(),
            "autograd": autograd_system()}


# ---- worker ----------------------------------------------------------------------------------

def reference_vg(spec, x, args):
    import newtonad as nad

    return nad.value_and_grad(FUNCS[spec["kind"]], engine="numpy")(x, *args)


def worker(system: str, quick: bool, budget: float, only: list[str] | None = None) -> dict:
    out: dict[str, Any] = {}
    for name, spec in problems(quick).items():
        if only and name not in only:
            continue
        x, args = make_data(spec)
        kset = ks(quick, spec)
        ops, hvp, linearized, results, extra = BUILDERS[system](spec, x, args, max(kset))
        ref_f, ref_g = reference_vg(spec, x, args)
        f_got, g_got = results["vg"]()
        g_err = np.max(np.abs(np.asarray(g_got) - ref_g)) / max(1.0, np.max(np.abs(ref_g)))
        err = max(abs(float(f_got) - ref_f) / max(1.0, abs(ref_f)), float(g_err))
        out[f"{name}|check vg rel err"] = err
        for key, fn in ops.items():
            out[f"{name}|{key}"] = median_time(fn, budget)
        rng = np.random.default_rng(1)
        for k in kset:
            V = aligned(rng.normal(size=x.shape + (k,)))
            out[f"{name}|hvp k={k}"] = median_time(hvp(k, V), budget, 3)
        if linearized is not None:
            for k in sorted({kset[0], kset[-1]}):
                V = aligned(rng.normal(size=x.shape + (k,)))
                setup, apply = linearized(k, V)
                if k == kset[0]:
                    out[f"{name}|lin setup"] = median_time(setup, budget, 3)
                out[f"{name}|lin apply k={k}"] = median_time(apply, budget, 3)
        for key, fn in extra.items():
            out[f"{name}|{key}"] = median_time(fn, budget, 50)
    return out


def memory_worker(system: str, problem: str, quick: bool) -> dict:
    """Peak resident memory added by one HVP frame (k = the largest k)."""
    spec = problems(quick)[problem]
    x, args = make_data(spec)
    k = ks(quick, spec)[-1]
    V = aligned(np.random.default_rng(1).normal(size=x.shape + (k,)))
    # One HVP on a tiny problem of the same kind first, for every system: what a process
    # touches once (JIT code, BLAS work buffers: ~16 MiB for OpenBLAS) is not the frame's.
    tiny = dict(spec, n=8, m=8) if spec["kind"] != "logistic" else dict(spec, m=64, n=4)
    tx, targs = make_data(tiny)
    BUILDERS[system](tiny, tx, targs, 1)[1](1, np.ones(tx.shape + (1,)))()
    _, hvp, _, _, _ = BUILDERS[system](spec, x, args, k)
    fn = hvp(k, V)
    before = peak_rss(reset=True)
    fn()
    return {"bytes": peak_rss() - before, "frame_bytes": 2 * V.nbytes, "k": k}


def peak_rss(reset: bool = False) -> int:
    """Peak resident bytes of this process; ``reset`` first lowers the peak to the current
    size (Linux), so that memory freed before the measure (temporaries of the data) does
    not hide what the measured call allocates below the old peak."""
    status = Path("/proc/self/status")
    if not status.exists():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if reset:
        Path("/proc/self/clear_refs").write_text("5")
    fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
    return int(fields["VmHWM"].split()[0]) * 1024


COLD = r"""
import numpy as np
import newtonad as nad
import newtonad.ad.engine.numba_engine
x = np.random.default_rng(0).uniform(-1, 1, {n})
f = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
hv = nad.hvp(f, x, np.ones_like(x), engine="numba")
"""

COLD_HAND = r"""
import sys
import numpy as np
sys.path.insert(0, {here!r})
import hand_numba as H
x = np.random.default_rng(0).uniform(-1, 1, {n})
V = np.ones((x.size, 1)); out = np.empty_like(V)
H.rosen_hvp(x, V, out)
"""


def cold_start(system: str, n: int) -> dict:
    """Seconds from interpreter start to the first HVP, with an empty and a warm cache."""
    code = {"newtonad-numba": COLD, "hand-numba": COLD_HAND}.get(system)
    if code is None:
        return {}
    code = code.format(n=n, here=str(HERE))
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NEWTONAD_CACHE_DIR=d, NUMBA_CACHE_DIR=d)
        res = {}
        for label in ("empty cache", "warm cache"):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], env=env, check=True)
            res[label] = time.perf_counter() - t
        return res


# ---- parent: run workers, print the table -----------------------------------------------------

def available(system: str) -> bool:
    mod = PEERS.get(system)
    return mod is None or importlib.util.find_spec(mod) is not None


THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def run_worker(args: list[str], threads: int = 1) -> dict:
    """Run one worker process on ``threads`` cores, with as many BLAS and numba threads.

    The cores are pinned, not only the BLAS threads: XLA splits a fused loop over every
    core it may use (``outer_dimension_partitions`` in its HLO), whatever its thread flags.
    """
    env = dict(os.environ, **{v: str(threads) for v in THREAD_VARS})
    pin = None
    if hasattr(os, "sched_setaffinity"):
        cores = set(sorted(os.sched_getaffinity(0))[:threads])
        pin = lambda: os.sched_setaffinity(0, cores)  # noqa: E731
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), *args],
                          capture_output=True, text=True, env=env, preexec_fn=pin)
    if proc.returncode != 0:
        print(f"worker {args} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
        return {}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt_seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def table(results: dict[str, dict], systems: list[str]) -> str:
    rows: list[str] = []
    keys = list(dict.fromkeys(k for s in systems for k in results.get(s, {})))
    lines = ["| problem | measure | " + " | ".join(systems) + " |",
             "|---|---|" + "---|" * len(systems)]
    for key in keys:
        problem, measure = key.split("|", 1)
        vals = {s: results.get(s, {}).get(key) for s in systems}
        per_col = measure.startswith("hvp k=") and measure != "hvp k=1"
        if measure.startswith("check"):
            cells = [("—" if v is None else f"{v:.1e}") for v in vals.values()]
        elif measure.startswith("memory"):
            cells = [("—" if v is None else v) for v in vals.values()]
        else:
            finite = [v for v in vals.values() if isinstance(v, (int, float))]
            best = min(finite) if finite else None
            cells = []
            for v in vals.values():
                if not isinstance(v, (int, float)):
                    cells.append("—")
                    continue
                text = fmt_seconds(v)
                if per_col:
                    k = int(measure.split("=")[1])
                    text += f" ({fmt_seconds(v / k)}/col)"
                cells.append(f"{text} ({v / best:.2f}×)")
        lines.append(f"| {problem} | {measure} | " + " | ".join(cells) + " |")
        rows.append(key)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (about a minute)")
    ap.add_argument("--systems", nargs="*", default=SYSTEMS, choices=SYSTEMS, metavar="SYSTEM",
                    help=f"any of {', '.join(SYSTEMS)} (default: all installed)")
    ap.add_argument("--budget", type=float, default=None, help="seconds per measure")
    ap.add_argument("--json", help="also write the raw medians here")
    ap.add_argument("--threads", type=int, default=1,
                    help="cores, BLAS and numba threads of every worker "
                         "(default 1: serial, like the hand kernels)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every system this many times, taking turns, and keep the best "
                         "median of each measure (default 1)")
    ap.add_argument("--problems", nargs="*", metavar="NAME",
                    help="only these problems (default: all; names as in the table)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--memory", nargs=2, metavar=("SYSTEM", "PROBLEM"), help=argparse.SUPPRESS)
    ns = ap.parse_args(argv)
    budget = ns.budget if ns.budget is not None else (0.2 if ns.quick else 1.0)
    if ns.worker:
        print(json.dumps(worker(ns.worker, ns.quick, budget, ns.problems)))
        return
    if ns.memory:
        print(json.dumps(memory_worker(ns.memory[0], ns.memory[1], ns.quick)))
        return
    systems = [s for s in ns.systems if available(s)]
    skipped = [s for s in ns.systems if s not in systems]
    names = list(problems(ns.quick))
    unknown = set(ns.problems or ()) - set(names)
    if unknown:
        ap.error(f"unknown problems {sorted(unknown)}; choose from {names}")
    chosen = ns.problems or names
    flag = ["--quick"] if ns.quick else []
    only = ["--problems", *ns.problems] if ns.problems else []
    results: dict[str, dict] = {s: {} for s in systems}
    for r in range(ns.rounds):
        for s in systems:  # systems take turns, so a slow spell of the machine hits them alike
            print(f"running {s} (round {r + 1} of {ns.rounds}) ...", file=sys.stderr, flush=True)
            got = run_worker(["--worker", s, "--budget", str(budget), *flag, *only], ns.threads)
            for key, value in got.items():  # the best median over rounds
                results[s][key] = value if key not in results[s] else min(results[s][key], value)
    for s in systems:
        largest = ("rosen-1e5" if ns.quick else "rosen-1e6", "surface", "logistic")
        big = [p for p in chosen if p in largest]
        for p in big:
            m = run_worker(["--memory", s, p, *flag], ns.threads)
            if m:
                results[s][f"{p}|memory of HVP k={m['k']} / (V + out)"] = \
                    f"{m['bytes'] / 2**20:.0f} MiB ({m['bytes'] / m['frame_bytes']:.2f}×)"
        if "rosen-1e5" in chosen:
            for label, secs in cold_start(s, 10**5).items():
                results[s][f"rosen-1e5|cold start, {label}"] = secs
    print(table(results, systems))
    if skipped:
        print(f"\nnot installed (skipped): {', '.join(skipped)}")
    if ns.json:  # "_meta": where and when, for the docs' figure captions
        import platform

        meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "machine": {"cpu": platform.processor() or platform.machine(),
                            "cores": os.cpu_count(), "os": platform.platform()},
                "command": " ".join(["python benchmarks/compare.py", *sys.argv[1:]])}
        Path(ns.json).write_text(json.dumps({"_meta": meta, **results}, indent=1))


if __name__ == "__main__":
    main()
