"""Every primitive's jvp rule against central differences, its second derivative through
forward-over-reverse, and every transpose rule by the dot-product test."""

from __future__ import annotations

import numpy as np
import pytest

import newtonad as nad
from newtonad.ad.engine.numpy_eval import evaluate
from newtonad.ad.primitives import REGISTRY
from newtonad.ad.primitives import elementwise as ew
from newtonad.ad.primitives import linalg as la
from newtonad.ad.primitives import reductions as rd
from newtonad.ad.primitives import structural as st
from newtonad.ad.program import Slot
from newtonad.ad.trace import trace_function
from newtonad.ad.transforms import transpose_program

from .helpers import check_hvp, check_jvp, check_vjp_vs_jvp

rng = np.random.default_rng(7)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def inside_unit(*shape):
    return rng.uniform(-0.8, 0.8, shape)


def split(x, n):
    """Two operands from one flat vector: x[:n] reshaped (3, 1) style by the caller."""
    return x[:n], x[n:]


IDX = np.array([2, 0, 2, 1, 4, 4])  # repeated indices: scatter_add must accumulate

# name -> list of (function of one float array, point, smooth enough for second order)
JVP_CASES: dict[str, list] = {
    "neg": [(lambda x: ew.neg_p(x), normal(3, 4), True)],
    "exp": [(lambda x: ew.exp_p(x), normal(5), True)],
    "log": [(lambda x: ew.log_p(x), positive(5), True)],
    "log1p": [(lambda x: ew.log1p_p(x), positive(5), True)],
    "expm1": [(lambda x: ew.expm1_p(x), normal(5), True)],
    "sqrt": [(lambda x: ew.sqrt_p(x), positive(5), True)],
    "sin": [(lambda x: ew.sin_p(x), normal(5), True)],
    "cos": [(lambda x: ew.cos_p(x), normal(5), True)],
    "tan": [(lambda x: ew.tan_p(x), inside_unit(5), True)],
    "arcsin": [(lambda x: ew.arcsin_p(x), inside_unit(5), True)],
    "arccos": [(lambda x: ew.arccos_p(x), inside_unit(5), True)],
    "arctan": [(lambda x: ew.arctan_p(x), normal(5), True)],
    "sinh": [(lambda x: ew.sinh_p(x), normal(5), True)],
    "cosh": [(lambda x: ew.cosh_p(x), normal(5), True)],
    "tanh": [(lambda x: ew.tanh_p(x), normal(5), True)],
    "square": [(lambda x: ew.square_p(x), normal(5), True)],
    "reciprocal": [(lambda x: ew.reciprocal_p(x), positive(5), True)],
    "abs": [(lambda x: ew.abs_p(x), np.array([-1.5, -0.3, 0.7, 2.0]), True)],
    "sign": [(lambda x: ew.mul(ew.sign_p(x), x), np.array([-1.5, 0.7]), True)],
    "floor": [(lambda x: ew.add(ew.floor_p(x), x), np.array([-1.5, 0.7]), True)],
    "ceil": [(lambda x: ew.add(ew.ceil_p(x), x), np.array([-1.5, 0.7]), True)],
    "logical_not": [(lambda x: ew.select(ew.logical_not_p(ew.gt(x, 0.0)), x, ew.square(x)),
                     np.array([-1.5, 0.7, 2.0]), True)],
    "integer_pow": [(lambda x, n=n: ew.integer_pow(x, n=n), normal(5), True)
                    for n in (-2, 0, 1, 3, 4)],
    "add": [(lambda x: ew.add_p(x[:3].reshape(3, 1), x[3:]), normal(7), True)],
    "sub": [(lambda x: ew.sub_p(x[:3].reshape(3, 1), x[3:]), normal(7), True),
            (lambda x: ew.sub_p(2.0, x), normal(3), True)],
    "mul": [(lambda x: ew.mul_p(x[:3].reshape(3, 1), x[3:]), normal(7), True),
            (lambda x: ew.mul_p(x, x), normal(4), True)],
    "div": [(lambda x: ew.div_p(x[:3].reshape(3, 1), x[3:]), positive(7), True),
            (lambda x: ew.div_p(1.0, x), positive(3), True)],
    "pow": [(lambda x: ew.pow_p(x[:3], x[3:]), positive(6), True),
            (lambda x: ew.pow_p(x, 2.5), positive(4), True),
            (lambda x: ew.pow_p(1.7, x), normal(4), True)],
    "maximum": [(lambda x: ew.maximum_p(x[:4], x[4:]), normal(8), True)],
    "minimum": [(lambda x: ew.minimum_p(x[:4], x[4:]), normal(8), True)],
    "arctan2": [(lambda x: ew.arctan2_p(x[:3], x[3:]), positive(6), True)],
    "select": [(lambda x: ew.select(ew.gt(x[:4], 0.0), ew.square(x[:4]), ew.exp(x[4:])),
                normal(8), True)],
    "convert": [(lambda x: ew.mul(ew.convert(ew.gt(x, 0.0), dtype="float64"), x),
                 np.array([-1.0, 2.0]), True),
                (lambda x: ew.convert(x, dtype="float64"), normal(3), True)],
    "reduce_sum": [(lambda x: rd.reduce_sum(ew.square(x), axes=(0, 2)), normal(2, 3, 4), True)],
    "reduce_max": [(lambda x: rd.reduce_max(x, axes=(1,)), normal(3, 4), False)],
    "reduce_min": [(lambda x: rd.reduce_min(x, axes=(0, 1)), normal(3, 4), False)],
    "reduce_prod": [(lambda x: rd.reduce_prod(x, axes=(1,)), positive(3, 4), True),
                    # rows with no, one, two and three zeros: no 0/0 in the rule
                    (lambda x: rd.reduce_prod(x, axes=(1,)),
                     np.array([[1.5, -2.0, 0.5], [0.0, 2.0, 3.0], [0.0, 0.0, 3.0],
                               [0.0, 0.0, 0.0]]), True)],
    "linear_scan": [(lambda x: rd.linear_scan(x[:, :2], ew.sin(x[:, 2:]), axis=0), normal(4, 4),
                     True),
                    (lambda x: rd.cumprod(x, axis=1), np.array([[1.5, 0.0, 2.0, -1.0],
                                                                  [0.0, 0.0, 3.0, 0.5]]), True)],
    "cumsum": [(lambda x: rd.cumsum(ew.square(x), axis=1), normal(3, 4), True),
               (lambda x: rd.cumsum(x, axis=0, reverse=True), normal(5), True)],
    "reshape": [(lambda x: st.reshape(ew.sin(x), (4, 3)), normal(2, 6), True)],
    "transpose": [(lambda x: st.transpose(ew.sin(x), (2, 0, 1)), normal(2, 3, 4), True)],
    "broadcast_to": [(lambda x: ew.sin(st.broadcast_to(x, (2, 3, 4))), normal(3, 1), True)],
    "slice": [(lambda x: ew.sin(st.slice_(x, [(4, None, -2), (1, 3, 1)])), normal(5, 3), True)],
    "unslice": [(lambda x: ew.sin(st.unslice(x, (5, 4), [(1, 5, 2), (0, 3, 1)])), normal(2, 3),
                 True)],
    "concatenate": [(lambda x: ew.sin(st.concatenate([x[:2], ew.square(x[2:]), x[:1]], 0)),
                     normal(5, 2), True)],
    "roll": [(lambda x: ew.sin(st.roll(ew.square(x), 2, 1)), normal(3, 5), True),
             (lambda x: st.roll(ew.sin(x), -1, 0) * x, normal(4), True)],
    "gather": [(lambda x: ew.sin(st.gather(x, IDX.reshape(2, 3), 1)), normal(2, 5), True)],
    "scatter_add": [(lambda x: ew.sin(st.scatter_add(x, IDX, 0, (5, 2))), normal(6, 2), True)],
    "einsum": [(lambda x: la.einsum("ij,jk->ik", st.reshape(x[:6], (2, 3)),
                                    st.reshape(x[6:], (3, 2))),
                normal(12), True),
               (lambda x: la.einsum("ijk,jl->il", st.reshape(x[:24], (2, 3, 4)),
                                    st.reshape(x[24:], (3, 2))),
                normal(30), True)],
}
for _cmp in ("lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or"):
    _p = REGISTRY[_cmp]
    if _cmp.startswith("logical"):
        JVP_CASES[_cmp] = [(lambda x, p=_p: ew.select(p(ew.gt(x[:3], 0.0), ew.lt(x[3:], 0.5)),
                                                      ew.sin(x[:3]), x[3:]), normal(6), True)]
    else:
        JVP_CASES[_cmp] = [(lambda x, p=_p: ew.select(p(x[:3], x[3:]), ew.sin(x[:3]), x[3:]),
                            normal(6), True)]

