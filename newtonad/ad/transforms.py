"""Program transformations: jvp, partial_eval, transpose, and what they compose into.

As in JAX's autodidax, each primitive has a jvp rule and only the
linear ones have a transpose rule; everything else is derived:

* ``linearize = partial_eval ∘ jvp``: the jvp program split into a primal program
  (primal inputs → outputs and residuals) and a structurally linear program
  (primal inputs, residuals and tangent frames → output tangent frames);
* ``vjp = transpose ∘ linearize``: the reverse pass over the backpropagation graph,
  cotangents accumulated by addition where a slot has several consumers (fan-out);
* ``hvp = jvp ∘ grad``: forward-over-reverse, a frame of k velocity columns sharing
  the gradient's single cotangent column (forward-over-reverse).

Every transform maps Programs to Programs by re-binding steps on fresh tracers, so
derived programs are ordinary programs: they can be simplified, compiled, inlined
into an enclosing trace, and differentiated again.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import math
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np

from .gc_pause import gc_paused
from .primitives.core import Frame, UndefPrimal, const_p
from .primitives.elementwise import add_any, convert, mul, mul_p
from .primitives.structural import broadcast_to, zeros
from .program import SHAPE_MEMO, ArrayConst, Program, Slot, Step, output_slot
from .rebuild import build, graft, rebind, renumbered
from .remat import choose as choose_residuals
from .remat import slot_kinds
from .var import REWRITING, Op, Var, bind, new_tracer

#: Derivations made, by kind (``value_and_grad``, ``hvp``, ...): tests and benchmarks count
#: them to see that a cache served a request instead.
DERIVATIONS: collections.Counter = collections.Counter()


def clear_caches() -> None:
    """Forget every derived program cached by program (benchmarks time cold derivations)."""
    grad_program.cache_clear()
    _derived.cache_clear()
    _rewidthed.cache_clear()
    _template_width.cache_clear()


def _build(inputs: Sequence[Var], outputs: Sequence[Any]) -> Program:
    """A program from fresh roots to outputs (what ``to_program`` records; a Var from
    outside this transform is a bug in a rule, and raises)."""
    return build(inputs, outputs)


def _interpret(program: Program, args: Sequence[Any]) -> list[Any]:
    """Run ``program`` on Vars by re-applying each step (``trace.interpret``, each step's
    output slot taken from the program)."""
    env: dict[int, Any] = dict(zip(program.inputs, args))
    slots = program.slots
    for step in program.steps:
        env[step.output] = rebind(step, [*map(env.__getitem__, step.inputs)], slots)
    return [env[i] for i in program.outputs]


def _tracers(slots: Sequence[Slot]) -> list[Var]:
    return [new_tracer(s) for s in slots]


def frame_slot(slot: Slot, k: int | None) -> Slot:
    """The slot of a frame of ``k`` directions at ``slot``: shape ``s + (k,)``.

    ``k=None`` means a single direction without a frame axis (shape ``s``).
    """
    return Slot(slot.shape + (() if k is None else (k,)), "float64")


@functools.lru_cache(maxsize=None)
def _is_float(dtype: str) -> bool:
    """Whether a slot of dtype name ``dtype`` carries tangents (``var.is_float``)."""
    return np.dtype(dtype).kind == "f"


def _fit(t: Any, shape: tuple[int, ...]) -> Any:
    """Bring a rule's tangent to the exact frame shape (scalar → broadcast, dtype)."""
    if t.aval.dtype != "float64":
        t = convert(t, dtype="float64")
    return t if t.shape == shape else broadcast_to(t, shape)


@gc_paused
def select_outputs(program: Program, keep: Sequence[int]) -> Program:
    """The same program returning only the outputs at positions ``keep`` (dead code dropped)."""
    roots = _tracers(program.in_slots)
    outs = _interpret(program, roots)
    return _build(roots, [outs[i] for i in keep])


# ---- jvp ----------------------------------------------------------------------------------

@gc_paused
def jvp_program(program: Program, k: int | None, wrt: Sequence[int] = (0,),
                keep: Sequence[int] | None = None) -> Program:
    """Forward mode over tangent frames of ``k`` columns.

    Returns a program taking the original inputs followed by one tangent frame
    (shape ``s + (k,)``; ``s`` when ``k`` is None) per input listed in ``wrt``, and
    returning the original outputs followed by their tangent frames. Inputs not in
    ``wrt`` have zero tangents, kept symbolic: no code is generated for them. ``keep``:
    return only the outputs at these positions of that list (``select_outputs`` in the
    same pass).
    """
    primals = _tracers(program.in_slots)
    outs, touts, tangents_in = _jvp_values(program, k, wrt, primals)
    results = outs + touts
    return _build(primals + tangents_in, results if keep is None else [results[j] for j in keep])


# ---- partial evaluation --------------------------------------------------------------------

@gc_paused
def fold_scalings(program: Program, known: Sequence[bool],
                  keep: Sequence[int] | None = None) -> Program:
    """Merge chains of scalings of an unknown value by known factors.

    ``neg(mul(div(u, a), b))`` with ``u`` unknown and ``a``, ``b`` known becomes
    ``mul(u, -(b / a))``: the product of the factors is known, so after partial
    evaluation the linear program reads one residual instead of several and does one
    multiplication per element. An intermediate is folded only when it has no other
    reader (otherwise it is needed anyway). Which steps are scalings, of what by what,
    each primitive says itself (``primitive.algebra.scaling``). ``keep``: return only the
    outputs at these positions (``select_outputs`` in the same pass).
    """
    kind = slot_kinds(program, known)
    readers = _readers(program)
    outputs = program.outputs if keep is None else [program.outputs[j] for j in keep]
    folds = _scaling_folds(program, kind, readers)
    if folds is None:  # re-binding would change more than the scalings: record it again
        return _fold_scalings_recorded(program, kind, readers, outputs)
    changed, slot_of = folds
    if not changed:
        return program if keep is None else _selected(program, keep)
    # Only the folded steps are new: write them into the program's graph of slots and
    # number it as recording the whole program again would (``build``'s walk).
    slots = list(program.slots)
    producer = {step.output: step for step in program.steps}
    graft(changed, slot_of, slots, producer)
    return renumbered(slots, producer, program.inputs, outputs)


