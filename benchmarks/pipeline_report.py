"""Seconds per program step of every pipeline stage, against program size.

Each stage of newtonad's pipeline – tracing, the derivative transforms, planning and
code generation for numba, the NumPy evaluator – should cost the same per step
whatever the program's length (a linear-time pipeline). This script builds
long programs (Rosenbrock written as a Python loop over scalar terms, and a variant
over short vectors), times each stage once per size, and prints one table of
microseconds per step, so a stage whose cost grows faster than the program shows as
a rising row::

    python benchmarks/pipeline_report.py                 # sizes 1e2 .. 1e4 steps
    python benchmarks/pipeline_report.py --max 100000    # up to 1e5 steps
    python benchmarks/pipeline_report.py --kind vector --stages trace,grad
    python benchmarks/pipeline_report.py --kind nonloop --sizes 10000,30000,100000

The non-loop programs (:data:`NONLOOP`: an RK4 parameter fit, explicit Burgers steps, a
recurrence of vector states) are recurrences the loop re-roller leaves unrolled; their
table gives CPU seconds per stage, the public API's first value-and-gradient and first
HVP from empty caches, and what a second ``Objective`` of the same code costs.

``benchmarks/bench_pipeline.py`` tracks the same numbers in asv. No numba compile is
timed here (that is the engine's own cost, see ``compile_report`` in this file's
``--compile`` mode, run in a fresh process).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

#: Steps of the traced scalar-loop Rosenbrock per term (measured: the trace of one
#: term ``100*(x[i+1]-x[i]**2)**2 + (1-x[i])**2`` plus the running sum).
STEPS_PER_TERM = 10


def rosen_loop(x: Any) -> Any:
    """Rosenbrock as a Python loop over scalar terms (the long program of the scalar table)."""
    s = 0.0
    for i in range(len(x) - 1):
        s = s + 100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return s


def rosen_vector_loop(x: Any) -> Any:
    """Rosenbrock as a loop over blocks of 8 entries (vector steps in a long program)."""
    s = 0.0
    for a in range(0, x.shape[0] - 8, 8):
        lo, hi = x[a:a + 8], x[a + 1:a + 9]
        s = s + np.sum(100 * (hi - lo ** 2) ** 2 + (1 - lo) ** 2)
    return s


def rosen(x: Any) -> Any:
    """The vectorised Rosenbrock (the reference the loops must agree with)."""
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


KINDS = {"scalar": (rosen_loop, 1), "vector": (rosen_vector_loop, 8)}


# ---- long programs that do not re-roll (recurrences) -----------------------------------------
# Each builder returns ``(f, x0)`` for a size parameter; ``NONLOOP`` gives the parameter that
# traces to about a given number of steps (steps grow linearly with it).

LV_TRUE = np.array([1.0, 0.4, 1.0, 0.3])  # Lotka-Volterra: a, b, c, d


def _lv_rhs(p: Any, u: Any, v: Any) -> tuple[Any, Any]:
    a, b, c, d = p
    return a * u - b * u * v, -c * v + d * u * v


def _rk4_states(p: Any, n: int, h: float) -> list[Any]:
    """The prey population after each of ``n`` RK4 steps of length ``h`` from (1, 1)."""
    u, v, out = 1.0, 1.0, []
    for _ in range(n):
        k1u, k1v = _lv_rhs(p, u, v)
        k2u, k2v = _lv_rhs(p, u + 0.5 * h * k1u, v + 0.5 * h * k1v)
        k3u, k3v = _lv_rhs(p, u + 0.5 * h * k2u, v + 0.5 * h * k2v)
        k4u, k4v = _lv_rhs(p, u + h * k3u, v + h * k3v)
        u = u + h / 6 * (k1u + 2 * k2u + 2 * k3u + k4u)
        v = v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        out.append(u)
    return out


def make_rk4_fit(n: int = 100) -> tuple[Callable, np.ndarray]:
    """A 4-parameter Lotka-Volterra fit: ``n`` hand-written RK4 steps over t in [0, 10],
    least-squares misfit of the prey to data made by the same integrator at
    :data:`LV_TRUE` (a recurrence: the loop re-roller leaves it unrolled)."""
    h = 10.0 / n
    data = np.array(_rk4_states(LV_TRUE, n, h))

    def rk4_fit(theta: Any) -> Any:
        s = 0.0
        for u, d in zip(_rk4_states((theta[0], theta[1], theta[2], theta[3]), n, h), data):
            s = s + (u - d) ** 2
        return s

    return rk4_fit, LV_TRUE * np.array([1.1, 0.9, 0.95, 1.1])


def make_burgers(n: int = 200, grid: int = 16) -> tuple[Callable, np.ndarray]:
    """``n`` explicit steps of viscous Burgers on a periodic grid; x is the initial
    condition, the misfit is to a final state made from a known one."""
    dx, nu = 1.0 / grid, 0.05
    dt = 0.2 * dx * dx / nu

    def final(u: Any) -> Any:
        for _ in range(n):
            left = np.concatenate([u[-1:], u[:-1]])
            right = np.concatenate([u[1:], u[:1]])
            u = u + dt * (nu * (left - 2 * u + right) / (dx * dx)
                          - u * (right - left) / (2 * dx))
        return u

    xs = np.arange(grid) * dx
    target = final(0.5 + 0.3 * np.sin(2 * np.pi * xs))

    def burgers_fit(u0: Any) -> Any:
        return np.sum((final(u0) - target) ** 2) + 1e-3 * np.sum(u0 * u0)

    return burgers_fit, 0.5 + 0.2 * np.cos(2 * np.pi * xs)


def make_recurrence(blocks: int = 40, stages: int = 50, width: int = 8
                    ) -> tuple[Callable, np.ndarray]:
    """An unrolled ``stages``-stage recurrence of ``blocks`` coupled vector states of
    ``width`` entries; x (blocks × width, flattened) scales each state's update."""

    def recurrence(x: Any) -> Any:
        w = [x[j * width:(j + 1) * width] for j in range(blocks)]
        h = [np.full(width, 0.1 * (j + 1)) for j in range(blocks)]
        for k in range(stages):
            c = 0.5 / (k + 1)
            h = [np.tanh(w[j] * h[j] + c * h[j - 1]) for j in range(blocks)]
        return np.sum(np.stack(h) ** 2)

    return recurrence, np.linspace(0.2, 1.2, blocks * width)


