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
  indices otherwise; a reduction of such values over their own axes (one whose record
  says it ``batches``: ``reduce_sum``) becomes one reduction over the same axes shifted
  by one (a loop over blocks), and operands
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

from ..program import Program
from .fold import Rerolling
from .limits import MAX_PERIOD, MIN_TRIP

#: Switch re-rolling of traced programs on or off (tests and benchmarks switch it off to
#: compare with the unrolled program).
REROLL = True


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
        return Rerolling(program).run()
    finally:
        if enabled:
            gc.enable()


__all__ = ["MAX_PERIOD", "MIN_TRIP", "REROLL", "reroll"]
