"""Reductions are data: one :class:`~newtonad.ad.primitives.reductions.Reduction` record
each, read by the numba planner, printer, nest lowering, liveness and re-rolling.

A toy reduction, the Euclidean norm folded with ``hypot`` (a monoid with identity 0),
is defined and registered in one place, the fixture below, and is then traced,
differentiated (against central differences), given the sparsity of its kind, lowered
by the numba engine (values against the NumPy evaluator, also with the outer loop on
threads) and re-rolled out of a Python loop over blocks. Nothing outside the fixture names it.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import newtonad as nad
from newtonad import _programs
from newtonad.ad import reroll as rr
from newtonad.ad import transforms as tf
from newtonad.ad.engine import loop_ir as ir
from newtonad.ad.engine import numba_engine, numpy_eval
from newtonad.ad.engine.kinds import SUPPORTED
from newtonad.ad.engine.options import LoweringOptions
from newtonad.ad.primitives import REGISTRY
from newtonad.ad.primitives.core import KINDS, Primitive
from newtonad.ad.primitives.elementwise import div, mul
from newtonad.ad.primitives.reductions import REDUCTIONS, register_reduction
from newtonad.ad.primitives.structural import expand_reduced, lift, reduce_sum, reduced_shape
from tests.helpers import assert_close, central_jvp

pytestmark = pytest.mark.usefixtures("module_kernel_cache")

RNG = np.random.default_rng(20261202)
#: Numba's loops and NumPy's ``sqrt(sum(x * x))`` round differently: agreement to 1e-12.
RTOL = 1e-12
#: Parallel loops at test sizes, on two threads as the code generator sees them.
THREADED = LoweringOptions(parallel_min_iterations=256, parallel_threads=2, cheap_launch=True)


def _norm_jvp(frame, primals, tangents, out, *, axes):
    (x,), (t,) = primals, tangents
    if t is None:
        return None
    return reduce_sum(mul(t, lift(frame, div(x, expand_reduced(out, x.aval.shape, axes)))),
                      axes=axes)


@pytest.fixture
def norm():
    """``norm(x, axes)``: a reduction registered here only, removed after the test."""
    prim = Primitive("toy_norm", impl=lambda x, *, axes: np.sqrt(np.sum(x * x, axis=axes)),
                     shape=reduced_shape, jvp=_norm_jvp, kind="reduction")
    register_reduction(prim, identity=lambda dtype: 0.0,
                       fold=("{target} = np.hypot({target}, {value})",),
                       thread_combinable=True, batches=True)
    try:
        yield lambda x, axes: prim(x, axes=tuple(axes))
    finally:
        REDUCTIONS.pop(prim, None)
        REGISTRY.pop(prim.name, None)


def _steps_named(program, name):
    return [s for s in program.steps if s.primitive.name == name]


def test_every_reduction_primitive_has_one_record():
    reductions = {p for p in REGISTRY.values() if p.kind == "reduction"}
    assert reductions == set(REDUCTIONS)
    assert {p.name for p in reductions} >= {"reduce_sum", "reduce_prod", "reduce_max",
                                            "reduce_min"}
    assert "reduction" in KINDS
    for prim, record in REDUCTIONS.items():
        assert record.primitive is prim and prim in SUPPORTED
        assert all("{target}" in line or "{value}" in line for line in record.fold)


def test_identities_are_units_of_the_folds():
    """Folding a value into the identity gives the value back, by each record's fold."""
    for record in REDUCTIONS.values():
        for dtype, value in (("float64", -2.5), ("int64", -7), ("bool", True), ("bool", False)):
            if record.primitive.name == "reduce_sum" and dtype == "bool":
                continue  # a sum of bools counts in int64 (summed_dtype)
            env = {"np": np, "target": record.identity(dtype), "value": value}
            exec("\n".join(record.fold_lines("target", "value")), env)
            assert env["target"] == value, (record.primitive.name, dtype)


