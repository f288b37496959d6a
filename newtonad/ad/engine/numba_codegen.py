"""Source generation for the numba engine: a :class:`~.numba_plan.Plan` in, Python out.

The generated module defines one ``kernel(x0.., o0.., c0.., arena..)`` compiled with
``@njit(cache=True)``. Inputs ``x*`` and outputs ``o*`` are C-contiguous arrays of
the program's shapes; ``c*`` are constant arrays; each arena holds the intermediates
of one dtype (see :mod:`.numba_buffers`). Every statement is preceded by a comment
showing the program step it computes, so a kernel reads like hand-written code.

Loops follow the plan's iteration spaces, frame columns innermost. A short innermost
axis (the k <= ``UNROLL`` columns of a small frame) is written out instead, column by
column, so that LLVM vectorises the spatial loop around it – the per-element work
shared by all columns included – rather than a loop of two or three iterations.

A row-blocked region (:class:`~.numba_plan.RowBlock`) becomes one loop
``for r0 in range(0, M, B)`` preceded by a comment naming the block size, the row
axis and the inputs it reads once per block. Each block starts by carving its views:
``k<i> = b<i>[r0:r0 + nb]`` for whole arrays (inputs, outputs), ``k<i> = b<i>[:nb]``
for slots that hold one block (arena buffers of B rows); the items inside address
``k<i>``, loop over ``range(nb)`` rows and run their products on ``nb``-row views. An
einsum contracting the rows writes the first block's product to its output and adds
the later ones from a temporary ``w<i>``. Everything a region touches is live over the
whole region in the arena plan, since its loop revisits every item.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..program import ArrayConst, Program, Step
from .numba_buffers import Buffer, place
from .numba_ops import EXPRESSIONS, PASS_THROUGH, literal
from .numba_plan import (ELEMENTWISE, Dim, IMap, Nest, Plan, RowBlock, Sink, map_vars, matmul_form,
                         operand_maps)
from .numba_plan import segments as plan_segments
from .numba_threads import cheap_launch, parallel_threads

FASTMATH = ("contract", "reassoc", "nsz", "arcp")  # never nnan / ninf: isnan must keep working
ARENA_NAME = {"float64": "a_f8", "int64": "a_i8", "bool": "a_b1"}
SHORT = {"float64": "f64", "int64": "i64", "bool": "bool"}


@dataclass
class Kernel:
    """Generated source and the calling convention of its ``kernel`` function."""

    source: str
    in_specs: list[tuple[tuple[int, ...], str]]
    out_specs: list[tuple[tuple[int, ...], str]]
    consts: list[np.ndarray]
    arenas: list[tuple[str, int]] = field(default_factory=list)  # (dtype, length)


def describe(program: Program, step: Step) -> str:
    """One step as ``Program.__str__`` prints it."""
    slot = program.slots[step.output]
    args = ", ".join(f"s{i}" for i in step.inputs)
    params = ", ".join(f"{k}={v!r}" for k, v in step.params)
    call = ", ".join(x for x in (args, params) if x)
    return f"s{step.output}:{slot} = {step.primitive}({call})"


def fmt_dim(d: Dim) -> str:
    var, scale, off = d
    if var is None:
        return str(off)
    term = f"i{var}" if scale == 1 else (f"-i{var}" if scale == -1 else f"{scale} * i{var}")
    if off == 0:
        return term
    if scale == -1:
        return f"{off} - i{var}"
    return f"{term} + {off}" if off > 0 else f"{term} - {-off}"


def fmt_index(m: IMap) -> str:
    return ", ".join(fmt_dim(d) for d in m)


class Generator:
    """Turn a plan into a :class:`Kernel` (one pass; not reusable)."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.p = plan.program
        self.slots = self.p.slots
        self.producer = {s.output: s for s in self.p.steps}
        self.extents: dict[int, int] = {}      # innermost loop bounds, passed at run time
        self.reads: dict[int, set[int]] = {}   # item -> base slots read
        self.writes: dict[int, set[int]] = {}  # item -> base slots written
        self.flat: set[int] = set()            # stored slots also read through a flat view
        self.region: RowBlock | None = None    # the row-blocked region being written
        self.block_flat: set[int] = set()      # its blocked slots read through a flat view
        self.local: dict[int, int] = {}        # slots living one block at a time -> block rows
        self.temps: dict[int, int] = {}        # einsums summed over blocks -> temp size
        self.parallel = 0                      # loops written with prange so far

    # -- names ---------------------------------------------------------------------------
    def is_scalar(self, i: int) -> bool:
        return self.slots[i].shape == ()

    def base(self, i: int) -> int:
        while i in self.plan.views:
            i = self.plan.views[i]
        return i

    def name(self, i: int) -> str:
        return f"r{i}" if self.is_scalar(i) else self.array(i)

    def blocked(self, i: int) -> bool:
        """Slot ``i`` is accessed one block of rows at a time here (in a region)."""
        return self.region is not None and i in self.region.blocked

    def array(self, i: int) -> str:
        """The array holding stored slot ``i``: ``k<i>`` (its block) in a region, else ``b<i>``."""
        return f"k{i}" if self.blocked(i) else f"b{i}"

    def size(self, i: int) -> str:
        """The number of elements of slot ``i`` here (of its block in a region)."""
        if not self.blocked(i):
            return str(self.slots[i].size)
        rest = int(np.prod(self.slots[i].shape[1:], dtype=np.int64))
        return "nb" if rest == 1 else f"nb * {rest}"

    def ref(self, i: int, index: str) -> str:
        """Element ``index`` of stored slot ``i`` (a local for scalars)."""
        if i in self.plan.literals:
            return literal(self.plan.literals[i], self.slots[i].dtype)
        return f"r{i}" if self.is_scalar(i) else f"{self.array(i)}[{index}]"

    def extent(self, value: int) -> str:
        """A loop bound read at run time (``n<value>``), not a literal.

        With a literal trip count LLVM fully unrolls short innermost loops (the k
        columns of a frame) and, numba leaving the SLP vectorizer off, then runs them
        scalar; a bound it cannot see keeps the loop vectorizer in play. (Columns
        few enough to be written out in the source never form a loop:
        see :func:`_unrolled_axis`.)
        """
        self.extents.setdefault(value, len(self.extents))
        return f"n{value}"

    def _read(self, item: int, i: int) -> None:
        if i not in self.plan.literals:
            self.reads.setdefault(item, set()).add(self.base(i))

    def _write(self, item: int, i: int) -> None:
        self.writes.setdefault(item, set()).add(self.base(i))

    # -- whole kernel ----------------------------------------------------------------------
    def generate(self) -> Kernel:
        body: list[str] = []
        for n, item in enumerate(self.plan.items):
            if isinstance(item, Nest):
                body += nest_lines(self, n, item)
            elif isinstance(item, RowBlock):
                body += self.row_block(n, item)
            else:
                body += self.opaque(n, item.step)
        end = len(self.plan.items)
        storage, claimed = self._claim_outputs()
        body += self._finish_outputs(end, claimed)
        header, consts, arenas = self._header(storage, end)
        p = self.p
        args = ([f"x{j}" for j in range(len(p.inputs))] + [f"o{j}" for j in range(len(p.outputs))]
                + [f"c{n}" for n in range(len(consts))] + [ARENA_NAME[d] for d, _ in arenas])
        flags = "{" + ", ".join(repr(f) for f in FASTMATH) + "}"
        lines = [
            '"""Generated by newtonad\'s numba engine from the program below; do not edit.',
            "",
            *("    " + line for line in str(p).splitlines()),
            '"""',
            "import math",  # math.erf, math.lgamma: special functions numba compiles
            "import numpy as np",
            "from numba import njit, prange" if self.parallel else "from numba import njit",
            "",
            "",
            f"@njit(cache=True, nogil=True, error_model=\"numpy\", fastmath={flags}"
            + (", parallel=True)" if self.parallel else ")"),
            f"def kernel({', '.join(args)}):",
            *("    " + line for line in header + body),
            "    return None",
            "",
        ]
        return Kernel("\n".join(lines), [(s.shape, s.dtype) for s in p.in_slots],
                      [(s.shape, s.dtype) for s in p.out_slots], consts, arenas)

    def _claim_outputs(self) -> tuple[dict[int, str], dict[int, int]]:
        """Let each output array *be* the memory of the slot it returns, where possible."""
        p = self.p
        external = set(p.inputs) | set(self.plan.const_arrays)
        storage: dict[int, str] = {}
        claimed: dict[int, int] = {}  # output position -> base slot it owns
        for j, o in enumerate(p.outputs):
            if self.is_scalar(o) or o in self.plan.literals:
                continue
            b = self.base(o)
            if b in external or b in storage or self.is_scalar(b):
                continue
            storage[b] = f"o{j}" if self.slots[b].shape == self.slots[o].shape and b == o \
                else f"o{j}.reshape({self.slots[b].shape!r})"
            claimed[j] = b
        return storage, claimed

    def _finish_outputs(self, end: int, claimed: dict[int, int]) -> list[str]:
        lines: list[str] = []
        for j, o in enumerate(self.p.outputs):
            slot = self.slots[o]
            if j in claimed:
                continue
            lines.append(f"# return s{o} as output {j}")
            if o in self.plan.literals:
                value = literal(self.plan.literals[o], slot.dtype)
                target = f"o{j}[()]" if slot.shape == () else f"o{j}.reshape({slot.size})[:]"
                lines.append(f"{target} = {value}")
            elif slot.shape == ():
                lines.append(f"o{j}[()] = r{o}")
            else:
                self._read(end, o)
                lines += [f"src = b{o}.reshape({slot.size})",
                          f"dst = o{j}.reshape({slot.size})",
                          f"for e in range({slot.size}):",
                          "    dst[e] = src[e]"]
        return lines

    def _header(self, storage: dict[int, str], end: int):
        p, plan = self.p, self.plan
        lines: list[str] = []
        for j, i in enumerate(p.inputs):
            lines.append(f"r{i} = x{j}[()]" if self.is_scalar(i) else f"b{i} = x{j}")
        consts = []
        for n, i in enumerate(plan.const_arrays):
            value = self.producer[i].kwargs["value"]
            arr = value.array if isinstance(value, ArrayConst) else np.asarray(value, self.slots[i].dtype)
            consts.append(np.array(arr, dtype=self.slots[i].dtype, order="C", copy=True))
            lines.append(f"r{i} = c{n}[()]" if self.is_scalar(i) else f"b{i} = c{n}")
        if self.extents:
            n = len(consts)
            consts.append(np.array(list(self.extents), dtype=np.int64))
            lines += [f"n{v} = c{n}[{j}]" for v, j in self.extents.items()]
        # live ranges of the arena buffers
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for item in range(end + 1):
            for b in self.writes.get(item, ()):
                first.setdefault(b, item)
                last[b] = max(last.get(b, item), item)
            for b in self.reads.get(item, ()):
                first.setdefault(b, item)
                last[b] = max(last.get(b, item), item)
        external = set(p.inputs) | set(plan.const_arrays)
        buffers = [Buffer(b, self.slots[b].dtype, self._buffer_size(b), first[b], last[b])
                   for b in first if b not in external and b not in storage and not self.is_scalar(b)]
        # the temporaries of einsums summed over row blocks (slot -1 - out), live with out
        buffers += [Buffer(-1 - o, self.slots[o].dtype, size, first[o], last[o])
                    for o, size in self.temps.items()]
        offsets, sizes = place(buffers)
        for b, expr in storage.items():
            lines.append(f"b{b} = {expr}")
        for buf in sorted(buffers, key=lambda b: b.slot):
            off = offsets[buf.slot]
            slot = buf.slot if buf.slot >= 0 else -1 - buf.slot
            shape = self.slots[slot].shape
            if slot in self.local:  # one block of rows
                shape = (self.local[slot],) + shape[1:]
            name = f"b{slot}" if buf.slot >= 0 else f"w{slot}"
            lines.append(f"{name} = {ARENA_NAME[buf.dtype]}[{off}:{off + buf.size}].reshape({shape!r})")
        for v, src in plan.views.items():
            if (self.base(v) in first or self.base(v) in external) and self.base(v) not in self.local:
                lines.append(f"b{v} = b{src}.reshape({self.slots[v].shape!r})")
        for i in sorted(self.flat):  # see NestWriter.load
            lines.append(f"b{i}f = b{i}.reshape({self.slots[i].size})")
        arenas = [(d, max(sizes[d], 1)) for d in ARENA_NAME if d in sizes]
        return lines, consts, arenas

    # -- opaque steps ------------------------------------------------------------------------
    def opaque(self, item: int, step: Step) -> list[str]:
        for i in step.inputs:
            self._read(item, i)
        self._write(item, step.output)
        lines = [f"# {describe(self.p, step)}"]
        name = step.primitive.name
        if self.region is not None and self.base(step.output) in self.region.summed:
            lines[0] += "  (summed over row blocks)"
            lines += self.summed_einsum(step)
        elif name == "einsum":
            lines += self.einsum(step)
        elif name == "gather":
            lines += self.gather(step)
        elif name == "scatter_add":
            lines += self.scatter_add(step)
        elif name == "cumsum":
            lines += self.cumsum(step)
        elif name == "concatenate":
            lines += self.concatenate(step)
        else:  # pragma: no cover - the planner only emits these
            raise AssertionError(name)
        return lines

    def _three(self, i: int, axis: int, shape: tuple[int, ...] | None = None) -> str:
        """Slot ``i`` viewed as ``(before axis, axis, after axis)``."""
        shape = shape or self.slots[i].shape
        a = int(np.prod(shape[:axis], dtype=np.int64))
        b = int(np.prod(shape[axis + 1:], dtype=np.int64))
        return f"b{i}.reshape(({a}, {shape[axis]}, {b}))"

    def _flat(self, i: int) -> str:
        return f"{self.array(i)}.reshape({self.size(i)})"

    def _buffer_size(self, b: int) -> int:
        """Arena elements of slot ``b``: one block of rows for region-local slots."""
        if b in self.local:
            return self.local[b] * int(np.prod(self.slots[b].shape[1:], dtype=np.int64))
        return self.slots[b].size

    def _fill(self, i: int, value: Any) -> str:
        lit = literal(value, self.slots[i].dtype)
        return f"r{i} = {lit}" if self.is_scalar(i) else f"{self._flat(i)}[:] = {lit}"

    def einsum(self, step: Step) -> list[str]:
        a, b = step.inputs
        out = step.output
        (sa, sb), so = step.kwargs["spec"].split("->")[0].split(","), step.kwargs["spec"].split("->")[1]
        blas = self._blas(a, b, sa, sb, so, out)
        if blas is not None:
            return blas
        sizes = {c: n for subs, i in ((sa, a), (sb, b)) for c, n in zip(subs, self.slots[i].shape)}
        letters = list(so) + [c for c in dict.fromkeys(sa + sb) if c not in so]
        var = {c: f"e_{c}" for c in letters}
        summed = len(letters) > len(so)
        lines = [self._fill(out, 0)] if summed else []
        indent = ""
        for c in letters:
            lines.append(f"{indent}for {var[c]} in range({sizes[c]}):")
            indent += "    "
        ra = self.ref(a, ", ".join(var[c] for c in sa))
        rb = self.ref(b, ", ".join(var[c] for c in sb))
        op = "+=" if summed else "="
        lines.append(f"{indent}{self.ref(out, ', '.join(var[c] for c in so))} {op} {ra} * {rb}")
        return lines

    def _blas(self, a: int, b: int, sa: str, sb: str, so: str, out: int,
              target: str | None = None) -> list[str] | None:
        """``np.dot`` on 2-D views when the contraction is one matrix product.

        In a row-blocked region the row axis of blocked operands counts ``nb`` rows;
        ``target`` replaces the output array (the temporary of a summed einsum).
        """
        slots = self.slots
        if any(slots[i].dtype != "float64" or slots[i].shape == () or slots[i].size == 0
               for i in (a, b, out)):
            return None
        form = matmul_form(sa, sb, so)
        if form is None:
            return None
        sizes: dict[str, Any] = {}
        for subs, i in ((sa, a), (sb, b), (so, out)):
            for n, (c, extent) in enumerate(zip(subs, slots[i].shape)):
                if n == 0 and self.blocked(i):
                    sizes[c] = "nb"
                else:
                    sizes.setdefault(c, extent)

        def count(letters: str) -> str:
            n = int(np.prod([sizes[c] for c in letters if sizes[c] != "nb"], dtype=np.int64))
            if any(sizes[c] == "nb" for c in letters):
                return "nb" if n == 1 else f"nb * {n}"
            return str(n)

        nc = count(form.contracted)
        left, right = (a, b) if form.left == 0 else (b, a)
        fl, fr = form.free
        ml = (f"{self.array(left)}.reshape(({nc}, {count(fl)})).T" if form.transposed[0]
              else f"{self.array(left)}.reshape(({count(fl)}, {nc}))")
        mr = (f"{self.array(right)}.reshape(({count(fr)}, {nc})).T" if form.transposed[1]
              else f"{self.array(right)}.reshape(({nc}, {count(fr)}))")
        dest = target or self.array(out)
        return [f"np.dot({ml}, {mr}, {dest}.reshape(({count(fl)}, {count(fr)})))"]

    def summed_einsum(self, step: Step) -> list[str]:
        """An einsum contracting the row axis, in a region: the first block's product is
        written to the output, the next ones' to a temporary added to it."""
        a, b = step.inputs
        out = step.output
        (sa, sb), so = step.kwargs["spec"].split("->")[0].split(","), step.kwargs["spec"].split("->")[1]
        size = self.slots[out].size
        self.temps[self.base(out)] = size
        first = self._blas(a, b, sa, sb, so, out)
        later = self._blas(a, b, sa, sb, so, out, target=f"w{self.base(out)}")
        assert first is not None and later is not None  # the planner checked matmul_form
        return ["if r0 == 0:", *("    " + line for line in first), "else:",
                *("    " + line for line in later),
                f"    acc = b{out}.reshape({size})",
                f"    add = w{self.base(out)}.reshape({size})",
                f"    for e in range({size}):",
                "        acc[e] += add[e]"]

    def row_block(self, item: int, region: RowBlock) -> list[str]:
        """The loop over blocks of rows running the items of ``region`` on each block.

        Every slot the region touches is recorded as read and written by the region
        as a whole (item ``item``): arrays carried from one block to the next (sums,
        whole outputs) and the row-invariant inputs then stay live over all blocks.
        """
        rows, block = region.rows, region.block
        shared = ", ".join(f"s{i}" for i in region.shared)
        lines = [f"# ---- row blocks of {block} over axis of {rows}: {shared} read once per block"]
        for t in region.inits:  # sums over the rows start before the first block
            lines.append(self._fill(t, self.plan.init[t]))
        for b in region.local:
            self.local[b] = block
        self.region, self.block_flat = region, set()
        body: list[str] = []
        for sub in region.items:
            if isinstance(sub, Nest):
                body += nest_lines(self, item, sub)
            else:
                body += self.opaque(item, sub.step)
        views: list[str] = []
        for i in sorted(region.blocked - set(self.plan.views)):
            self._read(item, i)
            src = f"b{i}[:nb]" if i in region.local else f"b{i}[r0:r0 + nb]"
            views.append(f"k{i} = {src}")
        for v, src in self.plan.views.items():
            if v in region.blocked:
                shape = ("nb",) + tuple(str(n) for n in self.slots[v].shape[1:])
                views.append(f"k{v} = k{src}.reshape(({', '.join(shape)},))")
        for i in sorted(self.block_flat):
            views.append(f"k{i}f = k{i}.reshape({self.size(i)})")
        self.region = None
        lines += [f"for r0 in range(0, {rows}, {block}):",
                  f"    nb = min({block}, {rows} - r0)"]
        return lines + ["    " + line for line in views + body]

    def gather(self, step: Step) -> list[str]:
        x, idx = step.inputs
        axis, out = step.kwargs["axis"], step.output
        n = self.slots[x].shape[axis]
        xs = self.slots[x].shape
        m = max(self.slots[idx].size, 1)
        A = int(np.prod(xs[:axis], dtype=np.int64))
        B = int(np.prod(xs[axis + 1:], dtype=np.int64))
        ix = f"r{idx}" if self.is_scalar(idx) else "ig[e1]"
        dst = f"r{out}" if self.is_scalar(out) else "og[e0, e1, e2]"
        lines = [f"xg = {self._three(x, axis)}"]
        if not self.is_scalar(idx):
            lines.append(f"ig = {self._flat(idx)}")
        if not self.is_scalar(out):
            lines.append(f"og = b{out}.reshape(({A}, {m}, {B}))")
        return lines + _indexed_loops(A, m, B, ix, n, "gather", f"{dst} = xg[e0, j, e2]")

    def scatter_add(self, step: Step) -> list[str]:
        y, idx = step.inputs
        axis, out = step.kwargs["axis"], step.output
        zs = self.slots[out].shape
        n = zs[axis]
        A = int(np.prod(zs[:axis], dtype=np.int64))
        B = int(np.prod(zs[axis + 1:], dtype=np.int64))
        m = max(self.slots[idx].size, 1)
        ix = f"r{idx}" if self.is_scalar(idx) else "ig[e1]"
        src = f"r{y}" if self.is_scalar(y) else "yg[e0, e1, e2]"
        lines = [self._fill(out, 0), f"og = b{out}.reshape(({A}, {n}, {B}))"]
        if not self.is_scalar(y):
            lines.append(f"yg = b{y}.reshape(({A}, {m}, {B}))")
        if not self.is_scalar(idx):
            lines.append(f"ig = {self._flat(idx)}")
        return lines + _indexed_loops(A, m, B, ix, n, "scatter_add", f"og[e0, j, e2] += {src}")

    def cumsum(self, step: Step) -> list[str]:
        (x,), out = step.inputs, step.output
        axis, reverse = step.kwargs["axis"], step.kwargs["reverse"]
        shape = self.slots[x].shape
        n = shape[axis]
        A = int(np.prod(shape[:axis], dtype=np.int64))
        B = int(np.prod(shape[axis + 1:], dtype=np.int64))
        order = f"range({n} - 1, -1, -1)" if reverse else f"range({n})"
        prev = "e1 + 1" if reverse else "e1 - 1"
        first = n - 1 if reverse else 0
        return [f"xg = {self._three(x, axis)}",
                f"og = {self._three(out, axis)}",
                f"for e0 in range({A}):",
                f"    for e1 in {order}:",
                f"        for e2 in range({B}):",
                f"            if e1 == {first}:",
                "                og[e0, e1, e2] = xg[e0, e1, e2]",
                "            else:",
                f"                og[e0, e1, e2] = og[e0, {prev}, e2] + xg[e0, e1, e2]"]

    def concatenate(self, step: Step) -> list[str]:
        axis, out = step.kwargs["axis"], step.output
        lines = [f"og = {self._three(out, axis)}"]
        start = 0
        for i in step.inputs:
            shape = self.slots[i].shape
            A = int(np.prod(shape[:axis], dtype=np.int64))
            B = int(np.prod(shape[axis + 1:], dtype=np.int64))
            lines += [f"xg = {self._three(i, axis)}",
                      f"for e0 in range({A}):",
                      f"    for e1 in range({shape[axis]}):",
                      f"        for e2 in range({B}):",
                      f"            og[e0, e1 + {start}, e2] = xg[e0, e1, e2]"]
            start += shape[axis]
        return lines