# primitives without a jvp case, and why
NOT_DIFFERENTIATED = {"const": "has no inputs",
                      "stop_gradient": "zero by definition; see test_stop_gradient"}


def test_stop_gradient_passes_values_and_blocks_derivatives():
    x = normal(4)
    f = lambda x: ew.add(ew.mul(ew.stop_gradient(x), x), x)
    y, t = nad.jvp(f, x, np.ones(4))
    np.testing.assert_allclose(y, x * x + x)
    np.testing.assert_allclose(t, x + 1.0)  # d/dx (c·x + x) with c = x held fixed


def _cases():
    return [pytest.param(*case, id=f"{name}-{i}")
            for name, cases in sorted(JVP_CASES.items()) for i, case in enumerate(cases)]


def _newtonad_primitives() -> dict:
    """The primitives newtonad defines (tests elsewhere may register their own)."""
    from newtonad.ad.primitives import Primitive, core, elementwise, linalg, reductions, structural

    return {p.name: p for mod in (core, elementwise, linalg, reductions, structural)
            for p in vars(mod).values() if isinstance(p, Primitive)}


def test_every_primitive_has_a_jvp_case():
    missing = set(_newtonad_primitives()) - set(JVP_CASES) - set(NOT_DIFFERENTIATED)
    assert not missing, f"primitives without a jvp test: {sorted(missing)}"


