"""Print the loop IR (:mod:`.loop_ir`) as Python source lines.

One printer for every statement of a kernel body. Inside :class:`~.loop_ir.Private`
statements (the pieces run by parallel loops) locals and loop variables print with
the piece's suffix.

A sum (or product) into a kernel-wide scalar inside a :class:`~.loop_ir.ParallelFor` is
printed as one partial sum per chunk, combined in chunk order after the loop, rather
than as a numba ``prange`` reduction: numba folds a reduction per thread, and under the
TBB layer which thread runs which chunks changes from call to call, so the same inputs
gave sums that differed in the last bit (and solvers' iterates that drifted apart run
to run). Per chunk, the bits do not depend on the threads at all.
"""

from __future__ import annotations

from typing import Any

from .kinds import REDUCTIONS
from .loop_ir import (
    Apply,
    Assign,
    Comment,
    Dim,
    FlatLoad,
    For,
    ForIn,
    If,
    Line,
    Lit,
    Load,
    LoopVar,
    Mul,
    ParallelFor,
    Private,
    Reduce,
    Scalar,
    Sum,
    Text,
    Var,
    walk,
)
from .numba_ops import EXPRESSIONS

INDENT = "    "


def fmt_dim(d: Dim, suffix: str = "") -> str:
    """One axis index: ``i0``, ``i1 + 1``, ``2 * i0 - 1``, ``5 - i0`` or a constant."""
    var, scale, off = d
    if var is None:
        return str(off)
    name = f"i{var}{suffix}"
    term = name if scale == 1 else (f"-{name}" if scale == -1 else f"{scale} * {name}")
    if off == 0:
        return term
    if scale == -1:
        return f"{off} - {name}"
    return f"{term} + {off}" if off > 0 else f"{term} - {-off}"


def fmt_index(m: tuple[Dim, ...], suffix: str = "") -> str:
    return ", ".join(fmt_dim(d, suffix) for d in m)


