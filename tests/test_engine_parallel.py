"""Parallel loops of the numba engine agree with the NumPy reference engine.

A loop nest with enough iterations runs its outermost loop in chunks on all of numba's
threads (``prange``; :func:`newtonad.ad.engine.nest_lowering.independent_rows`,
:func:`newtonad.ad.engine.passes.worth_threads`). Here the
lowering options lower the size gate so that parallel loops form at test sizes, and
set the thread count the code generator sees to two whatever the machine. Every case
compares all outputs with the reference evaluator to 1e-12, run on two threads and on
one, and checks from the kernel's loop IR which steps run in parallel loops and which
must not (scattered sums, reductions into a non-scalar target across the rows, max
and min into scalars).
"""

from __future__ import annotations

import os
import re

import numba
import numpy as np
import pytest

import newtonad as nad
from newtonad.ad import transforms as tf
from newtonad.ad.engine import loop_ir as ir
from newtonad.ad.engine import numba_cache, numba_engine, numpy_eval
from newtonad.ad.engine.options import LoweringOptions
from newtonad.ad.program import Program

RTOL = 1e-12
THREADS = min(2, numba.config.NUMBA_NUM_THREADS)


pytestmark = pytest.mark.usefixtures("module_kernel_cache")


#: Parallel loops from 256 iterations (and 128 rows), as on a machine of two threads.
SMALL_GATE = LoweringOptions(parallel_min_iterations=256, parallel_threads=2, cheap_launch=True)


@pytest.fixture
def small_gate():
    return SMALL_GATE


def parallel_steps(kernel) -> list[str]:
    """The step comments (``s<i>:... = primitive(...)``) inside ``prange`` loops."""
    return [s.text for s, parallel in ir.walk(kernel.body)
            if parallel and isinstance(s, ir.Comment) and re.match(r"s\d+:", s.text)]


def step_comments(kernel) -> list[str]:
    return [s.text for s, _ in ir.walk(kernel.body) if isinstance(s, ir.Comment)]


def compiled_parallel(dispatcher) -> bool:
    """Whether numba compiles the kernel function of ``dispatcher`` with ``parallel=True``."""
    return bool(dispatcher.targetoptions.get("parallel"))


def given_to_numba(kernel) -> tuple[bool, bool]:
    """The kernel function numba is given, from its module imported (nothing compiled):
    whether it is compiled with ``parallel=True``, and whether it loops with ``prange``."""
    module = numba_cache.import_module(*numba_cache.ensure_source(kernel.source))
    return (compiled_parallel(module.kernel),
            "prange" in module.kernel.py_func.__code__.co_names)


def check(program: Program, inputs: tuple, options: LoweringOptions = SMALL_GATE):
    """Run ``program`` on both engines (two threads and one), compare; return the kernel."""
    kernel = numba_engine.lower(program, options)
    run = numba_engine.compile_program(program, options)
    assert run.source == kernel.source
    ref = numpy_eval.compile_program(program)(*inputs)
    for threads in sorted({THREADS, 1}):
        numba.set_num_threads(threads)
        try:
            got = run(*inputs)
        finally:
            numba.set_num_threads(THREADS)
        assert len(got) == len(ref) == len(program.outputs)
        for n, (a, b) in enumerate(zip(got, ref)):
            a, b = np.asarray(a), np.asarray(b)
            assert a.shape == b.shape, (n, a.shape, b.shape)
            scale = np.max(np.abs(b), initial=1.0)
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * scale,
                                       err_msg=f"output {n}, {threads} threads")
    return kernel


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def surface(u, h):
    return np.sum(np.sqrt(1 + ((u[1:, :-1] - u[:-1, :-1]) * h) ** 2
                          + ((u[:-1, 1:] - u[:-1, :-1]) * h) ** 2))


def frame(shape: tuple[int, ...], k: int | None, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape if k is None else (*shape, k))


# ---- stencils: shifted reads, gathered sums, scalar sums, edges -----------------------------

