"""Liveness of a kernel's statements (newtonad.ad.engine.kernel_split.flow): the names
read off the text of one-line assignments are those Python's own parser finds."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from newtonad.ad import transforms as tf
from newtonad.ad.engine import kernel_split, numba_engine
from newtonad.ad.program import Slot
from newtonad.ad.trace import trace_function


def parsed_flow(source):
    """``flow`` by ``ast`` alone (the reference)."""
    f = kernel_split._Flow()
    defined: set[str] = set()
    f.block(ast.parse(source).body, defined)
    return f.exposed - kernel_split.GLOBALS, f.written, defined


SIMPLE = [
    "t12 = (t10 * b0[3])",
    "t3 = t3 + 1.0",
    "acc += x[0]",
    "acc -= 2 * acc",
    "acc *= y",
    "o1[0, 2] = t5 + np.sqrt(u)",
    "o1[i0 + 1] += t5",
    "r4 = b if c else d",
    "r4 = a < b and not c or d is None",
    "r4 = a <= b == c != d >= e",
    "r4 = 1e-05 * e + 2.5E+3 * E - 0x1F * x1 + 1_000 * j + 3j",
    "r4 = math.erf(e1) + np.float64(q).real",
    "r4 = min(a, b) + abs(c) ** 2",
    "r4 = [a, b][0] + (c,)[0]",
    "r4 = True",
    "r4 = (a if a > b or a != a else b)",
    "r4 = x in y",
    "r4 = a /b % c // d @ e",
]
OTHER = [
    "r4 = np.sum(x, axis=0)",
    "r4 = x[1:]",
    "r4 = lambda q: q + z",
    "a, b = c, d",
    "a = b = c",
    "a[0][1] = c",
    "a.b = c",
    "r4 = 'a = b'",
    "r4 = c  # a comment",
    "r4 = {a: b}",
    "r4 = [q for q in z]",
    "r4 = (yield z)",
    "r4 = é + a",
    "for i0 in range(n):\n    o[i0] += t2\nelse:\n    q = 1",
    "if a > b:\n    c = a\nelif b:\n    c = b",
    "while a:\n    a = a - 1",
    "for c in prange(4):  # 4 chunks\n    o[c] = 1",
    "r4 = (a +\n      b)",
    "for i, j in z:\n    o[i] = j",
    "if a: b = 1",
    "r4 = a; r5 = b",
    "r4 /= a",
    "np.copyto(o1, x0)",
]


NESTS = [
    "for i0 in range(n):\n    o[i0] += t2",
    "if a > b:\n    c = a",
    "if a > b:\n    c = a\nelse:\n    c = b\nd = c + e",
    "t1 = a + b\nt2 = t1 * c\nfor i0 in range(n):\n    o[i0] += t2 * i0\n    u = i0\n"
    "r = r + 1\n",
    "for i0 in range(n8):\n    # s708:f64[8] = square(s707)\n    t708 = (b0[i0 + 512] * b0[i0])\n"
    "    r715 += t708\n    for i1 in range(3):\n        if i1 >= 1 and i1 < 7:\n"
    "            t9 = t708 * b1[i0, i1]\n        else:\n            t9 = 0.0\n"
    "        o1[i0, i1] = t9 + u\n    v = t9\nw = v + t9",
    "for k in ((0, 3), (3, 8)):\n    lo = k[0]\n    o[lo] = lo",
    "if t5 > r7 or t5 != t5:\n    r7 = t5",
    "for i0 in range(4):\n    acc = acc + x[i0]\nacc += 1.0",
    "math[0] = 1\nx = 2",
    "np += 1\nx = np",
    "for i in range(3):\n    min[i] = i\n\n    # a comment\nq = i",
]


@pytest.mark.parametrize("source", NESTS)
def test_loop_nests_are_read_off_the_text_as_the_parser_reads_them(source):
    assert kernel_split._text_flow(source) is not None
    assert kernel_split.flow(source) == parsed_flow(source)


@pytest.mark.parametrize("source", SIMPLE)
def test_simple_assignments_are_read_off_the_text_as_the_parser_reads_them(source):
    assert kernel_split._text_flow(source) is not None
    assert kernel_split.flow(source) == parsed_flow(source)


@pytest.mark.parametrize("source", OTHER)
def test_other_statements_go_to_the_parser(source):
    assert kernel_split._text_flow(source) is None
    assert kernel_split.flow(source) == parsed_flow(source)


@pytest.mark.parametrize("source", ["for i0 in range(n):\n  o[i0] = 1\n o[0] = 2",
                                    "for i0 in range(n):\no[i0] = 1", "  a = 1"])
def test_bad_indentation_is_left_to_the_parser(source):
    assert kernel_split._text_flow(source) is None
    with pytest.raises(SyntaxError):
        kernel_split.flow(source)


def test_every_statement_of_split_kernels_agrees_with_the_parser(monkeypatch):
    """The gradient, an HVP frame and the linearised HVP of a loop over slices, split
    into chunks of at most 20 lines: each statement's flow equals the parser's."""
    monkeypatch.setattr(kernel_split, "MAX_CHUNK_LINES", 20)
    monkeypatch.setattr(kernel_split, "SPLIT_FROM_LINES", 20)
    seen = {"simple": 0, "parsed": 0}
    flow = kernel_split.flow

    def checked(source):
        if kernel_split._text_flow(source) is None:
            seen["parsed"] += 1
        else:
            seen["simple"] += 1
        result = flow(source)
        assert result == parsed_flow(source), source
        return result

    monkeypatch.setattr(kernel_split, "flow", checked)

    def f(x):
        s = 0.0
        for a in range(0, x.shape[0] - 4, 2):
            s = s + np.sum(np.sin(x[a:a + 4]) * x[a + 1:a + 5] ** 2) + x[a] * x[a + 1]
        return s

    program = trace_function(f, [Slot((13,))]).program
    lin = tf.linearized_hvp(program, 2)
    for p in (tf.value_and_grad_program(program), tf.hvp_program(program, 3),
              *(q for q in lin if hasattr(q, "steps"))):
        assert numba_engine.lower(p).chunks
    assert seen["simple"] > 5 * seen["parsed"] > 0


def test_split_of_statements_printed_by_the_caller_is_the_same():
    """A caller that has printed the statements already may pass their lines."""
    from newtonad.ad.engine.loop_ir import Assign, Comment, For, Line, LoopVar, Scalar, Text
    from newtonad.ad.engine.printer import Printer

    header = [Line("b0 = x0"), Line("b1 = o0")]
    body = [Comment("the first value"), Assign(Scalar("t0"), Text("b0[0] * 2.0"))]
    for n in range(1, 12):
        body += [Comment(f"step {n}"), Assign(Scalar(f"t{n}"), Text(f"t{n - 1} + b0[{n}]"))]
    body += [For(LoopVar(0), 0, 3, (Assign(Text("b1[i0]"), Text("t11 * b0[i0]")),)),
             Line("b1[0] += t3")]
    printed = [Printer().stmt(s, "") for s in body]
    expected = kernel_split.split(header, body, ["x0", "o0"], 4)
    assert len(expected[1]) == 4
    assert kernel_split.split(header, body, ["x0", "o0"], 4, printed=printed) == expected
    with pytest.raises(ValueError, match="one printed entry per statement"):
        kernel_split.split(header, body, ["x0", "o0"], 4, printed=printed[1:])
