"""NumPy semantics on top of the primitives: the dispatch tables of the NumPy layer.

Each function of the layer takes what its NumPy namesake takes (Vars, arrays, Python
numbers) and writes it in primitives: ``np.mean`` is a sum and a division, ``np.dot`` and
``np.matmul`` are einsums, ``np.roll`` is a rotation per axis, indexing is
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
re-exports the functions other modules use (``npa.sum``, as :mod:`.numpy_linalg` and
:mod:`.numpy_special` write them) and keeps copies of the tables as these families left
them (:data:`UFUNCS`, :data:`UFUNC_REDUCE`, :data:`FUNCTIONS`).
"""

from __future__ import annotations

from typing import Any

# the seven families, imported for their registrations
from . import (  # noqa: F401
    dispatch,
    numpy_base,
    numpy_contractions,
    numpy_elementwise,
    numpy_indexing,
    numpy_reductions,
    numpy_shapes,
    numpy_statistics,
)

# the names other modules use as ``npa.<name>`` (a convenience, not a registration: a new
# function of the layer needs no line here)
from .numpy_base import asvar_or_array
from .numpy_contractions import diagonal, matmul, norm, trace
from .numpy_elementwise import (
    exp,
    exp2,
    log,
    log1p,
    log2,
    maximum,
    sin,
    square,
    stop_gradient,
    where,
)
from .numpy_indexing import getitem
from .numpy_reductions import max, sum
from .numpy_shapes import (
    array,
    broadcast_to,
    expand_dims,
    fold_objects,
    moveaxis,
    ravel,
    reshape,
    squeeze,
    stack,
    swapaxes,
    transpose,
)

# ---- what the seven families registered (a copy: numpy_linalg and numpy_special add more) ----

UFUNCS: dict[str, Any] = dict(dispatch.UFUNCS)
UFUNC_REDUCE: dict[str, Any] = dict(dispatch.UFUNC_REDUCE)
FUNCTIONS: dict[Any, Any] = dict(dispatch.FUNCTIONS)

__all__ = ["FUNCTIONS", "UFUNCS", "UFUNC_REDUCE", "array", "asvar_or_array", "broadcast_to",
           "diagonal", "exp", "exp2", "expand_dims", "fold_objects", "getitem", "log", "log1p",
           "log2", "matmul", "max", "maximum", "moveaxis", "norm", "ravel", "reshape", "sin",
           "square", "squeeze", "stack", "stop_gradient", "sum", "swapaxes", "trace",
           "transpose", "where"]