class NestWriter:
    """The statements of one loop nest, placed at the loop depth they need.

    Depths are counted in loop variables: a value at depth ``d`` depends on ``i0`` ..
    ``i<d-1>``. ``levels`` is the number of loops written: one less than the nest's
    depth when its innermost axis is written out (:func:`_unrolled_axis`). Then loop
    variable ``i<levels>`` is not a loop but the constant ``column``, and statements
    that depend on it go in the innermost loop, once per column.
    """

    def __init__(self, gen: Generator, item: int, nest: Nest, levels: int | None = None):
        self.g = gen
        self.item = item
        self.nest = nest
        self.levels = len(nest.space) if levels is None else levels
        self.column: int | None = None  # the value of i<levels> in the statements emitted now
        self.flat: set[int] = set()     # slots read or written through flat views
        self.stmts: list[tuple[int, list[str], str, bool]] = []  # (depth, lines, guard, after)
        self.memo: dict[tuple, tuple[str, int]] = {}  # (slot, map, column) -> (source, depth)
        self.uses: Counter[int] = Counter()
        self.guard = ""  # a condition wrapped around the statements emitted now
        self.products: dict[str, tuple[tuple[str, int], tuple[str, int]]] = {}
        self.loaded: set[int] = set()  # base slots loaded from memory

    def emit(self, depth: int, *lines: str, after: bool = False) -> None:
        """Place ``lines`` at loop depth ``depth`` (``after``: below that level's inner loop)."""
        if self.guard:  # a guarded statement goes where the guard's variables exist
            depth = max(depth, 1 + max(int(v) for v in re.findall(r"\bi(\d+)\b", self.guard)))
        self.stmts.append((min(depth, self.levels), list(lines), self.guard, after))

    def statements(self) -> int:
        """How many lines of code (not comments) have been emitted."""
        return sum(not line.startswith("#") for _, lines, _, _ in self.stmts for line in lines)

    def fixed(self, m: IMap) -> IMap:
        """``m`` with the written-out loop variable replaced by the current column."""
        if self.column is None:
            return m
        return tuple((None, 0, scale * self.column + off) if v == self.levels else (v, scale, off)
                     for v, scale, off in m)

    def load(self, i: int, m: IMap) -> str:
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
        m = self.fixed(m)
        shape = g.slots[i].shape
        inner = self.levels - 1
        axes = [a for a, d in enumerate(m) if d[0] == inner]
        if self.levels == len(self.nest.space) or i in g.plan.literals or g.is_scalar(i) \
                or not axes or all(n == 1 for n in shape[max(axes) + 1:]):
            return g.ref(i, fmt_index(m))
        self.flat.add(i)
        terms, stride = [], 1
        for d, n in zip(reversed(m), reversed(shape)):
            src = fmt_dim(d) if d[0] is not None else str(d[2] * stride)
            if d[0] is not None and stride != 1:
                src = f"{src} * {stride}" if src.lstrip("-").isidentifier() else f"({src}) * {stride}"
            if src != "0":
                terms.append(src)
            stride *= n
        return f"{g.array(i)}f[{' + '.join(reversed(terms)) or '0'}]"

    def value(self, i: int, m: IMap, compute: bool = False) -> tuple[str, int]:
        """Source of slot ``i`` at index map ``m``, and the loop depth it needs.

        A slot in memory is loaded, unless ``compute`` (the store that fills it).
        """
        key = (i, m, self.column if m != self.fixed(m) else None)
        if key in self.memo and not compute:
            return self.memo[key]
        g, plan = self.g, self.g.plan
        if i in plan.literals:
            result = (literal(plan.literals[i], g.slots[i].dtype), 0)
        elif i in plan.stored and not compute:
            g._read(self.item, i)
            self.loaded.add(g.base(i))
            result = (self.load(i, m), map_vars(m))
        else:
            step = g.producer[i]
            operands = [self.value(j, jm) for j, jm in zip(step.inputs, operand_maps(step, m, g.slots))]
            name = step.primitive.name
            if name in PASS_THROUGH or (name == "convert" and step.kwargs["dtype"] == g.slots[step.inputs[0]].dtype):
                result = operands[0]
            else:
                floats = all(g.slots[j].dtype == "float64" for j in (*step.inputs, i))
                if name == "mul" and floats:
                    operands = self.hoist_factors(operands)
                expr = EXPRESSIONS[name]([o[0] for o in operands],
                                         [g.slots[j].dtype for j in step.inputs],
                                         g.slots[i].dtype, step.kwargs)
                depth = max((o[1] for o in operands), default=0)
                n = self.uses[i]
                self.uses[i] += 1
                temp = f"t{i}" if n == 0 else f"t{i}_{n}"
                self.emit(depth, f"# {describe(g.p, step)}", f"{temp} = {expr}")
                if name == "mul" and floats:
                    self.products[temp] = (operands[0], operands[1])
                result = (temp, depth)
        if not compute:
            self.memo[key] = result
        return result

    def hoist_factors(self, operands: list[tuple[str, int]]) -> list[tuple[str, int]]:
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
        temp = f"f{len(self.stmts)}"
        depth = max(dc, dy)
        self.emit(depth, f"{temp} = {c} * {y}")
        self.products[temp] = ((c, dc), (y, dy))
        self.memo[key] = (temp, depth)
        return [(a, da), (temp, depth)]

    def simple(self, i: int, m: IMap) -> tuple[str, int]:
        """Like :meth:`value`, but a name or literal (safe to repeat in an expression)."""
        src, depth = self.value(i, m)
        if src.isidentifier() or src.replace(".", "").replace("-", "").isdigit():
            return src, depth
        temp = f"v{len(self.stmts)}"
        self.emit(depth, f"{temp} = {src}")
        return temp, depth

    def sink(self, s: Sink, terms: list | None = None) -> None:
        """Emit the write of sink ``s`` (for ``gsum``: of its ``terms`` active here)."""
        g = self.g
        depth = len(s.space)
        g._write(self.item, s.target)
        target = self.load(s.target, s.tmap)
        if s.kind == "store":
            src, _ = self.value(s.value, s.vmap, compute=True)
            self.emit(depth, f"# store s{s.value}", f"{target} = {src}")
        elif s.kind == "gsum":
            parts = []
            for slot, vmap, _, step in terms or []:
                src, _ = self.value(slot, vmap)
                parts.append(src)
                self.emit(depth, f"# {describe(g.p, step)}  (gathered)")
            zero = literal(0, g.slots[s.target].dtype)
            self.emit(depth, f"{target} = {' + '.join(parts) or zero}")
        elif s.kind == "accum":
            src, _ = self.value(s.value, s.vmap)
            self.emit(depth, f"# {describe(g.p, s.step)}  (scattered)", f"{target} += {src}")
        else:
            src, _ = self.simple(s.value, s.vmap)
            comment = f"# {describe(g.p, s.step)}"
            depth = min(depth, self.levels)
            if self.guard or depth == 0 or g.is_scalar(s.target) or \
                    any(d[0] == depth - 1 for d in self.fixed(s.tmap)):
                self.emit(depth, comment, *_combine(s.op, target, src))
                return
            # the target stays put in the innermost loop: reduce in a local there
            # (a register LLVM can vectorise), combined into the target after the loop
            acc = f"acc{len(self.stmts)}"
            self.emit(depth - 1, f"{acc} = {literal(g.plan.init[s.target], g.slots[s.target].dtype)}")
            self.emit(depth, comment, *_combine(s.op, acc, src))
            self.emit(depth - 1, *_combine(s.op, target, acc), after=True)

    def render(self, box: tuple[tuple[Any, Any], ...], indent: str = "",
               parallel: bool = False) -> list[str]:
        """The statements placed in loops over ``box`` (one range per loop variable).

        Bounds are ints, or source strings (the boundary loops read them from a table).
        ``parallel``: the outermost loop runs on all threads (see :func:`_parallel_loop`).
        """
        out: list[str] = []
        for i in self.flat:  # flat views of blocks are made per block (Generator.row_block)
            (self.g.block_flat if self.g.blocked(i) else self.g.flat).add(i)
        deepest = max((d for d, _, _, _ in self.stmts), default=0)

        def emit_stmts(d: int, indent: str, after: bool) -> None:
            open_guard = ""
            for depth, lines, guard, below in self.stmts:
                if depth != d or below != after:
                    continue
                if guard != open_guard and guard:
                    out.append(f"{indent}if {guard}:")
                open_guard = guard
                pad = indent + ("    " if guard else "")
                out.extend(pad + line for line in lines)

        def emit_level(d: int, indent: str) -> None:
            emit_stmts(d, indent, after=False)
            if d < deepest:
                lo, hi = box[d]
                if d == 0 and parallel:
                    out.extend(indent + line for line in _parallel_loop(lo, hi))
                    emit_level(1, indent + "        ")
                    emit_stmts(d, indent, after=True)
                    return
                if d == 0 and self.g.region is not None:  # the rows of this block
                    lo, hi = 0, "nb"
                if d == deepest - 1 and isinstance(hi, int) and self.levels == len(self.nest.space):
                    # innermost: see Generator.extent (the start stays a literal: LLVM
                    # then proves shifted indices are non-negative and drops numba's
                    # wraparound selects). Below a written-out axis the bound stays a
                    # literal too: with the trip count known, LLVM proves that flat
                    # offsets do not wrap instead of giving up on too many run-time checks.
                    hi = self.g.extent(hi)
                rng = f"range({hi})" if lo == 0 else f"range({lo}, {hi})"
                out.append(f"{indent}for i{d} in {rng}:")
                emit_level(d + 1, indent + "    ")
            emit_stmts(d, indent, after=True)

        emit_level(0, indent)
        if parallel:  # names of their own: see _parallel_loop
            self.g.parallel += 1
            out = [_rename(line, f"_p{self.g.parallel}") for line in out]
        return out

    def guarded_sink(self, s: Sink, full: tuple[tuple[int, int], ...]) -> None:
        """Emit sink ``s`` for any box of the nest: each part runs under its box's condition.

        Every term gets its own common-subexpression table, so a statement never
        outlives the condition it was computed under.
        """
        g = self.g
        depth = len(s.space)
        own = _condition(s.box, full)
        if s.kind != "gsum":
            self.memo, self.guard = {}, own
            self.sink(s)
            self.guard = ""
            return
        g._write(self.item, s.target)
        acc = f"acc{len(self.stmts)}"
        self.emit(depth, f"{acc} = {literal(0, g.slots[s.target].dtype)}")
        for slot, vmap, box, step in s.terms:
            self.memo = {}
            parts = [c for c in (own + " and " + _condition(box, full)).split(" and ") if c]
            self.guard = " and ".join(dict.fromkeys(parts))
            src, _ = self.value(slot, vmap)
            self.emit(depth, f"# {describe(g.p, step)}  (gathered)", f"{acc} += {src}")
        self.guard = own
        self.emit(depth, f"{self.load(s.target, s.tmap)} = {acc}")
        self.guard = ""


