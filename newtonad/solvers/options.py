"""Option names of the native methods: scipy's, plus ``gtol`` and ``max_time``.

Code written for ``scipy.optimize.minimize`` runs unchanged: each native method
accepts every option scipy's method of the same name accepts, with the same
meaning (options that only steer finite differences or parallel evaluation,
which exact derivatives make moot, are accepted and ignored). Unknown options
warn with :class:`scipy.optimize.OptimizeWarning`, as scipy does.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Optional

from scipy.optimize import OptimizeWarning

__all__ = ["NATIVE_METHODS", "ACCEPTED_OPTIONS", "IGNORED_OPTIONS", "parse_options"]

NATIVE_METHODS = ("newton-cg", "trust-ncg", "trust-krylov", "trust-exact")

_COMMON = frozenset({"gtol", "maxiter", "disp", "return_all", "max_time"})
_TRUST = _COMMON | {"initial_trust_radius", "max_trust_radius", "eta", "inexact",
                    "subproblem_maxiter", "workers"}

#: every option name each native method takes without a warning
ACCEPTED_OPTIONS: dict[str, frozenset] = {
    "newton-cg": _COMMON | {"xtol", "eps", "c1", "c2", "workers"},
    "trust-ncg": _TRUST,
    "trust-krylov": _TRUST,
    "trust-exact": _TRUST,
}

#: scipy options that have no effect here (finite-difference step, workers for
#: finite differences, and trust-krylov's / trust-exact's own options on the
#: other trust-region methods, which scipy accepts silently too)
IGNORED_OPTIONS: dict[str, frozenset] = {
    "newton-cg": frozenset({"eps", "workers"}),
    "trust-ncg": frozenset({"workers", "inexact", "subproblem_maxiter"}),
    "trust-krylov": frozenset({"workers", "subproblem_maxiter"}),
    "trust-exact": frozenset({"workers", "inexact"}),
}


def parse_options(method: str, options: Optional[Mapping[str, Any]], tol: Optional[float]
                  ) -> dict[str, Any]:
    """Solver keyword arguments for a native ``method`` from scipy-style options.

    ``tol`` sets ``gtol`` (and, for newton-cg, ``xtol``) unless given
    explicitly, as ``scipy.optimize.minimize`` does. Unknown names warn with
    ``OptimizeWarning`` and are dropped; ignored names are dropped silently.

    Parameters
    ----------
    method : str
        One of :data:`NATIVE_METHODS` (lower case).
    options : mapping or None
        The user's options.
    tol : float or None
        The generic tolerance of ``minimize``.

    Returns
    -------
    dict
        Keyword arguments for the method's solver function.
    """
    opts = dict(options or {})
    if tol is not None:
        opts.setdefault("gtol", tol)
        if method == "newton-cg":
            opts.setdefault("xtol", tol)
    accepted = ACCEPTED_OPTIONS[method]
    unknown = [name for name in opts if name not in accepted]
    if unknown:
        # same text as scipy; stack level 3 points at the caller of minimize
        warnings.warn(f"Unknown solver options: {', '.join(map(str, unknown))}",
                      OptimizeWarning, stacklevel=3)
    ignored = IGNORED_OPTIONS[method]
    return {name: value for name, value in opts.items()
            if name in accepted and name not in ignored}
