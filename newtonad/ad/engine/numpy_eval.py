"""The NumPy reference evaluator: each step runs its primitive's ``impl``.

Slots are released after their last reader so large intermediates do not pile up.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..program import Program


@functools.lru_cache(maxsize=512)
def compile_program(program: Program):
    """Return ``run(*inputs) -> tuple of outputs`` for ``program``."""
    last_use: dict[int, int] = {}
    for n, step in enumerate(program.steps):
        for i in step.inputs:
            last_use[i] = n
    keep = set(program.outputs)
    plan = []
    for n, step in enumerate(program.steps):
        dead = tuple(i for i in set(step.inputs) if last_use[i] == n and i not in keep)
        plan.append((step.primitive.impl, step.inputs, step.kwargs, step.output, dead))
    inputs, outputs = program.inputs, program.outputs
    n_in = len(inputs)

    def run(*args: Any) -> tuple:
        if len(args) != n_in:
            raise TypeError(f"program takes {n_in} inputs, got {len(args)}")
        env: dict[int, Any] = dict(zip(inputs, args))
        for impl, ins, kwargs, out, dead in plan:
            env[out] = impl(*[env[i] for i in ins], **kwargs)
            for i in dead:
                del env[i]
        return tuple(np.asarray(env[i]) for i in outputs)

    return run


def evaluate(program: Program, *args: Any) -> tuple:
    """Run ``program`` once on arrays."""
    return compile_program(program)(*args)