def _combine(op: str, target: str, src: str) -> list[str]:
    """Lines folding ``src`` into ``target`` for reduction ``op`` (NaN wins max and min)."""
    if op == "reduce_sum":
        return [f"{target} += {src}"]
    if op == "reduce_prod":
        return [f"{target} *= {src}"]
    cmp = ">" if op == "reduce_max" else "<"
    return [f"if {src} {cmp} {target} or {src} != {src}:", f"    {target} = {src}"]


def _covers(box: tuple[tuple[int, int], ...], where: tuple[tuple[int, int], ...]) -> bool:
    return all(lo <= a and b <= hi for (lo, hi), (a, b) in zip(box, where))


def _condition(box: tuple[tuple[int, int], ...], full: tuple[tuple[int, int], ...]) -> str:
    """Source testing that the loop variables lie in ``box`` (where it is narrower)."""
    parts = []
    for d, ((lo, hi), (flo, fhi)) in enumerate(zip(box, full)):
        if lo > flo:
            parts.append(f"i{d} >= {lo}")
        if hi < fhi:
            parts.append(f"i{d} < {hi}")
    return " and ".join(parts)


def nest_lines(gen: Generator, item: int, nest: Nest) -> list[str]:
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
    if gen.region is not None:  # in a row-blocked region the rows are those of the block
        space = "(" + ", ".join(["nb", *map(str, nest.space[1:])]) + ("," * (len(nest.space) == 1)) + ")"
    out = [f"# ---- loop nest over {space}"]
    for t in nest.inits:
        out.append(gen._fill(t, gen.plan.init[t]))
    segments = plan_segments(nest.sinks)
    boxes = [tuple(segments[d][c] for d, c in enumerate(choice))
             for choice in itertools.product(*(range(len(s)) for s in segments))]
    split = [d for d, seg in enumerate(segments) if len(seg) > 1]
    if split and max(split) < min(len(s.space) for s in nest.sinks):
        interior = max(boxes, key=lambda b: int(np.prod([hi - lo for lo, hi in b])))
        out += _piece(gen, item, nest, interior, tuple(0 for _ in segments), boxes=True)
        edges = [b for b in boxes if b != interior]
        full = tuple(seg[0][:1] + seg[-1][1:] for seg in segments)
        writer = NestWriter(gen, item, nest)
        for s in nest.sinks:
            writer.guarded_sink(s, full[:len(s.space)])
        table = tuple(tuple(v for d in split for v in b[d]) for b in edges)
        bounds = tuple((f"edge[{2 * split.index(d)}]", f"edge[{2 * split.index(d) + 1}]")
                       if d in split else full[d] for d in range(len(segments)))
        out.append(f"# edges: {len(edges)} pieces {edges}")
        out.append(f"for edge in {table!r}:")
        out += writer.render(bounds, indent="    ")
        return out
    for choice in itertools.product(*(range(len(s)) for s in segments)):
        box = tuple(segments[d][c] for d, c in enumerate(choice))
        out += _piece(gen, item, nest, box, choice, boxes=bool(split))
    return out


