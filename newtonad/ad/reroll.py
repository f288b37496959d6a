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
  primitive applied to the vectors.

Each vector element is therefore computed by exactly the floating-point operations of
its iteration, on the same operands. The only difference is the order of the sum: the
unrolled program adds ``((c + t0) + t1) + ...`` left to right, the folded one adds the
terms of each iteration, then ``reduce_sum`` over iterations (pairwise in NumPy), then the
incoming accumulator. The result equals the unrolled one up to that reassociation: the
difference is at most about ``m * p * eps`` times the sum of the terms' magnitudes. (Vector
kernels of transcendental functions, such as NumPy's SIMD ``sin``, may also differ from
the scalar call by an ulp.) Products are not folded.

A group is left as it is (never folded partially wrong) when a term reads an accumulator
of its own chain, when an index is not affine in the iteration number, when an operand is
not a scalar, when a primitive is not elementwise, or when a value computed inside the
group (other than element reads and constants) is read outside it or returned. A prefix or
suffix of iterations that differ (``s = 0.0`` as the first accumulator, a first iteration
with another shape) stays unrolled; only the run of isomorphic iterations is folded.

Cost: one pass to give every slot a structural signature, one scan of each chain per
candidate period (up to :data:`MAX_PERIOD`), and work proportional to the group's size to
check and emit it: linear in the program's size.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

import numpy as np

from .primitives.core import const_p
from .primitives.elementwise import add_p, neg_p, sub_p
from .primitives.structural import reduce_sum_p, reshape_p, slice_p
from .program import ArrayConst, Program, Slot, Step

