"""Liveness on the loop IR (newtonad.ad.engine.liveness): what each kernel statement reads
before writing and what it writes, found without reading source, equals what Python's
scoping of the printed statement gives.

The reference (:func:`python_flow`) parses the printed source with :mod:`ast`; the
engine itself never does. Kernels are lowered only (no compilation).
"""

from __future__ import annotations

import ast
import builtins

import numpy as np
import pytest

import newtonad as nad
from newtonad.ad import transforms as tf
from newtonad.ad.engine import kernel_split, liveness, numba_engine
from newtonad.ad.engine import loop_ir as ir
from newtonad.ad.engine.kinds import REDUCE_MAX, REDUCE_SUM
from newtonad.ad.engine.options import LoweringOptions
from newtonad.ad.engine.printer import Printer
from newtonad.ad.program import Slot
from newtonad.ad.trace import trace_function

from .builders import Builder

GLOBALS = frozenset(dir(builtins)) | {"math", "np", "njit", "prange"}


# ---- the reference: Python's scoping of the printed statement -----------------------------------

class _PythonFlow:
    def __init__(self) -> None:
        self.exposed: set[str] = set()
        self.written: set[str] = set()

    def load(self, node: ast.AST, defined: set[str]) -> None:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in defined:
                self.exposed.add(n.id)

    def store(self, target: ast.AST, defined: set[str]) -> None:
        if isinstance(target, ast.Name):
            defined.add(target.id)
            self.written.add(target.id)
        else:  # a[i] = v reads a
            self.load(target, defined)

    def block(self, stmts: list[ast.stmt], defined: set[str]) -> None:
        for s in stmts:
            if isinstance(s, ast.Assign):
                self.load(s.value, defined)
                for t in s.targets:
                    self.store(t, defined)
            elif isinstance(s, ast.AugAssign):
                self.load(s.value, defined)
                if isinstance(s.target, ast.Name) and s.target.id not in defined:
                    self.exposed.add(s.target.id)
                self.store(s.target, defined)
            elif isinstance(s, ast.For):
                self.load(s.iter, defined)
                inner = set(defined)
                self.store(s.target, inner)
                self.block(s.body, inner)
            elif isinstance(s, ast.If):
                self.load(s.test, defined)
                self.block(s.body, set(defined))
                self.block(s.orelse, set(defined))
            elif isinstance(s, (ast.Expr, ast.Raise)):
                self.load(s, defined)
            else:
                raise AssertionError(f"unexpected statement {ast.dump(s)}")


def python_flow(source: str) -> tuple[set[str], set[str], set[str]]:
    f = _PythonFlow()
    defined: set[str] = set()
    f.block(ast.parse(source).body, defined)
    return f.exposed - GLOBALS, f.written, defined


def check_kernel(kernel) -> dict[str, int]:
    """Every top-level statement of ``kernel`` (header and body): IR liveness equals the
    reference. Returns the statements checked, by kind."""
    kinds: dict[str, int] = {}
    for s in kernel.body:
        if isinstance(s, ir.Comment):
            continue
        source = "\n".join(Printer().stmt(s, ""))
        assert liveness.flow(s) == python_flow(source), source
        kinds[type(s).__name__] = kinds.get(type(s).__name__, 0) + 1
    return kinds


# ---- lowered kernels -------------------------------------------------------------------------

def index_program():
    """Gathers and scatters (array and scalar indices, scalar results and sources),
    cumulative sums both ways, concatenation, einsums (BLAS, loops, scalar results),
    and outputs that are inputs, constants and repeated slots (copied at the end)."""
    b = Builder()
    x = b.input((5, 3))
    v = b.input((5,))
    idx = b.input((6,), "int64")
    k = b.input((), "int64")
    s = b.input(())
    g = b.op("gather", x, idx, axis=0, out=True)
    b.op("gather", x, k, axis=0, out=True)
    b.op("gather", v, k, axis=0, out=True)  # a scalar result
    b.op("scatter_add", g, idx, axis=0, shape=(5, 3), out=True)
    b.op("scatter_add", s, k, axis=0, shape=(5,), out=True)  # a scalar source
    b.op("cumsum", x, axis=0, reverse=False, out=True)
    b.op("cumsum", x, axis=1, reverse=True, out=True)
    b.op("concatenate", x, b.op("exp", x), axis=1, out=True)
    b.op("einsum", x, x, spec="ij,kj->ik", out=True)
    b.op("einsum", x, x, spec="ij,ij->i", out=True)
    b.op("einsum", v, v, spec="i,i->", out=True)
    e = b.op("exp", x)
    b.ret(x, s, e, e, b.const(2.0), b.const([1.0, 2.0]))
    return b.build()


def logistic(w, X, y, lam):
    return np.sum(np.logaddexp(0, -y * (X @ w))) + 0.5 * lam * (w @ w)


def surface(u, h):
    return np.sum(np.sqrt(1 + ((u[1:, :-1] - u[:-1, :-1]) * h) ** 2
                          + ((u[:-1, 1:] - u[:-1, :-1]) * h) ** 2))


def sliced_loop(x):
    s = 0.0
    for a in range(0, x.shape[0] - 4, 2):
        s = s + np.sum(np.sin(x[a:a + 4]) * x[a + 1:a + 5] ** 2) + x[a] * x[a + 1]
    return s


BASE = LoweringOptions.current().replace(parallel_threads=1, cheap_launch=True)


def test_opaque_steps_and_output_copies():
    kinds = check_kernel(numba_engine.lower(index_program(), BASE))
    assert kinds["Line"] > 10 and kinds["For"] > 5