@pytest.mark.parametrize("f, x, smooth", _cases())
def test_jvp_against_central_differences(f, x, smooth):
    check_jvp(f, x)


@pytest.mark.parametrize("f, x, smooth", _cases())
def test_vjp_agrees_with_jvp(f, x, smooth):
    check_vjp_vs_jvp(f, x)


@pytest.mark.parametrize("f, x, smooth", _cases())
def test_second_order_through_forward_over_reverse(f, x, smooth):
    if not smooth:
        pytest.skip("piecewise-linear: the Hessian is zero almost everywhere, nothing to compare")
    w = np.random.default_rng(3).standard_normal(np.shape(f(x)))
    check_hvp(lambda x: np.sum(w * f(x)), x)


# ---- transposes: <L v, w> == <v, L^T w> ------------------------------------------------------

def _slot(a):
    a = np.asarray(a)
    return Slot(tuple(a.shape), a.dtype.name)


# name -> list of (function of its operands, operand values, which operands are linear)
TRANSPOSE_CASES: dict[str, list] = {
    "neg": [(ew.neg_p, [normal(3, 4)], [True])],
    "add": [(ew.add_p, [normal(3, 1), normal(4)], [True, True])],
    "sub": [(ew.sub_p, [normal(3, 1), normal(4)], [True, True])],
    "mul": [(ew.mul_p, [normal(3, 4, 2), normal(4, 1)], [True, False]),
            (ew.mul_p, [normal(4, 1), normal(3, 4, 2)], [False, True])],
    "div": [(ew.div_p, [normal(3, 4), positive(4)], [True, False])],
    "select": [(ew.select_p, [normal(3, 4) > 0, normal(3, 4), normal(4)], [False, True, True])],
    "convert": [(lambda x: ew.convert(x, dtype="float64"), [normal(4)], [True])],
    "reduce_sum": [(lambda x: rd.reduce_sum(x, axes=(0, 2)), [normal(3, 4, 5)], [True])],
    "linear_scan": [(lambda a, b: rd.linear_scan(a, b, axis=1), [normal(3, 4), normal(3, 4)],
                     [False, True]),
                    (lambda a, b: rd.linear_scan(a, b, axis=0, reverse=True),
                     [normal(5, 2), normal(5, 2)], [False, True])],
    "cumsum": [(lambda x: rd.cumsum(x, axis=1), [normal(3, 4)], [True]),
               (lambda x: rd.cumsum(x, axis=0, reverse=True), [normal(5, 2)], [True])],
    "reshape": [(lambda x: st.reshape(x, (6, 2)), [normal(3, 4)], [True])],
    "transpose": [(lambda x: st.transpose(x, (1, 2, 0)), [normal(2, 3, 4)], [True])],
    "broadcast_to": [(lambda x: st.broadcast_to(x, (2, 3, 4)), [normal(3, 1)], [True])],
    "slice": [(lambda x: st.slice_(x, [(4, None, -2), (1, 3, 1)]), [normal(5, 3)], [True])],
    "unslice": [(lambda x: st.unslice(x, (5, 4), [(1, 5, 2), (0, 3, 1)]), [normal(2, 3)], [True])],
    "concatenate": [(lambda a, b, c: st.concatenate([a, b, c], 1),
                     [normal(2, 1), normal(2, 3), normal(2, 2)], [True, True, True])],
    "roll": [(lambda x: st.roll(x, 3, 1), [normal(2, 5, 2)], [True]),
             (lambda x: st.roll(x, 1, 0), [normal(4)], [True])],
    "gather": [(lambda x, i: st.gather(x, i, 1), [normal(2, 5), IDX.reshape(3, 2)], [True, False])],
    "scatter_add": [(lambda y, i: st.scatter_add(y, i, 0, (5, 2)), [normal(6, 2), IDX],
                     [True, False])],
    "einsum": [(lambda a, b: la.einsum("ijk,jl->il", a, b), [normal(2, 3, 4), normal(3, 2)],
                [True, False]),
               (lambda a, b: la.einsum("ijk,jl->il", a, b), [normal(2, 3, 4), normal(3, 2)],
                [False, True])],
}


