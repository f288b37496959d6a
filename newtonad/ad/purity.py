"""Random draws while a function is traced: detected, so they are never frozen.

A trace records the numbers a function drew as constants of the program: every later
call would replay the same draws, and a stochastic objective would silently become a
deterministic one. :func:`watching_draws` compares the states of the random number
generators the function can reach before and after the trace -- NumPy's global
``RandomState`` (``np.random.rand`` & co.), Python's ``random`` module, and the
``Generator`` / ``RandomState`` / ``random.Random`` objects found among what the
function captures (:func:`~newtonad.ad.captures.find_generators`) -- and notes a new
unseeded ``np.random.default_rng()`` made during the trace. Any of those means the
function is impure: the tracer refuses it (:class:`~newtonad.ad.tracer_errors.ImpureFunctionError`)
and the entry points call it directly instead.

A generator created inside the function with a fixed seed draws the same numbers every
call: that function is pure and is traced. Another thread may draw from the global
generators while the function is traced (Dask's workers do): when other threads run,
a move of a global generator is checked by tracing once more
(:func:`shared_draw_retried`), and only a function that moves it again is refused.
"""

from __future__ import annotations

import contextlib
import random
import threading
from typing import Any, Callable, Iterator, TypeVar

import numpy as np

from .tracer_errors import ImpureFunctionError, impure_message

__all__ = ["DrawWatch", "watching_draws", "SharedGeneratorMoved", "shared_draw_retried",
           "moved_by_another_thread_maybe"]

#: the generators every thread shares, named as :meth:`DrawWatch.drew` names them
GLOBAL_SOURCES = ("np.random.*", "random.*")

_T = TypeVar("_T")


def _state(rng: Any) -> Any:
    """A comparable snapshot of a generator's state."""
    if isinstance(rng, np.random.Generator):
        return _frozen(rng.bit_generator.state)
    if isinstance(rng, np.random.RandomState):
        return _frozen(rng.get_state(legacy=False))
    if isinstance(rng, np.random.BitGenerator):
        return _frozen(rng.state)
    return rng.getstate()  # random.Random


def _frozen(state: Any) -> Any:
    """Nested dicts of a generator's state as something ``==`` compares whole."""
    if isinstance(state, dict):
        return tuple((k, _frozen(v)) for k, v in sorted(state.items()))
    if isinstance(state, np.ndarray):
        return (state.dtype.str, state.tobytes())
    return state


class SharedGeneratorMoved(Exception):
    """A global generator moved during a trace while other threads ran: the function or
    another thread drew from it."""

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.source = source


def moved_by_another_thread_maybe(source: str) -> bool:
    """Whether a draw from ``source`` may have been another thread's."""
    return source in GLOBAL_SOURCES and threading.active_count() > 1


def shared_draw_retried(trace: Callable[[], _T]) -> _T:
    """``trace()``, once more when it raised :class:`SharedGeneratorMoved`, and
    :class:`~.tracer_errors.ImpureFunctionError` when the second raises it too: a function
    that draws moves the generator on every trace, while another thread's draw seldom
    falls within two traces of a few milliseconds."""
    try:
        return trace()
    except SharedGeneratorMoved:
        pass
    try:
        return trace()
    except SharedGeneratorMoved as moved:
        raise ImpureFunctionError(impure_message(moved.source, threads=True)) from None


class DrawWatch:
    """The states of the generators a function can reach, taken before it is traced."""

    def __init__(self, generators: list[Any]):
        self.sources: list[tuple[str, Any]] = [
            ("np.random.*", np.random.mtrand._rand), ("random.*", random._inst)]
        self.sources += [(_describe(g), g) for g in generators]
        self.before = [_state(g) for _, g in self.sources]
        self.unseeded: list[str] = []

    def drew(self) -> str | None:
        """What the function drew from since the watch began, or ``None``."""
        if self.unseeded:
            return self.unseeded[0]
        for (name, rng), then in zip(self.sources, self.before):
            if _state(rng) != then:
                return name
        return None


def _describe(rng: Any) -> str:
    return f"a captured {type(rng).__module__.split('.')[0]}.{type(rng).__name__}"


@contextlib.contextmanager
def watching_draws(generators: list[Any]) -> Iterator[DrawWatch]:
    """Watch the global generators and ``generators`` while the block traces; also note
    unseeded ``np.random.default_rng()`` calls made meanwhile."""
    watch = DrawWatch(generators)
    original = np.random.default_rng

    def default_rng(seed: Any = None, *args: Any, **kwargs: Any) -> Any:
        if seed is None:
            watch.unseeded.append("np.random.default_rng() without a seed")
        return original(seed, *args, **kwargs)

    np.random.default_rng = default_rng
    try:
        yield watch
    finally:
        np.random.default_rng = original
