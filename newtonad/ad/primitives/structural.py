"""Structural primitives: reshape, transpose, broadcast, slicing, concatenation, gather,
and ``reduce_sum``, the transpose of ``broadcast_to`` (each one's transpose rule is the
other, so they live together).

All are linear in their array operand. Their jvp applies the same operation to the
tangent frame, extended by the frame's trailing column axis; their transposes move
cotangents back (a slice's transpose embeds into zeros, a gather's is a scatter-add).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..program import Slot
from ..var import Var
from .core import Algebra, Frame, Primitive, UndefPrimal, shape_of

# ---- reshape ---------------------------------------------------------------------------

def _reshape_shape(x: Slot, *, shape: tuple[int, ...]) -> Slot:
    if int(np.prod(shape, dtype=np.int64)) != x.size:
        raise ValueError(f"cannot reshape an array of shape {x.shape} into shape {shape}")
    return Slot(tuple(shape), x.dtype)


def _reshape_weight(in_avals, out_aval: Slot) -> int | None:
    """Free when it only adds or drops unit axes (a fused loop indexes through it); a
    reshape that moves elements cannot be recomputed inside a loop nest."""
    def squeezed(shape):
        return tuple(n for n in shape if n != 1)
    return 0 if squeezed(in_avals[0].shape) == squeezed(out_aval.shape) else None


reshape_p = Primitive(
    "reshape", impl=lambda x, *, shape: np.reshape(x, shape), shape=_reshape_shape,
    jvp=lambda frame, p, t, out, *, shape: reshape(t[0], shape + frame.cols),
    transpose=lambda ct, x, *, shape: [reshape(ct, x.shape)],
    kind="structural", weight=_reshape_weight,
    algebra=Algebra(collapses=True, transparent=True))


def reshape(x, shape):
    shape = tuple(int(n) for n in shape)
    return x if shape_of(x) == shape else reshape_p(x, shape=shape)


# ---- transpose ---------------------------------------------------------------------------

def _transpose_shape(x: Slot, *, perm: tuple[int, ...]) -> Slot:
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"axes {perm} are not a permutation of the {x.ndim} axes")
    return Slot(tuple(x.shape[i] for i in perm), x.dtype)


def _with_frame(perm: tuple[int, ...], t: Any) -> tuple[int, ...]:
    return perm + tuple(range(len(perm), len(shape_of(t))))


def _inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation that undoes ``perm``."""
    return tuple(np.argsort(perm).tolist())


transpose_p = Primitive(
    "transpose", impl=lambda x, *, perm: np.transpose(x, perm), shape=_transpose_shape,
    jvp=lambda frame, p, t, out, *, perm: transpose(t[0], _with_frame(perm, t[0])),
    transpose=lambda ct, x, *, perm: [transpose(ct, _with_frame(_inverse(perm), ct))],
    kind="structural", weight=0)


def transpose(x, perm):
    perm = tuple(int(i) for i in perm)
    return x if perm == tuple(range(len(perm))) else transpose_p(x, perm=perm)


# ---- broadcast_to (NumPy rules: new leading axes, size-1 axes stretched) ------------------

def _broadcast_shape(x: Slot, *, shape: tuple[int, ...]) -> Slot:
    if np.broadcast_shapes(x.shape, shape) != tuple(shape):
        raise ValueError(f"cannot broadcast shape {x.shape} to {shape}")
    return Slot(tuple(shape), x.dtype)


def _broadcast_jvp(frame, primals, tangents, out, *, shape):
    # A frame x.shape + (k,) right-aligns with shape + (k,): NumPy's rule does the rest.
    return broadcast_to(tangents[0], shape + frame.cols)


broadcast_to_p = Primitive(
    "broadcast_to", impl=lambda x, *, shape: np.broadcast_to(x, shape),
    shape=_broadcast_shape, jvp=_broadcast_jvp,
    transpose=lambda ct, x, *, shape: [unbroadcast(ct, x.shape)],
    kind="structural", weight=0, algebra=Algebra(transparent=True))


def broadcast_to(x, shape):
    shape = tuple(int(n) for n in shape)
    return x if shape_of(x) == shape else broadcast_to_p(x, shape=shape)


# ---- slice and its transpose, unslice (embed into zeros) --------------------------------
# A slice is a tuple of (start, stop, step) per leading axis, normalised so that the
# Python slice(start, stop, step) selects exactly the intended elements (stop may be
# None for a negative step running through index 0).

