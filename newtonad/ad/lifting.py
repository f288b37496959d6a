"""Captured values lifted into program inputs: the state of the traces that lift them.

A function may read arrays it does not take as arguments (a closure's data, a global).
:mod:`.captures` finds them and guards their values; while the function is traced inside
:func:`lifting`, :func:`~newtonad.ad.var.bind` asks :func:`lifted_input` whether an
argument it meets is such a value, and the value enters the program as a data input
instead of a baked-in constant. This module keeps one level per nested trace and
imports nothing else of newtonad: the caller says how an input is made.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, TypeVar

import numpy as np

_Input = TypeVar("_Input")

_lifting: list[tuple[dict[int, Any], dict[int, Any]]] = []  # per trace level: (liftable, lifted)


@contextlib.contextmanager
def lifting(liftable: dict[int, Any]) -> Iterator[None]:
    """While tracing, let captured values (``id -> snapshot``) enter as data inputs."""
    _lifting.append((liftable, {}))
    try:
        yield
    finally:
        _lifting.pop()


def tracing() -> bool:
    """Whether a trace is being made (values met now may enter a program as inputs)."""
    return bool(_lifting)


def once_per_trace(key: Any, make: Callable[[], _Input]) -> _Input:
    """``make()`` the first time the innermost trace is asked for ``key``, the same result
    after that (a new ``make()`` on every call outside a trace). Keys must not be ints
    (those are the captured values' ids); the caller keeps what its key names alive."""
    if not _lifting:
        return make()
    lifted = _lifting[-1][1]
    if key not in lifted:
        lifted[key] = make()
    return lifted[key]


def lifted_input(value: Any, make_input: Callable[[np.ndarray], _Input]) -> _Input | None:
    """The input standing for the captured ``value`` in the innermost trace, or ``None``.

    Only the innermost trace lifts; ``make_input(snapshot)`` is called once per value, so
    every use of a captured array shares one program input. The snapshot is the guard's
    (float64 or int64, a private 0-d array for scalars), which equals the user's value
    for as long as the guard passes.
    """
    if not _lifting:
        return None
    liftable, lifted = _lifting[-1]
    key = id(value)
    if key not in liftable:
        return None
    made = lifted.get(key)
    if made is None:
        snapshot = np.asarray(liftable[key])
        if snapshot.dtype.kind == "f":
            snapshot = snapshot.astype(np.float64, copy=snapshot.dtype != np.float64)
        elif snapshot.dtype.kind in "iu":
            snapshot = snapshot.astype(np.int64, copy=snapshot.dtype != np.int64)
        if snapshot.shape == ():
            snapshot = np.array(snapshot)  # a private 0-d array, not the user's scalar
        made = lifted[key] = make_input(snapshot)
    return made


__all__ = ["lifted_input", "lifting", "once_per_trace", "tracing"]