def test_every_linear_primitive_has_a_transpose_case():
    linear = {name for name, p in _newtonad_primitives().items() if p.transpose is not None}
    assert linear == set(TRANSPOSE_CASES)


def _transpose_cases():
    return [pytest.param(*case, id=f"{name}-{i}")
            for name, cases in sorted(TRANSPOSE_CASES.items()) for i, case in enumerate(cases)]


@pytest.mark.parametrize("fn, operands, linear", _transpose_cases())
def test_transpose_dot_product(fn, operands, linear):
    traced = trace_function(fn, [_slot(a) for a in operands])
    program, closed = traced.program, traced.closed
    assert not closed
    (Lv,) = evaluate(program, *operands)
    transposed = transpose_program(program, linear)
    w = np.random.default_rng(11).standard_normal(Lv.shape)
    fixed = [a for a, lin in zip(operands, linear) if not lin]
    cts = evaluate(transposed, *fixed, w)
    lhs = float(np.sum(Lv * w))
    rhs = sum(float(np.sum(v * ct)) for v, ct in
              zip([a for a, lin in zip(operands, linear) if lin], cts))
    assert np.isclose(lhs, rhs, rtol=1e-12, atol=1e-12), (lhs, rhs)
    for v, ct in zip([a for a, lin in zip(operands, linear) if lin], cts):
        assert ct.shape == np.shape(v)


def test_transpose_refuses_a_nonlinear_program():
    program = trace_function(lambda x: ew.sin_p(x), [Slot((3,))]).program
    with pytest.raises(ValueError, match="not linear"):
        transpose_program(program, [True])


