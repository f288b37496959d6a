"""NumPy's shape functions on traced arrays: reshaping, joining, flipping, array building.

Each one is a structural primitive or a few (``reshape``, ``transpose``, ``broadcast_to``,
``concatenate``, ``slice_``, ``roll``, ``gather``): ``np.stack`` is a concatenation of
expanded arrays, ``np.roll`` a rotation per axis, ``np.tile`` a broadcast between two
reshapes. Also the arrays built from values: ``np.array`` of (lists of) traced values,
``zeros_like`` and friends, ``copy``.
"""

from __future__ import annotations

import builtins

import numpy as np

from .dispatch import implements_method, numpy_function
from .numpy_base import (
    astype,
    asvar_or_array,
    cast_to,
    check_no_kwargs,
    check_unsupported,
    is_var,
    ndim_of,
    normalize_axes,
    normalize_axis,
    one_or_tuple,
    size_of,
)
from .primitives import elementwise as ew
from .primitives import structural as st
from .primitives.core import shape_of
from .var import Var, const_var

# ---- axes and shapes ---------------------------------------------------------------------

@numpy_function(np.reshape)
def reshape(a, newshape=None, order="C", *, shape=None, copy=None):
    """Traced version of numpy.reshape."""
    # copy= changes memory only; traced values are immutable, so any value is exact
    if order != "C":
        raise NotImplementedError("only order='C' reshapes are supported")
    newshape = shape if shape is not None else newshape
    if isinstance(newshape, (int, np.integer)):
        newshape = (int(newshape),)
    newshape = list(newshape)
    size = int(np.prod(shape_of(a), dtype=np.int64))
    if -1 in newshape:
        i = newshape.index(-1)
        rest = int(np.prod([n for j, n in enumerate(newshape) if j != i], dtype=np.int64))
        newshape[i] = size // rest if rest else 0
    return st.reshape(a, tuple(newshape))


@numpy_function(np.ravel, method=("ravel", "flatten"))
def ravel(a, order="C"):
    """Traced version of numpy.ravel."""
    return reshape(a, (-1,), order)


@numpy_function(np.transpose, getattr(np, "permute_dims", None))
def transpose(a, axes=None):
    """Traced version of numpy.transpose."""
    n = ndim_of(a)
    axes = tuple(reversed(range(n))) if axes is None else tuple(normalize_axis(i, n) for i in axes)
    return st.transpose(a, axes)


@numpy_function(np.swapaxes, method="swapaxes")
def swapaxes(a, axis1, axis2):
    """Traced version of numpy.swapaxes."""
    n = ndim_of(a)
    perm = list(range(n))
    i, j = normalize_axis(axis1, n), normalize_axis(axis2, n)
    perm[i], perm[j] = perm[j], perm[i]
    return st.transpose(a, perm)


@numpy_function(np.moveaxis)
def moveaxis(a, source, destination):
    """Traced version of numpy.moveaxis."""
    n = ndim_of(a)
    src = [normalize_axis(s, n) for s in np.atleast_1d(source)]
    dst = [normalize_axis(d, n) for d in np.atleast_1d(destination)]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return st.transpose(a, order)


@numpy_function(np.rollaxis, name=())
def rollaxis(a, axis, start=0):
    """``np.rollaxis``: ``axis`` moved to before ``start`` (NumPy's legacy rule)."""
    n = ndim_of(a)
    axis = normalize_axis(axis, n)
    if not -n <= start <= n:
        raise np.exceptions.AxisError(f"start arg requires {-n} <= start < {n + 1} but {start} "
                                      "was passed in")
    start = start + n if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a


@numpy_function(np.expand_dims)
def expand_dims(a, axis):
    """Traced version of numpy.expand_dims."""
    shape = list(shape_of(a))
    axes = sorted(normalize_axis(i, len(shape) + len(np.atleast_1d(axis)))
                  for i in np.atleast_1d(axis))
    for i in axes:
        shape.insert(i, 1)
    return st.reshape(a, tuple(shape))


