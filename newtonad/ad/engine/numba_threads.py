"""What the numba engine's parallel loops would run on: threads and threading layer.

The code generator reads these to decide which loops run on all threads, and the disk
cache keys kernels on :func:`tag`, since the generated code depends on them.
"""

from __future__ import annotations

import functools
import importlib


def parallel_threads() -> int:
    """The threads parallel loops would run on (numba's ``NUMBA_NUM_THREADS``)."""
    from numba import config

    return int(config.NUMBA_NUM_THREADS)


@functools.lru_cache(maxsize=None)
def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except (ImportError, OSError):  # OSError: the layer's shared library is missing
        return False
    return True


def cheap_launch() -> bool:
    """Does starting a parallel loop cost microseconds (TBB or OpenMP), not tens of them?

    numba's fallback layer, ``workqueue``, costs 50-70 µs per parallel loop on a 2-core
    machine (OpenMP: a few), so there only long loops gain from threads.
    """
    from numba import config

    layer = str(config.THREADING_LAYER).lower()
    if layer in ("tbb", "omp"):
        return True
    if layer == "workqueue":
        return False
    candidates = {"forksafe": ("tbb",), "threadsafe": ("tbb", "omp")}.get(layer, ("tbb", "omp"))
    return any(_importable(f"numba.np.ufunc.{name}pool") for name in candidates)


def tag() -> str:
    """What compiled code depends on here: serial loops, or parallel ones and their gate."""
    if parallel_threads() < 2:
        return "serial"
    return "parallel" if cheap_launch() else "parallel-workqueue"


__all__ = ["cheap_launch", "parallel_threads", "tag"]
