"""Routing plain SciPy calls on traced values to newtonad.

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

What is routed: the entries of :data:`newtonad.ad.dispatch.SCIPY_FUNCTIONS` (dotted
public names) and every key of :data:`newtonad.ad.dispatch.FUNCTIONS` that is a SciPy
function (``__module__`` ``scipy.*``; the linear-algebra helpers register
``scipy.linalg`` functions there). The NumPy layer fills both tables; this module only
reads them.

When wrappers are installed, and the sharp bit
---------------------------------------------
Importing ``scipy.stats`` costs about half a second, so newtonad never imports a SciPy
module itself. Wrappers go in:

1. at ``import newtonad``, on the SciPy modules already imported;
2. when a watched SciPy module (``scipy.special``, ``scipy.stats``, ``scipy.linalg``) is
   imported after newtonad: an import hook (:class:`_ScipyImportHook` on
   ``sys.meta_path``) wraps it right after the module executes, before the importer
   can bind names from it, so ``import newtonad; from scipy.special import logsumexp``
   routes;
3. at the start of every trace (:func:`install_pending`, one set lookup per watched
   module), a safety net for modules the hook did not see.

A name bound *before* its wrapper existed keeps SciPy's original: ``from scipy.special
import logsumexp`` followed by ``import newtonad`` binds the unwrapped function, and
calling it on a tracer fails inside ``np.asarray``. :func:`scipy_caller_hint` (kept in
:mod:`.dispatch`, which records the wrapped originals, so Var can call it) finds
such a call on the Python stack so the tracing error can name the function and the
fix: call ``newtonad.scipy.special.logsumexp``, import newtonad before binding the
name, or call it through its module (``scipy.special.logsumexp(...)``).
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import numpy as np

from .dispatch import FUNCTIONS, SCIPY_FUNCTIONS, remember_original, scipy_caller_hint
from .var import Var

_WATCHED = ("scipy.special", "scipy.stats", "scipy.linalg")
_installed: set[str] = set()          # modules whose functions are wrapped
_finding: set[str] = set()            # imports this hook is resolving (other hooks call back)
_table_size = [-1]                    # size of the routed tables when last installed


# ---- what is routed ------------------------------------------------------------------------

def _public_module(module_name: str) -> str:
    """``scipy.linalg._basic`` -> ``scipy.linalg``: the public subpackage."""
    return ".".join(module_name.split(".")[:2])


def routed() -> dict[str, dict[str, Callable]]:
    """Public SciPy module -> {attribute path -> newtonad implementation}.

    Attribute paths are ``logsumexp`` for a module function and ``norm.logpdf`` for a
    method of a distribution instance.
    """
    table: dict[str, dict[str, Callable]] = {}
    for name, impl in SCIPY_FUNCTIONS.items():
        parts = name.split(".")
        table.setdefault(".".join(parts[:2]), {})[".".join(parts[2:])] = impl
    for fn, impl in list(FUNCTIONS.items()):
        module = getattr(fn, "__module__", None) or ""
        if module.startswith("scipy.") and hasattr(fn, "__name__"):
            table.setdefault(_public_module(module), {}).setdefault(fn.__name__, impl)
    return table


def _tables_size() -> int:
    return len(FUNCTIONS) + len(SCIPY_FUNCTIONS)


# ---- the wrappers ----------------------------------------------------------------------------

def has_var(args: tuple, kwargs: dict) -> bool:
    """Is a newtonad Var among ``args`` / ``kwargs`` (also inside lists, tuples and the
    object arrays NumPy builds from lists of traced values)?"""
    def any_var(values: Any, depth: int = 0) -> bool:
        for v in values:
            if isinstance(v, Var):
                return True
            if isinstance(v, (list, tuple)) and depth < 4 and any_var(v, depth + 1):
                return True
            if isinstance(v, np.ndarray) and v.dtype == object and any_var(v.flat, depth + 1):
                return True
        return False

    return any_var(args) or any_var(kwargs.values())


def dispatching(original: Callable, impl: Callable) -> Callable:
    """``original`` with calls on traced values sent to ``impl``."""
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if has_var(args, kwargs):
            return impl(*args, **kwargs)
        return original(*args, **kwargs)

    wrapper.__newtonad_impl__ = impl
    return wrapper


def _dispatching_method(cls: type, original: Callable, impl: Callable) -> Callable:
    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if type(self) is cls and has_var(args, kwargs):  # subclasses are other distributions
            return impl(*args, **kwargs)
        return original(self, *args, **kwargs)

    method.__newtonad_impl__ = impl
    return method


def _wrap_module(module: Any, entries: dict[str, Callable]) -> None:
    for path, impl in entries.items():
        *owner_path, attr = path.split(".")
        owner = module
        for part in owner_path:
            owner = getattr(owner, part, None)
        current = getattr(owner, attr, None) if owner is not None else None
        if current is None or hasattr(current, "__newtonad_impl__"):
            continue  # not in this SciPy version, or wrapped already
        public_name = f"{module.__name__}.{path}"
        if owner_path:  # a method of a distribution instance: wrap on its class
            cls = type(owner)
            original = getattr(cls, attr)
            setattr(cls, attr, _dispatching_method(cls, original, impl))
            remember_original(original, public_name, cls)
        else:
            wrapper = dispatching(current, impl)
            # pickle finds functions by __module__ and __qualname__: point it at the
            # wrapper (the private module holding the original has the original)
            wrapper.__module__, wrapper.__qualname__ = module.__name__, attr
            setattr(module, attr, wrapper)
            remember_original(current, public_name, None)


def install_pending() -> None:
    """Wrap the routed functions of every watched SciPy module imported by now.

    Cheap when there is nothing to do (a set lookup per watched module and the size
    of the tables), so it runs at the start of every trace. Functions registered later
    (``numpy_linalg`` adds ``scipy.linalg``'s when that is imported) change the size of
    the tables, and are wrapped then.
    """
    if len(_installed) == len(_WATCHED) and _table_size[0] == _tables_size():
        return
    if _table_size[0] != _tables_size():
        _table_size[0] = _tables_size()
        _installed.clear()  # wrapping again skips what is wrapped already
    for name in _WATCHED:
        module = sys.modules.get(name)
        if name in _installed or module is None:
            continue
        if getattr(getattr(module, "__spec__", None), "_initializing", False):
            continue  # still executing (scipy.stats importing scipy.special): wrapped when done
        _install(module)


def _install(module: Any) -> None:
    _installed.add(module.__name__)
    _wrap_module(module, routed().get(module.__name__, {}))


# ---- import hook -------------------------------------------------------------------------------

class _WrapAfterExec:
    """A watched module's loader, wrapping the module's functions once it has executed."""

    def __init__(self, loader: Any):
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__spec__.loader = module.__loader__ = self.loader  # leave no trace
        self.loader.exec_module(module)
        _install(module)
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


def install() -> None:
    """At ``import newtonad``: wrap what is imported, and watch for the rest."""
    if not any(isinstance(f, _ScipyImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _ScipyImportHook())
    install_pending()


__all__ = ["dispatching", "has_var", "install", "install_pending", "routed", "scipy_caller_hint"]
