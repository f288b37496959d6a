"""Routing plain SciPy calls on traced values to newtonad, and the switch that turns it off.

SciPy's *ufuncs* (``scipy.special.erf``, ``expit``, ``gammaln``, ...) need nothing
here: NumPy hands any ufunc call with a Var argument to ``Var.__array_ufunc__``. SciPy's
*Python-level* functions (``scipy.special.logsumexp``, ``softmax``,
``scipy.stats.norm.logpdf``, ``scipy.linalg.solve_triangular``, ...) first call
``np.asarray`` on their input, which fails on a tracer. For each of them that newtonad
implements, this module replaces the attribute on SciPy's public module with a thin
wrapper (``functools.wraps`` of the original): when any argument, positional or keyword,
or an item of a list or tuple argument, is a newtonad Var, the wrapper calls newtonad's
version; otherwise it calls SciPy's original, unchanged. Methods of a distribution
(``scipy.stats.norm.logpdf``) are wrapped on the distribution's class, only for that
exact class, so ``scipy.stats.norm(0, 1).logpdf(x)`` (a frozen distribution calls the
class's method) routes too.

What is routed: the entries of :data:`newtonad.ad.dispatch.SCIPY_FUNCTIONS`, dotted
public names (``scipy.special.logsumexp``, ``scipy.stats.norm.logpdf``,
``scipy.linalg.cho_solve``) -> implementation. That table is the one registration point:
the NumPy layer (:mod:`.numpy_special`, :mod:`.numpy_linalg`) fills it by name, without
importing SciPy; this module only reads it.

When wrappers are installed
---------------------------
Importing ``scipy.stats`` costs about half a second, so newtonad never imports a SciPy
module itself. While routing is on, wrappers go in:

1. at ``import newtonad``, on the SciPy modules already imported;
2. when a watched SciPy module (``scipy.special``, ``scipy.stats``, ``scipy.linalg``) is
   imported after newtonad: the one import hook (:class:`_ScipyImportHook` on
   ``sys.meta_path``) wraps it right after the module executes, before the importer
   can bind names from it, so ``import newtonad; from scipy.special import logsumexp``
   routes;
3. at the start of every trace (:func:`install_pending`, one set lookup per watched
   module), a safety net for modules the hook did not see.

The switch
----------
:func:`scipy_routing` (``newtonad.scipy_routing``) turns routing off and on for the whole
process; the environment variable ``NEWTONAD_SCIPY_ROUTING=0`` turns it off from
``import newtonad`` on. Off means no trace of newtonad in SciPy: each replaced attribute
is SciPy's original object again (``scipy.special.logsumexp is`` the function SciPy
defined) and the import hook leaves ``sys.meta_path``. Turning it back on puts the same
wrapper objects back. The wrappers this module made stay reachable through
:func:`traced_exports` (``newtonad.scipy.special.logsumexp``), which trace whatever the
switch says.

The sharp bit
-------------
A name bound *before* its wrapper existed keeps SciPy's original: ``from scipy.special
import logsumexp`` followed by ``import newtonad`` binds the unwrapped function, and
calling it on a tracer fails inside ``np.asarray``; so does any SciPy call while routing
is off. :func:`scipy_caller_hint` (kept in :mod:`.dispatch`, which records the
originals, so Var can call it) finds such a call on the Python stack so the tracing
error can name the function and the fix.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import dispatch
from .dispatch import SCIPY_FUNCTIONS, remember_original, scipy_caller_hint
from .var import Var

_WATCHED = ("scipy.special", "scipy.stats", "scipy.linalg")

#: The environment variable read at ``import newtonad``: ``0`` turns routing off.
ENV_VAR = "NEWTONAD_SCIPY_ROUTING"
_OFF, _ON = ("0", "false", "off", "no"), ("", "1", "true", "on", "yes")

_seen: set[str] = set()       # watched modules brought in line with the switch
_finding: set[str] = set()    # imports the hook is resolving (other finders call back)
_table_size = [-1]            # size of SCIPY_FUNCTIONS when the modules were last seen


# ---- what is routed ------------------------------------------------------------------------

def routed() -> dict[str, dict[str, Callable]]:
    """Public SciPy module -> {attribute path -> newtonad implementation}.

    Attribute paths are ``logsumexp`` for a module function and ``norm.logpdf`` for a
    method of a distribution instance.
    """
    table: dict[str, dict[str, Callable]] = {}
    for name, impl in SCIPY_FUNCTIONS.items():
        parts = name.split(".")
        table.setdefault(".".join(parts[:2]), {})[".".join(parts[2:])] = impl
    return table


# ---- the wrappers ----------------------------------------------------------------------------

#: argument types that are never a Var nor hold one: dismissed by one set lookup
_PLAIN = frozenset({float, int, bool, complex, str, type(None), np.float64, np.int64})
_NDARRAY, _SEQUENCES = np.ndarray, (list, tuple)


def _any_var(values: Any, depth: int) -> bool:
    for v in values:
        t = type(v)
        if t in _PLAIN:
            continue
        if t is _NDARRAY:  # other code's plain arrays: one look at the dtype
            if v.dtype.hasobject and depth < 4 and _any_var(v.flat, depth + 1):
                return True
        elif isinstance(v, Var) or (isinstance(v, _SEQUENCES) and depth < 4
                                    and _any_var(v, depth + 1)):
            return True
    return False


def has_var(args: tuple, kwargs: dict) -> bool:
    """Is a newtonad Var among ``args`` / ``kwargs`` (also inside lists, tuples and the
    object arrays NumPy builds from lists of traced values)?

    On the path of every call other code makes of a wrapped SciPy function, so written
    for speed (about 0.3 us for one array argument): no closure, numbers and plain
    ndarrays dismissed by a type check.
    """
    return _any_var(args, 0) or (bool(kwargs) and _any_var(kwargs.values(), 0))


def dispatching(original: Callable, impl: Callable) -> Callable:
    """``original`` with calls on traced values sent to ``impl``."""
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _any_var(args, 0) or (kwargs and _any_var(kwargs.values(), 0)):  # has_var inlined
            return impl(*args, **kwargs)
        return original(*args, **kwargs)

    wrapper.__newtonad_impl__ = impl  # type: ignore[attr-defined]
    return wrapper


def _dispatching_method(cls: type, original: Callable, impl: Callable) -> Callable:
    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if type(self) is cls and (_any_var(args, 0)  # subclasses are other distributions
                                  or (kwargs and _any_var(kwargs.values(), 0))):
            return impl(*args, **kwargs)
        return original(self, *args, **kwargs)

    method.__newtonad_impl__ = impl  # type: ignore[attr-defined]
    return method


@dataclass
class _Replacement:
    """One attribute of SciPy newtonad replaces: where it lives, SciPy's object, ours."""

    owner: Any        # the public module, or a distribution's class
    attr: str
    original: Any
    wrapper: Callable
    inherited: bool   # a class method found on a base class: turning off deletes ours

    def apply(self) -> None:
        if self.owner.__dict__.get(self.attr) is self.wrapper:
            return
        if getattr(self.owner, self.attr, None) is self.original:
            setattr(self.owner, self.attr, self.wrapper)
        # else someone else replaced SciPy's function since: theirs stays

    def remove(self) -> None:
        if self.owner.__dict__.get(self.attr) is not self.wrapper:
            return  # not ours now (never applied, or replaced by someone else)
        if self.inherited:
            delattr(self.owner, self.attr)
        else:
            setattr(self.owner, self.attr, self.original)


