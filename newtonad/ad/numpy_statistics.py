"""Sorting, order statistics, averages, grids and FFT shifts on traced arrays.

Sorting positions come from primal values (integer primitives without tangents);
gathering the values at those positions carries the derivative, so ``sort``,
``partition``, ``median`` and ``quantile`` differentiate like the entries they pick.
``average`` is weighted sums, ``linspace`` and ``gradient`` are affine in their traced
inputs, and ``np.fft``'s shifts are rolls (its complex transforms are refused).
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from .dispatch import numpy_function
from .numpy_base import (
    asvar_or_array,
    check_unsupported,
    is_var,
    ndim_of,
    normalize_axes,
    normalize_axis,
    one_or_tuple,
    reduced_size,
    take_range,
    to_float,
)
from .numpy_indexing import getitem, take_along_axis
from .numpy_reductions import mean, sum
from .numpy_shapes import moveaxis, ravel, roll
from .primitives import elementwise as ew
from .primitives import reductions as rd
from .primitives import sorting as srt
from .primitives import structural as st
from .primitives.core import shape_of

# ---- sorting ------------------------------------------------------------------------------
# Positions come from primal values (integer primitives without tangents); gathering
# the values at those positions carries the derivative.

def _sort_axis(a, axis):
    if axis is None:
        return ravel(a), 0
    return a, normalize_axis(axis, ndim_of(a))


def _sort_kind(kind, stable) -> str | None:
    if stable is not None and kind is not None:
        raise ValueError("`kind` and `stable` parameters can't both be specified.")
    return "stable" if stable else kind


@numpy_function(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Traced version of numpy.sort.

    ``order=`` (fields of structured arrays) is not supported.
    """
    check_unsupported("sort", order=order)
    a, axis = _sort_axis(asvar_or_array(a), axis)
    return take_along_axis(a, srt.argsort(a, axis=axis, kind="stable"), axis)


@numpy_function(np.argsort, method="argsort")
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Traced version of numpy.argsort.

    ``order=`` (fields of structured arrays) is not supported.
    """
    check_unsupported("argsort", order=order)
    a, axis = _sort_axis(asvar_or_array(a), axis)
    return srt.argsort(a, axis=axis, kind=_sort_kind(kind, stable))


def _kth(kth) -> tuple[int, ...]:
    if is_var(kth):
        raise TypeError("kth must be known when tracing (a Python int or a sequence of ints)")
    return tuple(int(k) for k in np.atleast_1d(kth))


@numpy_function(np.argpartition, method="argpartition")
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """Traced version of numpy.argpartition.

    ``order=`` (fields of structured arrays) is not supported.
    """
    check_unsupported("argpartition", order=order)
    a, axis = _sort_axis(asvar_or_array(a), axis)
    return srt.argpartition(a, kth=_kth(kth), axis=axis)


@numpy_function(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """Traced version of numpy.partition.

    NumPy's own ``argpartition`` order, gathered. ``order=`` (fields of structured arrays)
    is not supported.
    """
    check_unsupported("partition", order=order)
    a, axis = _sort_axis(asvar_or_array(a), axis)
    return take_along_axis(a, srt.argpartition(a, kth=_kth(kth), axis=axis), axis)


def _arg_extremum(prim_fn, a, axis, out, keepdims):
    check_unsupported(prim_fn.__name__, out=out)
    a = asvar_or_array(a)
    shape = shape_of(a)
    if axis is None:
        out_ = prim_fn(ravel(a), axis=0)
        return st.reshape(out_, (1,) * len(shape)) if keepdims else out_
    axis = normalize_axis(axis, len(shape))
    out_ = prim_fn(a, axis=axis)
    return st.reshape(out_, rd.keepdims_shape(shape, (axis,))) if keepdims else out_


@numpy_function(np.argmax, method="argmax")
def argmax(a, axis=None, out=None, *, keepdims=False):
    """Traced version of numpy.argmax."""
    return _arg_extremum(srt.argmax, a, axis, out, keepdims)


@numpy_function(np.argmin, method="argmin")
def argmin(a, axis=None, out=None, *, keepdims=False):
    """Traced version of numpy.argmin."""
    return _arg_extremum(srt.argmin, a, axis, out, keepdims)


# ---- order statistics --------------------------------------------------------------------

def _axes_last(a, axis):
    """``a`` with the axes ``axis`` merged into one trailing axis, and the keepdims shape."""
    shape = shape_of(a)
    axes = normalize_axes(axis, len(shape))
    rest = [i for i in range(len(shape)) if i not in axes]
    moved = st.transpose(a, rest + list(axes))
    merged = st.reshape(moved, tuple(shape[i] for i in rest) + (reduced_size(a, axis),))
    return merged, rd.keepdims_shape(shape, axes)


def _nan_if_any_nan(result, sorted_last):
    """NumPy's order statistics are NaN for a slice holding a NaN (sorted last)."""
    if not is_var(sorted_last) and not np.any(np.isnan(sorted_last)):
        return result
    return ew.select(ew.ne_p(sorted_last, sorted_last), np.nan, result)


