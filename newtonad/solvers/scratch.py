"""Scratch vectors the inner loops reuse from point to point and from run to run.

The CG and Lanczos loops work on a handful of n-vectors (iterate, residual, directions,
the Lanczos basis, the step). Allocated afresh, each one is written to new pages, and a
first write to a page is a page fault: measured on this project's 2-core machine (a
virtual machine), filling a fresh 512 KiB vector took 0.37 ms (130 faults) where
filling a warm one took 9 µs -- longer than most Hessian-vector products at n = 65536,
so a loop that allocated its vectors at every point spent most of its time in the
kernel's page-fault handler. A :class:`Workspace` hands out the same arrays every time
they are asked for; :func:`borrow` / :func:`give_back` keep up to :data:`POOL_SIZE`
workspaces between runs, of at most :data:`KEEP_BYTES` of touched memory each, so that
repeated solves of one size touch no new memory either.

Arrays from a workspace belong to whoever asked last: a solver that hands one out (a
step returned by ``solve``) documents how long it stays valid.
"""

from __future__ import annotations

import threading
from typing import Optional

import numpy as np

__all__ = ["Workspace", "borrow", "give_back", "KEEP_BYTES", "POOL_SIZE"]

#: a workspace that has touched more memory than this is dropped after its run
KEEP_BYTES = 64 * 2**20
#: workspaces kept between runs (one per concurrent run that benefits)
POOL_SIZE = 2


class Workspace:
    """Named float64 buffers, made on first request and handed out again after.

    ``vector(name, n)`` is an ``(n,)`` array; ``rows(name, count, n)`` a ``(count, n)``
    array whose rows are touched only as they are used (:meth:`note_rows` records how
    many were, for :attr:`touched_bytes`).
    """

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}
        self._rows_used: dict[str, int] = {}

    def vector(self, name: str, n: int) -> np.ndarray:
        """The buffer ``name`` of shape ``(n,)`` (contents left from its last use)."""
        a = self._arrays.get(name)
        if a is None or a.shape != (n,):
            a = self._arrays[name] = np.empty(n)
        return a

    def rows(self, name: str, count: int, n: int) -> np.ndarray:
        """The buffer ``name`` of shape ``(count, n)``; call :meth:`note_rows` as rows
        get written."""
        a = self._arrays.get(name)
        if a is None or a.shape != (count, n):
            a = self._arrays[name] = np.empty((count, n))
            self._rows_used[name] = 0
        return a

    def note_rows(self, name: str, used: int) -> None:
        """Record that the first ``used`` rows of ``rows(name, ...)`` have been written."""
        if used > self._rows_used.get(name, 0):
            self._rows_used[name] = used

    @property
    def touched_bytes(self) -> int:
        """Bytes of the buffers' memory that has been written (resident)."""
        total = 0
        for name, a in self._arrays.items():
            if a.ndim == 2:
                total += self._rows_used.get(name, a.shape[0]) * a.shape[1] * 8
            else:
                total += a.nbytes
        return total


_pool: list[Workspace] = []
_lock = threading.Lock()


def borrow() -> Workspace:
    """A workspace for one run: a kept one if there is one, else a new one."""
    with _lock:
        if _pool:
            return _pool.pop()
    return Workspace()


def give_back(workspace: Optional[Workspace]) -> None:
    """Return a workspace after its run; kept for the next run unless it holds more than
    :data:`KEEP_BYTES` or the pool is full."""
    if workspace is None or workspace.touched_bytes > KEEP_BYTES:
        return
    with _lock:
        if len(_pool) < POOL_SIZE:
            _pool.append(workspace)
