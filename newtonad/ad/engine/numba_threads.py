"""What the numba engine's parallel loops run on: threads and threading layer.

The code generator reads these to decide which loops run on all threads, and the disk
cache keys kernels on :func:`tag`, since the generated code depends on them.

Unless the user chose a threading layer (``NUMBA_THREADING_LAYER``, or
``numba.config.THREADING_LAYER`` before the first parallel loop), newtonad asks numba
for a fork-safe one (:func:`use_layer`): TBB (a dependency on Linux x86-64), else
numba's ``workqueue``. numba's default would pick GNU OpenMP on Linux, which makes
every process forked after a parallel loop ran terminate ("fork() called from a
process already using GNU OpenMP") – a ``multiprocessing`` pool after a large solve
would hang. The ``tbb`` wheel puts its library in ``<prefix>/lib``, off the dynamic
loader's path, so numba alone does not find it there: :func:`_load_tbb` loads it.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os
import sys
from pathlib import Path


def parallel_threads() -> int:
    """The threads parallel loops would run on.

    Returns
    -------
    int
        numba's ``NUMBA_NUM_THREADS``: one per core unless the environment says otherwise.
    """
    from numba import config

    return int(config.NUMBA_NUM_THREADS)


@functools.lru_cache(maxsize=None)
def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except (ImportError, OSError):  # OSError: the layer's shared library is missing
        return False
    return True


@functools.lru_cache(maxsize=1)
def _load_tbb() -> bool:
    """Can numba load its TBB layer? Loads a ``tbb`` wheel's library if need be."""
    if _importable("numba.np.ufunc.tbbpool"):
        return True
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        for path in sorted(Path(prefix, "lib").glob("libtbb.so.12*")):
            try:  # global, so that numba's extension resolves its symbols
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
            _importable.cache_clear()
            return _importable("numba.np.ufunc.tbbpool")
    return False


def layer() -> str:
    """The threading layer newtonad's parallel loops ask numba for.

    Returns
    -------
    str
        The user's choice (``numba.config.THREADING_LAYER`` or ``NUMBA_THREADING_LAYER``:
        a layer, or a kind such as ``"safe"``), else ``"forksafe"``.
    """
    from numba import config

    chosen = str(config.THREADING_LAYER).lower()
    if chosen == "default" and not os.environ.get("NUMBA_THREADING_LAYER"):
        return "forksafe"
    return chosen


def use_layer() -> None:
    """Ask numba for :func:`layer` before its threads start (once they run, it is fixed).

    Called before a kernel with parallel loops is compiled or loaded; a user's choice
    of layer is left as it is.
    """
    from numba import config
    from numba.np.ufunc import parallel

    if layer() == "forksafe" and not getattr(parallel, "_is_initialized", True):
        _load_tbb()
        config.THREADING_LAYER = "forksafe"


def cheap_launch() -> bool:
    """Does starting a parallel loop cost microseconds (TBB or OpenMP), not tens of them?

    numba's ``workqueue`` layer costs 50-70 µs per parallel loop on a 2-core machine
    (OpenMP: a few), so there only long loops gain from threads.

    Returns
    -------
    bool
        Whether :func:`layer` resolves to TBB or OpenMP here.
    """
    name = layer()
    if name in ("tbb", "omp"):
        return True
    if name == "workqueue":
        return False
    if _load_tbb():
        return True
    fork_safe = ("forksafe", "safe") if sys.platform.startswith("linux") else ("safe",)
    return name not in fork_safe and _importable("numba.np.ufunc.omppool")


def tag() -> str:
    """What compiled code depends on here: serial loops, or parallel ones and their gate.

    Returns
    -------
    str
        ``"serial"`` (one thread), ``"parallel"`` (a cheap launch) or
        ``"parallel-workqueue"``; part of the disk cache's key.
    """
    if parallel_threads() < 2:
        return "serial"
    return "parallel" if cheap_launch() else "parallel-workqueue"


__all__ = ["cheap_launch", "layer", "parallel_threads", "tag", "use_layer"]
