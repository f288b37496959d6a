"""Re-rolling: a Python loop traced term by term, folded back into vector steps.

A loop such as ::

    s = 0.0
    for i in range(m):
        s = s + 100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2

traces to a chain of ``add`` steps (the accumulator ``s``) whose added terms are
isomorphic scalar expressions: the same primitives and params in every iteration,
reading elements ``x[j]`` whose index ``j`` advances by a constant stride. :func:`reroll`
finds such chains and replaces each run of isomorphic iterations by the vectorised
program (``x[1:m+1]``, ``x[0:m]``, elementwise steps on vectors of length ``m`` with
loop-invariant scalars broadcast, one ``reduce_sum``), i.e. what
``np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)`` traces to.

What is folded, and why it is exact
-----------------------------------
A *chain* is a sequence of steps ``c[n] = add(c[n-1], t[n])`` (or ``sub(c[n-1], t[n])``,
folded as ``+ (-t[n])``, which is exact in floating point) where every ``c[n]`` but the
last is read by the next step only and is not returned. Its *terms* ``t[n]`` are grouped
by a period ``p`` (the number of terms one iteration adds) into ``m`` iterations. A group
is folded only when, position by position, the slots of its ``m`` iterations form a
*vector node*:

* the same slot in every iteration: a loop-invariant scalar, broadcast;
* a scalar element read ``x[j]`` of one array slot ``x`` (traced as ``slice`` + ``reshape``)
  whose flat index is ``j0 + c*k`` in iteration ``k`` with a constant stride ``c != 0``:
  one strided ``slice`` of ``x``;
* scalar constants of one dtype: one array constant;
* the same elementwise primitive with the same params, applied to vector nodes: the
  primitive applied to the vectors;
* a block ``x[a:a + L]`` of a 1-D slot whose start ``a`` advances by a constant stride:
  an ``(m, L)`` slot, one slice reshaped when the blocks tile ``x``, a gather of constant
  indices otherwise; ``reduce_sum`` of such values over their own axes becomes one
  ``reduce_sum`` over the same axes shifted by one (a loop over blocks), and operands
  of fewer axes are reshaped to broadcast per iteration;
* a row ``X[i]`` of a 2-D slot with ``i`` advancing by a constant stride: a strided slice
  of rows, and an ``einsum`` of such values (``X[i] @ w``) one ``einsum`` with a batch
  letter -- its per-row sums may then be taken in another order, a reassociation of the
  same kind as the loop's sum.

Each vector element is therefore computed by exactly the floating-point operations of
its iteration, on the same operands. The only difference is the order of the sum: the
unrolled program adds ``((c + t0) + t1) + ...`` left to right, the folded one adds the
terms of each iteration, then ``reduce_sum`` over iterations (pairwise in NumPy), then the
incoming accumulator. The result equals the unrolled one up to that reassociation: the
difference is at most about ``m * p * eps`` times the sum of the terms' magnitudes. (Vector
kernels of transcendental functions, such as NumPy's SIMD ``sin``, may also differ from
the scalar call by an ulp.)

Products ``s = s * t`` are not folded: a product is as accurate in any order, but not
as safe -- an intermediate product that overflows or underflows in one order need not
in another -- and ``reduce_prod``'s derivative (``out / x_i`` where ``x_i != 0``) differs
from the chain rule's exactly there.

Arrays built in a loop, ``np.array([t0, t1, ...])`` of traced scalars, trace to a
``concatenate`` of ``reshape(t_k, (1,))``; runs of isomorphic ``t_k`` are folded the same
way into one vector (interleaved when an iteration appends several entries); no
arithmetic is reordered there.

A group is left as it is (never folded partially wrong) when a term reads an accumulator
of its own chain (a recurrence), when an index is not affine in the iteration number,
or when a primitive is none of these (elementwise, a sum over a block, an einsum). A value computed
in an iteration and read outside the group ends the group before that iteration; only
the group's first and last iterations may have such values, which then stay computed by
their scalar steps too (correct, at the cost of one iteration's work). A prefix or
suffix of iterations that differ (``s = 0.0`` as the first accumulator, a first iteration
with another shape) stays unrolled; only the run of isomorphic iterations is folded. The
accumulator is the first operand of each ``add`` (``s = s + t``, ``s += t``); a sum
written ``s = t + s`` is not folded.

Cost: one pass to give every slot a structural signature and to index the element
reads; per chain, a pre-check of every start and candidate period (up to
:data:`MAX_PERIOD`) that the element reads advance by constant strides (NumPy, O(terms)
per period), then the exact check and emission of each candidate group, in work
proportional to the group's size: linear in the program's size (about 3-7 µs of CPU
per step from 1e3 to 1e5 steps, measured).
"""

from __future__ import annotations

import gc
import string
import sys
from typing import Any, Callable

import numpy as np

from ..primitives.core import const_p
from ..primitives.elementwise import add_p, neg_p, sub_p
from ..primitives.linalg import einsum_p
from ..primitives.structural import (
    broadcast_to_p,
    concatenate_p,
    gather_p,
    reduce_sum_p,
    reshape_p,
    slice_p,
)
from ..program import ArrayConst, Program, Slot, Step

