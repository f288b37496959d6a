"""Row-blocked regions of the numba engine agree with the NumPy reference engine.

Programs of matrix-product objectives (L2 logistic regression, least squares) run
their products and elementwise nests block by block over the rows of ``X``
(:class:`newtonad.ad.engine.row_blocks.RowBlock`). The lowering options make the block
small here (``row_block``) so regions form at small sizes; every case checks that the
region did (or did not) form, from the kernel's loop IR, and compares all outputs with
the reference evaluator to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest

import newtonad as nad
from newtonad._programs import traced_at
from newtonad.ad import transforms as tf
from newtonad.ad.engine import loop_ir as ir
from newtonad.ad.engine import numba_engine, numpy_eval
from newtonad.ad.engine.nest_lowering import lower_nest
from newtonad.ad.engine.numba_codegen import ARENA_NAME, Generator
from newtonad.ad.engine.numba_plan import Nest, make_plan
from newtonad.ad.engine.options import LoweringOptions
from newtonad.ad.engine.row_blocks import RowBlock, form_regions
from newtonad.ad.engine.where import Where
from newtonad.ad.program import Program

from .builders import Builder

RTOL = 1e-12
BLOCK = 16


pytestmark = pytest.mark.usefixtures("module_kernel_cache")


#: Blocks of ``BLOCK`` rows, regions from two blocks on.
SMALL_BLOCKS = LoweringOptions.current().replace(row_block=BLOCK, row_block_min_blocks=2)


@pytest.fixture
def small_blocks():
    return SMALL_BLOCKS


def logistic(w, X, y, lam):
    return np.sum(np.logaddexp(0, -y * (X @ w))) + 0.5 * lam * (w @ w)


def least_squares(x, A, b):
    return 0.5 * np.sum((A @ x - b) ** 2)


def logistic_data(m: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n)) / np.sqrt(n)
    y = np.sign(rng.normal(size=m))
    return rng.normal(size=n), (X, y, np.array(1e-2))


def lstsq_data(m: int, n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), (rng.normal(size=(m, n)), rng.normal(size=m))


def blocks_in(kernel) -> list[tuple[int, int]]:
    """(block, rows) of every row-blocked region of a kernel: its loop over blocks."""
    return [(s.step, s.stop) for s, _ in ir.walk(kernel.body)
            if isinstance(s, ir.For) and s.var == ir.Text("r0")]


def region_of(kernel) -> ir.For:
    """The loop over row blocks of a kernel with one row-blocked region."""
    (region,) = [s for s, _ in ir.walk(kernel.body)
                 if isinstance(s, ir.For) and s.var == ir.Text("r0")]
    return region


def block_view(kernel, j: int) -> str:
    """The name of the view of input ``j`` the region carves for each block (the rows
    ``r0:r0 + nb`` of the array the header binds to ``x<j>``)."""
    (array,) = [w for s in kernel.body if isinstance(s, ir.Line) and s.reads == (f"x{j}",)
                for w in s.writes]
    (view,) = [w for s in region_of(kernel).body if isinstance(s, ir.Line)
               and array in s.reads and "r0" in s.reads for w in s.writes]
    return view


def arena_views(kernel) -> dict[str, tuple[int, ...]]:
    """Shapes of the arrays the kernel carves from its arenas: its statements that read
    an arena, run on arenas of the kernel's sizes."""
    arenas = {ARENA_NAME[dtype]: np.zeros(size, dtype) for dtype, size in kernel.arenas}
    env: dict = dict(arenas)
    for s, _ in ir.walk(kernel.body):
        if isinstance(s, ir.Line) and set(s.reads) & arenas.keys():
            exec(s.text, {"np": np}, env)
    return {name: a.shape for name, a in env.items() if name not in arenas}


def compiled(program: Program, options: LoweringOptions = SMALL_BLOCKS):
    """The kernel of ``program`` and its runner."""
    kernel = numba_engine.lower(program, options)
    run = numba_engine.compile_program(program, options)
    assert run.source == kernel.source
    return kernel, run


def check(program: Program, inputs: tuple, blocks: list[tuple[int, int]]):
    """Run ``program`` on both engines, compare, and check its regions; return the kernel."""
    kernel, run = compiled(program)
    source = kernel.source
    assert blocks_in(kernel) == blocks, source
    got = run(*inputs)
    ref = numpy_eval.compile_program(program)(*inputs)
    assert len(got) == len(ref) == len(program.outputs)
    for n, (a, b) in enumerate(zip(got, ref)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (n, a.shape, b.shape)
        scale = np.max(np.abs(b), initial=1.0)
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * scale, err_msg=f"output {n}")
    return kernel


def traced(f, x, args) -> Program:
    return nad.trace(f, x, *args)


# ---- logistic regression ------------------------------------------------------------------

