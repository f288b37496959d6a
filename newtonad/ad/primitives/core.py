"""The Primitive object and the rules that every family shares.

Rules are data (JAX's autodidax): a primitive is a small named object, and each of
its rules is one short entry next to it:

* ``shape``: abstract evaluation, ``Slot``s in, the output ``Slot`` out;
* ``impl``: the NumPy reference evaluation;
* ``jvp``: ``(primals, tangents, out, **params) -> tangent of out``. Tangents are
  *frames*: a tangent at a slot of shape ``s`` with ``k`` directions has shape
  ``s + (k,)``. A transform may also run without a frame axis (one direction,
  tangent shape ``s``), as gradients do; rules stay the same, using :func:`lift` and
  :func:`frame_cols`. A missing tangent is ``None`` (a symbolic zero), and a rule may
  return ``None``. Rules are written with the ops of this package, so the derived
  program can itself be differentiated again;
* ``transpose`` (linear primitives only): ``(ct, *args, **params) -> cotangent per
  argument``. Linear arguments arrive as :class:`UndefPrimal`; the others are the
  known values (residuals). ``None`` means a zero cotangent.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np

from ..program import ArrayConst, Slot
from ..var import Var, bind

REGISTRY: dict[str, "Primitive"] = {}


class Primitive:
    """A named operation with its rules (see the module docstring)."""

    def __init__(self, name: str, *, impl: Callable, shape: Callable,
                 jvp: Callable | None = None, transpose: Callable | None = None,
                 numpy_only: bool = False):
        if name in REGISTRY:
            raise ValueError(f"primitive {name!r} is defined twice")
        self.name = name
        self.impl = impl
        self.shape_rule = shape
        self.jvp = jvp
        self.transpose = transpose
        # No numba lowering by design (matrix factorisations, special functions numba
        # lacks): a program using it runs on the NumPy evaluator, without a warning.
        self.numpy_only = numpy_only
        REGISTRY[name] = self

    @property
    def linear(self) -> bool:
        return self.transpose is not None

    def abstract_eval(self, *avals: Slot, **params: Any) -> Slot:
        return self.shape_rule(*avals, **params)

    def __call__(self, *args: Any, **params: Any) -> Any:
        return bind(self, *args, **params)

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self):  # pickle by name: programs can be sent to other processes
        return (REGISTRY.__getitem__, (self.name,))


class UndefPrimal:
    """Marks a linear argument of a transpose rule (autodidax's ``UndefPrimal``)."""

    __slots__ = ("aval",)

    def __init__(self, aval: Slot):
        self.aval = aval

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    def __repr__(self) -> str:
        return f"UndefPrimal({self.aval})"


def is_undef(x: Any) -> bool:
    return isinstance(x, UndefPrimal)


def aval_of(x: Any) -> Slot:
    """The abstract value of a Var, UndefPrimal or array-like."""
    if isinstance(x, (Var, UndefPrimal)):
        return x.aval
    a = np.asarray(x)
    return Slot(tuple(a.shape), a.dtype.name)


def shape_of(x: Any) -> tuple[int, ...]:
    return aval_of(x).shape


# ---- frame layout --------------------------------------------------------------------

_layout = {"framed": True}


@contextlib.contextmanager
def tangent_layout(framed: bool) -> Iterator[None]:
    """Within this block jvp rules see frames (``s + (k,)``) or single tangents (``s``)."""
    saved = _layout["framed"]
    _layout["framed"] = framed
    try:
        yield
    finally:
        _layout["framed"] = saved


def framed() -> bool:
    """Do tangents carry a trailing frame axis in the transform now running?"""
    return _layout["framed"]


def frame_cols(t: Any, primal_ndim: int) -> tuple[int, ...]:
    """The trailing column axis of a tangent frame (empty for a single tangent)."""
    return shape_of(t)[primal_ndim:]


# ---- const -------------------------------------------------------------------------

def _const_impl(*, value: Any, dtype: str) -> np.ndarray:
    if isinstance(value, ArrayConst):
        return value.array
    return np.asarray(value, dtype=dtype)


def _const_shape(*, value: Any, dtype: str) -> Slot:
    shape = value.array.shape if isinstance(value, ArrayConst) else ()
    return Slot(tuple(shape), dtype)


const_p = Primitive("const", impl=_const_impl, shape=_const_shape)
