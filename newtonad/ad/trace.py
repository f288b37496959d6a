"""Tracing: a function run on tracers, recorded as a Program.

:func:`trace_function` runs a function on fresh tracers (:class:`~newtonad.ad.var.Var`
roots without values); every primitive it reaches is recorded by ``bind`` as an Op.
:func:`to_program` turns the graph reachable from some outputs into a
:class:`~newtonad.ad.program.Program` by a topological sort, eliminating dead code and
common subexpressions as it goes; :func:`interpret` runs a Program on Vars, inlining it
into an enclosing trace.

Tracing uses the primitives (``const`` steps) and the NumPy layer: the routing of
SciPy's Python-level functions (:mod:`.scipy_dispatch`) is brought up to date at the
start of every trace.
"""

from __future__ import annotations

import contextlib
import dis
import struct
from typing import Any, NamedTuple, Sequence

import numpy as np

from . import scipy_dispatch
from .branches import recording
from .captures import Guard, walk_captures
from .gc_pause import gc_paused
from .math_routing import math_routed
from .primitives.core import Primitive, const_p
from .program import ArrayConst, Program, Slot, Step, dtype_name
from .purity import (
    SharedGeneratorMoved,
    moved_by_another_thread_maybe,
    shared_draw_retried,
    watching_draws,
)
from .tracer_errors import BranchOnTracer, ImpureFunctionError, impure_message
from .var import (
    Op,
    TracerBoolError,
    Var,
    bind,
    const_var,
    is_float,
    lifting,
    new_tracer,
    next_id,
    toposort,
)

_STORE_INTO_ARRAY = ("a traced value cannot be stored into a NumPy array (y = np.zeros(n); "
                     "y[i] = ...): NumPy arrays hold numbers, and newtonad traces your function "
                     "without them. Build the array from its traced parts instead: "
                     "np.stack([...]) or np.concatenate, np.where(mask, value, y), or "
                     "np.array([...]) of the traced entries")


def _failed_storing_into_an_array(error: BaseException) -> bool:
    """Whether ``error`` is NumPy refusing a Var in ``y[i] = value`` (it calls float(value),
    drops our message, and says "setting an array element with a sequence")."""
    if not isinstance(error, ValueError) or "array element with a sequence" not in str(error):
        return False
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_code[tb.tb_lasti] == _STORE_SUBSCR


_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]



@gc_paused
def to_program(inputs: Sequence[Var], outputs: Sequence[Var], stop: int = -1
               ) -> tuple[Program, list[Var]]:
    """Record the graph between ``inputs`` and ``outputs`` as a Program.

    Returns the program and the list of *closed-over* Vars: leaves reached that are
    neither inputs nor constants (eager Vars, or tracers of an enclosing trace). They
    are appended to the program's inputs, after ``inputs``, so a derived program can be
    inlined back into the enclosing graph with them as data. Vars created before id
    ``stop`` count as leaves. Dead steps are dropped and identical steps shared.
    """
    slots: list[Slot] = []
    steps: list[Step] = []
    slot_of: dict[int, int] = {}
    memo: dict[tuple, int] = {}

    def new_slot(aval: Slot) -> int:
        slots.append(aval)
        return len(slots) - 1

    new_step = tuple.__new__  # Step(...) without the named tuple's Python-level __new__

    def add_step(primitive: Primitive, in_slots: tuple[int, ...], params: dict, aval: Slot) -> int:
        key_params = tuple(sorted(params.items())) if params else ()
        key = (primitive, in_slots, key_params)
        out = memo.get(key)
        if out is None:
            slots.append(aval)
            out = len(slots) - 1
            steps.append(new_step(Step, (primitive, in_slots, key_params, out)))
            memo[key] = out
        return out

    pending: set[int] = set()  # Vars on the walk's stack, their arguments not yet recorded
    input_slots = []
    for v in inputs:
        if v.id in slot_of:
            raise ValueError("the same Var is given twice as a program input")
        slot_of[v.id] = new_slot(v.aval)
        input_slots.append(slot_of[v.id])
    closed: list[Var] = []
    # toposort's depth-first walk with each Var recorded as it is finished (the same
    # order, one pass instead of a sort and a second loop over every Var)
    for root in outputs:
        if root.id in slot_of:
            continue
        stack: list[tuple[Var, bool]] = [(root, False)]
        pop, push = stack.pop, stack.append
        while stack:
            var, expanded = pop()
            vid = var.id
            if not expanded:
                if vid in slot_of or vid in pending:
                    continue
                pending.add(vid)
                push((var, True))
                op = var.creator
                if op is not None and vid >= stop:
                    for arg in reversed(op.args):
                        if arg.id not in slot_of and arg.id not in pending:
                            push((arg, False))
                continue
            if var.const:
                slot_of[vid] = add_step(const_p, (), const_params(var.value), var.aval)
            elif var.creator is None or vid < stop:
                slot_of[vid] = new_slot(var.aval)
                input_slots.append(slot_of[vid])
                closed.append(var)
            else:
                op = var.creator
                slot_of[vid] = add_step(op.primitive, tuple([slot_of[a.id] for a in op.args]),
                                        op.params, var.aval)
    program = Program.checked_by_construction(tuple(slots), tuple(steps), tuple(input_slots),
                                              tuple(slot_of[v.id] for v in outputs))
    return program, closed


#: one float object per NaN bit pattern (see :func:`const_params`)
_NANS: dict[int, float] = {}


