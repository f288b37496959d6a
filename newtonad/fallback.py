"""When an objective cannot be traced: call it directly, as scipy does, and say why once.

``minimize``, ``least_squares`` and the solvers' objectives promise what scipy promises --
every function scipy can minimise is minimised -- and exact derivatives where they exist.
A function the tracer refuses (``float(x[0])``, an ``if`` on a value, ``math.exp`` of a
traced scalar, item assignment into a NumPy array, an unsupported library function,
compiled code) is still a function scipy can call. :func:`probe` traces it at the start
point; if tracing raises, the function is called there directly: an error of its own
propagates unchanged, and otherwise the entry point goes on with scipy's finite
differences, after one :class:`TraceFallbackWarning` naming the reason and the line of
the user's code that tracing stopped at.

The derivative functions (``nad.grad``, ``nad.hvp``, ...) never fall back: they promise
exact derivatives and keep raising the tracer's error. This module imports nothing of
scipy, so ``newtonad.TraceFallbackWarning`` costs nothing at import.
"""

from __future__ import annotations

import logging
import os
import sysconfig
import traceback
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

__all__ = ["TraceFallbackWarning", "Fallback", "probe", "warn_fallback", "is_real_scalar",
           "is_real_array"]

_LOG = logging.getLogger("newtonad")
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_LIBRARY_DIRS = tuple({os.path.abspath(sysconfig.get_paths()[k])
                       for k in ("stdlib", "platstdlib", "purelib", "platlib")})


class TraceFallbackWarning(UserWarning):
    """Warn that an objective cannot be traced and runs on scipy's finite differences.

    :func:`newtonad.minimize`, :func:`newtonad.least_squares` and the objectives they
    build issue it once per call when tracing ``fun`` at ``x0`` raises while calling
    ``fun`` directly there works. The message names the reason (the tracer's error)
    and the line of the caller's code where tracing stopped; the run goes on with
    ``fun`` called directly, as scipy calls it, and scipy's ``'2-point'`` differences
    for the gradient (or Jacobian).

    Examples
    --------
    >>> import math, warnings
    >>> import numpy as np, newtonad as nad
    >>> def f(x):
    ...     return math.pow(float(x[0]) - 1.0, 2) + float(x[1]) ** 2
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = nad.minimize(f, np.array([3.0, 2.0]), method="BFGS")
    >>> [w.category.__name__ for w in caught]
    ['TraceFallbackWarning']
    >>> (np.round(res.x, 4) + 0.0).tolist()
    [1.0, 0.0]
    """


@dataclass(frozen=True)
class Fallback:
    """Why a function cannot be traced, and the value it gave when called directly.

    Attributes
    ----------
    error : BaseException
        What tracing raised.
    value : Any
        ``fun(x0, *args)`` from the direct call (the entry point reuses it as the
        first evaluation, so the caller's own call counts match scipy's).
    where : str
        ``"file:line: code"`` of the caller's code where tracing stopped, or ``""``.
    """

    error: BaseException
    value: Any
    where: str

    @property
    def reason(self) -> str:
        """The first line of the tracer's error, with its type."""
        lines = str(self.error).strip().splitlines()
        return f"{type(self.error).__name__}: {lines[0] if lines else ''}"


def _is_users(filename: str) -> bool:
    path = os.path.abspath(filename)
    if path.startswith(_PACKAGE_DIR + os.sep):
        return False
    return not any(path.startswith(d + os.sep) for d in _LIBRARY_DIRS)


def user_line(error: BaseException) -> str:
    """``"file:line: code"`` of the innermost frame of the caller's code in ``error``'s
    traceback (chained causes included), or ``""`` when there is none."""
    seen: set[int] = set()
    exc: Optional[BaseException] = error
    found = ""
    while exc is not None and id(exc) not in seen and not found:
        seen.add(id(exc))
        for frame in reversed(traceback.extract_tb(exc.__traceback__)):
            if _is_users(frame.filename):
                code = (frame.line or "").strip()
                found = f"{frame.filename}:{frame.lineno}" + (f": {code}" if code else "")
                break
        exc = exc.__cause__ or exc.__context__
    return found


def probe(trace: Callable[[], Any], call: Callable[[], Any],
          accept: Callable[[Any], bool]) -> Optional[Fallback]:
    """``None`` if ``trace()`` works; else the :class:`Fallback` from calling directly.

    Parameters
    ----------
    trace : callable
        Traces the user's function at the start point (the trace is cached, so the
        run that follows does not trace again).
    call : callable
        Calls the user's function there directly.
    accept : callable
        Whether the direct call's value is of the kind the entry point needs (a real
        scalar, an array of residuals). If not, the function is wrong rather than
        untraceable, and the tracer's error, which says what it returned, is raised.

    Raises
    ------
    Exception
        Whatever the direct call raises: an error of the function itself, which
        scipy would have met too, propagates unchanged; the tracer's error when the
        value is not accepted.
    """
    try:
        trace()
    except Exception as error:  # every tracing failure: refused code, library, compiler
        where = user_line(error)
        value = call()
        if not accept(value):
            raise
        return Fallback(error, value, where)
    return None


def is_real_scalar(value: Any) -> bool:
    """A number, or a NumPy array or scalar of one real entry."""
    if isinstance(value, (bool, int, float)):
        return True
    return (isinstance(value, (np.ndarray, np.generic)) and value.size == 1
            and value.dtype.kind in "biuf")


def is_real_array(value: Any) -> bool:
    """A number, or a NumPy array (or a list of numbers) of real entries."""
    try:
        return np.asarray(value).dtype.kind in "biuf"
    except (TypeError, ValueError):
        return False


def warn_fallback(name: str, fallback: Fallback, instead: str, stacklevel: int) -> None:
    """Issue the one :class:`TraceFallbackWarning` of an entry point, and log it.

    Parameters
    ----------
    name : str
        The function's name, for the message.
    fallback : Fallback
        From :func:`probe`.
    instead : str
        What is done instead, a clause ("scipy's '2-point' differences ...").
    stacklevel : int
        Of the caller of the public entry point, counted from the caller of this.
    """
    at = f" at {fallback.where}" if fallback.where else ""
    message = (f"{name} cannot be traced by newtonad ({fallback.reason}){at}; it is called "
               f"directly instead, as scipy calls it, with {instead}. For exact derivatives "
               "write it in traceable NumPy (np.where for a branch on values, np.* for "
               "math.*, np.stack for arrays built from parts, no float() of x).")
    _LOG.info("trace fallback: %s", message)
    warnings.warn(message, TraceFallbackWarning, stacklevel=stacklevel + 1)
