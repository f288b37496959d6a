"""Linear-time pipeline: long programs trace, transform and evaluate correctly,
and the mechanisms that keep the cost per step flat hold.

Timings live in ``benchmarks/bench_pipeline.py`` and ``benchmarks/pipeline_report.py``;
these tests check behaviour: derivatives of long Python loops equal those of the
vectorised form and finite differences, shape rules are evaluated once per distinct
signature, the cyclic garbage collector does not run inside a transform, and
programs built from recorded Ops equal checked ones.
"""

from __future__ import annotations

import functools
import gc
import sys
import time

import numpy as np
import pytest

from newtonad.ad import gc_pause
from newtonad.ad import program as program_module
from newtonad.ad import transforms as tf
from newtonad.ad.engine import numpy_eval
from newtonad.ad.primitives.core import REGISTRY
from newtonad.ad.program import Program, Slot, output_slot
from newtonad.ad.trace import interpret, trace_function

from .helpers import assert_close, central_jvp


def rosen_loop(x):
    s = 0.0
    for i in range(len(x) - 1):
        s = s + 100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return s


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def traced(f, x):
    return trace_function(f, [Slot(x.shape)]).program


# ---- long programs are derived correctly ------------------------------------------------------

def test_gradient_of_a_600_term_loop_matches_the_vectorised_form():
    x = np.linspace(-1.2, 1.1, 601)
    program = traced(rosen_loop, x)
    assert len(program.steps) > 5000
    f, g = numpy_eval.evaluate(tf.value_and_grad_program(program), x)
    f_ref, g_ref = numpy_eval.evaluate(tf.value_and_grad_program(traced(rosen, x)), x)
    assert_close(f, f_ref, rtol=1e-12)
    assert_close(g, g_ref, rtol=1e-12, atol=0)
    v = np.random.default_rng(0).normal(size=x.shape)
    assert_close(g @ v, central_jvp(rosen, x, v), rtol=1e-6)


def test_hvp_of_a_500_term_loop_matches_the_vectorised_form_and_differences():
    x = np.linspace(-1.2, 1.1, 501)
    v = np.random.default_rng(1).normal(size=x.shape)
    (hv,) = numpy_eval.evaluate(tf.hvp_program(traced(rosen_loop, x), None), x, v)
    (ref,) = numpy_eval.evaluate(tf.hvp_program(traced(rosen, x), None), x, v)
    assert_close(hv, ref, rtol=1e-12, atol=1e-12)
    grad = tf.grad_program(traced(rosen, x))
    fd = central_jvp(lambda y: numpy_eval.evaluate(grad, y)[0], x, v)
    assert_close(hv, fd, rtol=1e-6, atol=1e-6)


def test_deep_programs_need_no_recursion():
    """A 1 000-term loop (10 000 steps, one chain of additions) is traced, differentiated
    and evaluated within Python's default recursion limit."""
    x = np.linspace(-1.2, 1.1, 1001)
    assert len(traced(rosen_loop, x).steps) >= 10 * sys.getrecursionlimit()
    g = numpy_eval.evaluate(tf.grad_program(traced(rosen_loop, x)), x)[0]
    g_ref = numpy_eval.evaluate(tf.grad_program(traced(rosen, x)), x)[0]
    assert_close(g, g_ref, rtol=1e-12, atol=0)


def test_value_and_grad_equals_the_vjp_with_its_cotangent_bound_afterwards():
    """value_and_grad binds the cotangent 1 before its one simplification; the program
    is the one the vjp followed by binding 1 and simplifying gives."""
    for f, x in ((rosen_loop, np.linspace(-1.2, 1.1, 9)), (rosen, np.linspace(-1, 1, 5)),
                 (lambda x: np.sum(np.sin(x) * np.exp(x[::-1])) / np.sum(x ** 2),
                  np.linspace(0.1, 1.0, 4))):
        program = traced(f, x)
        vjp = tf.vjp_program(program, None)
        xs = [tf.new_tracer(s) for s in program.in_slots]
        y, ct = interpret(vjp, xs + [tf.Var(np.ones(()), const=True)])
        expected = tf.simplify(tf._build(xs, [y, ct]))
        assert tf.value_and_grad_program(program) == expected


def test_simplify_keeping_some_outputs_equals_selecting_them_first():
    for f, x in ((rosen_loop, np.linspace(-1.2, 1.1, 9)),
                 (lambda x: np.sum(np.sin(x) * np.exp(x[::-1])) / np.sum(x ** 2),
                  np.linspace(0.1, 1.0, 4))):
        jp = tf.jvp_program(tf.grad_program(traced(f, x)), 3)
        assert tf.simplify(jp, keep=[1]) == tf.simplify(tf.select_outputs(jp, [1]))
        assert tf.simplify(jp, keep=[1, 0]) == tf.simplify(tf.select_outputs(jp, [1, 0]))


# ---- the mechanisms ----------------------------------------------------------------------------