def _readers(program: Program) -> dict[int, int]:
    """How many times each slot is read: by steps, and once more per output place."""
    readers: dict[int, int] = {}
    for step in program.steps:
        for i in step.inputs:
            readers[i] = readers.get(i, 0) + 1
    for i in program.outputs:
        readers[i] = readers.get(i, 0) + 1
    return readers


def _scaling_folds(program: Program, kind: dict[int, str], readers: dict[int, int]
                   ) -> tuple[dict[int, Var], dict[int, int]] | None:
    """The steps :func:`fold_scalings` rewrites, as Vars over Vars standing for slots.

    Returns ``(changed, slot_of)``: slot -> the Var now computing it, and Var id -> slot
    for the Vars standing for the program's slots (the ones the new Vars read). ``None``
    when recording the program again would also fold a step of constant operands (a
    program ``build`` did not record).
    """
    slots = program.slots
    stand_in: dict[int, Any] = {}
    slot_of: dict[int, int] = {}
    const_step: dict[int, Step] = {}

    def var(i: int) -> Any:
        v = stand_in.get(i)
        if v is None:
            step = const_step.get(i)
            v = stand_in[i] = new_tracer(slots[i]) if step is None else \
                Var(const_p.impl(**step.kwargs), const=True)
            slot_of[v.id] = i
        return v

    scaled: dict[int, tuple[Any, Any]] = {}  # slot -> (unknown base, known factor)
    changed: dict[int, Var] = {}
    for step in program.steps:
        primitive, ins, out = step.primitive, step.inputs, step.output
        if primitive is const_p:
            const_step[out] = step
            continue
        if ins and all([i in const_step for i in ins]) and \
                slots[out].size <= max([1] + [slots[i].size for i in ins]):
            return None
        scaling = primitive.algebra.scaling
        if scaling is None or kind[out] != "unknown":
            continue
        args = [var(i) for i in ins]
        split = scaling([kind[i] == "unknown" for i in ins], args)
        if split is None:
            continue
        u, factor = ins[split[0]], split[1]
        if u in scaled and readers[u] == 1:
            base, inner = scaled[u]
            factor = mul(inner, factor)
        elif isinstance(factor, float) or (primitive is mul_p and split[0] == 0):
            scaled[out] = (var(u), factor)  # already as it would be written: kept
            continue
        else:
            base = var(u)
        scaled[out] = (base, factor)
        new = mul(base, factor)
        if new.shape != slots[out].shape:
            new = _fit(new, slots[out].shape)
        if new.aval != slots[out]:
            return None
        changed[out] = stand_in[out] = new
    return changed, slot_of


def _fold_scalings_recorded(program: Program, kind: dict[int, str], readers: dict[int, int],
                            outputs: Sequence[int]) -> Program:
    """:func:`fold_scalings` by recording every step of ``program`` again."""
    roots = _tracers(program.in_slots)
    env: dict[int, Any] = dict(zip(program.inputs, roots))
    scaled: dict[int, tuple[Any, Any]] = {}  # slot -> (unknown base, known factor)
    for step in program.steps:
        args = [*map(env.__getitem__, step.inputs)]
        scaling = step.primitive.algebra.scaling
        split = None
        if kind[step.output] == "unknown" and scaling is not None:
            split = scaling([kind[i] == "unknown" for i in step.inputs], args)
        if split is None:
            env[step.output] = rebind(step, args, program.slots)
            continue
        u, factor = step.inputs[split[0]], split[1]
        if u in scaled and readers[u] == 1:
            base, inner = scaled[u]
            factor = mul(inner, factor)
        elif isinstance(factor, float):  # nothing to fold into (a plain negation): keep it
            env[step.output] = rebind(step, args, program.slots)
            scaled[step.output] = (env[u], factor)
            continue
        else:
            base = env[u]
        scaled[step.output] = (base, factor)
        out = mul(base, factor)
        env[step.output] = _fit(out, program.slots[step.output].shape) if \
            out.shape != program.slots[step.output].shape else out
    return _build(roots, [env[i] for i in outputs])


class _Split(NamedTuple):
    """Which slots of a program partial evaluation computes where."""

    kind: dict[int, str]  # each slot: "known", "unknown" or "const" (see remat.slot_kinds)
    known_in: list[int]  # the known inputs
    unknown_in: list[int]  # the unknown inputs
    residuals: list[int]  # known values the unknown part loads (not known inputs)
    recomputed: set[int]  # known values the unknown part computes itself


def _split(program: Program, known: Sequence[bool], n_known_outputs: int,
           remat: bool) -> _Split:
    """The partition :func:`partial_eval` makes of ``program``."""
    kind = slot_kinds(program, known)
    for i in program.outputs[:n_known_outputs]:
        if kind[i] == "unknown":
            raise ValueError("partial_eval: an output asked to be known depends on unknown inputs")

    needed: list[int] = []
    for step in program.steps:
        if kind[step.output] == "unknown":
            for i in step.inputs:
                if kind[i] == "known":
                    needed.append(i)
    needed += [i for i in program.outputs[n_known_outputs:] if kind[i] == "known"]
    needed = list(dict.fromkeys(needed))
    residuals, recomputed = choose_residuals(program, kind, needed) if remat else (needed, set())

    known_in = [i for i, k in zip(program.inputs, known) if k]
    unknown_in = [i for i, k in zip(program.inputs, known) if not k]
    passed = set(known_in)
    residuals = [i for i in residuals if i not in passed]
    return _Split(kind, known_in, unknown_in, residuals, recomputed)


