"""Kernel generation for the numba engine: a :class:`~.numba_plan.Plan` in, a kernel out.

The generated module defines one ``kernel(x0.., o0.., c0.., arena..)`` compiled with
``@njit(cache=True)``. Inputs ``x*`` and outputs ``o*`` are C-contiguous arrays of
the program's shapes; ``c*`` are constant arrays; each arena holds the intermediates
of one dtype (see :mod:`.numba_buffers`). Every statement is preceded by a comment
showing the program step it computes, so a kernel reads like hand-written code.

The body is built as loop IR (:mod:`.loop_ir`): loop nests by :mod:`.nest_lowering`,
opaque steps by :mod:`.opaque_lowering`, and row-blocked regions here; one printer
(:mod:`.printer`) writes it out, after the passes of :mod:`.passes` decide which
loops run on threads and which bounds are read at run time. Loops follow the plan's
iteration spaces, frame columns innermost (a short innermost axis is written out
column by column: :func:`.passes.write_out_columns`).

Each lowering is given where it writes, a frozen :class:`~.where.Where` (the kernel
body, or one block of a region), and returns what it reads and writes; the generator
records those for the arena's live ranges and the flat views of the header, and
keeps no other state between lowerings.

A row-blocked region (:class:`~.row_blocks.RowBlock`) becomes one loop
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

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..gc_pause import gc_paused
from ..program import ArrayConst, Program, Step
from . import kernel_split
from .kernel_split import code_line_count, split
from .loop_ir import Comment, For, Line, ParallelFor, Text, walk
from .nest_lowering import NestCode, lower_nest
from .numba_buffers import Buffer, place
from .numba_ops import literal
from .numba_plan import Nest, Opaque, Plan
from .opaque_lowering import LOWERINGS, summed_einsum
from .options import LoweringOptions
from .passes import parallel_chunks, run_time_extents
from .printer import Printer, print_lines
from .row_blocks import RowBlock
from .where import Where

FASTMATH = ("contract", "reassoc", "nsz", "arcp")  # never nnan / ninf: isnan must keep working
ARENA_NAME = {"float64": "a_f8", "int64": "a_i8", "bool": "a_b1"}


@dataclass
class Kernel:
    """Generated source and the calling convention of its ``kernel`` function."""

    source: str
    in_specs: list[tuple[tuple[int, ...], str]]
    out_specs: list[tuple[tuple[int, ...], str]]
    consts: list[np.ndarray]
    arenas: list[tuple[str, int]] = field(default_factory=list)  # (dtype, length)
    parallel: bool = False  # has loops run on all threads (compiled with parallel=True)
    body: tuple = ()  # the kernel body as loop IR (for inspection and tests)
    chunks: tuple = ()  # a long kernel's chunk functions (kernel_split.Chunk); () for one


def describe(program: Program, step: Step) -> str:
    """One step as ``Program.__str__`` prints it."""
    slot = program.slots[step.output]
    args = ", ".join(f"s{i}" for i in step.inputs)
    params = ", ".join(f"{k}={v!r}" for k, v in step.params)
    call = ", ".join(x for x in (args, params) if x)
    return f"s{step.output}:{slot} = {step.primitive}({call})"


class Generator:
    """Turn a plan into a :class:`Kernel` (one pass; not reusable)."""

    def __init__(self, plan: Plan, options: LoweringOptions):
        self.plan = plan
        self.options = options
        self.p = plan.program
        self.slots = self.p.slots
        self.producer = {s.output: s for s in self.p.steps}
        self.reads: dict[int, set[int]] = {}   # item -> base slots read
        self.writes: dict[int, set[int]] = {}  # item -> base slots written
        self.top = Where(plan)                 # names outside row-blocked regions

    # -- names ---------------------------------------------------------------------------
    def describe(self, step: Step) -> str:
        return describe(self.p, step)

    def is_scalar(self, i: int) -> bool:
        return self.slots[i].shape == ()

    def base(self, i: int) -> int:
        return self.top.base(i)

    def note_read(self, item: int, i: int) -> None:
        if i not in self.plan.literals:
            self.reads.setdefault(item, set()).add(self.base(i))

    def note_write(self, item: int, i: int) -> None:
        self.writes.setdefault(item, set()).add(self.base(i))

    def note(self, item: int, code: NestCode) -> None:
        """Record what the lowered nest ``code`` of item ``item`` reads and writes."""
        for b in code.reads:
            self.note_read(item, b)
        for b in code.writes:
            self.note_write(item, b)

    # -- whole kernel ----------------------------------------------------------------------
    def generate(self) -> Kernel:
        """Lower every item, run the passes, print the module."""
        body, flat = self._lower_items()
        end = len(self.plan.items)
        storage, claimed = self._claim_outputs()
        body += self._finish_outputs(end, claimed)
        # how it runs: threads for large independent loops, innermost bounds at run time
        body = list(parallel_chunks(tuple(body), self.options))
        parallel = any(isinstance(s, ParallelFor) for s, _ in walk(body))
        ir_body, extents = run_time_extents(tuple(body))
        body = list(ir_body)
        header, consts, arenas = self._header(storage, end, extents, flat)
        p = self.p
        args = ([f"x{j}" for j in range(len(p.inputs))] + [f"o{j}" for j in range(len(p.outputs))]
                + [f"c{n}" for n in range(len(consts))] + [ARENA_NAME[d] for d, _ in arenas])
        source, chunks = module_source(p, header, body, args, parallel)
        return Kernel(source, [(s.shape, s.dtype) for s in p.in_slots],
                      [(s.shape, s.dtype) for s in p.out_slots], consts, arenas,
                      parallel, tuple(header + body), chunks)

    def _lower_items(self) -> tuple[list[Any], set[int]]:
        """The plan's items as loop IR, and the stored slots read through flat views."""
        body: list[Any] = []
        flat: set[int] = set()  # (NestWriter.load)
        for n, item in enumerate(self.plan.items):
            if isinstance(item, Nest):
                code = lower_nest(self, self.top, item)
                self.note(n, code)
                body += code.stmts
                flat |= code.flat
            elif isinstance(item, RowBlock):
                stmts, region_flat = self.row_block(n, item)
                body += stmts
                flat |= region_flat
            else:
                body += self.opaque(self.top, n, item.step)
        return body, flat

    def _claim_outputs(self) -> tuple[dict[int, tuple[str, str]], dict[int, int]]:
        """Let each output array *be* the memory of the slot it returns, where possible."""
        p = self.p
        external = set(p.inputs) | set(self.plan.const_arrays)
        storage: dict[int, tuple[str, str]] = {}  # base slot -> (its array, the output)
        claimed: dict[int, int] = {}  # output position -> base slot it owns
        for j, o in enumerate(p.outputs):
            if self.is_scalar(o) or o in self.plan.literals:
                continue
            b = self.base(o)
            if b in external or b in storage or self.is_scalar(b):
                continue
            storage[b] = (f"o{j}" if self.slots[b].shape == self.slots[o].shape and b == o
                          else f"o{j}.reshape({self.slots[b].shape!r})", f"o{j}")
            claimed[j] = b
        return storage, claimed

    def _finish_outputs(self, end: int, claimed: dict[int, int]) -> list[Any]:
        out: list[Any] = []
        for j, o in enumerate(self.p.outputs):
            slot = self.slots[o]
            if j in claimed:
                continue
            out.append(Comment(f"return s{o} as output {j}"))
            if o in self.plan.literals:
                value = literal(self.plan.literals[o], slot.dtype)
                target = f"o{j}[()]" if slot.shape == () else f"o{j}.reshape({slot.size})[:]"
                out.append(Line(f"{target} = {value}", (f"o{j}",)))
            elif slot.shape == ():
                out.append(Line(f"o{j}[()] = r{o}", (f"o{j}", f"r{o}")))
            else:
                self.note_read(end, o)
                out += [Line(f"src = b{o}.reshape({slot.size})", (f"b{o}",), ("src",)),
                        Line(f"dst = o{j}.reshape({slot.size})", (f"o{j}",), ("dst",)),
                        For(Text("e"), 0, slot.size,
                            (Line("dst[e] = src[e]", ("dst", "e", "src")),))]
        return out

    def _header(self, storage: dict[int, tuple[str, str]], end: int, extents: dict[int, int],
                flat: set[int]) -> tuple[list[Any], list, list]:
        """Statements binding the kernel's names: inputs, constants, the extents read at
        run time, arena buffers, views and flat views; the constant arrays and arenas."""
        p, plan = self.p, self.plan
        local, temps = self._region_buffers()
        lines: list[Any] = []
        for j, i in enumerate(p.inputs):
            lines.append(Line(f"r{i} = x{j}[()]", (f"x{j}",), (f"r{i}",)) if self.is_scalar(i)
                         else Line(f"b{i} = x{j}", (f"x{j}",), (f"b{i}",)))
        consts = []
        for n, i in enumerate(plan.const_arrays):
            value = self.producer[i].kwargs["value"]
            if isinstance(value, ArrayConst):
                arr = value.array
            else:
                arr = np.asarray(value, self.slots[i].dtype)
            consts.append(np.array(arr, dtype=self.slots[i].dtype, order="C", copy=True))
            lines.append(Line(f"r{i} = c{n}[()]", (f"c{n}",), (f"r{i}",)) if self.is_scalar(i)
                         else Line(f"b{i} = c{n}", (f"c{n}",), (f"b{i}",)))
        if extents:
            n = len(consts)
            consts.append(np.array(list(extents), dtype=np.int64))
            lines += [Line(f"n{v} = c{n}[{j}]", (f"c{n}",), (f"n{v}",))
                      for v, j in extents.items()]
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
        buffers = [Buffer(b, self.slots[b].dtype, self._buffer_size(b, local), first[b], last[b])
                   for b in first
                   if b not in external and b not in storage and not self.is_scalar(b)]
        # the temporaries of einsums summed over row blocks (slot -1 - out), live with out
        buffers += [Buffer(-1 - o, self.slots[o].dtype, size, first[o], last[o])
                    for o, size in temps.items()]
        offsets, sizes = place(buffers)
        for b, (expr, output) in storage.items():
            lines.append(Line(f"b{b} = {expr}", (output,), (f"b{b}",)))
        for buf in sorted(buffers, key=lambda b: b.slot):
            off = offsets[buf.slot]
            slot = buf.slot if buf.slot >= 0 else -1 - buf.slot
            shape = self.slots[slot].shape
            if slot in local:  # one block of rows
                shape = (local[slot],) + shape[1:]
            name = f"b{slot}" if buf.slot >= 0 else f"w{slot}"
            arena = ARENA_NAME[buf.dtype]
            lines.append(Line(f"{name} = {arena}[{off}:{off + buf.size}].reshape({shape!r})",
                              (arena,), (name,)))
        for v, src in plan.views.items():
            base = self.base(v)
            if (base in first or base in external) and base not in local:
                lines.append(Line(f"b{v} = b{src}.reshape({self.slots[v].shape!r})",
                                  (f"b{src}",), (f"b{v}",)))
        for i in sorted(flat):  # see NestWriter.load
            lines.append(Line(f"b{i}f = b{i}.reshape({self.slots[i].size})", (f"b{i}",),
                              (f"b{i}f",)))
        arenas = [(d, max(sizes[d], 1)) for d in ARENA_NAME if d in sizes]
        return lines, consts, arenas

    def _region_buffers(self) -> tuple[dict[int, int], dict[int, int]]:
        """Slots living one block at a time (-> block rows), and the einsums summed over
        row blocks (output base -> size of their temporary ``w<i>``), in item order."""
        local: dict[int, int] = {}
        temps: dict[int, int] = {}
        for region in self.plan.items:
            if not isinstance(region, RowBlock):
                continue
            for b in region.local:
                local[b] = region.block
            for sub in region.items:
                if isinstance(sub, Opaque) and self.base(sub.step.output) in region.summed:
                    temps[self.base(sub.step.output)] = self.slots[sub.step.output].size
        return local, temps

    def _buffer_size(self, b: int, local: dict[int, int]) -> int:
        """Arena elements of slot ``b``: one block of rows for region-local slots."""
        if b in local:
            return local[b] * int(np.prod(self.slots[b].shape[1:], dtype=np.int64))
        return self.slots[b].size

    # -- opaque steps and regions ------------------------------------------------------------
    def opaque(self, at: Where, item: int, step: Step) -> list[Any]:
        for i in step.inputs:
            self.note_read(item, i)
        self.note_write(item, step.output)
        if at.region is not None and self.base(step.output) in at.region.summed:
            return [Comment(f"{self.describe(step)}  (summed over row blocks)"),
                    *summed_einsum(at, step)]
        return [Comment(self.describe(step)), *LOWERINGS[step.primitive](at, step)]

    def row_block(self, item: int, region: RowBlock) -> tuple[list[Any], set[int]]:
        """The loop over blocks of rows running the items of ``region`` on each block,
        and the whole arrays its nests read through flat views.

        The items are lowered where the region's blocked slots are its block's views
        (:class:`~.where.Where`). Every slot the region touches is recorded as read and
        written by the region as a whole (item ``item``): arrays carried from one block
        to the next (sums, whole outputs) and the row-invariant inputs then stay live
        over all blocks.
        """
        rows, block = region.rows, region.block
        shared = ", ".join(f"s{i}" for i in region.shared)
        out: list[Any] = [Comment(f"---- row blocks of {block} over axis of {rows}: "
                                  f"{shared} read once per block")]
        for t in region.inits:  # sums over the rows start before the first block
            out.append(self.top.fill(t, self.plan.init[t]))
        at = Where(self.plan, region)
        body: list[Any] = []
        block_flat: set[int] = set()  # blocked slots read through a flat view
        flat: set[int] = set()        # whole arrays read through a flat view
        for sub in region.items:
            if isinstance(sub, Nest):
                code = lower_nest(self, at, sub)
                self.note(item, code)
                body += code.stmts
                block_flat |= {i for i in code.flat if at.blocked(i)}
                flat |= {i for i in code.flat if not at.blocked(i)}
            else:
                body += self.opaque(at, item, sub.step)
        views: list[Any] = []
        for i in sorted(region.blocked - set(self.plan.views)):
            self.note_read(item, i)
            if i in region.local:
                views.append(Line(f"k{i} = b{i}[:nb]", (f"b{i}", "nb"), (f"k{i}",)))
            else:
                views.append(Line(f"k{i} = b{i}[r0:r0 + nb]", (f"b{i}", "r0", "nb"), (f"k{i}",)))
        for v, src in self.plan.views.items():
            if v in region.blocked:
                shape = ("nb",) + tuple(str(n) for n in self.slots[v].shape[1:])
                views.append(Line(f"k{v} = k{src}.reshape(({', '.join(shape)},))",
                                  (f"k{src}", "nb"), (f"k{v}",)))
        for i in sorted(block_flat):
            views.append(Line(f"k{i}f = k{i}.reshape({at.size(i)})", at.view_reads(i),
                              (f"k{i}f",)))
        blocks = Line(f"nb = min({block}, {rows} - r0)", ("r0",), ("nb",))
        loop = For(Text("r0"), 0, rows, (blocks, *views, *body), step=block)
        return out + [loop], flat


