"""Seconds per program step of every pipeline stage, against program size.

Each stage of newtonad's pipeline – tracing, the derivative transforms, planning and
code generation for numba, the NumPy evaluator – should cost the same per step
whatever the program's length (issue 13: "linear-time pipeline"). This script builds
long programs (Rosenbrock written as a Python loop over scalar terms, and a variant
over short vectors), times each stage once per size, and prints one table of
microseconds per step, so a stage whose cost grows faster than the program shows as
a rising row::

    python benchmarks/pipeline_report.py                 # sizes 1e2 .. 1e4 steps
    python benchmarks/pipeline_report.py --max 100000    # up to 1e5 steps
    python benchmarks/pipeline_report.py --kind vector --stages trace,grad

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
    """Rosenbrock as a Python loop over scalar terms (what issue 13 measures)."""
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


def x0_for(kind: str, steps: int) -> np.ndarray:
    """A start point whose traced program has about ``steps`` steps."""
    per = KINDS[kind][1]
    terms = max(2, steps // STEPS_PER_TERM)
    return np.linspace(-1.2, 1.1, terms * per + (1 if per == 1 else 9))


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

    from newtonad.ad import transforms as tf
    from newtonad.ad.engine import numpy_eval
    from newtonad.ad.program import Program, Slot
    from newtonad.ad.remat import choose, slot_kinds
    from newtonad.ad.trace import trace_function

    fun = KINDS[kind][0]
    x = x0_for(kind, steps)
    want = set(stages or STAGES)
    out: dict[str, Any] = {}
    t, traced = _timed(lambda: trace_function(fun, [Slot(x.shape)]))
    program = traced.program
    out["steps"] = len(program.steps)
    out["trace"] = t
    p = program
    out["validate"], _ = _timed(lambda: Program(p.slots, p.steps, p.inputs, p.outputs))
    out["jvp"], jp = _timed(lambda: tf.jvp_program(program, None))
    known = [True, False]
    out["fold_scalings"], fj = _timed(lambda: tf.fold_scalings(jp, known))
    out["partial_eval"], (primal, linear) = _timed(
        lambda: tf.partial_eval(fj, known, len(program.outputs)))
    n_fixed = len(linear.inputs) - 1
    out["transpose"], pull = _timed(
        lambda: tf.transpose_program(linear, [False] * n_fixed + [True]))
    out["simplify"], _ = _timed(lambda: tf.simplify(pull))
    out["value_and_grad"], vg = _timed(lambda: tf.value_and_grad_program(program))
    out["grad_steps"] = len(vg.steps)
    if "remat" in want or "hvp" in want:
        jvg = tf.jvp_program(vg, None)
        kinds = slot_kinds(jvg, [True, False])
        needed = list(dict.fromkeys(i for s in jvg.steps if kinds[s.output] == "unknown"
                                    for i in s.inputs if kinds[i] == "known"))
        out["remat"], _ = _timed(lambda: choose(jvg, kinds, needed))
    if "hvp" in want:
        tf.grad_program.cache_clear()
        out["hvp"], hp = _timed(lambda: tf.hvp_program(program, None))
        out["hvp_steps"] = len(hp.steps)
    if "linearized_hvp" in want:
        out["linearized_hvp"], _ = _timed(lambda: tf.linearized_hvp(program, None))
    if "numpy_eval" in want:
        numpy_eval.compile_program.cache_clear()
        def first_call():
            return numpy_eval.compile_program(vg)(x)
        out["numpy_eval"], _ = _timed(first_call)
        run = numpy_eval.compile_program(vg)
        out["numpy_call"], _ = _timed(lambda: run(x))
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


#: Stages timed per step; the per-step denominator is the step count of the program
#: the stage reads (the traced program for trace/jvp/grad, the gradient program for
#: the engine stages).
STAGES = ["trace", "validate", "jvp", "fold_scalings", "partial_eval", "transpose",
          "simplify", "value_and_grad", "remat", "hvp", "linearized_hvp", "numpy_eval",
          "numpy_call", "plan", "regions", "codegen"]
ON_GRAD = {"numpy_eval", "numpy_call", "plan", "regions", "codegen"}


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
    ap.add_argument("--kind", choices=list(KINDS), default="scalar")
    ap.add_argument("--max", type=int, default=10**4, help="largest program (steps)")
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--compile", type=int, nargs="*", metavar="STEPS",
                    help="instead: numba compile of these program sizes, fresh processes")
    ap.add_argument("--targets", action="store_true",
                    help="instead: issue 13's first-grad (500 terms) and first-hvp (2000 terms) "
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
    sizes = [n for n in (100, 1000, 10**4, 10**5) if n <= a.max]
    print(table(a.kind, sizes, a.stages.split(",")))


if __name__ == "__main__":
    main()
