"""The NumPy reference evaluator: each step runs its primitive's ``impl``.

Slots are released after their last reader so large intermediates do not pile up.
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import numpy as np

from ..program import Program, Slot

#: The keyword arguments of a step without params (``**`` copies it: shared safely).
_NO_KWARGS: dict[str, Any] = {}

#: Scalar arithmetic by Python's operators instead of a ufunc call: on float64 scalars
#: NumPy's scalar operators give the ufunc's numbers (IEEE addition, subtraction,
#: multiplication and negation are exact roundings, and none raises; of two NaN operands
#: either may be passed on, as in NumPy's own vector loops), at a tenth of the cost of
#: a call through the ufunc machinery. Long programs of scalars (a hand-written
#: ODE integrator in a few parameters) are mostly these steps. Division is left to its
#: ufunc: Python's ``/`` raises on a zero divisor where NumPy gives inf.
_SCALAR_OPERATORS: dict[str, Callable[..., Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "neg": operator.neg}
_F64_SCALAR = Slot((), "float64")


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
    # one pass per step of a long program: no work per step beyond the tuple. Steps of
    # one or two inputs and no params (most of them) are called without building an
    # argument list: ``arity`` 1 or 2 reads ``a`` (and ``b``), 0 the general form; a
    # step of float64 scalars with a scalar operator calls that operator.
    slots = program.slots
    scalar = [s == _F64_SCALAR for s in slots]
    operators = _SCALAR_OPERATORS
    plan = []
    for step, dead in zip(steps, dead_at):
        ins, primitive, params = step.inputs, step.primitive, step.params
        impl = primitive.impl
        n = len(ins)
        if params or n > 2 or n == 0:
            plan.append((0, impl, ins, None, dict(params) if params else _NO_KWARGS,
                         step.output, tuple(dead)))
            continue
        a, b = ins[0], ins[-1]
        if scalar[step.output] and scalar[a] and scalar[b]:
            impl = operators.get(primitive.name, impl)
        plan.append((n, impl, a, b, _NO_KWARGS, step.output, tuple(dead)))
    inputs, outputs = program.inputs, program.outputs
    n_in, n_slots = len(inputs), len(program.slots)

    def run(*args: Any) -> tuple:
        if len(args) != n_in:
            raise TypeError(f"program takes {n_in} inputs, got {len(args)}")
        env: list[Any] = [None] * n_slots  # by slot number; a released slot holds None
        for i, a in zip(inputs, args):
            env[i] = a
        for arity, impl, a, b, kwargs, out, dead in plan:
            if arity == 2:
                env[out] = impl(env[a], env[b])
            elif arity == 1:
                env[out] = impl(env[a])
            else:
                env[out] = impl(*[env[i] for i in a], **kwargs)
            for i in dead:
                env[i] = None
        return tuple(np.asarray(env[i]) for i in outputs)

    run.impls = tuple(entry[1] for entry in plan)  # what each step calls, for inspection
    return run


def evaluate(program: Program, *args: Any) -> tuple:
    """Run ``program`` once on arrays."""
    return compile_program(program)(*args)

