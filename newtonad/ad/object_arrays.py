"""A traced array as a NumPy object array of its scalar entries.

``np.array([x[0], x[1]])`` and NumPy functions that do not dispatch to newtonad ask a
traced array for a NumPy array (``Var.__array__``); newtonad answers with an object
array of scalar Vars, which the first primitive it reaches folds back into one traced
array (:func:`newtonad.ad.numpy_api.fold_objects`). This module imports nothing of
newtonad: it needs only the array's shape, size and indexing.

One caller gets another answer: a ``scipy.sparse`` matrix meeting a traced operand
(``A @ x``, ``A.dot(x)``). scipy's matrix product asks ``np.asanyarray(other)`` and, when
that is a 0-d object array ("not interpretable as an array"), returns ``NotImplemented``
so that Python calls the other operand's ``__rmatmul__`` -- scipy's documented way of
deferring to a foreign operand. newtonad gives scipy that 0-d array, and
``Var.__rmatmul__`` records the product as a traced primitive
(:mod:`newtonad.ad.sparse_operands`).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

#: Entries beyond which a traced array is not split into an object array of scalars.
MAX_OBJECT_ENTRIES = 4096


def as_objects(var: Any) -> np.ndarray:
    """``var`` as an object array of scalar Vars (of itself, when it is a scalar).

    Called from ``Var.__array__``; when the caller of that is scipy.sparse's matrix
    product, a 0-d object array holding ``var`` (scipy then defers to ``var``), or, for
    scipy's checks that read only the number of axes, an empty array of as many axes.
    """
    caller = sys._getframe(2)
    asked_by = _scipy_sparse_caller(caller)
    if asked_by == _DEFER:
        out = np.empty((), dtype=object)
        out[()] = var
        return out
    if asked_by == _PROBE:
        return np.empty((0,) * max(len(var.shape), 1), dtype=object)
    if caller is not None and str(caller.f_globals.get("__name__")).startswith("scipy.sparse"):
        # scipy.sparse holds numbers only: an object array would fail there, less clearly
        raise TypeError(
            f"scipy.sparse's {caller.f_code.co_name} was given a traced value: of scipy.sparse "
            "on traced values, newtonad traces the products A @ x, A.dot(x), A.T @ y, x @ A "
            "(and A * x for the spmatrix classes). Write other operations with NumPy on those "
            "products, e.g. sp.diags(d) @ (A @ x) as d * (A @ x)")
    out = np.empty(var.shape, dtype=object)
    if var.shape == ():
        out[()] = var
        return out
    if var.size > MAX_OBJECT_ENTRIES:
        raise TypeError(
            f"NumPy asked for a traced array of {var.size} entries as a NumPy array (np.array "
            "or np.asarray of a list holding it, or a NumPy function that does not dispatch to "
            "newtonad); build arrays from traced parts with np.stack or np.concatenate")
    for index in np.ndindex(var.shape):
        out[index] = var[index]
    return out


# ---- scipy.sparse's matrix product, found by its code objects ---------------------------------

_DEFER, _PROBE = 1, 2
#: code object -> _DEFER (a matrix product that defers on a 0-d object array) or _PROBE
#: (a ``dot`` that only checks the operand's number of axes, then calls ``@``)
_CODES: dict[Any, int] = {}
_SCANNED: list[Any] = []  # the scipy.sparse module whose classes _CODES was built from


def _scipy_sparse_caller(frame: Any) -> int:
    """Whether ``frame`` runs scipy.sparse's matrix product (``_DEFER``), a ``dot`` that
    probes the operand (``_PROBE``), or neither (0)."""
    sparse = sys.modules.get("scipy.sparse")
    if sparse is None or frame is None:
        return 0
    if not _SCANNED or _SCANNED[0] is not sparse:
        _scan(sparse)
    return _CODES.get(frame.f_code, 0)


def _scan(sparse: Any) -> None:
    """Collect the code of every ``_matmul_dispatch`` and ``dot`` the public sparse
    classes define or inherit (scipy's base class and its COO class define their own)."""
    codes: dict[Any, int] = {}
    for name in dir(sparse):
        cls = getattr(sparse, name)
        if not isinstance(cls, type) or not cls.__module__.startswith("scipy.sparse"):
            continue
        for klass in cls.__mro__:
            for attr, role in (("_matmul_dispatch", _DEFER), ("dot", _PROBE)):
                fn = klass.__dict__.get(attr)
                code = getattr(fn, "__code__", None)
                if code is not None and "asanyarray" in code.co_names:
                    codes[code] = role
    _CODES.clear()
    _CODES.update(codes)
    _SCANNED[:] = [sparse]


__all__ = ["MAX_OBJECT_ENTRIES", "as_objects"]
