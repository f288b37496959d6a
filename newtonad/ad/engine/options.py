"""Lowering options of the numba engine: one frozen value that fixes the generated code.

Everything the planner and code generator decide from outside the program – block
sizes of row-blocked regions, when loops run on several threads, how short innermost
axes are written out – is a field here. The value is part of the key of the kernel
metadata cache and of ``compile_program``'s in-memory cache, so a kernel lowered with
other options is never mistaken for this one; tests pass options instead of changing
module state::

    opts = LoweringOptions.current().replace(row_block=16, row_block_min_blocks=2)
    kernel = numba_engine.lower(program, opts)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from . import numba_threads


@dataclass(frozen=True)
class LoweringOptions:
    """How the numba engine lowers a program (see the module docstring).

    Attributes
    ----------
    row_block : int or None
        Rows per block of a row-blocked region; ``None``: as many as fit
        ``row_block_bytes`` (a multiple of 8, at least 8).
    row_block_bytes : int
        Bytes of one block of every row-indexed array of a region: a part of L2, so the
        block of ``X`` read by the first product is still in cache for the next ones.
    row_block_min_blocks : int
        A region forms only when the row axis holds at least this many blocks.
    parallel_min_iterations : int or None
        Loop pieces with at least this many iterations run their outermost loop on all
        threads; ``None``: never.
    parallel_workqueue_factor : int
        ... this many times more where a parallel loop is slow to start (``workqueue``).
    parallel_chunks : int
        ... split into this many chunks of rows, which the threads share.
    parallel_threads : int
        The threads parallel loops run on (numba's ``NUMBA_NUM_THREADS``); below two,
        every loop is serial.
    cheap_launch : bool
        Whether starting a parallel loop costs microseconds (TBB, OpenMP).
    unroll : int
        Innermost extents up to this are written out column by column ...
    unroll_statements : int
        ... unless the piece then has more statements (compile time).
    """

    row_block: int | None = None
    row_block_bytes: int = 512 * 1024
    row_block_min_blocks: int = 4
    parallel_min_iterations: int | None = 1 << 16
    parallel_workqueue_factor: int = 8
    parallel_chunks: int = 64
    parallel_threads: int = 1
    cheap_launch: bool = True
    unroll: int = 4
    unroll_statements: int = 500

    @classmethod
    def current(cls) -> LoweringOptions:
        """The shipped settings, with the threads and threading layer of this process."""
        threads = numba_threads.parallel_threads()
        return cls(parallel_threads=threads,
                   cheap_launch=numba_threads.cheap_launch() if threads > 1 else True)

    def replace(self, **changes: object) -> LoweringOptions:
        """A copy with ``changes`` applied (field names as keywords)."""
        return dataclasses.replace(self, **changes)

    @property
    def key(self) -> str:
        """A stable text of every field, for cache keys."""
        return repr(dataclasses.astuple(self))


__all__ = ["LoweringOptions"]
