"""The NumPy reference evaluator: each step runs its primitive's ``impl``.

Slots are released after their last reader so large intermediates do not pile up.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..program import Program

#: The keyword arguments of a step without params (``**`` copies it: shared safely).
_NO_KWARGS: dict[str, Any] = {}


@functools.lru_cache(maxsize=512)
def compile_program(program: Program):
    """Return ``run(*inputs) -> tuple of outputs`` for ``program``."""
    steps = program.steps
    last_use: dict[int, int] = {}
    for n, step in enumerate(steps):
        for i in step.inputs:
            last_use[i] = n
    keep = set(program.outputs)
    dead_at: list[list[int]] = [[] for _ in steps]  # slots released after each step
    for i, n in last_use.items():
        if i not in keep:
            dead_at[n].append(i)
    # one pass per step of a long program: no work per step beyond the tuple
    plan = [(step.primitive.impl, step.inputs,
             dict(step.params) if step.params else _NO_KWARGS, step.output, tuple(dead))
            for step, dead in zip(steps, dead_at)]
    inputs, outputs = program.inputs, program.outputs
    n_in, n_slots = len(inputs), len(program.slots)

    def run(*args: Any) -> tuple:
        if len(args) != n_in:
            raise TypeError(f"program takes {n_in} inputs, got {len(args)}")
        env: list[Any] = [None] * n_slots  # by slot number; a released slot holds None
        for i, a in zip(inputs, args):
            env[i] = a
        for impl, ins, kwargs, out, dead in plan:
            env[out] = impl(*[env[i] for i in ins], **kwargs)
            for i in dead:
                env[i] = None
        return tuple(np.asarray(env[i]) for i in outputs)

    return run


def evaluate(program: Program, *args: Any) -> tuple:
    """Run ``program`` once on arrays."""
    return compile_program(program)(*args)

