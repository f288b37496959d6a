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
repeated solves of one size touch no new memory either (:func:`release` drops them).

Arrays from a workspace belong to whoever asked last: a solver that hands one out (a
step returned by ``solve``) documents how long it stays valid.

Sequences of vectors (Steihaug's recorded directions, the Lanczos basis) are separate
1-D arrays made as they are first asked for (:class:`Rows`), not rows of one large
2-D buffer: on this machine a product whose input was a row of a reserved
(512, 65538) buffer took 0.75 ms inside trust-ncg and trust-krylov on DIXMAAN where
the same product of a separate vector took 0.2-0.3 ms (not reproduced outside the
solver loop; not explained -- the large buffer is NumPy's transparent-huge-page
candidate, the vectors are not).
"""

from __future__ import annotations

import threading
from typing import Optional

import numpy as np

__all__ = ["Workspace", "Rows", "borrow", "give_back", "release", "KEEP_BYTES",
           "POOL_SIZE", "POOL_FROM"]

#: vectors of fewer entries are made afresh: malloc serves them from memory it already
#: has (glibc maps blocks of 128 KiB, 16384 entries, and more afresh), and a new small
#: array costs less than looking one up here
POOL_FROM = 8192

#: a workspace that has touched more memory than this is dropped after its run
KEEP_BYTES = 64 * 2**20
#: workspaces kept between runs (one per concurrent run that benefits)
POOL_SIZE = 2


class Rows:
    """Up to ``count`` float64 vectors of length ``n``, each made when first indexed."""

    def __init__(self, count: int, n: int) -> None:
        self.count = count
        self.n = n
        self._made: list[np.ndarray] = []

    def __getitem__(self, j: int) -> np.ndarray:
        made = self._made
        if j < len(made):
            return made[j]
        if not 0 <= j < self.count:
            raise IndexError(f"row {j} of {self.count}")
        while len(made) <= j:
            made.append(np.empty(self.n))
        return made[j]

    def __len__(self) -> int:
        return self.count

    def stacked(self, k: int) -> np.ndarray:
        """The first ``k`` rows as one ``(k, n)`` array (a copy)."""
        return np.array([self[j] for j in range(k)]) if k else np.empty((0, self.n))

    @property
    def nbytes(self) -> int:
        """Bytes of the rows made so far."""
        return len(self._made) * self.n * 8


class Workspace:
    """Named float64 buffers, made on first request and handed out again after.

    ``vector(name, n)`` is an ``(n,)`` array; ``rows(name, count, n)`` a :class:`Rows`
    of ``count`` vectors, made as they are used.
    """

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}
        self._rows: dict[str, Rows] = {}

    def vector(self, name: str, n: int) -> np.ndarray:
        """The buffer ``name`` of shape ``(n,)`` (contents left from its last use)."""
        a = self._arrays.get(name)
        if a is None or a.shape != (n,):
            a = self._arrays[name] = np.empty(n)
        return a

    def rows(self, name: str, count: int, n: int) -> Rows:
        """The vectors ``name``: up to ``count`` of length ``n`` (those made before kept)."""
        r = self._rows.get(name)
        if r is None or r.n != n:
            r = self._rows[name] = Rows(count, n)
        r.count = count
        return r

    @property
    def touched_bytes(self) -> int:
        """Bytes of the buffers made so far."""
        return (sum(a.nbytes for a in self._arrays.values())
                + sum(r.nbytes for r in self._rows.values()))


_pool: list[Workspace] = []
_lock = threading.Lock()


def borrow() -> Workspace:
    """A workspace for one run: a kept one if there is one, else a new one."""
    with _lock:
        if _pool:
            return _pool.pop()
    return Workspace()


def release() -> None:
    """Drop the workspaces kept between runs (their memory goes back to the allocator)."""
    with _lock:
        _pool.clear()


def give_back(workspace: Optional[Workspace]) -> None:
    """Return a workspace after its run; kept for the next run unless it holds more than
    :data:`KEEP_BYTES` or the pool is full."""
    if workspace is None or workspace.touched_bytes > KEEP_BYTES:
        return
    with _lock:
        if len(_pool) < POOL_SIZE:
            _pool.append(workspace)
