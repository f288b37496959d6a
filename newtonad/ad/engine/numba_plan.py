"""Fusion planning for the numba engine: which slots live in memory, and which loops.

A Program is partitioned into *items* run in order:

* a :class:`Nest` is one loop nest over an iteration *space* (a shape with its unit
  axes removed). It computes every value it needs from index expressions, so the
  elementwise steps, broadcasts, slices, transposes and unit reshapes that feed it are
  fused into its body, and writes a few *sinks*: stores of materialised slots,
  ``+=`` into accumulators (sums of ``unslice`` – the transposes of slicing, met in
  every gradient – are scattered, not gathered), and reductions;
* an :class:`Opaque` item runs one step that is not fused (einsum, gather, scatter,
  cumsum, concatenate) on materialised operands.

Values inside a nest are addressed by an *index map* (:data:`IMap`): one affine
:data:`Dim` ``var * scale + offset`` per axis of the slot, in the nest's loop
variables. Each step becomes one statement per distinct index map (common
subexpressions under the same map are computed once). Sinks whose spaces are prefixes
of one another share a nest, so the primal (shape ``s``) and a frame (``s + (k,)``)
are computed in one pass with the frame columns innermost.

Items that share a long leading row axis are then grouped into row-blocked regions
(:mod:`.row_blocks`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..gc_pause import gc_paused
from ..program import ArrayConst, Program, Slot, Step
from .index_maps import (
    ZERO,
    broadcast_map,
    identity_map,
    is_unit_reshape,
    operand_maps,
    shift,
    squeeze,
)
from .kinds import (
    ADD,
    CONST,
    OPAQUE,
    REDUCTIONS,
    RESHAPE,
    SUPPORTED,
    UNSLICE,
)
from .loop_ir import IMap


class Unsupported(Exception):
    """The program uses something this engine does not lower (the caller falls back)."""


# ---- plan records ------------------------------------------------------------------------------

Box = tuple[tuple[int, int], ...]  # a range of each loop variable


@dataclass(frozen=True)
class Term:
    """One term of a gathered sum: ``slot`` at ``vmap`` where the index lies in ``box``."""

    slot: int
    vmap: IMap
    box: Box
    step: Step


@dataclass(frozen=True)
class Leaf:
    """One addend of a sum of unslices: ``slot``, scattered (``unslice``) or ``dense``."""

    kind: str
    slot: int
    step: Step


@dataclass
class Sink:
    """One write of a nest.

    kind ``"store"``: ``target[tmap] = value``; ``"accum"``: ``target[tmap] += value``;
    ``"reduce"``: ``target[tmap] (op)= value`` with ``op`` a reduction primitive;
    ``"gsum"``: ``target[tmap] = sum of terms`` – a sum of unslices in *gather* form:
    each term ``(slot, map, box)`` contributes where the target index lies in its box,
    so every element is written once, with no zero fill and no loop-carried
    read-modify-write.

    ``box`` bounds each loop variable of the sink's space (default: the whole space).
    """

    kind: str
    value: int            # slot whose value is written
    vmap: IMap            # its index map in the sink's own space
    target: int           # slot written
    tmap: IMap            # index map of the target
    space: tuple[int, ...]
    op: Any = None            # the reduction primitive of a ``"reduce"`` sink
    step: Step | None = None  # the step the sink comes from (for comments)
    box: tuple[tuple[int, int], ...] = ()
    terms: list[Term] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.box:
            self.box = tuple((0, n) for n in self.space)

    def values(self) -> list[tuple[int, IMap]]:
        """The slots (with their index maps) this sink reads."""
        if self.kind == "gsum":
            return [(t.slot, t.vmap) for t in self.terms]
        return [(self.value, self.vmap)]


@dataclass
class Nest:
    space: tuple[int, ...]
    sinks: list[Sink] = field(default_factory=list)
    inits: list[int] = field(default_factory=list)  # slots to fill before the loops


@dataclass
class Opaque:
    step: Step


@dataclass
class Plan:
    """Everything codegen needs: the items, and what lives where.

    ``stored`` slots have memory (or a scalar local) and are loaded when read;
    ``write_only`` slots are stored (outputs, operands of opaque steps) but fused
    readers recompute them; ``views`` maps a slot to the slot it reshapes (same
    memory); ``init`` gives the fill value of accumulators and reductions.
    """

    program: Program
    items: list[Any]
    stored: set[int]
    write_only: set[int]
    views: dict[int, int]
    init: dict[int, Any]
    literals: dict[int, Any]   # const slots of size one: slot -> Python scalar
    const_arrays: list[int]    # const slots passed as arrays


# ---- the planner ---------------------------------------------------------------------------

class Planner:
    """Build a :class:`Plan`; ``forced`` slots are materialised (recompute budget)."""

    MAX_MAPS = 4  # distinct index maps of one slot in one nest before it is stored

    def __init__(self, program: Program, forced: frozenset[int] = frozenset()):
        self.p = program
        self.slots = program.slots
        self.forced = set(forced)
        self.producer: dict[int, Step] = {s.output: s for s in program.steps}
        self.users = program.consumers()
        self.outputs = set(program.outputs)
        self.step_index = {id(s): n for n, s in enumerate(program.steps)}
        for step in program.steps:
            if step.primitive not in SUPPORTED:
                raise Unsupported(step.primitive.name)

    # -- classification --------------------------------------------------------------
    def _classify(self) -> None:
        p, slots = self.p, self.slots
        self.literals: dict[int, Any] = {}
        self.const_arrays: list[int] = []
        self.stored: set[int] = set(p.inputs)
        self.views: dict[int, int] = {}
        self.write_only: set[int] = set()      # fusable slots stored for an output/opaque
        self.accum_of: dict[int, int] = {}      # tree node -> root
        self.accum_leaves: dict[int, list[Leaf]] = {}
        opaque_operands = {i for s in p.steps if s.primitive in OPAQUE for i in s.inputs}
        for step in p.steps:
            prim, out = step.primitive, step.output
            if prim is CONST:
                value = step.kwargs["value"]
                arr = value.array if isinstance(value, ArrayConst) else np.asarray(value)
                if arr.size == 1 and out not in opaque_operands:
                    self.literals[out] = arr.reshape(()).item()
                else:
                    self.const_arrays.append(out)
                    self.stored.add(out)
            elif prim in REDUCTIONS or prim in OPAQUE:
                self.stored.add(out)
        self._find_accumulators()
        for step in p.steps:
            prim, src, out = step.primitive, step.inputs[0] if step.inputs else -1, step.output
            if prim in OPAQUE:
                for i in step.inputs:
                    self._need_memory(i)
            elif prim is RESHAPE and (src in self.stored or not is_unit_reshape(
                    slots[src].shape, slots[out].shape)) and src not in self.literals \
                    and slots[src].shape != () and slots[out].shape != ():
                # a reshape of something in memory is a free view of it
                self._need_memory(src, for_read=True)
                self.views[out] = src
                self.stored.add(out)
        for i in self.forced:
            self._need_memory(i, for_read=True)
        for i in p.outputs:
            self._need_memory(i)

    def _need_memory(self, i: int, for_read: bool = False) -> None:
        """Give slot ``i`` memory; ``for_read``: fused readers load it instead of recomputing."""
        if i in self.stored or i in self.literals:
            return
        if for_read:
            self.stored.add(i)
            self.write_only.discard(i)
        else:
            self.write_only.add(i)

    def _find_accumulators(self) -> None:
        """Sums of unslices (and the unslices themselves) become scattered accumulators."""
        slots = self.slots
        # each tree's addends as a rope: a Leaf, or the slot of a tree it absorbed (a chain
        # of n additions would copy its growing list of leaves n times)
        parts: dict[int, list[Any]] = {}
        absorbed_roots: set[int] = set()
        for step in self.p.steps:
            prim, out = step.primitive, step.output
            if prim is UNSLICE:
                self.accum_of[out] = out
                parts[out] = [Leaf("unslice", step.inputs[0], step)]
            elif prim is ADD and slots[out].dtype != "bool":
                here = [self._index(step)]
                absorbed = [i for i in step.inputs
                            if i in self.accum_of and self.accum_of[i] == i
                            and i not in self.outputs and slots[i].shape == slots[out].shape
                            and self.users.get(i) == here and i not in self.forced]
                if not absorbed or step.inputs[0] == step.inputs[1]:
                    continue
                leaves: list[Any] = []
                for i in step.inputs:
                    if i in absorbed:
                        leaves.append(i)
                        absorbed_roots.add(i)
                        self.stored.discard(i)
                        self.write_only.discard(i)
                        self.accum_of[i] = out
                    else:
                        leaves.append(Leaf("dense", i, step))
                self.accum_of[out] = out
                parts[out] = leaves
        self.accum_leaves = {root: _flatten(parts, root) for root in parts
                             if root not in absorbed_roots}
        for root in self.accum_leaves:
            self.stored.add(root)
            self.write_only.discard(root)
        # nodes absorbed into a tree are never read (single consumer), drop their roots.
        # A node's parent comes later in the program (and in this dict's order): resolved
        # last to first, each node finds its parent's root already resolved.
        for node in reversed(list(self.accum_of)):
            self.accum_of[node] = self.accum_of[self.accum_of[node]]

    def _index(self, step: Step) -> int:
        return self.step_index[id(step)]

    # -- dependencies -------------------------------------------------------------------
    def after(self, i: int) -> int:
        """The last item that writes a slot in memory that computing slot ``i`` in a nest
        loads (-1: none; inputs and constants are there from the start).

        The number, not the set of those slots, is kept per slot: a fused chain as long
        as the program (a running sum) would keep sets of every length up to it. A
        stored slot's last writer is final once its own step is planned, before any
        slot that reads it asks.
        """
        memo = self._after
        if i in memo:
            return memo[i]
        # operands before the slots that read them, without recursion: a fused chain can
        # be as long as the program
        stack = [(i, False)]
        while stack:
            j, expanded = stack.pop()
            if j in memo:
                continue
            if j in self.literals:
                memo[j] = -1
            elif j in self.stored:
                memo[j] = self.ready.get(self._base(j), -1)
            elif expanded:
                memo[j] = max((memo[k] for k in self.producer[j].inputs), default=-1)
            else:
                stack.append((j, True))
                stack += [(k, False) for k in self.producer[j].inputs if k not in memo]
        return memo[i]

    # -- items --------------------------------------------------------------------------
    def plan(self) -> Plan:
        self._classify()
        self._after: dict[int, int] = {}
        self.items: list[Any] = []
        self.ready: dict[int, int] = {i: -1 for i in self.p.inputs}  # slot -> last writer item
        for i in self.const_arrays:
            self.ready[i] = -1
        init: dict[int, Any] = {}
        self._cuts: dict[int, _Cuts] = {}  # id(nest) -> the edges of its sinks' boxes
        for step in self.p.steps:
            prim, out = step.primitive, step.output
            slot = self.slots[out]
            if prim is CONST:
                continue
            if out in self.views:
                self.ready[out] = self.ready.get(self.views[out], -1)
                continue
            if prim in OPAQUE:
                self.items.append(Opaque(step))
                self.ready[out] = len(self.items) - 1
            elif prim in REDUCTIONS:
                x = step.inputs[0]
                xs = self.slots[x].shape
                vmap = identity_map(xs)
                tmap = tuple(d for a, d in enumerate(vmap) if a not in step.kwargs["axes"])
                init[out] = REDUCTIONS[prim].identity(slot.dtype)
                self._add_sink(Sink("reduce", x, vmap, out, tmap, squeeze(xs), prim, step))
            elif out in self.accum_leaves and self._gatherable(out) and \
                    count_pieces([self._gather_sink(out, slot)]) <= MAX_PIECES:
                self._add_sink(self._gather_sink(out, slot))
            elif out in self.accum_leaves:
                init[out] = 0
                for kind, leaf, lstep in ((f.kind, f.slot, f.step) for f in self.accum_leaves[out]):
                    if kind == "unslice":
                        ls = self.slots[leaf].shape
                        vmap = identity_map(ls)
                        sl = lstep.kwargs["slices"]
                        tmap = tuple(shift(d, sl[a][0], sl[a][2]) if a < len(sl) else d
                                     for a, d in enumerate(vmap))
                        self._add_sink(Sink("accum", leaf, vmap, out, tmap, squeeze(ls), None,
                                            lstep))
                    else:
                        tmap = identity_map(slot.shape)
                        vmap = broadcast_map(tmap, slot.shape, self.slots[leaf].shape)
                        self._add_sink(Sink("accum", leaf, vmap, out, tmap, squeeze(slot.shape),
                                            None, lstep))
            elif out in self.write_only or (out in self.stored and out not in self.accum_of):
                m = identity_map(slot.shape)
                self._add_sink(Sink("store", out, m, out, m, squeeze(slot.shape), None, step))
        # fill accumulators in the first nest that writes them
        filled: set[int] = set()
        for item in self.items:
            if isinstance(item, Nest):
                for s in item.sinks:
                    if s.target in init and s.target not in item.inits and s.target not in filled:
                        item.inits.append(s.target)
                filled.update(item.inits)
        return Plan(self.p, self.items, self.stored, self.write_only, self.views, init,
                    self.literals, self.const_arrays)

    def _base(self, i: int) -> int:
        while i in self.views:
            i = self.views[i]
        return i

    def _gatherable(self, root: int) -> bool:
        """Every unslice leaf has unit steps (so gather form is an affine map)."""
        return all(f.kind == "dense" or all(abs(st) == 1 for _, _, st in f.step.kwargs["slices"])
                   for f in self.accum_leaves[root])

    def _gather_sink(self, root: int, slot: Slot) -> Sink:
        tmap = identity_map(slot.shape)
        space = squeeze(slot.shape)
        terms = []
        for kind, leaf, lstep in ((f.kind, f.slot, f.step) for f in self.accum_leaves[root]):
            ls = self.slots[leaf].shape
            if kind == "dense":
                terms.append(Term(leaf, broadcast_map(tmap, slot.shape, ls),
                                  tuple((0, n) for n in space), lstep))
                continue
            sl = lstep.kwargs["slices"]
            box = [(0, n) for n in space]
            vmap = []
            for d, (t, n) in enumerate(zip(tmap, ls)):
                if t[0] is None or d >= len(sl):
                    vmap.append(t if t[0] is not None else ZERO)
                    continue
                start, _, step = sl[d]
                # leaf index = step * (j - start), valid for j in the leaf's extent
                vmap.append((t[0], step, -step * start))
                box[t[0]] = (start, start + n) if step == 1 else (start - n + 1, start + 1)
            terms.append(Term(leaf, tuple(vmap), tuple(box), lstep))
        return Sink("gsum", root, tmap, root, tmap, space, None, None, terms=terms)

    def _add_sink(self, sink: Sink) -> None:
        if sink.kind == "store":  # the stored slot itself is computed, not loaded
            reads = self.producer[sink.value].inputs
        else:
            reads = tuple(v for v, _ in sink.values())
        after = max((self.after(j) for j in reads), default=-1)
        chosen = None
        for n in range(len(self.items) - 1, after, -1):
            item = self.items[n]
            if isinstance(item, Nest) and _compatible(item.space, sink.space) \
                    and len(item.sinks) < MAX_NEST_SINKS \
                    and self._cuts[id(item)].pieces_with(sink) <= MAX_PIECES:
                chosen = n
                break
        if chosen is None:
            self.items.append(Nest(sink.space))
            chosen = len(self.items) - 1
            self._cuts[id(self.items[chosen])] = _Cuts()
        nest = self.items[chosen]
        nest.sinks.append(sink)
        self._cuts[id(nest)].add(sink)
        nest.space = tuple(max(a, b) for a, b in zip(nest.space, sink.space)) + \
            nest.space[len(sink.space):] + sink.space[len(nest.space):]
        self.ready[sink.target] = max(self.ready.get(sink.target, -1), chosen)


STENCIL_SLACK = 4  # extents that differ by at most this much share a nest (split loops)
MAX_PIECES = 9     # a nest is split into at most this many boxes (code size, compile time)
#: A nest takes at most this many sinks. Without a bound, a Python loop over slices traced
#: term by term (thousands of sinks over one space) became one loop nest as long as the
#: program, which no kernel split can divide; bounded nests are the units
#: :mod:`.kernel_split` packs into chunk functions. Nests of ordinary programs hold a few
#: sinks (the largest among the built-in problems' derivatives: well under this).
MAX_NEST_SINKS = 64


class _Cuts:
    """The box edges per loop variable of a nest's sinks (kept as sinks are added, so
    that asking whether one more sink fits costs the same however many it holds)."""

    def __init__(self) -> None:
        self.edges: list[set[int]] = []
        self.extent: list[int] = []

    @staticmethod
    def _boxes(sink: Sink) -> list:
        return [sink.box] + [t.box for t in sink.terms]

    def pieces_with(self, sink: Sink) -> int:
        """:func:`count_pieces` of this nest's sinks and ``sink``."""
        depth = max(len(self.edges), len(sink.space))
        total = 1
        for d in range(depth):
            cuts = set(self.edges[d]) if d < len(self.edges) else set()
            for box in self._boxes(sink):
                if d < len(box):
                    cuts.update(box[d])
            extent = max(self.extent[d] if d < len(self.extent) else 0,
                         sink.space[d] if d < len(sink.space) else 0)
            cuts.add(0)
            cuts.add(extent)
            total *= len(cuts) - 1
        return total

    def add(self, sink: Sink) -> None:
        while len(self.edges) < len(sink.space):
            self.edges.append(set())
            self.extent.append(0)
        for box in self._boxes(sink):
            for d, (lo, hi) in enumerate(box):
                self.edges[d].update((lo, hi))
        for d, n in enumerate(sink.space):
            self.extent[d] = max(self.extent[d], n)