UNROLL = 4              # innermost extents up to this are written out (see _unrolled_axis) ...
UNROLL_STATEMENTS = 500  # ... unless the piece then has more statements (compile time)


def _unrolled_axis(nest: Nest, box) -> int | None:
    """The axis of ``box`` to write out instead of looping over, if any.

    A short innermost loop (the k columns of a small frame) is the one LLVM
    vectorises, and it has too few iterations to gain from that, while everything
    computed once per element outside it – the primal, the single cotangent, their
    sqrt and div – runs scalar. Written out column by column, the next loop out (a
    spatial axis) becomes innermost and is vectorised, column work included.
    """
    axis = len(nest.space) - 1
    if axis < 1 or box[axis][1] - box[axis][0] > UNROLL:
        return None
    return axis


def _piece(gen: Generator, item: int, nest: Nest, box, choice, boxes: bool) -> list[str]:
    active = []
    for s in nest.sinks:
        n = len(s.space)
        if any(c != 0 for c in choice[n:]) or not _covers(s.box, box[:n]):
            continue
        active.append((s, [t for t in s.terms if _covers(t[2], box[:n])]))
    if not active:
        return []
    axis = _unrolled_axis(nest, box)
    writer = _write_piece(gen, item, nest, active, box, axis)
    if axis is not None and writer.statements() > UNROLL_STATEMENTS:
        writer = _write_piece(gen, item, nest, active, box, None)
    parallel = _parallel_ok(gen, writer, [s for s, _ in active], box)
    return ([f"# piece {box}"] if boxes else []) + writer.render(box, parallel=parallel)


