"""The recovery's gather on numba's threads, for large patterns (see
:data:`.recovery.PARALLEL_GATHER_FROM`); imported only when one is recovered."""

from __future__ import annotations

import numba
import numpy as np

from ..ad.engine import numba_threads

numba_threads.use_layer()  # a fork-safe threading layer before the first parallel loop


@numba.njit(parallel=True, cache=True, nogil=True)
def gather(frame: np.ndarray, plan: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = frame[plan[i]]``: a copy, so the same bits on any number of threads."""
    for i in numba.prange(plan.size):
        out[i] = frame[plan[i]]


__all__ = ["gather"]