def test_shape_rules_run_once_per_signature_while_tracing_a_loop(monkeypatch):
    program_module.SHAPE_MEMO.clear()
    mul = REGISTRY["mul"]
    calls = []
    rule = mul.shape_rule
    monkeypatch.setattr(mul, "shape_rule", lambda *a, **k: calls.append(1) or rule(*a, **k))
    x = np.linspace(-1.2, 1.1, 201)
    tf.value_and_grad_program(traced(rosen_loop, x))
    # thousands of scalar multiplications, a handful of distinct signatures
    assert 0 < len(calls) <= 10


def test_output_slot_agrees_with_the_rule_and_keeps_types_of_params_apart():
    convert = REGISTRY["convert"]
    f64 = Slot((3,), "float64")
    assert output_slot(convert, (f64,), {"dtype": "int64"}) == convert.abstract_eval(
        f64, dtype="int64")
    assert output_slot(convert, (f64,), {"dtype": "bool"}).dtype == "bool"
    const = REGISTRY["const"]
    a = output_slot(const, (), (("dtype", "float64"), ("value", 1.0)))
    b = output_slot(const, (), (("dtype", "int64"), ("value", 1)))
    assert (a.dtype, b.dtype) == ("float64", "int64")
    n = len(program_module.SHAPE_MEMO)
    big = output_slot(const, (), (("dtype", "float64"),
                                  ("value", program_module.ArrayConst(np.zeros((50, 50))))))
    assert big.shape == (50, 50)
    assert len(program_module.SHAPE_MEMO) == n  # constants' arrays are not kept alive
    add = REGISTRY["add"]
    for _ in range(2):  # errors are raised every time, never cached
        with pytest.raises(ValueError):
            output_slot(add, (Slot((3,)), Slot((4,))), {})


def test_no_full_garbage_collection_inside_a_transform():
    x = np.linspace(-1.2, 1.1, 501)
    program = traced(rosen_loop, x)
    collections = []

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        tf.hvp_program(program, None)
    finally:
        gc.callbacks.remove(count)
    assert len(collections) <= 1  # at most the one as the collector resumes
    assert gc.isenabled()


def test_gc_pauses_nest_and_restore_the_callers_setting():
    assert gc.isenabled()
    with gc_pause.paused():
        with gc_pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_pause.paused():
            pass
        assert not gc.isenabled()  # a caller's disabled collector stays disabled
    finally:
        gc.enable()


def test_programs_from_recorded_ops_equal_checked_programs():
    x = np.linspace(-1.2, 1.1, 7)
    built = tf.value_and_grad_program(traced(rosen_loop, x))
    checked = Program(built.slots, built.steps, built.inputs, built.outputs)
    assert built == checked and hash(built) == hash(checked) and built.key == checked.key
    with pytest.raises(ValueError, match="written twice"):
        Program(built.slots, built.steps + built.steps[-1:], built.inputs, built.outputs)


# ---- planning for numba: no cost that grows with the program per step ------------------------

@functools.lru_cache(maxsize=2)
def _vector_loop_gradient(terms):
    """The gradient of Rosenbrock as a loop over blocks of 8 entries: a running sum of
    reductions (one fused chain as long as the program) and, in the gradient, one
    accumulator tree of ``2 * terms`` unslices."""
    def f(x):
        s = 0.0
        for a in range(0, x.shape[0] - 8, 8):
            lo, hi = x[a:a + 8], x[a + 1:a + 9]
            s = s + np.sum(100 * (hi - lo ** 2) ** 2 + (1 - lo) ** 2)
        return s
    return tf.value_and_grad_program(traced(f, np.linspace(-1.2, 1.1, 8 * terms + 9)))


def test_finding_accumulator_trees_costs_the_same_per_step_at_ten_times_the_length():
    """A chain of n additions of unslices is one tree of n leaves; copying its growing
    leaf list at every addition made this pass quadratic (6x per step at 10x length)."""
    from newtonad.ad.engine.numba_plan import Planner

    def per_step(program):
        best = float("inf")
        for _ in range(3):
            planner = Planner(program)
            t = time.process_time()
            planner._classify()
            best = min(best, time.process_time() - t)
        return best / len(program.steps), planner

    small, _ = per_step(_vector_loop_gradient(150))
    large, planner = per_step(_vector_loop_gradient(1500))
    assert max(len(leaves) for leaves in planner.accum_leaves.values()) >= 3000
    assert large < 3 * small


def test_planning_memory_per_step_does_not_grow_with_the_program():
    """The planner kept, per fused slot, the set of stored slots it loads: along a
    running sum those sets grow to the program's length (quadratic memory)."""
    import tracemalloc

    from newtonad.ad.engine.numba_plan import make_plan

    def peak_per_step(program):
        tracemalloc.start()
        try:
            make_plan(program)
            return tracemalloc.get_traced_memory()[1] / len(program.steps)
        finally:
            tracemalloc.stop()

    small = peak_per_step(_vector_loop_gradient(150))
    large = peak_per_step(_vector_loop_gradient(1500))
    assert large < 1.3 * small
