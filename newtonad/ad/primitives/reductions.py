"""Reductions over static axes (no keepdims: the numpy layer reshapes) and cumsum.

Axes always refer to primal axes; a frame's column axis is the last one and is never
reduced, so the same ``axes`` serve primal and tangent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..program import Slot
from .core import Primitive, lift, shape_of
from .elementwise import add, convert, div, eq, mul


def _reduced_shape(x: Slot, *, axes: tuple[int, ...]) -> Slot:
    for a in axes:
        if not 0 <= a < x.ndim:
            raise ValueError(f"axis {a} is out of range for shape {x.shape}")
    return Slot(tuple(n for i, n in enumerate(x.shape) if i not in axes), x.dtype)


def keepdims_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def expand_reduced(y: Any, in_shape: tuple[int, ...], axes: tuple[int, ...]) -> Any:
    """Reshape a reduced value (or frame) so it broadcasts against the unreduced one."""
    from .structural import reshape

    tail = shape_of(y)[len(in_shape) - len(axes):]  # a frame's column axis, if any
    return reshape(y, keepdims_shape(in_shape, axes) + tail)


def _sum_transpose(ct, x, *, axes):
    from .structural import broadcast_to

    return [broadcast_to(expand_reduced(ct, x.shape, axes), x.shape)]


reduce_sum_p = Primitive(
    "reduce_sum", impl=lambda x, *, axes: np.sum(x, axis=axes), shape=_reduced_shape,
    jvp=lambda p, t, out, *, axes: reduce_sum(t[0], axes=axes),
    transpose=_sum_transpose)


def _extremum_jvp(primals, tangents, out, *, axes):
    (x,), (t,) = primals, tangents
    if t is None:
        return None
    # The tangent of the max is the mean tangent over the positions that attain it.
    hit = convert(eq(x, expand_reduced(out, x.aval.shape, axes)), dtype="float64")
    share = div(hit, expand_reduced(reduce_sum(hit, axes=axes), x.aval.shape, axes))
    return reduce_sum(mul(t, lift(share)), axes=axes)


reduce_max_p = Primitive("reduce_max", impl=lambda x, *, axes: np.max(x, axis=axes),
                         shape=_reduced_shape, jvp=_extremum_jvp)
reduce_min_p = Primitive("reduce_min", impl=lambda x, *, axes: np.min(x, axis=axes),
                         shape=_reduced_shape, jvp=_extremum_jvp)


def _prod_jvp(primals, tangents, out, *, axes):
    (x,), (t,) = primals, tangents
    if t is None:
        return None
    # d prod / d x_i = prod / x_i (as autograd does; undefined where an x_i is zero).
    others = div(expand_reduced(out, x.aval.shape, axes), x)
    return reduce_sum(mul(t, lift(others)), axes=axes)


reduce_prod_p = Primitive("reduce_prod", impl=lambda x, *, axes: np.prod(x, axis=axes),
                          shape=_reduced_shape, jvp=_prod_jvp)


def _cumsum_impl(x, *, axis, reverse):
    x = np.asarray(x)
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
    return np.cumsum(x, axis=axis)


def _cumsum_shape(x: Slot, *, axis: int, reverse: bool) -> Slot:
    if not 0 <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of range for shape {x.shape}")
    return x


cumsum_p = Primitive(
    "cumsum", impl=_cumsum_impl, shape=_cumsum_shape,
    jvp=lambda p, t, out, *, axis, reverse: cumsum(t[0], axis=axis, reverse=reverse),
    # The transpose of a running sum is the running sum from the other end.
    transpose=lambda ct, x, *, axis, reverse: [cumsum(ct, axis=axis, reverse=not reverse)])


def reduce_sum(x, *, axes): return reduce_sum_p(x, axes=tuple(axes))
def reduce_max(x, *, axes): return reduce_max_p(x, axes=tuple(axes))
def reduce_min(x, *, axes): return reduce_min_p(x, axes=tuple(axes))
def reduce_prod(x, *, axes): return reduce_prod_p(x, axes=tuple(axes))
def cumsum(x, *, axis, reverse=False): return cumsum_p(x, axis=axis, reverse=reverse)


__all__ = ["add", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "cumsum",
           "expand_reduced", "keepdims_shape"]