# n = 301: chunks of 5 rows, the last one short; n = 700: chunks of 11
@pytest.mark.parametrize("n", [301, 700])
def test_rosenbrock_value_and_grad(small_gate, n):
    x = np.random.default_rng(0).uniform(-1, 1, n)
    kernel = check(tf.value_and_grad_program(nad.trace(rosen, x)), (x,))
    inside = parallel_steps(kernel)
    assert any("reduce_sum" in s for s in inside), kernel.source  # f, summed over the threads
    assert any("(gathered)" in s for s in inside), kernel.source  # the gradient, row by row


@pytest.mark.parametrize("k", [None, 1, 3, 16])
def test_rosenbrock_hvp(small_gate, k):
    n = 301
    x = np.random.default_rng(0).uniform(-1, 1, n)
    kernel = check(tf.hvp_program(nad.trace(rosen, x), k), (x, frame((n,), k)))
    assert parallel_steps(kernel), kernel.source


def test_rosenbrock_linearized_hvp(small_gate):
    n, k = 301, 4
    x = np.random.default_rng(0).uniform(-1, 1, n)
    residual, linear = tf.linearized_hvp(nad.trace(rosen, x), k)
    assert parallel_steps(check(residual, (x,)))
    res = numpy_eval.compile_program(residual)(x)
    assert parallel_steps(check(linear, (x, *res[2:], frame((n,), k))))


@pytest.mark.parametrize("k", [None, 2])
def test_minimal_surface(small_gate, k):
    """Two-dimensional stencil: the interior piece runs in parallel, the edges serially."""
    m = 140
    u = np.random.default_rng(0).normal(size=(m, m)) * 0.1
    h = np.array(1.0 / (m - 1))
    trace = nad.trace(surface, u, h)
    kernel = check(tf.value_and_grad_program(trace), (u, h))
    assert parallel_steps(kernel), kernel.source
    kernel = check(tf.hvp_program(trace, k), (u, h, frame((m, m), k)))
    assert parallel_steps(kernel), kernel.source


# ---- reductions ---------------------------------------------------------------------------

def test_row_reductions_run_in_parallel(small_gate):
    """A reduction along a row (``axis=1``) writes the row's own element."""
    def f(X):
        return np.sum(np.log(np.sum(np.exp(X), axis=1)))

    X = np.random.default_rng(0).normal(size=(200, 7))
    kernel = check(tf.value_and_grad_program(nad.trace(f, X)), (X,))
    steps = parallel_steps(kernel)
    assert any("reduce_sum" in s and "axes=(1,)" in s for s in steps), kernel.source


def test_column_reductions_stay_serial(small_gate):
    """A sum over the rows into a vector would have every thread add to every element."""
    def f(X):
        return np.sum(np.sum(X ** 2, axis=0) ** 2)

    X = np.random.default_rng(0).normal(size=(200, 7))
    for program in (tf.value_and_grad_program(nad.trace(f, X)), tf.hvp_program(nad.trace(f, X), 2)):
        inputs = (X,) if len(program.inputs) == 1 else (X, frame(X.shape, 2))
        kernel = check(program, inputs)
        assert any("axes=(0,)" in c for c in step_comments(kernel))
        assert not any("axes=(0,)" in s for s in parallel_steps(kernel)), kernel.source


def test_scalar_product_runs_in_parallel(small_gate):
    def f(x):
        return np.prod(1 + 1e-3 * x)

    x = np.random.default_rng(0).normal(size=400)
    kernel = check(tf.value_and_grad_program(nad.trace(f, x)), (x,))
    assert any("reduce_prod" in s for s in parallel_steps(kernel)), kernel.source