#: Switch re-rolling of traced programs on or off (tests and benchmarks switch it off to
#: compare with the unrolled program).
REROLL = True
#: Fewest iterations worth folding.
MIN_TRIP = 4
#: Longest period (terms added per iteration) looked for.
MAX_PERIOD = 16


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
            key = (step.primitive.name, params, out, tuple(sig[i] for i in step.inputs))
            sig[step.output] = table.setdefault(key, len(table))
        return sig

    def _eligible(self, slot: int) -> bool:
        """Whether ``slot`` may be an intermediate accumulator: a scalar written by an
        ``add`` / ``sub`` step, read once (by the next link) and not returned."""
        step = self._step_of(slot)
        return (step is not None and step.primitive in (add_p, sub_p)
                and len(self.consumers.get(slot, ())) == 1 and slot not in self.outputs
                and self.slots[slot] == Slot(()))

    def _accumulator_operand(self, step: Step) -> int | None:
        """The operand of an ``add`` / ``sub`` step that is a chain's accumulator, if any.

        ``s = s + t`` traces to ``add(s, t)``: the first operand is preferred. The second is
        taken (``s = t + s``) only when the first is not eligible and the second is an
        ``add`` of the same orientation, so that the term of a chain's first link, such
        as ``a - b`` in ``0.0 + (a - b)``, is not mistaken for an accumulator. A wrong
        guess only loses a fold: every fold is checked exactly.
        """
        first = step.inputs[0]
        if self._eligible(first):
            return first
        if step.primitive is add_p and self._eligible(step.inputs[1]):
            prev = self._step_of(step.inputs[1])
            assert prev is not None
            if prev.primitive is add_p and not self._eligible(prev.inputs[0]):
                return step.inputs[1]
        return None

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
        if not self.folds:
            return self.program
        return self._rebuild()

    def _fold_chain(self, chain: list[Step]) -> None:
        # terms[n] with sign: terms[0] is the chain's first operand (its base), terms[n]
        # the operand step n-1 adds; acc[n] the accumulator after term n.
        terms: list[tuple[int, int]] = [(chain[0].inputs[0], 1)]
        accs = [chain[0].inputs[0]]
        prev = None
        for step in chain:
            # the operand that is not the previous accumulator (the first step: its second)
            t = step.inputs[0] if prev is not None and step.inputs[0] != prev else step.inputs[1]
            terms.append((t, -1 if step.primitive is sub_p else 1))
            accs.append(step.output)
            prev = step.output
        for n, a in enumerate(accs):
            if n > 0:
                self.chain_pos[a] = n
        sigs = [(self.signature[t], sign) for t, sign in terms]
        runs: dict[int, list[int]] = {}
        n = 0
        while n + MIN_TRIP <= len(terms):
            m = 0
            for p in range(1, MAX_PERIOD + 1):
                if n + p < len(terms) and sigs[n + p] == sigs[n]:
                    if p not in runs:
                        runs[p] = _run_lengths(sigs, p)
                    m = self._longest_group(terms, accs, n, p, (runs[p][n] + p) // p)
                    if m:
                        n += m * p
                        break
            if not m:
                n += 1

    def _longest_group(self, terms: list[tuple[int, int]], accs: list[int], n: int, p: int,
                       m: int) -> int:
        """Fold the longest foldable group of at most ``m`` iterations of period ``p`` from
        term ``n``; return its number of iterations (0: none)."""
        if m < MIN_TRIP:
            return 0
        try:  # a cheap probe first, so a failing candidate costs O(period), not O(m)
            self._group(terms, accs, n, p, MIN_TRIP, probe=True)
        except _Bail:
            return 0
        while m >= MIN_TRIP:
            try:
                group = self._group(terms, accs, n, p, m, probe=False)
            except _Bail as bail:
                m = min(bail.k, m - 1)
                continue
            last = accs[n + m * p - 1]
            self.folds[self.writer[last]] = group.steps
            self.slots.extend(group.new_slots)
            return m
        return 0

    def _group(self, terms: list[tuple[int, int]], accs: list[int], n: int, p: int, m: int,
               probe: bool) -> "_Group":
        """The vector steps of terms ``n .. n + m*p - 1`` (``m`` iterations of ``p`` terms),
        or raise _Bail naming the first iteration that cannot be folded."""
        group = _Group(self, m, lowest_acc=max(n, 1))
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10_000))
        try:
            vectors = [group.vector(tuple(terms[n + k * p + r][0] for k in range(m)))
                       for r in range(p)]
        except RecursionError:
            raise _Bail(0) from None
        finally:
            sys.setrecursionlimit(limit)
        if all(kind == "inv" for kind, _ in vectors):
            raise _Bail(0)  # nothing varies: not a loop over anything
        if any(group.slot(slot).dtype != "float64" for _, slot in vectors):
            raise _Bail(0)  # integer or bool terms: sums of them are not re-associated
        if probe:
            return group
        group.check_private({accs[n + j] for j in range(m * p) if n + j > 0})
        # the sum of each iteration's terms, then over the iterations
        total = -1
        for r, (_kind, slot) in enumerate(vectors):
            sign = terms[n + r][1]
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
        if final.primitive.abstract_eval(*(group.slot(i) for i in final.inputs),
                                         **final.kwargs) != self.slots[last]:
            raise _Bail(0)
        group.steps.append(final)
        return group

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
        steps = tuple(Step(s.primitive, tuple(number[i] for i in s.inputs), s.params,
                           number[s.output]) for s in kept)
        return Program(slots, steps, tuple(number[i] for i in self.program.inputs),
                       tuple(number[i] for i in self.program.outputs))


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

    def slot(self, i: int) -> Slot:
        return self.owner.slots[i] if i < self.first_new else self.new_slots[i - self.first_new]

    def emit(self, primitive: Any, inputs: tuple[int, ...], params: tuple) -> int:
        aval = primitive.abstract_eval(*(self.slot(i) for i in inputs), **dict(params))
        self.new_slots.append(aval)
        out = self.first_new + len(self.new_slots) - 1
        self.steps.append(Step(primitive, inputs, params, out))
        return out

    def _forbidden(self, slot: int) -> bool:
        return self.owner.chain_pos.get(slot, -1) >= self.lowest_acc

    def vector(self, slots: tuple[int, ...]) -> tuple[str, int]:
        """``("inv", slot)`` for a loop-invariant scalar, ``("vec", slot)`` for a new slot
        of shape ``(m,)`` whose element k is the value of ``slots[k]``."""
        s0 = slots[0]
        if s0 == slots[1] and all(s == s0 for s in slots):
            if self._forbidden(s0) or self.owner.slots[s0].shape != ():
                raise _Bail(0)
            return ("inv", s0)
        if slots in self.memo:
            return self.memo[slots]
        steps = []
        for k, s in enumerate(slots):
            step = self.owner._step_of(s)
            if step is None or self._forbidden(s) or self.owner.slots[s] != self.owner.slots[s0]:
                raise _Bail(k)
            steps.append(step)
        if self.owner.slots[s0].shape != ():
            raise _Bail(0)
        prim = steps[0].primitive
        for k, step in enumerate(steps):
            if step.primitive is not prim:
                raise _Bail(k)
        if prim is const_p:
            out = self._constants(steps)
        elif prim is reshape_p and (read := self._element_read(steps)) is not None:
            out = read
        elif prim.kind == "elementwise":
            params = steps[0].params
            for k, step in enumerate(steps):
                if step.params != params or len(step.inputs) != len(steps[0].inputs):
                    raise _Bail(k)
            args = [self.vector(tuple(step.inputs[r] for step in steps))
                    for r in range(len(steps[0].inputs))]
            out = self.emit(prim, tuple(slot for _, slot in args), params)
            if self.slot(out).shape != (self.m,):
                raise _Bail(0)
            self.private.append(slots)
        else:
            raise _Bail(0)
        self.memo[slots] = ("vec", out)
        return self.memo[slots]

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

    def _element_read(self, steps: list[Step]) -> int | None:
        """A strided slice for ``x[j0 + c*k]`` read in iteration k, or None (not a read)."""
        base = None
        flat_index = []
        for k, step in enumerate(steps):
            if step.kwargs.get("shape") != ():
                return None if k == 0 else self._bail(k)
            inner = self.owner._step_of(step.inputs[0])
            if inner is None or inner.primitive is not slice_p:
                return None if k == 0 else self._bail(k)
            x = inner.inputs[0]
            if base is None:
                base = x
            elif x != base:
                raise _Bail(k)
            shape = self.owner.slots[x].shape
            index = 0
            slices = inner.kwargs["slices"]
            for axis, n in enumerate(shape):
                start = 0
                if axis < len(slices):
                    a, _b, _c = slices[axis]
                    start = a
                index = index * n + start
            flat_index.append(index)
        assert base is not None
        j0, c = flat_index[0], flat_index[1] - flat_index[0]
        if c == 0:
            raise _Bail(1)
        for k, j in enumerate(flat_index):
            if j != j0 + c * k:
                raise _Bail(k)
        x = base
        if self.owner.slots[x].ndim != 1:
            if x not in self.flat:
                self.flat[x] = self.emit(reshape_p, (x,), (("shape", (self.owner.slots[x].size,)),))
            x = self.flat[x]
        stop = j0 + c * self.m
        return self.emit(slice_p, (x,), (("slices", ((j0, stop if stop >= 0 else None, c),)),))

    @staticmethod
    def _bail(k: int) -> Any:
        raise _Bail(k)

    def check_private(self, accumulators: set[int]) -> None:
        """Bail out when a value computed inside the group is read outside it, naming the
        first iteration that computes such a value."""
        inside = set(accumulators)
        for slots in self.private:
            inside.update(slots)
        outputs = self.owner.outputs
        consumers = self.owner.consumers
        steps = self.owner.program.steps
        first_bad = self.m
        for slots in self.private:
            for k, s in enumerate(slots[:first_bad]):
                if s in outputs or any(steps[n].output not in inside
                                       for n in consumers.get(s, ())):
                    first_bad = k
                    break
        if first_bad < self.m:
            raise _Bail(first_bad)  # iterations before it may still be folded


__all__ = ["MAX_PERIOD", "MIN_TRIP", "REROLL", "reroll"]
