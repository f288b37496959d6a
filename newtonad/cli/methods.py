"""Method names the command line accepts, taken from the solvers package.

The lists are :data:`newtonad.solvers.options.NATIVE_METHODS` (the Newton methods
newtonad implements) and :data:`newtonad.solvers.scipy_bridge.SCIPY_METHODS`
(everything ``scipy.optimize.minimize`` offers), so the command line can never
offer a method the solvers do not know.
"""

from __future__ import annotations

import difflib
from typing import Any, Callable

from newtonad.solvers.options import NATIVE_METHODS
from newtonad.solvers.scipy_bridge import SCIPY_METHODS

from .errors import UsageError

__all__ = ["NATIVE_METHODS", "COMPARED_METHODS", "SCIPY_METHODS", "resolve_method",
           "load_minimize", "suggest"]

#: what the demo compares: each native method against scipy's method of that name
COMPARED_METHODS = NATIVE_METHODS

_SCIPY_PREFIX = "scipy:"


def load_minimize() -> Callable[..., Any]:
    """``newtonad.minimize`` (imported on first use; a seam the tests replace)."""
    from newtonad.solvers import minimize

    return minimize


def suggest(name: str, choices: list[str]) -> str:
    """``" (did you mean 'x'?)"`` for a close match, else an empty string."""
    close = difflib.get_close_matches(name.lower(), choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def resolve_method(name: str) -> str:
    """The canonical (lower-case) form of a method name, or a :class:`UsageError`.

    Accepts a native method, any scipy method, or ``"scipy:<method>"`` for scipy's
    implementation of a name that is also native.

    Examples
    --------
    >>> resolve_method("Trust-NCG"), resolve_method("scipy:trust-ncg"), resolve_method("BFGS")
    ('trust-ncg', 'scipy:trust-ncg', 'bfgs')
    """
    meth = name.strip().lower()
    bare = meth.removeprefix(_SCIPY_PREFIX)
    if meth.startswith(_SCIPY_PREFIX) and bare in SCIPY_METHODS:
        return meth
    if meth in NATIVE_METHODS or meth in SCIPY_METHODS:
        return meth
    others = [m for m in SCIPY_METHODS if m not in NATIVE_METHODS]
    raise UsageError(f"unknown method {name!r}{suggest(bare, list(NATIVE_METHODS) + others)}; "
                     f"native methods: {', '.join(NATIVE_METHODS)}; other scipy methods: "
                     f"{', '.join(others)}; 'scipy:<method>' runs scipy's own version")