def _known_half(program: Program, split: _Split, roots: Sequence[Any], n_known_outputs: int,
                apply: Callable = rebind) -> list[Any]:
    """The first ``n_known_outputs`` outputs and the residuals of ``program`` from the
    known inputs ``roots``, each known step re-applied by ``apply``."""
    env = _known_env(program, split, roots, apply)
    return [env[i] for i in program.outputs[:n_known_outputs]] + [env[i] for i in split.residuals]


def _known_env(program: Program, split: _Split, roots: Sequence[Any],
               apply: Callable = rebind) -> dict[int, Any]:
    """Every known (and constant) slot of ``program`` from the known inputs ``roots``,
    each step re-applied by ``apply``."""
    kind, slots = split.kind, program.slots
    env = dict(zip(split.known_in, roots))
    for step in program.steps:
        if kind[step.output] != "unknown":
            env[step.output] = apply(step, [*map(env.__getitem__, step.inputs)], slots)
    return env


def _unknown_half(program: Program, split: _Split, n_known_outputs: int,
                  apply: Callable = rebind) -> Program:
    """The program from the known inputs, the residuals and the unknown inputs to the
    remaining outputs, each step re-applied by ``apply``."""
    kind, slots, recomputed = split.kind, program.slots, split.recomputed
    given_roots = _tracers([slots[i] for i in split.known_in])
    res_roots = _tracers([slots[i] for i in split.residuals])
    lin_roots = _tracers([slots[i] for i in split.unknown_in])
    env = dict(zip(split.known_in, given_roots)) | dict(zip(split.residuals, res_roots)) \
        | dict(zip(split.unknown_in, lin_roots))
    for step in program.steps:
        if step.output not in env and (kind[step.output] != "known" or step.output in recomputed):
            env[step.output] = apply(step, [*map(env.__getitem__, step.inputs)], slots)
    return _build(given_roots + res_roots + lin_roots,
                  [env[i] for i in program.outputs[n_known_outputs:]])


@gc_paused
def partial_eval(program: Program, known: Sequence[bool], n_known_outputs: int,
                 remat: bool = False, simplified: bool = False) -> tuple[Program, Program]:
    """Split ``program`` by which inputs are known (partial evaluation).

    A step is known when all its inputs are known. Steps that depend on no input at
    all (constants) are recomputed wherever needed instead of being passed along.
    Without ``remat`` every known value the unknown steps read is a residual; with
    ``remat`` the residuals are chosen by :func:`.remat.choose` – a few stored values
    (with the known inputs, such as ``x`` itself) from which the unknown program
    recomputes the cheap elementwise rest. ``simplified``: both programs simplified
    (:func:`simplify`) as they are made, in the same pass.

    Returns ``(known_program, unknown_program)``: the known program takes the known
    inputs and returns the first ``n_known_outputs`` outputs followed by the residuals;
    the unknown program takes the known inputs, then the residuals, then the unknown
    inputs, and returns the remaining outputs. Known inputs are passed through, never
    returned as residuals: data such as a design matrix is not copied once per point.
    """
    split = _split(program, known, n_known_outputs, remat)
    apply = _simplified_step if simplified else rebind
    roots = _tracers([program.slots[i] for i in split.known_in])
    known_program = _build(roots, _known_half(program, split, roots, n_known_outputs, apply))
    return known_program, _unknown_half(program, split, n_known_outputs, apply)


def linearize_program(program: Program, k: int | None, wrt: Sequence[int] = (0,)
                      ) -> tuple[Program, Program]:
    """``linearize = partial_eval ∘ jvp``.

    Returns ``(primal_program, linear_program)``: the primal program maps the inputs
    to the outputs followed by residuals; the linear program maps the inputs, the
    residuals and one tangent frame per ``wrt`` input to the output tangent frames.
    """
    known = [True] * len(program.inputs) + [False] * len(wrt)
    jp = fold_scalings(jvp_program(program, k, wrt), known)
    return partial_eval(jp, known, len(program.outputs))


# ---- transpose -----------------------------------------------------------------------------

@gc_paused
def transpose_program(program: Program, linear: Sequence[bool]) -> Program:
    """Transpose a program that is structurally linear in the inputs marked ``linear``.

    The result takes the non-linear inputs followed by one cotangent per output and
    returns one cotangent per linear input. Steps that do not depend on a linear input
    run forward first; the linear ones run backwards over the backpropagation graph,
    each pulling its output's cotangent back with its transpose rule, and a slot read
    by several steps sums the cotangents that reach it (fan-out accumulation).
    """
    lin_in = [i for i, is_lin in zip(program.inputs, linear) if is_lin]
    fixed_in = [i for i, is_lin in zip(program.inputs, linear) if not is_lin]
    roots = _tracers([program.slots[i] for i in fixed_in])
    cts_in = _tracers([Slot(program.slots[i].shape, "float64") for i in program.outputs])
    lin_slots = set(lin_in)
    env = dict(zip(fixed_in, roots))
    linear_steps = []
    for step in program.steps:
        if any(i in lin_slots for i in step.inputs):
            lin_slots.add(step.output)
            linear_steps.append(step)
        else:
            env[step.output] = rebind(step, [*map(env.__getitem__, step.inputs)], program.slots)
    outs = _pull_back(program.slots, linear_steps, lin_slots, env, program.outputs, cts_in,
                      lin_in)
    return _build(roots + cts_in, outs)


