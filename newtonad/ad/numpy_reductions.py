"""NumPy's reductions and scans on traced arrays.

``sum``, ``prod``, ``max`` and ``min`` are one reduction primitive over the normalised
axes (with NumPy's ``keepdims``, ``initial`` and ``where=`` masks); ``mean``, ``var``
and ``std`` are sums and divisions; ``logsumexp`` shifts by a stopped maximum;
``cumsum`` / ``cumprod`` are scan primitives and ``diff`` a difference of slices. The
NaN-skipping ``nansum`` / ``nanmean`` mask NaNs elementwise first.
"""

from __future__ import annotations

import builtins

import numpy as np

from .dispatch import numpy_function
from .numpy_base import (
    asvar_or_array,
    cast_to,
    check_unsupported,
    is_var,
    ndim_of,
    normalize_axes,
    normalize_axis,
    reduced_size,
    take_range,
    to_float,
)
from .numpy_elementwise import exp, log, maximum, minimum, sqrt, square, stop_gradient
from .numpy_shapes import full_like, ravel
from .primitives import elementwise as ew
from .primitives import reductions as rd
from .primitives import structural as st
from .primitives.core import shape_of

# ---- reductions --------------------------------------------------------------------------

def _reduce(prim_fn, x, axis, keepdims):
    axes = normalize_axes(axis, ndim_of(x))
    out = prim_fn(x, axes=axes) if axes else x
    if keepdims:
        out = st.reshape(out, rd.keepdims_shape(shape_of(x), axes))
    return out


def _where_mask(a, where):
    """``where`` as a boolean mask that broadcasts to ``a``'s shape (None: no mask)."""
    if where is None or (not is_var(where) and np.all(np.asarray(where, dtype=bool))
                         and np.ndim(where) == 0):
        return None
    if not is_var(where):
        where = np.asarray(where, dtype=bool)
    elif where.dtype != np.bool_:
        raise TypeError(f"where= needs a boolean mask, got {where.dtype}")
    if np.broadcast_shapes(shape_of(where), shape_of(a)) != shape_of(a):
        raise ValueError(f"where= of shape {shape_of(where)} does not broadcast to the "
                         f"array's shape {shape_of(a)}")
    return where


def _fill_masked(a, mask, fill):
    return a if mask is None else ew.select(mask, a, fill)


def _count(a, axis, keepdims, mask):
    """How many entries each reduction sees: a constant, or a traced count under a traced mask."""
    shape = shape_of(a)
    if mask is None:
        axes = normalize_axes(axis, len(shape))
        return float(np.prod([shape[i] for i in axes], dtype=np.int64))
    ones = ew.convert(st.broadcast_to(mask, shape), dtype="float64")
    return _reduce(rd.reduce_sum, ones, axis, keepdims)


@numpy_function(np.sum, reduce="add", method="sum")
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Traced version of numpy.sum.

    ``out=`` is not supported (it writes in place); use the returned value.
    """
    check_unsupported("sum", out=out)
    a = cast_to(a, dtype)
    out_ = _reduce(rd.reduce_sum, _fill_masked(a, _where_mask(a, where), 0.0), axis, keepdims)
    return out_ if initial is None else ew.add(out_, initial)


@numpy_function(np.prod, reduce="multiply", method="prod")
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Traced version of numpy.prod.

    ``out=`` is not supported (it writes in place); use the returned value.
    """
    check_unsupported("prod", out=out)
    a = cast_to(a, dtype)
    out_ = _reduce(rd.reduce_prod, _fill_masked(a, _where_mask(a, where), 1.0), axis, keepdims)
    return out_ if initial is None else ew.mul(out_, initial)


def _extremum(name, prim_fn, pick, a, axis, out, keepdims, initial, where):
    check_unsupported(name, out=out)
    mask = _where_mask(a, where)
    if initial is None and (mask is not None or reduced_size(a, axis) == 0):
        op = "maximum" if name == "max" else "minimum"
        raise ValueError(f"np.{name}: zero-size reduction or where= mask: reduction operation "
                         f"'{op}' does not have an identity, so pass initial=")
    if initial is not None and reduced_size(a, axis) == 0:
        return full_like(sum(a, axis, keepdims=keepdims), initial)
    out_ = _reduce(prim_fn, _fill_masked(a, mask, initial), axis, keepdims)
    return out_ if initial is None else pick(out_, initial)


@numpy_function(np.max, np.amax, reduce="maximum", method="max", name=("max", "amax"))
def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Traced version of numpy.max."""
    return _extremum("max", rd.reduce_max, maximum, a, axis, out, keepdims, initial, where)


@numpy_function(np.min, np.amin, reduce="minimum", method="min", name=("min", "amin"))
def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Traced version of numpy.min."""
    return _extremum("min", rd.reduce_min, minimum, a, axis, out, keepdims, initial, where)


