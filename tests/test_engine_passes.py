"""The loop-IR passes of the numba engine (newtonad.ad.engine.passes) as pure functions.

Each pass is checked on hand-built IR (what it turns into what, and that its input is
left alone), and on the body of lowered kernels: no statement a pass removes is left.
Nothing here compiles a kernel.
"""

from __future__ import annotations

import numpy as np
import pytest

import newtonad as nad
from newtonad.ad import transforms as tf
from newtonad.ad.engine import loop_ir as ir
from newtonad.ad.engine import numba_cache, numba_engine
from newtonad.ad.engine.kinds import REDUCE_SUM
from newtonad.ad.engine.options import LoweringOptions
from newtonad.ad.engine.passes import (
    parallel_chunking,
    parallel_chunks,
    run_time_extents,
    under,
    worth_threads,
    write_out_columns,
)
from newtonad.ad.engine.printer import print_lines

TWO_THREADS = LoweringOptions(parallel_min_iterations=1000, parallel_threads=2,
                              parallel_chunks=8, cheap_launch=True)


def nest(rows: int, iterations: int, inner_stop: int = 3) -> ir.Threadable:
    """``acc = 0; for i0 in range(rows): for i1 in range(inner_stop): acc += x[i0, i1]``."""
    inner = ir.For(ir.LoopVar(1), 0, inner_stop,
                   (ir.Assign(ir.Var("acc"), ir.Load("b1", ((0, 1, 0), (1, 1, 0))), "+="),),
                   stop_at_run_time=True)
    return ir.Threadable(rows, iterations, (ir.Assign(ir.Var("acc"), ir.Lit("0.0", True)),
                                            ir.For(ir.LoopVar(0), 0, rows, (inner,))))


@pytest.mark.parametrize("rows", [16, 17, 100, 1000, 65537])
@pytest.mark.parametrize("chunks", [1, 8, 64])
def test_chunking_covers_every_row_once(rows, chunks):
    n, size = parallel_chunking(0, rows, chunks)
    assert n <= chunks
    assert (n - 1) * size < rows <= n * size  # the last chunk is not empty


def test_worth_threads_follows_the_options():
    assert worth_threads(nest(16, 1000), TWO_THREADS)
    assert not worth_threads(nest(15, 1000), TWO_THREADS)  # under two rows per chunk
    assert not worth_threads(nest(16, 999), TWO_THREADS)
    assert not worth_threads(nest(16, 1000), TWO_THREADS.replace(parallel_threads=1))
    assert not worth_threads(nest(16, 10**9), TWO_THREADS.replace(parallel_min_iterations=None))
    slow_start = TWO_THREADS.replace(cheap_launch=False, parallel_workqueue_factor=4)
    assert not worth_threads(nest(16, 3999), slow_start)
    assert worth_threads(nest(16, 4000), slow_start)


def test_parallel_chunks_runs_the_outer_loop_on_threads():
    body = (ir.Comment("before"), nest(100, 10**4), ir.Comment("after"))
    out = parallel_chunks(body, TWO_THREADS)
    assert out[0] == body[0] and out[2] == body[2]
    private = out[1]
    assert isinstance(private, ir.Private) and private.suffix == "_p1"
    init, loop = private.body
    assert init == body[1].body[0]
    assert loop == ir.ParallelFor(0, 100, 8, 13, body[1].body[1].body)
    # run as printed (prange recorded, run serially): 8 chunks covering every row once,
    # with the piece's locals (accumulator, loop variables) its own
    launches: list[int] = []

    def prange(n):
        launches.append(n)
        return range(n)

    b1 = np.random.default_rng(0).normal(size=(100, 3))
    env = {"b1": b1}
    exec("\n".join(print_lines(out)), {"prange": prange}, env)
    assert launches == [8]
    np.testing.assert_allclose(env["acc_p1"], b1.sum(), rtol=1e-14)
    assert {"acc_p1", "i0_p1", "i1_p1"} <= env.keys()
    assert not {"acc", "i0", "i1"} & env.keys()


def test_parallel_chunks_leaves_small_nests_serial():
    body = (nest(100, 999),)
    assert parallel_chunks(body, TWO_THREADS) == body[0].body
    assert parallel_chunks(body, TWO_THREADS.replace(parallel_threads=1)) == body[0].body


def test_parallel_chunks_numbers_scopes_in_order_and_recurses():
    body = (ir.If(ir.Text("flag"), (nest(100, 10**4),), (nest(50, 10**4),)),
            ir.For(ir.Var("e"), 0, 2, (nest(100, 10**4),)))
    out = parallel_chunks(body, TWO_THREADS)
    privates = [s for s, _ in ir.walk(out) if isinstance(s, ir.Private)]
    assert [p.suffix for p in privates] == ["_p1", "_p2", "_p3"]
    assert not any(isinstance(s, ir.Threadable) for s, _ in ir.walk(out))
    assert isinstance(body[0].body[0], ir.Threadable)  # the input is not changed


