"""Passes over the loop IR (:mod:`.loop_ir`): pure functions, statements in, statements out.

The lowerings build a kernel body that says *what* runs; these passes decide *how*,
from the :class:`~.options.LoweringOptions` and the IR alone, and never touch the
generator's state:

- :func:`under` puts a nest's placed statements under a condition (the edges of stencils);
- :func:`write_out_columns` writes the short innermost axis of a nest (the k columns of
  a small frame, a :class:`~.loop_ir.Columns` template) out column by column;
- :func:`drop_dead` drops the temporaries nothing reads (on a nest's placed statements);
- :func:`parallel_chunks` runs the outermost loop of a :class:`~.loop_ir.Threadable`
  nest on all threads where that pays off, and writes it serial elsewhere;
- :func:`run_time_extents` reads the bounds of innermost loops at run time.

:func:`.numba_codegen.Generator.generate` runs the last two on the whole body, in
that order (a loop run on threads keeps its literal bounds).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Callable

from .loop_ir import (
    Apply,
    Assign,
    Columns,
    Comment,
    FlatLoad,
    For,
    ForIn,
    Guard,
    If,
    Lit,
    Load,
    LoopVar,
    Mul,
    ParallelFor,
    Placed,
    Private,
    Reduce,
    Scalar,
    Sum,
    Threadable,
    Var,
    atoms,
    code_lines,
    guard_depth,
    placed_local,
    slot_temp,
)
from .options import LoweringOptions

Stmts = tuple[Any, ...]


def _map_bodies(s: Any, f: Callable[[Stmts], Stmts]) -> Any:
    """``s`` with ``f`` applied to each statement list it holds (``s`` itself if none)."""
    if isinstance(s, If):
        return dataclasses.replace(s, body=f(s.body), orelse=f(s.orelse))
    if isinstance(s, (For, ForIn, ParallelFor, Private, Threadable)):
        return dataclasses.replace(s, body=f(s.body))
    return s


# ---- placed statements (before a nest's loops are written) -------------------------------------

def under(placed: list[Placed], guard: Guard, levels: int) -> list[Placed]:
    """``placed`` run under ``guard``, each no shallower than where the guard's loop
    variables exist (and no deeper than the ``levels`` loops written)."""
    return [Placed(min(max(p.depth, guard_depth(guard)), levels), p.stmts, guard, p.after)
            for p in placed]


# ---- columns written out ----------------------------------------------------------------------

def write_out_columns(placed: list[Any], options: LoweringOptions) -> list[Any]:
    """``placed`` with each :class:`~.loop_ir.Columns` template written out column by column.

    A short innermost loop (the k columns of a small frame) is the one LLVM would
    vectorise, and it has too few iterations to gain from that, while the work done
    once per element outside it (the primal, the single cotangent, their sqrt and
    div) runs scalar. Written out column by column, the next loop out (a spatial
    axis) becomes innermost and is vectorised, column work included.

    Each column starts with a comment ``# i<var> = <c>``, then a copy of the template
    with ``i<var>`` replaced by ``c`` in every index map and its locals renamed as the
    nest writer names them (:class:`~.loop_ir.Var`), so columns share no local. A
    common subexpression that depends on no column (:attr:`~.loop_ir.Placed.common`)
    is computed once, with the first column. ``placed`` itself is returned (the
    columns stay a template) when a template has more than ``options.unroll`` columns
    or the statements written out would exceed ``options.unroll_statements`` lines.
    """
    out: list[Placed] = []
    uses: Counter[int] = Counter()  # computations of each slot so far (its temporaries)
    for p in placed:
        if not isinstance(p, Columns):
            uses.update(v.slot for v in _defined(p) if v.slot is not None)
            out.append(p)
        elif p.stop - p.start > options.unroll:
            return placed
        else:
            _write_out(p, out, uses)
    if sum(code_lines(p.stmts) for p in out) > options.unroll_statements:
        return placed
    return out


def _write_out(cols: Columns, out: list[Placed], uses: Counter[int]) -> None:
    """Append the columns of ``cols`` to ``out`` (see :func:`write_out_columns`)."""
    once: dict[Var, Var] = {}    # locals of statements written with the first column only
    per_column: set[Var] = set()  # template locals assigned in every column
    for c in range(cols.start, cols.stop):
        out.append(Placed(cols.var, [Comment(f"i{cols.var} = {c}")]))
        names = dict(once)
        for p in cols.template:
            shared = p.common and not _reads_column(p, cols.var, per_column)
            if shared and c != cols.start:
                continue
            for v in _defined(p):
                if v.slot is not None:
                    new = slot_temp(v.slot, uses[v.slot])
                    uses[v.slot] += 1
                else:
                    new = placed_local(v.stem, len(out)) if v.stem else v
                names[v] = new
                if shared:
                    once[v] = new
                else:
                    per_column.add(v)

            def atom(a: Any, c: int = c, names: dict[Var, Var] = names) -> Any:
                return _column_atom(a, cols.var, c, names)

            out.append(Placed(p.depth, [_map_stmt(s, atom) for s in p.stmts], p.guard,
                              p.after))


def _defined(p: Placed) -> list[Var]:
    """The locals ``p`` assigns (``=``)."""
    return [s.target for s in p.stmts
            if isinstance(s, Assign) and s.op == "=" and isinstance(s.target, Var)]


def _reads_column(p: Placed, var: int, per_column: set[Var]) -> bool:
    """Does ``p`` read loop variable ``var`` or a local assigned in every column?"""
    found = False

    def look(a: Any) -> Any:
        nonlocal found
        if isinstance(a, Var):
            found = found or a in per_column
        elif isinstance(a, LoopVar):
            found = found or a.n == var
        elif isinstance(a, Load):
            found = found or any(d[0] == var for d in a.index)
        elif isinstance(a, FlatLoad):
            found = found or any(d[0] == var for d, _ in a.terms)
        return a

    for s in p.stmts:
        _map_stmt(s, look)
    return found


def _column_atom(a: Any, var: int, c: int, names: dict[Var, Var]) -> Any:
    """Atom ``a`` in column ``c``: ``i<var>`` replaced by ``c``, locals renamed."""
    def fix(d: Any) -> Any:
        v, scale, off = d
        return (None, 0, scale * c + off) if v == var else d

    if isinstance(a, Var):
        return names.get(a, a)
    if isinstance(a, LoopVar) and a.n == var:
        return Lit(str(c), True)
    if isinstance(a, Load):
        return Load(a.array, tuple(fix(d) for d in a.index))
    if isinstance(a, FlatLoad):
        return FlatLoad(a.array, tuple((fix(d), stride) for d, stride in a.terms))
    return a


def _map_stmt(s: Any, f: Callable[[Any], Any]) -> Any:
    """Flat statement ``s`` with ``f`` applied to every atom it reads or writes."""
    if isinstance(s, (Assign, Reduce)):
        return dataclasses.replace(s, target=_map_expr(s.target, f), value=_map_expr(s.value, f))
    if isinstance(s, Comment):
        return s
    raise TypeError(f"not a flat statement of a nest: {s!r}")


def _map_expr(e: Any, f: Callable[[Any], Any]) -> Any:
    if isinstance(e, Apply):
        return dataclasses.replace(e, args=tuple(f(a) for a in e.args))
    if isinstance(e, Mul):
        return Mul(f(e.a), f(e.b))
    if isinstance(e, Sum):
        return Sum(tuple(f(t) for t in e.terms), e.zero)
    return f(e)


# ---- dead temporaries --------------------------------------------------------------------------

def drop_dead(placed: list[Placed]) -> list[Placed]:
    """``placed`` without the temporaries nothing reads (and their comments).

    Regrouped products (:meth:`.nest_lowering.NestWriter.hoist_factors`) leave the
    product they replaced unread; its assignment is pure, so dropping it changes nothing.
    """
    while True:
        read: set[Var] = set()
        for p in placed:
            for s in p.stmts:
                if isinstance(s, (Assign, Reduce)):
                    read.update(a for a in atoms(s.value) if isinstance(a, Var))
                    if isinstance(s, Reduce) or s.op != "=":
                        read.update(a for a in atoms(s.target) if isinstance(a, Var))
        kept = [p for p in placed if not _dead(p, read)]
        if len(kept) == len(placed):
            return kept
        placed = kept


def _dead(p: Placed, read: set[Var]) -> bool:
    sets = [s for s in p.stmts if not isinstance(s, Comment)]
    return (len(sets) == 1 and isinstance(sets[0], Assign) and sets[0].op == "="
            and isinstance(sets[0].target, Var) and sets[0].target not in read)


# ---- parallel loops ------------------------------------------------------------------------

def parallel_chunking(lo: int, hi: int, chunks: int) -> tuple[int, int]:
    """(chunks, rows per chunk) of a loop ``for i0 in range(lo, hi)`` run on all threads.

    Each chunk is a serial loop over ``j`` from 0, with ``i0 = lo + j``: as in a
    serial loop with a literal start, LLVM then proves shifted indices non-negative,
    drops numba's wraparound selects and vectorises an innermost loop over the rows
    (a loop variable starting at a computed value defeats that). The chunk number is
    masked only to tell LLVM that it is not negative.
    """
    size = -(-(hi - lo) // chunks)
    return -(-(hi - lo) // size), size


def worth_threads(nest: Threadable, options: LoweringOptions) -> bool:
    """Does running ``nest``'s outermost loop on all threads pay off under ``options``?

    Only with two threads or more, at least two rows per chunk, and enough work in
    the whole nest to pay for starting the threads (more where starting them is slow:
    the ``workqueue`` layer).
    """
    if options.parallel_min_iterations is None or options.parallel_threads < 2:
        return False
    launch_factor = 1 if options.cheap_launch else options.parallel_workqueue_factor
    least = options.parallel_min_iterations * launch_factor
    return nest.rows >= 2 * options.parallel_chunks and nest.iterations >= least


def parallel_chunks(body: Stmts, options: LoweringOptions) -> Stmts:
    """``body`` with no :class:`~.loop_ir.Threadable` left.

    A nest worth it (:func:`worth_threads`) becomes a :class:`~.loop_ir.Private` scope
    (suffix ``_p<n>``, numbered in order: numba's parallel loops must not share a
    local with code outside them, every thread would write it) whose outermost
    ``for i0`` is a :class:`~.loop_ir.ParallelFor` in ``options.parallel_chunks``
    chunks; any other nest is spliced in as written, serial.
    """
    count = 0

    def run(stmts: Stmts) -> Stmts:
        nonlocal count
        out: list[Any] = []
        for s in stmts:
            if not isinstance(s, Threadable):
                out.append(_map_bodies(s, run))
            elif not worth_threads(s, options):
                out += run(s.body)
            else:
                count += 1
                out.append(Private(f"_p{count}", tuple(_chunked(t, options) for t in s.body)))
        return tuple(out)

    return run(tuple(body))


def _chunked(s: Any, options: LoweringOptions) -> Any:
    """The loop over ``i0`` as a :class:`~.loop_ir.ParallelFor`; other statements as they are."""
    if not (isinstance(s, For) and s.var == LoopVar(0)):
        return s
    chunks, size = parallel_chunking(s.start, s.stop, options.parallel_chunks)
    return ParallelFor(s.start, s.stop, chunks, size, s.body)


# ---- run-time extents --------------------------------------------------------------------------

def run_time_extents(body: Stmts) -> tuple[Stmts, dict[int, int]]:
    """Read the bounds of innermost loops (``For.stop_at_run_time``) at run time.

    Each such ``stop`` becomes the kernel-wide scalar ``n<stop>``; the returned table
    maps each bound to its position in the constant array of extents, in order of
    first use. With a literal trip count LLVM fully unrolls short innermost loops (the
    k columns of a frame) and, numba leaving the SLP vectorizer off, then runs them
    scalar; a bound it cannot see keeps the loop vectorizer in play. (The start stays
    a literal: LLVM then proves shifted indices non-negative and drops numba's
    wraparound selects. Columns few enough to be written out in the source never form
    a loop: see :func:`write_out_columns`.)
    """
    extents: dict[int, int] = {}

    def run(stmts: Stmts) -> Stmts:
        out = []
        for s in stmts:
            if isinstance(s, For) and s.stop_at_run_time:
                extents.setdefault(s.stop, len(extents))
                s = dataclasses.replace(s, stop=Scalar(f"n{s.stop}"), stop_at_run_time=False)
            out.append(_map_bodies(s, run))
        return tuple(out)

    return run(tuple(body)), extents


__all__ = ["under", "write_out_columns", "drop_dead", "parallel_chunks", "parallel_chunking",
           "worth_threads", "run_time_extents"]
