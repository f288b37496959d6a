"""Bounded kernels: long programs become chunk functions of bounded size.

Kernels longer than ``kernel_split.MAX_CHUNK_LINES`` lines of code are split into chunk
functions called by a small driver; loop nests are bounded by the planner
(``numba_plan.MAX_NEST_SINKS``). The split kernels must compute exactly what the
NumPy evaluator computes, and kernels under the bound must be generated as one
function, as before. The bounds are lowered here so that small programs (quick to
compile) exercise the split.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest
from numba.core.dispatcher import Dispatcher

from newtonad.ad import transforms as tf
from newtonad.ad.engine import (
    kernel_split,
    liveness,
    numba_cache,
    numba_engine,
    numba_plan,
    numpy_eval,
)
from newtonad.ad.engine.loop_ir import (
    Assign,
    For,
    Lit,
    Load,
    LoopVar,
    Mul,
    Scalar,
    Sum,
)
from newtonad.ad.engine.numba_plan import Nest, make_plan
from newtonad.ad.program import Slot
from newtonad.ad.trace import trace_function

from .helpers import assert_close, central_jvp


def rosen_loop(x):
    s = 0.0
    for i in range(len(x) - 1):
        s = s + 100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return s


def rosen_blocks(x):
    s = 0.0
    for a in range(0, x.shape[0] - 4, 4):
        lo, hi = x[a:a + 4], x[a + 1:a + 5]
        s = s + np.sum(100 * (hi - lo ** 2) ** 2 + (1 - lo) ** 2)
    return s


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def traced(f, x):
    """The long form of ``f``'s program (tracing only: no loop re-rolling)."""
    return trace_function(f, [Slot(x.shape)]).program


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A fresh kernel cache: the kernel modules imported here are written into it."""
    monkeypatch.setenv("NEWTONAD_CACHE_DIR", str(tmp_path))


def kernel_module(kernel) -> types.ModuleType:
    """The kernel's generated module, imported (numba compiles nothing until a call)."""
    return numba_cache.import_module(*numba_cache.ensure_source(kernel.source))


def jitted(module: types.ModuleType) -> set[str]:
    """Names of the module's functions that numba compiles (``@njit``)."""
    return {name for name, f in vars(module).items() if isinstance(f, Dispatcher)}


def driver_calls(module: types.ModuleType, kernel) -> list[tuple[str, tuple]]:
    """Run the module's driver ``kernel(...)`` in Python on stand-in chunks: each records
    its name and arguments and returns its declared returns. Each argument of the
    driver is given its own name as value, so a chunk's recorded arguments are the
    names the driver passed to it."""
    driver = getattr(module.kernel, "py_func", module.kernel)
    code = driver.__code__
    calls: list[tuple[str, tuple]] = []

    def stand_in(chunk) -> Any:
        def call(*args):
            calls.append((chunk.name, args))
            return chunk.returns or None
        return call

    names = {c.name: stand_in(c) for c in kernel.chunks}
    run = types.FunctionType(code, {"__builtins__": __builtins__, **names}, "kernel")
    run(*code.co_varnames[:code.co_argcount])
    return calls


# ---- liveness on the generated statements ---------------------------------------------------

def test_flow_finds_names_read_before_written_and_written():
    """t1 = a + b; t2 = t1 * c; for i0 in range(n): o[i0] += t2 * i0; u = i0; r = r + 1"""
    one = Lit("1.0", True)
    exposed, written, definite = liveness.block_flow([
        Assign(Scalar("t1"), Sum((Scalar("a"), Scalar("b")), one)),
        Assign(Scalar("t2"), Mul(Scalar("t1"), Scalar("c"))),
        For(LoopVar(0), 0, Scalar("n"), (
            Assign(Load("o", ((0, 1, 0),)), Mul(Scalar("t2"), LoopVar(0)), "+="),
            Assign(Scalar("u"), LoopVar(0)))),
        Assign(Scalar("r"), Sum((Scalar("r"), one), one))])
    assert exposed == {"a", "b", "c", "n", "o", "r"}
    assert written == {"t1", "t2", "i0", "u", "r"}
    assert definite == {"t1", "t2", "r"}  # i0 and u only if the loop runs


