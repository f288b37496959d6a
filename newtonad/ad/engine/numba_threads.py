"""What the numba engine's parallel loops run on: threads and threading layer.

The code generator reads these to decide which loops run on all threads, and the disk
cache keys kernels on :func:`tag`, since the generated code depends on them.

Unless the user chose a threading layer (``NUMBA_THREADING_LAYER``, or
``numba.config.THREADING_LAYER`` before the first parallel loop), newtonad asks numba
for a fork-safe one (:func:`use_layer`): TBB where installed, else numba's
``workqueue``. numba's default would pick GNU OpenMP on Linux, which makes every
process forked after a parallel loop ran terminate ("fork() called from a process
already using GNU OpenMP") – a ``multiprocessing`` pool after a large solve would hang.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys


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


def layer() -> str:
    """The threading layer (or numba's kind of layer) newtonad's parallel loops ask for."""
    from numba import config

    chosen = str(config.THREADING_LAYER).lower()
    if chosen == "default" and not os.environ.get("NUMBA_THREADING_LAYER"):
        return "forksafe"
    return chosen


def use_layer() -> None:
    """Ask numba for :func:`layer` before its threads start (once they run, it is fixed)."""
    from numba import config
    from numba.np.ufunc import parallel

    if (layer() == "forksafe" and str(config.THREADING_LAYER).lower() == "default"
            and not getattr(parallel, "_is_initialized", True)):
        config.THREADING_LAYER = "forksafe"


def cheap_launch() -> bool:
    """Does starting a parallel loop cost microseconds (TBB or OpenMP), not tens of them?

    numba's ``workqueue`` layer costs 50-70 µs per parallel loop on a 2-core machine
    (OpenMP: a few), so there only long loops gain from threads.
    """
    name = layer()
    if name in ("tbb", "omp"):
        return True
    if name == "workqueue":
        return False
    candidates = {"forksafe": ("tbb",) if sys.platform.startswith("linux") else ("tbb", "omp"),
                  "safe": ("tbb",)}.get(name, ("tbb", "omp"))
    return any(_importable(f"numba.np.ufunc.{c}pool") for c in candidates)


def tag() -> str:
    """What compiled code depends on here: serial loops, or parallel ones and their gate."""
    if parallel_threads() < 2:
        return "serial"
    return "parallel" if cheap_launch() else "parallel-workqueue"


__all__ = ["cheap_launch", "layer", "parallel_threads", "tag", "use_layer"]