#: Switch re-rolling of traced programs on or off (tests and benchmarks switch it off to
#: compare with the unrolled program).
REROLL = True
#: Fewest iterations worth folding.
MIN_TRIP = 4
#: Longest period (terms added per iteration) looked for.
MAX_PERIOD = 16
#: Nodes of a term's expression tree looked at to pre-check its element reads.
READS_BUDGET = 64


class _Bail(Exception):
    """A group cannot be folded; ``k`` is the first iteration that breaks it."""

    def __init__(self, k: int):
        super().__init__(k)
        self.k = k


def reroll(program: Program) -> Program:
    """Fold loops traced term by term into vector steps (see the module docstring).

    Parameters
    ----------
    program : Program
        A traced program.

    Returns
    -------
    Program
        An equivalent program (the same values up to the reassociation of the folded
        sums) with the same inputs and outputs, or ``program`` itself when nothing was
        folded.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> from newtonad.ad import reroll as rr
    >>> def f(x):
    ...     s = 0.0
    ...     for i in range(len(x) - 1):
    ...         s = s + (x[i + 1] - x[i]) ** 2
    ...     return s
    >>> rr.REROLL = False
    >>> unrolled = nad.trace(f, np.zeros(100))
    >>> rr.REROLL = True
    >>> len(unrolled.steps) > 400, len(rr.reroll(unrolled).steps) < 10
    (True, True)
    """
    if len(program.steps) < 2 * MIN_TRIP:
        return program
    enabled = gc.isenabled()
    gc.disable()  # many small tuples, no cycles: the collector would rescan the heap
    try:
        return _Rerolling(program).run()
    finally:
        if enabled:
            gc.enable()