def test_flow_augmented_assignment_reads_its_target():
    exposed, _, _ = liveness.flow(Assign(Scalar("acc"), Load("x", ((None, 0, 0),)), "+="))
    assert exposed == {"acc", "x"}


# ---- split kernels compute what the NumPy evaluator computes ---------------------------------

@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(kernel_split, "MAX_CHUNK_LINES", 60)
    monkeypatch.setattr(kernel_split, "SPLIT_FROM_LINES", 60)
    return 60


def test_long_gradient_is_split_into_bounded_chunks_and_matches_numpy(small_chunks, own_cache):
    x = np.linspace(-1.2, 1.1, 13)
    vg = tf.value_and_grad_program(traced(rosen_loop, x))
    kernel = numba_engine.lower(vg)
    assert len(kernel.chunks) >= 3
    assert all(c.lines <= small_chunks for c in kernel.chunks)
    # the chunks and the driver are jitted
    assert jitted(kernel_module(kernel)) == {c.name for c in kernel.chunks} | {"kernel"}
    fn, dispatcher, path = numba_engine.load(kernel)
    run = numba_engine.make_runner(fn, kernel, dispatcher, path)
    f, g = run(x)
    f_ref, g_ref = numpy_eval.evaluate(vg, x)
    assert_close(f, f_ref, rtol=1e-13)
    assert_close(g, g_ref, rtol=1e-12)
    # and against the vectorised form and finite differences
    assert_close(g, numpy_eval.evaluate(tf.value_and_grad_program(traced(rosen, x)), x)[1],
                 rtol=1e-12)
    v = np.random.default_rng(0).normal(size=x.shape)
    assert_close(g @ v, central_jvp(rosen, x, v), rtol=1e-6)
    # out= writes the split kernel's outputs into given arrays
    out = (np.empty(()), np.empty_like(x))
    run(x, out=out)
    assert_close(out[1], g_ref, rtol=1e-12)