@numpy_function(np.squeeze, method="squeeze")
def squeeze(a, axis=None):
    """Traced version of numpy.squeeze."""
    shape = shape_of(a)
    if axis is None:
        axes = tuple(i for i, n in enumerate(shape) if n == 1)
    else:
        axes = normalize_axes(axis, len(shape))
    for i in axes:
        if shape[i] != 1:
            raise ValueError(f"cannot squeeze axis {i} of size {shape[i]}")
    return st.reshape(a, tuple(n for i, n in enumerate(shape) if i not in axes))


@numpy_function(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    """Traced version of numpy.broadcast_to."""
    if not isinstance(shape, tuple):
        shape = tuple(np.atleast_1d(shape).tolist())
    return st.broadcast_to(array, shape)


@numpy_function(np.atleast_1d)
def atleast_1d(*arys):
    """Traced version of numpy.atleast_1d."""
    return one_or_tuple([reshape(a, (1,)) if ndim_of(a) == 0 else asvar_or_array(a) for a in arys])


@numpy_function(np.atleast_2d)
def atleast_2d(*arys):
    """Traced version of numpy.atleast_2d."""
    out = []
    for a in arys:
        a = asvar_or_array(a)
        out.append(st.reshape(a, (1,) * (2 - ndim_of(a)) + shape_of(a)) if ndim_of(a) < 2 else a)
    return one_or_tuple(out)


@numpy_function(np.atleast_3d)
def atleast_3d(*arys):
    """Traced version of numpy.atleast_3d."""
    out = []
    for a in arys:
        a = asvar_or_array(a)
        shape = shape_of(a)
        new = {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}.get(len(shape), shape)
        out.append(st.reshape(a, new))
    return one_or_tuple(out)


# ---- joining -----------------------------------------------------------------------------

def _joined(arrays, dtype, casting):
    """The operands of a join, converted to ``dtype`` first as NumPy does."""
    if casting not in ("same_kind", "unsafe", "safe", None):
        raise NotImplementedError(f"casting={casting!r} is not supported (same_kind, safe and "
                                  "unsafe are)")
    return [cast_to(asvar_or_array(a), dtype) for a in arrays]


@numpy_function(np.concatenate, getattr(np, "concat", None), name=("concatenate", "concat"))
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Traced version of numpy.concatenate.

    ``out=`` is not supported (it writes in place); use the returned value.
    """
    check_unsupported("concatenate", out=out)
    arrays = _joined(arrays, dtype, casting)
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    return st.concatenate(arrays, normalize_axis(axis, ndim_of(arrays[0])))


@numpy_function(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Traced version of numpy.stack.

    ``out=`` is not supported (it writes in place); use the returned value.
    """
    check_unsupported("stack", out=out)
    arrays = _joined(arrays, dtype, casting)
    axis = normalize_axis(axis, ndim_of(arrays[0]) + 1)
    return st.concatenate([expand_dims(a, axis) for a in arrays], axis)


@numpy_function(np.hstack)
def hstack(tup, *, dtype=None, casting="same_kind"):
    """Traced version of numpy.hstack."""
    arrays = [atleast_1d(asvar_or_array(a)) for a in tup]
    return concatenate(arrays, 0 if ndim_of(arrays[0]) == 1 else 1, dtype=dtype, casting=casting)


@numpy_function(np.vstack)
def vstack(tup, *, dtype=None, casting="same_kind"):
    """Traced version of numpy.vstack."""
    return concatenate([atleast_2d(asvar_or_array(a)) for a in tup], 0, dtype=dtype,
                       casting=casting)


@numpy_function(np.column_stack)
def column_stack(tup):
    """Traced version of numpy.column_stack."""
    arrays = [array(a) for a in tup]
    arrays = [st.reshape(a, (size_of(a), 1)) if ndim_of(a) < 2 else a for a in arrays]
    return concatenate(arrays, 1)


@numpy_function(np.append)
def append(arr, values, axis=None):
    """Traced version of numpy.append."""
    arr, values = array(arr), array(values)
    if axis is None:
        arr = ravel(arr) if ndim_of(arr) != 1 else arr
        values, axis = ravel(values), ndim_of(arr) - 1
    return concatenate((arr, values), axis=axis)


# ---- flips, rolls, repeats and padding ---------------------------------------------------

@numpy_function(np.flip)
def flip(m, axis=None):
    """Traced version of numpy.flip."""
    n = ndim_of(m)
    axes = normalize_axes(axis, n)
    slices = [(n_ - 1, None, -1) if i in axes else (0, n_, 1) for i, n_ in enumerate(shape_of(m))]
    return st.slice_(m, slices)


@numpy_function(np.flipud)
def flipud(m):
    """Traced version of numpy.flipud."""
    if ndim_of(m) < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


@numpy_function(np.fliplr)
def fliplr(m):
    """Traced version of numpy.fliplr."""
    if ndim_of(m) < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


@numpy_function(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    """Traced version of numpy.rot90."""
    axes = tuple(axes)
    ndim = ndim_of(m)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == ndim:
        raise ValueError("Axes must be different.")
    if not all(-ndim <= ax < ndim for ax in axes):
        raise ValueError(f"Axes={axes} out of range for array of ndim={ndim}.")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    perm = list(range(ndim))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return st.transpose(flip(m, axes[1]), perm)
    return flip(st.transpose(m, perm), axes[1])


@numpy_function(np.roll)
def roll(a, shift, axis=None):
    """Traced version of numpy.roll."""
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), shape_of(a))
    if isinstance(axis, (tuple, list)):
        shifts = np.broadcast_to(shift, (len(axis),))
        for s, ax in zip(shifts, axis):
            a = roll(a, int(s), ax)
        return a
    return st.roll(a, int(shift), normalize_axis(axis, ndim_of(a)))


