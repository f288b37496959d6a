"""Folding: the groups that pass the exact check replace their scalar steps -- a chain's
group by a sum of vectors, an array's run by one vector -- and the program is rebuilt
with the slots still in use, renumbered.
"""

from __future__ import annotations

import sys
from typing import Any

from ..primitives.core import const_p
from ..primitives.elementwise import add_p, neg_p, sub_p
from ..primitives.structural import broadcast_to_p, concatenate_p, reduce_sum_p, reshape_p
from ..program import ArrayConst, Program, Slot, Step
from .candidates import Structure
from .limits import MIN_TRIP, Bail
from .vectors import Group


class Rerolling(Structure):
    """One re-rolling of a program: finds the groups, folds them, rebuilds the program."""

    def __init__(self, program: Program):
        super().__init__(program)
        self.folds: dict[int, list[Step]] = {}  # index of a replaced step -> its new steps

    # ---- the scan -----------------------------------------------------------------------

    def run(self) -> Program:
        for chain in self._chains():
            self._fold_chain(chain)
        for idx, step in enumerate(self.program.steps):
            if step.primitive is concatenate_p:
                self._fold_concatenate(idx, step)
        if not self.folds:
            return self.program
        return self._rebuild()

    def _vectors(self, items: list[int], n: int, p: int, m: int, lowest_acc: int,
                 probe: bool) -> tuple[Group, list[tuple[str, int]]]:
        """The vector node of each of the ``p`` positions of items ``n .. n + m*p - 1``."""
        group = Group(self, m, lowest_acc)
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10_000))
        try:
            vectors = [group.vector(tuple(items[n + k * p + r] for k in range(m)))
                       for r in range(p)]
        except RecursionError:
            raise Bail(0) from None
        finally:
            sys.setrecursionlimit(limit)
        if all(kind == "inv" for kind, _ in vectors):
            raise Bail(0)  # nothing varies: not a loop over anything
        if any(group.slot(slot).dtype != "float64" for _, slot in vectors):
            raise Bail(0)  # integer or bool terms: sums of them are not re-associated
        group.vectors = vectors
        return group, vectors

    # ---- sums: chains of add / sub ------------------------------------------------------

    def _fold_chain(self, chain: list[Step]) -> None:
        # terms[n] with sign: terms[0] is the chain's first operand (its base), terms[n]
        # the operand step n-1 adds; acc[n] the accumulator after term n.
        terms: list[int] = [chain[0].inputs[0]]
        signs = [1]
        accs = [chain[0].inputs[0]]
        prev = None
        for step in chain:
            # the operand that is not the previous accumulator (the first step: its second)
            t = step.inputs[0] if prev is not None and step.inputs[0] != prev else step.inputs[1]
            terms.append(t)
            signs.append(-1 if step.primitive is sub_p else 1)
            accs.append(step.output)
            prev = step.output
        for n, a in enumerate(accs):
            if n > 0:
                self.chain_pos[a] = n
        sigs = [(self.signature[t], sign) for t, sign in zip(terms, signs)]

        def make(n: int, p: int, m: int, probe: bool) -> Group:
            group, vectors = self._vectors(terms, n, p, m, max(n, 1), probe)
            if probe:
                return group
            group.check_private({accs[n + j] for j in range(m * p) if n + j > 0})
            return self._sum_group(group, vectors, signs[n:n + p], accs, n, p, m)

        for n, p, m, group in self._scan(terms, sigs, make):
            self.folds[self.writer[accs[n + m * p - 1]]] = group.steps

    def _sum_group(self, group: Group, vectors: list[tuple[str, int]], signs: list[int],
                   accs: list[int], n: int, p: int, m: int) -> Group:
        """Finish a chain's group: the sum of each iteration's terms, then over the
        iterations, added to the accumulator before the group."""
        total = -1
        for (_kind, slot), sign in zip(vectors, signs):
            if total < 0:
                total = group.emit(neg_p, (slot,), ()) if sign < 0 else slot
            else:
                total = group.emit(add_p if sign > 0 else sub_p, (total, slot), ())
        last = accs[n + m * p - 1]
        axes = (("axes", (0,)),)
        if n == 0 or self._is_zero_const(accs[n - 1]):
            final = Step(reduce_sum_p, (total,), axes, last)
        else:
            final = Step(add_p, (accs[n - 1], group.emit(reduce_sum_p, (total,), axes)), (), last)
        group.finish(final)
        return group

    # ---- arrays: np.array([...]) of scalars ---------------------------------------------

    def _fold_concatenate(self, idx: int, step: Step) -> None:
        """``np.array([t0, t1, ...])`` of traced scalars traces to a concatenate of
        ``reshape(t_k, (1,))``: runs of isomorphic ``t_k`` become one vector each."""
        out = self.slots[step.output]
        if step.kwargs.get("axis") != 0 or out.ndim != 1 or len(step.inputs) < MIN_TRIP:
            return
        items: list[int] = []
        sigs: list[Any] = []
        wrappers: list[int] = []
        for k, piece in enumerate(step.inputs):
            wrap = self._step_of(piece)
            if (wrap is not None and wrap.primitive is reshape_p
                    and self.slots[piece] == Slot((1,)) and self.slots[wrap.inputs[0]] == Slot(())
                    and self.consumers.get(piece) == [idx] and piece not in self.outputs):
                items.append(wrap.inputs[0])
                sigs.append(self.signature[wrap.inputs[0]])
                wrappers.append(piece)
            else:
                items.append(-1)
                sigs.append(("piece", k))
        if len(wrappers) < MIN_TRIP:
            return
        inside = set(wrappers) | {step.output}

        def make(n: int, p: int, m: int, probe: bool) -> Group:
            if any(items[j] < 0 for j in range(n, n + m * p)):
                raise Bail(0)
            group, vectors = self._vectors(items, n, p, m, sys.maxsize, probe)
            if not probe:
                group.check_private(inside)
            return group

        found = self._scan(items, sigs, make)
        if not found:
            return
        new_steps: list[Step] = []
        pieces: list[int] = []
        done = 0
        for n, p, m, group in found:
            pieces += step.inputs[done:n]
            new_steps += group.steps
            pieces.append(self._interleave(new_steps, group.vectors, m))
            done = n + m * p
        pieces += step.inputs[done:]
        if (len(pieces) == 1 and new_steps and new_steps[-1].output == pieces[0]
                and self.slots[pieces[0]] == out):
            last = new_steps.pop()  # the vector is the array: write it into its slot
            self.folds[idx] = new_steps + [Step(last.primitive, last.inputs, last.params,
                                                step.output)]
            return
        if len(pieces) == 1:
            final = Step(reshape_p, (pieces[0],), (("shape", out.shape),), step.output)
        else:
            final = Step(concatenate_p, tuple(pieces), step.params, step.output)
        if final.primitive.abstract_eval(*(self.slots[i] for i in final.inputs),
                                         **final.kwargs) != out:
            return  # cannot happen for float64 pieces; leave the step as it was
        self.folds[idx] = new_steps + [final]

    def _interleave(self, steps: list[Step], vectors: list[tuple[str, int]], m: int) -> int:
        """One slot of shape ``(m * p,)`` holding the ``p`` vectors' entries interleaved
        (iteration by iteration), as the loop appended them."""
        def emit(primitive: Any, inputs: tuple[int, ...], params: tuple) -> int:
            aval = primitive.abstract_eval(*(self.slots[i] for i in inputs), **dict(params))
            self.slots.append(aval)
            steps.append(Step(primitive, inputs, params, len(self.slots) - 1))
            return len(self.slots) - 1

        columns = []
        for kind, slot in vectors:
            if kind == "inv":
                slot = emit(broadcast_to_p, (slot,), (("shape", (m,)),))
            columns.append(slot)
        if len(columns) == 1:
            return columns[0]
        columns = [emit(reshape_p, (c,), (("shape", (m, 1)),)) for c in columns]
        table = emit(concatenate_p, tuple(columns), (("axis", 1),))
        return emit(reshape_p, (table,), (("shape", (m * len(columns),)),))

    def _is_zero_const(self, slot: int) -> bool:
        step = self._step_of(slot)
        return (step is not None and step.primitive is const_p
                and step.kwargs["value"] == 0.0 and not isinstance(step.kwargs["value"], ArrayConst)
                and self.slots[slot] == Slot(()))

    # ---- the new program ----------------------------------------------------------------

    def _rebuild(self) -> Program:
        steps: list[Step] = []
        for idx, step in enumerate(self.program.steps):
            steps.extend(self.folds.get(idx, (step,)))
        live = set(self.program.outputs)
        kept: list[Step] = []
        for step in reversed(steps):
            if step.output in live:
                kept.append(step)
                live.update(step.inputs)
        kept.reverse()
        # renumber the slots still in use, densely, in order of definition
        number: dict[int, int] = {}
        for i in self.program.inputs:
            number[i] = len(number)
        for step in kept:
            number[step.output] = len(number)
        slots = tuple(self.slots[i] for i in number)
        renumbered = tuple(Step(s.primitive, tuple(number[i] for i in s.inputs), s.params,
                                number[s.output]) for s in kept)
        return Program(slots, renumbered, tuple(number[i] for i in self.program.inputs),
                       tuple(number[i] for i in self.program.outputs))