def _pull_back(slots: Sequence[Slot], linear_steps: Sequence[Step], lin_slots: set[int],
               env: dict[int, Any], outputs: Sequence[int], cts_in: Sequence[Var],
               lin_in: Sequence[int]) -> list[Any]:
    """The reverse pass of :func:`transpose_program`: the cotangents ``cts_in`` of
    ``outputs`` pulled back through ``linear_steps`` (in program order; they write the
    slots ``lin_slots`` beside the linear inputs ``lin_in``) to each of ``lin_in``; the
    non-linear values the rules read are in ``env``."""
    ct_env: dict[int, Any] = {}
    for i, ct in zip(outputs, cts_in):
        if i in lin_slots:
            ct_env[i] = add_any(ct_env.get(i), ct)
    for step in reversed(linear_steps):
        ct = ct_env.pop(step.output, None)
        if ct is None:
            continue  # a symbolic zero: nothing flows back
        if step.primitive.transpose is None:
            raise ValueError(f"cannot transpose: {step.primitive} is not linear, but the program "
                             "applies it to a linear input")
        args = [UndefPrimal(slots[i]) if i in lin_slots else env[i] for i in step.inputs]
        cts = step.primitive.transpose(ct, *args, **step.kwargs)
        for i, c in zip(step.inputs, cts):
            if c is not None and i in lin_slots:
                ct_env[i] = add_any(ct_env.get(i), c)
    return [ct_env[i] if i in ct_env else zeros(slots[i].shape) for i in lin_in]


# ---- composites: vjp, grad, hvp --------------------------------------------------------------

def _pulled(program: Program, k: int | None, wrt: Sequence[int], xs: Sequence[Var],
            ws: Sequence[Any]) -> list[Any]:
    """The outputs of ``program`` at ``xs`` followed by the cotangents pulled back from
    ``ws`` to the ``wrt`` inputs, simplified.

    ``transpose ∘ linearize``, run where it is used, as autodidax's ``linearize`` runs
    ``jvp`` under partial evaluation: the jvp rules run on the live values of ``xs``, so
    what they compute of the primal is made at once (simplified, see :func:`simplify`)
    and only the tangent (linear) operations are recorded, on a tape in the order they
    are made (:class:`_Linearizing`). The tape's chains of scalings are folded
    (:func:`_folded_tape`, as :func:`fold_scalings` folds a program's), then transposed
    backwards on the same live values. Neither the jvp program nor its halves is
    recorded as a program.
    """
    tape = _Linearizing()
    outs, touts, tangents_in = _jvp_values(program, k, wrt, xs, tape)
    linear = tape.linear
    with _simplifying():
        steps = _folded_tape(tape, touts)
        ct_env: dict[int, Any] = {}
        for t, ct in zip(touts, ws):
            if isinstance(t, Var) and t.id in linear:
                ct_env[t.id] = add_any(ct_env.get(t.id), ct)
        for var in reversed(steps):
            ct = ct_env.pop(var.id, None)
            if ct is None:
                continue  # a symbolic zero: nothing flows back
            op = var.creator
            if op.primitive.transpose is None:
                raise ValueError(f"cannot transpose: {op.primitive} is not linear, but the "
                                 "program applies it to a linear input")
            args = [UndefPrimal(a.aval) if a.id in linear else a for a in op.args]
            cts = op.primitive.transpose(ct, *args, **op.params)
            for a, c in zip(op.args, cts):
                if c is not None and a.id in linear:
                    ct_env[a.id] = add_any(ct_env.get(a.id), c)
    cts_out = [ct_env[t.id] if t.id in ct_env else zeros(t.aval.shape) for t in tangents_in]
    return outs + cts_out


class _Linearizing:
    """:func:`bind`'s hook while jvp rules run on live primal values: an operation that
    reads a tangent (a linear Var) is recorded on :attr:`tape` as a linear Var, never
    simplified or folded; any other is made at once, simplified (:func:`_rewritten_bind`).
    """

    def __init__(self) -> None:
        self.linear: set[int] = set()  # ids of the linear Vars: tangent inputs and the tape's
        self.tape: list[Var] = []  # linear Vars in the order they were made

    def __call__(self, primitive: Any, args: Sequence[Var], aval: Slot, params: dict[str, Any],
                 all_const: bool) -> Any:
        linear = self.linear
        for a in args:
            if a.id in linear:
                break
        else:
            return _rewritten_bind(primitive, args, aval, params, all_const)
        var = Var(None, aval=aval, creator=Op(primitive, tuple(args), params))
        linear.add(var.id)
        self.tape.append(var)
        return var


def _jvp_values(program: Program, k: int | None, wrt: Sequence[int], primals: Sequence[Var],
                tape: _Linearizing | None = None) -> tuple[list[Any], list[Any], list[Var]]:
    """``program``'s outputs at ``primals`` and their tangents over frames of ``k``
    columns; returns ``(outputs, tangents, tangent inputs)``.

    Without ``tape`` every primal step is re-bound as it is (:func:`jvp_program` records
    them all). With one, the primal steps are simplified as they are made and the jvp
    rules run under ``tape``, which tapes the tangent operations (:func:`_pulled`).
    """
    tangents_in = _tracers([frame_slot(program.slots[program.inputs[i]], k) for i in wrt])
    if tape is not None:
        tape.linear.update(t.id for t in tangents_in)
    env: dict[int, Any] = dict(zip(program.inputs, primals))
    tenv: dict[int, Any] = {program.inputs[i]: t for i, t in zip(wrt, tangents_in)}
    frame = Frame(k)  # every rule is told how its tangents are laid out
    slots, cols = program.slots, frame.cols
    rewriting = REWRITING
    previous = rewriting.hook
    try:
        for step in program.steps:
            ins = step.inputs
            args = [*map(env.__getitem__, ins)]
            if tape is None:
                out = rebind(step, args, slots)
            else:
                rewriting.hook = None  # the primal step is simplified as a step, plainly
                out = _simplified_step(step, args, slots)
            env[step.output] = out
            tangents = [*map(tenv.get, ins)]
            for t in tangents:
                if t is not None:
                    break
            else:
                continue  # no input has a tangent (compared by identity: Var's == is traced)
            out_slot = slots[step.output]
            if _is_float(out_slot.dtype):
                if tape is not None:
                    rewriting.hook = tape
                t_out = step.primitive.jvp(frame, args, tangents, out, **dict(step.params))
                if t_out is not None:
                    tenv[step.output] = _fit(t_out, out_slot.shape + cols)
    finally:
        rewriting.hook = previous
    outs = [env[i] for i in program.outputs]
    touts = [tenv[i] if i in tenv else zeros(frame_slot(slots[i], k).shape)
             for i in program.outputs]
    return outs, touts, tangents_in


