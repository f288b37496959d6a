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

Each function is registered where it is defined, once, with
:func:`~newtonad.ad.dispatch.numpy_function` (``@numpy_function(np.sum, reduce="add",
method="sum")``): that one line puts it in the dispatch tables of :mod:`.dispatch`, where
Var's ``__array_ufunc__`` and ``__array_function__`` (NEP 13 / NEP 18) and its operators
find it, so ordinary ``np.*`` calls trace; in the :mod:`newtonad.numpy` namespace; and
among Var's methods. Importing this module loads the seven families (:mod:`.numpy_linalg`
and :mod:`.numpy_special` build on it and are loaded by :mod:`newtonad.numpy`). It also
re-exports the layer's functions: ``numpy_api.sum``, ``from .numpy_api import getitem``
(as :mod:`.numpy_linalg` and :mod:`.numpy_special` use them), and keeps copies of the
tables as these families left them (:data:`UFUNCS`, :data:`UFUNC_REDUCE`,
:data:`FUNCTIONS`).
"""

from __future__ import annotations

from typing import Any

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

# ---- what the seven families registered (a copy: numpy_linalg and numpy_special add more) ----

UFUNCS: dict[str, Any] = dict(dispatch.UFUNCS)
UFUNC_REDUCE: dict[str, Any] = dict(dispatch.UFUNC_REDUCE)
FUNCTIONS: dict[Any, Any] = dict(dispatch.FUNCTIONS)