def _slice_len(n: int, start: int, stop: int | None, step: int) -> int:
    return len(range(n)[slice(start, stop, step)])


def _as_slices(slices) -> tuple[slice, ...]:
    return tuple(slice(a, b, c) for a, b, c in slices)


def _slice_shape(x: Slot, *, slices) -> Slot:
    if len(slices) > x.ndim:
        raise ValueError(f"too many slices ({len(slices)}) for shape {x.shape}")
    lens = tuple(_slice_len(n, *s) for n, s in zip(x.shape, slices))
    return Slot(lens + x.shape[len(slices):], x.dtype)


slice_p = Primitive(
    "slice", impl=lambda x, *, slices: np.asarray(x)[_as_slices(slices)], shape=_slice_shape,
    jvp=lambda frame, p, t, out, *, slices: slice_(t[0], slices),
    transpose=lambda ct, x, *, slices: [unslice(ct, x.shape, slices)],
    kind="structural", weight=0)


def _unslice_impl(y, *, shape, slices):
    y = np.asarray(y)
    out = np.zeros(shape + y.shape[len(shape):], dtype=y.dtype)
    out[_as_slices(slices)] = y
    return out


def _unslice_shape(y: Slot, *, shape, slices) -> Slot:
    inner = _slice_shape(Slot(tuple(shape), y.dtype), slices=slices)
    if inner.shape != y.shape[:len(shape)]:
        raise ValueError(f"cannot place shape {y.shape} at {slices} of shape {shape}")
    return Slot(tuple(shape) + y.shape[len(shape):], y.dtype)


unslice_p = Primitive(
    "unslice", impl=_unslice_impl, shape=_unslice_shape,
    jvp=lambda frame, p, t, out, *, shape, slices: unslice(t[0], shape, slices),
    transpose=lambda ct, y, *, shape, slices: [slice_(ct, slices)], kind="structural")


def slice_(x, slices):
    slices = tuple([(int(a), None if b is None else int(b), int(c)) for a, b, c in slices])
    for n, s in zip(shape_of(x), slices):
        if s[2] != 1 or _slice_len(n, *s) != n:
            return slice_p(x, slices=slices)
    return x  # every axis whole


def unslice(y, shape, slices):
    """Zeros of ``shape`` (plus ``y``'s trailing frame axes) with ``y`` at ``slices``."""
    return unslice_p(y, shape=tuple(int(n) for n in shape),
                     slices=tuple((int(a), None if b is None else int(b), int(c))
                                  for a, b, c in slices))


def normalize_slice(s: slice, n: int) -> tuple[int, int | None, int]:
    start, stop, step = s.indices(n)
    if step < 0 and stop < 0:
        stop = None
    return (start, stop, step)


# ---- concatenate ---------------------------------------------------------------------------

def _concat_shape(*xs: Slot, axis: int) -> Slot:
    first = xs[0]
    if not 0 <= axis < first.ndim:
        raise ValueError(f"axis {axis} is out of range for shape {first.shape}")
    for x in xs[1:]:
        if x.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, first.shape))
                                       if i != axis):
            raise ValueError(f"cannot concatenate shapes {[x.shape for x in xs]} along axis {axis}")
    size = sum(x.shape[axis] for x in xs)
    dtype = np.result_type(*(np.dtype(x.dtype) for x in xs)).name
    return Slot(first.shape[:axis] + (size,) + first.shape[axis + 1:], dtype)


def _concat_jvp(frame, primals, tangents, out, *, axis):
    parts = [t if t is not None else zeros(shape_of(p) + frame.cols)
             for p, t in zip(primals, tangents)]
    return concatenate(parts, axis)


def _concat_transpose(ct, *xs, axis):
    cts, start = [], 0
    for x in xs:
        n = shape_of(x)[axis]
        if isinstance(x, UndefPrimal):
            s = [(0, m, 1) for m in shape_of(ct)[:axis]] + [(start, start + n, 1)]
            cts.append(slice_(ct, s))
        else:
            cts.append(None)
        start += n
    return cts


concatenate_p = Primitive(
    "concatenate", impl=lambda *xs, axis: np.concatenate(xs, axis=axis), shape=_concat_shape,
    jvp=_concat_jvp, transpose=_concat_transpose, linear_in="all", kind="structural")


