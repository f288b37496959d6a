"""Bounded kernels: a long kernel body split into chunk functions called by a small driver.

LLVM's optimisation of one function grows faster than the function: a Python loop
traced term by term gives a program of tens of thousands of steps, and its kernel,
one straight-line function, took minutes and over a gigabyte to compile. Split into
functions of a bounded number of statements, each compiled on its own, the same code
compiles in time and memory proportional to its length.

The split works on the kernel body as the code generator leaves it: a sequence of
top-level statements (scalar statements, loop nests, row-blocked regions, calls on
whole arrays), preceded by the *header* that names the kernel's arrays (views of the
inputs, outputs, constants and arenas; extents read from a constant). Consecutive
statements are packed into chunks of at most ``max_lines`` lines of code; a statement
longer than that is a chunk of its own (the planner bounds loop nests, see
:data:`.numba_plan.MAX_NEST_SINKS`).

What flows between chunks is found by liveness on each statement's loop IR
(:mod:`.liveness`; no source is read back): a chunk takes as arguments the names it
reads before writing them, and returns the names it writes that a later chunk reads.
Arrays are written in place, so only their names are passed; scalars travel as
arguments and return tuples. Header definitions are free to repeat (views of arrays,
reads of input scalars), so every chunk re-derives the ones it uses from the kernel's
own arguments instead of receiving them: no array travels through a return tuple.

The driver is jitted, unless the kernel has :data:`PYTHON_DRIVER_FROM_CHUNKS` chunks or
more: then it is plain Python, the source lists the chunks in a table ``CHUNKS`` (name,
parameters, returns) and the engine compiles each chunk on its own, in child processes
(see :func:`.numba_engine.load`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .liveness import flow
from .loop_ir import Comment
from .printer import Printer, print_lines

#: Kernels of at most this many lines of code are generated as one function, as they
#: always were. The longest kernel among the built-in problems' derivatives (gradient,
#: HVP frames of 1, 4 and 64 columns, linearised HVP) and benchmarks/compare.py's is the
#: linearised HVP of the minimal surface, 1 347 lines; kernels this long compile in
#: seconds as one function, and keep every loop they fuse in one place.
SPLIT_FROM_LINES = 2000

#: Longer kernels are split into chunks of at most this many lines of code.
#: Measured on the gradient of the 200-term scalar Rosenbrock loop (4 406 steps, about
#: 9 000 lines; numba 0.68, this machine, CPU seconds of the compile in a fresh process
#: with empty caches): one function 53.5 s; chunks of 250 lines 11.5 s (17 functions),
#: of 500 lines 11.6 s; chunks of 1 000 and 4 000 lines were 2x and 7x slower than 250
#: in the same (loaded) run. Below ~250 lines the cost per function (typing set-up,
#: one LLVM module each) starts to show; above it LLVM's super-linear cost does.
#: ``benchmarks/pipeline_report.py --compile`` measures it.
MAX_CHUNK_LINES = 250

#: Kernels of at least this many chunks get a plain Python driver instead of a jitted
#: one. numba links every function a jitted function calls into the caller's LLVM
#: module, so the whole kernel is still held at once: the gradient of the 2 000-term
#: Rosenbrock loop (44 006 steps, 168 chunks) peaked at 700 MB. With a Python driver
#: each chunk is compiled on its own, in child processes of
#: :data:`.numba_engine.CHUNKS_PER_PROCESS` chunks, and the driver costs about 0.25 us
#: per chunk per call (that kernel: 47 us a call against 10 us with a jitted driver).
#: Kernels of fewer chunks keep the jitted driver: 17 chunks compile in 230 MB, and call
#: it in 1.4 us where a Python driver takes 6.3 us.
PYTHON_DRIVER_FROM_CHUNKS = 41


@dataclass(frozen=True)
class Chunk:
    """One chunk function: its name, the lines of code of its statements (at most the
    bound, unless one statement is longer) and of its prologue (header definitions it
    repeats: at most one per array its statements name), what it takes and returns
    (names), and whether it has parallel loops."""

    name: str
    lines: int
    prologue: int
    params: tuple[str, ...]
    returns: tuple[str, ...]
    parallel: bool


def code_line_count(lines: Sequence[str]) -> int:
    """Lines that are code (not comments or blank)."""
    return sum(1 for line in lines if line.strip() and not line.lstrip().startswith("#"))


# ---- the split ----------------------------------------------------------------------------------

@dataclass
class _Block:
    """One top-level statement (with the comments before it), printed and analysed."""

    lines: list[str]
    code: int
    exposed: set[str]
    written: set[str]
    definite: set[str]


def _blocks(stmts: Sequence[Any], printed: Sequence[list[str]] | None = None) -> list[_Block]:
    out: list[_Block] = []
    pending: list[str] = []
    printer = Printer()
    for n, s in enumerate(stmts):
        lines = printed[n] if printed is not None else printer.stmt(s, "")
        if isinstance(s, Comment):
            pending += lines
            continue
        exposed, written, definite = flow(s)
        out.append(_Block(pending + lines, code_line_count(lines), exposed, written, definite))
        pending = []
    if pending:
        out.append(_Block(pending, 0, set(), set(), set()))
    return out


def _header_defs(header: Sequence[Any]) -> dict[str, tuple[list[str], set[str]]]:
    """Header definitions: name -> (its source lines, the names it reads)."""
    defs: dict[str, tuple[list[str], set[str]]] = {}
    for s in header:
        lines = print_lines([s], "")
        exposed, written, _ = flow(s)
        for name in written:
            defs[name] = (lines, exposed)
    return defs


def _prologue(names: set[str], defs: dict[str, tuple[list[str], set[str]]]
              ) -> tuple[list[str], set[str]]:
    """Header lines defining ``names`` (and what they need), in header order; and the
    kernel arguments they read."""
    wanted: set[str] = set()
    stack = [n for n in names if n in defs]
    while stack:
        n = stack.pop()
        if n in wanted:
            continue
        wanted.add(n)
        stack += [m for m in defs[n][1] if m in defs]
    lines: list[str] = []
    seen: set[int] = set()
    for n, (src, _) in defs.items():  # dicts keep the header's order
        if n in wanted and id(src) not in seen:
            seen.add(id(src))
            lines += src
    args = {m for n in wanted for m in defs[n][1] if m not in defs}
    return lines, args


def split(header: Sequence[Any], body: Sequence[Any], kernel_args: Sequence[str],
          max_lines: int = MAX_CHUNK_LINES, printed: Sequence[list[str]] | None = None
          ) -> tuple[list[str], list[Chunk]]:
    """Chunk functions and the driver's body for a kernel of ``header + body``.

    Returns ``(chunk_sources, chunks)``: the source of each chunk function (its
    ``def`` line and body, without decorator; the caller adds it) followed by the
    driver body's lines, and a description of each chunk. ``printed``: the source
    lines of each statement of ``body``, unindented, as ``Printer().stmt(s, "")``
    gives them, when the caller has printed them already (else they are printed here).
    """
    defs = _header_defs(header)
    if printed is not None and len(printed) != len(body):
        raise ValueError("kernel split: one printed entry per statement of the body")
    blocks = _blocks(body, printed)
    groups: list[list[_Block]] = []
    size = 0
    for b in blocks:
        if groups and size + b.code <= max_lines:
            groups[-1].append(b)
            size += b.code
        else:
            groups.append([b])
            size = b.code
    # each group's own flow, as one sequence of statements
    flows = []
    for g in groups:
        exposed: set[str] = set()
        written: set[str] = set()
        definite: set[str] = set()
        for b in g:
            exposed |= b.exposed - definite
            written |= b.written
            definite |= b.definite
        flows.append((exposed, written, definite))
    kernel_set = set(kernel_args)
    # names read by a later group before it writes them: by the last group that reads each
    # (a set per group of the names later groups read would grow with the kernel)
    last_reader: dict[str, int] = {}
    for n, (exposed, _, _) in enumerate(flows):
        for x in exposed:
            last_reader[x] = n
    sources: list[str] = []
    chunks: list[Chunk] = []
    available: set[str] = set()  # values defined by earlier chunks
    driver: list[str] = []
    rewritten = {x for f in flows for x in f[1]} & set(defs)
    if rewritten:
        raise ValueError(f"kernel split: the body assigns header names {sorted(rewritten)}")
    for n, (g, (exposed, written, definite)) in enumerate(zip(groups, flows)):
        from_header = exposed & defs.keys()
        prologue, header_args = _prologue(from_header, defs)
        params_set = (exposed - from_header) | header_args
        returns = sorted(x for x in written if last_reader.get(x, -1) > n)
        for x in returns:
            if x not in definite:  # written on some paths only: its earlier value comes in
                if x not in available:
                    raise ValueError(f"kernel split: {x} may be undefined after chunk {n}")
                params_set.add(x)
        unknown = params_set - available - kernel_set
        if unknown:
            raise ValueError(f"kernel split: chunk {n} reads {sorted(unknown)} before any "
                             "definition")
        params = tuple(sorted(params_set, key=_arg_order(kernel_args)))
        name = f"chunk{n}"
        body_lines = prologue + [line for b in g for line in b.lines]
        ret = ", ".join(returns)
        src = [f"def {name}({', '.join(params)}):",
               *("    " + line for line in body_lines),
               f"    return ({ret},)" if returns else "    return None"]
        parallel = any("prange(" in line for line in body_lines)
        sources.append("\n".join(src))
        chunks.append(Chunk(name, sum(b.code for b in g), code_line_count(prologue), params,
                            tuple(returns), parallel))
        call = f"{name}({', '.join(params)})"
        driver.append(f"{ret}, = {call}" if returns else call)
        available |= set(returns)
    return sources + ["\n".join(driver)], chunks


def chunk_table(chunks: Sequence[Chunk]) -> str:
    """The module-level table ``CHUNKS`` of a split kernel's source: for each chunk, in
    the order the driver calls them, its name, parameters and returns. The engine
    compiles the chunks one by one from it, typing each one's scalar parameters by the
    return types of the chunks before (see :func:`.numba_engine.load`)."""
    rows = "".join(f"    ({c.name!r}, {c.params!r}, {c.returns!r}),\n" for c in chunks)
    return f"CHUNKS = (\n{rows})"


def _arg_order(kernel_args: Sequence[str]):
    position = {a: n for n, a in enumerate(kernel_args)}
    return lambda x: (0, position[x], "") if x in position else (1, 0, x)


__all__ = ["Chunk", "MAX_CHUNK_LINES", "PYTHON_DRIVER_FROM_CHUNKS", "SPLIT_FROM_LINES",
           "chunk_table", "code_line_count", "split"]
