"""Python values in ``args`` are static: part of the cache key, never traced.

``f(x, lam, n, "l1")`` may branch on ``lam > 0``, loop ``range(n)`` and pick a norm by its
name: a Python ``bool``, ``int``, ``float`` or ``str`` (or a tuple of them, nested) passed
in ``args`` reaches ``f`` as that very value, known while tracing, as JAX's
``static_argnums`` does. NumPy arrays (and NumPy scalars) stay traced data: a sweep over
an array-valued parameter reuses one program and its kernels.

:func:`bind_static` gives the function the tracer sees -- ``f`` with the static values
bound at their positions, taking only the data arguments -- and those data arguments.
The bound function is cached per ``f`` and per static values (with their types, so
``1``, ``1.0`` and ``True`` differ), so the traces and compiled kernels cached for it
are reused by every later call with the same values; a new value traces and compiles
again. The cache keeps the :data:`CACHED` most recently used bindings (it holds ``f``
strongly: the bound function must reach ``f`` for the guards on what ``f`` reads).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any, Callable

__all__ = ["bind_static", "is_static"]

_STATIC_TYPES = (bool, int, float, str)
#: how many (function, static values) bindings are kept, most recently used first
CACHED = 256
_BOUND: "OrderedDict[tuple, Callable]" = OrderedDict()
_LOCK = threading.Lock()


def is_static(value: Any) -> bool:
    """Whether ``value`` is a Python bool / int / float / str, or a tuple of static values."""
    if type(value) in _STATIC_TYPES:  # exact types: numpy.float64 subclasses float
        return True
    return type(value) is tuple and all(is_static(v) for v in value)


def _key(value: Any) -> Any:
    """A hashable key that tells ``1``, ``1.0`` and ``True`` apart."""
    if type(value) is tuple:
        return ("tuple", tuple(_key(v) for v in value))
    return (type(value).__name__, value)


def bind_static(f: Callable, args: tuple) -> tuple[Callable, tuple]:
    """``(g, data)``: ``g(x, *data)`` calls ``f(x, *args)`` with the static values of
    ``args`` bound; ``(f, args)`` itself when no argument is static."""
    positions = tuple(i for i, a in enumerate(args) if is_static(a))
    if not positions:
        return f, args
    statics = tuple(args[i] for i in positions)
    data = tuple(a for i, a in enumerate(args) if i not in positions)
    key = (f, len(args), positions, tuple(_key(v) for v in statics))
    try:
        with _LOCK:
            bound = _BOUND.get(key)
            if bound is None:
                bound = _BOUND[key] = _bound(f, len(args), positions, statics)
                if len(_BOUND) > CACHED:
                    _BOUND.popitem(last=False)
            else:
                _BOUND.move_to_end(key)
    except TypeError:  # an unhashable callable: a new function each call (traced again)
        bound = _bound(f, len(args), positions, statics)
    return bound, data


def _bound(f: Callable, count: int, positions: tuple, statics: tuple) -> Callable:
    static_at = dict(zip(positions, statics))

    @functools.wraps(f)
    def with_statics(x: Any, *data: Any) -> Any:
        rest = iter(data)
        full = [static_at[i] if i in static_at else next(rest) for i in range(count)]
        return f(x, *full)
    return with_statics
