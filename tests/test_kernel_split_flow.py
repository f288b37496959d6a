"""What flows between the chunks of a split kernel (newtonad.ad.engine.kernel_split) is
found on the loop IR (newtonad.ad.engine.liveness), never by reading the printed source
back: each chunk takes the names it reads before writing them and returns those a
later chunk reads. Kernels are lowered only (no compilation)."""

from __future__ import annotations

import ast

import numpy as np
import pytest

import newtonad as nad
from newtonad.ad import transforms as tf
from newtonad.ad.engine import kernel_split, liveness, numba_engine
from newtonad.ad.engine.loop_ir import (
    Assign,
    Comment,
    For,
    Line,
    Load,
    LoopVar,
    Mul,
    Scalar,
    Text,
    Var,
)
from newtonad.ad.engine.options import LoweringOptions
from newtonad.ad.engine.printer import Printer
from newtonad.ad.program import Slot
from newtonad.ad.trace import trace_function

HEADER = [Line("b0 = x0", ("x0",), ("b0",)), Line("b1 = o0", ("o0",), ("b1",))]


def chain(n: int) -> list:
    """``t0 = b0[0] * 2.0``, then ``t<k> = t<k-1> * b0[k]``: each reads the one before."""
    body: list = [Comment("the first value"),
                  Assign(Scalar("t0"), Mul(Load("b0", ((None, 0, 0),)), Scalar("two")))]
    for k in range(1, n):
        body += [Comment(f"step {k}"),
                 Assign(Scalar(f"t{k}"), Mul(Scalar(f"t{k - 1}"), Load("b0", ((None, 0, k),))))]
    return body


def test_chunks_take_what_they_read_and_return_what_later_chunks_read():
    body = chain(12) + [
        For(LoopVar(0), 0, 3,
            (Assign(Load("b1", ((0, 1, 0),)), Mul(Scalar("t11"), Scalar("t2"))),)),
        Line("b1[0] += t3", ("b1", "t3"))]
    sources, chunks = kernel_split.split(HEADER, body, ["x0", "o0", "two"], 4)
    assert [c.lines for c in chunks] == [4, 4, 4, 3]  # the loop is two lines
    assert [(c.params, c.returns) for c in chunks] == [
        (("x0", "two"), ("t2", "t3")), (("x0", "t3"), ("t7",)), (("x0", "t7"), ("t11",)),
        (("o0", "t11", "t2", "t3"), ())]  # the loop's i0 is its own; arrays by their view
    # the last chunk repeats the header view it uses, from the kernel's arguments
    assert sources[3].splitlines()[1] == "    b1 = o0"


def test_split_of_statements_printed_by_the_caller_is_the_same():
    """A caller that has printed the statements already may pass their lines."""
    body = chain(12) + [Line("b1[0] += t3", ("b1", "t3"))]
    printed = [Printer().stmt(s, "") for s in body]
    expected = kernel_split.split(HEADER, body, ["x0", "o0", "two"], 4)
    assert len(expected[1]) == 4
    assert kernel_split.split(HEADER, body, ["x0", "o0", "two"], 4, printed=printed) == expected
    with pytest.raises(ValueError, match="one printed entry per statement"):
        kernel_split.split(HEADER, body, ["x0", "o0", "two"], 4, printed=printed[1:])


def test_a_name_assigned_only_in_a_loop_is_not_returned_as_defined():
    """``u`` is assigned in a loop (which may not run) and read by a later chunk, with
    no value before: the split refuses, naming it (the caller keeps one function)."""
    loop = For(Text("e"), 0, 3, (Assign(Var("u"), Scalar("t0")),))
    body = chain(4) + [loop] + chain(4)[1:] + [Line("b1[0] = u", ("b1", "u"))]
    with pytest.raises(ValueError, match="u may be undefined"):
        kernel_split.split(HEADER, body, ["x0", "o0", "two"], 3)


def test_declared_names_are_what_flows():
    """A line's declared names are what the split passes, whatever its text says."""
    body = chain(3) + [Line("b1[0] = garbage(", ("b1", "t1"))]
    _, chunks = kernel_split.split(HEADER, body, ["x0", "o0", "two"], 2)
    assert chunks[-1].params == ("x0", "o0", "t1")
    assert liveness.flow(body[-1]) == ({"b1", "t1"}, set(), set())


def test_header_rewritten_by_the_body_is_refused():
    body = chain(3) + [Line("b0 = x0", ("x0",), ("b0",))]
    with pytest.raises(ValueError, match="assigns header names"):
        kernel_split.split(HEADER, body, ["x0", "o0", "two"], 2)


def logistic(w, X, y, lam):
    return np.sum(np.logaddexp(0, -y * (X @ w))) + 0.5 * lam * (w @ w)


def sliced_loop(x):
    s = 0.0
    for a in range(0, x.shape[0] - 4, 2):
        s = s + np.sum(np.sin(x[a:a + 4]) * x[a + 1:a + 5] ** 2) + x[a] * x[a + 1]
    return s


def test_kernels_split_without_parsing_source(monkeypatch):
    """Split kernels with loop nests, row-blocked regions (slices, calls on whole
    arrays), parallel loops and stencil edges are generated with Python's parser
    disabled."""
    monkeypatch.setattr(kernel_split, "MAX_CHUNK_LINES", 20)
    monkeypatch.setattr(kernel_split, "SPLIT_FROM_LINES", 20)

    loop = trace_function(sliced_loop, [Slot((13,))]).program
    regression = nad.trace(logistic, np.zeros(100), np.zeros((2000, 100)), np.zeros(2000),
                           np.array(1e-2))
    threads = LoweringOptions.current().replace(
        parallel_threads=2, cheap_launch=True, parallel_min_iterations=1 << 10)
    blocks = threads.replace(parallel_threads=1, row_block=256, row_block_min_blocks=2)
    programs = [(tf.value_and_grad_program(loop), threads), (tf.hvp_program(loop, 3), threads),
                (regression, threads), (tf.value_and_grad_program(regression), blocks),
                (tf.hvp_program(regression, 4), blocks)]
    parsed = []
    parse = ast.parse

    def recorded(source, *args, **kwargs):
        parsed.append(source)
        return parse(source, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(ast, "parse", recorded)
        kernels = [numba_engine.lower(p, o) for p, o in programs]
    assert parsed == []
    assert all(k.chunks for k in kernels)
    assert any(k.parallel for k in kernels)
    assert any(isinstance(s, For) and s.var == Text("r0") for k in kernels for s in k.body)
