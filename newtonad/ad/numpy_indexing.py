"""Taking parts of traced arrays: NumPy indexing, ``take``, ``take_along_axis``, splitting.

``x[key]`` is a slice for the basic part of the key (integers, slices, ``None``,
``...``) and a gather for integer-array indices, laid out by NumPy's rules; constant
boolean masks become the integer positions they select. Traced integer indices are
allowed (wrapped when negative); traced boolean masks are not (their count depends on
values).
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from .dispatch import implements_method, numpy_function
from .numpy_base import (
    asvar_or_array,
    check_unsupported,
    is_var,
    ndim_of,
    normalize_axis,
    size_of,
)
from .numpy_shapes import ravel
from .primitives import elementwise as ew
from .primitives import structural as st
from .primitives.core import shape_of

# ---- integer index arrays ----------------------------------------------------------------

def normalize_index(idx, n: int):
    """Integer index arrays: constants checked and made non-negative; traced ones wrapped."""
    if is_var(idx):
        if idx.dtype.kind not in "iu":
            raise IndexError(_ARRAY_INDEX_MESSAGE)
        return ew.select(ew.lt_p(idx, 0), ew.add(idx, n), idx)
    idx = np.asarray(idx)
    if idx.dtype.kind not in "iu" and not (idx.size == 0 and idx.dtype.kind == "f"):
        raise IndexError(_ARRAY_INDEX_MESSAGE)
    idx = idx.astype(np.int64)
    if idx.size and (idx.max() >= n or idx.min() < -n):
        raise IndexError(f"index {idx.max() if idx.max() >= n else idx.min()} is out of bounds "
                         f"for axis of size {n}")
    return np.where(idx < 0, idx + n, idx).astype(np.int64)


_ARRAY_INDEX_MESSAGE = "arrays used as indices must be of integer (or boolean) type"


_INDEX_MESSAGE = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                  "integer or boolean arrays are valid indices")


# ---- x[key] ------------------------------------------------------------------------------

def _is_array_index(k) -> bool:
    return is_var(k) or isinstance(k, (list, tuple, np.ndarray))


def _is_bool_index(k) -> bool:
    """A boolean scalar or a constant boolean array (NumPy: a mask, adding or taking axes)."""
    if isinstance(k, (bool, np.bool_)):
        return True
    return isinstance(k, (list, tuple, np.ndarray)) and np.asarray(k).dtype == np.bool_


def _check_index_types(key: tuple) -> None:
    for k in key:
        if (k is None or k is Ellipsis or isinstance(k, (slice, bool, np.bool_))
                or _is_array_index(k)):
            continue
        try:
            operator.index(k)
        except TypeError:
            raise IndexError(_INDEX_MESSAGE) from None


def _by_numpy(x, key: tuple):
    """A constant key NumPy resolves itself: the flat positions it picks, one gather."""
    positions = np.arange(size_of(x), dtype=np.int64).reshape(shape_of(x))[key]
    return st.gather(ravel(x), positions, 0)


def _check_mask_shape(x, key: tuple, j: int) -> None:
    """NumPy's IndexError when a boolean mask does not match the axes it covers."""
    def consumed(k):
        if k is None or k is Ellipsis:
            return 0
        return np.ndim(k) if _is_bool_index(k) else 1

    shape = shape_of(x)
    start = (len(shape) - builtins.sum(consumed(k) for k in key[j:])
             if builtins.any(k is Ellipsis for k in key[:j])
             else builtins.sum(consumed(k) for k in key[:j]))
    mask_shape = np.shape(key[j])
    for d, m in enumerate(mask_shape):
        n = shape[start + d] if start + d < len(shape) else None
        if n != m:
            raise IndexError(f"boolean index did not match indexed array along axis "
                             f"{start + d}; size of axis is {n} but size of corresponding "
                             f"boolean axis is {m}")


def _plain_bounds(key: slice) -> bool:
    """Whether a slice's start, stop and step are Python ints or None."""
    return all([b is None or b.__class__ is int for b in (key.start, key.stop, key.step)])