def _folded_tape(tape: _Linearizing, touts: Sequence[Any]) -> list[Var]:
    """The linear Vars of ``tape`` that the tangents ``touts`` read, in the tape's order,
    with chains of scalings folded as :func:`fold_scalings` folds them in a program.

    ``neg(mul(div(u, a), b))`` with ``u`` linear and ``a``, ``b`` known becomes
    ``mul(u, -(b / a))``: the folded Var is given the new creator (a linear Var is this
    pass's own), the product of the factors is a known value made at once, and an
    intermediate is folded away only when it has no other reader.
    """
    linear = tape.linear
    readers: dict[int, int] = {}
    live: set[int] = set()
    for t in touts:
        if isinstance(t, Var) and t.id in linear:
            live.add(t.id)
            readers[t.id] = readers.get(t.id, 0) + 1
    kept = []
    for var in reversed(tape.tape):
        if var.id not in live:
            continue  # a tangent no output reads
        kept.append(var)
        for a in var.creator.args:
            if a.id in linear:
                live.add(a.id)
                readers[a.id] = readers.get(a.id, 0) + 1
    kept.reverse()
    steps: list[Var] = []
    scaled: dict[int, tuple[Var, Any]] = {}  # linear Var id -> (linear base, known factor)
    for var in kept:
        op = var.creator
        scaling = op.primitive.algebra.scaling
        split = None if scaling is None else \
            scaling([a.id in linear for a in op.args], list(op.args))
        if split is None:
            steps.append(var)
            continue
        u, factor = op.args[split[0]], split[1]
        if u.id in scaled and readers[u.id] == 1:
            base, inner = scaled[u.id]
            factor = mul(inner, factor)
        elif isinstance(factor, float) or (op.primitive is mul_p and split[0] == 0):
            scaled[var.id] = (u, factor)  # already as it would be written: kept
            steps.append(var)
            continue
        else:
            base = u
        made = len(tape.tape)
        REWRITING.hook = tape  # the new scaling is linear: on the tape
        try:
            new = mul(base, factor)
            if new.shape != var.aval.shape:
                new = _fit(new, var.aval.shape)
        finally:
            REWRITING.hook = _rewritten_bind
        if new.aval != var.aval or new.creator is None or new.id not in linear:
            steps.append(var)  # not a scaling of the same slot: left as it is
            continue
        steps.extend(v for v in tape.tape[made:] if v is not new)
        var.creator = new.creator
        scaled[var.id] = (base, factor)
        steps.append(var)
    return steps


def _rewritten_bind(primitive: Any, args: Sequence[Var], aval: Slot, params: dict[str, Any],
                    all_const: bool) -> Any:
    """:func:`bind`'s hook while a pullback is made on live values: the step rewritten
    as :func:`_simplified_step` rewrites the step a recorded pullback holds (``None``:
    bound as it is). A step of constants folds (rewriting it first would give the same
    value); the binds a rewrite makes are plain ones."""
    if all_const or not _has_identities(primitive):
        return None
    hook, REWRITING.hook = REWRITING.hook, None
    try:
        return _rewrite(primitive, list(args), aval, params)
    finally:
        REWRITING.hook = hook


@contextlib.contextmanager
def _simplifying() -> Iterator[None]:
    """Every :func:`bind` in this thread rewritten by :func:`_rewritten_bind`."""
    previous = REWRITING.hook
    REWRITING.hook = _rewritten_bind
    try:
        yield
    finally:
        REWRITING.hook = previous


@gc_paused
def vjp_program(program: Program, k: int | None, wrt: Sequence[int] = (0,)) -> Program:
    """``vjp = transpose ∘ linearize`` over cotangent frames of ``k`` columns.

    Returns a program taking the inputs followed by one cotangent frame per output
    (shape ``out + (k,)``, or ``out`` when ``k`` is None) and returning the outputs
    followed by one cotangent frame per ``wrt`` input.
    """
    xs = _tracers(program.in_slots)
    ws = _tracers([frame_slot(s, k) for s in program.out_slots])
    return _build(xs + ws, _pulled(program, k, wrt, xs, ws))


def _check_scalar(program: Program) -> None:
    if len(program.outputs) != 1 or program.out_slots[0].shape != ():
        shapes = [s.shape for s in program.out_slots]
        raise ValueError(f"a gradient needs a function with one scalar output, got output "
                         f"shapes {shapes}; reduce it (e.g. np.sum) or use jacobian / vjp")


def value_and_grad_program(program: Program) -> Program:
    """Inputs as ``program``; outputs ``(f, ∇f)`` with respect to the first input.

    The reverse pass is vjp with the single cotangent 1. Derived once per program
    (equal programs share it, see :func:`_derived`).
    """
    _check_scalar(program)
    return _derived("value_and_grad", program, None)


