"""``math.*`` on traced scalars: the NumPy function of the same name, while a trace runs.

``math.exp(x[0])`` asks ``x[0]`` for a Python float, which a traced value cannot give
without losing its derivative. While :func:`math_routed` is active (tracing), the
functions of the :mod:`math` module that have an exact NumPy counterpart are replaced by
wrappers: called with a traced value among the arguments they compute the NumPy
function (``np.exp``, ``np.arctan2``, ...; ``math.log(x, b)`` is ``np.log(x) / np.log(b)``,
``math.isnan(v)`` is ``v != v``), and with plain numbers they call the original, so other
code running meanwhile gets the same results. Names bound before the trace
(``from math import exp``) are the originals: on a traced value they are refused with the
line and the fix.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from typing import Any, Callable, Iterator

from .dispatch import UFUNCS
from .var import Var

__all__ = ["math_routed", "ROUTED"]

#: math name -> the ufunc of newtonad's NumPy layer it computes on a traced value
_UNARY = {"exp": "exp", "expm1": "expm1", "exp2": "exp2", "log2": "log2", "log10": "log10",
          "log1p": "log1p", "sqrt": "sqrt", "cbrt": "cbrt", "sin": "sin", "cos": "cos",
          "tan": "tan", "asin": "arcsin", "acos": "arccos", "atan": "arctan", "sinh": "sinh",
          "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh",
          "atanh": "arctanh", "fabs": "absolute", "floor": "floor", "ceil": "ceil",
          "trunc": "trunc", "degrees": "degrees", "radians": "radians", "erf": "erf",
          "erfc": "erfc", "lgamma": "gammaln"}
_BINARY = {"atan2": "arctan2", "pow": "power", "fmod": "fmod"}


def _traced(values: Any) -> bool:
    return any(isinstance(v, Var) for v in values)


def _log(x: Any, *base: Any) -> Any:
    out = UFUNCS["log"](x)
    return out / UFUNCS["log"](base[0]) if base else out


def _hypot(*coordinates: Any) -> Any:
    total = 0.0
    for c in coordinates:
        total = total + c * c
    return UFUNCS["sqrt"](total)


def _fsum(values: Any, start: Any = 0.0) -> Any:
    total = start
    for v in values:
        total = total + v
    return total


def _prod(values: Any, *, start: Any = 1) -> Any:
    total = start
    for v in values:
        total = total * v
    return total


def _dist(p: Any, q: Any) -> Any:
    return _hypot(*(a - b for a, b in zip(p, q)))


_SPECIAL: dict[str, Callable[..., Any]] = {
    "log": _log, "hypot": _hypot, "dist": _dist,
    "isnan": lambda v: v != v,
    "isinf": lambda v: UFUNCS["absolute"](v) == math.inf,
    "isfinite": lambda v: UFUNCS["absolute"](v) < math.inf,
}
#: these take an iterable: routed when an item is traced (the iterable is listed first)
_ITERABLE = {"fsum": _fsum, "prod": _prod}


@functools.lru_cache(maxsize=None)
def _route(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    if name in _ITERABLE:
        traced_fn = _ITERABLE[name]

        @functools.wraps(original)
        def over_items(values: Any, *rest: Any, **kw: Any) -> Any:
            items = list(values)
            if _traced(items):
                return traced_fn(items, *rest, **kw)
            return original(items, *rest, **kw)
        return over_items
    if name in _SPECIAL:
        traced_fn = _SPECIAL[name]
    else:
        ufunc = UFUNCS[_UNARY.get(name) or _BINARY[name]]
        traced_fn = ufunc

    @functools.wraps(original)
    def routed(*args: Any) -> Any:
        if _traced(args):
            return traced_fn(*args)
        return original(*args)
    return routed


#: the math functions routed while tracing (those this Python's math module has)
ROUTED = tuple(name for name in (*_UNARY, *_BINARY, *_SPECIAL, *_ITERABLE)
               if hasattr(math, name))
_lock = threading.Lock()
_state = {"depth": 0}
_originals: dict[str, Callable[..., Any]] = {}


@contextlib.contextmanager
def math_routed() -> Iterator[None]:
    """Route :data:`ROUTED` functions of :mod:`math` to NumPy for traced values while the
    block runs (re-entrant: nested and concurrent traces share one routing)."""
    with _lock:
        if _state["depth"] == 0:
            for name in ROUTED:
                _originals[name] = getattr(math, name)
                setattr(math, name, _route(name, _originals[name]))
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0:
                for name, original in _originals.items():
                    setattr(math, name, original)
                _originals.clear()