#: kind -> (builder, traced steps per unit of its size parameter, smallest parameter)
NONLOOP: dict[str, tuple[Callable[[int], tuple[Callable, np.ndarray]], float, int]] = {
    "rk4": (make_rk4_fit, 62.0, 2),
    "burgers": (make_burgers, 13.0, 2),
    "recurrence": (make_recurrence, 204.0, 1),
}


def x0_for(kind: str, steps: int) -> np.ndarray:
    """A start point whose traced program has about ``steps`` steps (the loop kinds)."""
    per = KINDS[kind][1]
    terms = max(2, steps // STEPS_PER_TERM)
    return np.linspace(-1.2, 1.1, terms * per + (1 if per == 1 else 9))


def problem(kind: str, steps: int) -> tuple[Callable, np.ndarray]:
    """``(f, x)`` of ``kind`` (a loop of :data:`KINDS` or a program of :data:`NONLOOP`)
    tracing to about ``steps`` steps; a new function object on every call."""
    if kind in NONLOOP:
        make, per, smallest = NONLOOP[kind]
        return make(max(smallest, round(steps / per)))
    fun = KINDS[kind][0]
    return (lambda x: fun(x)), x0_for(kind, steps)


def _clear_caches() -> None:
    """Empty the derived-program caches (only the gradient's in older trees) and the
    re-rolled programs (in trees that keep them)."""
    import newtonad._programs as programs
    from newtonad.ad import transforms as tf

    getattr(tf, "clear_caches", tf.grad_program.cache_clear)()
    rerolled = getattr(programs, "rerolled", None)
    if rerolled is not None:
        rerolled.cache_clear()


def _derivations() -> int:
    """Derivations made so far (-1 in trees that do not count them)."""
    from newtonad.ad import transforms as tf

    counts = getattr(tf, "DERIVATIONS", None)
    return -1 if counts is None else sum(counts.values())


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """CPU seconds of ``fn()`` (this process's own time: robust when other processes
    load the machine) and its result."""
    gc.collect()
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def stage_times(kind: str, steps: int, stages: list[str] | None = None) -> dict[str, Any]:
    """Seconds of each stage on one program of about ``steps`` steps.

    Returns a dict with the program's step counts (``steps``: the traced program,
    ``grad_steps``, ``hvp_steps``) and one entry of seconds per stage.
    """
    # remat's compiled flow (graphs of 4096 nodes and more) imports scipy.sparse on first
    # use: 130-160 ms once per process, not a cost of this program's stage
    import scipy.sparse.csgraph  # noqa: F401

    from newtonad.ad import reroll
    from newtonad.ad import transforms as tf
    from newtonad.ad.engine import numpy_eval
    from newtonad.ad.program import Program, Slot
    from newtonad.ad.remat import choose, slot_kinds
    from newtonad.ad.trace import trace_function

    fun, x = problem(kind, steps)
    want = set(stages or STAGES)
    out: dict[str, Any] = {}
    _clear_caches()
    t, traced = _timed(lambda: trace_function(fun, [Slot(x.shape)]))
    program = traced.program
    out["steps"] = len(program.steps)
    out["trace"] = t
    out["reroll"], rolled = _timed(lambda: reroll.reroll(program))
    out["rerolled_steps"] = len(rolled.steps)
    p = program
    out["validate"], _ = _timed(lambda: Program(p.slots, p.steps, p.inputs, p.outputs))
    out["jvp"], jp = _timed(lambda: tf.jvp_program(program, None))
    known = [True] * len(program.inputs) + [False]
    out["fold_scalings"], fj = _timed(lambda: tf.fold_scalings(jp, known))
    out["partial_eval"], (primal, linear) = _timed(
        lambda: tf.partial_eval(fj, known, len(program.outputs)))
    n_fixed = len(linear.inputs) - 1
    out["transpose"], pull = _timed(
        lambda: tf.transpose_program(linear, [False] * n_fixed + [True]))
    out["simplify"], _ = _timed(lambda: tf.simplify(pull))
    _clear_caches()
    out["value_and_grad"], vg = _timed(lambda: tf.value_and_grad_program(program))
    out["grad_steps"] = len(vg.steps)
    if "remat" in want or "hvp" in want:
        jvg = tf.jvp_program(vg, None)
        kinds = slot_kinds(jvg, [True] * len(vg.inputs) + [False])
        needed = list(dict.fromkeys(i for s in jvg.steps if kinds[s.output] == "unknown"
                                    for i in s.inputs if kinds[i] == "known"))
        out["remat"], _ = _timed(lambda: choose(jvg, kinds, needed))
    if "hvp" in want:
        _clear_caches()
        out["hvp"], hp = _timed(lambda: tf.hvp_program(program, None))
        out["hvp_steps"] = len(hp.steps)
    if "hvp_frame" in want:  # a frame of 3 columns, then a new width (5) of the same
        _clear_caches()
        out["hvp_frame"], _ = _timed(lambda: tf.hvp_program(program, 3))
        out["hvp_new_width"], _ = _timed(lambda: tf.hvp_program(program, 5))
    if "linearized_hvp" in want:
        _clear_caches()
        out["linearized_hvp"], _ = _timed(lambda: tf.linearized_hvp(program, None))
    if "numpy_eval" in want:
        numpy_eval.compile_program.cache_clear()
        ins = [x] + [np.asarray(v.value) for v in traced.closed]  # captured data after x
        out["numpy_eval"], run = _timed(lambda: numpy_eval.compile_program(vg))
        out["numpy_call"], _ = _timed(lambda: run(*ins))
    if want & {"first_vg", "first_hvp", "second_vg", "second_vg_same"}:
        _first_calls(kind, steps, out)
    if want & {"plan", "regions", "codegen"}:
        from newtonad.ad.engine.numba_codegen import generate
        from newtonad.ad.engine.numba_plan import make_plan
        from newtonad.ad.engine.options import LoweringOptions
        from newtonad.ad.engine.row_blocks import form_regions

        options = LoweringOptions.current()
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20000))
        try:
            out["plan"], plan = _timed(lambda: make_plan(vg))
            out["regions"], plan = _timed(lambda: form_regions(plan, options))
            out["codegen"], kernel = _timed(lambda: generate(plan, options))
        finally:
            sys.setrecursionlimit(limit)
        out["source_lines"] = kernel.source.count("\n")
    return out