# m = 100 rows: six blocks of 16 and a remainder of 4; m = 40: two and a remainder of 8
@pytest.mark.parametrize("m", [100, 40])
def test_logistic_value_and_grad(small_blocks, m):
    w, args = logistic_data(m, 7)
    program = tf.value_and_grad_program(traced(logistic, w, args))
    kernel = check(program, (w, *args), [(BLOCK, m)])
    # X @ w and X.T @ u share the block of X (X.T @ u into the output for the first
    # block, into a temporary added to it for the others); the loss is summed over blocks
    region = region_of(kernel)
    x_block = block_view(kernel, 1)
    products = [s for s, _ in ir.walk(region.body) if isinstance(s, ir.Line) and x_block in s.reads]
    assert len(products) == 3, kernel.source
    einsums = [s.text for s, _ in ir.walk(region.body)
               if isinstance(s, ir.Comment) and "= einsum(s1, " in s.text]
    summed = [s.text for s, _ in ir.walk(region.body)
              if isinstance(s, ir.Comment) and "einsum(" in s.text
              and s.text.endswith("(summed over row blocks)")]
    assert len(einsums) == 1 and len(summed) == 1, kernel.source


@pytest.mark.parametrize("k", [None, 1, 3, 16])
def test_logistic_hvp(small_blocks, k):
    m, n = 100, 7
    w, args = logistic_data(m, n)
    program = tf.hvp_program(traced(logistic, w, args), k)
    V = np.random.default_rng(2).normal(size=(n,) if k is None else (n, k))
    kernel = check(program, (w, *args, V), [(BLOCK, m)])
    # the m x k intermediates hold one block: nothing of m rows is carved from the arena
    views = arena_views(kernel)
    assert views and all(shape[:1] != (m,) for shape in views.values()), views
    assert any(shape[:1] == (BLOCK,) for shape in views.values()), views


def test_logistic_linearized_hvp(small_blocks):
    """The residual program returns row-indexed intermediates (written block by block
    into the outputs); the linear program reads them by row."""
    m, n, k = 100, 7, 16
    w, args = logistic_data(m, n)
    residual, linear = tf.linearized_hvp(traced(logistic, w, args), k)
    assert any(s.shape[:1] == (m,) for s in residual.out_slots)  # row-indexed outputs
    check(residual, (w, *args), [(BLOCK, m)])
    res = numpy_eval.compile_program(residual)(w, *args)
    V = np.random.default_rng(3).normal(size=(n, k))
    check(linear, (w, *args, *res[2:], V), [(BLOCK, m)])


def test_row_indexed_intermediates_as_outputs(small_blocks):
    """``t = X @ w`` and ``u = exp(t)`` are outputs (whole arrays written per block);
    ``cumsum(u)`` reads ``u`` across blocks, and ``u / sum(u)`` needs the sum of all
    blocks, so both run after the region."""
    m, n = 50, 4
    b = Builder()
    X, w = b.input((m, n)), b.input((n,))
    t = b.op("einsum", X, w, spec="ij,j->i", out=True)
    u = b.op("exp", t, out=True)
    b.op("einsum", u, X, spec="i,ij->j", out=True)
    b.op("cumsum", u, axis=0, reverse=False, out=True)
    b.op("reduce_sum", b.op("mul", u, t), axes=(0,), out=True)
    b.op("div", u, b.op("reduce_sum", u, axes=(0,)), out=True)
    rng = np.random.default_rng(6)
    kernel = check(b.build(), (rng.normal(size=(m, n)), rng.normal(size=n)), [(BLOCK, m)])
    order = [s.text for s in kernel.body if isinstance(s, ir.Comment)]
    region = next(n for n, c in enumerate(order) if c.startswith("---- row blocks"))
    assert region < next(n for n, c in enumerate(order) if "cumsum(" in c)


def test_fewer_rows_than_a_block_forms_no_region(small_blocks):
    m, n = 12, 5
    w, args = logistic_data(m, n)
    trace = traced(logistic, w, args)
    check(tf.value_and_grad_program(trace), (w, *args), [])
    V = np.random.default_rng(4).normal(size=(n, 3))
    check(tf.hvp_program(trace, 3), (w, *args, V), [])


def test_default_settings_block_large_problems_only():
    """With the shipped settings a 20000 x 50 problem is blocked, a 200 x 50 one is not
    (lowered only: nothing is compiled)."""
    for m, n, blocks in ((20000, 50, 1), (200, 50, 0)):
        w, args = logistic_data(m, n)
        program = tf.hvp_program(traced(logistic, w, args), 4)
        options = LoweringOptions.current()
        kernel = numba_engine.lower(program, options)
        found = blocks_in(kernel)
        assert len(found) == blocks, kernel.source
        for block, rows in found:
            assert rows == m and block % 8 == 0 and rows >= options.row_block_min_blocks * block


# ---- least squares ------------------------------------------------------------------------

@pytest.mark.parametrize("k", [None, 2, 16])
def test_least_squares(small_blocks, k):
    m, n = 70, 6
    x, args = lstsq_data(m, n)
    trace = traced(least_squares, x, args)
    check(tf.value_and_grad_program(trace), (x, *args), [(BLOCK, m)])
    V = np.random.default_rng(5).normal(size=(n,) if k is None else (n, k))
    check(tf.hvp_program(trace, k), (x, *args, V), [(BLOCK, m)])


# ---- random matrix-product objectives -------------------------------------------------------