@numpy_function(np.tile)
def tile(A, reps):
    """Traced version of numpy.tile."""
    reps = tuple(np.atleast_1d(reps).tolist())
    shape = shape_of(A)
    d = builtins.max(len(shape), len(reps))
    shape = (1,) * (d - len(shape)) + shape
    reps = (1,) * (d - len(reps)) + reps
    x = st.reshape(A, tuple(v for n in shape for v in (1, n)))
    x = st.broadcast_to(x, tuple(v for r, n in zip(reps, shape) for v in (r, n)))
    return st.reshape(x, tuple(r * n for r, n in zip(reps, shape)))


@numpy_function(np.repeat, method="repeat")
def repeat(a, repeats, axis=None):
    """Traced version of numpy.repeat."""
    if np.ndim(repeats) != 0:
        raise NotImplementedError("newtonad's np.repeat supports one repeat count for all elements")
    r = int(repeats)
    if axis is None:
        a, axis = ravel(a), 0
    shape = shape_of(a)
    axis = normalize_axis(axis, len(shape))
    x = st.reshape(a, shape[:axis + 1] + (1,) + shape[axis + 1:])
    x = st.broadcast_to(x, shape[:axis + 1] + (r,) + shape[axis + 1:])
    return st.reshape(x, shape[:axis] + (shape[axis] * r,) + shape[axis + 1:])