def test_toy_reduction_traces_and_differentiates(norm):
    def f(x):
        return np.sum(norm(x, (1,)) ** 2) + norm(x, (0, 1))

    x = RNG.standard_normal((4, 5))
    program = nad.trace(f, x)
    assert [s.kwargs["axes"] for s in _steps_named(program, "toy_norm")] == [(1,), (0, 1)]
    value = numpy_eval.compile_program(program)(x)[0]
    assert_close(value, np.sum(x * x) + np.linalg.norm(x), 1e-14, 1e-14, "value")
    g = nad.grad(f, engine="numpy")
    assert_close(g(x), 2 * x + x / np.linalg.norm(x), 1e-12, 1e-12, "gradient")
    for _ in range(3):
        v = RNG.standard_normal(x.shape)
        assert_close(np.sum(g(x) * v), central_jvp(f, x, v), 1e-7, 1e-8, "gradient vs differences")
        assert_close(nad.hvp(f, x, v, engine="numpy"), central_jvp(g, x, v, eps=1e-5), 1e-5, 1e-6,
                     "hvp vs differences of the gradient")


def test_toy_reduction_has_the_sparsity_of_its_lines(norm):
    """The generic rule of kind ``reduction``: row norms couple the entries of a row only."""
    def f(X):
        return np.sum(norm(X, (1,)))

    X = RNG.standard_normal((4, 3))
    pattern = nad.hessian_sparsity(f)(X).toarray()
    assert np.array_equal(pattern, np.kron(np.eye(4), np.ones((3, 3))).astype(bool))
    H = nad.hessian(f, engine="numpy")(X).reshape(12, 12)
    assert np.all(pattern[np.abs(H) > 1e-12])


def _check_numba(program, inputs, options=None):
    """Lower ``program`` on the numba engine (it must not fall back), run, compare."""
    kernel = numba_engine.lower(program, options)
    run = numba_engine.compile_program(program, options)
    ref = numpy_eval.compile_program(program)(*inputs)
    for threads in sorted({min(2, numba.config.NUMBA_NUM_THREADS), 1}):
        numba.set_num_threads(threads)
        try:
            got = run(*inputs)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        for a, b in zip(got, ref):
            scale = np.max(np.abs(b), initial=1.0)
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * scale)
    return kernel


def test_toy_reduction_lowers_on_numba(norm):
    """Row norms (an array target) and a norm into a scalar, in value, gradient and HVP."""
    def f(X):
        return np.sum(np.exp(-norm(X, (1,)))) + norm(X, (0, 1))

    X = RNG.standard_normal((300, 3))
    trace = nad.trace(f, X)
    kernel = _check_numba(tf.value_and_grad_program(trace), (X,))
    assert "np.hypot(" in kernel.source
    V = RNG.standard_normal(X.shape + (2,))
    _check_numba(tf.hvp_program(trace, 2), (X, V))


def test_toy_reduction_into_a_scalar_runs_on_threads(norm):
    """Thread-combinable: partial norms per chunk, folded in chunk order."""
    def f(x):
        return norm(np.sin(x), (0,))

    x = RNG.standard_normal(1000)
    kernel = _check_numba(nad.trace(f, x), (x,), THREADED)
    inside = [s.text for s, parallel in ir.walk(kernel.body)
              if parallel and isinstance(s, ir.Comment) and "toy_norm" in s.text]
    assert inside, kernel.source
    assert "part_" in kernel.source


def _traced(f, x, reroll):
    old = rr.REROLL
    rr.REROLL = reroll
    try:
        return _programs.Traced(f, [_programs.aval_of(x)], scalar=True).program
    finally:
        rr.REROLL = old


def test_toy_reduction_of_blocks_in_a_loop_rerolls(norm):
    def blocks(x):
        s = 0.0
        for a in range(0, x.shape[0] - 4, 4):
            s = s + norm(x[a:a + 4] * x[a + 1:a + 5], (0,))
        return s

    x = RNG.standard_normal(81)
    unrolled, rerolled = _traced(blocks, x, False), _traced(blocks, x, True)
    assert len(_steps_named(unrolled, "toy_norm")) == 20
    (batched,) = _steps_named(rerolled, "toy_norm")  # one norm of the (20, 4) blocks
    assert batched.kwargs["axes"] == (1,)
    assert len(rerolled.steps) < 20 < len(unrolled.steps)
    ref = numpy_eval.compile_program(unrolled)(x)[0]
    assert_close(numpy_eval.compile_program(rerolled)(x)[0], ref, 1e-12, 1e-12, "re-rolled")
    _check_numba(rerolled, (x,))
    g = nad.grad(blocks, engine="numpy")
    v = RNG.standard_normal(x.shape)
    assert_close(np.sum(g(x) * v), central_jvp(blocks, x, v), 1e-7, 1e-8, "re-rolled gradient")