def concatenate(xs, axis):
    xs = list(xs)
    if len(xs) == 1:
        return xs[0]
    rotation = _rotation(xs, int(axis))
    if rotation is not None:
        return roll(rotation[0], rotation[1], int(axis))
    return concatenate_p(*xs, axis=int(axis))


def _rotation(xs: list[Any], axis: int) -> tuple[Var, int] | None:
    """``(x, s)`` when ``xs`` are ``x[n-s:]`` and ``x[:n-s]`` along ``axis`` (np.roll's
    two pieces, or a periodic stencil's), else ``None``.

    Written as a rotation, the step's tangent is one rotation instead of two slices and
    a concatenation, and its transpose one rotation back instead of two slices, two
    embeddings into zeros and a sum.
    """
    if len(xs) != 2:
        return None
    ops = [x.creator if isinstance(x, Var) else None for x in xs]
    if ops[0] is None or ops[1] is None or ops[0].primitive is not slice_p \
            or ops[1].primitive is not slice_p or ops[0].args[0] is not ops[1].args[0]:
        return None
    source = ops[0].args[0]
    shape = shape_of(source)
    pieces = []
    for op in ops:
        slices = op.params["slices"]
        if len(slices) <= axis or slices[axis][2] != 1 or any(
                s != (0, shape[a], 1) for a, s in enumerate(slices) if a != axis):
            return None
        pieces.append(slices[axis])
    (head, head_stop, _), (tail, tail_stop, _) = pieces
    n = shape[axis]
    if head_stop == n and tail == 0 and tail_stop == head and 0 < head < n:
        return source, n - head
    return None


# ---- roll: a rotation along one axis ---------------------------------------------------

def _roll_impl(x, *, shift, axis):
    # np.roll's own argument handling costs 4x the copy on a stencil's small arrays
    x = np.asarray(x)
    whole = (slice(None),) * axis
    keep = x.shape[axis] - shift
    return np.concatenate((x[whole + (slice(keep, None),)], x[whole + (slice(0, keep),)]), axis)


roll_p = Primitive(
    "roll", impl=_roll_impl,
    shape=lambda x, *, shift, axis: x,
    jvp=lambda frame, p, t, out, *, shift, axis: roll(t[0], shift, axis),
    transpose=lambda ct, x, *, shift, axis: [roll(ct, -shift, axis)], kind="structural")


def roll(x, shift: int, axis: int):
    """``np.roll(x, shift, axis)`` of one axis (of ``x``'s leading ones in a frame)."""
    n = shape_of(x)[axis]
    s = int(shift) % n if n else 0
    return x if s == 0 else roll_p(x, shift=s, axis=int(axis))


# ---- gather (np.take along an axis) and scatter_add, its transpose -----------------------

def _gather_shape(x: Slot, idx: Slot, *, axis: int) -> Slot:
    if np.dtype(idx.dtype).kind not in "iu":
        raise TypeError(f"gather needs integer indices, got {idx.dtype}")
    if not 0 <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of range for shape {x.shape}")
    return Slot(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype)


def _gather_transpose(ct, x, idx, *, axis):
    if isinstance(idx, UndefPrimal):
        raise ValueError("gather is not linear in its indices")
    return [scatter_add(ct, idx, axis, x.shape), None]


gather_p = Primitive(
    "gather", impl=lambda x, idx, *, axis: np.take(x, idx, axis=axis), shape=_gather_shape,
    jvp=lambda frame, p, t, out, *, axis: None if t[0] is None else gather(t[0], p[1], axis),
    transpose=_gather_transpose, kind="gather")


def _scatter_add_impl(y, idx, *, axis, shape):
    y = np.asarray(y)
    idx = np.asarray(idx)
    full_shape = tuple(shape) + y.shape[axis + idx.ndim + len(shape) - axis - 1:]
    out = np.zeros(full_shape, dtype=y.dtype)
    moved = np.moveaxis(out, axis, 0)
    # Bring the gathered axes to the front, matching np.add.at's first-axis indexing.
    y_front = np.moveaxis(y, tuple(range(axis, axis + idx.ndim)), tuple(range(idx.ndim)))
    np.add.at(moved, idx, y_front)
    return out


def _scatter_add_shape(y: Slot, idx: Slot, *, axis: int, shape) -> Slot:
    expected = tuple(shape[:axis]) + idx.shape + tuple(shape[axis + 1:])
    if y.shape[:len(expected)] != expected:
        raise ValueError(f"scatter_add of shape {y.shape} does not fit indices {idx.shape} "
                         f"into {shape} along axis {axis}")
    return Slot(tuple(shape) + y.shape[len(expected):], y.dtype)


