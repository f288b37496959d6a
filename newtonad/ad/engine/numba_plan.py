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

Row-blocked regions
-------------------
Matrix-product objectives (``X @ w`` with ``X`` of M x n, M large) make several
products over ``X`` with elementwise nests between them: ``X @ V``, ``X @ w``, then
``X.T @ T`` in an HVP, each a memory-bound pass over ``X`` with an M x k intermediate.
:func:`form_regions` (run last by :func:`make_plan`) groups consecutive items that
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
at least ``ROW_BLOCK_MIN_BLOCKS`` blocks; B comes from ``ROW_BLOCK_BYTES`` (or
``ROW_BLOCK``). Programs without einsums (Rosenbrock, stencils) never form one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..program import ArrayConst, Program, Slot, Step

# ---- index maps ------------------------------------------------------------------------------

Dim = tuple[int | None, int, int]  # (loop variable or None, scale, offset)
IMap = tuple[Dim, ...]
ZERO: Dim = (None, 0, 0)

ELEMENTWISE = frozenset("""neg exp log log1p expm1 sqrt sin cos tan arcsin arccos arctan sinh
    cosh tanh square reciprocal abs sign floor ceil stop_gradient logical_not integer_pow add
    sub mul div pow maximum minimum arctan2 lt le gt ge eq ne logical_and logical_or select
    convert erf erfc gammaln logit expit log_expit entr xlogy xlog1py hypot arcsinh arccosh
    arctanh cbrt rint trunc remainder fmod floor_divide""".split())
INDEXING = frozenset({"broadcast_to", "slice", "transpose"})
REDUCTIONS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod"})
OPAQUE = frozenset({"einsum", "gather", "scatter_add", "cumsum", "concatenate"})
SUPPORTED = ELEMENTWISE | INDEXING | REDUCTIONS | OPAQUE | {"const", "reshape", "unslice"}


class Unsupported(Exception):
    """The program uses something this engine does not lower (the caller falls back)."""


