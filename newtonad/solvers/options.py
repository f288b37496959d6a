"""Option names of the native methods: scipy's, plus ``gtol`` and ``max_time``.

Code written for ``scipy.optimize.minimize`` runs unchanged: each native method
accepts every option scipy's method of the same name accepts, with the same
meaning (options that only steer finite differences or parallel evaluation,
which exact derivatives make moot, are accepted and ignored). Unknown options
warn with :class:`scipy.optimize.OptimizeWarning`, as scipy does.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, Mapping, Optional

from scipy.optimize import OptimizeWarning

from .methods import METHODS, NATIVE_METHODS, PRECONDITIONERS

__all__ = ["NATIVE_METHODS", "ACCEPTED_OPTIONS", "IGNORED_OPTIONS", "parse_options",
           "check_options_type", "check_tol", "check_preconditioner"]

#: every option name each native method takes without a warning (from the method table)
ACCEPTED_OPTIONS: dict[str, frozenset] = {m.name: m.accepted for m in METHODS.values()}

#: scipy options that have no effect here (finite-difference step, workers for
#: finite differences, and trust-krylov's / trust-exact's own options on the
#: other trust-region methods, which scipy accepts silently too)
IGNORED_OPTIONS: dict[str, frozenset] = {m.name: m.ignored for m in METHODS.values()}


#: numeric options and what each must be: (integer?, smallest allowed value, None allowed?);
#: a ``maxiter`` below 0 stops at once, as 0 does (scipy's Newton-CG stops with status 1)
_NUMERIC = {
    "gtol": (False, 0.0, False), "xtol": (False, 0.0, True), "maxiter": (True, None, True),
    "max_time": (False, 0.0, True), "initial_trust_radius": (False, None, False),
    "max_trust_radius": (False, None, False), "eta": (False, None, False),
    "c1": (False, None, False), "c2": (False, None, False),
    "subproblem_maxiter": (True, 1, True),
}


def check_options_type(options: Any) -> None:
    """Raise ``TypeError`` unless ``options`` is ``None`` or a mapping of names to values."""
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict of option names to values, such as "
                        f"options={{'maxiter': 100, 'gtol': 1e-8}}; got {options!r} of type "
                        f"{type(options).__name__}")


def check_tol(tol: Any) -> None:
    """Raise unless ``tol`` is ``None`` or a real number >= 0."""
    if tol is None:
        return
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real):
        raise TypeError(f"tol must be a real number >= 0 (e.g. tol=1e-8) or None, got "
                        f"{tol!r} of type {type(tol).__name__}")
    if not tol >= 0.0:
        raise ValueError(f"tol must be >= 0 (e.g. tol=1e-8), got {tol!r}")


def _check_numeric(name: str, value: Any) -> None:
    integer, smallest, none_ok = _NUMERIC[name]
    if value is None and none_ok:
        return
    kind = "an integer" if integer else "a real number"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"option {name!r} must be {kind}{' or None' if none_ok else ''}, "
                        f"got {value!r} of type {type(value).__name__}")
    if value != value:  # nan
        raise ValueError(f"option {name!r} is nan; give {kind}")
    if integer and not (isinstance(value, numbers.Integral) or float(value).is_integer()):
        raise TypeError(f"option {name!r} must be {kind}, got {value!r}")
    if smallest is not None and value < smallest:
        raise ValueError(f"option {name!r} must be >= {smallest}, got {value!r}")


def check_preconditioner(value: Any) -> None:
    """Raise ``ValueError`` unless ``value`` is one of :data:`.methods.PRECONDITIONERS` or a
    :class:`.preconditioners.SparsePlusLowRank`."""
    from .preconditioners import SparsePlusLowRank

    if isinstance(value, SparsePlusLowRank):
        return
    if not (value is None or (isinstance(value, str) and value in PRECONDITIONERS)):
        raise ValueError(f"option 'preconditioner' must be one of "
                         f"{', '.join(map(repr, PRECONDITIONERS))} or a SparsePlusLowRank, "
                         f"got {value!r}")


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

    Raises
    ------
    TypeError
        If ``options`` is not a dict, or a numeric option or ``tol`` is not a number.
    ValueError
        If a numeric option or ``tol`` is nan or out of range (negative ``gtol``
        or ``max_time``).
    """
    check_options_type(options)
    check_tol(tol)
    opts = dict(options or {})
    if tol is not None:
        opts.setdefault("gtol", tol)
        if method == "newton-cg":
            opts.setdefault("xtol", tol)
    entry = METHODS[method]  # the table itself, so that a new entry needs nothing here
    accepted = entry.accepted
    unknown = [name for name in opts if name not in accepted]
    if unknown:
        # same text as scipy; stack level 3 points at the caller of minimize
        warnings.warn(f"Unknown solver options: {', '.join(map(str, unknown))}",
                      OptimizeWarning, stacklevel=3)
    for name in _NUMERIC.keys() & opts.keys() & accepted:
        _check_numeric(name, opts[name])
    if "preconditioner" in opts and "preconditioner" in accepted:
        check_preconditioner(opts["preconditioner"])
    ignored = entry.ignored
    return {name: value for name, value in opts.items()
            if name in accepted and name not in ignored}
