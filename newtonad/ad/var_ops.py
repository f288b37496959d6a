"""Operators, methods and NumPy protocols of Var, so plain NumPy code traces.

``__array_ufunc__`` (NEP 13) and ``__array_function__`` (NEP 18) route ``np.sin(x)``,
``np.sum(x)``, ``np.dot(A, x)`` … on a Var to :mod:`newtonad.ad.numpy_api`; an
unsupported function raises NotImplementedError naming it.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import numpy_api as npa
from . import numpy_linalg, numpy_special, scipy_dispatch
from .trace import Var

# What Var's NumPy protocols dispatch to: ufuncs by name, functions by object.
UFUNCS: dict[str, Any] = {**npa.UFUNCS, **numpy_special.UFUNCS}
FUNCTIONS: dict[Any, Any] = {**npa.FUNCTIONS, **numpy_linalg.FUNCTIONS, **numpy_special.FUNCTIONS}


def _qualified_name(fn: Any) -> str:
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


def _ufunc(self: Var, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    if kwargs.get("out") is not None:
        raise NotImplementedError(f"np.{ufunc.__name__}(..., out=...) writes in place, which "
                                  "cannot be traced; use the returned value")
    kwargs.pop("out", None)
    if method == "reduce" and ufunc.__name__ in npa.UFUNC_REDUCE:
        kwargs.setdefault("axis", 0)  # ufunc.reduce reduces the first axis by default
        return npa.UFUNC_REDUCE[ufunc.__name__](*inputs, **kwargs)
    name = _qualified_name(ufunc)
    if method != "__call__" or ufunc.__name__ not in UFUNCS:
        what = name if method == "__call__" else f"{name}.{method}"
        raise NotImplementedError(f"newtonad cannot trace {what}: it has no derivative "
                                  "rule here. Supported ufuncs: " + ", ".join(sorted(UFUNCS)))
    if kwargs:
        raise NotImplementedError(f"{name} with arguments {sorted(kwargs)} "
                                  "is not supported while tracing")
    return UFUNCS[ufunc.__name__](*inputs)


def _function(self: Var, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
    impl = FUNCTIONS.get(func)
    if impl is None:
        raise NotImplementedError(
            f"newtonad cannot trace {_qualified_name(func)}: no derivative rule is "
            "defined for it. Write it with supported operations, or see newtonad.numpy "
            "for the functions that trace.")
    return impl(*args, **kwargs)


def _setitem(self: Var, key: Any, value: Any) -> None:
    raise TypeError("newtonad arrays cannot be assigned into (x[i] = v) while tracing: build "
                    "the result instead, e.g. np.where(mask, v, x), np.concatenate of pieces, "
                    "or np.pad")


def _method(fn):
    """``x.name(*args)`` as ``np.name(x, *args)``: NumPy's method signatures match."""
    return lambda self, *args, **kwargs: fn(self, *args, **kwargs)


def _in_place(name: str):
    def refuse(self, *args, **kwargs):
        raise TypeError(f"x.{name}() {name}s in place, which cannot be traced; use "
                        f"y = np.{name}(x, ...) instead")
    return refuse


def _nonzero(self):
    raise TypeError("x.nonzero() returns indices whose number depends on the values; it cannot "
                    "be traced. Use np.where(condition, a, b) or a constant mask")


def _binary(fn, reflected: bool = False):
    if reflected:
        return lambda self, other: fn(other, self)
    return lambda self, other: fn(self, other)


def install() -> None:
    """Give Var NumPy's operators and array methods."""
    ops = {
        "add": npa.add, "sub": npa.subtract, "mul": npa.multiply, "truediv": npa.true_divide,
        "pow": npa.power, "matmul": npa.matmul,
        "mod": numpy_special.sp.remainder, "floordiv": numpy_special.sp.floor_divide,
        "divmod": numpy_special.divmod_,
    }
    for name, fn in ops.items():
        setattr(Var, f"__{name}__", _binary(fn))
        setattr(Var, f"__r{name}__", _binary(fn, reflected=True))
    for name, fn in {"lt": npa.less, "le": npa.less_equal, "gt": npa.greater,
                     "ge": npa.greater_equal, "eq": npa.equal, "ne": npa.not_equal}.items():
        setattr(Var, f"__{name}__", _binary(fn))
    Var.__and__ = _binary(npa.logical_and)
    Var.__or__ = _binary(npa.logical_or)
    Var.__invert__ = lambda self: npa.logical_not(self)
    Var.__neg__ = lambda self: npa.negative(self)
    Var.__pos__ = lambda self: self
    Var.__abs__ = lambda self: npa.absolute(self)
    Var.__getitem__ = lambda self, key: npa.getitem(self, key)
    Var.__setitem__ = _setitem
    Var.__array_ufunc__ = _ufunc
    Var.__array_function__ = _function
    Var.T = property(lambda self: npa.transpose(self))
    Var.mT = property(lambda self: npa.swapaxes(self, -1, -2))
    # Methods whose parameters come in the order of their np.* function: forwarded whole.
    for name in ("sum", "mean", "prod", "max", "min", "var", "std", "cumsum", "cumprod",
                 "argsort", "argmax", "argmin", "argpartition"):
        setattr(Var, name, _method(getattr(npa, name)))
    # NumPy runs a ufunc on an object array (np.exp(np.array([a, b]))) by calling each
    # entry's method of that name: one per unary NumPy ufunc that traces.
    for name in UFUNCS:
        ufunc = getattr(np, name, None)
        if isinstance(ufunc, np.ufunc) and ufunc.nin == 1 and not hasattr(Var, name):
            setattr(Var, name, lambda self, _name=name: UFUNCS[_name](self))
    Var.conjugate = Var.conj = lambda self: self  # real values
    Var.real = property(lambda self: self)
    Var.round = _method(numpy_special.around)
    Var.sort = _in_place("sort")
    Var.partition = _in_place("partition")
    Var.nonzero = _nonzero
    Var.dot = lambda self, other: npa.dot(self, other)
    Var.reshape = lambda self, *shape, order="C": npa.reshape(
        self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape, order)
    Var.ravel = lambda self, order="C": npa.ravel(self, order)
    Var.flatten = lambda self, order="C": npa.ravel(self, order)
    Var.transpose = lambda self, *axes: npa.transpose(
        self, None if not axes else (axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes))
    Var.swapaxes = lambda self, a, b: npa.swapaxes(self, a, b)
    Var.squeeze = lambda self, axis=None: npa.squeeze(self, axis)
    Var.clip = lambda self, min=None, max=None: npa.clip(self, min, max)
    Var.astype = lambda self, dtype, **kw: npa.astype(self, dtype)
    Var.copy = lambda self: self
    Var.repeat = lambda self, repeats, axis=None: npa.repeat(self, repeats, axis)
    Var.take = lambda self, indices, axis=None: npa.take(self, indices, axis)
    Var.diagonal = lambda self, offset=0, axis1=0, axis2=1: npa.diagonal(self, offset, axis1, axis2)
    Var.trace = lambda self, offset=0, axis1=0, axis2=1, dtype=None, out=None: npa.trace(
        self, offset, axis1, axis2, dtype, out)


install()
scipy_dispatch.install()  # route scipy.special.logsumexp & co. on traced values (see there)
