"""The NumPy-like array methods and properties of :class:`~newtonad.ad.var.Var`.

``x.sum()``, ``x.reshape(...)``, ``x.T`` and the other methods NumPy arrays have are
NumPy's functions of the same name applied to ``x``: each looks its implementation up in
:mod:`.dispatch` (``FUNCTIONS[np.sum]``, ``METHODS["astype"]``), which the NumPy layer
fills. :class:`ArrayMethods` holds them so that :mod:`.var` keeps only the graph node,
its protocols and operators; ``Var`` inherits them. Like :mod:`.dispatch`, this module
imports nothing else of newtonad.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import numpy as np

from .dispatch import FUNCTIONS, METHODS

_Array = TypeVar("_Array", bound="ArrayMethods")



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

    # Methods whose parameters come in the order of their np.* function: forwarded whole.
    def sum(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.sum."""
        return FUNCTIONS[np.sum](self, *args, **kwargs)

    def mean(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.mean."""
        return FUNCTIONS[np.mean](self, *args, **kwargs)

    def prod(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.prod."""
        return FUNCTIONS[np.prod](self, *args, **kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.max."""
        return FUNCTIONS[np.max](self, *args, **kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.min."""
        return FUNCTIONS[np.min](self, *args, **kwargs)

    def var(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.var."""
        return FUNCTIONS[np.var](self, *args, **kwargs)

    def std(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.std."""
        return FUNCTIONS[np.std](self, *args, **kwargs)

    def cumsum(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.cumsum."""
        return FUNCTIONS[np.cumsum](self, *args, **kwargs)

    def cumprod(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.cumprod."""
        return FUNCTIONS[np.cumprod](self, *args, **kwargs)

    def argsort(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.argsort."""
        return FUNCTIONS[np.argsort](self, *args, **kwargs)

    def argmax(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.argmax."""
        return FUNCTIONS[np.argmax](self, *args, **kwargs)

    def argmin(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.argmin."""
        return FUNCTIONS[np.argmin](self, *args, **kwargs)

    def argpartition(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.argpartition."""
        return FUNCTIONS[np.argpartition](self, *args, **kwargs)

    def round(self, *args: Any, **kwargs: Any) -> Any:
        """Traced version of numpy.ndarray.round."""
        return FUNCTIONS[np.round](self, *args, **kwargs)

    def dot(self, other):
        """Traced version of numpy.ndarray.dot."""
        return FUNCTIONS[np.dot](self, other)

    def swapaxes(self, a, b):
        """Traced version of numpy.ndarray.swapaxes."""
        return FUNCTIONS[np.swapaxes](self, a, b)

    def squeeze(self, axis=None):
        """Traced version of numpy.ndarray.squeeze."""
        return FUNCTIONS[np.squeeze](self, axis)

    def clip(self, min=None, max=None):
        """Traced version of numpy.ndarray.clip."""
        return FUNCTIONS[np.clip](self, min, max)

    def repeat(self, repeats, axis=None):
        """Traced version of numpy.ndarray.repeat."""
        return FUNCTIONS[np.repeat](self, repeats, axis)

    def take(self, indices, axis=None):
        """Traced version of numpy.ndarray.take."""
        return FUNCTIONS[np.take](self, indices, axis)

    def ravel(self, order="C"):
        """Traced version of numpy.ndarray.ravel."""
        return FUNCTIONS[np.ravel](self, order)

    def flatten(self, order="C"):
        """Traced version of numpy.ndarray.flatten."""
        return FUNCTIONS[np.ravel](self, order)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        """Traced version of numpy.ndarray.diagonal."""
        return FUNCTIONS[np.diagonal](self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        """Traced version of numpy.ndarray.trace."""
        return FUNCTIONS[np.trace](self, offset, axis1, axis2, dtype, out)

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


__all__ = ["ArrayMethods"]