def segments(sinks: list[Sink]) -> list[list[tuple[int, int]]]:
    """Per loop variable, the ranges between the edges of all sink and term boxes."""
    depth = max((len(s.space) for s in sinks), default=0)
    cuts: list[set[int]] = [set() for _ in range(depth)]
    for s in sinks:
        for box in [s.box] + [t.box for t in s.terms]:
            for d, (lo, hi) in enumerate(box):
                cuts[d].update((lo, hi))
    for d, c in enumerate(cuts):
        c.add(0)
        c.add(max(s.space[d] for s in sinks if len(s.space) > d))
    return [list(zip(sorted(c)[:-1], sorted(c)[1:])) for c in cuts]


def count_pieces(sinks: list[Sink]) -> int:
    """How many boxes the loop splitting of these sinks makes."""
    return int(np.prod([len(seg) for seg in segments(sinks)], dtype=np.int64))


def _flatten(parts: dict[int, list[Any]], root: int) -> list[Leaf]:
    """The leaves of accumulator tree ``root`` in order (``parts``: see
    :meth:`Planner._find_accumulators`); iterative, as a tree can be as deep as the
    program."""
    out: list[Leaf] = []
    stack = [iter(parts[root])]
    while stack:
        for x in stack[-1]:
            if isinstance(x, Leaf):
                out.append(x)
            else:
                stack.append(iter(parts[x]))
                break
        else:
            stack.pop()
    return out


