"""The NumPy-like array methods and properties of :class:`~newtonad.ad.var.Var`.

``x.sum()``, ``x.reshape(...)``, ``x.T`` and the other methods NumPy arrays have are
NumPy's functions of the same name applied to ``x``. Most take their arguments in the
order of their ``np.*`` function and are generated: the NumPy layer's registration
(``@numpy_function(np.sum, method="sum")`` in :mod:`.dispatch`) names them, and
:func:`forwarder` installs each on :class:`ArrayMethods` as it is registered. Written here
by hand are only the methods whose arguments differ from their function's (``reshape``,
``transpose``, ``astype``), the properties and the methods refused. :class:`ArrayMethods`
holds them so that :mod:`.var` keeps only the graph node, its protocols and operators;
``Var`` inherits them. Like :mod:`.dispatch`, this module imports nothing else of newtonad.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, TypeVar

import numpy as np

from .dispatch import FUNCTIONS, METHODS, watch_methods

_Array = TypeVar("_Array", bound="ArrayMethods")


def forwarder(name: str, impl: Callable[..., Any]) -> Callable[..., Any]:
    """Var's method ``name``: ``x.name(*args, **kwargs)`` is ``impl(x, *args, **kwargs)``.

    Its signature is ``impl``'s with the array parameter as ``self``, so ``help(x.sum)``
    and ``inspect.signature`` show the arguments the method takes.
    """
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        return impl(self, *args, **kwargs)
    forward.__name__ = name
    forward.__qualname__ = f"Var.{name}"
    forward.__doc__ = f"Traced version of numpy.ndarray.{name}."
    try:
        params = list(inspect.signature(impl).parameters.values())
    except (TypeError, ValueError):  # pragma: no cover - a builtin without a signature
        return forward
    if params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        params[0] = params[0].replace(name="self")
        forward.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return forward


def _refused_in_place(name: str) -> Callable[..., Any]:
    """Var's method ``name``, which NumPy arrays run in place: refused with a hint."""
    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"x.{name}() {name}s in place, which cannot be traced; use "
                        f"y = np.{name}(x, ...) instead")
    refuse.__name__ = name
    refuse.__qualname__ = f"Var.{name}"
    refuse.__doc__ = (f"Traced version of numpy.ndarray.{name}: refused, it works in place.\n\n"
                      f"Raises TypeError; use ``y = np.{name}(x, ...)`` instead.\n")
    return refuse


class ArrayMethods:
    """NumPy array methods of a traced array, forwarded to the NumPy layer's functions.

    A mixin of :class:`~newtonad.ad.var.Var` (it has no state of its own); see the
    module docstring.
    """

    __slots__ = ()  # Var has slots: the mixin must not give it a __dict__

    @property
    def T(self) -> Any:
        """Traced version of numpy.ndarray.T."""
        return FUNCTIONS[np.transpose](self)

    @property
    def mT(self) -> Any:
        """Traced version of numpy.ndarray.mT."""
        return FUNCTIONS[np.swapaxes](self, -1, -2)

    @property
    def real(self: _Array) -> _Array:
        """Traced version of numpy.ndarray.real: the Var itself (values are real)."""
        return self

    def conjugate(self: _Array) -> _Array:
        """Traced version of numpy.ndarray.conjugate: the Var itself (values are real)."""
        return self

    conj = conjugate

    def copy(self: _Array) -> _Array:
        """Traced version of numpy.ndarray.copy: the Var itself (Vars are immutable)."""
        return self

    def astype(self, dtype, **kwargs):
        """Traced version of numpy.ndarray.astype (other keywords are accepted and ignored)."""
        return METHODS["astype"](self, dtype)

    def reshape(self, *shape, order="C"):
        """Traced version of numpy.ndarray.reshape."""
        one = len(shape) == 1 and not isinstance(shape[0], int)
        return FUNCTIONS[np.reshape](self, shape[0] if one else shape, order)

    def transpose(self, *axes):
        """Traced version of numpy.ndarray.transpose."""
        one = len(axes) == 1 and not isinstance(axes[0], int)
        return FUNCTIONS[np.transpose](self, None if not axes else (axes[0] if one else axes))

    sort = _refused_in_place("sort")
    partition = _refused_in_place("partition")

    def nonzero(self):
        """Traced version of numpy.ndarray.nonzero: refused, the result's size depends on values.

        Raises TypeError; use ``np.where(condition, a, b)`` or a constant mask instead.
        """
        raise TypeError("x.nonzero() returns indices whose number depends on the values; it "
                        "cannot be traced. Use np.where(condition, a, b) or a constant mask")


def _install(name: str, impl: Callable[..., Any]) -> None:
    setattr(ArrayMethods, name, forwarder(name, impl))


watch_methods(_install)  # the methods the NumPy layer registers, as it registers them

__all__ = ["ArrayMethods", "forwarder"]