def const_params(value: np.ndarray) -> dict[str, Any]:
    """Params of a ``const`` step: scalars inline, arrays by digest.

    A NaN scalar is one shared float object per bit pattern: ``nan != nan``, and Python
    hashes a NaN by its identity, so two traces of the same code would otherwise never
    give equal programs, and every cache keyed by a program would miss.
    """
    value = np.asarray(value)
    if value.shape == ():
        item = value.item()
        if item != item:
            item = _NANS.setdefault(struct.unpack("<q", struct.pack("<d", item))[0], item)
        return {"value": item, "dtype": dtype_name(value.dtype)}
    return {"value": ArrayConst(value), "dtype": dtype_name(value.dtype)}


def interpret(program: Program, args: Sequence[Any]) -> list[Any]:
    """Run ``program`` on Vars (or arrays) by binding each step: inlines it into a trace."""
    if len(args) != len(program.inputs):
        raise ValueError(f"program takes {len(program.inputs)} inputs, got {len(args)}")
    env: dict[int, Any] = dict(zip(program.inputs, args))
    for step in program.steps:
        env[step.output] = bind(step.primitive, *(env[i] for i in step.inputs), **step.kwargs)
    return [env[i] for i in program.outputs]


class TraceResult(NamedTuple):
    """What :func:`trace_function` returns."""

    program: Program
    #: Vars appended to the program's inputs: captured values lifted to inputs, values
    #: of enclosing traces and eager Vars, in program input order after the arguments.
    closed: list[Var]
    #: Whether some of ``closed`` belong to an enclosing trace or are eager Vars: results
    #: then depend on them, so the derived programs must be inlined, not run.
    from_outer: bool
    #: The guard on what the function read outside its arguments (None: nothing).
    guard: Guard | None
    #: For a guarded trace (the function branched on traced values): the program of the
    #: same inputs whose one output, a bool, says whether every branch goes the way it
    #: went here (``None``: the function took no decision on a traced value).
    check: Program | None = None
    #: How many decisions ``check`` tests.
    decisions: int = 0


def trace_function(fun, avals: Sequence[Slot], *, wrap=None,
                   point: Sequence[Any] | None = None) -> TraceResult:
    """Trace ``fun`` on fresh tracers of ``avals`` into a Program.

    ``wrap`` post-processes the result (e.g. to check it is a scalar). The program's
    outputs are the flattened results.

    The trace is made without values first. If ``fun`` branches on a traced value
    (``if``, ``while``, ``bool()``, ``max`` of traced scalars) and ``point`` gives the
    input values, it is traced again on tracers that carry them: each branch goes the
    way it goes at ``point`` and is recorded (:mod:`.branches`), and the result's
    ``check`` program tells where that path holds (a guarded trace).

    Raises
    ------
    TracerBoolError
        When ``fun`` turns a traced value into a Python number, branches with no
        ``point``, or draws random numbers (:class:`~.tracer_errors.ImpureFunctionError`).
    """
    scipy_dispatch.install_pending()  # functions SciPy modules imported since the last trace
    try:
        return shared_draw_retried(lambda: _trace(fun, avals, wrap, None))
    except BranchOnTracer:
        if point is None:
            raise
    return shared_draw_retried(lambda: _trace(fun, avals, wrap, point))


@gc_paused
def _trace(fun, avals: Sequence[Slot], wrap, point: Sequence[Any] | None) -> TraceResult:
    guard, generators = walk_captures(fun)
    start = next_id()
    if point is None:
        tracers = [new_tracer(a) for a in avals]
    else:
        tracers = [Var(np.asarray(v.value if isinstance(v, Var) else v), aval=a)
                   for v, a in zip(point, avals)]
    with contextlib.ExitStack() as stack:
        stack.enter_context(lifting(guard.liftable if guard is not None else {}))
        stack.enter_context(math_routed())
        draws = stack.enter_context(watching_draws(generators))
        rec = None if point is None else stack.enter_context(recording(start))
        try:
            out = fun(*tracers)
        except ValueError as e:
            if _failed_storing_into_an_array(e):
                raise TracerBoolError(_STORE_INTO_ARRAY) from e
            raise
        if wrap is not None:
            out = wrap(out)
        drew = draws.drew()
    if drew is not None:
        if moved_by_another_thread_maybe(drew):
            raise SharedGeneratorMoved(drew)  # checked by a second trace
        raise ImpureFunctionError(impure_message(drew))
    if guard is not None:
        guard.settle()
    outs = [o if isinstance(o, Var) else const_var(o)
            for o in (out if isinstance(out, tuple) else (out,))]
    if rec is None or not rec.decisions:
        program, closed = to_program(tracers, outs, stop=start)
        return TraceResult(program, closed, any(not v.captured for v in closed), guard)
    ok = _all_hold(rec.decisions)
    # one walk for the inputs both programs take (values and branches may read
    # different captured values), then each program alone
    _, closed = to_program(tracers, [*outs, ok], stop=start)
    inputs = [*tracers, *closed]
    program, _ = to_program(inputs, outs, stop=start)
    check, _ = to_program(inputs, [ok], stop=start)
    return TraceResult(program, closed, any(not v.captured for v in closed), guard, check,
                       len(rec.decisions))


def _all_hold(decisions: Sequence[tuple[Var, bool]]) -> Var:
    """A bool Var: whether every condition comes out as it did (``(var, outcome)``)."""
    ok = None
    for var, outcome in decisions:
        c = var.reshape(()) if var.shape != () else var
        if c.dtype != np.bool_:
            c = c != 0
        held = c if outcome else ~c
        ok = held if ok is None else ok & held
    assert ok is not None
    return ok


__all__ = ["Op", "TraceResult", "TracerBoolError", "Var", "bind", "const_params", "const_var",
           "interpret", "is_float", "new_tracer", "to_program", "toposort", "trace_function"]
