"""What the ``auto`` engine expects a program to cost: its decisions are made on these
models, never on a clock, so that the same script makes them at the same calls on every
run and gives the same bits.

Both models are functions of the program alone (its steps and the shapes of its
slots). They only need to be right to within a small factor: a model that is off
costs some speed (the hand-over comes earlier or later than it could), never a
result.

Calibrated on a 2-core machine (NumPy 2, numba 0.68), on the programs of
``benchmarks/compare.py`` and ``benchmarks/pipeline_report.py``:

* a step of the NumPy evaluator costs about :data:`STEP_SECONDS` whatever its size,
  plus :data:`ELEMENT_SECONDS` per element it reads or writes (memory-bound elementwise
  work); a contraction costs per multiply-add, a matrix decomposition per ``n^3``;
* a background compile costs about :data:`COMPILE_BASE_SECONDS` plus
  :data:`COMPILE_STEP_SECONDS` per program step (numba's time per step of a long
  kernel), the worker's start-up included once.
"""

from __future__ import annotations

import math

from ..program import Program

#: Seconds of interpreter overhead per NumPy step (a ufunc call and its dispatch).
STEP_SECONDS = 3e-6
#: Seconds per element a step reads or writes.
ELEMENT_SECONDS = 1.5e-9
#: Seconds per multiply-add of a contraction or a decomposition (BLAS and LAPACK).
FLOP_SECONDS = 1e-9
#: Seconds of a background compile of a small program (its worker's start-up included).
COMPILE_BASE_SECONDS = 2.0
#: Seconds of a background compile per program step.
COMPILE_STEP_SECONDS = 0.008


def _step_work(program: Program, step) -> float:
    """Seconds the NumPy evaluator is expected to spend on ``step``, beyond its overhead."""
    slots = program.slots
    out = slots[step.output]
    kind = step.primitive.kind
    sizes = [slots[i].size for i in step.inputs]
    if kind == "contraction" and len(step.inputs) == 2:
        extents: dict[str, int] = {}
        spec = dict(step.params).get("spec", "")
        lhs = spec.split("->")[0].split(",")
        for subs, i in zip(lhs, step.inputs):
            for letter, extent in zip(subs, slots[i].shape):
                extents[letter] = extent
        return FLOP_SECONDS * math.prod(extents.values()) + ELEMENT_SECONDS * out.size
    if kind == "matrix" and step.inputs:
        shape = slots[step.inputs[0]].shape
        if len(shape) >= 2:
            m, n = shape[-2], shape[-1]
            batch = math.prod(shape[:-2])
            return FLOP_SECONDS * batch * m * n * min(m, n) + ELEMENT_SECONDS * out.size
    return ELEMENT_SECONDS * (out.size + sum(sizes))


def numpy_seconds(program: Program) -> float:
    """The modelled time of one call of ``program`` on the NumPy evaluator."""
    return sum(STEP_SECONDS + _step_work(program, step) for step in program.steps)


def compile_seconds(program: Program) -> float:
    """The modelled time of compiling ``program``'s kernel in the background."""
    return COMPILE_BASE_SECONDS + COMPILE_STEP_SECONDS * len(program.steps)


__all__ = ["COMPILE_BASE_SECONDS", "COMPILE_STEP_SECONDS", "ELEMENT_SECONDS", "FLOP_SECONDS",
           "STEP_SECONDS", "compile_seconds", "numpy_seconds"]
