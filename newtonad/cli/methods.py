"""Method names the command line accepts, and access to the solvers.

The native solvers live in :mod:`newtonad.solvers`; the command line uses them
when they import, and otherwise falls back to ``scipy.optimize.minimize`` fed
with newtonad's exact derivatives.
"""

from __future__ import annotations

import difflib
from typing import Any, Callable, Optional

from .errors import UsageError

__all__ = ["NATIVE_METHODS", "COMPARED_METHODS", "scipy_methods", "resolve_method",
           "load_minimize", "suggest"]

NATIVE_METHODS = ("newton-cg", "trust-ncg", "trust-krylov", "trust-exact")
#: scipy methods that use second derivatives: what the demo compares against
COMPARED_METHODS = NATIVE_METHODS

_SCIPY_FALLBACK = ("nelder-mead", "powell", "cg", "bfgs", "newton-cg", "l-bfgs-b", "tnc",
                   "cobyla", "cobyqa", "slsqp", "trust-constr", "dogleg", "trust-ncg",
                   "trust-exact", "trust-krylov")


def scipy_methods() -> tuple[str, ...]:
    """Names of ``scipy.optimize.minimize``'s methods, lower case."""
    try:
        from newtonad.solvers.scipy_bridge import SCIPY_METHODS
    except ImportError:
        return _SCIPY_FALLBACK
    return tuple(SCIPY_METHODS)


def load_minimize() -> Optional[Callable[..., Any]]:
    """``newtonad.minimize`` (or ``newtonad.solvers.minimize``); None when not importable."""
    import newtonad

    found = getattr(newtonad, "minimize", None)
    if found is not None:
        return found
    try:
        from newtonad.solvers import minimize
    except ImportError:
        return None
    return minimize


def suggest(name: str, choices: list[str]) -> str:
    """``" (did you mean 'x'?)"`` for a close match, else an empty string."""
    close = difflib.get_close_matches(name.lower(), choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def resolve_method(name: str, native_available: bool = True) -> str:
    """The canonical (lower-case) form of a method name, or a :class:`UsageError`.

    Accepts a native method, any scipy method, or ``"scipy:<method>"`` for scipy's
    implementation of a name that is also native.
    """
    meth = name.strip().lower()
    scipy_names = scipy_methods()
    bare = meth[len("scipy:"):] if meth.startswith("scipy:") else meth
    if meth.startswith("scipy:") and bare in scipy_names:
        return meth
    if meth in NATIVE_METHODS:
        if not native_available:
            raise UsageError(f"native method {name!r} is not available (newtonad.solvers "
                             f"does not import); use 'scipy:{meth}'")
        return meth
    if meth in scipy_names:
        return meth
    others = [m for m in scipy_names if m not in NATIVE_METHODS]
    raise UsageError(f"unknown method {name!r}{suggest(bare, list(NATIVE_METHODS) + others)}; "
                     f"native methods: {', '.join(NATIVE_METHODS)}; other scipy methods: "
                     f"{', '.join(others)}; 'scipy:<method>' runs scipy's own version")