def test_long_hvp_with_vector_blocks_is_split_and_matches_numpy(small_chunks, tmp_path,
                                                              monkeypatch):
    monkeypatch.setenv("NEWTONAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(numba_plan, "MAX_NEST_SINKS", 3)
    x = np.linspace(-1.2, 1.1, 29)
    hvp = tf.hvp_program(traced(rosen_blocks, x), 2)
    plan = make_plan(hvp)
    nests = [item for item in plan.items if isinstance(item, Nest)]
    assert nests and all(len(n.sinks) <= 3 for n in nests)
    kernel = numba_engine.lower(hvp)
    assert kernel.chunks
    fn, dispatcher, path = numba_engine.load(kernel)
    run = numba_engine.make_runner(fn, kernel, dispatcher, path)
    V = np.random.default_rng(1).normal(size=x.shape + (2,))
    (hv,) = run(x, V)
    (ref,) = numpy_eval.evaluate(hvp, x, V)
    assert_close(hv, ref, rtol=1e-12)
    gp = tf.grad_program(traced(rosen, x))
    for c in range(2):  # H v against central differences of the vectorised gradient
        fd = central_jvp(lambda y: numpy_eval.evaluate(gp, y)[0], x, V[:, c])
        assert_close(hv[:, c], fd, rtol=1e-6, atol=1e-6)


def test_kernels_under_the_bound_are_one_function(own_cache):
    x = np.linspace(-1.2, 1.1, 6)
    kernel = numba_engine.lower(tf.value_and_grad_program(traced(rosen_loop, x)))
    assert kernel.chunks == ()
    module = kernel_module(kernel)
    functions = {name for name, f in vars(module).items()
                 if isinstance(f, (Dispatcher, types.FunctionType))}
    assert jitted(module) == {"kernel"} and functions == {"kernel", "njit"}
    assert not hasattr(module, "CHUNKS")


def test_the_largest_built_in_kernel_stays_one_function(own_cache):
    """The linearised HVP of the minimal surface: the longest kernel of the built-in
    problems and the engine benchmarks, generated as before (one function)."""
    from newtonad import problems

    p = problems.get("minimal-surface", n=16)
    program = trace_function(p.fun, [Slot(np.asarray(p.x0).shape)]).program
    for derived in tf.linearized_hvp(program, 4):
        kernel = numba_engine.lower(derived)
        assert kernel.chunks == () and jitted(kernel_module(kernel)) == {"kernel"}


def test_default_bound_splits_a_long_program_into_chunks_within_it(own_cache):
    x = np.linspace(-1.2, 1.1, 301)  # ~3 000 steps, ~6 600 in the gradient
    kernel = numba_engine.lower(tf.value_and_grad_program(traced(rosen_loop, x)))
    bound = kernel_split.MAX_CHUNK_LINES
    assert len(kernel.chunks) > 1
    assert all(c.lines <= bound for c in kernel.chunks)
    # the driver is one call per chunk, in order, passing each chunk its parameters
    calls = driver_calls(kernel_module(kernel), kernel)
    assert calls == [(c.name, c.params) for c in kernel.chunks]


def test_a_very_long_fused_chain_lowers_without_recursion(monkeypatch):
    """A running sum over 20 000 scalar terms is one fused chain: lowering it must not
    recurse once per step (it used to fall back to NumPy with a RecursionError)."""
    x = np.linspace(-1.2, 1.1, 2001)
    program = traced(rosen_loop, x)
    assert len(program.steps) > 20000
    kernel = numba_engine.lower(program)
    assert kernel.chunks


def test_many_chunks_compile_in_child_processes_and_load_from_the_cache(small_chunks, own_cache,
                                                                       monkeypatch):
    """A kernel of more chunks than CHUNKS_PER_PROCESS is compiled by child processes
    (bounding any one process's memory): this process only loads the chunks from the
    disk cache (every chunk a cache hit, no miss), and the result is the NumPy
    evaluator's."""
    import resource

    monkeypatch.setattr(kernel_split, "PYTHON_DRIVER_FROM_CHUNKS", 3)
    monkeypatch.setattr(numba_engine, "CHUNKS_PER_PROCESS", 2)
    x = np.linspace(-1.2, 1.1, 13)
    vg = tf.value_and_grad_program(traced(rosen_loop, x))
    kernel = numba_engine.lower(vg)
    assert len(kernel.chunks) > 2
    # each chunk is jitted on its own; the driver is plain Python (a jitted driver links
    # all the chunks into one numba module)
    module = kernel_module(kernel)
    assert jitted(module) == {c.name for c in kernel.chunks}
    assert isinstance(module.kernel, types.FunctionType)
    assert driver_calls(module, kernel) == [(c.name, c.params) for c in kernel.chunks]
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    fn, dispatcher, path = numba_engine.load(kernel)
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime > children_before
    stats = dispatcher.stats
    assert sum(stats.cache_hits.values()) == len(kernel.chunks)
    assert sum(stats.cache_misses.values()) == 0
    f, g = numba_engine.make_runner(fn, kernel, dispatcher, path)(x)
    f_ref, g_ref = numpy_eval.evaluate(vg, x)
    assert_close(f, f_ref, rtol=1e-13)
    assert_close(g, g_ref, rtol=1e-12)


def test_chunk_table_lists_each_chunk_with_its_params_and_returns(small_chunks, own_cache,
                                                                  monkeypatch):
    monkeypatch.setattr(kernel_split, "PYTHON_DRIVER_FROM_CHUNKS", 3)
    x = np.linspace(-1.2, 1.1, 13)
    kernel = numba_engine.lower(tf.value_and_grad_program(traced(rosen_loop, x)))
    module = kernel_module(kernel)
    assert module.CHUNKS == tuple((c.name, c.params, c.returns) for c in kernel.chunks)
