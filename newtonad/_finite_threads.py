"""The finiteness test of large points on numba's threads (see ``_programs.PARALLEL_FROM``);
imported only once numba is, by the kernels."""

from __future__ import annotations

import numba
import numpy as np

from .ad.engine import numba_threads

numba_threads.use_layer()  # a fork-safe threading layer before the first parallel loop


@numba.njit(parallel=True, cache=True, nogil=True, fastmath={"reassoc", "nsz"})
def nonfinite(x: np.ndarray) -> bool:
    """Whether the flat float64 ``x`` holds an inf or nan: a sum of ``x * 0.0``, which is
    0 for finite entries and nan otherwise in any order of the threads' partial sums."""
    s = 0.0
    for i in numba.prange(x.size):
        s += x[i] * 0.0
    return s != 0.0


__all__ = ["nonfinite"]