@gc_paused
def _value_and_grad_direct(program: Program, k: None) -> Program:
    # The vjp with its cotangent bound to the constant 1 as it is simplified
    xs = _tracers(program.in_slots)
    y, ct = _pulled(program, None, (0,), xs, [Var(np.ones(()), const=True)])  # no frame axis
    return _build(xs, [y, ct])


@functools.lru_cache(maxsize=256)
@gc_paused
def grad_program(program: Program) -> Program:
    """Inputs as ``program``; output ``∇f``."""
    return select_outputs(value_and_grad_program(program), [1])


def hvp_program(program: Program, k: int | None) -> Program:
    """Forward-over-reverse: inputs ``(x, *args, V)``, output ``H V``.

    The jvp of the gradient program, with a frame ``V`` of ``k`` velocity columns
    that all share the gradient's single cotangent column. The gradient itself is
    dropped (with the work only it needs): a product costs one pass that writes
    only ``H V``. Derived once per program; a new frame width is the program of
    another width with its frame axes resized (:func:`_framed`).
    """
    return _framed("hvp", program, k)


@gc_paused
def _hvp_direct(program: Program, k: int | None) -> Program:
    # the jvp of (f, ∇f) keeping only H V: the gradient program's own pass is not needed
    # (simplifying the jvp's output H V alone records what simplifying the whole jvp and
    # keeping H V records: rewrites are local)
    return _simplify_built(jvp_program(value_and_grad_program(program), k, keep=[3]))


def linearized_hvp(program: Program, k: int | None) -> tuple[Program, Program]:
    """The HVP split once per point (partial evaluation of forward-over-reverse).

    Returns ``(residual_program, linear_program)``: ``(x, *args) -> (f, ∇f, *residuals)``
    runs once per x (it is a value-and-gradient pass that also keeps what the
    Hessian needs), then ``(x, *args, *residuals, V) -> H V`` costs only the linear
    pass for each frame ``V``.

    The residuals are rematerialised (:mod:`.remat`): the linear program loads a few
    stored values and recomputes the cheap elementwise rest, because a stored array
    costs a memory stream on every application. ``x`` and the data arguments are
    passed to the linear program as they are, never copied into residuals; a caller
    that keeps the linear map must keep its own copy of ``x``. Cached as
    :func:`hvp_program` is.
    """
    return _framed("linearized_hvp", program, k)


@gc_paused
def _linearized_hvp_direct(program: Program, k: int | None) -> tuple[Program, Program]:
    known = [True] * len(program.inputs) + [False]
    jp = jvp_program(value_and_grad_program(program), k)  # f, ∇f, ∇f·V, H V
    jp = fold_scalings(jp, known, keep=[0, 1, 3])
    return partial_eval(jp, known, 2, remat=True, simplified=True)


# ---- derived programs cached by program, frame widths by resizing ---------------------------

#: Derivations by kind, each ``(program, k) -> Program or tuple of Programs``.
_DIRECT = {"value_and_grad": _value_and_grad_direct, "hvp": _hvp_direct,
           "linearized_hvp": _linearized_hvp_direct}


@functools.lru_cache(maxsize=32)
def _derived(kind: str, program: Program, k: int | None) -> Any:
    """The derivation ``kind`` of ``program`` at frame width ``k``, made once: programs
    are compared by structure, so a function traced again (a new ``Objective``, a new
    function object of the same code) reuses its derived programs."""
    DERIVATIONS[kind] += 1
    return _DIRECT[kind](program, k)


def _framed(kind: str, program: Program, k: int | None) -> Any:
    """``_derived(kind, program, k)``, made for a frame of ``k >= 2`` columns by resizing
    the frame axes of one template width's program instead of deriving again.

    The template width (:func:`_template_width`) is a length no axis or parameter of
    ``program`` has or is above, so every axis of that length in the derived program is
    a frame axis. Width 1 and no frame axis (``None``) are derived as they are: their
    programs are not a resized frame program (size-1 axes broadcast).
    """
    if k is None or k < 2:
        return _derived(kind, program, k)
    return _rewidthed(kind, program, k)


@functools.lru_cache(maxsize=64)
def _rewidthed(kind: str, program: Program, k: int) -> Any:
    width = _template_width(program)
    if k == width:
        return _derived(kind, program, k)
    template = _derived(kind, program, width)
    out = (rewidth(template, width, k) if isinstance(template, Program)
           else tuple(rewidth(p, width, k) for p in template))
    if out is None or (isinstance(out, tuple) and None in out):
        return _derived(kind, program, k)  # a frame axis this cannot resize: derive
    return out


#: The smallest template width: a prime, so that products of a program's lengths are
#: unlikely to meet it.
_MIN_WIDTH = 61


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, math.isqrt(n) + 1))


@functools.lru_cache(maxsize=32)
def _template_width(program: Program) -> int:
    """The smallest prime of at least :data:`_MIN_WIDTH` above every axis length of
    ``program`` and equal to none of its integer parameters.

    Above the lengths, not only different from them: the derived programs hold integers
    the program does not, such as the row indices of the slices that transpose a stack
    of many rows, and each of those is at most an axis length. A prime is no product of
    two lengths either.
    """
    lengths = {_MIN_WIDTH - 1}
    for slot in program.slots:
        lengths.update(slot.shape)
    used: set[int] = set()
    for step in program.steps:
        _integers(step.params, used)
    width = max(lengths) + 1
    while width in used or not _is_prime(width):
        width += 1
    return width


def _integers(value: Any, into: set[int]) -> None:
    """Add the integers found in nested params ``value`` to ``into``."""
    if isinstance(value, (tuple, list)):
        for v in value:
            _integers(v, into)
    elif isinstance(value, int) and not isinstance(value, bool):
        into.add(value)
    elif isinstance(value, ArrayConst):
        into.update(value.array.shape)


class _Fixed(Exception):
    """A parameter holds the old width where it cannot be resized (an array constant)."""


