"""Reductions over static axes (no keepdims: the numpy layer reshapes), cumsum and the
linear scan under cumprod.

Axes always refer to primal axes; a frame's column axis is the last one and is never
reduced, so the same ``axes`` serve primal and tangent. ``reduce_sum`` is defined with
``broadcast_to`` (:mod:`.structural`), whose transpose it is.

What the engine and re-rolling need to know about a reduction besides its rules is one
:class:`Reduction` record in :data:`REDUCTIONS` (at the end of this module), keyed by the
primitive: where an accumulator starts, how a value is folded into it, whether threads
may fold partial results. A new reduction is a ``Primitive`` of kind ``"reduction"`` and
one :func:`register_reduction` call; no engine module names it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..program import Slot
from .core import Primitive, aval_of, is_undef, shape_of
from .elementwise import add, convert, div, eq, mul, select, sub
from .structural import (
    broadcast_to,
    expand_reduced,
    keepdims_shape,
    lift,
    reduce_sum,
    reduce_sum_p,
    reduced_shape,
    slice_,
    summed_dtype,
    summed_shape,
    unslice,
)


def _extremum_jvp(frame, primals, tangents, out, *, axes):
    (x,), (t,) = primals, tangents
    if t is None:
        return None
    # The tangent of the max is the mean tangent over the positions that attain it.
    hit = convert(eq(x, expand_reduced(out, x.aval.shape, axes)), dtype="float64")
    share = div(hit, expand_reduced(reduce_sum(hit, axes=axes), x.aval.shape, axes))
    return reduce_sum(mul(t, lift(frame, share)), axes=axes)


reduce_max_p = Primitive("reduce_max", impl=lambda x, *, axes: np.max(x, axis=axes),
                         shape=reduced_shape, jvp=_extremum_jvp, kind="reduction")
reduce_min_p = Primitive("reduce_min", impl=lambda x, *, axes: np.min(x, axis=axes),
                         shape=reduced_shape, jvp=_extremum_jvp, kind="reduction")


def _prod_jvp(frame, primals, tangents, out, *, axes):
    (x,), (t,) = primals, tangents
    if t is None:
        return None
    return reduce_sum(mul(t, lift(frame, _prod_of_others(x, out, axes))), axes=axes)


def _prod_of_others(x, out, axes):
    """``prod_{j != i} x_j`` for every entry ``i`` of the reduced axes, without 0/0.

    Where ``x_i != 0`` it is ``out / x_i`` (exact to every order: the derivative of
    ``out`` is this rule again). Where ``x_i == 0`` it is ``P * E_i``: ``P`` is the
    product of the nonzero entries, and ``E_i``, the product of the *other* zero
    entries, is 1 with no other zero, ``x_m`` (written ``S - x_i``, ``S`` the sum of
    the zero entries) with one other zero at ``m``, and 0 with more. Value, gradient
    and Hessian are exact wherever zeros are; the third derivative is not at 3 zeros.
    """
    shape = x.aval.shape
    zero = eq(x, 0.0)
    nonzero_x = select(zero, 1.0, x)
    n_zeros = expand_reduced(reduce_sum(convert(zero, dtype="float64"), axes=axes), shape, axes)
    p_nonzero = expand_reduced(reduce_prod(nonzero_x, axes=axes), shape, axes)
    s_zeros = expand_reduced(reduce_sum(select(zero, x, 0.0), axes=axes), shape, axes)
    other_zeros = select(eq(n_zeros, 1.0), 1.0,
                         select(eq(n_zeros, 2.0), sub(s_zeros, x), 0.0))
    return select(zero, mul(p_nonzero, other_zeros),
                  div(expand_reduced(out, shape, axes), nonzero_x))


reduce_prod_p = Primitive("reduce_prod", impl=lambda x, *, axes: np.prod(x, axis=axes),
                          shape=summed_shape, jvp=_prod_jvp, kind="reduction")


def _cumsum_impl(x, *, axis, reverse):
    x = np.asarray(x)
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
    return np.cumsum(x, axis=axis)


def _cumsum_shape(x: Slot, *, axis: int, reverse: bool) -> Slot:
    if not 0 <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of range for shape {x.shape}")
    return Slot(x.shape, summed_dtype(x.dtype))


cumsum_p = Primitive(
    "cumsum", impl=_cumsum_impl, shape=_cumsum_shape,
    jvp=lambda frame, p, t, out, *, axis, reverse: cumsum(t[0], axis=axis, reverse=reverse),
    # The transpose of a running sum is the running sum from the other end.
    transpose=lambda ct, x, *, axis, reverse: [cumsum(ct, axis=axis, reverse=not reverse)],
    kind="scan")


# ---- linear_scan: y_i = a_i * y_(i-1) + b_i (cumprod, and its own derivatives) -------------

def _scan_impl(a, b, *, axis, reverse):
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    a, b = np.moveaxis(a, axis, 0), np.moveaxis(b, axis, 0)
    if reverse:
        a, b = a[::-1], b[::-1]
    y = np.empty(b.shape)
    carry = np.zeros(b.shape[1:])
    for i in range(b.shape[0]):  # a recurrence: each step needs the one before
        carry = a[i] * carry + b[i]
        y[i] = carry
    return np.moveaxis(y[::-1] if reverse else y, 0, axis)


def _scan_shape(a: Slot, b: Slot, *, axis: int, reverse: bool) -> Slot:
    if a.shape != b.shape:
        raise ValueError(f"linear_scan needs operands of one shape, got {a.shape} and {b.shape}")
    if not 0 <= axis < a.ndim:
        raise ValueError(f"axis {axis} is out of range for shape {a.shape}")
    return Slot(a.shape, "float64")


def shift_along(x, axis: int, reverse: bool):
    """``x`` moved one step along ``axis`` (``y_i = x_(i-1)``, or ``x_(i+1)`` reversed), 0 in."""
    shape = shape_of(x)
    n = shape[axis]
    lead = [(0, m, 1) for m in shape[:axis]]
    if n <= 1:
        return mul(x, 0.0)
    kept = slice_(x, lead + [(1, n, 1) if reverse else (0, n - 1, 1)])
    return unslice(kept, shape, lead + [(0, n - 1, 1) if reverse else (1, n, 1)])


def _scan_jvp(frame, primals, tangents, out, *, axis, reverse):
    (a, _), (ta, tb) = primals, tangents
    # d y_i = a_i d y_(i-1) + (d a_i y_(i-1) + d b_i): the same recurrence on new inputs.
    from_a = None if ta is None else mul(ta, lift(frame, shift_along(out, axis, reverse)))
    drive = from_a if tb is None else (tb if from_a is None else add(from_a, tb))
    if drive is None:
        return None
    return linear_scan(lift(frame, a), drive, axis=axis, reverse=reverse)


def _scan_transpose(ct, a, b, *, axis, reverse):
    if is_undef(a) or not is_undef(b):
        raise ValueError("linear_scan is linear in b only, with a known")
    # y = L b with L lower triangular, L_ij = a_(j+1) ... a_i; L^T runs the other way.
    return [None, linear_scan(shift_along(a, axis, not reverse), ct, axis=axis,
                              reverse=not reverse)]


linear_scan_p = Primitive("linear_scan", impl=_scan_impl, shape=_scan_shape, jvp=_scan_jvp,
                          transpose=_scan_transpose, linear_in=(1,), kind="scan",
                          numpy_only=True)


def linear_scan(a, b, *, axis, reverse=False):
    """``y_i = a_i y_(i-1) + b_i`` along ``axis`` (from the end if ``reverse``), ``y_(-1) = 0``.

    ``a`` and ``b`` broadcast against each other (a tangent frame against a lifted primal).
    """
    shape = tuple(np.broadcast_shapes(shape_of(a), shape_of(b)))
    a = broadcast_to(convert(a, dtype="float64") if aval_dtype(a) != "float64" else a, shape)
    b = broadcast_to(convert(b, dtype="float64") if aval_dtype(b) != "float64" else b, shape)
    return linear_scan_p(a, b, axis=int(axis), reverse=bool(reverse))


def cumprod(x, *, axis):
    """Running product along ``axis``: ``linear_scan`` with ``a = x`` started at ``x_0``."""
    shape = shape_of(x)
    lead = [(0, m, 1) for m in shape[:axis]]
    first = unslice(slice_(x, lead + [(0, 1, 1)]), shape, lead + [(0, 1, 1)])
    return linear_scan(x, first, axis=axis)


# ---- the reductions as data ----------------------------------------------------------------

@dataclass(frozen=True)
class Reduction:
    """What the engine, re-rolling and sparsity read about one reduction primitive.

    The fold must be a monoid's operation (associative, with ``identity`` its unit): the
    engine folds values into a local accumulator and then folds that into the target,
    and sums over row blocks, with the same statement.

    Attributes
    ----------
    primitive : Primitive
        The reduction (kind ``"reduction"``, params ``axes``).
    identity : callable
        ``identity(dtype) -> value`` an accumulator of ``dtype`` starts from.
    fold : tuple of str
        The numba source folding ``{value}`` into ``{target}``, one string per line
        (later lines indented as written). One line assigns the target every time; more
        lines (a test, then an assignment) assign it under a condition.
    thread_combinable : bool
        A float64 scalar target may be folded per chunk of a parallel loop, each chunk
        from ``identity``, the chunks' results folded in chunk order after the loop.
    batches : bool
        Re-rolling may turn the reduction of each iteration's block into one reduction
        of the stacked blocks (the same elements per output; a sum's order may change).
    """

    primitive: Primitive
    identity: Callable[[str], Any]
    fold: tuple[str, ...]
    thread_combinable: bool = False
    batches: bool = False

    @property
    def unconditional(self) -> bool:
        """The fold assigns its target every time (liveness: a definite assignment)."""
        return len(self.fold) == 1

    def fold_lines(self, target: str, value: str, indent: str = "") -> list[str]:
        """The fold of ``value`` into ``target`` as source lines."""
        return [indent + line.format(target=target, value=value) for line in self.fold]


#: Primitive -> its :class:`Reduction` record.
REDUCTIONS: dict[Primitive, Reduction] = {}


def register_reduction(primitive: Primitive, *, identity: Callable[[str], Any],
                       fold: tuple[str, ...], thread_combinable: bool = False,
                       batches: bool = False) -> Reduction:
    """Record ``primitive`` as a reduction the engine lowers (see :class:`Reduction`).

    Parameters
    ----------
    primitive : Primitive
        A primitive of kind ``"reduction"`` with an ``axes`` param.
    identity, fold, thread_combinable, batches
        The fields of :class:`Reduction`.

    Returns
    -------
    Reduction
        The record, also stored in :data:`REDUCTIONS`.
    """
    if primitive.kind != "reduction":
        raise ValueError(f"{primitive.name} is of kind {primitive.kind!r}, not 'reduction'")
    if primitive in REDUCTIONS:
        raise ValueError(f"reduction {primitive.name!r} is registered twice")
    record = Reduction(primitive, identity, tuple(fold), thread_combinable, batches)
    REDUCTIONS[primitive] = record
    return record


def _lowest(dtype: str) -> Any:
    """The least value of ``dtype`` (the identity of max)."""
    if dtype == "bool":
        return False
    if dtype == "int64":
        return int(np.iinfo(np.int64).min)
    return float("-inf")


def _highest(dtype: str) -> Any:
    """The greatest value of ``dtype`` (the identity of min)."""
    if dtype == "bool":
        return True
    if dtype == "int64":
        return int(np.iinfo(np.int64).max)
    return float("inf")


# NaN wins max and min: once the target is NaN, ``value > target`` never holds again.
# Only sums of blocks are batched by re-rolling (loops of max, min or prod of blocks stay
# unrolled, as they were before these records).
_REPLACE = "    {target} = {value}"
register_reduction(reduce_sum_p, identity=lambda dtype: 0, fold=("{target} += {value}",),
                   thread_combinable=True, batches=True)
register_reduction(reduce_prod_p, identity=lambda dtype: 1, fold=("{target} *= {value}",),
                   thread_combinable=True)
register_reduction(reduce_max_p, identity=_lowest,
                   fold=("if {value} > {target} or {value} != {value}:", _REPLACE))
register_reduction(reduce_min_p, identity=_highest,
                   fold=("if {value} < {target} or {value} != {value}:", _REPLACE))


def reduce_max(x, *, axes): return reduce_max_p(x, axes=tuple(axes))
def reduce_min(x, *, axes): return reduce_min_p(x, axes=tuple(axes))
def reduce_prod(x, *, axes): return reduce_prod_p(x, axes=tuple(axes))
def cumsum(x, *, axis, reverse=False): return cumsum_p(x, axis=axis, reverse=reverse)


def aval_dtype(x: Any) -> str:
    return aval_of(x).dtype


__all__ = ["linear_scan", "cumprod", "reduce_sum", "reduce_sum_p", "reduce_max", "reduce_min",
           "reduce_prod", "cumsum", "expand_reduced", "keepdims_shape", "Reduction",
           "REDUCTIONS", "register_reduction"]