#: (public module, attribute path) -> its replacement, made once: wrappers keep their
#: identity through off / on
_replacements: dict[tuple[str, str], _Replacement] = {}


def _replacement(module: Any, path: str, impl: Callable) -> _Replacement | None:
    key = (module.__name__, path)
    if key in _replacements:
        return _replacements[key]
    *owner_path, attr = path.split(".")
    owner = module
    for part in owner_path:
        owner = getattr(owner, part, None)
    if owner is None or getattr(owner, attr, None) is None:
        return None  # not in this SciPy version
    public_name = f"{module.__name__}.{path}"
    if owner_path:  # a method of a distribution instance: wrap on its class
        cls = type(owner)
        inherited = attr not in cls.__dict__
        original = getattr(cls, attr)
        rep = _Replacement(cls, attr, original, _dispatching_method(cls, original, impl),
                           inherited)
        remember_original(original, public_name, cls)
    else:
        original = getattr(module, attr)
        wrapper = dispatching(original, impl)
        # pickle finds functions by __module__ and __qualname__: point it at the
        # wrapper (the private module holding the original has the original)
        wrapper.__module__, wrapper.__qualname__ = module.__name__, attr
        rep = _Replacement(module, attr, original, wrapper, False)
        remember_original(original, public_name, None)
    _replacements[key] = rep
    return rep