@numpy_function(np.mean, method="mean")
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Traced version of numpy.mean.

    ``out=`` is not supported (it writes in place); use the returned value.
    """
    check_unsupported("mean", out=out)
    a = to_float(cast_to(a, dtype))
    mask = _where_mask(a, where)
    return ew.div(sum(_fill_masked(a, mask, 0.0), axis, keepdims=keepdims),
                  _count(a, axis, keepdims, mask))


@numpy_function(np.var, method="var")
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Traced version of numpy.var.

    ``out=`` is not supported (it writes in place); use the returned value.
    """
    check_unsupported("var", out=out)
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    a = to_float(cast_to(a, dtype))
    mask = _where_mask(a, where)
    centre = globals()["mean"](a, axis, keepdims=True, where=where) if mean is None else mean
    squares = _fill_masked(square(ew.sub(a, centre)), mask, 0.0)
    count = _count(a, axis, keepdims, mask)
    dof = (builtins.max(count - ddof, 0) if isinstance(count, float)
           else maximum(ew.sub(count, ddof), 0.0))
    return ew.div(sum(squares, axis, keepdims=keepdims), dof)


@numpy_function(np.std, method="std")
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Traced version of numpy.std.

    ``out=`` is not supported (it writes in place); use the returned value.
    """
    v = var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction)
    if where is None and mean is None and reduced_size(a, axis) == 1:
        # one entry per slice: the variance is identically 0 (or NaN for ddof >= 1), and so is
        # its square root, whose derivative is then 0 -- not 0 / 0 through sqrt
        return v
    return sqrt(v)


@numpy_function()
def logsumexp(a, axis=None, keepdims=False):
    """``log(sum(exp(a)))`` computed stably (as scipy.special.logsumexp)."""
    m = stop_gradient(max(a, axis, keepdims=True))
    s = log(sum(exp(ew.sub(a, m)), axis, keepdims=True))
    out = ew.add(s, m)
    if not keepdims:
        out = st.reshape(out, shape_of(sum(a, axis)))
    return out


@numpy_function(getattr(np, "trapezoid", None))
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Traced version of numpy.trapezoid: the composite trapezoidal rule along ``axis``.

    Sample points ``x`` (1-D, or shaped like ``y``) or the spacing ``dx`` may be traced too.
    """
    y = to_float(y)
    nd = ndim_of(y)
    axis = normalize_axis(axis, nd)
    n = shape_of(y)[axis]
    if x is None:
        d = dx
    elif ndim_of(x) == 1:  # one spacing per interval, broadcast along the other axes
        d = st.reshape(diff(x), tuple(n - 1 if i == axis else 1 for i in range(nd)))
    else:
        d = diff(x, axis=axis)
    pairs = ew.add(take_range(y, axis, 1, n), take_range(y, axis, 0, n - 1))
    return sum(ew.mul(ew.mul(d, pairs), 0.5), axis)


# ---- scans and differences ---------------------------------------------------------------

@numpy_function(np.cumsum, method="cumsum")
def cumsum(a, axis=None, dtype=None, out=None):
    """Traced version of numpy.cumsum.

    ``out=`` is not supported (it writes in place); use the returned value.
    """
    check_unsupported("cumsum", out=out)
    a = cast_to(a, dtype)
    if axis is None:
        a, axis = ravel(a), 0
    return rd.cumsum(a, axis=normalize_axis(axis, ndim_of(a)))


@numpy_function(np.cumprod, method="cumprod")
def cumprod(a, axis=None, dtype=None, out=None):
    """Traced version of numpy.cumprod.

    Its derivative is exact where entries are zero (a linear scan).
    ``out=`` is not supported (it writes in place); use the returned value.
    """
    check_unsupported("cumprod", out=out)
    a = cast_to(a, dtype)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, ndim_of(a))
    if shape_of(a)[axis] == 0:
        return to_float(a)
    return rd.cumprod(a, axis=axis)


@numpy_function(np.diff)
def diff(a, n=1, axis=-1, prepend=None, append=None):
    """Traced version of numpy.diff."""
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    axis = normalize_axis(axis, ndim_of(a))
    ends = [_diff_end(v, a, axis) for v in (prepend, append)]
    if ends[0] is not None or ends[1] is not None:
        a = st.concatenate([v for v in (ends[0], a, ends[1]) if v is not None], axis)
    for _ in range(n):
        size = shape_of(a)[axis]
        a = ew.sub(take_range(a, axis, 1, size), take_range(a, axis, 0, size - 1))
    return a


def _diff_end(value, a, axis):
    """``prepend=`` / ``append=`` of np.diff: a scalar becomes one slice along ``axis``."""
    if value is None:
        return None
    value = asvar_or_array(value)
    if ndim_of(value) == 0:
        shape = shape_of(a)
        value = st.broadcast_to(value, shape[:axis] + (1,) + shape[axis + 1:])
    return value


# ---- NaN-skipping reductions (a value-dependent mask, computed elementwise) --------------

def _not_nan(a):
    return ew.eq_p(a, a)


@numpy_function(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Traced version of numpy.nansum."""
    a = asvar_or_array(a)
    if np.dtype(a.dtype).kind == "f":
        a = ew.select(_not_nan(a), a, 0.0)
    return sum(a, axis, dtype, out, keepdims, initial, where)


@numpy_function(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Traced version of numpy.nanmean."""
    a = asvar_or_array(a)
    keep = _not_nan(a)
    if where is not None:
        keep = ew.logical_and_p(keep, where if is_var(where) else np.asarray(where, dtype=bool))
    return mean(a, axis, dtype, out, keepdims, where=keep)