def module_source(program: Program, header: list[Any], body: list[Any], args: list[str],
                  parallel: bool) -> tuple[str, tuple]:
    """The generated module's source, and a long kernel's chunks (``()`` for one function).

    The kernel is one function ``kernel(args)`` running ``header + body``; a body of
    more lines than :data:`.kernel_split.MAX_CHUNK_LINES` (and
    ``SPLIT_FROM_LINES``) is split into chunk functions called by a driver.
    """
    flags = "{" + ", ".join(repr(f) for f in FASTMATH) + "}"

    def decorator(par: bool) -> str:
        return (f"@njit(cache=True, nogil=True, error_model=\"numpy\", fastmath={flags}"
                + (", parallel=True)" if par else ")"))

    printed = [Printer().stmt(s, "") for s in body]  # each statement's lines, unindented
    body_lines = print_lines(header, "    ") + ["    " + line for lines in printed
                                                for line in lines]
    chunks: tuple = ()
    functions = [decorator(parallel), f"def kernel({', '.join(args)}):",
                 *body_lines, "    return None", ""]
    bound = kernel_split.MAX_CHUNK_LINES
    if code_line_count(body_lines) > max(bound, kernel_split.SPLIT_FROM_LINES):
        try:
            sources, chunk_list = split(header, body, args, bound, printed=printed)
        except ValueError:  # not splittable (never met): one function, as before
            sources = []
        if sources:
            chunks = tuple(chunk_list)
            functions = []
            for src, chunk in zip(sources, chunks):
                functions += [decorator(chunk.parallel), src, "", ""]
            if len(chunks) < kernel_split.PYTHON_DRIVER_FROM_CHUNKS:
                functions += [decorator(False)]
            else:  # a Python driver: each chunk compiles as its own module (a numba
                # driver links and optimises them all as one), in child processes
                functions += [kernel_split.chunk_table(chunks), "", ""]
            functions += [f"def kernel({', '.join(args)}):",
                          *("    " + line for line in sources[-1].splitlines()),
                          "    return None", ""]
    lines = [
        '"""Generated by newtonad\'s numba engine from the program below; do not edit.',
        "",
        *("    " + line for line in str(program).splitlines()),
        '"""',
        "import math",  # math.erf, math.lgamma: special functions numba compiles
        "import numpy as np",
        "from numba import njit, prange" if parallel else "from numba import njit",
        "",
        "",
        *functions,
    ]
    return "\n".join(lines), chunks


@gc_paused
def generate(plan: Plan, options: LoweringOptions) -> Kernel:
    """Generate the kernel for ``plan`` under ``options``."""
    return Generator(plan, options).generate()


__all__ = ["FASTMATH", "Kernel", "generate", "describe"]