def _resized(value: Any, old: int, new: int) -> Any:
    """``value`` with every int ``old`` in it made ``new``; ``value`` itself when none is."""
    if value.__class__ is int:
        return new if value == old else value
    if isinstance(value, tuple):
        items = []
        changed = False
        for v in value:  # a loop, not a new tuple per level: most params hold no frame axis
            r = _resized(v, old, new)
            changed = changed or r is not v
            items.append(r)
        return tuple(items) if changed else value
    if isinstance(value, ArrayConst) and old in value.array.shape:
        raise _Fixed
    return value


def rewidth(program: Program, old: int, new: int) -> Program | None:
    """``program`` with every axis (and integer parameter) of length ``old`` made ``new``.

    Parameters
    ----------
    program : Program
        A program derived for frames of ``old`` columns, ``old`` being a length the
        program it was derived from has nowhere.
    old, new : int
        The frame widths.

    Returns
    -------
    Program or None
        The program for frames of ``new`` columns, checked by the shape rules; ``None``
        when an array constant has a frame axis or a shape rule disagrees.
    """
    made: dict[Slot, Slot] = {}  # a long program has few distinct slots: resize each once
    for s in set(program.slots):
        made[s] = s if old not in s.shape else \
            Slot(tuple(new if n == old else n for n in s.shape), s.dtype)
    slots = tuple(map(made.__getitem__, program.slots))
    resized = [old in s.shape for s in program.slots]
    # an axis of old made new equals what it equalled and is 1 where it was: elementwise
    # steps without params (whose rule is NumPy's broadcasting) need no check
    broadcasts_hold = old != 1 and new != 1
    # repr of params -> (params, resized, shape rule's answers by primitive and in-slots)
    seen: dict[str, tuple[Any, Any, dict[tuple, Slot]]] = {}
    steps = []
    try:
        for step in program.steps:
            params = step.params
            answers = None
            if params:
                # Long programs repeat a few params thousands of times. The entry is used
                # when its params are equal and print the same: repr tells 61 from 61.0
                # and True, which compare equal; equality tells constants that print alike.
                key = repr(params)
                entry = seen.get(key)
                if entry is None or entry[0] != params:
                    entry = seen[key] = (params, _resized(params, old, new), {})
                if entry[1] is not entry[0]:
                    params = entry[1]
                answers = entry[2]
            if params is not step.params:
                step = Step(step.primitive, step.inputs, params, step.output)
            elif not resized[step.output] and not any([resized[i] for i in step.inputs]):
                steps.append(step)  # nothing of it resized: its shape rule still holds
                continue
            elif broadcasts_hold and step.primitive.kind == "elementwise":
                steps.append(step)  # its rule is broadcasting, axis by axis: still holds
                continue
            in_slots = tuple(map(slots.__getitem__, step.inputs))
            # output_slot's memo read here first: this runs on nearly every step of a frame
            if answers is None:
                expected = SHAPE_MEMO.get((step.primitive, in_slots))
                if expected is None:
                    expected = output_slot(step.primitive, in_slots, step.params)
            else:  # the same params again: the rule's answer for these slots, kept here
                expected = answers.get((step.primitive, in_slots))
                if expected is None:
                    expected = answers[step.primitive, in_slots] = \
                        output_slot(step.primitive, in_slots, step.params)
            if expected != slots[step.output]:
                return None
            steps.append(step)
    except (_Fixed, ValueError, TypeError):
        return None
    # the order of steps and slots is the template's: only shape rules needed checking
    return Program.checked_by_construction(slots, tuple(steps), program.inputs,
                                           program.outputs)


# ---- simplification ----------------------------------------------------------------------------

def _uniform(x: Any) -> np.ndarray | None:
    """The value of a constant that is the same everywhere (seen through broadcasts)."""
    while isinstance(x, Var) and not x.const and x.creator is not None and \
            x.creator.primitive.algebra.transparent:
        x = x.creator.args[0]
    if isinstance(x, Var) and x.const and np.asarray(x.value).size == 1:
        return np.asarray(x.value).reshape(())
    return None


def _rewrite(primitive, args: list, out_aval: Slot, params: dict) -> Any:
    """Algebraic identities that keep shape and dtype; ``None`` when none applies.

    The identities are the primitive's own (``primitive.algebra``): identity elements,
    involutions, chains that collapse, conversions to the same dtype, and broadcast
    constants that may be scalars.
    """
    algebra = primitive.algebra
    if algebra.left_identity is not None or algebra.right_identity is not None \
            or algebra.scalar_operands:
        a, b = args
        ua, ub = _uniform(a), _uniform(b)
        if algebra.left_identity is not None and ua == algebra.left_identity \
                and b.aval.dtype == out_aval.dtype:
            return broadcast_to(b, out_aval.shape)
        if algebra.right_identity is not None and ub == algebra.right_identity \
                and a.aval.dtype == out_aval.dtype:
            return broadcast_to(a, out_aval.shape)
        if algebra.scalar_operands:
            # A broadcast constant next to a full-size operand becomes a scalar constant.
            if ub is not None and b.shape != () and a.aval.shape == out_aval.shape:
                return bind(primitive, a, Var(ub, const=True))
            if ua is not None and a.shape != () and b.aval.shape == out_aval.shape:
                return bind(primitive, Var(ua, const=True), b)
    elif algebra.involution or algebra.collapses:
        op = args[0].creator
        if op is not None and op.primitive is primitive and not args[0].const:
            if algebra.involution:
                return op.args[0]
            inner = op.args[0]
            return inner if inner.aval == out_aval else bind(primitive, inner, **params)
    elif algebra.noop_same_dtype and args[0].aval.dtype == out_aval.dtype:
        return args[0]
    return None