def _scatter_add_transpose(ct, y, idx, *, axis, shape):
    return [gather(ct, idx, axis), None]


def _scatter_add_sparsity(in_avals, out_aval, consts, *, axis, shape):
    # Each entry of y lands on one output entry: gather the output's entry numbers.
    y, idx = in_avals
    if consts[1] is None:  # indices computed from values: any entry along the axis
        return ["dense", None]
    targets = np.take(np.arange(out_aval.size).reshape(out_aval.shape), consts[1], axis=axis)
    return [(targets.ravel(), np.arange(y.size)), None]


scatter_add_p = Primitive(
    "scatter_add", impl=_scatter_add_impl, shape=_scatter_add_shape,
    jvp=lambda frame, p, t, out, *, axis, shape: (
        None if t[0] is None else scatter_add(t[0], p[1], axis, shape)),
    transpose=_scatter_add_transpose, kind="gather", sparsity=_scatter_add_sparsity)


def gather(x, idx, axis):
    return gather_p(x, idx, axis=int(axis))


def scatter_add(y, idx, axis, shape):
    return scatter_add_p(y, idx, axis=int(axis), shape=tuple(int(n) for n in shape))


# ---- reduce_sum: the transpose of broadcasting --------------------------------------------
# Axes always refer to primal axes; a frame's column axis is the last one and is never
# reduced, so the same ``axes`` serve primal and tangent. No keepdims: the NumPy layer
# reshapes.

def reduced_shape(x: Slot, *, axes: tuple[int, ...]) -> Slot:
    for a in axes:
        if not 0 <= a < x.ndim:
            raise ValueError(f"axis {a} is out of range for shape {x.shape}")
    return Slot(tuple(n for i, n in enumerate(x.shape) if i not in axes), x.dtype)


def summed_dtype(dtype: str) -> str:
    """The dtype NumPy gives a sum, product or running sum of ``dtype``: a bool's is int64
    (``np.sum(x > 0)`` counts), int64 and float64 stay as they are."""
    return "int64" if dtype == "bool" else dtype


def summed_shape(x: Slot, *, axes: tuple[int, ...]) -> Slot:
    """``reduced_shape`` with NumPy's dtype of a sum or product (:func:`summed_dtype`)."""
    out = reduced_shape(x, axes=axes)
    return out if x.dtype != "bool" else Slot(out.shape, summed_dtype(x.dtype))


def keepdims_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def expand_reduced(y: Any, in_shape: tuple[int, ...], axes: tuple[int, ...]) -> Any:
    """Reshape a reduced value (or frame) so it broadcasts against the unreduced one."""
    tail = shape_of(y)[len(in_shape) - len(axes):]  # a frame's column axis, if any
    return reshape(y, keepdims_shape(in_shape, axes) + tail)


def _sum_transpose(ct, x, *, axes):
    return [broadcast_to(expand_reduced(ct, x.shape, axes), x.shape)]


reduce_sum_p = Primitive(
    "reduce_sum", impl=lambda x, *, axes: np.sum(x, axis=axes), shape=summed_shape,
    jvp=lambda frame, p, t, out, *, axes: reduce_sum(t[0], axes=axes),
    transpose=_sum_transpose, kind="reduction")


def reduce_sum(x, *, axes): return reduce_sum_p(x, axes=tuple(axes))


def unbroadcast(ct: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``ct`` down to ``shape``: the transpose of NumPy broadcasting."""
    ct_shape = shape_of(ct)
    if ct_shape == shape:
        return ct
    lead = len(ct_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and ct_shape[lead + i] != 1)
    summed = reduce_sum(ct, axes=axes) if axes else ct
    return reshape(summed, shape)


# ---- frames: primals lifted against tangent frames, zero frames ----------------------------

def lift(frame: Frame, x: Any) -> Any:
    """A primal of shape ``s`` made to broadcast against tangents: ``s + (1,)`` for frames."""
    return reshape(x, shape_of(x) + (1,)) if frame.framed else x


def zeros(shape: tuple[int, ...], dtype: str = "float64") -> Any:
    """A float zero array of ``shape``, as a broadcast scalar (never materialised in code)."""
    z = Var(np.zeros((), dtype=dtype), const=True)
    return z if shape == () else broadcast_to(z, shape)
