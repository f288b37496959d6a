"""Method names the command line accepts, taken from the solvers package.

The lists are :data:`newtonad.solvers.options.NATIVE_METHODS` (the Newton methods
newtonad implements) and :data:`newtonad.solvers.scipy_bridge.SCIPY_METHODS`
(everything ``scipy.optimize.minimize`` offers), so the command line can never
offer a method the solvers do not know.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from newtonad._suggest import did_you_mean
from newtonad.solvers.methods import METHODS
from newtonad.solvers.options import NATIVE_METHODS
from newtonad.solvers.scipy_bridge import SCIPY_METHODS

from .errors import UsageError

__all__ = ["NATIVE_METHODS", "COMPARED_METHODS", "SCIPY_METHODS", "LEAST_SQUARES",
           "resolve_method", "default_method", "load_minimize", "suggest"]

#: what the demo compares: each native method against scipy's method of that name
COMPARED_METHODS = tuple(m for m in NATIVE_METHODS if METHODS[m].scipy_peer)

#: the command line's name for ``newtonad.least_squares`` (``"scipy:least-squares"``:
#: scipy's own ``least_squares`` with ``jac="2-point"``)
LEAST_SQUARES = "least-squares"

_SCIPY_PREFIX = "scipy:"


def default_method(bounds: Any = None) -> str:
    """What ``newtonad.minimize(method=None)`` runs without constraints (and ``bounds``)."""
    from newtonad.solvers.minimize import choose_method

    return str(choose_method(None, bounds, ())).lower()


def load_minimize() -> Callable[..., Any]:
    """``newtonad.minimize`` (imported on first use; a seam the tests replace)."""
    from newtonad.solvers import minimize

    return minimize


def suggest(name: str, choices: list[str]) -> str:
    """``" (did you mean 'x'?)"`` for a close match, else an empty string."""
    return did_you_mean(name, choices)


def resolve_method(name: Optional[str], bounds: Any = None) -> str:
    """The canonical (lower-case) form of a method name, or a :class:`UsageError`.

    Accepts a native method, any scipy method, ``least-squares`` (the problem's
    residuals to ``newtonad.least_squares``), or ``"scipy:<method>"`` for scipy's
    implementation of a name that is also native. ``None`` is
    ``newtonad.minimize``'s choice for ``method=None`` (for a problem with ``bounds``,
    its choice with them).

    Examples
    --------
    >>> resolve_method("Trust-NCG"), resolve_method("scipy:trust-ncg"), resolve_method("BFGS")
    ('trust-ncg', 'scipy:trust-ncg', 'bfgs')
    >>> resolve_method(None), resolve_method("least-squares")
    ('trust-ncg', 'least-squares')
    """
    if name is None:
        return default_method(bounds)
    meth = name.strip().lower()
    bare = meth.removeprefix(_SCIPY_PREFIX)
    if meth.startswith(_SCIPY_PREFIX) and (bare in SCIPY_METHODS or bare == LEAST_SQUARES):
        return meth
    if meth in NATIVE_METHODS or meth in SCIPY_METHODS or meth == LEAST_SQUARES:
        return meth
    others = [m for m in SCIPY_METHODS if m not in NATIVE_METHODS]
    known = list(NATIVE_METHODS) + others + [LEAST_SQUARES]
    raise UsageError(f"unknown method {name!r}{suggest(bare, known)}; "
                     f"native methods: {', '.join(NATIVE_METHODS)}; other scipy methods: "
                     f"{', '.join(others)}; {LEAST_SQUARES} (problems written from "
                     "residuals); 'scipy:<method>' runs scipy's own version")