def test_transpose_rule_checks_bilinear_operands():
    program = trace_function(lambda x: ew.mul_p(x, x), [Slot((3,))]).program
    with pytest.raises(ValueError, match="exactly one linear operand"):
        transpose_program(program, [True])


def test_rule_counts_match_seed_expectations():
    """Seed 001: transpose rules are a minority (JAX: about 40% of jvp rules)."""
    prims = _newtonad_primitives()
    jvp = [p for p in prims.values() if p.jvp is not None]
    transpose = [p for p in prims.values() if p.transpose is not None]
    assert len(prims) >= 55
    assert 0.2 < len(transpose) / len(jvp) < 0.5


# ---- completeness: what every primitive carries, in one place -------------------------------

def _all_newtonad_primitives() -> dict:
    """Every primitive the families of newtonad.ad.primitives define."""
    from newtonad.ad import primitives as P

    return {p.name: p for mod in (P.core, P.structural, P.elementwise, P.reductions, P.linalg,
                                  P.special, P.sorting, P.decompositions, P.sparse_matmul)
            for p in vars(mod).values() if isinstance(p, P.Primitive)}


def test_every_primitive_is_complete():
    """A shape rule, an evaluator, a jvp rule, a kind, a transpose rule exactly when it
    names linear arguments, and a compiled lowering or the explicit NumPy fallback."""
    from newtonad.ad.engine.numba_plan import SUPPORTED
    from newtonad.ad.primitives.core import KINDS

    lowered = {getattr(s, "name", s) for s in SUPPORTED}  # by name or by primitive object
    prims = _all_newtonad_primitives()
    assert len(prims) >= 100
    for name, p in prims.items():
        assert callable(p.shape_rule) and callable(p.impl), name
        assert p.jvp is not None or name == "const", f"{name} has no jvp rule"
        assert p.kind in KINDS, name
        assert (p.transpose is not None) == bool(p.linear_in), f"{name}: linear_in vs transpose"
        assert (name in lowered) != p.numpy_only, f"{name}: a lowering or numpy_only, not both"


def test_every_compiled_elementwise_primitive_has_a_scalar_expression():
    """The engine fuses every elementwise primitive not marked numpy_only: each needs its
    one entry in the expression table, found by the primitive object."""
    from newtonad.ad.engine.numba_ops import EXPRESSIONS

    for name, p in _all_newtonad_primitives().items():
        if p.kind == "elementwise" and not p.numpy_only:
            assert p in EXPRESSIONS, f"{name}: no scalar expression, and not numpy_only"


def test_recompute_weights_price_cheap_arithmetic_below_transcendentals():
    weight = {name: p.recompute_weight([Slot((4,))] * 2, Slot((4,)))
              for name, p in _all_newtonad_primitives().items()}
    assert weight["broadcast_to"] == weight["slice"] == weight["transpose"] == 0
    assert weight["mul"] == weight["add"] == weight["select"] == 1
    assert weight["div"] == weight["sqrt"] == 8
    assert weight["exp"] == weight["pow"] == 128
    assert weight["einsum"] is None and weight["reduce_sum"] is None  # barriers
    assert weight["erf"] is None  # special functions are not recomputed
    reshape = REGISTRY["reshape"]
    assert reshape.recompute_weight([Slot((4, 1))], Slot((1, 4))) == 0  # unit axes only
    assert reshape.recompute_weight([Slot((2, 3))], Slot((3, 2))) is None  # moves elements


def test_jvp_rules_are_told_the_frame_layout():
    """The rule receives a Frame as its first argument (no global layout to read)."""
    from newtonad.ad import transforms as tf
    from newtonad.ad.primitives.core import Frame, Primitive

    seen = []

    def jvp(frame, primals, tangents, out):
        seen.append(frame)
        return ew.scale(frame, tangents[0], 3.0)

    triple = Primitive("test_triple_seen", impl=lambda x: 3.0 * x, shape=lambda x: x, jvp=jvp)
    program = trace_function(lambda x: triple(x), [Slot((2,))]).program
    x = np.array([1.0, 2.0])
    for k in (None, 3):
        V = np.ones((2,) + (() if k is None else (k,)))
        _, t = evaluate(tf.jvp_program(program, k), x, V)
        np.testing.assert_allclose(t, 3.0 * V)
    assert seen == [Frame(None), Frame(3)]
    assert Frame(3).cols == (3,) and Frame(None).cols == () and not Frame(None).framed