@numpy_function(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    """Traced version of numpy.pad."""
    shape = shape_of(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (len(shape), 2))
    if mode == "constant":
        value = kwargs.pop("constant_values", 0)
        check_no_kwargs("pad", kwargs)
        if np.ndim(value) != 0:
            raise NotImplementedError("pad: per-axis constant_values are not supported")
        out_shape = tuple(int(n + lo + hi) for n, (lo, hi) in zip(shape, widths))
        slices = [(int(lo), int(lo + n), 1) for n, (lo, hi) in zip(shape, widths)]
        out = st.unslice(array, out_shape, slices)
        if value != 0:
            border = np.full(out_shape, float(value))
            border[tuple(slice(*s) for s in slices)] = 0.0
            out = ew.add(out, border)
        return out
    check_no_kwargs("pad", kwargs)
    if mode not in ("edge", "wrap", "reflect", "symmetric"):
        raise NotImplementedError(f"pad mode {mode!r} is not supported (constant, edge, wrap, "
                                  "reflect, symmetric are)")
    for axis, (lo, hi) in enumerate(widths):
        # Padding the positions 0..n-1 with NumPy itself gives the source of every entry.
        index = np.pad(np.arange(shape_of(array)[axis]), (int(lo), int(hi)), mode=mode)
        array = st.gather(array, np.asarray(index, dtype=np.int64), axis)
    return array


# ---- arrays from values ------------------------------------------------------------------

@numpy_function(np.zeros_like, np.empty_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Traced version of numpy.zeros_like."""
    return full_like(a, 0.0, dtype, order, subok, shape, device=device)


@numpy_function(np.ones_like)
def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Traced version of numpy.ones_like."""
    return full_like(a, 1.0, dtype, order, subok, shape, device=device)


@numpy_function(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Traced version of numpy.full_like."""
    # order= and subok= change memory layout and subclass only, not values
    if device not in (None, "cpu"):
        raise ValueError(f"Device not understood. Only \"cpu\" is allowed, but received: {device}")
    dtype = np.dtype(dtype or (a.dtype if is_var(a) else np.asarray(a).dtype))
    c = Var(np.asarray(fill_value, dtype=dtype), const=True)
    shape = shape_of(a) if shape is None else tuple(np.atleast_1d(shape).tolist())
    return c if shape == () else st.broadcast_to(c, shape)


@numpy_function(np.copy)
def copy(a, order="K", subok=False):
    """Traced version of numpy.copy."""
    return a  # traced values are immutable: a copy is the value itself


@implements_method("fold_objects")
def fold_objects(value: np.ndarray) -> Var | None:
    """One traced array from an object array of Vars and numbers; ``None`` if it holds no Var.

    NumPy makes such arrays from lists of traced values (``np.array([a, b])``, ``np.r_``,
    ``np.append(x, [t, 8.0])``); this is where they become one program value again
    (``bind`` calls it, through :mod:`.dispatch`, on any object array it meets).
    """
    entries = list(value.flat)
    like = next((e for e in entries if isinstance(e, Var)), None)
    if like is None:
        return None
    bad = next((e for e in entries if not isinstance(e, (Var, bool, int, float, np.number))), None)
    if bad is not None or any(isinstance(e, Var) and e.shape != () for e in entries):
        held = type(bad).__name__ if bad is not None else "an array"
        raise TypeError(f"an array built from traced values holds {held}"
                        "; build it with np.stack or np.concatenate of arrays of one shape")
    parts = [st.reshape(e if isinstance(e, Var) else const_var(e, like), (1,)) for e in entries]
    flat = parts[0] if len(parts) == 1 else st.concatenate(parts, 0)
    return st.reshape(flat, tuple(value.shape))


def _contains_var(obj) -> bool:
    if isinstance(obj, Var):
        return True
    return isinstance(obj, (list, tuple)) and builtins.any(_contains_var(o) for o in obj)


@numpy_function(name=("array", "asarray"))
def array(obj, dtype=None, *, ndmin=0, **kwargs):
    """Traced version of numpy.array and numpy.asarray.

    It also accepts (nested) lists of traced values, by stacking them, and the object
    arrays NumPy's own ``np.array`` makes of them, by folding them.
    """
    if isinstance(obj, np.ndarray) and obj.dtype == object:
        folded = fold_objects(obj)
        obj = obj if folded is None else folded
    if isinstance(obj, Var) or _contains_var(obj):
        out = obj if isinstance(obj, Var) else stack([array(o) for o in obj])
        out = out if dtype is None else astype(out, dtype)
        return st.reshape(out, (1,) * (ndmin - ndim_of(out)) + shape_of(out))
    return np.array(obj, dtype=dtype, ndmin=ndmin, **kwargs)


asarray = array
