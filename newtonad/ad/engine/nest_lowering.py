"""Loop nests of a plan as loop IR: statements placed at the loop depth they need.

A :class:`~.numba_plan.Nest` is split where its sinks start or stop (the edges of
stencils) into pieces; each piece is written by a :class:`NestWriter`, which turns
every fused step into one assignment at the shallowest loop depth where its operands
exist (common subexpressions under one index map are computed once). A short
innermost axis (the k columns of a small frame) is written as a
:class:`~.loop_ir.Columns` template of one column, which the pass
:func:`.passes.write_out_columns` writes out column by column (or, past the options'
bounds, declines: the piece is then written again as a plain loop nest). The placed
statements go into loops once the temporaries nothing reads are dropped
(:func:`.passes.drop_dead`). A piece whose outermost loop writes no element twice is
marked :class:`~.loop_ir.Threadable`; the pass :func:`.passes.parallel_chunks`
decides whether it runs on all threads.

:func:`lower_nest` returns a :class:`NestCode`: the statements, and the slots they
read, write and view flat; each piece's writer (its memo of computed values
included) lives only while that piece is written.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .index_maps import map_vars, operand_maps
from .kinds import CONVERT, MUL, REDUCTIONS
from .loop_ir import (
    Apply,
    Assign,
    Bound,
    Columns,
    Comment,
    FlatLoad,
    For,
    ForIn,
    Guard,
    If,
    IMap,
    LoopVar,
    Mul,
    Placed,
    Reduce,
    Scalar,
    Sum,
    Text,
    Threadable,
    Var,
    is_simple,
    placed_local,
    slot_temp,
)
from .numba_ops import PASS_THROUGH, literal_atom
from .numba_plan import Box, Nest, Sink, segments
from .passes import drop_dead, under, write_out_columns
from .where import Where

# The kernel generator (numba_codegen.Generator) calls these lowerings and is passed to
# them as ``gen``; it is not imported here, so the two modules do not depend on each other.
Generator = Any


class NestWriter:
    """The statements of one loop nest, placed at the loop depth they need.

    Depths are counted in loop variables: a value at depth ``d`` depends on ``i0`` ..
    ``i<d-1>``. ``levels`` is the number of loops written: one less than the nest's
    depth when its innermost axis is to be written out (:func:`unrolled_axis`). Then
    loop variable ``i<levels>`` is not a loop but a column, which a pass substitutes
    (:func:`.passes.write_out_columns`): statements that read it go in the innermost
    loop. The sinks that loop over it are written once, as a template of one column
    (:func:`_write_piece`); a value whose index map reads the column is a temporary of
    each column, any other is a common subexpression (:attr:`.loop_ir.Placed.common`).

    A writer lives while one piece is written: its memo of computed values, its
    placed statements and what it reads and writes are that piece's.
    """

    def __init__(self, gen: Generator, at: Where, nest: Nest, levels: int | None = None):
        self.g = gen
        self.at = at
        self.nest = nest
        self.levels = len(nest.space) if levels is None else levels
        self.flat: set[int] = set()     # slots read or written through flat views
        self.placed: list[Any] = []  # Placed, and a Columns template last
        self.memo: dict[tuple, tuple[Any, int]] = {}  # (slot, map) -> (atom, depth)
        self.uses: Counter[int] = Counter()
        self.products: dict[Var, tuple[tuple[Any, int], tuple[Any, int]]] = {}
        self.reads: dict[int, None] = {}   # base slots loaded from memory (in order)
        self.writes: dict[int, None] = {}  # base slots written (in order)

    def emit(self, depth: int, *stmts: Any, after: bool = False, common: bool = False) -> None:
        """Place ``stmts`` at loop depth ``depth`` (``after``: below that level's inner loop;
        ``common``: a common subexpression, see :class:`~.loop_ir.Placed`)."""
        self.placed.append(Placed(min(depth, self.levels), list(stmts), (), after, common))

    def guard_since(self, start: int, guard: Guard) -> None:
        """Run the statements placed from ``start`` on under ``guard`` (:func:`.passes.under`)."""
        self.placed[start:] = under(self.placed[start:], guard, self.levels)


    def load(self, i: int, m: IMap) -> Any:
        """Element ``m`` of stored slot ``i``.

        numba indexes a C-contiguous array with strides computed from its run-time
        shape. Below a written-out axis (a frame ``V[i, j, c]`` with the columns ``c``
        written out and ``j`` the innermost loop) LLVM cannot see the stride of ``j``,
        versions the loop on it being one, and then finds a false loop-carried
        dependence between the columns' stores: no vectorisation. There such elements
        are read and written through a flat view ``b<i>f`` at a row-major offset with
        literal strides. (All loop bounds of such a piece are literals, so LLVM also
        proves the offsets non-negative and drops numba's wraparound test.)
        """
        g = self.g
        shape = g.slots[i].shape
        inner = self.levels - 1
        axes = [a for a, d in enumerate(m) if d[0] == inner]
        if self.levels == len(self.nest.space) or i in g.plan.literals or self.at.is_scalar(i) \
                or not axes or all(n == 1 for n in shape[max(axes) + 1:]):
            return self.at.ref(i, m)
        self.flat.add(i)
        strides = [int(np.prod(shape[a + 1:], dtype=np.int64)) for a in range(len(shape))]
        return FlatLoad(f"{self.at.array(i)}f", tuple(zip(m, strides)))

    def value(self, i: int, m: IMap, compute: bool = False) -> tuple[Any, int]:
        """Slot ``i`` at index map ``m`` as an atom, and the loop depth it needs.

        A slot in memory is loaded, unless ``compute`` (the store that fills it).
        """
        key = self._key(i, m)
        if key in self.memo and not compute:
            return self.memo[key]
        g, plan = self.g, self.g.plan
        if i not in plan.literals and (compute or i not in plan.stored):
            self._operands_first(i, m)
        if i in plan.literals:
            result: tuple[Any, int] = (literal_atom(plan.literals[i], g.slots[i].dtype), 0)
        elif i in plan.stored and not compute:
            self.reads[g.base(i)] = None
            result = (self.load(i, m), map_vars(m))
        else:
            step = g.producer[i]
            maps = operand_maps(step, m, g.slots)
            operands = [self.value(j, jm) for j, jm in zip(step.inputs, maps)]
            prim = step.primitive
            if prim in PASS_THROUGH or (prim is CONVERT
                                        and step.kwargs["dtype"] == g.slots[step.inputs[0]].dtype):
                result = operands[0]
            else:
                floats = all(g.slots[j].dtype == "float64" for j in (*step.inputs, i))
                if prim is MUL and floats:
                    operands = self.hoist_factors(operands)
                in_dtypes = tuple(g.slots[j].dtype for j in step.inputs)
                expr = Apply(prim, tuple(o[0] for o in operands), in_dtypes, g.slots[i].dtype,
                             step.params)
                depth = max((o[1] for o in operands), default=0)
                temp = slot_temp(i, self.uses[i])
                self.uses[i] += 1
                # memoised, it is computed once; with a column in its index map, per column
                common = not compute and map_vars(m) <= self.levels
                self.emit(depth, Comment(g.describe(step)), Assign(temp, expr), common=common)
                if prim is MUL and floats:
                    self.products[temp] = (operands[0], operands[1])
                result = (temp, depth)
        if not compute:
            self.memo[key] = result
        return result

    def _key(self, i: int, m: IMap) -> tuple:
        return (i, m)

    def _operands_first(self, i: int, m: IMap) -> None:
        """Compute the operands of slot ``i`` at ``m`` (and theirs) without recursion.

        A fused chain can be as long as the program (a running sum over a Python loop
        traced term by term). The operands are visited depth first, left to right, and
        each computed once its own operands are: the order the recursive :meth:`value`
        would emit them in, at a depth of one call.
        """
        g, plan = self.g, self.g.plan
        step = g.producer[i]
        stack: list[tuple[int, IMap, bool]] = [
            (j, jm, False) for j, jm in reversed(list(zip(step.inputs,
                                                          operand_maps(step, m, g.slots))))]
        while stack:
            j, jm, expanded = stack.pop()
            if expanded:
                self.value(j, jm)
                continue
            if self._key(j, jm) in self.memo or j in plan.literals or j in plan.stored:
                continue  # known, or a leaf: value() needs no operands for it
            stack.append((j, jm, True))
            inner = g.producer[j]
            stack += [(k, km, False) for k, km in reversed(list(zip(
                inner.inputs, operand_maps(inner, jm, g.slots))))]

    def hoist_factors(self, operands: list[tuple[Any, int]]) -> list[tuple[Any, int]]:
        """Regroup ``(a * c1) * c2`` as ``a * (c1 * c2)`` when the ``c`` are shallower.

        Frame columns are the innermost loop; the factors that do not depend on the
        column (residuals, primal values, constants) are multiplied once per element
        instead of once per column. Only the rounding of the product changes.
        """
        (x, dx), (y, dy) = operands
        if dy > dx:
            (x, dx), (y, dy) = (y, dy), (x, dx)
        inner = self.products.get(x)
        if dy >= dx or inner is None:
            return operands
        (a, da), (c, dc) = inner
        if da < dc:
            (a, da), (c, dc) = (c, dc), (a, da)
        if dc >= dx:
            return operands
        key = ("*", c, y)  # once per pair (the columns of an unrolled frame share it)
        if key in self.memo:
            return [(a, da), self.memo[key]]
        temp = placed_local("f", len(self.placed))
        depth = max(dc, dy)
        self.emit(depth, Assign(temp, Mul(c, y)), common=True)
        self.products[temp] = ((c, dc), (y, dy))
        self.memo[key] = (temp, depth)
        return [(a, da), (temp, depth)]

    def simple(self, i: int, m: IMap) -> tuple[Any, int]:
        """Like :meth:`value`, but a name or literal (safe to repeat in an expression)."""
        src, depth = self.value(i, m)
        if is_simple(src):
            return src, depth
        temp = placed_local("v", len(self.placed))
        self.emit(depth, Assign(temp, src))
        return temp, depth

    def sink(self, s: Sink, terms: list | None = None, guarded: bool = False) -> None:
        """Emit the write of sink ``s`` (for ``gsum``: of its ``terms`` active here);
        ``guarded``: it will run under a condition (then a reduction goes straight
        into its target)."""
        g = self.g
        depth = len(s.space)
        self.writes[g.base(s.target)] = None
        target = self.load(s.target, s.tmap)
        if s.kind == "store":
            src, _ = self.value(s.value, s.vmap, compute=True)
            self.emit(depth, Comment(f"store s{s.value}"), Assign(target, src))
        elif s.kind == "gsum":
            parts = []
            for term in terms or []:
                src, _ = self.value(term.slot, term.vmap)
                parts.append(src)
                self.emit(depth, Comment(f"{g.describe(term.step)}  (gathered)"))
            zero = literal_atom(0, g.slots[s.target].dtype)
            self.emit(depth, Assign(target, Sum(tuple(parts), zero)))
        elif s.kind == "accum":
            src, _ = self.value(s.value, s.vmap)
            self.emit(depth, Comment(f"{g.describe(s.step)}  (scattered)"),
                      Assign(target, src, "+="))
        else:
            src, _ = self.simple(s.value, s.vmap)
            comment = Comment(g.describe(s.step))
            depth = min(depth, self.levels)
            if guarded or depth == 0 or self.at.is_scalar(s.target) or \
                    any(d[0] == depth - 1 for d in s.tmap):
                self.emit(depth, comment, Reduce(target, src, s.op))
                return
            # the target stays put in the innermost loop: reduce in a local there
            # (a register LLVM can vectorise), combined into the target after the loop
            acc = placed_local("acc", len(self.placed))
            start = literal_atom(g.plan.init[s.target], g.slots[s.target].dtype)
            self.emit(depth - 1, Assign(acc, start))
            self.emit(depth, comment, Reduce(acc, src, s.op))
            self.emit(depth - 1, Reduce(target, acc, s.op), after=True)

    def guarded_sink(self, s: Sink, full: Box) -> None:
        """Emit sink ``s`` for any box of the nest: each part runs under its box's condition.

        Every term gets its own common-subexpression table, so a statement never
        outlives the condition it was computed under. The statements are written
        unguarded and then put under their condition (:meth:`guard_since`).
        """
        g = self.g
        depth = len(s.space)
        own = condition(s.box, full)
        if s.kind != "gsum":
            self.memo, start = {}, len(self.placed)
            self.sink(s, guarded=bool(own))
            self.guard_since(start, own)
            return
        self.writes[g.base(s.target)] = None
        acc = placed_local("acc", len(self.placed))
        self.emit(depth, Assign(acc, literal_atom(0, g.slots[s.target].dtype)))
        for term in s.terms:
            self.memo, start = {}, len(self.placed)
            src, _ = self.value(term.slot, term.vmap)
            self.emit(depth, Comment(f"{g.describe(term.step)}  (gathered)"),
                      Assign(acc, src, "+="))
            self.guard_since(start, tuple(dict.fromkeys(own + condition(term.box, full))))
        start = len(self.placed)
        self.emit(depth, Assign(self.load(s.target, s.tmap), acc))
        self.guard_since(start, own)

    def render(self, box: tuple[tuple[Any, Any], ...], placed: list[Placed]) -> list[Any]:
        """Statements ``placed`` (this writer's, after passes) in loops over ``box`` (one
        range per loop variable); the temporaries nothing reads are dropped first.

        Bounds are ints, or expressions (the edge loops read them from a table). The
        innermost loop's literal bound is marked to be read at run time
        (:func:`.passes.run_time_extents`) unless an axis is written out below it:
        with the trip count known, LLVM proves that flat offsets do not wrap instead
        of giving up on too many run-time checks.
        """
        placed = drop_dead(placed)
        deepest = max((p.depth for p in placed), default=0)
        # a method, not a nested function calling itself: that closure would be a
        # reference cycle keeping this writer (and the generator) alive until a full
        # collection, which cost ~8 us per program step of long programs
        return self._level(0, box, placed, deepest)

    def _level(self, d: int, box: tuple[tuple[Any, Any], ...], placed: list[Placed],
               deepest: int) -> list[Any]:
        """The statements of loop depth ``d`` and, inside them, the loops below."""
        out = _at_depth(placed, d, False)
        if d < deepest:
            lo, hi = box[d]
            if d == 0 and self.at.region is not None:  # the rows of this block
                lo, hi = 0, Scalar("nb")
            run_time = (d == deepest - 1 and isinstance(hi, int)
                        and self.levels == len(self.nest.space))
            out.append(For(LoopVar(d), lo, hi, tuple(self._level(d + 1, box, placed, deepest)),
                           stop_at_run_time=run_time))
        return out + _at_depth(placed, d, True)


def _at_depth(placed: list[Placed], d: int, after: bool) -> list[Any]:
    """Statements of depth ``d`` (above or ``after`` the inner loop); consecutive ones
    under one guard share an ``if``."""
    out: list[Any] = []
    run: list[Any] = []
    open_guard: Guard = ()
    for p in placed:
        if p.depth != d or p.after != after:
            continue
        if p.guard != open_guard and p.guard:
            run = []
            out.append((p.guard, run))
        open_guard = p.guard
        (run if p.guard else out).extend(p.stmts)
    return [If(s[0], tuple(s[1])) if isinstance(s, tuple) else s for s in out]


def condition(box: Box, full: Box) -> Guard:
    """Bounds testing that the loop variables lie in ``box`` (where it is narrower)."""
    parts = []
    for d, ((lo, hi), (flo, fhi)) in enumerate(zip(box, full)):
        if lo > flo:
            parts.append(Bound(d, ">=", lo))
        if hi < fhi:
            parts.append(Bound(d, "<", hi))
    return tuple(parts)


def _covers(box: Box, where: Box) -> bool:
    return all(lo <= a and b <= hi for (lo, hi), (a, b) in zip(box, where))


@dataclass
class NestCode:
    """A nest's statements and what they do to memory: the base slots they load and
    write (in order), and the stored slots they access through flat views."""

    stmts: list[Any] = field(default_factory=list)
    reads: dict[int, None] = field(default_factory=dict)
    writes: dict[int, None] = field(default_factory=dict)
    flat: set[int] = field(default_factory=set)

    def add(self, stmts: list[Any], writer: NestWriter | None = None) -> None:
        """Append ``stmts`` (written by ``writer``)."""
        self.stmts += stmts
        if writer is not None:
            self.reads.update(writer.reads)
            self.writes.update(writer.writes)
            self.flat |= writer.flat


def lower_nest(gen: Generator, at: Where, nest: Nest) -> NestCode:
    """A loop nest, split where sinks start or stop (the edges of stencils).

    The largest piece of the split (the interior) is one loop nest holding the sinks
    (and the terms of gathered sums) that cover it, with no tests. The other pieces
    (the thin edges) share one loop nest over a table of their boxes, in which each
    sink and term runs under the condition that its box holds the index: edge code is
    written once instead of once per piece, which keeps compile time down. When a
    split falls in an axis that some sink does not loop over, every piece is written
    out instead (such a sink must run once, in the piece that starts its deeper ranges).
    """
    space = str(nest.space)
    if at.region is not None:  # in a row-blocked region the rows are those of the block
        trailing_comma = "," * (len(nest.space) == 1)
        space = "(" + ", ".join(["nb", *map(str, nest.space[1:])]) + trailing_comma + ")"
    code = NestCode()
    code.add([Comment(f"---- loop nest over {space}")])
    code.add([at.fill(t, gen.plan.init[t]) for t in nest.inits])
    segs = segments(nest.sinks)
    boxes = [tuple(segs[d][c] for d, c in enumerate(choice))
             for choice in itertools.product(*(range(len(s)) for s in segs))]
    split = [d for d, seg in enumerate(segs) if len(seg) > 1]
    if split and max(split) < min(len(s.space) for s in nest.sinks):
        interior = max(boxes, key=lambda b: int(np.prod([hi - lo for lo, hi in b])))
        _piece(code, gen, at, nest, interior, tuple(0 for _ in segs), boxes=True)
        edges = [b for b in boxes if b != interior]
        full = tuple(seg[0][:1] + seg[-1][1:] for seg in segs)
        writer = NestWriter(gen, at, nest)
        for s in nest.sinks:
            writer.guarded_sink(s, full[:len(s.space)])
        table = tuple(tuple(v for d in split for v in b[d]) for b in edges)
        bounds = tuple((Text(f"edge[{2 * split.index(d)}]", ("edge",)),
                        Text(f"edge[{2 * split.index(d) + 1}]", ("edge",)))
                       if d in split else full[d] for d in range(len(segs)))
        code.add([Comment(f"edges: {len(edges)} pieces {edges}"),
                  ForIn("edge", table, tuple(writer.render(bounds, writer.placed)))], writer)
        return code
    for choice in itertools.product(*(range(len(s)) for s in segs)):
        box = tuple(segs[d][c] for d, c in enumerate(choice))
        _piece(code, gen, at, nest, box, choice, boxes=bool(split))
    return code


def unrolled_axis(nest: Nest, box: Box, unroll: int) -> int | None:
    """The axis of ``box`` to write out instead of looping over, if any: the innermost
    one, when it is not the only one and has no more than ``unroll`` indices (the
    pass :func:`.passes.write_out_columns` says why, and has the last word)."""
    axis = len(nest.space) - 1
    if axis < 1 or box[axis][1] - box[axis][0] > unroll:
        return None
    return axis


def _piece(code: NestCode, gen: Generator, at: Where, nest: Nest, box: Box, choice: tuple,
           boxes: bool) -> None:
    """Add one piece of a nest to ``code``."""
    active = []
    for s in nest.sinks:
        n = len(s.space)
        if any(c != 0 for c in choice[n:]) or not _covers(s.box, box[:n]):
            continue
        active.append((s, [t for t in s.terms if _covers(t.box, box[:n])]))
    if not active:
        return
    axis = unrolled_axis(nest, box, gen.options.unroll)
    writer = _write_piece(gen, at, nest, active, box, axis)
    placed = write_out_columns(writer.placed, gen.options)
    if axis is not None and placed is writer.placed:
        # declined (too many statements): the piece is written again as a plain loop
        # nest; a template cannot run as a loop (each column has its own accumulators)
        writer = _write_piece(gen, at, nest, active, box, None)
        placed = writer.placed
    body = writer.render(box, placed)
    if independent_rows(at, writer, [s for s, _ in active], box):
        extents = [hi - lo for lo, hi in box[:writer.levels]]
        body = [Threadable(extents[0], int(np.prod(extents)), tuple(body))]
    code.add(([Comment(f"piece {box}")] if boxes else []) + body, writer)


def independent_rows(at: Where, writer: NestWriter, sinks: list[Sink], box: Box) -> bool:
    """Can the outermost loop of this piece run on several threads?

    It can when no two of its iterations write the same element: every sink inside
    the loop writes its target at an index that moves with the loop variable (a
    store, gathered sum or reduction along the other axes), or is a sum or product
    into a scalar (numba combines the threads' partial results); and the piece does
    not load what it writes (a stencil reading a neighbour another thread updates).
    Scattered sums (``accum``) stay serial, as do pieces inside row-blocked regions
    (their products call BLAS). Whether threads pay off is for the pass
    :func:`.passes.worth_threads` to decide.
    """
    if (at.region is not None or writer.levels == 0
            or not all(isinstance(lo, int) for lo, _ in box)):
        return False
    for s in sinks:
        if not s.space:
            continue  # runs once, before the loop
        moves = any(var == 0 and scale != 0 for var, scale, _ in s.tmap)
        # a sum into a scalar is added up per chunk in float64 (printer.chunk_folds)
        scalar_sum = (s.kind == "reduce" and at.is_scalar(s.target)
                      and REDUCTIONS[s.op].thread_combinable
                      and at.slots[s.target].dtype == "float64")
        if s.kind == "accum" or not (moves or scalar_sum):
            return False
    return not writer.reads.keys() & {writer.g.base(s.target) for s in sinks}


def _write_piece(gen: Generator, at: Where, nest: Nest, active: list, box: Box,
                 axis: int | None) -> NestWriter:
    """The sinks of one piece; with ``axis``, the sinks that loop over it last, as a
    :class:`~.loop_ir.Columns` template of the indices along it."""
    writer = NestWriter(gen, at, nest, levels=axis)
    for s, terms in active:
        if axis is None or len(s.space) <= axis:
            writer.sink(s, terms)
    deep = [(s, terms) for s, terms in active if axis is not None and len(s.space) > axis]
    if deep:
        assert axis is not None
        start = len(writer.placed)
        for s, terms in deep:
            writer.sink(s, terms)
        writer.placed[start:] = [Columns(axis, *box[axis], writer.placed[start:])]
    return writer


__all__ = ["NestWriter", "NestCode", "lower_nest", "independent_rows", "unrolled_axis", "drop_dead"]
