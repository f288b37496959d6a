"""Transforms on random programs, partial evaluation, fan-out accumulation, the seeds'
examples, and simplification."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import newtonad as nad
from newtonad.ad import transforms as tf
from newtonad.ad.engine.numpy_eval import evaluate

from .helpers import assert_close, check_hvp, check_jvp, check_vjp_vs_jvp

# ---- random programs composed from primitives ----------------------------------------------

UNARY = [np.sin, np.cos, np.tanh, np.arctan, lambda v: v * v, lambda v: np.exp(-v * v),
         lambda v: np.sqrt(1.0 + v * v), lambda v: np.log1p(v * v), lambda v: -v,
         lambda v: np.cumsum(v), lambda v: np.roll(v, 1), lambda v: v[::-1],
         lambda v: np.pad(v[1:], (0, 1)), lambda v: np.maximum(v, 0.1 * v)]
BINARY = [np.add, np.subtract, np.multiply, lambda a, b: a / (1.5 + b * b),
          lambda a, b: np.arctan2(a, 2.0 + b * b), lambda a, b: np.where(a > b, a * b, a - b),
          lambda a, b: a * np.sum(b), lambda a, b: np.outer(a, b) @ a]


@hst.composite
def programs(draw):
    """A random straight-line function of x (shape (4,)) with fan-out and reuse."""
    ops = []
    n_values = 1
    for _ in range(draw(hst.integers(2, 9))):
        if draw(hst.booleans()):
            ops.append(("u", draw(hst.integers(0, len(UNARY) - 1)), draw(hst.integers(0, n_values - 1))))
        else:
            ops.append(("b", draw(hst.integers(0, len(BINARY) - 1)),
                        draw(hst.integers(0, n_values - 1)), draw(hst.integers(0, n_values - 1))))
        n_values += 1

    def f(x):
        values = [x]
        for op in ops:
            if op[0] == "u":
                values.append(UNARY[op[1]](values[op[2]]))
            else:
                values.append(BINARY[op[1]](values[op[2]], values[op[3]]))
        return values[-1] + 0.1 * values[len(values) // 2]

    f.ops = ops
    return f


POINT = np.array([0.3, -0.7, 1.1, 0.5])


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_programs_jvp_matches_differences_and_vjp(f):
    check_jvp(f, POINT, rtol=1e-4, atol=1e-5)
    check_vjp_vs_jvp(f, POINT)


@settings(max_examples=25, deadline=None)
@given(programs())
def test_random_programs_hvp_matches_differences_and_hessian(f):
    w = np.array([0.5, -1.0, 2.0, 0.25])
    g = lambda x: np.sum(w * f(x))
    HV = check_hvp(g, POINT, rtol=1e-3, atol=1e-4)
    # the same frame through the linearised HVP (residuals once, then linear passes)
    obj = nad.Objective(g)
    V = np.random.default_rng(20261129 + 2).standard_normal((4, 2))
    assert_close(obj.hessp(POINT, V), HV, 1e-10, 1e-10)


@settings(max_examples=25, deadline=None)
@given(programs())
def test_random_programs_linearize_equals_jvp(f):
    _, lin = nad.linearize(f, POINT)
    V = np.eye(4)[:, :3]
    assert_close(lin(V), nad.jvp(f, POINT, V)[1], 1e-12, 1e-12)


# ---- partial evaluation ------------------------------------------------------------------

def test_partial_eval_splits_into_primal_and_linear_programs():
    f = lambda x: np.sum(np.sin(x) * np.exp(x[::-1]))
    program = nad.trace(f, POINT)
    primal, linear = tf.linearize_program(program, 2)
    # primal: x -> f, residuals; linear: residuals, V -> tangent
    assert len(primal.inputs) == 1 and primal.outputs
    assert len(linear.inputs) == len(primal.outputs) - 1 + 1
    # the linear program holds no transcendental step: all primal work went to residuals
    assert not {s.primitive.name for s in linear.steps} & {"sin", "cos", "exp"}
    # and it is linear: the transpose succeeds and passes the dot-product test
    outs = evaluate(primal, POINT)
    V = np.random.default_rng(0).standard_normal((4, 2))
    (t,) = evaluate(linear, *outs[1:], V)
    pullback = tf.transpose_program(linear, [False] * (len(linear.inputs) - 1) + [True])
    W = np.random.default_rng(1).standard_normal(t.shape)
    (ct,) = evaluate(pullback, *outs[1:], W)
    assert np.isclose(np.sum(t * W), np.sum(V * ct))


def test_partial_eval_rejects_a_known_output_that_depends_on_unknowns():
    program = tf.jvp_program(nad.trace(np.sin, POINT), 1)
    with pytest.raises(ValueError, match="unknown"):
        tf.partial_eval(program, [True, False], 2)


def test_constants_are_recomputed_not_passed_as_residuals():
    program = nad.trace(lambda x: np.sum(3.0 * x * x), POINT)
    primal, linear = tf.linearize_program(program, 1)
    # residuals are primal values only (2x lifted): no broadcast constant of size n·k
    assert all(s.size <= POINT.size for s in primal.out_slots)


# ---- seeds --------------------------------------------------------------------------------

def test_seed_002_sin_x_plus_x_y():
    """f = sin(x) + x·y: df/dx = cos(x) + y, df/dy = x."""
    f = lambda v: np.sin(v[0]) + v[0] * v[1]
    x, y = 0.5, 2.0
    g = nad.grad(f)(np.array([x, y]))
    assert_close(g, [np.cos(x) + y, x], 1e-15, 1e-15)


def test_seed_002_fan_out_sums_branches():
    """f = (x + y) + sin(y): y reaches f along two branches whose cotangents add."""
    f = lambda v: (v[0] + v[1]) + np.sin(v[1])
    g = nad.grad(f)(np.array([0.3, 1.2]))
    assert_close(g, [1.0, 1.0 + np.cos(1.2)], 1e-15, 1e-15)


def test_seed_000_product_exp_plus():
    """x1 ⊙ x2 → exp → + : f = x1 x2 + exp(x1 x2), summed."""
    f = lambda x: np.sum(x[0] * x[1] + np.exp(x[0] * x[1]))
    x = np.array([[0.2, -0.4], [1.5, 0.5]])
    p = x[0] * x[1]
    g = nad.grad(f)(x)
    assert_close(g, np.stack([x[1] * (1 + np.exp(p)), x[0] * (1 + np.exp(p))]), 1e-14, 1e-14)
    H = nad.hessian(f)(x).reshape(4, 4)
    # d²/dx1 dx2 of p + e^p (per component i) = 1 + e^p (1 + p)
    i = 0
    assert np.isclose(H[i, 2 + i], 1 + np.exp(p[i]) * (1 + p[i]))
    assert np.isclose(H[i, i], x[1, i] ** 2 * np.exp(p[i]))


def test_fan_out_slot_read_by_many_steps():
    f = lambda x: np.sum(x * x * x + np.sin(x) * x + x)
    x = POINT
    assert_close(nad.grad(f)(x), 3 * x * x + np.cos(x) * x + np.sin(x) + 1, 1e-14, 1e-14)


# ---- simplification ------------------------------------------------------------------------

def test_simplify_removes_dead_code_and_duplicates_and_keeps_semantics():
    f = lambda x: np.sum(np.sin(x) * np.sin(x) + 0.0 * np.cos(x) + 1.0 * x)
    program = nad.trace(f, POINT)
    simple = tf.simplify(program)
    names = [s.primitive.name for s in simple.steps]
    assert names.count("sin") == 1  # common subexpression shared
    assert_close(evaluate(simple, POINT)[0], evaluate(program, POINT)[0], 1e-15, 1e-15)


def test_simplify_folds_constants():
    f = lambda x: np.sum(x * (np.exp(np.ones(3)) * 2.0).sum())
    program = tf.simplify(nad.trace(f, POINT))
    assert "exp" not in str(program)


def test_derived_programs_carry_no_symbolic_zero_work():
    """Data args have symbolic-zero tangents: no tangent code is generated for them."""
    f = lambda w, X: np.sum(np.tanh(X @ w))
    X = np.random.default_rng(0).standard_normal((5, 4))
    program = nad.trace(f, POINT, X)
    jp = tf.jvp_program(program, 2)
    einsums = [s for s in jp.steps if s.primitive.name == "einsum"]
    assert len(einsums) == 2  # the primal product and the tangent X @ V only


def test_program_is_hashable_and_structural():
    p1 = nad.trace(lambda x: np.sum(np.sin(x)), POINT)
    p2 = nad.trace(lambda x: np.sum(np.sin(x)), POINT)
    assert p1 == p2 and hash(p1) == hash(p2) and p1.key == p2.key
    p3 = nad.trace(lambda x: np.sum(np.cos(x)), POINT)
    assert p1 != p3 and p1.key != p3.key


def test_chains_of_known_scalings_fold_into_one_residual():
    c = np.array([1.0, 2.0, 4.0, 8.0])
    f = lambda x: -(np.exp(x) * 3.0) / c
    primal, linear = tf.linearize_program(nad.trace(f, POINT), 2)
    assert len(linear.inputs) == 2  # one residual (the product of the factors) and V
    assert [s.primitive.name for s in linear.steps] == ["mul"]
    _, lin = nad.linearize(f, POINT)
    V = np.random.default_rng(3).standard_normal((4, 2))
    assert_close(lin(V), (-3.0 * np.exp(POINT) / c)[:, None] * V, 1e-14, 1e-14)
