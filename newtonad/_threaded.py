"""Loops on numba's threads outside the kernels: the finiteness test of large points
(``_programs.PARALLEL_FROM``) and the gather and index copies of large sparse recoveries
(``sparse.recovery.PARALLEL_GATHER_FROM``): copies at memory speed, which one thread
does not reach. Imported only when one is needed: numba
costs 0.3 s to import. Each gives the same answer on any number of threads."""

from __future__ import annotations

import numba
import numpy as np

from .ad.engine import numba_threads

numba_threads.use_layer()  # a fork-safe threading layer before the first parallel loop


@numba.njit(parallel=True, cache=True, nogil=True, fastmath={"reassoc", "nsz"})
def _nonfinite(x: np.ndarray) -> bool:
    """Whether the flat float64 ``x`` holds an inf or nan: a sum of ``x * 0.0``, which is
    0 for finite entries and nan otherwise in any order of the threads' partial sums."""
    s = 0.0
    for i in numba.prange(x.size):
        s += x[i] * 0.0
    return s != 0.0


@numba.njit(parallel=True, cache=True, nogil=True)
def _gather_entries(frame: np.ndarray, plan: np.ndarray, indices: np.ndarray,
                    values: np.ndarray, indices_out: np.ndarray) -> None:
    """``values[i] = frame[plan[i]]`` and ``indices_out[i] = indices[i]``: one pass over
    the stored entries makes a sparse result's values and its own copy of its indices."""
    for i in numba.prange(plan.size):
        values[i] = frame[plan[i]]
        indices_out[i] = indices[i]


@numba.njit(parallel=True, cache=True, nogil=True)
def _copy(source: np.ndarray, out: np.ndarray) -> None:
    for i in numba.prange(source.size):
        out[i] = source[i]


def nonfinite(x: np.ndarray) -> bool:
    """:func:`_nonfinite` on the cores other processes leave free."""
    return numba_threads.run_parallel(_nonfinite, x)


def gather_entries(frame: np.ndarray, plan: np.ndarray,
                   indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(frame[plan], indices.copy())`` in one pass of :func:`_gather_entries`, on the
    cores other processes leave free."""
    values = np.empty(plan.size)
    indices_out = np.empty_like(indices)
    numba_threads.run_parallel(_gather_entries, frame, plan, indices, values, indices_out)
    return values, indices_out


def copy(source: np.ndarray) -> np.ndarray:
    """``source.copy()`` for a flat array, on the cores other processes leave free."""
    out = np.empty_like(source)
    numba_threads.run_parallel(_copy, source, out)
    return out


__all__ = ["copy", "gather_entries", "nonfinite"]
