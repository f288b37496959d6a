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
again. A scipy.sparse matrix in ``args`` is data and key at once: its entries are a data
argument (traced) and its pattern is part of the key, and ``f`` receives it as a
:class:`~newtonad.ad.sparse_operands.SparseArgument`, whose products trace. The cache
keeps the :data:`CACHED` most recently used bindings (it holds ``f``
strongly: the bound function must reach ``f`` for the guards on what ``f`` reads).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any, Callable

from .ad.sparse_operands import SparseArgument, is_sparse, split_argument

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
    ``args`` bound (and sparse matrices as their entries, see the module docstring);
    ``(f, args)`` itself when no argument is static or sparse."""
    positions = tuple(i for i, a in enumerate(args) if is_static(a))
    sparse = {i: split_argument(a) for i, a in enumerate(args) if is_sparse(a)}
    if not positions and not sparse:
        return f, args
    statics = tuple(args[i] for i in positions)
    data = tuple(sparse[i][1] if i in sparse else a for i, a in enumerate(args)
                 if i not in positions)
    patterns = {i: part[2] for i, part in sparse.items()}
    key = (f, len(args), positions, tuple(_key(v) for v in statics),
           tuple((i, part[0]) for i, part in sorted(sparse.items())))
    try:
        with _LOCK:
            bound = _BOUND.get(key)
            if bound is None:
                bound = _BOUND[key] = _bound(f, len(args), positions, statics, patterns)
                if len(_BOUND) > CACHED:
                    _BOUND.popitem(last=False)
            else:
                _BOUND.move_to_end(key)
    except TypeError:  # an unhashable callable: a new function each call (traced again)
        bound = _bound(f, len(args), positions, statics, patterns)
    return bound, data


def _bound(f: Callable, count: int, positions: tuple, statics: tuple,
           patterns: dict | None = None) -> Callable:
    static_at = dict(zip(positions, statics))
    pattern_at = patterns or {}

    @functools.wraps(f)
    def with_statics(x: Any, *data: Any) -> Any:
        rest = iter(data)
        full = []
        for i in range(count):
            if i in static_at:
                full.append(static_at[i])
            elif i in pattern_at:  # a sparse matrix's traced entries, with its pattern
                full.append(SparseArgument(next(rest), pattern_at[i]))
            else:
                full.append(next(rest))
        return f(x, *full)
    return with_statics