def _first_calls(kind: str, steps: int, out: dict[str, Any]) -> None:
    """The public API's first value-and-gradient, then first HVP, on the NumPy engine of a
    new function object with every program cache empty (trace, re-roll attempt,
    derivation, evaluator set-up and the call); then the same function in a new
    ``Objective`` (what a second ``minimize`` of it pays before its first iteration:
    ``second_vg_same``), and another function object of the same code and values in a
    new ``Objective`` (``second_vg``: traced again, since values it reads from outside
    its arguments could differ; nothing derived again)."""
    import newtonad as nad
    from newtonad.ad.engine import numpy_eval

    fun, x = problem(kind, steps)
    _clear_caches()
    numpy_eval.compile_program.cache_clear()
    out["first_vg"], _ = _timed(lambda: nad.value_and_grad(fun, engine="numpy")(x))
    v = np.cos(np.arange(x.size))
    out["first_hvp"], _ = _timed(lambda: nad.hvp(fun, x, v, engine="numpy"))
    before = _derivations()
    out["second_vg_same"], _ = _timed(
        lambda: nad.Objective(fun, engine="numpy").value_and_grad(x))
    fresh, _ = problem(kind, steps)  # the same code and values, another function object
    def second():
        return nad.Objective(fresh, engine="numpy").value_and_grad(x)
    out["second_vg"], _ = _timed(second)
    out["second_derivations"] = _derivations() - before if before >= 0 else -1