def squeeze(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The iteration space of ``shape``: its axes of length other than one."""
    return tuple(n for n in shape if n != 1)


def identity_map(shape: tuple[int, ...]) -> IMap:
    """Index ``shape`` by the loop variables of ``squeeze(shape)``, in order."""
    dims, var = [], 0
    for n in shape:
        if n == 1:
            dims.append(ZERO)
        else:
            dims.append((var, 1, 0))
            var += 1
    return tuple(dims)


def broadcast_map(out: IMap, out_shape: tuple[int, ...], in_shape: tuple[int, ...]) -> IMap:
    """The index map of an operand broadcast (NumPy rules) to ``out_shape``."""
    lead = len(out_shape) - len(in_shape)
    return tuple(ZERO if n == 1 else out[lead + d] for d, n in enumerate(in_shape))


def shift(d: Dim, start: int, step: int) -> Dim:
    """``start + step * d``."""
    var, scale, offset = d
    return (var, scale * step, start + step * offset) if var is not None else (None, 0, start + step * offset)


def is_unit_reshape(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> bool:
    """True when a reshape only inserts or removes axes of length one."""
    return squeeze(in_shape) == squeeze(out_shape)


def unit_reshape_map(out: IMap, out_shape: tuple[int, ...], in_shape: tuple[int, ...]) -> IMap:
    real = iter(d for d, n in zip(out, out_shape) if n != 1)
    return tuple(ZERO if n == 1 else next(real) for n in in_shape)


def operand_maps(step: Step, out: IMap, slots: tuple[Slot, ...]) -> list[IMap]:
    """Index maps of a fusable step's operands, given the map of its output."""
    name, kw = step.primitive.name, step.kwargs
    out_shape = slots[step.output].shape
    shapes = [slots[i].shape for i in step.inputs]
    if name in ELEMENTWISE or name == "broadcast_to":
        return [broadcast_map(out, out_shape, s) for s in shapes]
    if name == "slice":
        sl = kw["slices"]
        return [tuple(shift(d, sl[a][0], sl[a][2]) if a < len(sl) else d for a, d in enumerate(out))]
    if name == "transpose":
        perm = kw["perm"]
        m: list[Dim] = [ZERO] * len(perm)
        for i, p in enumerate(perm):
            m[p] = out[i]
        return [tuple(m)]
    if name == "reshape":
        return [unit_reshape_map(out, out_shape, shapes[0])]
    raise AssertionError(name)


def map_vars(m: IMap) -> int:
    """The loop depth an index map needs: one more than its deepest variable."""
    return max((d[0] + 1 for d in m if d[0] is not None), default=0)


# ---- plan records ------------------------------------------------------------------------------

@dataclass
class Sink:
    """One write of a nest.

    kind ``"store"``: ``target[tmap] = value``; ``"accum"``: ``target[tmap] += value``;
    ``"reduce"``: ``target[tmap] (op)= value`` with ``op`` one of sum/prod/max/min;
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
    op: str = ""
    step: Step | None = None  # the step the sink comes from (for comments)
    box: tuple[tuple[int, int], ...] = ()
    terms: list[tuple[int, IMap, tuple[tuple[int, int], ...], Step]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.box:
            self.box = tuple((0, n) for n in self.space)

    def values(self) -> list[tuple[int, IMap]]:
        """The slots (with their index maps) this sink reads."""
        if self.kind == "gsum":
            return [(t[0], t[1]) for t in self.terms]
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

def _fill_value(name: str, dtype: str) -> Any:
    """The identity of a reduction (``accum`` and ``reduce_sum``: zero)."""
    if name in ("reduce_sum", "accum"):
        return 0
    if name == "reduce_prod":
        return 1
    if dtype == "bool":
        return name == "reduce_min"
    if dtype == "int64":
        return int(np.iinfo(np.int64).max if name == "reduce_min" else np.iinfo(np.int64).min)
    return float("inf") if name == "reduce_min" else float("-inf")


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
            if step.primitive.name not in SUPPORTED:
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
        self.accum_leaves: dict[int, list[tuple[str, int, Step]]] = {}
        opaque_operands = {i for s in p.steps if s.primitive.name in OPAQUE for i in s.inputs}
        for step in p.steps:
            name, out = step.primitive.name, step.output
            if name == "const":
                value = step.kwargs["value"]
                arr = value.array if isinstance(value, ArrayConst) else np.asarray(value)
                if arr.size == 1 and out not in opaque_operands:
                    self.literals[out] = arr.reshape(()).item()
                else:
                    self.const_arrays.append(out)
                    self.stored.add(out)
            elif name in REDUCTIONS or name in OPAQUE:
                self.stored.add(out)
        self._find_accumulators()
        for step in p.steps:
            name, src, out = step.primitive.name, step.inputs[0] if step.inputs else -1, step.output
            if name in OPAQUE:
                for i in step.inputs:
                    self._need_memory(i)
            elif name == "reshape" and (src in self.stored or not is_unit_reshape(
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
        for step in self.p.steps:
            name, out = step.primitive.name, step.output
            if name == "unslice":
                self.accum_of[out] = out
                self.accum_leaves[out] = [("unslice", step.inputs[0], step)]
            elif name == "add" and slots[out].dtype != "bool":
                absorbed = [i for i in step.inputs
                            if i in self.accum_of and self.accum_of[i] == i and i not in self.outputs
                            and slots[i].shape == slots[out].shape and self.users.get(i) == [self._index(step)]
                            and i not in self.forced]
                if not absorbed or step.inputs[0] == step.inputs[1]:
                    continue
                leaves = []
                for i in step.inputs:
                    if i in absorbed:
                        leaves.extend(self.accum_leaves.pop(i))
                        self.stored.discard(i)
                        self.write_only.discard(i)
                        self.accum_of[i] = out
                    else:
                        leaves.append(("dense", i, step))
                self.accum_of[out] = out
                self.accum_leaves[out] = leaves
        for root in self.accum_leaves:
            self.stored.add(root)
            self.write_only.discard(root)
        # nodes absorbed into a tree are never read (single consumer), drop their roots
        for node, root in list(self.accum_of.items()):
            r = root
            while self.accum_of[r] != r:
                r = self.accum_of[r]
            self.accum_of[node] = r

    def _index(self, step: Step) -> int:
        return self.step_index[id(step)]

    # -- dependencies -------------------------------------------------------------------
    def deps(self, i: int) -> frozenset[int]:
        """Slots in memory that computing slot ``i`` in a nest loads."""
        memo = self._deps
        if i in memo:
            return memo[i]
        if i in self.stored or i in self.literals:
            r = frozenset() if i in self.literals else frozenset({i})
        else:
            step = self.producer[i]
            r = frozenset().union(*(self.deps(j) for j in step.inputs)) if step.inputs else frozenset()
        memo[i] = r
        return r

    # -- items --------------------------------------------------------------------------
    def plan(self) -> Plan:
        self._classify()
        self._deps: dict[int, frozenset[int]] = {}
        self.items: list[Any] = []
        self.ready: dict[int, int] = {i: -1 for i in self.p.inputs}  # slot -> last writer item
        for i in self.const_arrays:
            self.ready[i] = -1
        init: dict[int, Any] = {}
        for step in self.p.steps:
            name, out = step.primitive.name, step.output
            slot = self.slots[out]
            if name == "const":
                continue
            if out in self.views:
                self.ready[out] = self.ready.get(self.views[out], -1)
                continue
            if name in OPAQUE:
                self.items.append(Opaque(step))
                self.ready[out] = len(self.items) - 1
            elif name in REDUCTIONS:
                x = step.inputs[0]
                xs = self.slots[x].shape
                vmap = identity_map(xs)
                tmap = tuple(d for a, d in enumerate(vmap) if a not in step.kwargs["axes"])
                init[out] = _fill_value(name, slot.dtype)
                self._add_sink(Sink("reduce", x, vmap, out, tmap, squeeze(xs), name, step))
            elif out in self.accum_leaves and self._gatherable(out) and \
                    count_pieces([self._gather_sink(out, slot)]) <= MAX_PIECES:
                self._add_sink(self._gather_sink(out, slot))
            elif out in self.accum_leaves:
                init[out] = 0
                for kind, leaf, lstep in self.accum_leaves[out]:
                    if kind == "unslice":
                        ls = self.slots[leaf].shape
                        vmap = identity_map(ls)
                        sl = lstep.kwargs["slices"]
                        tmap = tuple(shift(d, sl[a][0], sl[a][2]) if a < len(sl) else d
                                     for a, d in enumerate(vmap))
                        self._add_sink(Sink("accum", leaf, vmap, out, tmap, squeeze(ls), "", lstep))
                    else:
                        tmap = identity_map(slot.shape)
                        vmap = broadcast_map(tmap, slot.shape, self.slots[leaf].shape)
                        self._add_sink(Sink("accum", leaf, vmap, out, tmap, squeeze(slot.shape), "", lstep))
            elif out in self.write_only or (out in self.stored and out not in self.accum_of):
                m = identity_map(slot.shape)
                self._add_sink(Sink("store", out, m, out, m, squeeze(slot.shape), "", step))
        # fill accumulators in the first nest that writes them
        for n, item in enumerate(self.items):
            if isinstance(item, Nest):
                for s in item.sinks:
                    if s.target in init and s.target not in item.inits and not self._filled(s.target, n):
                        item.inits.append(s.target)
        return Plan(self.p, self.items, self.stored, self.write_only, self.views, init,
                    self.literals, self.const_arrays)

    def _filled(self, target: int, before: int) -> bool:
        return any(isinstance(it, Nest) and target in it.inits for it in self.items[:before])

    def _base(self, i: int) -> int:
        while i in self.views:
            i = self.views[i]
        return i

    def _gatherable(self, root: int) -> bool:
        """Every unslice leaf has unit steps (so gather form is an affine map)."""
        return all(kind == "dense" or all(abs(st) == 1 for _, _, st in lstep.kwargs["slices"])
                   for kind, _, lstep in self.accum_leaves[root])

    def _gather_sink(self, root: int, slot: Slot) -> Sink:
        tmap = identity_map(slot.shape)
        space = squeeze(slot.shape)
        terms = []
        for kind, leaf, lstep in self.accum_leaves[root]:
            ls = self.slots[leaf].shape
            if kind == "dense":
                terms.append((leaf, broadcast_map(tmap, slot.shape, ls),
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
            terms.append((leaf, tuple(vmap), tuple(box), lstep))
        return Sink("gsum", root, tmap, root, tmap, space, "", None, terms=terms)

    def _add_sink(self, sink: Sink) -> None:
        if sink.kind == "store":  # the stored slot itself is computed, not loaded
            deps = frozenset().union(*(self.deps(j) for j in self.producer[sink.value].inputs))
        else:
            deps = frozenset().union(*(self.deps(v) for v, _ in sink.values()))
        after = max((self.ready.get(self._base(i), -1) for i in deps), default=-1)
        chosen = None
        for n in range(len(self.items) - 1, after, -1):
            item = self.items[n]
            if isinstance(item, Nest) and _compatible(item.space, sink.space) \
                    and count_pieces(item.sinks + [sink]) <= MAX_PIECES:
                chosen = n
                break
        if chosen is None:
            self.items.append(Nest(sink.space))
            chosen = len(self.items) - 1
        nest = self.items[chosen]
        nest.sinks.append(sink)
        nest.space = tuple(max(a, b) for a, b in zip(nest.space, sink.space)) + \
            nest.space[len(sink.space):] + sink.space[len(nest.space):]
        self.ready[sink.target] = max(self.ready.get(sink.target, -1), chosen)


STENCIL_SLACK = 4  # extents that differ by at most this much share a nest (split loops)
MAX_PIECES = 9     # a nest is split into at most this many boxes (code size, compile time)


def segments(sinks: list[Sink]) -> list[list[tuple[int, int]]]:
    """Per loop variable, the ranges between the edges of all sink and term boxes."""
    depth = max((len(s.space) for s in sinks), default=0)
    cuts: list[set[int]] = [set() for _ in range(depth)]
    for s in sinks:
        for box in [s.box] + [t[2] for t in s.terms]:
            for d, (lo, hi) in enumerate(box):
                cuts[d].update((lo, hi))
    for d, c in enumerate(cuts):
        c.add(0)
        c.add(max(s.space[d] for s in sinks if len(s.space) > d))
    return [list(zip(sorted(c)[:-1], sorted(c)[1:])) for c in cuts]


def count_pieces(sinks: list[Sink]) -> int:
    """How many boxes the loop splitting of these sinks makes."""
    return int(np.prod([len(seg) for seg in segments(sinks)], dtype=np.int64))


def _compatible(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(abs(x - y) <= STENCIL_SLACK for x, y in zip(a, b))


def make_plan(program: Program) -> Plan:
    """Plan ``program``; slots recomputed under too many index maps are materialised."""
    forced: frozenset[int] = frozenset()
    for _ in range(8):
        plan = Planner(program, forced).plan()
        heavy = count_maps(plan)
        if not heavy - forced:
            break
        forced = forced | heavy
    return form_regions(plan)


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


# ---- matrix products ---------------------------------------------------------------------------

@dataclass(frozen=True)
class MatMul:
    """An einsum of two operands as one matrix product ``out = L @ R``.

    ``left`` is the operand position (0 or 1) of ``L``; ``free`` the output letters of
    ``L`` and of ``R``; ``contracted`` the summed letters (in ``L``'s order);
    ``transposed`` says per factor whether its memory holds the transpose of the matrix
    (``L`` stored as contracted x free, ``R`` as free x contracted).
    """

    left: int
    free: tuple[str, str]
    contracted: str
    transposed: tuple[bool, bool]


def matmul_form(sa: str, sb: str, so: str) -> MatMul | None:
    """How ``einsum(sa, sb -> so)`` is one ``np.dot`` of 2-D views, or None."""
    A, B, O = set(sa), set(sb), set(so)
    if A & B & O or (A - B - O) or (B - A - O):
        return None
    contracted = [c for c in sa if c in B]
    if [c for c in sb if c in A] != contracted:
        return None
    fa = [c for c in so if c in A]
    fb = [c for c in so if c in B]
    if list(so) == fa + fb:
        left, (sl, fl), (sr, fr) = 0, (sa, fa), (sb, fb)
    elif list(so) == fb + fa:
        left, (sl, fl), (sr, fr) = 1, (sb, fb), (sa, fa)
    else:
        return None
    flips = []
    for subs, free, free_first in ((sl, fl, True), (sr, fr, False)):
        if list(subs) == free + contracted:
            flips.append(not free_first)
        elif list(subs) == contracted + free:
            flips.append(free_first)
        else:
            return None
    return MatMul(left, ("".join(fl), "".join(fr)), "".join(contracted), (flips[0], flips[1]))


# ---- row-blocked regions --------------------------------------------------------------------------
#
# Settings, read when a program is lowered (tests monkeypatch them). The kernel
# metadata cache does not key on them: after changing them, lower and load a program
# directly (numba_engine.lower / load / make_runner) or use a fresh cache directory.

#: Rows per block; None: as many as fit ROW_BLOCK_BYTES (a multiple of 8, at least 8).
ROW_BLOCK: int | None = None
#: Bytes of one block of every row-indexed array of a region (the block of X, of the
#: inputs read by row and of the intermediates): a part of L2, so the block of X read
#: by the first product is still in cache for the next ones.
ROW_BLOCK_BYTES = 512 * 1024
#: A region forms only when the row axis holds at least this many blocks.
ROW_BLOCK_MIN_BLOCKS = 4


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

    def __init__(self, plan: Plan):
        self.plan = plan
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
            acc.whole_reads = {self.base(i) for i in item.step.inputs if i not in self.plan.literals}
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
                    or any(t[2][0] != (0, rows) for t in s.terms):
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
        if step.primitive.name != "einsum" or len(step.inputs) != 2:
            return None
        ins, so = step.kwargs["spec"].split("->")
        subs = ins.split(",")
        out = step.output
        if any(self.slots[i].dtype != "float64" or not self.slots[i].shape or self.slots[i].size == 0
               for i in (*step.inputs, out)) or matmul_form(subs[0], subs[1], so) is None:
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
        if not isinstance(item, Opaque) or item.step.primitive.name != "einsum":
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

    def try_region(self, items: list[Any], start: int, rows: int) -> tuple[list, RowBlock, list, int] | None:
        """The region over ``rows`` starting at ``items[start]``: (hoisted, region, deferred, next).

        Items are scanned in order. One that runs by row joins the region (a nest's
        scalar sinks are split off and placed like other items); one that does not
        goes before the region, or after it when it reads what the region writes.
        The scan stops at a row item that conflicts with what the region already
        does (it reads a sum over the blocks, or a slot both by row and whole); the
        region ends at its last member, and later items keep their places.
        """
        if rows < ROW_BLOCK_MIN_BLOCKS * (ROW_BLOCK or 8):
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
                            [h for j, h in hoisted if j <= last], [d for j, d in deferred if j <= last],
                            r_writes)

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
        block = ROW_BLOCK or max(8, ROW_BLOCK_BYTES // max(row_bytes, 1) // 8 * 8)
        if rows < ROW_BLOCK_MIN_BLOCKS * block:
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
                and not (acc.reads & last.writes) and count_pieces(prev.sinks + item.sinks) <= MAX_PIECES:
            merged[-1] = Nest(prev.space, prev.sinks + item.sinks, prev.inits + item.inits)
            last = _Access(last.blocked_reads | acc.blocked_reads, last.blocked_writes | acc.blocked_writes,
                           last.whole_reads | acc.whole_reads, last.whole_writes | acc.whole_writes)
            continue
        merged.append(item)
        last = acc
    return merged


def _uses(m: IMap, var: int) -> bool:
    return any(d[0] == var for d in m)


def form_regions(plan: Plan) -> Plan:
    """Group the items that share a long leading row axis into :class:`RowBlock` regions.

    Scanning from an einsum over a row axis (``X @ w``, ``X.T @ u``), items that can run
    one block of rows at a time join the region; items that do not touch the rows are
    moved before it (or, when they need its results, after it). The region is kept
    when it pays: an input read by row by at least two of its items (a matrix read
    once per block instead of once per product) and at least ``ROW_BLOCK_MIN_BLOCKS``
    blocks.
    """
    items = list(plan.items)
    out: list[Any] = []
    n = 0
    regions = _Regions(plan)
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
