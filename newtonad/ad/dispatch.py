"""What NumPy calls on a traced value reach: the dispatch tables (NEP 13 / NEP 18 pattern).

This module sits below everything else of the AD core and imports none of it.
:class:`~newtonad.ad.var.Var` looks its operators, methods and NumPy protocols up here;
the NumPy layer (:mod:`.numpy_api`, :mod:`.numpy_linalg`, :mod:`.numpy_special`) fills
the tables as its functions are defined, with the decorators below. Dependencies so run
one way: the NumPy layer imports this module, never the reverse (NumPy's own
``array_function_dispatch`` works the same way).

* :data:`UFUNCS` -- ufunc name -> implementation (``__array_ufunc__``, Var's operators);
* :data:`UFUNC_REDUCE` -- ufunc name -> implementation of ``ufunc.reduce``;
* :data:`FUNCTIONS` -- NumPy / SciPy function object -> implementation
  (``__array_function__``, the SciPy routing of :mod:`.scipy_dispatch`);
* :data:`SCIPY_FUNCTIONS` -- dotted public name of a SciPy Python-level function ->
  implementation (``scipy.special.logsumexp``; routed by :mod:`.scipy_dispatch`);
* :data:`METHODS` -- named implementations Var needs that are no NumPy function
  (``getitem``, ``astype``, folding object arrays, eager ``backward``);
* :data:`NAMESPACE` -- name in :mod:`newtonad.numpy` -> implementation;
* :data:`ARRAY_METHODS` -- name of a Var method -> the implementation it forwards to.

One registration per function: :func:`numpy_function`, applied where the function is
defined, fills all of these at once, so adding a NumPy function touches one file.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterable, TypeVar

import numpy as np

UFUNCS: dict[str, Callable] = {}
UFUNC_REDUCE: dict[str, Callable] = {}
FUNCTIONS: dict[Any, Callable] = {}
SCIPY_FUNCTIONS: dict[str, Callable] = {}
METHODS: dict[str, Callable] = {}
NAMESPACE: dict[str, Any] = {}
ARRAY_METHODS: dict[str, Callable] = {}

#: what is told of every new entry of ARRAY_METHODS (Var's mixin installs its methods so)
_METHOD_WATCHERS: list[Callable[[str, Callable], None]] = []


_F = TypeVar("_F", bound=Callable[..., Any])


def _names(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _identity(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _claim(table: dict, key: Any, fn: Callable, where: str) -> None:
    """``table[key] = fn``; a clear error if another function holds ``key`` already (two
    registrations of one name: the later would win silently). The same function defined
    again (a module reloaded) replaces itself."""
    held = table.get(key)
    if held is not None and held is not fn and _identity(held) != _identity(fn):
        raise ValueError(f"{where} is registered twice, by {_identity(held)} and by "
                         f"{_identity(fn)}: remove one registration, or give the second "
                         "another name")
    table[key] = fn


def numpy_function(*functions: Any, ufunc: str | Iterable[str] = (),
                   reduce: str | None = None, method: str | Iterable[str] = (),
                   name: str | Iterable[str] | None = None) -> Callable[[_F], _F]:
    """Register the decorated function as newtonad's version of NumPy's ``functions``.

    The one registration of a function of the NumPy layer: it enters the dispatch tables
    (what ``np.*`` calls on a traced value reach), the :mod:`newtonad.numpy` namespace
    and Var's methods, so nothing else lists it.

    Parameters
    ----------
    *functions : callable or None
        NumPy's objects this implements. A ufunc goes to :data:`UFUNCS` by its name (a
        generalised ufunc such as ``np.matmul`` also to :data:`FUNCTIONS`, through which
        NumPy 1 dispatched it); any other function to :data:`FUNCTIONS`. ``None`` (a name
        this NumPy lacks, ``getattr(np, "concat", None)``) is skipped.
    ufunc : str or iterable of str, optional
        More names in :data:`UFUNCS` (``"true_divide"``; SciPy's ufuncs such as ``"erf"``).
    reduce : str, optional
        The ufunc whose ``.reduce`` this implements (``"add"`` for ``sum``).
    method : str or iterable of str, optional
        Var methods that forward their arguments whole (``x.sum(axis=0)`` is
        ``sum(x, axis=0)``).
    name : str or iterable of str, optional
        Names in :mod:`newtonad.numpy` (``"linalg.solve"`` in its ``linalg``); the
        function's own ``__name__`` by default, ``()`` for none.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from newtonad.ad.dispatch import FUNCTIONS, numpy_function
    >>> @numpy_function(np.shares_memory, name=())
    ... def shares_memory(a, b, max_work=None):
    ...     return False
    >>> FUNCTIONS.pop(np.shares_memory) is shares_memory
    True
    """
    def register(fn: _F) -> _F:
        for target in functions:
            if target is None:
                continue
            if isinstance(target, np.ufunc):
                _claim(UFUNCS, target.__name__, fn, f"the ufunc {target.__name__!r}")
                if target.signature is None:
                    continue
            _claim(FUNCTIONS, target, fn, qualified_name(target))
        for ufunc_name in _names(ufunc):
            _claim(UFUNCS, ufunc_name, fn, f"the ufunc {ufunc_name!r}")
        if reduce is not None:
            _claim(UFUNC_REDUCE, reduce, fn, f"{reduce}.reduce")
        for method_name in _names(method):
            _claim(ARRAY_METHODS, method_name, fn, f"the method Var.{method_name}")
            for watch in _METHOD_WATCHERS:
                watch(method_name, fn)
        for public in _names(fn.__name__ if name is None else name):
            _claim(NAMESPACE, public, fn, f"newtonad.numpy.{public}")
        return fn
    return register


def watch_methods(install: Callable[[str, Callable], None]) -> None:
    """Call ``install(name, implementation)`` for each Var method registered, now and later."""
    _METHOD_WATCHERS.append(install)
    for method_name, fn in ARRAY_METHODS.items():
        install(method_name, fn)


def implements_method(*names: str) -> Callable[[Callable], Callable]:
    """Register the decorated function as the named implementation ``names``."""
    def register(fn: Callable) -> Callable:
        for name in names:
            METHODS[name] = fn
        return fn
    return register


def method(name: str) -> Callable:
    """The named implementation ``name``; a clear error if nothing registered it."""
    try:
        return METHODS[name]
    except KeyError:
        raise RuntimeError(f"newtonad's {name!r} is not registered: import newtonad (it loads "
                           "the NumPy layer and the eager graph)") from None


def qualified_name(fn: Any) -> str:
    """``numpy.sin``, ``numpy.linalg.det``, ``scipy.special.erf``: where users find ``fn``."""
    name = getattr(fn, "__name__", repr(fn))
    if isinstance(fn, np.ufunc):  # ufuncs carry no __module__: find their home by identity
        if getattr(np, name, None) is fn:
            return f"numpy.{name}"
        for home in ("scipy.special._ufuncs", "scipy.special"):
            module = sys.modules.get(home)
            if module is not None and getattr(module, name, None) is fn:
                return f"scipy.special.{name.lstrip('_')}"
        return f"the ufunc {name}"
    module = getattr(fn, "__module__", None) or "numpy"
    public = module.split("._")[0]  # numpy._core.fromnumeric -> numpy
    if module.startswith("numpy.linalg") or module.startswith("numpy._core") and "linalg" in name:
        public = "numpy.linalg"
    return f"{public}.{name}"


def is_spmatrix(value: Any) -> bool:
    """Whether ``value`` is a scipy.sparse *matrix* (not array): its ``*`` is the matrix
    product, so ``A * x`` and ``x * A`` mean ``A @ x`` and ``x @ A`` (scipy not imported)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and isinstance(value, sparse.spmatrix)


# ---- SciPy functions wrapped by scipy_dispatch: found again on the call stack --------------------

#: code object of a wrapped SciPy original -> [(public name, class of the instance or None)]
ORIGINAL_CODE: dict[Any, list[tuple[str, type | None]]] = {}

#: [whether SciPy's functions are routed now]; newtonad.scipy_routing sets it
SCIPY_ROUTING = [True]


def remember_original(original: Any, public_name: str, cls: type | None) -> None:
    """Record the code of a SciPy function that :mod:`.scipy_dispatch` wrapped."""
    code = getattr(original, "__code__", None)
    if code is not None:
        ORIGINAL_CODE.setdefault(code, []).append((public_name, cls))


def scipy_caller_hint() -> str | None:
    """A sentence naming the routed SciPy function on the call stack, with the fix.

    Walks the Python stack (``sys._getframe``) for a frame executing the original
    (unwrapped) code of a SciPy function newtonad routes. Returns ``None`` when no such
    frame is found. For the error path of tracing (``Var.__array__`` and friends).
    """
    if not ORIGINAL_CODE:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        for public_name, cls in ORIGINAL_CODE.get(frame.f_code, ()):
            if cls is None or type(frame.f_locals.get("self")) is cls:
                return _hint_text(public_name, cls is not None)
        frame = frame.f_back
    return None


def _hint_text(public_name: str, method: bool) -> str:
    module, _, attr = public_name.rpartition(".")
    ours = "newtonad." + public_name
    if not SCIPY_ROUTING[0]:
        instead = "" if method else f", or call {ours}(...), which traces either way"
        return (f"{public_name} was called on a traced value while newtonad's routing of SciPy "
                f"functions is off (newtonad.scipy_routing(False), or NEWTONAD_SCIPY_ROUTING=0 "
                f"at import), so SciPy's own code ran and needed concrete numbers. Turn it on "
                f"with newtonad.scipy_routing(True) (or unset NEWTONAD_SCIPY_ROUTING){instead}.")
    if method:
        return (f"{public_name} received a traced value but ran SciPy's own code, which "
                f"needs concrete numbers (a method bound before newtonad routed it). Call "
                f"{ours}(...) or {public_name}(...) itself, not a saved bound method.")
    return (f"{public_name} was called on a traced value through a name bound before "
            f"newtonad could route it (for example `from {module} import {attr}` before "
            f"`import newtonad`), so SciPy's own code ran and needed concrete numbers. "
            f"Use {ours}, import newtonad before binding the name, or call "
            f"{public_name}(...) through its module.")


__all__ = ["ARRAY_METHODS", "FUNCTIONS", "METHODS", "NAMESPACE", "SCIPY_FUNCTIONS", "UFUNCS",
           "UFUNC_REDUCE", "implements_method", "is_spmatrix", "method", "numpy_function",
           "qualified_name", "remember_original", "scipy_caller_hint", "watch_methods"]
