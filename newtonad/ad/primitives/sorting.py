"""Primitives whose outputs are integer positions computed from values: argsort,
argpartition, argmax, argmin.

They have no tangent (an index does not move under a small perturbation), so their
jvp is a symbolic zero. ``np.sort`` and friends gather the values with these
positions, and the gather carries the derivative. NumPy evaluates them (no numba
lowering): a program that uses one runs on the NumPy evaluator.
"""

from __future__ import annotations

import numpy as np

from ..program import Slot
from .core import Primitive


def _check_axis(x: Slot, axis: int) -> None:
    if not 0 <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of range for shape {x.shape}")


def _positions_shape(x: Slot, *, axis: int, **_) -> Slot:
    _check_axis(x, axis)
    return Slot(x.shape, "int64")


def _reduced_positions_shape(x: Slot, *, axis: int) -> Slot:
    _check_axis(x, axis)
    return Slot(x.shape[:axis] + x.shape[axis + 1:], "int64")


def _no_tangent(frame, primals, tangents, out, **params):
    return None


argsort_p = Primitive(
    "argsort", impl=lambda x, *, axis, kind: np.argsort(x, axis=axis, kind=kind).astype(np.int64),
    shape=_positions_shape, jvp=_no_tangent, kind="positions",
    numpy_only=True)
argpartition_p = Primitive(
    "argpartition",
    impl=lambda x, *, kth, axis: np.argpartition(x, kth, axis=axis).astype(np.int64),
    shape=_positions_shape, jvp=_no_tangent, kind="positions",
    numpy_only=True)
argmax_p = Primitive(
    "argmax", impl=lambda x, *, axis: np.argmax(x, axis=axis).astype(np.int64),
    shape=_reduced_positions_shape, jvp=_no_tangent, kind="positions",
    numpy_only=True)
argmin_p = Primitive(
    "argmin", impl=lambda x, *, axis: np.argmin(x, axis=axis).astype(np.int64),
    shape=_reduced_positions_shape, jvp=_no_tangent, kind="positions",
    numpy_only=True)


def argsort(x, *, axis: int, kind: str | None = "stable"):
    """The sorting permutation along ``axis``; ``kind`` as NumPy's (it orders ties)."""
    return argsort_p(x, axis=int(axis), kind=kind)


def argpartition(x, *, kth: tuple[int, ...], axis: int):
    return argpartition_p(x, kth=tuple(int(k) for k in kth), axis=int(axis))


def argmax(x, *, axis: int):
    return argmax_p(x, axis=int(axis))


def argmin(x, *, axis: int):
    return argmin_p(x, axis=int(axis))