def test_scalar_sums_on_threads_are_the_same_bits_on_any_threads(small_gate):
    """Sums into scalars are added per chunk and the chunks in order, so the bits depend
    neither on how many threads run the chunks nor on which thread runs which (numba's own
    prange reduction folds per thread: under TBB its sums changed from call to call)."""
    def f(x):
        return np.sum(np.cos(x)) ** 2 + np.sum(x * np.sin(x)) + np.prod(1 + 1e-4 * x)

    x = np.random.default_rng(3).normal(size=4099) * 3  # chunks of 65 rows, the last short
    program = tf.value_and_grad_program(nad.trace(f, x))
    kernel = check(program, (x,))
    assert any("reduce_sum" in s for s in parallel_steps(kernel)), kernel.source
    run = numba_engine.compile_program(program, SMALL_GATE)
    other = numba_engine.compile_program(tf.value_and_grad_program(nad.trace(rosen, x)),
                                         SMALL_GATE)
    first = run(x)
    for threads in [1, THREADS] * 10:
        numba.set_num_threads(threads)
        try:
            other(x)  # another parallel kernel between calls
            again = run(x)
        finally:
            numba.set_num_threads(THREADS)
        assert all(np.array_equal(a, b) for a, b in zip(first, again)), threads


def test_a_linearisation_on_threads_gives_the_same_bits_every_time():
    """The residual pass of trigonometric (n = 65536: its sums run on threads under the
    default options) gives the same residuals before and after the linear kernel runs.
    Under TBB, numba's own prange reductions gave sums one bit apart after the first
    linear product, and trust-krylov's iterates then differed from run to run."""
    from newtonad import problems

    p = problems.get("trigonometric", 65536)
    obj = nad.Objective(p.fun, engine="numba")
    x = p.x0.copy()
    obj.linearize_hessp(x)
    g = obj.value_and_grad(x)[1]
    (residual_run, _), data = obj._runners[(x.shape, "linearized_hvp", None)]
    first = residual_run(x, *data)
    op = obj.linearize_hessp(x, reuse_output=True)
    v = g / np.linalg.norm(g)
    hv = op(v).copy()
    for _ in range(3):
        again = residual_run(x, *data)
        assert all(np.array_equal(a, b) for a, b in zip(first, again))
        assert np.array_equal(op(v), hv)


def test_max_and_min_stay_serial(small_gate):
    """numba combines threads' partial sums and products only; the gradient's masks
    (``x == max``) run in parallel after the serial loop that finds the extremes."""
    def f(x):
        return np.max(x ** 2) + np.min(x)

    x = np.random.default_rng(0).normal(size=400)
    kernel = check(tf.value_and_grad_program(nad.trace(f, x)), (x,))
    inside = parallel_steps(kernel)
    assert inside and not any("reduce_max" in s or "reduce_min" in s for s in inside), kernel.source


def test_scattered_sums_stay_serial(small_gate):
    """Strided slices accumulate into the gradient (``+=`` at two rows per iteration)."""
    def f(x):
        return np.sum(x[::2] * x[1::2]) + np.sum(x[:-2] * x[2:])

    x = np.random.default_rng(0).normal(size=300)
    kernel = check(tf.value_and_grad_program(nad.trace(f, x)), (x,))
    assert any("(scattered)" in c for c in step_comments(kernel))
    inside = parallel_steps(kernel)
    assert inside and not any("(scattered)" in s for s in inside), kernel.source


# ---- the gate -----------------------------------------------------------------------------

def test_default_gate_parallelises_large_loops_only():
    """Shipped settings: Rosenbrock's HVP is parallel at n = 1e5, serial at n = 1000, and
    serial everywhere when numba has one thread; where parallel loops are slow to start
    (numba's workqueue layer) from n = 1e6 only (lowered only: nothing is compiled)."""
    def parallel(n: int, **options) -> bool:
        kernel = numba_engine.lower(tf.hvp_program(nad.trace(rosen, np.zeros(n)), 1),
                                    LoweringOptions(**options))
        assert kernel.parallel == bool(parallel_steps(kernel))
        assert given_to_numba(kernel) == (kernel.parallel, kernel.parallel)
        return kernel.parallel

    assert parallel(10**5, parallel_threads=2) and not parallel(1000, parallel_threads=2)
    assert parallel(10**6, parallel_threads=2, cheap_launch=False)
    assert not parallel(10**5, parallel_threads=2, cheap_launch=False)
    assert not parallel(10**6, parallel_threads=1)