@functools.lru_cache(maxsize=None)
def _has_identities(primitive: Any) -> bool:
    """Whether :func:`_rewrite` has an identity for ``primitive`` at all."""
    a = primitive.algebra
    return primitive is not const_p and (
        a.left_identity is not None or a.right_identity is not None or a.scalar_operands
        or a.involution or a.collapses or a.noop_same_dtype)


def _simplified_step(step: Step, args: list, slots: Sequence[Slot]) -> Any:
    """``step`` re-applied to ``args`` with the algebraic identities of :func:`_rewrite`."""
    if _has_identities(step.primitive) and all([isinstance(a, Var) for a in args]):
        replaced = _rewrite(step.primitive, args, slots[step.output], step.kwargs)
        if replaced is not None:
            return replaced
    return rebind(step, args, slots)


def _simplified(program: Program, args: Sequence[Any], keep: Sequence[int] | None = None
                ) -> list[Any]:
    """The outputs (at positions ``keep``) of ``program`` run on ``args`` with every step
    simplified: what :func:`simplify` records, inlined where it is run."""
    env: dict[int, Any] = dict(zip(program.inputs, args))
    slots = program.slots
    for step in program.steps:
        env[step.output] = _simplified_step(step, [*map(env.__getitem__, step.inputs)], slots)
    outputs = program.outputs if keep is None else [program.outputs[j] for j in keep]
    return [env[i] for i in outputs]


def _rewrites_nothing(program: Program) -> bool:
    """Whether no step of ``program`` would be rewritten or folded by :func:`simplify`.

    Read from the program's slots, without running it: a step's arguments as simplify
    sees them are the Vars of the steps before it (none of which was rewritten, or this
    returns already), so ``_rewrite``'s tests are tests of the producing steps: a
    constant step is a constant Var, a transparent step is looked through, a step of
    the same primitive is the argument's creator. A step of constant operands whose
    output is no larger (one ``bind`` would fold) counts as rewritten.
    """
    slots = program.slots
    const_slot: set[int] = set()
    made_by: dict[int, Any] = {}  # slot -> the primitive of the step writing it
    uniform: dict[int, Any] = {}  # slot -> its one value, as _uniform finds it
    for step in program.steps:
        primitive, ins, out = step.primitive, step.inputs, step.output
        if primitive is const_p:
            const_slot.add(out)
            value = np.asarray(primitive.impl(**dict(step.params)))
            if value.size == 1:
                uniform[out] = value.reshape(())
            continue
        made_by[out] = primitive
        if ins and const_slot.issuperset(ins) and \
                slots[out].size <= max([1] + [slots[i].size for i in ins]):
            return False
        algebra = primitive.algebra
        if algebra.transparent and ins and ins[0] in uniform:
            uniform[out] = uniform[ins[0]]
        if not _has_identities(primitive):
            continue
        if algebra.left_identity is not None or algebra.right_identity is not None \
                or algebra.scalar_operands:
            a, b = ins
            ua, ub = uniform.get(a), uniform.get(b)
            out_slot = slots[out]
            if algebra.left_identity is not None and ua is not None \
                    and ua == algebra.left_identity and slots[b].dtype == out_slot.dtype:
                return False
            if algebra.right_identity is not None and ub is not None \
                    and ub == algebra.right_identity and slots[a].dtype == out_slot.dtype:
                return False
            if algebra.scalar_operands and (
                    (ub is not None and slots[b].shape != () and slots[a].shape == out_slot.shape)
                    or (ua is not None and slots[a].shape != ()
                        and slots[b].shape == out_slot.shape)):
                return False
        elif algebra.involution or algebra.collapses:
            if made_by.get(ins[0]) is primitive:
                return False
        elif algebra.noop_same_dtype and slots[ins[0]].dtype == slots[out].dtype:
            return False
    return True


def _selected(program: Program, keep: Sequence[int]) -> Program:
    """The outputs at positions ``keep`` of a program :func:`build` recorded, and the steps
    they need, numbered as ``build`` numbers them (a depth-first walk from the outputs)."""
    producer = {step.output: step for step in program.steps}
    return renumbered(program.slots, producer, program.inputs,
                      [program.outputs[j] for j in keep])


def _simplify_built(program: Program, keep: Sequence[int] | None = None) -> Program:
    """:func:`simplify` of a program :func:`build` recorded (inputs first, then the steps
    of a depth-first walk from its outputs, identical steps shared): when no step would
    be rewritten, simplifying only drops the steps the kept outputs do not need."""
    if not _rewrites_nothing(program):
        return simplify(program, keep)
    return program if keep is None else _selected(program, keep)


@gc_paused
def simplify(program: Program, keep: Sequence[int] | None = None) -> Program:
    """Constant folding, algebraic identities, common subexpressions and dead code.

    Folding happens in ``bind`` (all-constant steps), identities in ``_rewrite``,
    and ``to_program`` shares identical steps and drops unreachable ones. ``keep``:
    return only the outputs at these positions (``simplify(select_outputs(p, keep))``
    in one pass; rewrites are local, so the steps only dropped outputs need are
    rewritten, then dropped).

    Rewrites depend only on the structure of a step's (rewritten) arguments, never on
    which Var stands for a value or on the order of steps: simplifying a program as it
    is run inside another transform's pass records the same program as running it
    plainly, recording it and simplifying that. The derivations use this to save passes.
    """
    roots = _tracers(program.in_slots)
    return _build(roots, _simplified(program, roots, keep))


__all__ = ["jvp_program", "partial_eval", "fold_scalings", "linearize_program",
           "transpose_program", "vjp_program", "value_and_grad_program", "grad_program",
           "hvp_program", "linearized_hvp", "select_outputs", "simplify", "frame_slot",
           "rewidth", "clear_caches", "DERIVATIONS"]