SMOOTH = [np.tanh, np.sin, lambda t: np.log1p(t * t), lambda t: np.logaddexp(0.0, t),
          lambda t: t ** 3, lambda t: np.sqrt(1.0 + t * t), np.exp]


def random_matrix_objective(seed: int):
    """A random scalar ``f(w, X, y)`` built from products with the rows of ``X``: maps of
    ``X @ w`` (one or two products), a row weight from the data, and sometimes a
    contraction back over the rows (``X.T @ u``) followed by more smooth work."""
    r = np.random.default_rng(seed)
    p1, p2 = (SMOOTH[i] for i in r.choice(len(SMOOTH), 2, replace=False))
    a, b = (float(v) for v in r.uniform(0.2, 0.8, 2))
    kind = seed % 4

    def f(w, X, y):
        z = X @ (a * w)
        if kind == 0:    # one product, a row weight
            return np.sum(y * p1(z)) + 0.5 * np.sum(w * w)
        if kind == 1:    # two products of X
            return np.sum(p1(z) * p2(X @ (b * np.sin(w)))) / y.size
        if kind == 2:    # a residual with data, squared
            return 0.5 * np.sum((p1(z) - y) ** 2)
        u = X.T @ (y * p1(z)) / y.size  # contraction over the rows, then more work
        return np.sum(p2(u * b)) + np.sum(z * z) / y.size
    return f


@pytest.mark.parametrize("seed", range(8))
def test_random_matrix_objectives(small_blocks, seed):
    m, n = 53, 5  # three blocks of 16 and a remainder of 5
    rng = np.random.default_rng(100 + seed)
    X = rng.normal(size=(m, n)) / np.sqrt(n)
    y = rng.normal(size=m)
    w = rng.normal(size=n)
    # the scales f captures (a, and b when used) are program inputs after w, X and y
    tr = traced_at(random_matrix_objective(seed), w, (X, y), scalar=True)
    trace, data = tr.program, (X, y, *tr.closed_values())
    check_regions(tf.value_and_grad_program(trace), (w, *data))
    for k in (None, 3):
        V = rng.normal(size=(n,) if k is None else (n, k))
        kernel = check_regions(tf.hvp_program(trace, k), (w, *data, V))
        assert blocks_in(kernel), kernel.source  # the HVP reads X by row at least twice
    residual, linear = tf.linearized_hvp(trace, 3)
    check_regions(residual, (w, *data))
    res = numpy_eval.compile_program(residual)(w, *data)
    check_regions(linear, (w, *data, *res[2:], rng.normal(size=(n, 3))))


def check_regions(program: Program, inputs: tuple) -> str:
    """Like :func:`check`, for programs whose number of regions is not known in advance:
    every region found blocks an axis of the rows of ``X`` with the configured block."""
    kernel, run = compiled(program)
    m = inputs[1].shape[0]
    assert all(found == (BLOCK, m) for found in blocks_in(kernel)), kernel.source
    got = run(*inputs)
    ref = numpy_eval.compile_program(program)(*inputs)
    for n, (a, b) in enumerate(zip(got, ref)):
        a, b = np.asarray(a), np.asarray(b)
        scale = np.max(np.abs(b), initial=1.0)
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * scale, err_msg=f"output {n}")
    return kernel


# ---- the region a lowering runs in --------------------------------------------------------------

def test_a_nest_lowers_by_the_region_it_is_given(small_blocks):
    """A nest of a region is lowered on the block's views (``k<i>``, ``nb`` rows) when
    given the region's :class:`Where`, and on whole arrays outside it, whatever was
    lowered before: the generator keeps no region of its own (lowered only)."""
    m, n = 100, 7
    w, args = logistic_data(m, n)
    program = tf.hvp_program(traced(logistic, w, args), 3)
    plan = form_regions(make_plan(program), small_blocks)
    region = next(item for item in plan.items if isinstance(item, RowBlock))
    nest = next(item for item in region.items if isinstance(item, Nest))
    gen = Generator(plan, small_blocks)
    inside = lower_nest(gen, Where(plan, region), nest)
    outside = lower_nest(gen, Where(plan), nest)
    assert lower_nest(gen, Where(plan, region), nest).stmts == inside.stmts

    def arrays_and_rows(code):
        """The arrays of blocked slots that ``code`` loads or stores, by kind (``k`` for
        a block's view, ``b`` for a whole array), and the bounds of its loop over rows."""
        stmts = [s for s, _ in ir.walk(code.stmts)]
        names = {a.array for s in stmts if isinstance(s, (ir.Assign, ir.Reduce))
                 for e in (s.target, s.value) for a in ir.atoms(e)
                 if isinstance(a, (ir.Load, ir.FlatLoad))}
        kinds = {kind for kind in "kb" for i in region.blocked
                 if {f"{kind}{i}", f"{kind}{i}f"} & names}
        rows = {s.stop for s in stmts if isinstance(s, ir.For) and s.var == ir.LoopVar(0)}
        return kinds, rows

    assert arrays_and_rows(inside) == ({"k"}, {ir.Scalar("nb")})
    assert arrays_and_rows(outside) == ({"b"}, {m})
    assert inside.writes == outside.writes and inside.reads == outside.reads