def test_run_time_extents_reads_marked_bounds_at_run_time():
    loop = nest(100, 10**4, inner_stop=7).body[1]
    other = nest(100, 10**4, inner_stop=5).body[1]
    plain = ir.For(ir.LoopVar(0), 0, 9, ())
    out, table = run_time_extents((loop, other, loop, plain))
    assert table == {7: 0, 5: 1}  # in order of first use, each bound once
    inner = [s for s, _ in ir.walk(out) if isinstance(s, ir.For) and s.var == ir.LoopVar(1)]
    assert [s.stop for s in inner] == [ir.Scalar("n7"), ir.Scalar("n5"), ir.Scalar("n7")]
    assert not any(s.stop_at_run_time for s in inner)
    assert out[3] == plain and out[0].stop == 100  # unmarked loops keep literal bounds


def test_run_time_extents_after_parallel_chunks_keeps_the_parallel_loop_literal():
    single = ir.Threadable(100, 10**4, (ir.For(ir.LoopVar(0), 0, 100, (), stop_at_run_time=True),))
    out, table = run_time_extents(parallel_chunks((single,), TWO_THREADS))
    assert table == {}
    assert out[0].body[0] == ir.ParallelFor(0, 100, 8, 13, ())


def test_under_moves_statements_to_where_the_guard_can_be_tested():
    stmt = [ir.Assign(ir.Var("t"), ir.Lit("1.0", True))]
    placed = [ir.Placed(0, stmt), ir.Placed(2, stmt, after=True), ir.Placed(3, stmt)]
    guard = (ir.Bound(1, ">=", 1), ir.Bound(0, "<", 9))  # needs i0 and i1: depth 2
    out = under(placed, guard, levels=3)
    assert [(p.depth, p.guard, p.after) for p in out] == [(2, guard, False), (2, guard, True),
                                                          (3, guard, False)]
    assert under(placed, guard, levels=1)[0].depth == 1  # never below the loops written
    assert placed[0].depth == 0 and placed[0].guard == ()  # the input is not changed


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@pytest.mark.parametrize("threads", [1, 2])
def test_lowered_kernels_hold_only_printable_ir(threads, tmp_path, monkeypatch):
    """No statement a pass removes is left, and the kernel function numba is given (its
    module imported: nothing is compiled) loops with ``prange`` under ``parallel=True``
    exactly when the IR has a parallel loop."""
    monkeypatch.setenv("NEWTONAD_CACHE_DIR", str(tmp_path))
    opts = LoweringOptions(parallel_min_iterations=256, parallel_threads=threads)
    program = nad.trace(rosen, np.zeros(1000))
    for prog in (program, tf.value_and_grad_program(program), tf.hvp_program(program, 3)):
        kernel = numba_engine.lower(prog, opts)
        stmts = [s for s, _ in ir.walk(kernel.body)]
        assert not any(isinstance(s, ir.Threadable) for s in stmts)
        assert not any(isinstance(s, ir.For) and s.stop_at_run_time for s in stmts)
        has_threads = any(isinstance(s, ir.ParallelFor) for s in stmts)
        assert kernel.parallel == has_threads == (threads == 2)
        module = numba_cache.import_module(*numba_cache.ensure_source(kernel.source))
        assert bool(module.kernel.targetoptions.get("parallel")) == has_threads
        assert ("prange" in module.kernel.py_func.__code__.co_names) == has_threads


# ---- columns written out ------------------------------------------------------------------------

ROW, COL = (0, 1, 0), (1, 1, 0)  # index maps: i0, and the column i1


def columns_nest(k: int) -> list:
    """Placed statements of ``out[i0, c] = V[i0, c] * (2 * x[i0])`` and ``colsum[c] += out[i0, c]``
    for the columns ``c < k`` of a nest whose one loop is over ``i0``, as the nest writer
    makes them: ``2 * x[i0]`` is a common subexpression of no column, the product one
    of each column, the column sums accumulate in a local over the rows."""
    twice = ir.slot_temp(5, 0)
    prod = ir.slot_temp(6, 0)
    acc = ir.placed_local("acc", 4)
    template = [
        ir.Placed(1, [ir.Comment("2 * x"), ir.Assign(twice, ir.Mul(ir.Lit("2.0", True),
                                                                  ir.Load("x", (ROW,))))],
                  common=True),
        ir.Placed(1, [ir.Assign(prod, ir.Mul(ir.Load("V", (ROW, COL)), twice))], common=True),
        # common, but it reads a local of each column: once per column too
        ir.Placed(1, [ir.Assign(ir.placed_local("f", 2), ir.Mul(prod, twice))], common=True),
        ir.Placed(1, [ir.Assign(ir.Load("out", (ROW, COL)), prod)]),
        ir.Placed(0, [ir.Assign(acc, ir.Lit("0.0", True))]),
        ir.Placed(1, [ir.Reduce(acc, prod, REDUCE_SUM)]),
        ir.Placed(0, [ir.Reduce(ir.Load("colsum", (COL,)), acc, REDUCE_SUM)], after=True),
    ]
    head = [ir.Placed(0, [ir.Assign(ir.slot_temp(6, 0), ir.Lit("1.0", True))])]  # uses t6 once
    return head + [ir.Columns(1, 0, k, template)]