def test_options_are_part_of_the_cache_key(small_gate):
    """One program under two lowering options: two kernels, both current (no stale runner)."""
    n = 301
    x = np.random.default_rng(0).uniform(-1, 1, n)
    program = tf.value_and_grad_program(nad.trace(rosen, x))
    serial_options = small_gate.replace(parallel_threads=1)
    serial = numba_engine.compile_program(program, serial_options)
    parallel = numba_engine.compile_program(program, small_gate)
    # each runner runs the kernel lowered under its own options
    assert serial.source == numba_engine.lower(program, serial_options).source
    assert parallel.source == numba_engine.lower(program, small_gate).source
    assert parallel_steps(numba_engine.lower(program, small_gate))
    assert not parallel_steps(numba_engine.lower(program, serial_options))
    assert compiled_parallel(parallel.dispatcher) and not compiled_parallel(serial.dispatcher)
    for a, b in zip(serial(x), parallel(x)):
        np.testing.assert_allclose(a, b, rtol=RTOL)


def test_threading_tag(monkeypatch):
    """The cache key tells serial kernels from parallel ones, and the workqueue gate."""
    from numba import config

    from newtonad.ad.engine import numba_threads

    monkeypatch.setattr(config, "NUMBA_NUM_THREADS", 1)
    assert numba_threads.tag() == "serial"
    monkeypatch.setattr(config, "NUMBA_NUM_THREADS", 2)
    monkeypatch.setattr(config, "THREADING_LAYER", "workqueue")
    assert not numba_threads.cheap_launch() and numba_threads.tag() == "parallel-workqueue"
    monkeypatch.setattr(config, "THREADING_LAYER", "omp")
    assert numba_threads.cheap_launch() and numba_threads.tag() == "parallel"
    monkeypatch.setattr(config, "THREADING_LAYER", "default")  # not chosen: a fork-safe one
    monkeypatch.delenv("NUMBA_THREADING_LAYER", raising=False)
    assert numba_threads.layer() == "forksafe"


def _child_gradient(n: int) -> float:
    x = np.linspace(-1, 1, n)
    return float(np.sum(nad.grad(rosen, engine="numba")(x)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_process_runs_parallel_kernels():
    """After parallel kernels ran, a forked child runs them too (numba's default layer on
    Linux, GNU OpenMP, would terminate it and leave a multiprocessing pool hanging)."""
    import multiprocessing

    n = 600_000  # parallel under the shipped gate, on any layer
    x = np.linspace(-1, 1, n)
    program = tf.value_and_grad_program(nad.trace(rosen, x))
    options = LoweringOptions.current().replace(parallel_threads=2)
    run = numba_engine.compile_program(program, options)
    assert compiled_parallel(run.dispatcher)
    expected = float(np.sum(run(x)[1]))
    pool = multiprocessing.get_context("fork").Pool(1)
    try:
        got = pool.apply_async(_child_gradient, (n,)).get(timeout=120)
    finally:
        pool.terminate()
    assert got == pytest.approx(expected, rel=1e-12)


def test_parallel_kernels_called_from_several_threads(small_gate):
    """Runners of parallel kernels take a lock (numba's workqueue layer aborts on two
    launches at once); four Python threads with a runner each get the same results."""
    from concurrent.futures import ThreadPoolExecutor

    n, k = 301, 3
    x = np.random.default_rng(0).uniform(-1, 1, n)
    program = tf.hvp_program(nad.trace(rosen, x), k)
    kernel = numba_engine.lower(program, small_gate)
    assert kernel.parallel
    fn, dispatcher, path = numba_engine.load(kernel)
    V = frame((n,), k)
    expected = numpy_eval.compile_program(program)(x, V)[0]

    def work(seed: int) -> float:
        run = numba_engine.make_runner(fn, kernel, dispatcher, path)  # arenas of its own
        return max(float(np.max(np.abs(run(x, V)[0] - expected))) for _ in range(50))

    with ThreadPoolExecutor(4) as pool:
        errors = list(pool.map(work, range(4)))
    assert max(errors) <= RTOL * np.max(np.abs(expected))
