"""Transforms on random programs, partial evaluation, fan-out accumulation, the seeds'
examples, simplification, and rematerialisation in the linearised HVP."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import newtonad as nad
from newtonad.ad import remat
from newtonad.ad import transforms as tf
from newtonad.ad.engine.numpy_eval import evaluate

from .helpers import assert_close, central_jvp, check_hvp, check_jvp, check_vjp_vs_jvp


@pytest.fixture(autouse=True, scope="module")
def reference_engine():
    """Transforms are checked on the reference evaluator, whatever NEWTONAD_ENGINE says;
    test_engine checks the compiled engines against it (a numba compile per random
    program here would add minutes and test nothing about the transforms)."""
    from newtonad import settings

    with settings.override(engine="numpy"):
        yield

# ---- random programs composed from primitives ----------------------------------------------

UNARY = [np.sin, np.cos, np.tanh, np.arctan, lambda v: v * v, lambda v: np.exp(-v * v),
         lambda v: np.sqrt(1.0 + v * v), lambda v: np.log1p(v * v), lambda v: -v,
         lambda v: np.cumsum(v), lambda v: np.roll(v, 1), lambda v: v[::-1],
         lambda v: np.pad(v[1:], (0, 1)), lambda v: np.maximum(v, 0.1 * v)]
BINARY = [np.add, np.subtract, np.multiply, lambda a, b: a / (1.5 + b * b),
          lambda a, b: np.arctan2(a, 2.0 + b * b),
          # composed programs often tie a and b exactly (maximum(v, 0.1 v) == v for v > 0):
          # the branches agree to second order at a == b, so differences across a tie hold
          lambda a, b: np.where(a > b, (a - b) ** 3, 0.5 * (a - b) ** 3),
          lambda a, b: a * np.sum(b), lambda a, b: np.outer(a, b) @ a]


@hst.composite
def programs(draw):
    """A random straight-line function of x (shape (4,)) with fan-out and reuse."""
    ops = []
    n_values = 1
    for _ in range(draw(hst.integers(2, 9))):
        if draw(hst.booleans()):
            ops.append(("u", draw(hst.integers(0, len(UNARY) - 1)),
                        draw(hst.integers(0, n_values - 1))))
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
    # primal: x -> f, residuals; linear: x, residuals, V -> tangent
    assert len(primal.inputs) == 1 and primal.outputs
    assert len(linear.inputs) == 1 + (len(primal.outputs) - 1) + 1
    # the linear program holds no transcendental step: all primal work went to residuals
    assert not {s.primitive.name for s in linear.steps} & {"sin", "cos", "exp"}
    # and it is linear: the transpose succeeds and passes the dot-product test
    outs = evaluate(primal, POINT)
    V = np.random.default_rng(0).standard_normal((4, 2))
    (t,) = evaluate(linear, POINT, *outs[1:], V)
    pullback = tf.transpose_program(linear, [False] * (len(linear.inputs) - 1) + [True])
    W = np.random.default_rng(1).standard_normal(t.shape)
    (ct,) = evaluate(pullback, POINT, *outs[1:], W)
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
    # x, c (captured data is an input, not a baked constant), one residual (the product of
    # the factors) and V
    assert len(linear.inputs) == 4
    assert [s.primitive.name for s in linear.steps] == ["mul"]
    _, lin = nad.linearize(f, POINT)
    V = np.random.default_rng(3).standard_normal((4, 2))
    assert_close(lin(V), (-3.0 * np.exp(POINT) / c)[:, None] * V, 1e-14, 1e-14)


# ---- rematerialisation (linearized_hvp) ---------------------------------------------------------

def _rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _surface(u, h):
    return np.sum(np.sqrt(1 + ((u[1:, :-1] - u[:-1, :-1]) * h) ** 2
                          + ((u[:-1, 1:] - u[:-1, :-1]) * h) ** 2))


def _logistic(w, X, y, lam):
    return np.sum(np.logaddexp(0, -y * (X @ w))) + 0.5 * lam * (w @ w)


def _scaled(x, a, b, c):  # the product of the data is worth storing, not a, b and c
    return np.sum(a * b * c * x ** 2) + np.sum(np.cos(x))


def _mixed(x):  # reductions and a transcendental: barriers and expensive values
    return np.sum(np.exp(x)) + np.sum(x) ** 2 * np.sum(x * x) + np.sum(np.tanh(x[1:] * x[:-1]))


def _remat_cases():
    r = np.random.default_rng(7)
    X = r.standard_normal((9, 4)) / 2
    return {
        "rosen": (_rosen, r.uniform(-1, 1, 7), ()),
        "surface": (_surface, r.standard_normal((17, 16)) * 0.3, (np.array(0.7),)),
        "logistic": (_logistic, r.standard_normal(4) * 0.3, (X, np.sign(r.standard_normal(9)),
                                                           np.array(1e-2))),
        "scaled": (_scaled, r.standard_normal(5), tuple(r.standard_normal((3, 5)))),
        "mixed": (_mixed, r.standard_normal(6) * 0.5, ()),
    }


REMAT_CASES = _remat_cases()


def _split(program, k, use_remat=True):
    """linearized_hvp, or the same split without rematerialisation (every read stored)."""
    if use_remat:
        return tf.linearized_hvp(program, k)
    known = [True] * len(program.inputs) + [False]
    jp = tf.jvp_program(tf.value_and_grad_program(program), k)
    jp = tf.select_outputs(tf.fold_scalings(jp, known), [0, 1, 3])
    primal, linear = tf.partial_eval(jp, known, 2)
    return tf.simplify(primal), tf.simplify(linear)


def _linear_map(f, x, args, k):
    """``(V -> H V, residuals, residual program, linear program)`` from linearized_hvp."""
    program = nad.trace(f, x, *args)
    residual, linear = tf.linearized_hvp(program, k)
    y, g, *res = evaluate(residual, x, *args)
    known = [x, *args, *res]  # the linear program takes the inputs, then the residuals
    assert len(known) == len(linear.inputs) - 1
    return (lambda V: evaluate(linear, *known, V)[0]), known, residual, linear


@pytest.mark.parametrize("k", [None, 1, 3])
@pytest.mark.parametrize("name", sorted(REMAT_CASES))
def test_remat_linear_program_agrees_with_hvp_program(name, k):
    f, x, args = REMAT_CASES[name]
    program = nad.trace(f, x, *args)
    V = np.random.default_rng(1).standard_normal(x.shape + (() if k is None else (k,)))
    apply, _, residual, _ = _linear_map(f, x, args, k)
    y, g = evaluate(tf.value_and_grad_program(program), x, *args)
    y2, g2 = evaluate(residual, x, *args)[:2]
    assert_close(y2, y, 1e-14, 1e-14)
    assert_close(g2, g, 1e-14, 1e-14)
    (HV,) = evaluate(tf.hvp_program(program, k), x, *args, V)
    assert_close(apply(V), HV, 1e-12, 1e-12)


@pytest.mark.parametrize("name", sorted(REMAT_CASES))
def test_remat_hvp_matches_differences_of_the_gradient(name):
    f, x, args = REMAT_CASES[name]
    apply, *_ = _linear_map(f, x, args, 2)
    V = np.random.default_rng(2).standard_normal(x.shape + (2,))
    HV = apply(V)
    g = nad.grad(f)
    for j in range(2):
        assert_close(HV[..., j], central_jvp(g, x, V[..., j], args, eps=1e-5), 1e-5, 1e-6)


@pytest.mark.parametrize("name", sorted(REMAT_CASES))
def test_remat_linear_program_is_linear_and_symmetric(name):
    f, x, args = REMAT_CASES[name]
    apply, res, _, linear = _linear_map(f, x, args, 1)
    rng = np.random.default_rng(3)
    U, W = rng.standard_normal((2,) + x.shape + (1,))
    assert_close(apply(2.0 * U - 0.5 * W), 2.0 * apply(U) - 0.5 * apply(W), 1e-12, 1e-12)
    assert np.isclose(np.sum(U * apply(W)), np.sum(W * apply(U)), rtol=1e-12, atol=1e-12)
    # structurally linear: it transposes, and the transpose is H itself (H symmetric)
    pullback = tf.transpose_program(linear, [False] * len(res) + [True])
    (HtU,) = evaluate(pullback, *res, U)
    assert_close(HtU, apply(U), 1e-12, 1e-12)


def _values_read(linear):
    """How many of the linear program's inputs other than V (inputs, residuals) it reads."""
    read = {i for step in linear.steps for i in step.inputs} | set(linear.outputs)
    return sum(i in read for i in linear.inputs[:-1])


