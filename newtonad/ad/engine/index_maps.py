"""Index maps: how a fused loop nest addresses each slot it reads or writes.

An axis index is a :data:`~.loop_ir.Dim` ``(loop variable or None, scale, offset)``
(``var * scale + offset``); a slot's :data:`~.loop_ir.IMap` has one per axis. The
planner (:mod:`.numba_plan`) gives each sink's value an index map in its nest's
space and walks back through the steps that feed it: :func:`operand_maps` says where
each operand of a fused step is read, given where its output is.
"""

from __future__ import annotations

from ..program import Slot, Step
from .kinds import BROADCAST_TO, ELEMENTWISE, RESHAPE, SLICE, TRANSPOSE
from .loop_ir import Dim, IMap

ZERO: Dim = (None, 0, 0)


def squeeze(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The iteration space of ``shape``: its axes of length other than one."""
    return tuple(n for n in shape if n != 1)


def identity_map(shape: tuple[int, ...]) -> IMap:
    """Index ``shape`` by the loop variables of ``squeeze(shape)``, in order."""
    dims, var = [], 0
    for n in shape:
        if n == 1:
            dims.append(ZERO)
        else:
            dims.append((var, 1, 0))
            var += 1
    return tuple(dims)


def broadcast_map(out: IMap, out_shape: tuple[int, ...], in_shape: tuple[int, ...]) -> IMap:
    """The index map of an operand broadcast (NumPy rules) to ``out_shape``."""
    lead = len(out_shape) - len(in_shape)
    return tuple(ZERO if n == 1 else out[lead + d] for d, n in enumerate(in_shape))


def shift(d: Dim, start: int, step: int) -> Dim:
    """``start + step * d``."""
    var, scale, offset = d
    if var is None:
        return (None, 0, start + step * offset)
    return (var, scale * step, start + step * offset)


def is_unit_reshape(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> bool:
    """True when a reshape only inserts or removes axes of length one."""
    return squeeze(in_shape) == squeeze(out_shape)


def unit_reshape_map(out: IMap, out_shape: tuple[int, ...], in_shape: tuple[int, ...]) -> IMap:
    real = iter(d for d, n in zip(out, out_shape) if n != 1)
    return tuple(ZERO if n == 1 else next(real) for n in in_shape)


def operand_maps(step: Step, out: IMap, slots: tuple[Slot, ...]) -> list[IMap]:
    """Index maps of a fusable step's operands, given the map of its output."""
    prim, kw = step.primitive, step.kwargs
    out_shape = slots[step.output].shape
    shapes = [slots[i].shape for i in step.inputs]
    if prim in ELEMENTWISE or prim is BROADCAST_TO:
        return [broadcast_map(out, out_shape, s) for s in shapes]
    if prim is SLICE:
        sl = kw["slices"]
        return [tuple(shift(d, sl[a][0], sl[a][2]) if a < len(sl) else d
                      for a, d in enumerate(out))]
    if prim is TRANSPOSE:
        perm = kw["perm"]
        m: list[Dim] = [ZERO] * len(perm)
        for i, p in enumerate(perm):
            m[p] = out[i]
        return [tuple(m)]
    if prim is RESHAPE:
        return [unit_reshape_map(out, out_shape, shapes[0])]
    raise AssertionError(prim)


def map_vars(m: IMap) -> int:
    """The loop depth an index map needs: one more than its deepest variable."""
    return max((d[0] + 1 for d in m if d[0] is not None), default=0)


__all__ = ["ZERO", "squeeze", "identity_map", "broadcast_map", "shift", "is_unit_reshape",
           "unit_reshape_map", "operand_maps", "map_vars"]