#: Stages timed per step; the per-step denominator is the step count of the program
#: the stage reads (the traced program for trace/jvp/grad, the gradient program for
#: the engine stages).
STAGES = ["trace", "reroll", "validate", "jvp", "fold_scalings", "partial_eval", "transpose",
          "simplify", "value_and_grad", "remat", "hvp", "hvp_frame", "hvp_new_width",
          "linearized_hvp", "numpy_eval", "numpy_call", "first_vg", "first_hvp",
          "second_vg_same", "second_vg", "plan", "regions", "codegen"]
ON_GRAD = {"numpy_eval", "numpy_call", "plan", "regions", "codegen"}
#: The stages of the non-loop table (no numba planning: see ``--compile``).
NONLOOP_STAGES = [s for s in STAGES if s not in ("validate", "remat", "plan", "regions",
                                                 "codegen")]


def per_step(result: dict[str, Any], stage: str) -> float:
    """Seconds per step of ``stage`` in ``result`` (see ``STAGES``)."""
    denominator = result["grad_steps"] if stage in ON_GRAD else result["steps"]
    return result[stage] / max(1, denominator)


def table(kind: str, sizes: list[int], stages: list[str]) -> str:
    rows = {}
    for n in sizes:
        rows[n] = stage_times(kind, n, stages)
    head = f"{'stage':16s}" + "".join(f"{rows[n]['steps']:>12d}" for n in sizes)
    lines = [f"CPU microseconds per step ({kind} loop); columns: traced program steps",
             head, "-" * len(head)]
    for stage in stages:
        if not all(stage in rows[n] for n in sizes):
            continue
        lines.append(f"{stage:16s}" + "".join(f"{1e6 * per_step(rows[n], stage):12.1f}"
                                               for n in sizes))
    lines.append(f"{'grad steps':16s}" + "".join(f"{rows[n]['grad_steps']:>12d}" for n in sizes))
    return "\n".join(lines)