#: Pieces with at least this many iterations (all loops together) run their outermost
#: loop on all of numba's threads; ``None``: never.
PARALLEL_MIN_ITERATIONS: int | None = 1 << 16
#: ... this many times more where a parallel loop is slow to start (numba's workqueue).
PARALLEL_WORKQUEUE_FACTOR = 8
#: ... split into this many chunks of rows, which the threads share.
PARALLEL_CHUNKS = 64


def _parallel_ok(gen: Generator, writer: NestWriter, sinks: list[Sink], box) -> bool:
    """Can the outermost loop of this piece run on several threads, and is it worth it?

    It can when no two of its iterations write the same element: every sink inside
    the loop writes its target at an index that moves with the loop variable (a
    store, gathered sum or reduction along the other axes), or is a sum or product
    into a scalar (numba combines the threads' partial results); and the piece does
    not load what it writes (a stencil reading a neighbour another thread updates).
    Scattered sums (``accum``) stay serial, as do pieces inside row-blocked regions
    (their products call BLAS) and loops over fewer than two rows per chunk.
    """
    if (PARALLEL_MIN_ITERATIONS is None or gen.region is not None or parallel_threads() < 2
            or writer.levels == 0 or not all(isinstance(lo, int) for lo, _ in box)):
        return False
    extents = [hi - lo for lo, hi in box[:writer.levels]]
    least = PARALLEL_MIN_ITERATIONS * (1 if cheap_launch() else PARALLEL_WORKQUEUE_FACTOR)
    if extents[0] < 2 * PARALLEL_CHUNKS or int(np.prod(extents)) < least:
        return False
    for s in sinks:
        if not s.space:
            continue  # runs once, before the loop
        moves = any(var == 0 and scale != 0 for var, scale, _ in s.tmap)
        scalar_sum = (s.kind == "reduce" and gen.is_scalar(s.target)
                      and s.op in ("reduce_sum", "reduce_prod"))
        if s.kind == "accum" or not (moves or scalar_sum):
            return False
    return not writer.loaded & {gen.base(s.target) for s in sinks}