def test_remat_residual_counts():
    def counts(name):
        f, x, args = REMAT_CASES[name]
        program = nad.trace(f, x, *args)
        return [_values_read(_split(program, 1, r)[1]) for r in (False, True)]

    assert counts("rosen") == [3, 1]          # x only: everything else is cheap arithmetic of x
    before, after = counts("surface")
    assert (before, after) == (8, 4)           # x, h and two values made by sqrt / division
    # (on a much smaller grid x is large next to its slices, and slices are stored instead)
    before, after = counts("logistic")
    assert after == before                     # exp stays stored: recomputing it costs more
    before, after = counts("scaled")
    assert after <= before and after == 2      # 2abc and -cos(x), never a, b, c apart


def test_remat_reads_x_itself_and_stores_nothing_for_rosenbrock():
    f, x, args = REMAT_CASES["rosen"]
    _, known, residual, linear = _linear_map(f, x, args, 1)
    assert len(residual.outputs) == 2 and len(known) == 1  # f and ∇f; x is passed, not copied
    assert _values_read(linear) == 1
    # the linear program does the elementwise work itself: no residual but x is read
    assert {"square", "sub"} <= {s.primitive.name for s in linear.steps}


def test_remat_keeps_barriers_and_transcendentals_stored():
    for name, (f, x, args) in REMAT_CASES.items():
        _, res, _, linear = _linear_map(f, x, args, 2)
        lin = {linear.inputs[-1]}
        for step in linear.steps:
            if any(i in lin for i in step.inputs):
                lin.add(step.output)
            elif step.primitive.name != "const":  # recomputed from residuals: cheap only
                cost = remat.recompute_cost(linear, step)
                weight = step.primitive.recompute_weight(
                    [linear.slots[i] for i in step.inputs], linear.slots[step.output])
                assert cost is not None and weight <= 8, (name, step)