def seconds_table(kind: str, sizes: list[int], stages: list[str]) -> str:
    """CPU seconds of each stage of ``kind`` (a :data:`NONLOOP` program) at ``sizes``
    steps, and microseconds per traced step beside them (a rising figure is a stage
    growing faster than the program)."""
    rows = [stage_times(kind, n, stages) for n in sizes]
    head = f"{'stage':16s}" + "".join(f"{r['steps']:>10d} {'us/st':>6s}" for r in rows)
    lines = [f"CPU seconds (and us per traced step) of {kind}; columns: traced program steps",
             head, "-" * len(head)]
    for stage in stages:
        if all(stage in r for r in rows):
            lines.append(f"{stage:16s}" + "".join(
                f"{r[stage]:10.3f} {1e6 * r[stage] / r['steps']:6.1f}" for r in rows))
    for what, num, den in (("new_width_%", "hvp_new_width", "hvp_frame"),
                           ("second_same_%", "second_vg_same", "first_vg"),
                           ("second_vg_%", "second_vg", "first_vg")):
        if all(num in r and den in r for r in rows):  # the targets are ratios: print them
            lines.append(f"{what:16s}" + "".join(
                f"{100 * r[num] / max(r[den], 1e-9):10.1f} {'':6s}" for r in rows))
    for what in ("rerolled_steps", "grad_steps", "hvp_steps", "second_derivations"):
        if all(what in r for r in rows):
            lines.append(f"{what:16s}" + "".join(f"{r[what]:>10d} {'':6s}" for r in rows))
    return "\n".join(lines)


# ---- numba compile in a fresh process --------------------------------------------------------

_COMPILE = r"""
import json, resource, sys, time
sys.path.insert(0, {here!r})
import numpy as np
from pipeline_report import rosen_loop, x0_for
t0 = time.perf_counter()
import newtonad as nad
from newtonad.ad import transforms as tf
from newtonad.ad.engine import numba_engine
from newtonad.ad.program import Slot
from newtonad.ad.trace import trace_function
x = x0_for("scalar", {steps})
program = trace_function(rosen_loop, [Slot(x.shape)]).program  # not re-rolled: the long form
vg = tf.value_and_grad_program(program)
t1 = time.perf_counter()
kernel = numba_engine.lower(vg)
def children_cpu():  # long kernels compile in child processes (numba_engine.CHUNKS_PER_PROCESS)
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
t2, c2 = time.perf_counter(), time.process_time() + children_cpu()
fn, dispatcher, path = numba_engine.load(kernel)
t3, c3 = time.perf_counter(), time.process_time() + children_cpu()
run = numba_engine.make_runner(fn, kernel, dispatcher, path)
f, g = run(x)
ref_f, ref_g = nad.value_and_grad(rosen_loop, engine="numpy")(x)
print(json.dumps(dict(steps=len(vg.steps), derive=t1 - t0, lower=t2 - t1, compile=t3 - t2,
                      compile_cpu=c3 - c2,
                      maxrss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      children_maxrss_mb=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
                      / 1024,
                      functions=kernel.source.count("@njit"),
                      error=float(np.max(np.abs(g - ref_g)) / max(1.0, np.max(np.abs(ref_g)))))))
"""


def compile_report(steps: int) -> dict[str, Any]:
    """Lower and numba-compile the gradient of a ``steps``-step loop in a fresh process
    with empty caches; seconds of each phase (``compile_cpu`` includes child processes
    that compile chunks), the process's peak resident MB and its largest child's."""
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NEWTONAD_CACHE_DIR=d, NUMBA_CACHE_DIR=d)
        code = _COMPILE.format(here=here, steps=steps)
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, cwd=d)  # not the checkout's newtonad
    return json.loads(res.stdout.strip().splitlines()[-1])