def _parallel_loop(lo: int, hi: int) -> list[str]:
    """The head of a loop ``for i0 in range(lo, hi)`` whose chunks run on all threads.

    Each chunk is a serial loop over ``j`` from 0, with ``i0 = lo + j``: as in a
    serial loop with a literal start, LLVM then proves shifted indices non-negative,
    drops numba's wraparound selects and vectorises an innermost loop over the rows
    (a loop variable starting at a computed value defeats that). The mask only tells
    LLVM that a chunk's number is not negative.
    """
    size = -(-(hi - lo) // PARALLEL_CHUNKS)
    chunks = -(-(hi - lo) // size)
    return [f"for c in prange({chunks}):  # {chunks} chunks of {size} rows, on all threads",
            f"    lo = (c & 0xFFFFFFFF) * {size} + {lo}",
            f"    for j in range(min({size}, {hi} - lo)):",
            "        i0 = lo + j"]


_LOCAL = re.compile(r"\b((?:[tfvi]|acc)\d+(?:_\d+)?|c|lo|j)\b")


def _rename(line: str, suffix: str) -> str:
    """``line`` with the loop's locals renamed: numba's parallel loops must not share a
    variable with code outside them (it would be written by every thread)."""
    if line.lstrip().startswith("#"):
        return line
    return _LOCAL.sub(lambda m: m.group(1) + suffix, line)


def _write_piece(gen: Generator, item: int, nest: Nest, active, box, axis: int | None) -> NestWriter:
    """The sinks of one piece; with ``axis``, written out once per index along it."""
    writer = NestWriter(gen, item, nest, levels=axis)
    for s, terms in active:
        if axis is None or len(s.space) <= axis:
            writer.sink(s, terms)
    deep = [(s, terms) for s, terms in active if axis is not None and len(s.space) > axis]
    for c in range(*box[axis]) if deep else ():
        writer.column = c
        writer.emit(axis, f"# i{axis} = {c}")
        for s, terms in deep:
            writer.sink(s, terms)
    return writer


def generate(plan: Plan) -> Kernel:
    """Generate the kernel source for ``plan``."""
    return Generator(plan).generate()


__all__ = ["FASTMATH", "Kernel", "generate", "describe", "ELEMENTWISE"]


def _indexed_loops(A: int, m: int, B: int, ix: str, n: int, what: str, body: str) -> list[str]:
    """Loops over (outer, index, inner) with the index wrapped and bounds-checked, as np.take."""
    return [f"for e0 in range({A}):",
            f"    for e1 in range({m}):",
            f"        j = {ix}",
            "        if j < 0:",
            f"            j += {n}",
            f"        if j < 0 or j >= {n}:",
            f"            raise IndexError(\"{what}: index out of range\")",
            f"        for e2 in range({B}):",
            f"            {body}"]
