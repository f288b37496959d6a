"""Pause Python's cyclic garbage collector while a long program is built or transformed.

Tracing and every transform allocate a few objects per program step (Vars, Ops, Steps,
tuples) and keep nearly all of them alive until the pass ends. CPython's collector
runs a generation whenever allocations outnumber deallocations by a threshold, and
its oldest generation scans *every* live container: on a 10 000-step program the
passes spent about half their time in collections that free nothing, a cost that grows
with the program (the passes were super-linear only because of it). Inside
:func:`paused` no collection runs; reference counting still frees acyclic garbage at
once, and the collector resumes (with its usual thresholds) when the outermost pause
ends. Pauses nest and are thread-safe in the sense that matters here: the collector is
re-enabled only by the pause that disabled it.
"""

from __future__ import annotations

import functools
import gc
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

_lock = threading.Lock()
_depth = 0
_was_enabled = False

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def paused() -> Iterator[None]:
    """Run the body with the cyclic garbage collector disabled (nesting allowed)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def gc_paused(fn: F) -> F:
    """Decorator: run ``fn`` inside :func:`paused`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with paused():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


__all__ = ["gc_paused", "paused"]
