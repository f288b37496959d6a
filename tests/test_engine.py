"""The numba engine agrees with the NumPy reference engine.

Compiling a kernel takes about a second, so primitives are batched into a few
programs with many outputs, and every compiled runner is shared by the module
(``lru_cache`` in the engine). Kernels go to one temporary cache directory per session.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any

import numpy as np
import pytest

import newtonad as nad
from newtonad._programs import traced_at
from newtonad.ad import primitives as P
from newtonad.ad import transforms as tf
from newtonad.ad.engine import compile_program
from newtonad.ad.program import Program

from .builders import Builder

RTOL = 1e-12


@pytest.fixture(scope="module", autouse=True)
def kernel_cache(tmp_path_factory):
    """One fresh kernel cache for this module, and the numba engine registered."""
    old = os.environ.get("NEWTONAD_CACHE_DIR")
    path = tmp_path_factory.mktemp("newtonad-cache")
    os.environ["NEWTONAD_CACHE_DIR"] = str(path)
    from newtonad.ad.engine import ENGINES, numba_engine

    assert ENGINES["numba"] is numba_engine.compile_program
    yield path
    if old is None:
        os.environ.pop("NEWTONAD_CACHE_DIR", None)
    else:
        os.environ["NEWTONAD_CACHE_DIR"] = old


# ---- running programs on both engines ----------------------------------------------------

def run_both(program: Program, *inputs: Any) -> tuple[tuple, tuple]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no silent fallback to the numpy engine
        fast = compile_program(program, "numba")(*inputs)
    ref = compile_program(program, "numpy")(*inputs)
    return fast, ref


def assert_agree(program: Program, *inputs: Any, rtol: float = RTOL) -> None:
    fast, ref = run_both(program, *inputs)
    assert len(fast) == len(ref) == len(program.outputs)
    for n, (a, b, slot) in enumerate(zip(fast, ref, program.out_slots)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == slot.shape == b.shape, (n, a.shape, b.shape)
        if b.dtype == bool or a.dtype == bool:
            np.testing.assert_array_equal(a, b, err_msg=f"output {n}")
        else:
            scale = np.max(np.abs(b[np.isfinite(b)]), initial=1.0)
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale,
                                       err_msg=f"output {n} of {program!r}")


rng = np.random.default_rng(20261129)


# ---- elementwise primitives -----------------------------------------------------------------

UNARY_ANY = ["neg", "exp", "expm1", "sin", "cos", "tan", "arctan", "sinh", "cosh", "tanh",
             "square", "reciprocal", "abs", "sign", "floor", "ceil", "stop_gradient"]
UNARY_UNIT = ["log", "log1p", "sqrt", "arcsin", "arccos"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "arctan2", "lt", "le", "gt",
          "ge", "eq", "ne", "logical_and", "logical_or"]


#: The elementwise program's outputs come in these groups; each group is checked by a kernel
#: of its own. numba's compile time grows faster than a kernel's length: one kernel of all
#: 151 outputs took 30-36 s of CPU, these ten 24 s together, and pytest-xdist can spread
#: them over its workers.
ELEMENTWISE_GROUPS = ("unary", "powers", "binary arithmetic", "comparisons",
                      "select and convert", "special values", "special functions",
                      "special functions on (0, 1)", "remainders", "frames")


@pytest.fixture(scope="module")
def elementwise_program():
    """(program, inputs, groups): every elementwise primitive in one program; ``groups``
    maps each of :data:`ELEMENTWISE_GROUPS` to the indices of its outputs."""
    b = Builder()
    groups: dict[str, range] = {}

    def group(name: str) -> None:
        """The outputs since the last group are group ``name``."""
        start = max((g.stop for g in groups.values()), default=0)
        groups[name] = range(start, len(b.outputs))

    x = b.input((4, 3))
    u = b.input((4, 3))          # in (0.1, 0.9): the domain of log, arcsin, ...
    row = b.input((3,))
    col = b.input((4, 1))
    s = b.input(())
    z = b.input((4, 3))          # zeros, infinities and NaNs
    frame = b.input((4, 3, 2))
    for name in UNARY_ANY:
        b.op(name, x, out=True)
    for name in UNARY_UNIT:
        b.op(name, u, out=True)
    group("unary")
    for n in (0, 1, 2, 3, 5, -1, -3):
        b.op("integer_pow", x, n=n, out=True)
    b.op("pow", u, row, out=True)
    b.op("pow", u, s, out=True)
    group("powers")
    for name in BINARY:
        b.op(name, x, row, out=True)
        b.op(name, col, x, out=True)
        b.op(name, s, x, out=True)
        if name == "arctan2":
            group("binary arithmetic")
    group("comparisons")
    cond = b.op("lt", x, row)
    b.op("select", cond, x, col, out=True)
    b.op("select", cond, s, b.const(2.5), out=True)
    b.op("logical_not", cond, out=True)
    b.op("convert", cond, dtype="float64", out=True)
    b.op("convert", x, dtype="int64", out=True)
    b.op("convert", x, dtype="bool", out=True)
    group("select and convert")
    for name in ("maximum", "minimum", "add", "mul", "div", "eq", "ne", "lt"):
        b.op(name, z, x, out=True)
    for name in ("sign", "abs", "exp", "log", "sqrt", "floor"):
        b.op(name, z, out=True)
    group("special values")
    # special functions (newtonad.ad.primitives.special) that numba lowers
    special_any = ("erf", "erfc", "gammaln", "expit", "log_expit", "arcsinh", "cbrt", "rint",
                   "trunc", "entr")
    for name in special_any:
        b.op(name, x, out=True)
        b.op(name, z, out=True)
    group("special functions")
    for name in ("logit", "arctanh", "entr"):
        b.op(name, u, out=True)
    b.op("logit", b.op("mul", u, b.const(0.3)), out=True)  # below 1/4: the other branch
    b.op("logit", z, out=True)
    b.op("arccosh", b.op("add", u, b.const(1.0)), out=True)
    b.op("expit", b.op("mul", x, b.const(400.0)), out=True)  # no overflow either side
    b.op("log_expit", b.op("mul", x, b.const(400.0)), out=True)
    for name in ("xlogy", "xlog1py"):
        b.op(name, x, u, out=True)
        b.op(name, z, u, out=True)
        b.op(name, s, z, out=True)
    group("special functions on (0, 1)")
    for name in ("hypot", "remainder", "fmod", "floor_divide"):
        b.op(name, x, row, out=True)
        b.op(name, col, x, out=True)
        b.op(name, z, x, out=True)
        b.op(name, x, z, out=True)
    b.op("hypot", b.op("mul", x, b.const(1e200)), row, out=True)  # scaled: no overflow
    group("remainders")
    # frames: a primal broadcast against the trailing column axis
    lifted = b.op("reshape", x, shape=(4, 3, 1))
    prod = b.op("mul", frame, lifted, out=True)
    b.op("add", b.op("exp", lifted), b.op("sin", prod), out=True)
    b.op("mul", frame, b.const([2.0, -1.0]), out=True)
    b.op("mul", b.op("mul", x, b.const(3.0)), b.const([[1.5]]), out=True)
    group("frames")
    program = b.build()
    z_val = np.array([[0.0, -0.0, np.inf], [-np.inf, np.nan, 1.0],
                      [2.0, -3.0, 0.0], [np.nan, 5.0, -1e-300]])
    inputs = (rng.normal(size=(4, 3)), rng.uniform(0.1, 0.9, size=(4, 3)), rng.normal(size=3),
              rng.normal(size=(4, 1)), np.array(0.7), z_val, rng.normal(size=(4, 3, 2)))
    return program, inputs, groups


def test_elementwise_groups_cover_every_output_once(elementwise_program):
    program, _, groups = elementwise_program
    assert tuple(groups) == ELEMENTWISE_GROUPS
    assert sorted(i for g in groups.values() for i in g) == list(range(len(program.outputs)))


@pytest.mark.parametrize("group", ELEMENTWISE_GROUPS)
def test_elementwise_primitives(elementwise_program, group):
    program, inputs, groups = elementwise_program
    outputs = tuple(program.outputs[i] for i in groups[group])
    part = Program(program.slots, program.steps, program.inputs, outputs)
    with np.errstate(all="ignore"):
        assert_agree(part, *inputs)


def test_every_elementwise_primitive_is_covered(elementwise_program):
    program, _, _ = elementwise_program
    used = {s.primitive for s in program.steps}
    from newtonad.ad.engine.kinds import ELEMENTWISE

    assert ELEMENTWISE - used == set()


def test_integer_and_bool_slots():
    b = Builder()
    i = b.input((4, 3), "int64")
    j = b.input((3,), "int64")
    x = b.input((4, 3))
    for name in ("add", "sub", "mul", "maximum", "minimum", "div", "eq", "lt"):
        b.op(name, i, j, out=True)
    for name in ("neg", "abs", "sign", "square"):
        b.op(name, i, out=True)
    b.op("integer_pow", i, n=3, out=True)
    b.op("add", i, x, out=True)
    b.op("convert", i, dtype="float64", out=True)
    flag = b.op("gt", i, b.const(0, "int64"))
    b.op("logical_and", flag, b.op("lt", x, b.const(0.0)), out=True)
    b.op("logical_or", flag, b.op("lt", x, b.const(0.0)), out=True)
    b.op("select", flag, i, b.op("neg", i), out=True)
    b.op("reduce_sum", i, axes=(0,), out=True)
    b.op("reduce_max", i, axes=(1,), out=True)
    b.op("reduce_min", i, axes=(0, 1), out=True)
    b.op("cumsum", i, axis=1, reverse=False, out=True)
    b.op("exp", i, out=True)
    ints = rng.integers(-5, 6, size=(4, 3))
    assert_agree(b.build(), ints, rng.integers(-3, 4, size=3).astype(np.int64) + 7,
                 rng.normal(size=(4, 3)))


# ---- reductions and structure -----------------------------------------------------------------

def test_reductions_and_cumsum():
    b = Builder()
    x = b.input((4, 3))
    f = b.input((4, 3, 2))
    for name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
        for axes in ((0,), (1,), (0, 1)):
            b.op(name, x, axes=axes, out=True)
        b.op(name, f, axes=(0, 1), out=True)
        b.op(name, f, axes=(1,), out=True)
    # a reduction feeding later elementwise work, and a reduction of a fused expression
    total = b.op("reduce_sum", b.op("exp", x), axes=(0, 1))
    b.op("div", b.op("exp", x), total, out=True)
    colmax = b.op("reduce_max", x, axes=(0,))
    b.op("sub", x, colmax, out=True)
    for axis in (0, 1):
        for reverse in (False, True):
            b.op("cumsum", x, axis=axis, reverse=reverse, out=True)
    b.op("cumsum", f, axis=1, reverse=True, out=True)
    x_val = rng.normal(size=(4, 3))
    x_val[1, 2] = np.nan  # NaN propagates through max / min
    f_val = rng.normal(size=(4, 3, 2))
    assert_agree(b.build(), x_val, f_val)


def test_structural_primitives():
    b = Builder()
    x = b.input((4, 3))
    f = b.input((4, 3, 2))
    row = b.input((3,))
    b.op("reshape", x, shape=(3, 4), out=True)
    b.op("reshape", x, shape=(12,), out=True)
    b.op("reshape", b.op("exp", x), shape=(2, 6), out=True)
    b.op("reshape", x, shape=(4, 1, 3, 1), out=True)
    b.op("transpose", x, perm=(1, 0), out=True)
    b.op("transpose", f, perm=(2, 0, 1), out=True)
    b.op("add", b.op("transpose", x, perm=(1, 0)), b.const(1.0), out=True)
    b.op("broadcast_to", row, shape=(4, 3), out=True)
    b.op("broadcast_to", b.const(2.0), shape=(2, 3), out=True)
    b.op("broadcast_to", b.op("reshape", row, shape=(3, 1)), shape=(3, 5), out=True)
    b.op("slice", x, slices=((3, None, -1), (2, None, -2)), out=True)
    b.op("slice", x, slices=((1, 4, 2),), out=True)
    b.op("slice", f, slices=((2, 0, -1), (0, 3, 2)), out=True)
    sl = b.op("slice", x, slices=((3, 0, -2), (1, 3, 1)))
    b.op("unslice", sl, shape=(4, 3), slices=((3, 0, -2), (1, 3, 1)), out=True)
    b.op("unslice", b.op("sin", sl), shape=(4, 3), slices=((3, 0, -2), (1, 3, 1)), out=True)
    b.op("unslice", f, shape=(6, 3), slices=((1, 5, 1),), out=True)
    # sums of unslices (gradients of stencils), with a dense term
    u1 = b.op("unslice", b.op("slice", x, slices=((1, 4, 1),)), shape=(4, 3), slices=((0, 3, 1),))
    u2 = b.op("unslice", b.op("slice", x, slices=((0, 3, 1),)), shape=(4, 3), slices=((1, 4, 1),))
    b.op("add", b.op("add", u1, u2), b.op("cos", x), out=True)
    b.op("concatenate", x, b.op("exp", x), axis=0, out=True)
    b.op("concatenate", x, x, b.op("neg", x), axis=1, out=True)
    b.op("concatenate", f, f, axis=2, out=True)
    b.op("roll", x, shift=1, axis=0, out=True)
    b.op("roll", b.op("exp", f), shift=2, axis=1, out=True)
    b.op("roll", f, shift=1, axis=2, out=True)
    assert_agree(b.build(), rng.normal(size=(4, 3)), rng.normal(size=(4, 3, 2)), rng.normal(size=3))


def test_gather_scatter_repeated_and_negative_indices():
    b = Builder()
    x = b.input((5, 3))
    f = b.input((5, 3, 2))
    idx = b.input((6,), "int64")
    idx2 = b.input((2, 2), "int64")
    g0 = b.op("gather", x, idx, axis=0, out=True)
    b.op("gather", x, idx2, axis=1, out=True)
    b.op("gather", f, idx, axis=0, out=True)
    b.op("gather", b.op("exp", x), idx, axis=0, out=True)
    b.op("scatter_add", g0, idx, axis=0, shape=(5, 3), out=True)
    b.op("scatter_add", b.op("gather", f, idx2, axis=1), idx2, axis=1, shape=(5, 3), out=True)
    b.op("add", b.op("scatter_add", b.op("sin", g0), idx, axis=0, shape=(5, 3)), x, out=True)
    assert_agree(b.build(), rng.normal(size=(5, 3)), rng.normal(size=(5, 3, 2)),
                 np.array([0, 4, 4, -1, 2, 0]), np.array([[2, -3], [1, 1]]))


def test_einsum_blas_and_loops():
    b = Builder()
    A = b.input((4, 3))
    B = b.input((3, 5))
    v = b.input((3,))
    w = b.input((4,))
    F = b.input((3, 2))
    G = b.input((4, 3, 2))
    s = b.input(())
    for spec, a, c in [("ij,jk->ik", A, B), ("ij,j->i", A, v), ("i,i->", v, v), ("ij,i->j", A, w),
                       ("ij,ja->ia", A, F),
                       ("ia,ij->ja", b.op("exp", b.op("reshape", w, shape=(4, 1))), A),
                       ("ija,ij->ja", G, A), ("jk,ij->ki", B, A), ("i,j->ij", w, v),
                       ("ij,ij->i", A, A), ("ijk,jk->i", G, F), ("ij,kj->ik", A, A),
                       ("ij,->ij", A, s), ("ia,a->ia", F, b.const([1.0, -2.0]))]:
        b.op("einsum", a, c, spec=spec, out=True)
    assert_agree(b.build(), rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=3),
                 rng.normal(size=4), rng.normal(size=(3, 2)), rng.normal(size=(4, 3, 2)),
                 np.array(1.5))


def test_stored_slot_fed_by_opaque_steps():
    """A reshaped sum of two einsums is stored after the einsums run (ordering)."""
    b = Builder()
    x = b.input((5,))
    V = b.input((5, 5))
    cos_column = b.op("reshape", b.op("cos", x), shape=(5, 1))
    e1 = b.op("einsum", b.op("mul", V, cos_column), x, spec="ia,j->ija")
    e2 = b.op("einsum", b.op("sin", x), V, spec="i,ja->ija")
    b.op("reshape", b.op("add", e1, e2), shape=(25, 5), out=True)
    assert_agree(b.build(), rng.normal(size=5), rng.normal(size=(5, 5)))


def test_edge_programs():
    """Outputs that are inputs, constants, repeated, or views of one another."""
    b = Builder()
    x = b.input((4, 3))
    s = b.input(())
    e = b.op("exp", x)
    r = b.op("reshape", e, shape=(12,))
    b.ret(x, s, e, r, e, b.const(2.0), b.const([1.0, 2.0]), b.op("reduce_sum", x, axes=(0, 1)))
    assert_agree(b.build(), rng.normal(size=(4, 3)), np.array(3.0))


# ---- derived programs of the three benchmark objectives ---------------------------------------

def residuals_of(residual: Program, *inputs: Any) -> list:
    """What the linear program takes before V: the inputs, then the residual outputs."""
    outs = compile_program(residual, "numpy")(*inputs)
    return [*inputs, *outs[2:]]  # the residual program returns f and ∇f first


def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def logistic(w, X, y, lam):
    return np.sum(np.logaddexp(0, -y * (X @ w))) + 0.5 * lam * w @ w


def logistic_log1p(w, X, y, lam):
    return np.sum(np.log1p(np.exp(-y * (X @ w)))) + 0.5 * lam * (w @ w)


def minimal_surface(u, h):
    du = (u[1:, :-1] - u[:-1, :-1]) * h
    dv = (u[:-1, 1:] - u[:-1, :-1]) * h
    return np.sum(np.sqrt(1 + du ** 2 + dv ** 2))


def _objectives():
    X = rng.normal(size=(30, 7))
    y = np.sign(rng.normal(size=30))
    return {
        "rosenbrock": (rosenbrock, rng.normal(size=9), ()),
        "logistic": (logistic, rng.normal(size=7), (X, y, np.array(0.3))),
        "logistic_log1p": (logistic_log1p, rng.normal(size=7), (X, y, np.array(0.3))),
        "minimal_surface": (minimal_surface, rng.normal(size=(6, 6)), (np.array(0.2),)),
    }


OBJECTIVES = _objectives()


@pytest.mark.parametrize("name, k", [("rosenbrock", 1), ("rosenbrock", 3), ("logistic", 3),
                                     ("logistic_log1p", 1), ("minimal_surface", 1),
                                     ("minimal_surface", 3)])
def test_derived_programs_agree(name, k):
    f, x, args = OBJECTIVES[name]
    program = nad.trace(f, x, *args)
    V = rng.normal(size=x.shape + (k,))
    assert_agree(program, x, *args)
    assert_agree(tf.value_and_grad_program(program), x, *args)
    assert_agree(tf.hvp_program(program, k), x, *args, V)
    residual, linear = tf.linearized_hvp(program, k)
    assert_agree(residual, x, *args)
    assert_agree(linear, *residuals_of(residual, x, *args), V)


# ---- small frames: columns written out, the spatial loop vectorised ---------------------------

def stencil_objective(u, w):
    """A 2-D stencil with a broadcast row, and strided, reversed and transposed slices."""
    a = (u[2:, 1:] - u[:-2, :-1]) * w
    b = u[::-1, ::2][1:, :] * u.T[::2, 1:].T
    return np.sum(np.sqrt(1 + a * a)) + np.sum(b * np.sin(b))


@pytest.fixture(scope="module")
def stencil():
    u, w = rng.normal(size=(7, 9)), rng.normal(size=8)
    return nad.trace(stencil_objective, u, w), u, w


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_stencil_frames_agree(stencil, k):
    """Frames of k <= ``unroll`` columns are written out, wider ones loop: both agree with numpy."""
    program, u, w = stencil
    V = rng.normal(size=u.shape + (k,))
    assert_agree(tf.hvp_program(program, k), u, w, V)
    assert_agree(tf.jvp_program(program, k), u, w, V)


def test_small_frames_are_written_out_column_by_column(stencil):
    from newtonad.ad.engine import loop_ir as ir
    from newtonad.ad.engine.numba_engine import lower
    from newtonad.ad.engine.options import LoweringOptions

    program = stencil[0]
    unroll = LoweringOptions.current().unroll

    def nodes(k):
        return [s for s, _ in ir.walk(lower(tf.hvp_program(program, k)).body)]

    small = nodes(unroll)
    assert {ir.Comment(f"i2 = {c}") for c in range(unroll)} <= set(small)
    # frames are stored through flat views, at literal strides, column by column
    stores = [s.target for s in small
              if isinstance(s, ir.Assign) and isinstance(s.target, ir.FlatLoad)]
    assert {t.terms[-1][0] for t in stores} >= {(None, 0, c) for c in range(unroll)}
    wide = nodes(unroll + 1)
    assert not any(isinstance(s, ir.Comment) and s.text.startswith("i2 = ") for s in wide)
    assert any(isinstance(s, ir.For) and s.var == ir.LoopVar(2) and isinstance(s.stop, ir.Scalar)
               for s in wide)  # an innermost loop with its bound read at run time
    # the same with the option: frames of unroll + 1 columns are written out too
    opts = LoweringOptions.current().replace(unroll=unroll + 1)
    assert ir.Comment(f"i2 = {unroll}") in {s for s, _ in ir.walk(
        lower(tf.hvp_program(program, unroll + 1), opts).body)}


def test_reductions_of_written_out_and_looped_nests():
    """Reductions whose target stays put in the innermost loop run in locals."""
    b = Builder()
    for shape in ((6, 5, 3), (6, 5, 7)):  # innermost axis written out / looped
        f = b.input(shape)
        e = b.op("sin", f)
        for name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
            for axes in ((0, 1), (1,), (2,), (0,)):
                b.op(name, e, axes=axes, out=True)
    f3, f7 = rng.normal(size=(6, 5, 3)), rng.normal(size=(6, 5, 7))
    f3[2, 1, 0] = f7[4, 3, 6] = np.nan  # NaN propagates through max / min
    assert_agree(b.build(), f3, f7)


# ---- random compositions -----------------------------------------------------------------------

def random_objective(seed: int):
    """A random scalar function mixing smooth maps, slices, reductions and broadcasts."""
    r = np.random.default_rng(seed)
    unary = [np.sin, np.cos, np.tanh, np.exp, lambda t: np.log1p(t * t), np.arctan,
             lambda t: np.sqrt(1 + t * t), np.square, lambda t: t ** 3, np.sinh]
    terms = []
    for _ in range(4):
        f1, f2 = r.choice(len(unary), 2)
        a = float(r.uniform(-1, 1))
        shift = int(r.integers(1, 3))
        axis = int(r.integers(0, 2))
        kind = int(r.integers(0, 4))

        def term(x, f1=f1, f2=f2, a=a, shift=shift, axis=axis, kind=kind):
            g = unary[f1](x * a)
            if kind == 0:
                h = g[shift:, :] * unary[f2](x[:-shift, :])
            elif kind == 1:
                h = g[:, ::-1] - unary[f2](x).T[::-1, :].T
            elif kind == 2:
                h = unary[f2](np.sum(g, axis=axis, keepdims=True) * 0.1) * x
            else:
                h = np.maximum(g, unary[f2](x)) + np.mean(x * x, axis=axis, keepdims=True)
            return np.sum(h) / h.size
        terms.append(term)
    return lambda x: sum(t(x) for t in terms)


@pytest.mark.parametrize("seed", range(4))
def test_random_compositions(seed):
    f = random_objective(seed)
    x = np.random.default_rng(seed + 100).normal(size=(5, 4)) * 0.7
    traced = traced_at(f, x, (), scalar=True)
    program, data = traced.program, traced.closed_values()  # the scales a: inputs after x
    V = rng.normal(size=x.shape + (2,))
    assert_agree(tf.value_and_grad_program(program), x, *data, rtol=1e-11)
    assert_agree(tf.hvp_program(program, 2), x, *data, V, rtol=1e-11)
    residual, linear = tf.linearized_hvp(program, 2)
    assert_agree(linear, *residuals_of(residual, x, *data), V, rtol=1e-11)


def random_program(seed: int) -> Program:
    """A random straight-line program over structural, reducing and elementwise steps."""
    r = np.random.default_rng(seed)
    b = Builder()
    pool = []  # (slot, shape)
    x = b.input((4, 3))
    f = b.input((4, 3, 2))
    v = b.input((3,))
    pool.extend([x, f, v])
    def sh(i): return b.slots[i].shape
    for _ in range(r.integers(8, 20)):
        a = pool[r.integers(len(pool))]
        kind = r.integers(0, 12)
        try:
            if kind < 3:
                name = ["exp", "sin", "tanh", "square", "neg", "cos", "arctan"][r.integers(7)]
                out = b.op(name, a) if name != "exp" else b.op("tanh", a)
            elif kind < 6:
                c = pool[r.integers(len(pool))]
                np.broadcast_shapes(sh(a), sh(c))
                out = b.op(["add", "mul", "sub", "maximum"][r.integers(4)], a, c)
            elif kind == 6 and len(sh(a)) >= 1:
                count = r.integers(1, len(sh(a)) + 1)
                axes = tuple(sorted(set(r.integers(0, len(sh(a)), size=count).tolist())))
                out = b.op(["reduce_sum", "reduce_max"][r.integers(2)], a, axes=axes)
            elif kind == 7 and len(sh(a)) >= 1 and sh(a)[0] > 1:
                n = sh(a)[0]
                sl = ((1, n, 1),) if r.random() < 0.5 else ((n - 1, None, -1),)
                s = b.op("slice", a, slices=sl)
                if r.random() < 0.5:
                    out = b.op("unslice", b.op("sin", s), shape=(n,), slices=sl)
                else:
                    out = s
            elif kind == 8 and len(sh(a)) >= 2:
                perm = tuple(r.permutation(len(sh(a))).tolist())
                out = b.op("transpose", a, perm=perm)
            elif kind == 9 and len(sh(a)) >= 1:
                out = b.op("reshape", a, shape=(int(np.prod(sh(a))),))
            elif kind == 10 and len(sh(a)) == 2:
                out = b.op("einsum", a, b.op("cos", a), spec="ij,kj->ik")
            elif kind == 11 and len(sh(a)) >= 1:
                out = b.op("cumsum", a, axis=int(r.integers(len(sh(a)))),
                           reverse=bool(r.random() < 0.5))
            else:
                continue
        except (ValueError, TypeError):
            continue
        pool.append(out)
    outs = pool[3:] if len(pool) > 3 else [x]
    k = r.integers(1, 4)
    chosen = [outs[i] for i in sorted(set(r.integers(0, len(outs), size=k).tolist()))]
    total = None
    for c in chosen:
        sc = b.op("reduce_sum", c, axes=tuple(range(len(sh(c))))) if sh(c) else c
        total = sc if total is None else b.op("add", total, sc)
    b.ret(*chosen, total)
    return b.build()


@pytest.mark.parametrize("seed", range(4))
def test_random_programs(seed):
    program = random_program(seed)
    r = np.random.default_rng(seed)
    assert_agree(program, r.normal(size=(4, 3)), r.normal(size=(4, 3, 2)), r.normal(size=3),
                 rtol=1e-11)


# ---- the runner's contract ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_run():
    program = tf.value_and_grad_program(nad.trace(rosenbrock, np.zeros(5)))
    return compile_program(program, "numba"), program


def test_outputs_are_fresh_unless_reuse_is_asked_for(small_run):
    run, _ = small_run
    x1, x2 = rng.normal(size=5), rng.normal(size=5)
    f1, g1 = run(x1)
    keep = g1.copy()
    f2, g2 = run(x2)
    np.testing.assert_array_equal(g1, keep)
    assert g1 is not g2
    reusing = run.reusing_outputs()
    a = reusing(x1)[1]
    b = reusing(x2)[1]
    assert a is b and run(x1)[1] is not a  # the opt-in is the sibling's alone
    np.testing.assert_array_equal(b, run(x2)[1])
    out = (np.empty(()), np.empty(5))
    res = run(x1, out=out)
    assert res[1] is out[1]
    np.testing.assert_array_equal(out[1], keep)


@pytest.mark.parametrize("shape, dtype, zero", [((), "float64", False), ((3,), "int64", True),
                                                 ((1000, 64), "float64", False),
                                                 ((0,), "bool", True)])
def test_aligned_array(shape, dtype, zero):
    from newtonad.ad.engine.numba_buffers import ALIGN_BYTES, aligned_array

    a = aligned_array(shape, dtype, zero)
    assert a.shape == shape and a.dtype == np.dtype(dtype)
    assert a.flags.c_contiguous and a.flags.writeable
    assert a.size == 0 or a.ctypes.data % ALIGN_BYTES == 0
    if zero:
        assert not a.any()


def test_large_outputs_and_arenas_start_on_a_cache_line():
    program = tf.hvp_program(nad.trace(rosenbrock, np.zeros(2000)), 4)
    run = compile_program(program, "numba")
    x, V = rng.normal(size=2000), rng.normal(size=(2000, 4))
    assert run(x, V)[0].ctypes.data % 64 == 0  # fresh output: 64 KB
    assert run.reusing_outputs()(x, V)[0].ctypes.data % 64 == 0
    # a program with intermediates in an arena: X @ V and tanh's derivative
    f = lambda w, X: np.sum(np.tanh(X @ w))
    run = compile_program(tf.hvp_program(nad.trace(f, np.zeros(50), np.zeros((300, 50))), 4),
                          "numba")
    arenas = [v for k, v in run.__globals__.items() if re.fullmatch(r"A\d+", k)]
    assert arenas and all(a.ctypes.data % 64 == 0 for a in arenas)


def test_inputs_are_checked_and_coerced(small_run):
    run, program = small_run
    x = rng.normal(size=10)[::2]  # not contiguous
    ref = compile_program(program, "numpy")(x)
    np.testing.assert_allclose(run(x)[1], ref[1], rtol=RTOL)
    np.testing.assert_allclose(run(list(x))[1], ref[1], rtol=RTOL)
    with pytest.raises(ValueError, match="shape"):
        run(np.zeros(6))
    with pytest.raises(TypeError):
        run()
    with pytest.raises(ValueError, match="out"):
        run(x, out=(np.empty(()), np.empty(4)))


def test_generated_kernel_is_readable_and_cached(small_run):
    """The kernel loops over the arrays, each program step it computes preceded by a
    comment showing the step; numba compiles it into its disk cache, with fast-math
    flags that keep NaN and infinity checks working."""
    from newtonad.ad.engine import loop_ir as ir
    from newtonad.ad.engine import numba_engine
    from newtonad.ad.engine.numba_codegen import describe

    run, program = small_run
    kernel = numba_engine.lower(program)
    assert run.source == kernel.source  # the runner's kernel is this one
    stmts = [s for s, _ in ir.walk(kernel.body)]
    assert any(isinstance(s, ir.For) and s.var == ir.LoopVar(0) for s in stmts)
    comments = {s.text for s in stmts if isinstance(s, ir.Comment)}
    squares = [describe(program, step) for step in program.steps
               if step.primitive.name == "square"]
    assert squares and set(squares) <= comments  # program steps as comments
    options = run.dispatcher.targetoptions
    assert isinstance(options["fastmath"], set) and options["fastmath"]
    assert not {"nnan", "ninf"} & options["fastmath"]
    assert run.dispatcher.stats.cache_path is not None  # cache=True


def test_unknown_primitive_falls_back_to_numpy():
    from newtonad.ad.engine import numba_engine

    name = "_engine_test_mystery"
    prim = P.REGISTRY.get(name) or P.Primitive(name, impl=lambda x: x * 2.0 + 1.0,
                                               shape=lambda x: x)
    b = Builder()
    x = b.input((3,))
    b.op(name, b.op("exp", x), out=True)
    program = b.build()
    with pytest.warns(numba_engine.NumbaFallbackWarning, match=name):
        run = compile_program(program, "numba")
    xv = rng.normal(size=3)
    np.testing.assert_allclose(run(xv)[0], np.exp(xv) * 2 + 1)
    del prim