def as_loops(placed: list, rows: int) -> list:
    """``placed`` (depths 0 and 1) around one loop ``for i0 in range(rows)``."""
    def at(depth, after):
        return [s for p in placed if p.depth == depth and p.after == after for s in p.stmts]
    return [*at(0, False), ir.For(ir.LoopVar(0), 0, rows, tuple(at(1, False))), *at(0, True)]


def run_source(stmts: list, **arrays) -> dict:
    env = {k: np.array(v, dtype=float) for k, v in arrays.items()}
    exec("\n".join(print_lines(stmts)), {}, env)
    return env


def test_written_out_columns_compute_what_a_column_loop_does():
    rows, k = 5, 3
    rng = np.random.default_rng(0)
    x, V = rng.normal(size=rows), rng.normal(size=(rows, k))
    out = write_out_columns(columns_nest(k), LoweringOptions(unroll=4))
    assert not any(isinstance(p, ir.Columns) for p in out)
    got = run_source(as_loops(out, rows), x=x, V=V, out=np.zeros((rows, k)), colsum=np.zeros(k))
    # the same template run as a loop over the columns, each with its own accumulator
    loop = []
    for c in range(k):
        one = write_out_columns(
            [ir.Columns(1, c, c + 1, columns_nest(k)[1].template)], LoweringOptions(unroll=4))
        loop += as_loops(one, rows)
    ref = run_source(loop, x=x, V=V, out=np.zeros((rows, k)), colsum=np.zeros(k))
    np.testing.assert_allclose(got["out"], V * (2 * x)[:, None], rtol=1e-15)
    np.testing.assert_allclose(got["colsum"], (V * (2 * x)[:, None]).sum(0), rtol=1e-14)
    np.testing.assert_allclose(got["out"], ref["out"], rtol=0)
    np.testing.assert_allclose(got["colsum"], ref["colsum"], rtol=0)


def test_written_out_columns_substitute_the_column_and_rename_locals():
    out = write_out_columns(columns_nest(3), LoweringOptions(unroll=4))
    stmts = [s for p in out for s in p.stmts]
    loads = [a for s in stmts if isinstance(s, (ir.Assign, ir.Reduce))
             for e in (s.target, s.value) for a in ir.atoms(e) if isinstance(a, ir.Load)]
    assert loads and not any(d[0] == 1 for a in loads for d in a.index)  # no i1 is left
    assert {a.index[-1] for a in loads if a.array == "V"} == {(None, 0, c) for c in range(3)}
    assigned = [s.target.name for s in stmts if isinstance(s, ir.Assign)
                and isinstance(s.target, ir.Var)]
    # 2 * x once, with the first column; the product per column, numbered after the
    # head's t6; an accumulator per column, named by its statement's position
    assert assigned.count("t5") == 1
    assert [n for n in assigned if n.startswith("t6")] == ["t6", "t6_1", "t6_2", "t6_3"]
    accs = [n for n in assigned if n.startswith("acc")]
    assert len(set(accs)) == 3 and len({n for n in assigned if n.startswith("f")}) == 3
    positional = [s.target for s in stmts if isinstance(s, ir.Assign)
                  and isinstance(s.target, ir.Var) and s.target.stem in ("acc", "f")]
    for v in positional:  # named by the position of the statement that assigns it
        position = int(v.name[len(v.stem):])
        assert any(s.target == v for s in out[position].stmts if isinstance(s, ir.Assign))
    comments = [s.text for s in stmts if isinstance(s, ir.Comment)]
    assert [c for c in comments if c.startswith("i1 = ")] == ["i1 = 0", "i1 = 1", "i1 = 2"]


def test_write_out_columns_keeps_the_template_past_the_options():
    placed = columns_nest(3)
    assert write_out_columns(placed, LoweringOptions(unroll=2)) is placed  # too many columns
    assert write_out_columns(placed, LoweringOptions(unroll=4, unroll_statements=5)) is placed
    assert isinstance(placed[1], ir.Columns) and len(placed[1].template) == 7  # not changed


def test_lowered_frames_write_short_columns_out():
    """An HVP frame of three columns: with ``unroll`` >= 3 the interior of the stencil
    loops over no column (its edges, run under conditions, always do)."""
    program = tf.hvp_program(nad.trace(rosen, np.zeros(100)), 3)

    def shape(unroll):
        body = numba_engine.lower(program, LoweringOptions(unroll=unroll)).body
        stmts = [s for s, _ in ir.walk(body)]
        assert not any(isinstance(s, ir.Columns) for s in stmts)
        loops = sum(isinstance(s, ir.For) and s.var == ir.LoopVar(1) for s in stmts)
        columns = [s.text for s in stmts if isinstance(s, ir.Comment) and s.text.startswith("i1 =")]
        return loops, columns

    loops, columns = shape(4)
    assert columns == ["i1 = 0", "i1 = 1", "i1 = 2"]
    assert shape(2) == (loops + 1, [])
