"""Candidate groups for re-rolling: the program's structure, the chains of ``add`` /
``sub`` steps, and the scan for runs of isomorphic iterations (with the cheap pre-check
that their element reads advance by constant strides).

The exact check of a candidate is :mod:`.vectors`; folding a group that passes it into
the program is :mod:`.fold`.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, TypeVar

import numpy as np

from ..primitives.core import const_p
from ..primitives.elementwise import add_p, sub_p
from ..primitives.structural import reshape_p, slice_p
from ..program import Program, Slot, Step
from .limits import MAX_PERIOD, MIN_TRIP, READS_BUDGET, Bail


class _Candidate(Protocol):
    """A group that folds: the new slots it defines."""

    new_slots: list[Slot]


_G = TypeVar("_G", bound=_Candidate)


class Structure:
    """The program's structure, indexed once: writers, consumers, signatures, element
    reads and chains; and the scan of a sequence of terms for foldable groups."""

    def __init__(self, program: Program):
        self.program = program
        self.writer: dict[int, int] = {s.output: n for n, s in enumerate(program.steps)}
        self.consumers = program.consumers()
        self.outputs = set(program.outputs)
        self.slots: list[Slot] = list(program.slots)
        # per slot: the step writing it (None: an input), its aval's number, whether it is
        # a scalar, and for element reads x[j] (reshape to () of a one-element slice) (x, j)
        self.step_at: list[Step | None] = [None] * len(program.slots)
        for step in program.steps:
            self.step_at[step.output] = step
        avals: dict[Slot, int] = {}
        self.aval = [avals.setdefault(slot, len(avals)) for slot in program.slots]
        self.scalar = [slot.shape == () for slot in program.slots]
        self.element: dict[int, tuple[int, int]] = {}
        self.signature = self._signatures()
        self.chain_pos: dict[int, int] = {}  # accumulator slot -> its index in its chain

    # ---- structure ----------------------------------------------------------------------

    def _step_of(self, slot: int) -> Step | None:
        n = self.writer.get(slot)
        return None if n is None else self.program.steps[n]

    def _signatures(self) -> dict[int, int]:
        """A structural signature per slot: equal for isomorphic expressions whose element
        reads and scalar constants may differ (the exact check comes later)."""
        table: dict[Any, int] = {}
        sig: dict[int, int] = {}
        for i in self.program.inputs:
            sig[i] = table.setdefault(("input", i), len(table))
        for step in self.program.steps:
            out = self.slots[step.output]
            if step.primitive is const_p and out.shape == ():
                params: Any = out.dtype
            elif step.primitive is slice_p:
                params = tuple((None if b is None else b - a, c)
                               for a, b, c in step.kwargs["slices"])
            else:
                params = step.params
            key: tuple = (step.primitive.name, params, out, tuple(sig[i] for i in step.inputs))
            if step.primitive is reshape_p and out.shape == ():
                inner = self.step_at[step.inputs[0]]
                if inner is not None and inner.primitive is slice_p:
                    x = inner.inputs[0]
                    self.element[step.output] = (x, _flat_index(self.slots[x].shape,
                                                                inner.kwargs["slices"]))
                    key = ("element", sig[x], out)
            sig[step.output] = table.setdefault(key, len(table))
        return sig

    def _reads(self, term: int) -> tuple[int, ...] | None:
        """The flat indices of the element reads in ``term``'s expression tree, in a fixed
        order (None past :data:`READS_BUDGET` nodes): isomorphic terms of a foldable loop
        have them affine in the iteration, which rules most candidates out cheaply."""
        found: list[int] = []
        stack = [term]
        visits = 0
        while stack:
            slot = stack.pop()
            visits += 1
            if visits > READS_BUDGET:
                return None
            read = self.element.get(slot)
            if read is not None:
                found.append(read[1])
                continue
            step = self.step_at[slot]
            if step is not None and self.scalar[slot] and slot not in self.chain_pos:
                stack.extend(step.inputs)
        return tuple(found)

    def _eligible(self, slot: int) -> bool:
        """Whether ``slot`` may be an intermediate accumulator: a scalar written by an
        ``add`` / ``sub`` step, read once (by the next link) and not returned."""
        step = self._step_of(slot)
        return (step is not None and step.primitive in (add_p, sub_p)
                and len(self.consumers.get(slot, ())) == 1 and slot not in self.outputs
                and self.slots[slot] == Slot(()))

    def _accumulator_operand(self, step: Step) -> int | None:
        """The operand of an ``add`` / ``sub`` step that is a chain's accumulator, if any.

        ``s = s + t`` and ``s += t`` trace to ``add(s, t)``: only the first operand is
        taken. (Taking the second too would mistake a term that is itself a sum, as in
        ``0.0 + (a + b)``, for an accumulator; ``s = t + s`` is therefore not folded.)
        """
        first = step.inputs[0]
        return first if self._eligible(first) else None

    def _chains(self) -> list[list[Step]]:
        """Maximal chains of scalar float64 ``add`` / ``sub`` steps, in program order."""
        scalar = Slot(())
        nxt: dict[int, Step] = {}
        has_prev: set[int] = set()
        for step in self.program.steps:
            if step.primitive not in (add_p, sub_p) or self.slots[step.output] != scalar:
                continue
            acc = self._accumulator_operand(step)
            if acc is not None:
                nxt[acc] = step
                has_prev.add(step.output)
        chains = []
        for step in self.program.steps:
            if step.output in nxt and step.output not in has_prev:
                chain = [step]
                while chain[-1].output in nxt:
                    chain.append(nxt[chain[-1].output])
                if len(chain) >= MIN_TRIP:
                    chains.append(chain)
        return chains

    # ---- the scan -----------------------------------------------------------------------

    def _scan(self, items: list[int], sigs: list,
              make: Callable[[int, int, int, bool], _G]
              ) -> list[tuple[int, int, int, _G]]:
        """Groups ``(n, p, m, group)`` of ``m`` iterations of period ``p`` from item ``n``,
        found left to right: the smallest period whose longest group folds wins."""
        found = []
        runs: dict[int, list[int]] = {}
        reads = [self._reads(t) if t >= 0 else None for t in items]
        strides = _Strides(reads)
        n = 0
        while n + MIN_TRIP <= len(sigs):
            m = 0
            for p in range(1, MAX_PERIOD + 1):
                if (n + p < len(sigs) and sigs[n + p] == sigs[n]
                        and strides.may_be_affine(n, p)):
                    if p not in runs:
                        runs[p] = _run_lengths(sigs, p)
                    m, group = self._longest_group(make, n, p, (runs[p][n] + p) // p)
                    if m:
                        found.append((n, p, m, group))
                        n += m * p
                        break
            if not m:
                n += 1
        return found

    def _longest_group(self, make: Callable[[int, int, int, bool], _G], n: int, p: int,
                       m: int) -> tuple[int, Any]:
        """The longest foldable group of at most ``m`` iterations of period ``p`` from item
        ``n``, committed: ``(iterations, group)``, ``(0, None)`` when there is none."""
        if m < MIN_TRIP:
            return 0, None
        try:  # a cheap probe first, so a failing candidate costs O(period), not O(m)
            make(n, p, MIN_TRIP, True)
        except Bail:
            return 0, None
        while m >= MIN_TRIP:
            try:
                group = make(n, p, m, False)
            except Bail as bail:
                m = min(bail.k, m - 1)
                continue
            self.slots.extend(group.new_slots)
            return m, group
        return 0, None

def _flat_index(shape: tuple[int, ...], slices: tuple) -> int:
    """The flat (C order) index of the one element a slice of an array selects."""
    index = 0
    for axis, n in enumerate(shape):
        index = index * n + (slices[axis][0] if axis < len(slices) else 0)
    return index


def _may_be_affine(reads: list[tuple[int, ...] | None], n: int, p: int) -> bool:
    """Whether the element reads of the first :data:`MIN_TRIP` iterations of period ``p``
    from item ``n`` advance by a constant stride at every position (True when unknown)."""
    if n + MIN_TRIP * p > len(reads):
        return False
    for r in range(p):
        first, second = reads[n + r], reads[n + p + r]
        if first is None or second is None:
            continue
        if len(first) != len(second):
            return False
        for k in range(2, MIN_TRIP):
            other = reads[n + k * p + r]
            if other is None:
                break
            if len(other) != len(first) or any(
                    c != a + k * (b - a) for a, b, c in zip(first, second, other)):
                return False
    return True


class _Strides:
    """:func:`_may_be_affine` for every start at once, with NumPy, over the items that
    read the most common number of elements: O(items) per period instead of a Python
    loop per start and period. Windows holding another item use the Python check."""

    def __init__(self, reads: list[tuple[int, ...] | None]):
        self.reads = reads
        self.ok: dict[int, list[bool]] = {}
        lengths = [len(r) if r is not None else -1 for r in reads]
        width = max(set(lengths), key=lengths.count) if reads else -1
        odd = np.array([n != width for n in lengths], dtype=np.int64)
        self.odd_before = np.concatenate([[0], np.cumsum(odd)]).tolist()
        # rows of the most common width; the rest (and every row when most items read
        # nothing, width -1) are placeholders the Python check covers
        self.table = np.array([r if n == width and r is not None else (0,) * max(width, 0)
                               for r, n in zip(reads, lengths)],
                              dtype=np.int64).reshape(len(reads), max(width, 0))

    def may_be_affine(self, n: int, p: int) -> bool:
        end = n + MIN_TRIP * p
        if end > len(self.reads):
            return False
        if self.odd_before[end] != self.odd_before[n]:
            return _may_be_affine(self.reads, n, p)
        if p not in self.ok:
            # D[i] = reads[i + p] - reads[i]; affine over MIN_TRIP = 4 iterations at
            # position i: D[i] == D[i + p] == D[i + 2p]
            R = self.table
            D = R[p:] - R[:-p]
            same = np.all(D[:-p] == D[p:], axis=1) if len(D) > p else np.zeros(0, bool)
            both = same[:-p] & same[p:] if len(same) > p else np.zeros(0, bool)
            starts = np.ones(max(len(both) - p + 1, 0), bool)
            for r in range(p):  # every position of the period
                starts &= both[r:r + len(starts)]
            self.ok[p] = starts.tolist()
        ok = self.ok[p]
        return n < len(ok) and ok[n]


def _run_lengths(sigs: list, p: int) -> list[int]:
    """``run[n]``: how many consecutive ``i >= n`` have ``sigs[i] == sigs[i + p]``."""
    run = [0] * len(sigs)
    for i in range(len(sigs) - p - 1, -1, -1):
        if sigs[i] == sigs[i + p]:
            run[i] = run[i + 1] + 1
    return run

