"""NumPy semantics on top of the primitives: the dispatch tables of the NumPy layer.

Each function of the layer takes what its NumPy namesake takes (Vars, arrays, Python
numbers) and writes it in primitives: ``np.mean`` is a sum and a division, ``np.dot`` and
``np.matmul`` are einsums, ``np.roll`` is a concatenation of two slices, indexing is
slicing plus a gather. Plain arrays in, plain NumPy out: with no Var among the
arguments, ``bind`` evaluates directly. The functions live in modules by kind:

* :mod:`.numpy_base` -- axis normalisation, float promotion, ``astype``, the errors for
  unsupported arguments (shared by all below);
* :mod:`.numpy_shapes` -- reshaping, joining, flips and rolls, ``np.array``, ``*_like``;
* :mod:`.numpy_indexing` -- ``x[key]``, ``take``, ``take_along_axis``, splitting;
* :mod:`.numpy_elementwise` -- ufuncs, ``power``, ``where``, ``clip``, ``select``;
* :mod:`.numpy_reductions` -- ``sum`` ... ``std``, ``logsumexp``, scans, NaN-skipping sums;
* :mod:`.numpy_contractions` -- ``einsum`` and the products written with it, diagonals,
  ``np.linalg.norm``;
* :mod:`.numpy_statistics` -- sorting, order statistics, ``average``, ``linspace``,
  ``gradient``, FFT shifts.

This module assembles their tables ``UFUNCS``, ``UFUNC_REDUCE`` and ``FUNCTIONS`` and
registers them in :mod:`.dispatch`, where Var's ``__array_ufunc__`` and
``__array_function__`` (NEP 13 / NEP 18) and its operators find them, so ordinary
``np.*`` calls trace. It also re-exports the layer's functions: ``numpy_api.sum``,
``from .numpy_api import getitem`` (as :mod:`newtonad.numpy`, :mod:`.numpy_linalg` and
:mod:`.numpy_special` use them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dispatch
from .numpy_base import astype, asvar_or_array, is_var, ndim_of  # noqa: F401
from .numpy_contractions import (  # noqa: F401
    diag,
    diagonal,
    dot,
    einsum,
    inner,
    matmul,
    norm,
    outer,
    tensordot,
    trace,
    vdot,
)
from .numpy_elementwise import (  # noqa: F401
    absolute,
    add,
    angle,
    arccos,
    arcsin,
    arctan,
    arctan2,
    ceil,
    clip,
    conjugate,
    cos,
    cosh,
    equal,
    exp,
    exp2,
    expm1,
    floor,
    greater,
    greater_equal,
    hypot,
    imag,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    positive,
    power,
    real,
    reciprocal,
    select,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    stop_gradient,
    subtract,
    tan,
    tanh,
    true_divide,
    where,
)
from .numpy_indexing import (  # noqa: F401
    array_split,
    dsplit,
    getitem,
    hsplit,
    split,
    take,
    take_along_axis,
    vsplit,
)
from .numpy_reductions import (  # noqa: F401
    cumprod,
    cumsum,
    diff,
    logsumexp,
    max,
    mean,
    min,
    nanmean,
    nansum,
    prod,
    std,
    sum,
    var,
)
from .numpy_shapes import (  # noqa: F401
    append,
    array,
    asarray,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_to,
    column_stack,
    concatenate,
    copy,
    expand_dims,
    flip,
    fliplr,
    flipud,
    fold_objects,
    full_like,
    hstack,
    moveaxis,
    ones_like,
    pad,
    ravel,
    repeat,
    reshape,
    roll,
    rollaxis,
    rot90,
    squeeze,
    stack,
    swapaxes,
    tile,
    transpose,
    vstack,
    zeros_like,
)
from .numpy_statistics import (  # noqa: F401
    COMPLEX_FFT_REFUSALS,
    argmax,
    argmin,
    argpartition,
    argsort,
    average,
    fftshift,
    gradient,
    ifftshift,
    linspace,
    median,
    partition,
    percentile,
    quantile,
    sort,
)
from .primitives.core import shape_of

UFUNCS: dict[str, Any] = {}
FUNCTIONS: dict[Any, Any] = {}

# ---- dispatch tables ----------------------------------------------------------------------

for _name in ["add", "subtract", "multiply", "negative", "positive", "true_divide", "power",
              "exp", "log", "log1p", "expm1", "sqrt", "square", "reciprocal", "sin", "cos",
              "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "absolute", "sign",
              "floor", "ceil", "arctan2", "less", "less_equal", "greater", "greater_equal",
              "equal", "not_equal", "logical_and", "logical_or", "logical_not", "maximum",
              "minimum", "log2", "log10", "exp2", "hypot", "logaddexp"]:
    UFUNCS[_name] = globals()[_name]
UFUNCS["divide"] = true_divide
UFUNCS["matmul"] = matmul  # a gufunc in NumPy 2
UFUNCS["fabs"] = absolute
UFUNCS["fmax"] = maximum
UFUNCS["fmin"] = minimum
UFUNCS["conjugate"] = conjugate

# ufunc.reduce on a Var (np.add.reduce, np.maximum.reduce, …)
UFUNC_REDUCE = {"add": sum, "multiply": prod, "maximum": max, "minimum": min}
dispatch.UFUNC_REDUCE.update(UFUNC_REDUCE)

_np_functions = {
    np.sum: sum, np.prod: prod, np.max: max, np.amax: max, np.min: min, np.amin: min,
    np.mean: mean, np.var: var, np.std: std, np.cumsum: cumsum, np.diff: diff,
    np.dot: dot, np.matmul: matmul, np.vdot: vdot, np.inner: inner, np.outer: outer,
    np.einsum: einsum, np.tensordot: tensordot, np.trace: trace, np.diagonal: diagonal,
    np.diag: diag, np.linalg.norm: norm,
    np.reshape: reshape, np.ravel: ravel, np.transpose: transpose, np.swapaxes: swapaxes,
    np.moveaxis: moveaxis, np.expand_dims: expand_dims, np.squeeze: squeeze,
    np.broadcast_to: broadcast_to, np.atleast_1d: atleast_1d, np.atleast_2d: atleast_2d,
    np.concatenate: concatenate, np.stack: stack, np.hstack: hstack, np.vstack: vstack,
    np.flip: flip, np.roll: roll, np.tile: tile, np.repeat: repeat, np.pad: pad,
    np.take: take, np.where: where, np.clip: clip, np.zeros_like: zeros_like,
    np.ones_like: ones_like, np.full_like: full_like, np.empty_like: zeros_like,
    np.copy: copy, np.shape: shape_of, np.ndim: ndim_of, np.size: lambda a, axis=None: (
        int(np.prod(shape_of(a))) if axis is None else shape_of(a)[axis]),
    np.result_type: lambda *args: np.result_type(*[a.dtype if is_var(a) else a for a in args]),
}
if hasattr(np, "concat"):
    _np_functions[np.concat] = concatenate
if hasattr(np, "permute_dims"):
    _np_functions[np.permute_dims] = transpose
FUNCTIONS.update(_np_functions)

# More of the NumPy surface (sorting, order statistics, splitting, grids, fft shifts).
FUNCTIONS.update({
    np.cumprod: cumprod, np.sort: sort, np.argsort: argsort, np.partition: partition,
    np.argpartition: argpartition, np.argmax: argmax, np.argmin: argmin,
    np.take_along_axis: take_along_axis, np.median: median, np.quantile: quantile,
    np.percentile: percentile, np.average: average, np.nansum: nansum, np.nanmean: nanmean,
    np.split: split, np.array_split: array_split, np.hsplit: hsplit, np.vsplit: vsplit,
    np.dsplit: dsplit, np.column_stack: column_stack, np.append: append,
    np.atleast_3d: atleast_3d, np.flipud: flipud, np.fliplr: fliplr, np.rot90: rot90,
    np.linspace: linspace, np.gradient: gradient, np.fft.fftshift: fftshift,
    np.fft.ifftshift: ifftshift, np.real: real, np.imag: imag, np.angle: angle,
    np.rollaxis: rollaxis, np.select: select,
    **COMPLEX_FFT_REFUSALS,
})
dispatch.UFUNCS.update(UFUNCS)
dispatch.FUNCTIONS.update(FUNCTIONS)