def test_a_new_primitive_brings_its_algebra_with_it():
    """simplify and remat read a primitive's properties, not its name: a primitive defined
    in one place (here, a test) is simplified and priced like the built-in ones."""
    from newtonad.ad import remat
    from newtonad.ad import transforms as tf
    from newtonad.ad.primitives.core import Algebra, Primitive

    flip = Primitive("test_flip", impl=np.negative, shape=lambda x: x,
                     jvp=lambda frame, p, t, out: flip(t[0]), transpose=lambda ct, x: [flip(ct)],
                     weight=2, algebra=Algebra(involution=True))
    times = Primitive("test_times", impl=np.multiply, shape=ew.broadcast_shape,
                      jvp=lambda frame, p, t, out: None, weight=1,
                      algebra=Algebra(left_identity=1.0, right_identity=1.0,
                                      scalar_operands=True))
    program = trace_function(lambda x: times(1.0, flip(flip(ew.sin(x)))), [Slot((3,))]).program
    simplified = tf.simplify(program)
    assert [s.primitive.name for s in simplified.steps] == ["sin"]
    (step,) = [s for s in program.steps if s.primitive is flip][:1]
    assert remat.recompute_cost(program, step) == 2 * 3


def test_transforms_recognise_no_primitive_by_name():
    """Transformations and rematerialisation ask the primitive, never compare its name."""
    import re
    from pathlib import Path

    ad = Path(nad.__file__).parent / "ad"
    for module in ("transforms.py", "remat.py", "trace.py", "eager.py", "var.py"):
        source = (ad / module).read_text()
        assert not re.search(r"primitive\.name\s*(==|!=|in\b)|name\s+in\s*\(|name\s*==\s*\"",
                             source), module


# ---- rotations: np.roll and the concatenation of a periodic stencil --------------------------

def _primitives_of(f, x):
    return [s.primitive.name for s in trace_function(f, [_slot(x)]).program.steps]


@pytest.mark.parametrize("f, shape", [
    (lambda u: np.concatenate([u[-1:], u[:-1]]) * u, (6,)),          # left neighbour, periodic
    (lambda u: np.concatenate([u[2:], u[:2]]) * u, (6,)),            # right neighbours
    (lambda u: np.roll(u, 3) * u, (6,)),
    (lambda u: np.concatenate([u[:, 4:], u[:, :4]], axis=1) * u, (3, 6)),  # a later axis
])
def test_a_rotation_written_as_slices_is_one_roll_step(f, shape):
    x = normal(*shape)
    names = _primitives_of(f, x)
    assert names.count("roll") == 1 and "concatenate" not in names, names
    assert np.array_equal(evaluate(trace_function(f, [_slot(x)]).program, x)[0], f(x))
    check_jvp(f, x)
    check_vjp_vs_jvp(f, x)


@pytest.mark.parametrize("f", [
    lambda u: np.concatenate([u[-1:], u[:-2]]),                  # an entry left out
    lambda u: np.concatenate([u[:-1], u[-1:]]),                  # the array itself, in order
    lambda u: np.concatenate([u[-2:], u[:-2:2]]),                # a strided piece
    lambda u: np.concatenate([u[-1:], np.sin(u)[:-1]]),          # pieces of two arrays
])
def test_other_concatenations_of_slices_stay_concatenations(f):
    x = normal(6)
    names = _primitives_of(f, x)
    assert "roll" not in names, names
    assert np.array_equal(evaluate(trace_function(f, [_slot(x)]).program, x)[0], f(x))
