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
    """Raised when traced code turns a traced value into a Python number.

    ``float(x)``, ``int(x)``, ``x.item()`` and an index made of a traced value would
    reach the program as constants: the derivative through them (and their dependence
    on x) would be lost, so they are refused, with the line that asked. Branches are
    fine: ``if x[0] > 0:`` and ``while err > tol:`` trace the path taken at the point
    (a guarded trace). Keep values as arrays: ``np.exp(x[0])``, not
    ``math.exp(float(x[0]))``.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> def f(x):
    ...     return float(x[0]) * x[1]
    >>> try:
    ...     nad.grad(f)(np.array([1.0, 2.0]))
    ... except nad.TracerBoolError:
    ...     print("refused: keep x[0] an array")
    refused: keep x[0] an array
    """


class BranchOnTracer(TracerBoolError):
    """``bool()`` of a traced value in a trace made without values (internal).

    The tracer catches it and traces again with the values of the point at hand,
    recording the branch taken as a guard (:mod:`newtonad.ad.branches`); it reaches
    the user only where no point is known.
    """


class ImpureFunctionError(TracerBoolError):
    """The traced function drew random numbers: a trace would freeze them into constants.

    ``minimize``, ``least_squares`` and ``Objective`` then call the function directly
    (:class:`~newtonad.TraceFallbackWarning`); the derivative functions raise this.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> rng = np.random.default_rng(0)
    >>> def noisy(x):
    ...     return np.sum(x ** 2) + rng.normal()
    >>> try:
    ...     nad.grad(noisy)(np.ones(2))
    ... except nad.ImpureFunctionError as err:
    ...     print(type(err).__name__)
    ImpureFunctionError
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


def library_asked() -> bool:
    """Whether NumPy's or SciPy's own code (not the user's) asks for a traced value: a
    branch there is the library's, computed on an object array or unsupported."""
    return scipy_caller_hint() is not None or _library_entry() is not None


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
    """A branch on a traced value where no point is known to follow it from."""
    return (f"{what} needs the value of a traced array of shape {shape}, and this trace "
            "has no point to take it from (a derivative function traces if/while on values "
            "at the point it is called at). Write the branch with np.where(condition, a, b) "
            "(or np.maximum / np.minimum / np.clip) so both sides are computed and selected "
            "elementwise.")


def conversion_message(what: str, shape: tuple[int, ...]) -> str:
    """``float(x)``, ``int(x)``, ``x.item()``, an index: a traced value turned into a
    Python number, which would reach the program as a constant without its derivative."""
    where = user_frame()
    at = f" at {where}" if where else ""
    return (f"{what}{at} turns a traced value (shape {shape}) into a Python number: newtonad "
            "would compute on with a constant there, and the derivative (and every later "
            "value of x) would be silently wrong, so it is refused. Keep the value an "
            "array: np.exp(x[0]) instead of math.exp(float(x[0])) (math.* functions called "
            "as math.exp(...) on traced values trace as np.*), x[0] * 2 instead of "
            "float(x[0]) * 2; a branch `if x[0] > 0:` traces as it is; for a choice per "
            "entry use np.where(condition, a, b). (In minimize, least_squares and Objective "
            "such a function is called directly with finite differences instead.)")


def user_frame() -> str:
    """``"file:line: code"`` of the innermost frame on the stack outside newtonad, NumPy,
    SciPy and the standard library (the user's code that asked), or ``""``."""
    import linecache
    import os
    import sysconfig

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    libraries = tuple(os.path.abspath(sysconfig.get_paths()[k])
                      for k in ("stdlib", "platstdlib", "purelib", "platlib"))
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(here + os.sep) and not path.startswith(libraries) \
                and not frame.f_code.co_filename.startswith("<frozen"):
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            return f"{frame.f_code.co_filename}:{frame.f_lineno}" + (f": {line}" if line else "")
        frame = frame.f_back
    return ""


def impure_message(source: str, threads: bool = False) -> str:
    """The function drew random numbers from ``source`` while it was traced (or, with
    ``threads``, another thread drew from that global generator during two traces)."""
    where = user_frame()
    at = f" (traced from {where})" if where else ""
    others = (" (or other threads drew from it during both of two traces: give this "
              "function its own seeded generator, or keep those threads from the global "
              "one)") if threads else ""
    return (f"the function drew random numbers ({source}) while newtonad traced it{at}"
            f"{others}: a trace would freeze those draws into constants, so the function is "
            "not traced. minimize, least_squares and Objective call it directly instead "
            "(with finite differences); for exact derivatives draw the numbers outside the "
            "function and pass them in args.")


def _numbers_asked_message(where: str) -> str:
    """NumPy's ``where`` wants the numbers of a tracer: a list or object array of them."""
    return (f"NumPy's {where} computed on a Python list or an object array holding traced "
            "values and asked for their numbers, but newtonad traces your function without "
            "values. Build arrays from traced parts with np.stack([...]) or np.concatenate "
            "before calling NumPy on them, so that NumPy hands the call to newtonad: e.g. "
            "np.mean(np.stack([a, b])), not np.mean([a, b]).")


__all__ = ["BranchOnTracer", "ImpureFunctionError", "TracerBoolError", "concrete_message",
           "conversion_message", "impure_message", "library_asked", "user_frame", "with_scipy_hint"]