@numpy_function()
@implements_method("getitem")
def getitem(x, key):
    """``x[key]`` with NumPy's indexing rules, on traced or plain arrays.

    Basic slicing, None, Ellipsis, integer arrays and boolean arrays (known masks only).

    Parameters
    ----------
    x : array_like or Var
        The array indexed.
    key : int, slice, None, Ellipsis, array_like or tuple of these
        The index, as in ``x[key]``.

    Returns
    -------
    Var or ndarray
        The selected entries (a Var when ``x`` or ``key`` is traced).

    Raises
    ------
    IndexError
        For a traced boolean mask: it selects a value-dependent number of entries; use
        ``np.where(mask, x, 0)`` instead.

    Examples
    --------
    >>> import numpy as np, newtonad.numpy as nnp
    >>> nnp.getitem(np.arange(6.0).reshape(2, 3), (slice(None), 1))
    array([1., 4.])
    """
    if key.__class__ is slice and is_var(x) and _plain_bounds(key):
        shape = shape_of(x)
        if shape:  # x[a:b:c], the commonest index of a traced loop: one slice step
            return st.slice_(x, (st.normalize_slice(key, shape[0]),)
                             + tuple([(0, n, 1) for n in shape[1:]]))
    if not isinstance(key, tuple):
        key = (key,)
    _check_index_types(key)
    for k in key:
        if is_var(k) and k.dtype == np.bool_:
            raise IndexError("boolean mask indexing with a traced mask selects a value-dependent "
                             "number of elements and cannot be traced; use np.where(mask, x, 0)")
    traced = builtins.any(is_var(k) for k in key)
    masks = builtins.any(_is_bool_index(k) for k in key)
    advanced = builtins.any(_is_array_index(k) for k in key)
    if not traced and (masks or (advanced and builtins.any(k is None for k in key))):
        return _by_numpy(x, key)
    if masks and builtins.any(isinstance(k, (bool, np.bool_)) for k in key):
        raise NotImplementedError("a boolean scalar index together with a traced index array "
                                  "is not supported; add the axis with np.expand_dims")
    # Constant boolean masks beside traced indices become integer indices (known count).
    expanded = []
    for j, k in enumerate(key):
        if _is_bool_index(k):
            _check_mask_shape(x, key, j)
            expanded.extend(np.nonzero(np.asarray(k)))
        else:
            expanded.append(k)
    key = tuple(expanded)
    n_real = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    if builtins.sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis")
    ndim = ndim_of(x)
    if n_real > ndim:
        raise IndexError(f"too many indices: array is {ndim}-dimensional, but {n_real} were "
                         "indexed")
    if Ellipsis in [k for k in key if not _is_array_index(k)]:
        i = next(i for i, k in enumerate(key) if k is Ellipsis and not _is_array_index(k))
        key = key[:i] + (slice(None),) * (ndim - n_real) + key[i + 1:]
    n_now = builtins.sum(1 for k in key if k is not None)
    key = key + (slice(None),) * (ndim - n_now)
    advanced = any(_is_array_index(k) for k in key)
    if advanced and any(k is None for k in key):
        raise NotImplementedError("mixing None (np.newaxis) with integer-array indexing is not "
                                  "supported; add the axis with np.expand_dims afterwards")
    shape = shape_of(x)
    slices, squeeze_axes, out_shape, adv = [], [], [], []
    axis = 0
    for k in key:
        if k is None:
            out_shape.append(1)
            continue
        n = shape[axis]
        if isinstance(k, slice):
            s = st.normalize_slice(k, n)
            slices.append(s)
            out_shape.append(len(range(n)[slice(*s)]))
        elif _is_array_index(k) or advanced:  # integers join the advanced indices
            adv.append((axis, k))
            slices.append((0, n, 1))
            out_shape.append(n)
        else:
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            i %= n
            slices.append((i, i + 1, 1))
            squeeze_axes.append(len(out_shape))
            out_shape.append(1)
        axis += 1
    x = st.slice_(x, slices)
    if adv:
        return _advanced(x, adv)
    out_shape_final = [n for i, n in enumerate(out_shape) if i not in squeeze_axes]
    return st.reshape(x, tuple(out_shape_final))