@numpy_function(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Traced version of numpy.median.

    ``out=`` is not supported (it writes in place); use the returned value.
    """
    check_unsupported("median", out=out)
    merged, kept = _axes_last(to_float(asvar_or_array(a)), axis)
    n = shape_of(merged)[-1]
    if n == 0:
        raise ValueError("np.median of an empty slice is NaN in NumPy (with a warning); "
                         "newtonad refuses it")
    s = sort(merged, axis=-1)
    mid = _take_last(s, [n // 2] if n % 2 else [n // 2 - 1, n // 2])
    result = ew.div(_sum_last(mid), float(shape_of(mid)[-1]))
    result = _nan_if_any_nan(result, _take_last(s, [n - 1])[..., 0])
    return st.reshape(result, kept) if keepdims else result


def _take_last(a, positions):
    return st.gather(a, np.asarray(positions, dtype=np.int64), ndim_of(a) - 1)


def _sum_last(a):
    return rd.reduce_sum(a, axes=(ndim_of(a) - 1,))


_QUANTILE_METHODS = ("linear",)


@numpy_function(np.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """Traced version of numpy.quantile.

    NumPy's default ``method='linear'`` only, with the same interpolation formula.
    """
    check_unsupported("quantile", out=out, weights=weights, interpolation=interpolation)
    if method not in _QUANTILE_METHODS:
        raise NotImplementedError(f"np.quantile method={method!r} is not supported; newtonad "
                                  "implements method='linear' (NumPy's default)")
    if is_var(q):
        raise NotImplementedError("np.quantile with traced q is not supported; q must be known")
    q = np.asarray(q, dtype=float)
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    merged, kept = _axes_last(to_float(asvar_or_array(a)), axis)
    n = shape_of(merged)[-1]
    virtual = (n - 1) * q
    before = np.floor(virtual)
    above = virtual >= n - 1
    before = np.where(above, n - 1, before).astype(np.int64)
    after = np.where(above, n - 1, before + 1).astype(np.int64)
    gamma = virtual - np.where(above, -1, before)  # as NumPy's (it cancels when before == after)
    s = sort(merged, axis=-1)
    lo, hi = st.gather(s, before, ndim_of(s) - 1), st.gather(s, after, ndim_of(s) - 1)
    rest = ndim_of(s) - 1
    perm = tuple(range(rest, rest + q.ndim)) + tuple(range(rest))
    lo, hi = st.transpose(lo, perm), st.transpose(hi, perm)
    t = gamma.reshape(q.shape + (1,) * rest)
    diff_ = ew.sub(hi, lo)
    result = ew.select(t >= 0.5, ew.sub(hi, ew.mul(diff_, 1 - t)), ew.add(lo, ew.mul(diff_, t)))
    result = _nan_if_any_nan(result, _take_last(s, [n - 1])[..., 0])
    return st.reshape(result, q.shape + kept) if keepdims else result


@numpy_function(np.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """Traced version of numpy.percentile."""
    if is_var(q):
        raise NotImplementedError("np.percentile with traced q is not supported; q must be known")
    q = np.true_divide(q, 100)
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return quantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights,
                    interpolation=interpolation)


# ---- weighted averages -------------------------------------------------------------------

@numpy_function(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Traced version of numpy.average."""
    a = to_float(asvar_or_array(a))
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        scale_ = float(reduced_size(a, axis))
    else:
        w = asvar_or_array(weights)
        if shape_of(w) != shape_of(a):
            w = _weights_along(w, a, axis)
        scale_ = sum(w, axis, keepdims=keepdims)
        if not is_var(scale_) and np.any(scale_ == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = ew.div(sum(ew.mul(a, w), axis, keepdims=keepdims), scale_)
    if returned:
        return avg, st.broadcast_to(asvar_or_array(scale_), shape_of(avg))
    return avg


def _weights_along(w, a, axis):
    """1-D weights laid along ``axis`` of ``a`` (NumPy's rule when the shapes differ)."""
    if axis is None:
        raise TypeError("Axis must be specified when shapes of a and weights differ.")
    if isinstance(axis, (tuple, list)):
        raise NotImplementedError("np.average with a tuple axis needs weights of a's shape")
    if ndim_of(w) != 1:
        raise TypeError("1D weights expected when shapes of a and weights differ.")
    axis = normalize_axis(axis, ndim_of(a))
    if shape_of(w)[0] != shape_of(a)[axis]:
        raise ValueError("Length of weights not compatible with specified axis.")
    place = [1] * ndim_of(a)
    place[axis] = shape_of(w)[0]
    return st.broadcast_to(st.reshape(w, tuple(place)), shape_of(a))


# ---- grids and differences ---------------------------------------------------------------

@numpy_function(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """``np.linspace`` with traced end points: ``start + i * step``, ``stop`` placed last."""
    if device not in (None, "cpu"):
        raise ValueError(f"Device not understood. Only \"cpu\" is allowed, but received: {device}")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if dtype is not None and np.dtype(dtype) != np.float64:
        raise NotImplementedError("newtonad's np.linspace computes in float64 only (dtype=)")
    div_ = (num - 1) if endpoint else num
    start, stop = to_float(asvar_or_array(start)), to_float(asvar_or_array(stop))
    delta = ew.sub(stop, start)
    y = np.arange(0, num, dtype=float).reshape((-1,) + (1,) * ndim_of(delta))
    if div_ > 0:
        step = ew.div(delta, float(div_))
        y = ew.mul(y, step)
    else:
        step = np.nan
        y = ew.mul(y, delta)
    y = ew.add(y, start)
    if endpoint and num > 1:
        last = st.broadcast_to(stop, (1,) + shape_of(y)[1:])
        y = st.concatenate([getitem(y, slice(0, num - 1)), last], 0)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    return (y, step) if retstep else y


@numpy_function(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """``np.gradient`` with scalar spacings (uniform grids); one array per axis."""
    f = to_float(asvar_or_array(f))
    ndim = ndim_of(f)
    axes = tuple(range(ndim)) if axis is None else tuple(
        normalize_axis(a, ndim) for a in np.atleast_1d(axis))
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    if builtins.any(np.ndim(h) != 0 for h in spacings):
        raise NotImplementedError("np.gradient with coordinate arrays as spacing is not "
                                  "supported; pass scalar spacings (a uniform grid)")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    return one_or_tuple([_gradient_along(f, ax, h, edge_order) for ax, h in zip(axes, spacings)])


def _gradient_along(f, axis, h, edge_order):
    n = shape_of(f)[axis]
    if n < edge_order + 1:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                         "least (edge_order + 1) elements are required.")

    def part(lo, hi):
        return take_range(f, axis, lo, hi)

    inner_ = ew.div(ew.sub(part(2, n), part(0, n - 2)), ew.mul(2.0, h))
    if edge_order == 1:
        first = ew.div(ew.sub(part(1, 2), part(0, 1)), h)
        last = ew.div(ew.sub(part(n - 1, n), part(n - 2, n - 1)), h)
    else:
        first = ew.add(ew.add(ew.mul(ew.div(-1.5, h), part(0, 1)),
                              ew.mul(ew.div(2.0, h), part(1, 2))),
                       ew.mul(ew.div(-0.5, h), part(2, 3)))
        last = ew.add(ew.add(ew.mul(ew.div(0.5, h), part(n - 3, n - 2)),
                             ew.mul(ew.div(-2.0, h), part(n - 2, n - 1))),
                      ew.mul(ew.div(1.5, h), part(n - 1, n)))
    return st.concatenate([first, inner_, last], axis)


# ---- np.fft: the real permutations; complex transforms are out of scope ------------------

def _shift_amounts(x, axes, sign):
    shape = shape_of(x)
    if axes is None:
        axes = tuple(range(len(shape)))
    if isinstance(axes, (int, np.integer)):
        return sign * (shape[axes] // 2), axes
    return [sign * (shape[ax] // 2) for ax in axes], tuple(axes)


@numpy_function(np.fft.fftshift)
def fftshift(x, axes=None):
    """Traced version of numpy.fft.fftshift."""
    shift, axes = _shift_amounts(asvar_or_array(x), axes, 1)
    return roll(x, shift, axes)


@numpy_function(np.fft.ifftshift)
def ifftshift(x, axes=None):
    """Traced version of numpy.fft.ifftshift."""
    shift, axes = _shift_amounts(asvar_or_array(x), axes, -1)
    return roll(x, shift, axes)


def _complex_out_of_scope(name):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"numpy.fft.{name} has complex values, which are out of scope "
                                  "in newtonad (real float64 derivatives only); fftshift and "
                                  "ifftshift are supported")
    refuse.__name__ = name
    return refuse


_FFT_COMPLEX = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
                "ifftn", "rfftn", "irfftn", "hfft", "ihfft"]


#: np.fft's complex transforms -> a function refusing them with the reason
COMPLEX_FFT_REFUSALS = {getattr(np.fft, name): numpy_function(getattr(np.fft, name), name=())(
    _complex_out_of_scope(name)) for name in _FFT_COMPLEX}