class Printer:
    """Source lines of statements; ``suffix`` is appended to locals (parallel pieces);
    ``renamed`` maps kernel-wide scalars to the names printed for them (a chunk's partial
    sums)."""

    def __init__(self, suffix: str = "", renamed: dict[str, str] | None = None):
        self.suffix = suffix
        self.renamed = renamed or {}

    # -- expressions -------------------------------------------------------------------------
    def expr(self, e: Any) -> str:
        if isinstance(e, Var):
            return e.name + self.suffix
        if isinstance(e, LoopVar):
            return f"i{e.n}{self.suffix}"
        if isinstance(e, Scalar):
            return self.renamed.get(e.name, e.name)
        if isinstance(e, (Lit, Text)):
            return e.text
        if isinstance(e, Load):
            return f"{e.array}[{fmt_index(e.index, self.suffix)}]"
        if isinstance(e, FlatLoad):
            return f"{e.array}[{self.flat_offset(e.terms)}]"
        if isinstance(e, Apply):
            return EXPRESSIONS[e.primitive]([self.expr(a) for a in e.args], list(e.in_dtypes),
                                            e.out_dtype, dict(e.params))
        if isinstance(e, Mul):
            return f"{self.expr(e.a)} * {self.expr(e.b)}"
        if isinstance(e, Sum):
            return " + ".join(self.expr(t) for t in e.terms) or e.zero.text
        if isinstance(e, int):
            return str(e)
        raise TypeError(f"not an expression: {e!r}")

    def flat_offset(self, terms: tuple[tuple[Dim, int], ...]) -> str:
        """A row-major offset with literal strides (innermost term last)."""
        parts = []
        for d, stride in terms:
            if d[0] is None:
                src = str(d[2] * stride)
            else:
                src = fmt_dim(d, self.suffix)
                if stride != 1:  # a bare (possibly negated) variable needs no parentheses
                    bare = d[2] == 0 and d[1] in (1, -1)
                    src = f"{src} * {stride}" if bare else f"({src}) * {stride}"
            if src != "0":
                parts.append(src)
        return " + ".join(parts) or "0"

    def cond(self, c: Any) -> str:
        if isinstance(c, Text):
            return c.text
        return " and ".join(f"i{b.var}{self.suffix} {b.op} {b.value}" for b in c)

    def range(self, start: Any, stop: Any, step: int) -> str:
        if step != 1:
            return f"range({self.expr(start)}, {self.expr(stop)}, {step})"
        if isinstance(start, int) and start == 0:
            return f"range({self.expr(stop)})"
        return f"range({self.expr(start)}, {self.expr(stop)})"

    # -- statements --------------------------------------------------------------------------
    def lines(self, stmts: Any, indent: str = "") -> list[str]:
        out: list[str] = []
        for s in stmts:
            out += self.stmt(s, indent)
        return out

    def stmt(self, s: Any, indent: str) -> list[str]:
        if isinstance(s, Comment):
            return [f"{indent}# {s.text}"]
        if isinstance(s, Line):
            return [indent + s.text]
        if isinstance(s, Assign):
            op = "=" if s.op == "=" else s.op
            return [f"{indent}{self.expr(s.target)} {op} {self.expr(s.value)}"]
        if isinstance(s, Reduce):
            return REDUCTIONS[s.op].fold_lines(self.expr(s.target), self.expr(s.value), indent)
        if isinstance(s, If):
            out = [f"{indent}if {self.cond(s.cond)}:", *self.lines(s.body, indent + INDENT)]
            if s.orelse:
                out += [f"{indent}else:", *self.lines(s.orelse, indent + INDENT)]
            return out
        if isinstance(s, For):
            return [f"{indent}for {self.expr(s.var)} in {self.range(s.start, s.stop, s.step)}:",
                    *self.lines(s.body, indent + INDENT)]
        if isinstance(s, ForIn):
            return [f"{indent}for {s.var} in {s.values!r}:", *self.lines(s.body, indent + INDENT)]
        if isinstance(s, ParallelFor):
            return self.parallel_for(s, indent)
        if isinstance(s, Private):
            return Printer(s.suffix).lines(s.body, indent)
        raise TypeError(f"not a statement: {s!r}")

    def parallel_for(self, s: ParallelFor, indent: str) -> list[str]:
        """Chunks of a serial loop over ``j`` from 0 with ``i0 = lo + j`` (see
        :func:`.passes.parallel_chunking` for why), on all threads; sums into scalars
        as partial sums per chunk, added in chunk order after the loop (module
        docstring)."""
        x = self.suffix
        folds = chunk_folds(s.body)
        inner = Printer(x, {**self.renamed, **{r: f"acc_{r}{x}" for r in folds}})
        chunk = indent + INDENT
        return [*(f"{indent}part_{r}{x} = np.empty({s.chunks})" for r in folds),
                f"{indent}for c{x} in prange({s.chunks}):  # {s.chunks} chunks of {s.size} rows, "
                "on all threads",
                f"{chunk}lo{x} = (c{x} & 0xFFFFFFFF) * {s.size} + {s.lo}",
                *(f"{chunk}acc_{r}{x} = {float(REDUCTIONS[op].identity('float64'))!r}"
                  for r, op in folds.items()),
                f"{chunk}for j{x} in range(min({s.size}, {s.hi} - lo{x})):",
                f"{chunk}    i0{x} = lo{x} + j{x}",
                *inner.lines(s.body, chunk + INDENT),
                *(f"{chunk}part_{r}{x}[c{x}] = acc_{r}{x}" for r in folds),
                *([f"{indent}for e{x} in range({s.chunks}):  # in chunk order"] if folds else []),
                *(line for r, op in folds.items() for line in REDUCTIONS[op].fold_lines(
                    self.expr(Scalar(r)), f"part_{r}{x}[e{x}]", indent + INDENT))]


def chunk_folds(body: Any) -> dict[str, Any]:
    """The kernel-wide scalars a parallel loop's ``body`` sums (or multiplies) into, with
    the reduction: ``{name: op}`` in order of first appearance. (The planner threads a
    nest with such a sink only for float64 scalars: the partial sums are float64.)"""
    folds: dict[str, Any] = {}
    for st, _ in walk(body):
        if (isinstance(st, Reduce) and isinstance(st.target, Scalar)
                and REDUCTIONS[st.op].thread_combinable):
            folds.setdefault(st.target.name, st.op)
    return folds


def print_lines(stmts: Any, indent: str = "") -> list[str]:
    """The source lines of ``stmts``."""
    return Printer().lines(stmts, indent)


__all__ = ["Printer", "print_lines", "fmt_dim", "fmt_index", "chunk_folds"]