def _see(module: Any) -> None:
    """Make the replacements of a watched module, and apply them while routing is on."""
    _seen.add(module.__name__)
    for path, impl in routed().get(module.__name__, {}).items():
        rep = _replacement(module, path, impl)
        if rep is not None and routing_enabled():
            rep.apply()


def install_pending() -> None:
    """Bring every watched SciPy module imported by now in line with the switch.

    Cheap when there is nothing to do (a set lookup per watched module and the size
    of the table), so it runs at the start of every trace. Also while routing is off:
    the originals are then recorded, so a traced call of one can say how to turn
    routing on.
    """
    if len(_seen) == len(_WATCHED) and _table_size[0] == len(SCIPY_FUNCTIONS):
        return
    if _table_size[0] != len(SCIPY_FUNCTIONS):
        _table_size[0] = len(SCIPY_FUNCTIONS)
        _seen.clear()  # seeing a module again skips what is made already
    for name in _WATCHED:
        module = sys.modules.get(name)
        if name in _seen or module is None:
            continue
        if getattr(getattr(module, "__spec__", None), "_initializing", False):
            continue  # still executing (scipy.stats importing scipy.special): seen when done
        _see(module)


def traced_exports(module: Any) -> dict[str, Any]:
    """The names of SciPy's ``module`` newtonad routes: newtonad's wrappers of its
    functions (they trace with routing on or off) and its distribution objects, by name."""
    install_pending()
    exports: dict[str, Any] = {}
    for path in routed().get(module.__name__, {}):
        name = path.split(".")[0]
        rep = _replacements.get((module.__name__, path))
        if "." not in path and rep is not None:
            exports[name] = rep.wrapper
        elif hasattr(module, name):
            exports[name] = getattr(module, name)
    return dict(sorted(exports.items()))


# ---- the import hook -------------------------------------------------------------------------

class _WrapAfterExec:
    """A watched module's loader, seeing the module once it has executed."""

    def __init__(self, loader: Any):
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__spec__.loader = module.__loader__ = self.loader  # leave no trace
        self.loader.exec_module(module)
        _see(module)
        install_pending()


class _ScipyImportHook:
    """Finds nothing itself; hands the watched SciPy modules a wrapping loader."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in _WATCHED or fullname in _finding or fullname in sys.modules:
            return None
        _finding.add(fullname)  # a finder after this one may ask every finder again
        try:
            for finder in [f for f in sys.meta_path if f is not self]:
                find = getattr(finder, "find_spec", None)
                spec = find(fullname, path, target) if find is not None else None
                if spec is not None:
                    if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                        spec.loader = _WrapAfterExec(spec.loader)
                    return spec
            return None
        finally:
            _finding.discard(fullname)


_HOOK = _ScipyImportHook()


# ---- the switch ------------------------------------------------------------------------------

def routing_enabled() -> bool:
    """Whether SciPy's functions are routed now (see :func:`scipy_routing`)."""
    return dispatch.SCIPY_ROUTING[0]