def _advanced(x, adv):
    """Gather for integer-array indices (NumPy's rules for where result axes go)."""
    shape = shape_of(x)
    axes = [a for a, _ in adv]
    idxs = [normalize_index(k, shape[a]) for a, k in adv]
    contiguous = axes == list(range(axes[0], axes[0] + len(axes)))
    if not contiguous:  # NumPy puts the broadcast index axes first
        rest = [i for i in range(len(shape)) if i not in axes]
        x = st.transpose(x, axes + rest)
        shape = shape_of(x)
        axes = list(range(len(axes)))
    p = axes[0]
    if len(axes) == 1:
        return st.gather(x, idxs[0], p)
    # Several index arrays: merge their axes and use one flat (row-major) index.
    sizes = [shape[a] for a in axes]
    strides = [int(np.prod(sizes[i + 1:], dtype=np.int64)) for i in range(len(sizes))]
    flat = idxs[0] if strides[0] == 1 else ew.mul(idxs[0], strides[0])
    for idx, s in zip(idxs[1:], strides[1:]):
        flat = ew.add(flat, idx if s == 1 else ew.mul(idx, s))
    merged = st.reshape(x, shape[:p] + (int(np.prod(sizes)),) + shape[p + len(axes):])
    return st.gather(merged, flat, p)


# ---- gathers along one axis --------------------------------------------------------------

@numpy_function(np.take, method="take")
def take(a, indices, axis=None, out=None, mode="raise"):
    """Traced version of numpy.take.

    ``out=`` is not supported (it writes in place); use the returned value.
    """
    check_unsupported("take", out=out)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, ndim_of(a))
    n = shape_of(a)[axis]
    if mode in ("wrap", "clip") and n:
        if is_var(indices):
            raise NotImplementedError(f"np.take(mode={mode!r}) with traced indices is not "
                                      "supported")
        indices = np.asarray(indices)
        indices = indices % n if mode == "wrap" else np.clip(indices, 0, n - 1)
    elif mode != "raise":
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    return st.gather(a, normalize_index(indices, n), axis)


@numpy_function(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    """Traced version of numpy.take_along_axis.

    One flat gather, the other axes indexed by constants.
    """
    if axis is None:
        return take_along_axis(ravel(arr), indices, 0)
    shape, ishape = shape_of(arr), shape_of(indices)
    if len(ishape) != len(shape):
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = normalize_axis(axis, len(shape))
    out_shape = tuple(ishape[d] if d == axis else np.broadcast_shapes((shape[d],), (ishape[d],))[0]
                      for d in range(len(shape)))
    strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
    flat_const = np.zeros(out_shape, dtype=np.int64)
    for d in range(len(shape)):
        if d != axis and shape[d] != 1:
            place = [1] * len(shape)
            place[d] = shape[d]
            flat_const = flat_const + np.arange(shape[d]).reshape(place) * strides[d]
    idx = normalize_index(indices, shape[axis])
    flat = ew.add(ew.mul(idx, strides[axis]) if strides[axis] != 1 else idx, flat_const)
    return st.gather(ravel(arr), flat, 0)


# ---- splitting ---------------------------------------------------------------------------

@numpy_function(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    """Traced version of numpy.array_split."""
    ary = asvar_or_array(ary)
    axis = normalize_axis(axis, ndim_of(ary))
    n = shape_of(ary)[axis]
    if np.ndim(indices_or_sections) == 0:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        sizes = [0] + extra * [each + 1] + (sections - extra) * [each]
        points = np.cumsum(sizes).tolist()
    else:
        points = [0] + list(indices_or_sections) + [n]
    lead = (slice(None),) * axis
    return [getitem(ary, lead + (slice(int(lo), int(hi)),)) for lo, hi in zip(points, points[1:])]


@numpy_function(np.split)
def split(ary, indices_or_sections, axis=0):
    """Traced version of numpy.split."""
    if np.ndim(indices_or_sections) == 0:
        n = shape_of(ary)[normalize_axis(axis, ndim_of(ary))]
        if n % int(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


@numpy_function(np.hsplit)
def hsplit(ary, indices_or_sections):
    """Traced version of numpy.hsplit."""
    if ndim_of(ary) == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if ndim_of(ary) > 1 else 0)


@numpy_function(np.vsplit)
def vsplit(ary, indices_or_sections):
    """Traced version of numpy.vsplit."""
    if ndim_of(ary) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


@numpy_function(np.dsplit)
def dsplit(ary, indices_or_sections):
    """Traced version of numpy.dsplit."""
    if ndim_of(ary) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)