_FIRST = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import newtonad as nad
sys.path.insert(0, {here!r})
from pipeline_report import rosen, rosen_loop
try:
    from newtonad.ad import reroll
    reroll.REROLL = {reroll}
except ImportError:
    pass
from newtonad.ad import transforms as tf
from newtonad.ad.engine import numpy_eval
x = np.linspace(-1.2, 1.1, {terms} + 1)
v = np.cos(np.arange(x.size))
t1, c1 = time.perf_counter(), time.process_time()
if {what!r} == "grad":
    out = nad.grad(rosen_loop, engine="numpy")(x)
    ref = nad.grad(rosen, engine="numpy")(x)
else:
    out = nad.hvp(rosen_loop, x, v, engine="numpy")
    ref = nad.hvp(rosen, x, v, engine="numpy")
t2, c2 = time.perf_counter(), time.process_time()
# the pipeline's share: the same derivation again without evaluating (caches cleared)
tf.grad_program.cache_clear()
numpy_eval.compile_program.cache_clear()
from newtonad.ad.program import Slot
from newtonad.ad.trace import trace_function
t3, c3 = time.perf_counter(), time.process_time()
p = nad.trace(rosen_loop, x) if {reroll} else trace_function(rosen_loop, [Slot(x.shape)]).program
d = tf.value_and_grad_program(p) if {what!r} == "grad" else tf.hvp_program(p, None)
t4, c4 = time.perf_counter(), time.process_time()
err = float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))
print(json.dumps(dict(what={what!r}, terms={terms}, reroll={reroll}, import_s=t1 - t0,
                      first_s=t2 - t1, first_cpu=c2 - c1, pipeline_s=t4 - t3,
                      pipeline_cpu=c4 - c3, steps=len(p.steps),
                      derived_steps=len(d.steps), rel_error=err)))
"""


def first_report(what: str, terms: int, reroll: bool) -> dict[str, Any]:
    """Seconds to the first ``grad`` or ``hvp`` (NumPy engine) of the ``terms``-term loop
    in a fresh process with an empty kernel cache, after ``import newtonad``; the
    derivation's share (trace and transforms, timed again); the error against the
    vectorised Rosenbrock. ``reroll``: with loop re-rolling (if this newtonad has it)."""
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NEWTONAD_CACHE_DIR=d, NUMBA_CACHE_DIR=d)
        code = _FIRST.format(here=here, terms=terms, what=what, reroll=reroll)
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, cwd=d)  # not the checkout's newtonad
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kind", choices=list(KINDS) + list(NONLOOP) + ["nonloop"],
                    default="scalar", help="a loop, a non-loop program, or all non-loop ones")
    ap.add_argument("--sizes", default="10000,30000,100000",
                    help="steps of the non-loop programs")
    ap.add_argument("--max", type=int, default=10**4, help="largest program (steps)")
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--compile", type=int, nargs="*", metavar="STEPS",
                    help="instead: numba compile of these program sizes, fresh processes")
    ap.add_argument("--targets", action="store_true",
                    help="instead: the first-grad (500 terms) and first-hvp (2000 terms) "
                         "targets on the NumPy engine, with and without loop re-rolling")
    a = ap.parse_args(argv)
    if a.targets:
        for reroll in (False, True):
            print(json.dumps(first_report("grad", 500, reroll)), flush=True)
            print(json.dumps(first_report("hvp", 2000, reroll)), flush=True)
        return
    if a.compile is not None:
        for steps in a.compile or [2000, 20000]:
            print(json.dumps(compile_report(steps)), flush=True)
        return
    if a.kind in NONLOOP or a.kind == "nonloop":
        stages = NONLOOP_STAGES if a.stages == ",".join(STAGES) else a.stages.split(",")
        for kind in NONLOOP if a.kind == "nonloop" else [a.kind]:
            print(seconds_table(kind, [int(n) for n in a.sizes.split(",")], stages), flush=True)
        return
    sizes = [n for n in (100, 1000, 10**4, 10**5) if n <= a.max]
    print(table(a.kind, sizes, a.stages.split(",")))


if __name__ == "__main__":
    main()