class _Rerolling:
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
        self.folds: dict[int, list[Step]] = {}  # index of a replaced step -> its new steps

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

    def run(self) -> Program:
        for chain in self._chains():
            self._fold_chain(chain)
        for idx, step in enumerate(self.program.steps):
            if step.primitive is concatenate_p:
                self._fold_concatenate(idx, step)
        if not self.folds:
            return self.program
        return self._rebuild()

    def _scan(self, items: list[int], sigs: list,
              make: Callable[[int, int, int, bool], "_Group"]
              ) -> list[tuple[int, int, int, "_Group"]]:
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

    def _longest_group(self, make: Callable[[int, int, int, bool], "_Group"], n: int, p: int,
                       m: int) -> tuple[int, Any]:
        """The longest foldable group of at most ``m`` iterations of period ``p`` from item
        ``n``, committed: ``(iterations, group)``, ``(0, None)`` when there is none."""
        if m < MIN_TRIP:
            return 0, None
        try:  # a cheap probe first, so a failing candidate costs O(period), not O(m)
            make(n, p, MIN_TRIP, True)
        except _Bail:
            return 0, None
        while m >= MIN_TRIP:
            try:
                group = make(n, p, m, False)
            except _Bail as bail:
                m = min(bail.k, m - 1)
                continue
            self.slots.extend(group.new_slots)
            return m, group
        return 0, None

    def _vectors(self, items: list[int], n: int, p: int, m: int, lowest_acc: int,
                 probe: bool) -> tuple["_Group", list[tuple[str, int]]]:
        """The vector node of each of the ``p`` positions of items ``n .. n + m*p - 1``."""
        group = _Group(self, m, lowest_acc)
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10_000))
        try:
            vectors = [group.vector(tuple(items[n + k * p + r] for k in range(m)))
                       for r in range(p)]
        except RecursionError:
            raise _Bail(0) from None
        finally:
            sys.setrecursionlimit(limit)
        if all(kind == "inv" for kind, _ in vectors):
            raise _Bail(0)  # nothing varies: not a loop over anything
        if any(group.slot(slot).dtype != "float64" for _, slot in vectors):
            raise _Bail(0)  # integer or bool terms: sums of them are not re-associated
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

        def make(n: int, p: int, m: int, probe: bool) -> _Group:
            group, vectors = self._vectors(terms, n, p, m, max(n, 1), probe)
            if probe:
                return group
            group.check_private({accs[n + j] for j in range(m * p) if n + j > 0})
            return self._sum_group(group, vectors, signs[n:n + p], accs, n, p, m)

        for n, p, m, group in self._scan(terms, sigs, make):
            self.folds[self.writer[accs[n + m * p - 1]]] = group.steps

    def _sum_group(self, group: "_Group", vectors: list[tuple[str, int]], signs: list[int],
                   accs: list[int], n: int, p: int, m: int) -> "_Group":
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

        def make(n: int, p: int, m: int, probe: bool) -> _Group:
            if any(items[j] < 0 for j in range(n, n + m * p)):
                raise _Bail(0)
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
        self.table = np.array([r if n == width else (0,) * max(width, 0)
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


class _Group:
    """Builds the vector nodes of one candidate group; raises _Bail when it cannot."""

    def __init__(self, owner: _Rerolling, m: int, lowest_acc: int):
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
            raise _Bail(0)
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
                raise _Bail(0)
            return ("inv", s0)  # broadcast: it lines up with the trailing axes
        if slots in self.memo:
            return self.memo[slots]
        if s0 in owner.element:
            out = self._element_read(slots)
        else:
            step_at, aval, chain_pos = owner.step_at, owner.aval, owner.chain_pos
            first = step_at[s0]
            if first is None:
                raise _Bail(0)
            prim, params, arity, a0 = first.primitive, first.params, len(first.inputs), aval[s0]
            steps = []
            for k, s in enumerate(slots):
                step = step_at[s]
                if (step is None or step.primitive is not prim or aval[s] != a0
                        or chain_pos.get(s, -1) >= self.lowest_acc):
                    raise _Bail(k)
                if len(step.inputs) != arity or (step.params != params
                                                 and prim is not const_p and prim is not slice_p):
                    raise _Bail(k)  # (constants and block reads check their params below)
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
                    raise _Bail(0)
                self.private.append(slots)
            elif prim is reshape_p and len(shape) == 1:
                out = self._row_read(steps)
            elif prim is einsum_p:
                out = self._contraction(steps, first.kwargs["spec"], shape)
                self.private.append(slots)
            elif prim is reduce_sum_p:
                (kind, arg), = [self.vector(tuple(step.inputs[0] for step in steps))]
                if kind == "inv":
                    raise _Bail(0)
                axes = tuple(a + 1 for a in first.kwargs["axes"])
                out = self.emit(reduce_sum_p, (arg,), (("axes", axes),))
                if self.slot(out).shape != (self.m,) + shape:
                    raise _Bail(0)
                self.private.append(slots)
            else:
                raise _Bail(0)
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
            raise _Bail(0)
        return out

    def _row_read(self, steps: list[Step]) -> int:
        """``X[i_k]``, a row of a 2-D slot (traced as a one-row slice and a reshape), with
        ``i_k = i0 + c*k``: a strided slice of rows, of shape ``(m, n)``."""
        x = -1
        rows = []
        for k, step in enumerate(steps):
            inner = self.owner.step_at[step.inputs[0]]
            if inner is None or inner.primitive is not slice_p:
                raise _Bail(k)
            base = inner.inputs[0]
            shape = self.owner.slots[base].shape
            slices = inner.kwargs["slices"]
            full = all(sl == (0, n, 1) for sl, n in zip(slices[1:], shape[1:]))
            if (len(shape) != 2 or (x >= 0 and base != x) or not full
                    or self.owner.slots[inner.output].shape != (1,) + shape[1:]):
                raise _Bail(k)
            x = base
            rows.append(slices[0][0])
        i0, c = rows[0], rows[1] - rows[0]
        if c == 0:
            raise _Bail(1)
        for k, i in enumerate(rows):
            if i != i0 + c * k:
                raise _Bail(k)
        stop = i0 + c * self.m
        rest = self.owner.step_at[steps[0].inputs[0]].kwargs["slices"][1:]  # type: ignore[union-attr]
        return self.emit(slice_p, (x,), (("slices", ((i0, stop if stop >= 0 else None, c),)
                                          + tuple(rest)),))

    def _block_read(self, steps: list[Step]) -> int:
        """``x[a_k:a_k + L]`` in iteration k, ``a_k = a0 + c*k``: a ``(m, L)`` slot -- one
        slice when the blocks tile ``x`` (``c == L``), a gather otherwise."""
        x = steps[0].inputs[0]
        if self.owner.slots[x].ndim != 1:
            raise _Bail(0)
        starts = []
        for k, step in enumerate(steps):
            ((a, b, c),) = step.kwargs["slices"]
            if step.inputs[0] != x or c != 1 or b is None or a < 0:
                raise _Bail(k)
            starts.append(a)
        length = self.owner.slots[steps[0].output].shape[0]
        a0, c = starts[0], starts[1] - starts[0]
        for k, a in enumerate(starts):
            if a != a0 + c * k:
                raise _Bail(k)
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
                raise _Bail(k)
            values.append(value)
        array = np.array(values, dtype=dtype)
        return self.emit(const_p, (), (("dtype", dtype), ("value", ArrayConst(array))))

    def _element_read(self, slots: tuple[int, ...]) -> int:
        """A strided slice for the reads ``x[j0 + c*k]`` of iterations ``k``."""
        element = self.owner.element
        base, j0 = element[slots[0]]
        second = element.get(slots[1])
        if second is None or second[0] != base or second[1] == j0:
            raise _Bail(1)
        c = second[1] - j0
        for k, s in enumerate(slots):
            read = element.get(s)
            if read is None or read[0] != base or read[1] != j0 + c * k:
                raise _Bail(k)
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
            raise _Bail(first_bad)  # iterations before it may still be folded


__all__ = ["MAX_PERIOD", "MIN_TRIP", "REROLL", "reroll"]