def test_remat_is_deterministic():
    f, x, args = REMAT_CASES["surface"]
    a = tf.linearized_hvp(nad.trace(f, x, *args), 2)
    b = tf.linearized_hvp(nad.trace(f, x, *args), 2)
    assert a == b and a[1].key == b[1].key


def _remat_choice(program, k):
    """The jvp-of-gradient program linearized_hvp splits, its kinds, needed slots, choice."""
    known = [True] * len(program.inputs) + [False]
    jp = tf.jvp_program(tf.value_and_grad_program(program), k)
    jp = tf.select_outputs(tf.fold_scalings(jp, known), [0, 1, 3])
    kind = remat.slot_kinds(jp, known)
    needed = {i for s in jp.steps if kind[s.output] == "unknown" for i in s.inputs
              if kind[i] == "known"} | {i for i in jp.outputs[2:] if kind[i] == "known"}
    stored, recomputed = remat.choose(jp, kind, needed)
    return jp, kind, needed, stored, recomputed


def _check_choice(jp, kind, needed, stored, recomputed):
    producer = {s.output: s for s in jp.steps}
    assert needed <= set(stored) | recomputed
    assert not set(stored) & recomputed
    for i in recomputed:  # a recomputed value is cheap and computed from available values
        step = producer[i]
        assert remat.recompute_cost(jp, step) is not None
        assert all(kind[j] == "const" or j in stored or j in recomputed for j in step.inputs)
    assert remat.cost(jp, stored, recomputed) <= remat.cost(jp, needed, ())


@pytest.mark.parametrize("name", sorted(REMAT_CASES))
def test_remat_choice_is_closed_and_never_costs_more(name):
    f, x, args = REMAT_CASES[name]
    _check_choice(*_remat_choice(nad.trace(f, x, *args), 2))


@settings(max_examples=25, deadline=None)
@given(programs())
def test_random_programs_remat_choice_and_linear_program(f):
    w = np.array([0.5, -1.0, 2.0, 0.25])
    g = lambda x, w: np.sum(w * f(x))
    program = nad.trace(g, POINT, w)
    _check_choice(*_remat_choice(program, 2))
    V = np.random.default_rng(5).standard_normal((4, 2))
    apply, *_ = _linear_map(g, POINT, (w,), 2)
    (HV,) = evaluate(tf.hvp_program(program, 2), POINT, w, V)
    assert_close(apply(V), HV, 1e-11, 1e-11)


def test_min_cut_on_a_small_graph():
    """s→a (3), s→b (2), a→b (1), a→t (2), b→t (3): max flow 5, both source edges cut."""
    graph = remat._Flow(4)
    s, a, b, t = range(4)
    for u, v, c in [(s, a, 3), (s, b, 2), (a, b, 1), (a, t, 2), (b, t, 3)]:
        graph.edge(u, v, c)
    assert graph.source_side(s, t) == {s}


def test_new_frame_width_keeps_constants_that_print_alike_apart():
    # two constants whose entries differ past the digits their repr shows: resizing the
    # frame axes must keep each step's own constant
    c1 = np.array([0.123456789012, 1.0, 2.0])
    c2 = np.array([0.123456789034, 1.0, 2.0])
    assert repr(tf.ArrayConst(c1)) == repr(tf.ArrayConst(c2))

    def f(x):
        return np.sum(c1 * x ** 3) + np.sum(c2 * np.sin(x) * x)

    x = np.array([0.3, -0.7, 1.1])
    program = nad.trace(f, x)
    tf.clear_caches()
    assert tf._framed("hvp", program, 3) == tf._DIRECT["hvp"](program, 3)
    H = np.diag(6 * c1 * x + c2 * (2 * np.cos(x) - x * np.sin(x)))
    V = np.arange(12.0).reshape(3, 4) / 7
    assert_close(nad.hvp(f, x, V, engine="numpy"), H @ V, 1e-13, 1e-13, "H V")
