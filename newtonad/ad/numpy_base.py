"""What every module of the NumPy layer shares: argument normalisation and conversions.

Axis and shape arithmetic on traced values and arrays alike, float promotion and
``astype``, and the errors for arguments newtonad cannot honour. The modules above it
(:mod:`.numpy_shapes`, :mod:`.numpy_indexing`, :mod:`.numpy_elementwise`,
:mod:`.numpy_reductions`, :mod:`.numpy_contractions`, :mod:`.numpy_statistics`) write
NumPy's functions with these; :mod:`.numpy_api` assembles their dispatch tables.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .dispatch import implements_method, numpy_function
from .primitives import elementwise as ew
from .primitives import structural as st
from .primitives.core import shape_of
from .var import Var


def asvar_or_array(x: Any) -> Any:
    """``x`` itself if it is traced, else ``np.asarray(x)``."""
    return x if isinstance(x, Var) else np.asarray(x)


@numpy_function(np.ndim, name=())
def ndim_of(x: Any) -> int:
    """The number of axes of a Var, an array or a Python number."""
    return len(shape_of(x))


numpy_function(np.shape, name=())(shape_of)


@numpy_function(np.size, name=())
def size(a: Any, axis: int | None = None) -> int:
    """Traced version of numpy.size (known while tracing)."""
    shape = shape_of(a)
    return int(np.prod(shape)) if axis is None else shape[axis]


@numpy_function(np.result_type, name=())
def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """Traced version of numpy.result_type: a traced value counts by its dtype."""
    return np.result_type(*[a.dtype if is_var(a) else a for a in arrays_and_dtypes])


def is_var(x: Any) -> bool:
    """Whether ``x`` is a traced value."""
    return isinstance(x, Var)


def size_of(a: Any) -> int:
    """The number of entries of ``a``."""
    return int(np.prod(shape_of(a), dtype=np.int64))


# ---- axes -------------------------------------------------------------------------------

def normalize_axis(axis: int, ndim: int) -> int:
    """``axis`` in ``range(ndim)``; NumPy's AxisError when it is out of bounds."""
    if not -ndim <= axis < builtins.max(ndim, 1):
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim if ndim else 0


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """An ``axis=`` argument (None, an int, a tuple) as sorted non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(normalize_axis(a, ndim) for a in axis))
    return (normalize_axis(axis, ndim),)


def reduced_size(a: Any, axis: Any) -> int:
    """How many entries of ``a`` a reduction over ``axis`` combines into one."""
    shape = shape_of(a)
    return int(np.prod([shape[i] for i in normalize_axes(axis, len(shape))], dtype=np.int64))


def take_range(a: Any, axis: int, start: int, stop: int | None, step: int = 1) -> Any:
    """``a[..., start:stop:step]`` along ``axis`` (the axes after it kept whole)."""
    shape = shape_of(a)
    slices = [(0, n, 1) for n in shape[:axis]] + [(start, stop, step)]
    return st.slice_(a, slices)


def one_or_tuple(results: list) -> Any:
    """A single result alone, several as a tuple (``np.atleast_1d``, ``np.gradient``)."""
    return results[0] if len(results) == 1 else tuple(results)


# ---- dtypes -----------------------------------------------------------------------------

def to_float(x: Any) -> Any:
    """A traced value of another dtype converted to float64; anything else unchanged."""
    if is_var(x) and x.dtype.kind != "f":
        return ew.convert(x, dtype="float64")
    return x


@numpy_function()
@implements_method("astype")
def astype(x, dtype, copy=True):
    """Traced version of numpy.astype."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f" and is_var(x) and x.dtype.kind == "f":
        raise TypeError(f"astype({dtype}) of a float array has no derivative; newtonad only "
                        "converts to float64 (use np.floor / np.round for rounding)")
    return ew.convert(x, dtype=dtype.name) if shape_of(x) is not None else x


def cast_to(a: Any, dtype: Any) -> Any:
    """``a`` converted to ``dtype`` first, as NumPy's reductions compute in ``dtype``."""
    return a if dtype is None else astype(a, dtype)


# ---- arguments newtonad cannot honour ------------------------------------------------------

def check_unsupported(name: str, **params: Any) -> None:
    """NotImplementedError naming each parameter given a value newtonad cannot honour."""
    bad = [k for k, v in params.items() if v is not None]
    if bad:
        fix = " (out= writes in place, which cannot be traced; use the returned value)" \
            if "out" in bad else ""
        raise NotImplementedError(f"newtonad's np.{name} does not support the argument(s) "
                                  f"{bad}{fix}")


def check_no_kwargs(name: str, kwargs: dict, allowed: dict | None = None) -> None:
    """NotImplementedError naming the keyword arguments (given a value) not in ``allowed``."""
    allowed = allowed or {}
    bad = [k for k, v in kwargs.items() if k not in allowed and v is not None]
    if bad:
        raise NotImplementedError(f"newtonad's np.{name} does not support the argument(s) {bad}")
