"""Row-blocked regions: items that share a long leading row axis, run block by block.

Matrix-product objectives (``X @ w`` with ``X`` of M x n, M large) make several
products over ``X`` with elementwise nests between them: ``X @ V``, ``X @ w``, then
``X.T @ T`` in an HVP, each a memory-bound pass over ``X`` with an M x k intermediate.
:func:`form_regions` (run on the plan by :func:`.numba_engine.lower`) groups consecutive items that
share the leading "row" axis of length M into a :class:`RowBlock`, run inside one loop
over blocks of B rows, so a block of ``X`` is read from memory once and reused from
cache by every item, and the M-row intermediates shrink to B rows. Members are

* einsums that *map* rows (``ij,ja->ia``: a row-indexed and a row-invariant operand),
  run on the block, and einsums that *contract* them (``ia,ij->ja``, ``i,ij->j``),
  summed over blocks;
* nests whose space leads with the row axis and whose every row-indexed slot is
  read and written at the block's own row (no shift or slice along the rows);
  reductions over the rows are summed over blocks (filled before the loop).

Row-invariant items met on the way (``lam * V``, a nest's scalar sinks) move before
the region, or after it when they need its results. A row-indexed slot written in the
region and needed after it (an output, a read of a later item) is written block by
block into its whole array; the others hold one block. A region forms when an input
is read by row by two or more of its items (including an einsum) and the axis holds
at least ``row_block_min_blocks`` blocks; B comes from ``row_block_bytes`` (or
``row_block``) of the :class:`~.options.LoweringOptions`. Programs without einsums
(Rosenbrock, stencils) never form one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..gc_pause import gc_paused
from ..program import Step
from .index_maps import operand_maps
from .kinds import EINSUM
from .loop_ir import IMap
from .matmul_forms import matmul_form
from .numba_plan import MAX_PIECES, Nest, Opaque, Plan, Sink, count_pieces
from .options import LoweringOptions

# ---- row-blocked regions ------------------------------------------------------------------

@dataclass
class RowBlock:
    """Items run block by block over the leading ("row") axis of length ``rows``.

    ``blocked`` are the slots read and written a block of ``block`` rows at a time
    (bases and views); of them, ``local`` ones exist only inside the region and hold
    one block (the arena gives them ``block`` rows). The others are whole arrays
    (inputs, outputs, slots read after the region) sliced per block. ``inits`` are the
    accumulators and reduction targets summed over blocks, filled before the loop;
    ``summed`` the outputs of einsums that contract the row axis (accumulated per
    block); ``shared`` the inputs that more than one item reads per block (the reuse
    the region is for: one read of each block from memory).
    """

    rows: int
    block: int
    items: list[Any]
    blocked: set[int]
    local: set[int]
    inits: list[int]
    summed: set[int]
    shared: list[int]


@dataclass
class _Access:
    """What one item does to memory, relative to a candidate row axis."""

    blocked_reads: set[int] = field(default_factory=set)
    blocked_writes: set[int] = field(default_factory=set)
    whole_reads: set[int] = field(default_factory=set)
    whole_writes: set[int] = field(default_factory=set)
    einsum: bool = False

    @property
    def reads(self) -> set[int]:
        return self.blocked_reads | self.whole_reads

    @property
    def writes(self) -> set[int]:
        return self.blocked_writes | self.whole_writes


class _Regions:
    """Find row-blocked regions in a plan's items (see :func:`form_regions`)."""

    def __init__(self, plan: Plan, options: LoweringOptions):
        self.plan = plan
        self.options = options
        self.slots = plan.program.slots
        self.producer = {s.output: s for s in plan.program.steps}

    def base(self, i: int) -> int:
        while i in self.plan.views:
            i = self.plan.views[i]
        return i

    def blockable(self, i: int, rows: int) -> bool:
        """Slot ``i`` (and every slot it is a view of) has ``rows`` as its leading axis."""
        while True:
            shape = self.slots[i].shape
            if not shape or shape[0] != rows:
                return False
            if i not in self.plan.views:
                return True
            i = self.plan.views[i]

    # -- what items read and write ---------------------------------------------------------
    def sink_loads(self, s: Sink) -> set[tuple[int, IMap]]:
        """Stored slots (with index maps) that computing sink ``s`` loads."""
        plan, slots = self.plan, self.slots
        if s.kind == "store":  # the stored value itself is computed
            step = self.producer[s.value]
            stack = list(zip(step.inputs, operand_maps(step, s.vmap, slots))) if step.inputs else []
        else:
            stack = list(s.values())
        loads: set[tuple[int, IMap]] = set()
        seen: set[tuple[int, IMap]] = set()
        while stack:
            i, m = stack.pop()
            if (i, m) in seen or i in plan.literals:
                continue
            seen.add((i, m))
            if i in plan.stored:
                loads.add((i, m))
                continue
            step = self.producer[i]
            if step.inputs:
                stack.extend(zip(step.inputs, operand_maps(step, m, slots)))
        return loads

    def plain_access(self, item: Any) -> _Access:
        """Reads and writes of an item run outside any region (whole arrays)."""
        acc = _Access()
        if isinstance(item, Opaque):
            acc.whole_reads = {self.base(i) for i in item.step.inputs
                               if i not in self.plan.literals}
            acc.whole_writes = {self.base(item.step.output)}
            return acc
        for s in item.sinks:
            acc.whole_reads |= {self.base(i) for i, _ in self.sink_loads(s)}
            acc.whole_writes.add(self.base(s.target))
        acc.whole_writes |= {self.base(t) for t in item.inits}
        return acc

    def row_access(self, item: Any, rows: int) -> _Access | None:
        """Reads and writes of ``item`` run on one block of rows, or None if it cannot."""
        if isinstance(item, Opaque):
            return self._einsum_access(item.step, rows)
        if not item.space or item.space[0] != rows:
            return None
        acc = _Access()
        for s in item.sinks:
            if not s.space or s.space[0] != rows or s.box[0] != (0, rows) \
                    or any(t.box[0] != (0, rows) for t in s.terms):
                return None
            target = self.base(s.target)
            if _uses(s.tmap, 0):
                if not self._by_row(s.target, s.tmap, rows):
                    return None
                acc.blocked_writes.add(target)
            elif s.kind == "reduce":  # a reduction over the rows: summed over blocks
                acc.whole_writes.add(target)
            else:
                return None
            for i, m in self.sink_loads(s):
                if not _uses(m, 0):
                    acc.whole_reads.add(self.base(i))
                elif self._by_row(i, m, rows):
                    acc.blocked_reads.add(self.base(i))
                else:  # shifted or strided along the rows: needs rows of other blocks
                    return None
        if any(self.base(t) not in acc.writes for t in item.inits):
            return None
        return acc

    def _by_row(self, i: int, m: IMap, rows: int) -> bool:
        """Map ``m`` reads slot ``i`` at row ``i0`` of the block, and ``i0`` nowhere else."""
        return m[0] == (0, 1, 0) and not _uses(m[1:], 0) and self.blockable(i, rows)

    def _einsum_access(self, step: Step, rows: int) -> _Access | None:
        """An einsum that maps rows (``ij,ja->ia``) or contracts them (``ia,ij->ja``)."""
        if step.primitive is not EINSUM or len(step.inputs) != 2:
            return None
        ins, so = step.kwargs["spec"].split("->")
        subs = ins.split(",")
        out = step.output
        if any(self.slots[i].dtype != "float64" or not self.slots[i].shape
               or self.slots[i].size == 0 for i in (*step.inputs, out)) \
                or matmul_form(subs[0], subs[1], so) is None:
            return None
        acc = _Access(einsum=True)
        if so and self.slots[out].shape[0] == rows and self.blockable(out, rows):
            r = so[0]  # maps rows: one operand is read by row, the other whole
            by_row = [n for n, s in enumerate(subs) if r in s]
            if len(by_row) != 1 or subs[by_row[0]].index(r) != 0 or so.count(r) != 1:
                return None
            a = step.inputs[by_row[0]]
            if not self.blockable(a, rows):
                return None
            acc.blocked_reads.add(self.base(a))
            acc.whole_reads.add(self.base(step.inputs[1 - by_row[0]]))
            acc.blocked_writes.add(self.base(out))
            return acc
        r = subs[0][0]
        if r in so or subs[1][:1] != r or subs[0].count(r) != 1 or subs[1].count(r) != 1 \
                or not all(self.blockable(i, rows) for i in step.inputs):
            return None
        acc.blocked_reads |= {self.base(i) for i in step.inputs}
        acc.whole_writes.add(self.base(out))
        return acc

    # -- regions ---------------------------------------------------------------------------
    def candidate_rows(self, item: Any) -> list[int]:
        """Row axes a region starting at ``item`` could block: leading axes of an einsum."""
        if not isinstance(item, Opaque) or item.step.primitive is not EINSUM:
            return []
        shapes = [self.slots[i].shape for i in (item.step.output, *item.step.inputs)]
        return sorted({s[0] for s in shapes if s}, reverse=True)

    def split(self, nest: Nest) -> tuple[Nest | None, Nest]:
        """A nest as (a nest of its scalar sinks or None, a nest of the others)."""
        scalar = [s for s in nest.sinks if not s.space]
        if not scalar or len(scalar) == len(nest.sinks):
            return None, nest
        row = [s for s in nest.sinks if s.space]
        targets = {s.target for s in scalar}
        head = Nest((), scalar, [t for t in nest.inits if t in targets])
        body = Nest(nest.space, row, [t for t in nest.inits if t not in targets])
        return head, body

    def try_region(self, items: list[Any], start: int,
                   rows: int) -> tuple[list, RowBlock, list, int] | None:
        """The region over ``rows`` starting at ``items[start]``: (hoisted, region, deferred, next).

        Items are scanned in order. One that runs by row joins the region (a nest's
        scalar sinks are split off and placed like other items); one that does not
        goes before the region, or after it when it reads what the region writes.
        The scan stops at a row item that conflicts with what the region already
        does (it reads a sum over the blocks, or a slot both by row and whole); the
        region ends at its last member, and later items keep their places.
        """
        opts = self.options
        if rows < opts.row_block_min_blocks * (opts.row_block or 8):
            return None
        members: list[tuple[int, Any]] = []
        accesses: list[_Access] = []
        hoisted: list[tuple[int, Any]] = []
        deferred: list[tuple[int, Any]] = []
        r_reads: set[int] = set()
        r_writes: set[int] = set()
        by_row: set[int] = set()  # slots the region accesses a block at a time ...
        whole: set[int] = set()   # ... and as whole arrays
        summed: set[int] = set()  # written whole: complete only after the last block
        d_reads: set[int] = set()
        d_writes: set[int] = set()

        def must_wait(acc: _Access) -> bool:
            """An item not run by row must follow the region (or what already does)."""
            return bool(acc.reads & (r_writes | d_writes)
                        or acc.writes & (r_reads | r_writes | d_reads | d_writes))

        def place(j: int, item: Any, acc: _Access) -> None:
            if must_wait(acc):
                deferred.append((j, item))
                d_reads.update(acc.reads)
                d_writes.update(acc.writes)
            else:
                hoisted.append((j, item))

        for j in range(start, len(items)):
            item = items[j]
            head, body = self.split(item) if isinstance(item, Nest) else (None, item)
            acc = self.row_access(body, rows)
            if acc is None:
                place(j, item, self.plain_access(item))
                continue
            head_acc = self.plain_access(head) if head is not None else _Access()
            waiting = d_writes | (head_acc.writes if must_wait(head_acc) else set())
            rowwise = acc.blocked_reads | acc.blocked_writes
            plain = acc.whole_reads | acc.whole_writes
            if acc.reads & (waiting | summed) or acc.writes & (d_reads | d_writes) \
                    or rowwise & (plain | whole) or plain & by_row:
                break
            if head is not None:
                place(j, head, head_acc)
            members.append((j, body))
            accesses.append(acc)
            r_reads |= acc.reads
            r_writes |= acc.writes
            by_row |= rowwise
            whole |= plain
            summed |= acc.whole_writes
        if not members:
            return None
        last = members[-1][0]
        return self._finish(items, last + 1, rows, [m for _, m in members], accesses,
                            [h for j, h in hoisted if j <= last],
                            [d for j, d in deferred if j <= last], r_writes)

    def _finish(self, items: list[Any], end: int, rows: int, members: list[Any],
                accesses: list[_Access], hoisted: list[Any], deferred: list[Any],
                r_writes: set[int]) -> tuple[list, RowBlock, list, int] | None:
        """Keep the region if it pays; choose its block size and what holds one block."""
        external_reads: dict[int, int] = {}
        for acc in accesses:
            for i in acc.blocked_reads - r_writes:
                external_reads[i] = external_reads.get(i, 0) + 1
        shared = sorted(i for i, n in external_reads.items() if n >= 2)
        if not shared or not any(a.einsum for a in accesses):
            return None
        blocked = set().union(*(a.blocked_reads | a.blocked_writes for a in accesses))
        views = {v for v in self.plan.views if self.base(v) in blocked and self.blockable(v, rows)}
        # slots needed whole after the region: program outputs, and reads of later items
        later: set[int] = {self.base(o) for o in self.plan.program.outputs}
        for item in deferred + items[end:]:
            later |= self.plain_access(item).reads
        local = {b for b in blocked & r_writes if b not in later}
        row_bytes = sum(int(np.prod(self.slots[b].shape[1:], dtype=np.int64)) * 8 for b in blocked)
        opts = self.options
        block = opts.row_block or max(8, opts.row_block_bytes // max(row_bytes, 1) // 8 * 8)
        if rows < opts.row_block_min_blocks * block:
            return None
        inits: list[int] = []
        for m in members:
            if isinstance(m, Nest):
                inits += [t for t in m.inits if self.base(t) not in blocked]
                m.inits = [t for t in m.inits if self.base(t) in blocked]
        summed = {self.base(m.step.output) for m in members if isinstance(m, Opaque)
                  and self.base(m.step.output) not in blocked}
        members = _merge_nests(members, accesses)
        region = RowBlock(rows, block, members, blocked | views, local, inits, summed, shared)
        return hoisted, region, deferred, end


def _merge_nests(members: list[Any], accesses: list[_Access]) -> list[Any]:
    """Join neighbouring nests of a region over the same space that share no slot written
    by either (they were apart only for work now moved out of the region, such as a
    scalar that needs the loss): one pass over the block, common terms computed once."""
    merged: list[Any] = []
    last: _Access | None = None
    for item, acc in zip(members, accesses):
        prev = merged[-1] if merged else None
        if isinstance(item, Nest) and isinstance(prev, Nest) and last is not None \
                and prev.space == item.space and not (acc.writes & (last.reads | last.writes)) \
                and not (acc.reads & last.writes) \
                and count_pieces(prev.sinks + item.sinks) <= MAX_PIECES:
            merged[-1] = Nest(prev.space, prev.sinks + item.sinks, prev.inits + item.inits)
            last = _Access(last.blocked_reads | acc.blocked_reads,
                           last.blocked_writes | acc.blocked_writes,
                           last.whole_reads | acc.whole_reads, last.whole_writes | acc.whole_writes)
            continue
        merged.append(item)
        last = acc
    return merged


def _uses(m: IMap, var: int) -> bool:
    return any(d[0] == var for d in m)


@gc_paused
def form_regions(plan: Plan, options: LoweringOptions) -> Plan:
    """Group the items that share a long leading row axis into :class:`RowBlock` regions.

    Scanning from an einsum over a row axis (``X @ w``, ``X.T @ u``), items that can run
    one block of rows at a time join the region; items that do not touch the rows are
    moved before it (or, when they need its results, after it). The region is kept
    when it pays: an input read by row by at least two of its items (a matrix read
    once per block instead of once per product) and at least ``row_block_min_blocks``
    blocks.
    """
    items = list(plan.items)
    out: list[Any] = []
    n = 0
    regions = _Regions(plan, options)
    while n < len(items):
        for rows in regions.candidate_rows(items[n]):
            found = regions.try_region(items, n, rows)
            if found is not None:
                hoisted, region, deferred, n = found
                out += hoisted + [region] + deferred
                break
        else:
            out.append(items[n])
            n += 1
    plan.items = out
    return plan
