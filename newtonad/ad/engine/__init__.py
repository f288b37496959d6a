"""Engines run Programs: a Program in, arrays out.

``auto`` is the API's default (``newtonad.settings.engine``, set by the
``NEWTONAD_ENGINE`` environment variable): a program runs on the reference evaluator at
once while its numba kernel compiles in a background process, and moves to the kernel
when it is ready (:mod:`.auto`, :mod:`.background`). ``numba`` compiles fused kernels
before the first call returns; ``numpy`` is the reference evaluator (and
:func:`compile_program`'s own default). Engines are looked up by name so the API can
take ``engine="numpy"`` and a compiled engine can plug in under the same programs.

Registration runs one way: this package knows the reference evaluator directly and the
other engines by module name, imported on first use; an engine module registers itself
here when imported (:func:`register`), and nothing here imports it back.

:data:`TIMES` counts what compiling costs, so that reported solve times can leave it
out: seconds spent making runners on the caller's path (:func:`compile_program`,
including a numba compile that happens lazily in the middle of a solve), and seconds
spent off it, in the background compiler. :func:`timings` gives a snapshot; the
difference of two snapshots is what happened in between.
"""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass, fields, replace
from typing import Callable

from ..program import Program
from . import numpy_eval

Runner = Callable[..., tuple]

#: Engine name -> ``compile_fn(program) -> run(*inputs) -> tuple of outputs``.
ENGINES: dict[str, Callable[[Program], Runner]] = {"numpy": numpy_eval.compile_program}

#: Engines whose modules are imported on first use (numba's import is not free); each
#: registers itself when imported.
LAZY_ENGINES = {"numba": "newtonad.ad.engine.numba_engine",
                "auto": "newtonad.ad.engine.auto"}


@dataclass(frozen=True)
class Timings:
    """Seconds and counts of compilation, since the process started.

    Attributes
    ----------
    compile_seconds : float
        Spent making runners on the caller's path: numba lowering and compiling (or
        loading from the disk cache), also when it happens lazily inside a call.
    background_seconds : float
        Spent by the background compiler's worker process (off the caller's path).
    background_compiles : int
        Kernels the worker compiled (or found in the disk cache).
    handover_seconds : float
        Spent in this process loading the kernels the worker compiled, in a background
        thread (it shares the interpreter with the caller).
    handover_wait_seconds : float
        Spent by callers waiting at a program's hand-over call for its kernel (see
        :mod:`.auto`).
    switches : int
        Programs that switched from NumPy to a kernel the worker compiled, at their
        hand-over call. Unlike ``background_compiles`` (which counts a kernel when the
        worker finishes it, whoever asked and whether or not it is ever used), a switch
        happens at a call fixed in advance, so a span counts its own.
    switched_compile_seconds : float
        The worker's seconds for the kernels of those switches.
    """

    compile_seconds: float = 0.0
    background_seconds: float = 0.0
    background_compiles: int = 0
    handover_seconds: float = 0.0
    handover_wait_seconds: float = 0.0
    switches: int = 0
    switched_compile_seconds: float = 0.0

    def __sub__(self, other: "Timings") -> "Timings":
        return Timings(**{f.name: getattr(self, f.name) - getattr(other, f.name)
                          for f in fields(self)})


_TIMES = Timings()
#: Engines whose runners are made without compiling (``auto`` compiles later, through
#: ``numba``, which is counted then).
_NOT_COMPILING = frozenset({"numpy", "auto"})
_TIMES_LOCK = threading.Lock()
_timing_depth = threading.local()


def record(**increments: float) -> None:
    """Add to the process's :class:`Timings` (field names as keywords)."""
    global _TIMES
    with _TIMES_LOCK:
        _TIMES = replace(_TIMES, **{k: getattr(_TIMES, k) + v for k, v in increments.items()})


def timings() -> Timings:
    """A snapshot of the compilation :class:`Timings` so far (subtract two for a span).

    Examples
    --------
    >>> from newtonad.ad import engine
    >>> before = engine.timings()
    >>> (engine.timings() - before).compile_seconds
    0.0
    """
    return _TIMES


def register(name: str, compile_fn: Callable[[Program], Runner]) -> None:
    """Make ``compile_fn(program) -> run(*inputs) -> tuple of outputs`` available by name."""
    ENGINES[name] = compile_fn


def compile_program(program: Program, engine: str = "numpy") -> Runner:
    """Compile ``program`` with the named engine."""
    if engine not in ENGINES and engine in LAZY_ENGINES:
        importlib.import_module(LAZY_ENGINES[engine])
    if engine not in ENGINES:
        known = sorted(set(ENGINES) | set(LAZY_ENGINES))
        raise ValueError(f"unknown engine {engine!r}; available: {known}")
    if engine in _NOT_COMPILING:  # nothing compiled here: nothing to count
        return ENGINES[engine](program)
    depth = getattr(_timing_depth, "n", 0)
    _timing_depth.n = depth + 1  # an engine that compiles through another counts once
    start = time.perf_counter()
    try:
        return ENGINES[engine](program)
    finally:
        _timing_depth.n = depth
        if depth == 0:
            record(compile_seconds=time.perf_counter() - start)


__all__ = ["ENGINES", "LAZY_ENGINES", "Runner", "Timings", "compile_program", "record",
           "register", "timings"]
