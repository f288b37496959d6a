"""The errors tracing raises when code asks a tracer for its value, and their messages.

A tracer (:class:`~newtonad.ad.var.Var` without a value) cannot give numbers to
``bool(x)``, ``float(x)``, ``np.asarray(x, dtype=float)`` and the like. The message says
why and what to write instead; when the request came from a library's own code (a SciPy
function newtonad does not route, NumPy computing on an object array of traced values),
it names that function, found on the Python call stack. Like :mod:`.dispatch`, this
module imports nothing else of newtonad.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

from .dispatch import scipy_caller_hint


class TracerBoolError(TypeError):
    """Raised when traced code asks for the concrete value of a tracer.

    ``bool(x)``, ``float(x)``, ``x.item()`` and ``if x > 0:`` need a value that a
    tracer does not have: newtonad traces a function once for every input of a shape.
    Write value-dependent branches with ``np.where(condition, a, b)``.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> def f(x):
    ...     return x[0] if x[0] > 0 else -x[0]
    >>> try:
    ...     nad.grad(f)(np.array([1.0]))
    ... except nad.TracerBoolError:
    ...     print("use np.where")
    use np.where
    """

def with_scipy_hint(message: str) -> str:
    """``message``, or what to do instead when a library's own code met the traced value:
    a routed SciPy function bound before routing, another SciPy function (not supported),
    or NumPy computing on an object array of traced values (build the array first)."""
    hint = scipy_caller_hint()
    if hint is not None:
        return f"{hint} ({message})"
    entry = _library_entry()
    if entry is None:
        return message
    package, name = entry
    if package == "scipy":
        return (f"newtonad cannot trace {name}: SciPy's own code ran on a traced value and "
                "needed its numbers, and newtonad has no derivative rule for this function. "
                "Write it with supported NumPy / SciPy functions (see 'What newtonad "
                f"traces' in the documentation). ({message})")
    return _numbers_asked_message(name)


def _library_entry() -> tuple[str, str] | None:
    """``(package, name)`` of the NumPy or SciPy function the user's code called, when the
    innermost frames outside newtonad are that library's (else ``None``)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _package(frame) == "newtonad":
        frame = frame.f_back
    entry = None
    while frame is not None and _package(frame) in ("numpy", "scipy"):
        entry = frame
        frame = frame.f_back
    if entry is None:
        return None
    module = entry.f_globals.get("__name__", "")
    name = entry.f_code.co_name
    if _package(entry) == "numpy":  # numpy._core.fromnumeric.max is numpy.max to users
        return "numpy", f"numpy{'.linalg' if 'linalg' in module else ''}.{name}"
    public = ".".join(part for part in module.split(".") if not part.startswith("_"))
    owner = entry.f_locals.get("self")
    if owner is not None and public.startswith("scipy.stats"):  # a distribution's method
        name = f"{type(owner).__name__.removesuffix('_gen')}.{name}"
    return "scipy", f"{public}.{name}"


def _package(frame: Any) -> str:
    return frame.f_globals.get("__name__", "").partition(".")[0]


def concrete_message(what: str, shape: tuple[int, ...]) -> str:
    return (f"{what} needs the value of a traced array, but newtonad traces your function "
            f"once for all inputs of shape {shape}, without values. Value-dependent Python "
            "control flow (if/while on array values, float(x), bool(x), x.item()) cannot be "
            "traced: write the branch with np.where(condition, a, b) (or np.maximum / "
            "np.minimum / np.clip) so both sides are computed and selected elementwise.")


def _numbers_asked_message(where: str) -> str:
    """NumPy's ``where`` wants the numbers of a tracer: a list or object array of them."""
    return (f"NumPy's {where} computed on a Python list or an object array holding traced "
            "values and asked for their numbers, but newtonad traces your function without "
            "values. Build arrays from traced parts with np.stack([...]) or np.concatenate "
            "before calling NumPy on them, so that NumPy hands the call to newtonad: e.g. "
            "np.mean(np.stack([a, b])), not np.mean([a, b]).")


__all__ = ["TracerBoolError", "concrete_message", "with_scipy_hint"]
