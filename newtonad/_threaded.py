"""Loops on numba's threads outside the kernels: the finiteness test of large points
(``_programs.PARALLEL_FROM``) and the gather of large sparse recoveries
(``sparse.recovery.PARALLEL_GATHER_FROM``). Imported only when one is needed: numba
costs 0.3 s to import. Both give the same answer on any number of threads."""

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
def _gather(frame: np.ndarray, plan: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = frame[plan[i]]``: a copy."""
    for i in numba.prange(plan.size):
        out[i] = frame[plan[i]]


def nonfinite(x: np.ndarray) -> bool:
    """:func:`_nonfinite` on the cores other processes leave free."""
    return numba_threads.run_parallel(_nonfinite, x)


def gather(frame: np.ndarray, plan: np.ndarray, out: np.ndarray) -> None:
    """:func:`_gather` on the cores other processes leave free."""
    numba_threads.run_parallel(_gather, frame, plan, out)


__all__ = ["gather", "nonfinite"]