def test_row_blocked_regions_with_summed_products():
    program = nad.trace(logistic, np.zeros(8), np.zeros((64, 8)), np.zeros(64),
                        np.array(1e-2))
    options = BASE.replace(row_block=16, row_block_min_blocks=2)
    for p in (tf.value_and_grad_program(program), tf.hvp_program(program, 3)):
        kernel = numba_engine.lower(p, options)
        assert any(isinstance(s, ir.For) and s.var == ir.Text("r0") for s in kernel.body)
        check_kernel(kernel)


def test_stencil_edges():
    program = nad.trace(surface, np.zeros((40, 40)), np.array(0.1))
    for p in (tf.value_and_grad_program(program), tf.hvp_program(program, 4)):
        assert check_kernel(numba_engine.lower(p, BASE))["ForIn"]


def test_parallel_pieces():
    program = nad.trace(logistic, np.zeros(100), np.zeros((2000, 100)), np.zeros(2000),
                        np.array(1e-2))
    options = BASE.replace(parallel_threads=2, parallel_min_iterations=1 << 10)
    for p in (program, tf.value_and_grad_program(program), tf.hvp_program(program, 4)):
        assert check_kernel(numba_engine.lower(p, options))["Private"]


def test_split_kernels(monkeypatch):
    """A loop over slices, traced step by step: kernels long enough to split."""
    monkeypatch.setattr(kernel_split, "MAX_CHUNK_LINES", 20)
    monkeypatch.setattr(kernel_split, "SPLIT_FROM_LINES", 20)
    program = trace_function(sliced_loop, [Slot((13,))]).program
    for p in (tf.value_and_grad_program(program), tf.hvp_program(program, 3)):
        kernel = numba_engine.lower(p, BASE)
        assert kernel.chunks
        check_kernel(kernel)


# ---- statements made by hand -----------------------------------------------------------------

t, u = ir.Var("t1"), ir.Var("u2")
i0 = ir.LoopVar(0)
row = ir.Load("b3", (((0, 1, 1),)))

HAND = [
    ir.Assign(t, ir.Mul(row, ir.Scalar("r4"))),
    ir.Assign(t, ir.Sum((t, ir.Lit("1.0", True)), ir.Lit("0.0", True)), "+="),
    ir.Assign(ir.Load("o0", ((0, 1, 0),)), t),
    ir.Reduce(ir.Scalar("r5"), row, REDUCE_SUM),
    ir.Reduce(ir.Scalar("r5"), row, REDUCE_MAX),  # assigned under a test: not definite
    ir.For(i0, 0, ir.Scalar("n1"), (ir.Assign(t, row), ir.Assign(u, t))),
    ir.If(((ir.Bound(0, ">=", 1)),), (ir.Assign(u, t),), (ir.Assign(u, ir.Lit("0.0", True)),)),
    ir.Private("_p", (ir.ParallelFor(0, 100, 4, 25, (
        ir.Assign(t, ir.FlatLoad("b3f", (((0, 1, 0), 3), ((None, 0, 2), 1)))),
        ir.Reduce(u, t, REDUCE_SUM))),)),
    ir.ForIn("edge", ((0, 3), (7, 9)), (
        ir.For(i0, ir.Text("edge[0]", ("edge",)), ir.Text("edge[1]", ("edge",)),
               (ir.Assign(ir.Load("o0", ((0, 1, 0),)), row),)),)),
    ir.Line("np.dot(b1, b2, b3.reshape((nb, 4)))", ("b1", "b2", "b3", "nb")),
    ir.Line("j += 5", ("j",), ("j",)),
    ir.If(ir.Text("j < 0 or j >= 5", ("j",)), (ir.Line('raise IndexError("gather")'),)),
    ir.For(ir.Text("e"), 0, 4, (ir.Line("acc[e] += add[e]", ("acc", "e", "add")),)),
    ir.Assign(ir.Text("b3.reshape(nb * 2)[:]", ("b3", "nb")), ir.Lit("0.0", True)),
]


@pytest.mark.parametrize("stmt", HAND, ids=lambda s: type(s).__name__)
def test_hand_made_statements(stmt):
    assert liveness.flow(stmt) == python_flow("\n".join(Printer().stmt(stmt, "")))


def test_what_loops_and_tests_assign_is_not_definite():
    exposed, written, definite = liveness.flow(HAND[5])
    assert exposed == {"b3", "n1"} and written == {"i0", "t1", "u2"} and definite == set()
    exposed, written, definite = liveness.flow(HAND[4])
    assert exposed == {"b3", "i0", "r5"} and written == {"r5"} and definite == set()
    assert liveness.flow(HAND[3]) == ({"b3", "i0", "r5"}, {"r5"}, {"r5"})


def test_a_sequence_reads_what_it_has_not_written():
    assert liveness.block_flow([HAND[0], HAND[1], HAND[2]]) == (
        {"b3", "i0", "r4", "o0"}, {"t1"}, {"t1"})


def test_a_line_declares_its_names():
    """Source text is never read: a line's names are those it declares."""
    assert liveness.flow(ir.Line("garbage (", ("a",), ("b",))) == ({"a"}, {"b"}, {"b"})
    assert ir.Line("x = y", ("y",), ("x",)) == ir.Line("x = y")  # names: not in equality


def test_not_a_statement():
    with pytest.raises(TypeError, match="not a statement"):
        liveness.flow(ir.Threadable(4, 4, ()))
