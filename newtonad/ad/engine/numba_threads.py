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
import threading
import time
from pathlib import Path
from typing import Any, Callable


def parallel_threads() -> int:
    """The threads parallel loops would run on.

    Returns
    -------
    int
        numba's ``NUMBA_NUM_THREADS``: one per core unless the environment says otherwise.
    """
    from numba import config

    return int(config.NUMBA_NUM_THREADS)


def threads_expected() -> int:
    """:func:`parallel_threads`, without importing numba where it is not loaded yet.

    numba's default, one thread per core this process may use, unless
    ``NUMBA_NUM_THREADS`` says otherwise.
    """
    if "numba" in sys.modules:
        return parallel_threads()
    configured = os.environ.get("NUMBA_NUM_THREADS", "")
    if configured.strip().isdigit():
        return int(configured)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


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


#: Seconds one reading of the machine's load is used for (reading it costs about 30 µs).
LOAD_PERIOD = 0.01
_load_reading = [0.0, 0]  # [when it expires, processes of others running then]


def _running_here() -> int:
    """Threads of this process that are running or runnable now (``/proc/self/task``)."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:  # the thread ended meanwhile
            continue
        end = stat.rindex(b")")  # the name in parentheses may hold spaces
        count += stat[end + 2:end + 3] == b"R"
    return count


def others_running() -> int:
    """Threads of other processes running or waiting for a core now (Linux; else 0).

    The fourth field of ``/proc/loadavg`` counts every runnable thread of the machine;
    this process's own (the caller, and numba's workers still spinning after the last
    parallel loop) are taken off. One reading serves for :data:`LOAD_PERIOD` seconds.

    Returns
    -------
    int
        At least 0.
    """
    now = time.monotonic()
    if now < _load_reading[0]:
        return _load_reading[1]
    try:
        with open("/proc/loadavg", "rb") as fh:
            runnable = int(fh.read().split()[3].split(b"/")[0])
        others = max(0, runnable - _running_here())
    except (OSError, ValueError, IndexError):  # not Linux, or no /proc
        others = 0
    _load_reading[:] = [now + LOAD_PERIOD, others]
    return others


def free_cores(wanted: int) -> int:
    """How many of ``wanted`` threads a parallel loop starting now would get cores for.

    A parallel loop waits for its slowest thread; on a busy machine a thread without a
    core of its own waits a scheduler time slice (milliseconds) for one, and the whole
    loop with it. So a loop runs on the cores no other process is using, and on one
    thread when there are none: never slower than the serial loop.

    Parameters
    ----------
    wanted : int
        The threads the loop would run on (numba's current setting).

    Returns
    -------
    int
        Between 1 and ``wanted``.
    """
    if wanted < 2:
        return wanted
    return max(1, min(wanted, (os.cpu_count() or 1) - others_running()))


#: Held while a function with parallel loops runs: numba's ``workqueue`` layer (the
#: fork-safe one without TBB) aborts the process when two threads launch parallel loops
#: at once. Serial kernels run concurrently (no GIL).
PARALLEL_LOCK = threading.Lock()


def run_parallel(call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)``, a compiled function with parallel loops, on the free cores.

    One such call runs at a time in the process (:data:`PARALLEL_LOCK`), with numba's
    threads for the calling thread cut to :func:`free_cores` for its duration. (Beside
    two busy processes on two cores, an HVP of 8 columns at n = 1e6 took 24 ms a call on
    both threads and 7.6 ms on one.) The number of threads never changes results:
    parallel loops sum in a fixed order of chunks (see :mod:`.printer`).
    """
    import numba

    with PARALLEL_LOCK:
        wanted = numba.get_num_threads()
        fit = free_cores(wanted)
        if fit >= wanted:
            return call(*args)
        numba.set_num_threads(fit)
        try:
            return call(*args)
        finally:
            numba.set_num_threads(wanted)


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


__all__ = ["cheap_launch", "free_cores", "layer", "run_parallel", "others_running",
           "parallel_threads", "tag", "threads_expected",
           "use_layer"]
