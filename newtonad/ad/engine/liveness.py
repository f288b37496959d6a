"""Liveness of kernel statements, read off the loop IR (:mod:`.loop_ir`).

A long kernel is split into chunk functions (:mod:`.kernel_split`); what flows from
one chunk to the next follows from the names each top-level statement reads before it
writes them and the names it writes. Those are found here on the IR itself, by the
same rules as Python's scoping of the printed statement: locals and loop variables
print with the suffix of the :class:`~.loop_ir.Private` piece they are in (as
:mod:`.printer` prints them); an element stored into an array (``a[i] = v``) reads
the array's name and writes no name; a loop's variable and what its body assigns are
written but not *definite* (the loop may not run), nor what one branch of an ``if``
assigns; a max / min reduction assigns its target under a test. Statements given as
source (:class:`~.loop_ir.Line`, :class:`~.loop_ir.Text`) declare the names they read
and write; nothing here reads source text.
"""

from __future__ import annotations

from typing import Any

from .kinds import REDUCTIONS
from .loop_ir import (
    Apply,
    Assign,
    Comment,
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
)
from .printer import chunk_folds

Flow = tuple[set[str], set[str], set[str]]


class _Liveness:
    """Names read before being written (``exposed``) and written (``written``) by a
    sequence of statements; the caller's ``defined`` set collects those written on
    every path."""

    def __init__(self) -> None:
        self.exposed: set[str] = set()
        self.written: set[str] = set()

    # -- expressions -------------------------------------------------------------------------
    def read(self, e: Any, suffix: str, defined: set[str]) -> None:
        """The names expression ``e`` reads."""
        for name in _names(e, suffix):
            if name not in defined:
                self.exposed.add(name)

    def store(self, target: Any, suffix: str, defined: set[str]) -> None:
        """Assign ``target``: a name is written; an array element reads its array."""
        name = _name(target, suffix)
        if name is None:
            self.read(target, suffix, defined)
        else:
            defined.add(name)
            self.written.add(name)

    def write(self, name: str, defined: set[str]) -> None:
        defined.add(name)
        self.written.add(name)

    # -- statements --------------------------------------------------------------------------
    def block(self, stmts: Any, suffix: str, defined: set[str]) -> None:
        for s in stmts:
            self.stmt(s, suffix, defined)

    def stmt(self, s: Any, suffix: str, defined: set[str]) -> None:
        if isinstance(s, Comment):
            return
        if isinstance(s, Line):
            self.exposed.update(n for n in s.reads if n not in defined)
            for n in s.writes:
                self.write(n, defined)
        elif isinstance(s, Assign):
            self.read(s.value, suffix, defined)
            if s.op != "=":  # x += v reads x
                self.read(s.target, suffix, defined)
            self.store(s.target, suffix, defined)
        elif isinstance(s, Reduce):
            self.read(s.value, suffix, defined)
            self.read(s.target, suffix, defined)
            if REDUCTIONS[s.op].unconditional:  # target += value, target *= value
                self.store(s.target, suffix, defined)
            else:  # if value > target or value != value: target = value
                self.store(s.target, suffix, set(defined))
        elif isinstance(s, If):
            if isinstance(s.cond, Text):
                self.read(s.cond, suffix, defined)
            else:
                self.exposed.update(n for n in (f"i{b.var}{suffix}" for b in s.cond)
                                    if n not in defined)
            self.block(s.body, suffix, set(defined))
            self.block(s.orelse, suffix, set(defined))
        elif isinstance(s, For):
            self.read(s.start, suffix, defined)
            self.read(s.stop, suffix, defined)
            inner = set(defined)
            self.write(_loop_name(s.var, suffix), inner)
            self.block(s.body, suffix, inner)
        elif isinstance(s, ForIn):
            inner = set(defined)
            self.write(s.var, inner)
            self.block(s.body, suffix, inner)
        elif isinstance(s, ParallelFor):
            # for c in prange(..): lo = ..c..; for j in range(..lo..): i0 = lo + j; body
            # with sums into scalars (printer.parallel_for): part_r = np.empty(..) before,
            # acc_r = 0.0 in each chunk, then for e in range(..): r += part_r[e]
            folds = chunk_folds(s.body)
            for r in folds:
                self.write(f"part_{r}{suffix}", defined)
            inner = set(defined)
            for n in ("c", "lo", "j", "i0"):
                self.write(n + suffix, inner)
            for r in folds:
                self.write(f"acc_{r}{suffix}", inner)
            self.block(s.body, suffix, inner)
            if folds:
                self.write(f"e{suffix}", set(defined))
        elif isinstance(s, Private):
            self.block(s.body, s.suffix, defined)
        else:
            raise TypeError(f"liveness: not a statement: {s!r}")


def _name(e: Any, suffix: str) -> str | None:
    """The name ``e`` is, if it is one (a local, loop variable or kernel-wide name)."""
    if isinstance(e, Var):
        return e.name + suffix
    if isinstance(e, LoopVar):
        return f"i{e.n}{suffix}"
    if isinstance(e, Scalar):
        return e.name
    return None


def _loop_name(var: Any, suffix: str) -> str:
    if isinstance(var, Text):  # a bare name (see Text)
        return var.text
    name = _name(var, suffix)
    if name is None:
        raise TypeError(f"liveness: not a loop variable: {var!r}")
    return name


def _names(e: Any, suffix: str) -> list[str]:
    """The names expression ``e`` reads, as printed with ``suffix``."""
    out: list[str] = []
    _collect(e, suffix, out)
    return out


def _collect(e: Any, suffix: str, out: list[str]) -> None:
    kind = type(e)
    if kind is Var:
        out.append(e.name + suffix)
    elif kind is Apply:  # the most common: an operation on atoms
        for a in e.args:
            _collect(a, suffix, out)
    elif kind is Load:
        out.append(e.array)
        out += [f"i{d[0]}{suffix}" for d in e.index if d[0] is not None]
    elif kind is Scalar:
        out.append(e.name)
    elif kind is LoopVar:
        out.append(f"i{e.n}{suffix}")
    elif kind is Lit or kind is int:
        pass
    elif kind is Text:
        out += e.reads
    elif kind is FlatLoad:
        out.append(e.array)
        out += [f"i{d[0]}{suffix}" for d, _ in e.terms if d[0] is not None]
    elif kind is Mul:
        _collect(e.a, suffix, out)
        _collect(e.b, suffix, out)
    elif kind is Sum:
        for t in e.terms:
            _collect(t, suffix, out)
    elif not isinstance(e, int):  # (a bound may be any int)
        raise TypeError(f"liveness: not an expression: {e!r}")


def flow(stmt: Any) -> Flow:
    """``(exposed, written, definite)`` of one kernel statement (nested ones included).

    ``exposed``: the names it reads before writing them (globals such as ``np``,
    ``math`` and builtins are never among them); ``written``: the names it assigns
    (loop variables included); ``definite``: those assigned on every path. The same
    triple as Python's scoping of the printed statement gives.
    """
    if type(stmt) is Assign and stmt.op == "=":  # most statements: ``name = expression``
        target = _name(stmt.target, "")
        if target is not None:
            return set(_names(stmt.value, "")), {target}, {target}
    f = _Liveness()
    defined: set[str] = set()
    f.stmt(stmt, "", defined)
    return f.exposed, f.written, defined


def block_flow(stmts: Any) -> Flow:
    """:func:`flow` of a sequence of statements run one after another."""
    f = _Liveness()
    defined: set[str] = set()
    f.block(stmts, "", defined)
    return f.exposed, f.written, defined


__all__ = ["Flow", "block_flow", "flow"]
