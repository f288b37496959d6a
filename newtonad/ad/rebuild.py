"""The two inner loops of every program transformation, made cheap.

A transform walks a program step by step, re-applies each step to the Vars standing for
its inputs (:func:`rebind`), and records the graph reachable from its outputs as a new
program (:func:`build`). On a 10 000-step program that is tens of thousands of steps per
pass and several passes per derivation, so these two loops are most of a derivation's
time. They give exactly what :func:`~newtonad.ad.var.bind` and
:func:`~newtonad.ad.trace.to_program` give (the same Vars, the same programs, step for
step), with less work per step:

* :func:`rebind` is told the output slot: the program already holds it, so the shape
  rule is not looked up again (it is when an argument's abstract value differs);
* :func:`build` walks Vars made inside one transform, so it has no enclosing trace to
  stop at and no closed-over Vars to collect (one is a bug in a rule, and raises).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Sequence

import numpy as np

from .primitives.core import const_p
from .program import Program, Slot, Step
from .trace import const_params
from .var import Op, Var, bind

_id = attrgetter("id")


def rebind(step: Step, args: Sequence[Any], slots: Sequence[Slot]) -> Any:
    """``bind(step.primitive, *args, **step.kwargs)`` for a step of a program of ``slots``.

    Parameters
    ----------
    step : Step
        The step re-applied.
    args : sequence
        The values standing for its inputs (Vars, as a transform's are).
    slots : sequence of Slot
        The slots of the program ``step`` belongs to: its output slot is its shape rule's
        answer for its input slots.

    Returns
    -------
    Var
        What :func:`~newtonad.ad.var.bind` returns: a constant when every argument is
        one (and the output is no larger), else a Var recording the step.
    """
    primitive, params = step.primitive, dict(step.params)
    if not args:
        return Var(primitive.impl(**params), const=True)
    all_const = all_valued = True
    for a, i in zip(args, step.inputs):
        if not isinstance(a, Var) or a.aval != slots[i]:
            # not the program's own abstract values: bind works the output out itself
            return bind(primitive, *args, **params)
        if not a.const:
            all_const = False
        if a.value is None:
            all_valued = False
    aval = slots[step.output]
    if all_const and aval.size <= max([1] + [a.aval.size for a in args]):
        return Var(primitive.impl(*(a.value for a in args), **params), const=True)
    value = None
    if all_valued:
        value = np.asarray(primitive.impl(*(a.value for a in args), **params))
    return Var(value, aval=aval, creator=Op(primitive, tuple(args), params))


def build(inputs: Sequence[Var], outputs: Sequence[Var]) -> Program:
    """The program from ``inputs`` to ``outputs`` (what ``to_program`` records).

    Steps come in the order of a depth-first walk from the outputs (arguments first, in
    order), identical steps are shared and unreachable ones dropped; constants become
    ``const`` steps.

    Parameters
    ----------
    inputs : sequence of Var
        The roots, in call order.
    outputs : sequence of Var
        The targets, in return order.

    Returns
    -------
    Program
        Checked by construction (every slot is a ``bind`` result's).

    Raises
    ------
    RuntimeError
        When the graph reaches a Var that is neither an input nor a constant nor made by
        a step (a rule reached a Var from outside the transform).
    """
    slots: list[Slot] = []
    steps: list[Step] = []
    # Var id -> its slot; -1 while the Var is on the walk's stack, its arguments not yet
    # recorded (one dictionary answers both questions the walk asks)
    slot_of: dict[int, int] = {}
    memo: dict[tuple, int] = {}
    for v in inputs:
        if v.id in slot_of:
            raise ValueError("the same Var is given twice as a program input")
        slot_of[v.id] = len(slots)
        slots.append(v.aval)
    n_inputs = len(slots)
    new_step = tuple.__new__  # Step(...) without the named tuple's Python-level __new__
    for root in outputs:
        if root.id in slot_of:
            continue
        stack: list[tuple[Var, bool]] = [(root, False)]
        pop, push = stack.pop, stack.append
        while stack:
            var, expanded = pop()
            vid = var.id
            if not expanded:
                if vid in slot_of:
                    continue
                slot_of[vid] = -1
                push((var, True))
                op = var.creator
                if op is not None:
                    for arg in reversed(op.args):
                        if arg.id not in slot_of:
                            push((arg, False))
                continue
            if var.const:
                params = const_params(var.value)
                primitive: Any = const_p
                in_slots: tuple[int, ...] = ()
            else:
                op = var.creator
                if op is None:
                    raise RuntimeError("a transform produced a program with free variables")
                primitive, params = op.primitive, op.params
                in_slots = tuple(map(slot_of.__getitem__, map(_id, op.args)))
            key_params = tuple(sorted(params.items())) if params else ()
            key = (primitive, in_slots, key_params)
            out = memo.get(key)
            if out is None:
                out = len(slots)
                slots.append(var.aval)
                steps.append(new_step(Step, (primitive, in_slots, key_params, out)))
                memo[key] = out
            slot_of[vid] = out
    return Program.checked_by_construction(tuple(slots), tuple(steps), tuple(range(n_inputs)),
                                           tuple(slot_of[v.id] for v in outputs))


def renumbered(slots: Sequence[Slot], producer: dict[int, Step], inputs: Sequence[int],
               outputs: Sequence[int]) -> Program:
    """The program :func:`build` records from a graph given by slot numbers.

    ``build`` walks Vars; this walks slots, through ``producer`` (each slot's step), in the
    same depth-first order (arguments first, in order), sharing identical steps and
    dropping the ones no output needs. A pass that changes a few steps of a recorded
    program gives them here instead of recording every step again.

    Parameters
    ----------
    slots : sequence of Slot
        The abstract value of every slot number ``producer`` uses.
    producer : dict
        Slot number -> the step writing it (its ``output`` is not read: the key is).
    inputs : sequence of int
        The input slots, in call order (numbered ``0, 1, ...`` in the result).
    outputs : sequence of int
        The target slots, in return order.

    Returns
    -------
    Program
        Numbered as ``build`` numbers the same graph.
    """
    number: dict[int, int] = {i: n for n, i in enumerate(inputs)}
    new_slots = [slots[i] for i in inputs]
    steps: list[Step] = []
    memo: dict[tuple, int] = {}
    pending: set[int] = set()
    new_step = tuple.__new__
    for root in outputs:
        if root in number:
            continue
        stack: list[tuple[int, bool]] = [(root, False)]
        pop, push = stack.pop, stack.append
        while stack:
            slot, expanded = pop()
            if not expanded:
                if slot in number or slot in pending:
                    continue
                pending.add(slot)
                push((slot, True))
                for i in reversed(producer[slot].inputs):
                    if i not in number and i not in pending:
                        push((i, False))
                continue
            step = producer[slot]
            key = (step.primitive, tuple([number[i] for i in step.inputs]), step.params)
            out = memo.get(key)
            if out is None:
                out = memo[key] = len(new_slots)
                new_slots.append(slots[slot])
                steps.append(new_step(Step, (*key, out)))
            number[slot] = out
    return Program.checked_by_construction(tuple(new_slots), tuple(steps),
                                           tuple(range(len(inputs))),
                                           tuple(number[i] for i in outputs))


def graft(roots: dict[int, Var], slot_of: dict[int, int], slots: list[Slot],
          producer: dict[int, Step]) -> list[int]:
    """Write the steps of new Vars into a graph of slot numbers (see :func:`renumbered`).

    Parameters
    ----------
    roots : dict
        Slot number -> the Var that now computes it: its step replaces the slot's.
    slot_of : dict
        Var id -> slot number, for the Vars that stand for existing slots (and for
        ``roots``, added here); the walk stops at them.
    slots, producer : list, dict
        The graph, extended in place: Vars the roots read that stand for no slot get new
        slot numbers at the end of ``slots`` (constants become ``const`` steps).

    Returns
    -------
    list of int
        The slots written, in an order where a step comes after the new steps it reads
        (each root after its own new steps; the roots in the order given).
    """
    written: list[int] = []
    for slot, var in roots.items():
        slot_of[var.id] = slot
    for slot, root in roots.items():
        seen: set[int] = set()
        stack: list[tuple[Var, bool]] = [(root, False)]
        while stack:
            var, expanded = stack.pop()
            if not expanded:
                if var.id in seen or (var is not root and var.id in slot_of):
                    continue
                seen.add(var.id)
                stack.append((var, True))
                if not var.const:
                    for arg in reversed(var.creator.args):
                        if arg.id not in slot_of and arg.id not in seen:
                            stack.append((arg, False))
                continue
            if var is root:
                out = slot
            else:
                out = slot_of[var.id] = len(slots)
                slots.append(var.aval)
            if var.const:
                params = const_params(var.value)
                producer[out] = Step(const_p, (), tuple(sorted(params.items())), out)
            else:
                op = var.creator
                key_params = tuple(sorted(op.params.items())) if op.params else ()
                producer[out] = Step(op.primitive, tuple([slot_of[a.id] for a in op.args]),
                                     key_params, out)
            written.append(out)
    return written


__all__ = ["build", "graft", "rebind", "renumbered"]
