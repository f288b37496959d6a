"""The exact check of a candidate group: position by position, the slots of its ``m``
iterations must be isomorphic with element reads affine in the iteration number; each
position becomes a *vector node*, built as new steps (strided slices, gathers, array
constants, batched elementwise steps, reductions and einsums).
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from ..primitives.core import const_p
from ..primitives.linalg import einsum_p
from ..primitives.reductions import REDUCTIONS
from ..primitives.structural import gather_p, reshape_p, slice_p
from ..program import ArrayConst, Slot, Step
from .candidates import Structure
from .limits import Bail


class Group:
    """Builds the vector nodes of one candidate group; raises Bail when it cannot."""

    def __init__(self, owner: Structure, m: int, lowest_acc: int):
        self.owner = owner
        self.m = m
        self.lowest_acc = lowest_acc
        self.first_new = len(owner.slots)
        self.new_slots: list[Slot] = []
        self.steps: list[Step] = []
        self.memo: dict[tuple[int, ...], tuple[str, int]] = {}
        self.flat: dict[int, int] = {}      # array slot -> its flattened copy
        self.private: list[tuple[int, ...]] = []  # computed per-iteration slots
        self.vectors: list[tuple[str, int]] = []  # the vector node of each position

    def slot(self, i: int) -> Slot:
        return self.owner.slots[i] if i < self.first_new else self.new_slots[i - self.first_new]

    def emit(self, primitive: Any, inputs: tuple[int, ...], params: tuple) -> int:
        aval = primitive.abstract_eval(*(self.slot(i) for i in inputs), **dict(params))
        self.new_slots.append(aval)
        out = self.first_new + len(self.new_slots) - 1
        self.steps.append(Step(primitive, inputs, params, out))
        return out

    def finish(self, final: Step) -> None:
        """Append the step writing the group's result into an existing slot."""
        aval = final.primitive.abstract_eval(*(self.slot(i) for i in final.inputs),
                                             **final.kwargs)
        if aval != self.owner.slots[final.output]:
            raise Bail(0)
        self.steps.append(final)

    def _forbidden(self, slot: int) -> bool:
        return self.owner.chain_pos.get(slot, -1) >= self.lowest_acc

    def vector(self, slots: tuple[int, ...]) -> tuple[str, int]:
        """``("inv", slot)`` for a loop-invariant scalar, ``("vec", slot)`` for a new slot
        of shape ``(m,)`` whose element k is the value of ``slots[k]``."""
        owner = self.owner
        s0 = slots[0]
        if s0 == slots[1] and all(s == s0 for s in slots):
            if self._forbidden(s0):
                raise Bail(0)
            return ("inv", s0)  # broadcast: it lines up with the trailing axes
        if slots in self.memo:
            return self.memo[slots]
        if s0 in owner.element:
            out = self._element_read(slots)
        else:
            step_at, aval, chain_pos = owner.step_at, owner.aval, owner.chain_pos
            first = step_at[s0]
            if first is None:
                raise Bail(0)
            prim, params, arity, a0 = first.primitive, first.params, len(first.inputs), aval[s0]
            steps = []
            for k, s in enumerate(slots):
                step = step_at[s]
                if (step is None or step.primitive is not prim or aval[s] != a0
                        or chain_pos.get(s, -1) >= self.lowest_acc):
                    raise Bail(k)
                if len(step.inputs) != arity or (step.params != params
                                                 and prim is not const_p and prim is not slice_p):
                    raise Bail(k)  # (constants and block reads check their params below)
                steps.append(step)
            shape = owner.slots[s0].shape  # of one iteration's value
            if prim is const_p and shape == ():
                out = self._constants(steps)
            elif prim is slice_p and len(shape) == 1:
                out = self._block_read(steps)
            elif prim.kind == "elementwise":
                args = [self.vector(tuple(step.inputs[r] for step in steps))
                        for r in range(arity)]
                inputs = tuple(self._aligned(kind, slot, len(shape)) for kind, slot in args)
                out = self.emit(prim, inputs, params)
                if self.slot(out).shape != (self.m,) + shape:
                    raise Bail(0)
                self.private.append(slots)
            elif prim is reshape_p and len(shape) == 1:
                out = self._row_read(steps)
            elif prim is einsum_p:
                out = self._contraction(steps, first.kwargs["spec"], shape)
                self.private.append(slots)
            elif prim in REDUCTIONS and REDUCTIONS[prim].batches:
                (kind, arg), = [self.vector(tuple(step.inputs[0] for step in steps))]
                if kind == "inv":
                    raise Bail(0)
                axes = tuple(a + 1 for a in first.kwargs["axes"])
                out = self.emit(prim, (arg,), (("axes", axes),))
                if self.slot(out).shape != (self.m,) + shape:
                    raise Bail(0)
                self.private.append(slots)
            else:
                raise Bail(0)
        self.memo[slots] = ("vec", out)
        return self.memo[slots]

    def _aligned(self, kind: str, slot: int, rank: int) -> int:
        """A batched operand ``(m,) + s`` reshaped to ``(m,) + (1,) * k + s`` so it
        broadcasts per iteration against values of ``rank`` axes (invariants as they are)."""
        shape = self.slot(slot).shape
        if kind == "inv" or len(shape) - 1 == rank:
            return slot
        ones = (1,) * (rank - (len(shape) - 1))
        return self.emit(reshape_p, (slot,), (("shape", (self.m,) + ones + shape[1:]),))

    def _contraction(self, steps: list[Step], spec: str, shape: tuple[int, ...]) -> int:
        """The iterations' ``einsum`` as one, with a batch letter on the operands that vary
        and on the output. (Each iteration's contraction is then summed by the batched
        kernel, possibly in another order: a reassociation like the loop's sum.)"""
        args = [self.vector(tuple(step.inputs[r] for step in steps)) for r in range(2)]
        operands, result = spec.split("->")
        batch = next(c for c in string.ascii_letters if c not in spec)
        subs = [batch + sub if kind == "vec" else sub
                for (kind, _), sub in zip(args, operands.split(","))]
        out = self.emit(einsum_p, (args[0][1], args[1][1]),
                        (("spec", f"{subs[0]},{subs[1]}->{batch}{result}"),))
        if self.slot(out).shape != (self.m,) + shape:
            raise Bail(0)
        return out

    def _row_read(self, steps: list[Step]) -> int:
        """``X[i_k]``, a row of a 2-D slot (traced as a one-row slice and a reshape), with
        ``i_k = i0 + c*k``: a strided slice of rows, of shape ``(m, n)``."""
        x = -1
        rows = []
        for k, step in enumerate(steps):
            inner = self.owner.step_at[step.inputs[0]]
            if inner is None or inner.primitive is not slice_p:
                raise Bail(k)
            base = inner.inputs[0]
            shape = self.owner.slots[base].shape
            slices = inner.kwargs["slices"]
            full = all(sl == (0, n, 1) for sl, n in zip(slices[1:], shape[1:]))
            if (len(shape) != 2 or (x >= 0 and base != x) or not full
                    or self.owner.slots[inner.output].shape != (1,) + shape[1:]):
                raise Bail(k)
            x = base
            rows.append(slices[0][0])
        i0, c = rows[0], rows[1] - rows[0]
        if c == 0:
            raise Bail(1)
        for k, i in enumerate(rows):
            if i != i0 + c * k:
                raise Bail(k)
        stop = i0 + c * self.m
        rest = self.owner.step_at[steps[0].inputs[0]].kwargs["slices"][1:]  # type: ignore[union-attr]
        return self.emit(slice_p, (x,), (("slices", ((i0, stop if stop >= 0 else None, c),)
                                          + tuple(rest)),))

    def _block_read(self, steps: list[Step]) -> int:
        """``x[a_k:a_k + L]`` in iteration k, ``a_k = a0 + c*k``: a ``(m, L)`` slot -- one
        slice when the blocks tile ``x`` (``c == L``), a gather otherwise."""
        x = steps[0].inputs[0]
        if self.owner.slots[x].ndim != 1:
            raise Bail(0)
        starts = []
        for k, step in enumerate(steps):
            ((a, b, c),) = step.kwargs["slices"]
            if step.inputs[0] != x or c != 1 or b is None or a < 0:
                raise Bail(k)
            starts.append(a)
        length = self.owner.slots[steps[0].output].shape[0]
        a0, c = starts[0], starts[1] - starts[0]
        for k, a in enumerate(starts):
            if a != a0 + c * k:
                raise Bail(k)
        if c == length:
            flat = self.emit(slice_p, (x,), (("slices", ((a0, a0 + c * self.m, 1),)),))
            return self.emit(reshape_p, (flat,), (("shape", (self.m, length)),))
        index = (a0 + c * np.arange(self.m)[:, None] + np.arange(length)).astype(np.int64)
        idx = self.emit(const_p, (), (("dtype", "int64"), ("value", ArrayConst(index))))
        return self.emit(gather_p, (x, idx), (("axis", 0),))

    def _constants(self, steps: list[Step]) -> int:
        dtype = steps[0].kwargs["dtype"]
        values = []
        for k, step in enumerate(steps):
            value = step.kwargs["value"]
            if step.kwargs["dtype"] != dtype or isinstance(value, ArrayConst):
                raise Bail(k)
            values.append(value)
        array = np.array(values, dtype=dtype)
        return self.emit(const_p, (), (("dtype", dtype), ("value", ArrayConst(array))))

    def _element_read(self, slots: tuple[int, ...]) -> int:
        """A strided slice for the reads ``x[j0 + c*k]`` of iterations ``k``."""
        element = self.owner.element
        base, j0 = element[slots[0]]
        second = element.get(slots[1])
        if second is None or second[0] != base or second[1] == j0:
            raise Bail(1)
        c = second[1] - j0
        for k, s in enumerate(slots):
            read = element.get(s)
            if read is None or read[0] != base or read[1] != j0 + c * k:
                raise Bail(k)
        x = base
        if self.owner.slots[x].ndim != 1:
            if x not in self.flat:
                self.flat[x] = self.emit(reshape_p, (x,), (("shape", (self.owner.slots[x].size,)),))
            x = self.flat[x]
        stop = j0 + c * self.m
        return self.emit(slice_p, (x,), (("slices", ((j0, stop if stop >= 0 else None, c),)),))

    def check_private(self, accumulators: set[int]) -> None:
        """Bail out when a value computed inside the group is read outside it, naming the
        first iteration that computes such a value.

        The first and the last iteration are exempt: a value they share with the
        iterations around the group (CSE joins ``x[i + 1] ** 2`` of one iteration with
        ``x[i] ** 2`` of the next), or a last term returned beside the sum, stays computed
        by its scalar steps as well -- correct, at the cost of one iteration's work.
        """
        inside = set(accumulators)
        for slots in self.private:
            inside.update(slots)
        outputs = self.owner.outputs
        consumers = self.owner.consumers
        steps = self.owner.program.steps
        first_bad = self.m - 1
        for slots in self.private:
            for k in range(1, first_bad):
                s = slots[k]
                if s in outputs or any(steps[n].output not in inside
                                       for n in consumers.get(s, ())):
                    first_bad = k
                    break
        if first_bad < self.m - 1:
            raise Bail(first_bad)  # iterations before it may still be folded