def _compatible(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(abs(x - y) <= STENCIL_SLACK for x, y in zip(a, b))


@gc_paused
def make_plan(program: Program) -> Plan:
    """Plan ``program``; slots recomputed under too many index maps are materialised.

    Row-blocked regions are formed afterwards, from this plan, by
    :func:`.row_blocks.form_regions` (see :func:`.numba_engine.lower`).
    """
    forced: frozenset[int] = frozenset()
    for _ in range(8):
        plan = Planner(program, forced).plan()
        heavy = count_maps(plan)
        if not heavy - forced:
            break
        forced = forced | heavy
    return plan


def count_maps(plan: Plan) -> set[int]:
    """Fusable slots that some nest would compute under more than MAX_MAPS index maps."""
    producer = {s.output: s for s in plan.program.steps}
    slots = plan.program.slots
    heavy: set[int] = set()
    for item in plan.items:
        if not isinstance(item, Nest):
            continue
        seen: dict[int, set[IMap]] = {}
        stack = [v for s in item.sinks for v in s.values()]
        visited: set[tuple[int, IMap]] = set()
        while stack:
            i, m = stack.pop()
            if (i, m) in visited or i in plan.stored or i in plan.literals:
                continue
            visited.add((i, m))
            seen.setdefault(i, set()).add(m)
            step = producer[i]
            if step.inputs:
                for j, jm in zip(step.inputs, operand_maps(step, m, slots)):
                    stack.append((j, jm))
        heavy |= {i for i, ms in seen.items() if len(ms) > Planner.MAX_MAPS}
    return heavy