def _set(enabled: bool) -> None:
    dispatch.SCIPY_ROUTING[0] = enabled
    if enabled:
        if _HOOK not in sys.meta_path:
            sys.meta_path.insert(0, _HOOK)
        for rep in _replacements.values():
            rep.apply()
        install_pending()
    else:
        while _HOOK in sys.meta_path:
            sys.meta_path.remove(_HOOK)
        for rep in _replacements.values():
            rep.remove()


class scipy_routing:  # noqa: N801  (used as a function: `newtonad.scipy_routing(False)`)
    """Turn the routing of SciPy's Python-level functions on traced values on or off.

    ``import newtonad`` replaces the SciPy functions newtonad differentiates
    (``scipy.special.logsumexp``, ``softmax``, ``log_softmax``, ``polygamma``, the
    ``logpdf`` / ``pdf`` / ``cdf`` ... methods of ``scipy.stats.norm``, ``t``, ``gamma``,
    ``beta``, ``chi2``, ``poisson``, ``multivariate_normal``, and ``scipy.linalg``'s
    ``solve``, ``solve_triangular``, ``cholesky``, ``cho_factor``, ``cho_solve``) on SciPy's
    public modules with thin wrappers: a call with a traced argument runs newtonad's
    version, any other call runs SciPy's original, so ``from scipy.special import
    logsumexp`` traces inside :func:`newtonad.grad`. The switch is process-wide.

    Parameters
    ----------
    enabled : bool
        ``False``: SciPy's original objects go back where they were (identity:
        ``scipy.special.logsumexp`` is SciPy's function again) and the import hook leaves
        ``sys.meta_path``; a traced call of such a function then raises
        :class:`~newtonad.TracerBoolError` saying how to turn routing on. ``True``: the
        same wrappers go back. The environment variable ``NEWTONAD_SCIPY_ROUTING=0``
        sets ``False`` at ``import newtonad``.

    Notes
    -----
    Takes effect at once; used as a context manager, the state before the call comes
    back on exit. Names bound while routing was on keep the wrapper (it still calls
    SciPy's original on arrays); ``newtonad.scipy.special.logsumexp`` and the other
    functions of the ``newtonad.scipy`` namespaces trace in both states.

    Examples
    --------
    >>> import numpy as np, scipy.special, newtonad as nad
    >>> with nad.scipy_routing(False):
    ...     print(hasattr(scipy.special.logsumexp, "__newtonad_impl__"))
    False
    >>> float(nad.grad(lambda x: scipy.special.logsumexp(x))(np.zeros(2))[0])
    0.5
    """

    def __init__(self, enabled: bool):
        if not isinstance(enabled, (bool, np.bool_)):
            raise TypeError(f"scipy_routing(enabled) takes True or False, got {enabled!r}")
        self.previous = routing_enabled()
        self.enabled = bool(enabled)
        _set(self.enabled)

    def __enter__(self) -> scipy_routing:
        return self

    def __exit__(self, *exc: object) -> None:
        _set(self.previous)

    def __repr__(self) -> str:
        return f"scipy_routing({self.enabled})"


def _from_environment() -> bool:
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value in _OFF:
        return False
    if value in _ON:
        return True
    raise ValueError(f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not understood: set it to 0 to "
                     "turn newtonad's routing of SciPy functions off, to 1 (or unset it) to "
                     "keep it on")


def install() -> None:
    """At ``import newtonad``: read :data:`ENV_VAR`, then route (wrap what is imported,
    watch for the rest) or record SciPy's originals only."""
    _set(_from_environment())
    install_pending()


__all__ = ["ENV_VAR", "dispatching", "has_var", "install", "install_pending", "routed",
           "routing_enabled", "scipy_caller_hint", "scipy_routing", "traced_exports"]
