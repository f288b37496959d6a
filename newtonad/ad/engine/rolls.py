"""Rotations as the planner fuses them: a ``roll`` step written as two shifted copies.

A rotation's index map is modular, which the fused nests' affine maps
(:mod:`.index_maps`) cannot say, so on its own it would be an opaque step: stored, and
a barrier between the nests around it. Written as ``unslice(x[:n-s], at s:) +
unslice(x[n-s:], at :s)``, it is slices, embeddings and a sum, all fused into the
nests that read it: a periodic stencil's neighbours compile as its other terms do.
"""

from __future__ import annotations

from ..primitives import elementwise as ew
from ..primitives import structural as st
from ..program import Program
from ..rebuild import build, rebind
from ..var import Var, new_tracer


def _shifted_copies(x: Var, shift: int, axis: int) -> Var:
    """``roll(x, shift, axis)`` as the sum of its two pieces, each embedded in zeros."""
    lead = x.aval.shape[:axis + 1]
    n, keep = lead[axis], lead[axis] - shift
    whole = [(0, m, 1) for m in lead[:axis]]
    head = st.unslice(st.slice_(x, whole + [(0, keep, 1)]), lead, whole + [(shift, n, 1)])
    tail = st.unslice(st.slice_(x, whole + [(keep, n, 1)]), lead, whole + [(0, shift, 1)])
    return ew.add(head, tail)


def rolls_as_shifted_copies(program: Program) -> Program:
    """``program`` with every ``roll`` step written as two shifted copies (itself when
    it has none); the same inputs and outputs, in the same order."""
    if not any(step.primitive is st.roll_p for step in program.steps):
        return program
    slots = program.slots
    inputs = [new_tracer(slots[i]) for i in program.inputs]
    env = dict(zip(program.inputs, inputs))
    for step in program.steps:
        args = [env[i] for i in step.inputs]
        env[step.output] = (_shifted_copies(args[0], **step.kwargs)
                            if step.primitive is st.roll_p else rebind(step, args, slots))
    return build(inputs, [env[i] for i in program.outputs])


__all__ = ["rolls_as_shifted_copies"]
