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
import functools
from typing import Any, Sequence

import numpy as np

from .gc_pause import gc_paused
from .primitives.core import Frame, UndefPrimal, const_p
from .primitives.elementwise import add_any, convert, mul
from .primitives.structural import broadcast_to, zeros
from .program import ArrayConst, Program, Slot, Step, output_slot
from .remat import choose as choose_residuals
from .remat import slot_kinds
from .trace import interpret, to_program
from .var import Var, bind, is_float, new_tracer

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
    """A program from fresh roots to outputs (None outputs are symbolic zeros)."""
    program, closed = to_program(inputs, outputs)
    if closed:  # a bug in a rule: it reached a Var from outside this transform
        raise RuntimeError("a transform produced a program with free variables")
    return program


def _tracers(slots: Sequence[Slot]) -> list[Var]:
    return [new_tracer(s) for s in slots]


def frame_slot(slot: Slot, k: int | None) -> Slot:
    """The slot of a frame of ``k`` directions at ``slot``: shape ``s + (k,)``.

    ``k=None`` means a single direction without a frame axis (shape ``s``).
    """
    return Slot(slot.shape + (() if k is None else (k,)), "float64")


def _fit(t: Any, shape: tuple[int, ...]) -> Any:
    """Bring a rule's tangent to the exact frame shape (scalar → broadcast, dtype)."""
    if t.aval.dtype != "float64":
        t = convert(t, dtype="float64")
    return t if t.shape == shape else broadcast_to(t, shape)


@gc_paused
def select_outputs(program: Program, keep: Sequence[int]) -> Program:
    """The same program returning only the outputs at positions ``keep`` (dead code dropped)."""
    roots = _tracers(program.in_slots)
    outs = interpret(program, roots)
    return _build(roots, [outs[i] for i in keep])


# ---- jvp ----------------------------------------------------------------------------------

@gc_paused
def jvp_program(program: Program, k: int | None, wrt: Sequence[int] = (0,)) -> Program:
    """Forward mode over tangent frames of ``k`` columns.

    Returns a program taking the original inputs followed by one tangent frame
    (shape ``s + (k,)``; ``s`` when ``k`` is None) per input listed in ``wrt``, and
    returning the original outputs followed by their tangent frames. Inputs not in
    ``wrt`` have zero tangents, kept symbolic: no code is generated for them.
    """
    primals = _tracers(program.in_slots)
    tangents_in = _tracers([frame_slot(program.slots[program.inputs[i]], k) for i in wrt])
    env: dict[int, Any] = dict(zip(program.inputs, primals))
    tenv: dict[int, Any] = {program.inputs[i]: t for i, t in zip(wrt, tangents_in)}
    frame = Frame(k)  # every rule is told how its tangents are laid out
    for step in program.steps:
        args = [env[i] for i in step.inputs]
        out = bind(step.primitive, *args, **step.kwargs)
        env[step.output] = out
        tangents = [tenv.get(i) for i in step.inputs]
        if any(t is not None for t in tangents) and is_float(program.slots[step.output]):
            t_out = step.primitive.jvp(frame, args, tangents, out, **step.kwargs)
            if t_out is not None:
                tenv[step.output] = _fit(t_out, frame_slot(program.slots[step.output], k).shape)
    outs = [env[i] for i in program.outputs]
    touts = [tenv[i] if i in tenv else zeros(frame_slot(program.slots[i], k).shape)
             for i in program.outputs]
    return _build(primals + tangents_in, outs + touts)


# ---- partial evaluation --------------------------------------------------------------------

@gc_paused
def fold_scalings(program: Program, known: Sequence[bool]) -> Program:
    """Merge chains of scalings of an unknown value by known factors.

    ``neg(mul(div(u, a), b))`` with ``u`` unknown and ``a``, ``b`` known becomes
    ``mul(u, -(b / a))``: the product of the factors is known, so after partial
    evaluation the linear program reads one residual instead of several and does one
    multiplication per element. An intermediate is folded only when it has no other
    reader (otherwise it is needed anyway). Which steps are scalings, of what by what,
    each primitive says itself (``primitive.algebra.scaling``).
    """
    kind = slot_kinds(program, known)
    readers: dict[int, int] = {}
    for step in program.steps:
        for i in step.inputs:
            readers[i] = readers.get(i, 0) + 1
    for i in program.outputs:
        readers[i] = readers.get(i, 0) + 1

    roots = _tracers(program.in_slots)
    env: dict[int, Any] = dict(zip(program.inputs, roots))
    scaled: dict[int, tuple[Any, Any]] = {}  # slot -> (unknown base, known factor)
    for step in program.steps:
        args = [env[i] for i in step.inputs]
        scaling = step.primitive.algebra.scaling
        split = None
        if kind[step.output] == "unknown" and scaling is not None:
            split = scaling([kind[i] == "unknown" for i in step.inputs], args)
        if split is None:
            env[step.output] = bind(step.primitive, *args, **step.kwargs)
            continue
        u, factor = step.inputs[split[0]], split[1]
        if u in scaled and readers[u] == 1:
            base, inner = scaled[u]
            factor = mul(inner, factor)
        elif isinstance(factor, float):  # nothing to fold into (a plain negation): keep it
            env[step.output] = bind(step.primitive, *args, **step.kwargs)
            scaled[step.output] = (env[u], factor)
            continue
        else:
            base = env[u]
        scaled[step.output] = (base, factor)
        out = mul(base, factor)
        env[step.output] = _fit(out, program.slots[step.output].shape) if \
            out.shape != program.slots[step.output].shape else out
    return _build(roots, [env[i] for i in program.outputs])


@gc_paused
def partial_eval(program: Program, known: Sequence[bool], n_known_outputs: int,
                 remat: bool = False) -> tuple[Program, Program]:
    """Split ``program`` by which inputs are known (partial evaluation).

    A step is known when all its inputs are known. Steps that depend on no input at
    all (constants) are recomputed wherever needed instead of being passed along.
    Without ``remat`` every known value the unknown steps read is a residual; with
    ``remat`` the residuals are chosen by :func:`.remat.choose` – a few stored values
    (with the known inputs, such as ``x`` itself) from which the unknown program
    recomputes the cheap elementwise rest.

    Returns ``(known_program, unknown_program)``: the known program takes the known
    inputs and returns the first ``n_known_outputs`` outputs followed by the residuals;
    the unknown program takes the known inputs, then the residuals, then the unknown
    inputs, and returns the remaining outputs. Known inputs are passed through, never
    returned as residuals: data such as a design matrix is not copied once per point.
    """
    kind = slot_kinds(program, known)
    for i in program.outputs[:n_known_outputs]:
        if kind[i] == "unknown":
            raise ValueError("partial_eval: an output asked to be known depends on unknown inputs")

    needed: list[int] = []
    for step in program.steps:
        if kind[step.output] == "unknown":
            needed += [i for i in step.inputs if kind[i] == "known"]
    needed += [i for i in program.outputs[n_known_outputs:] if kind[i] == "known"]
    needed = list(dict.fromkeys(needed))
    residuals, recomputed = choose_residuals(program, kind, needed) if remat else (needed, set())

    known_in = [i for i, k in zip(program.inputs, known) if k]
    unknown_in = [i for i, k in zip(program.inputs, known) if not k]
    passed = set(known_in)
    residuals = [i for i in residuals if i not in passed]

    roots = _tracers([program.slots[i] for i in known_in])
    env = dict(zip(known_in, roots))
    for step in program.steps:
        if kind[step.output] != "unknown":
            env[step.output] = bind(step.primitive, *(env[i] for i in step.inputs), **step.kwargs)
    known_program = _build(roots, [env[i] for i in program.outputs[:n_known_outputs]]
                           + [env[i] for i in residuals])

    given_roots = _tracers([program.slots[i] for i in known_in])
    res_roots = _tracers([program.slots[i] for i in residuals])
    lin_roots = _tracers([program.slots[i] for i in unknown_in])
    env = dict(zip(known_in, given_roots)) | dict(zip(residuals, res_roots)) \
        | dict(zip(unknown_in, lin_roots))
    for step in program.steps:
        if step.output not in env and (kind[step.output] != "known" or step.output in recomputed):
            env[step.output] = bind(step.primitive, *(env[i] for i in step.inputs), **step.kwargs)
    unknown_program = _build(given_roots + res_roots + lin_roots,
                             [env[i] for i in program.outputs[n_known_outputs:]])
    return known_program, unknown_program


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
    lin_slots = {i for i, is_lin in zip(program.inputs, linear) if is_lin}
    fixed_in = [i for i, is_lin in zip(program.inputs, linear) if not is_lin]
    roots = _tracers([program.slots[i] for i in fixed_in])
    cts_in = _tracers([Slot(program.slots[i].shape, "float64") for i in program.outputs])
    env = dict(zip(fixed_in, roots))

    linear_steps = []
    for step in program.steps:
        if any(i in lin_slots for i in step.inputs):
            lin_slots.add(step.output)
            linear_steps.append(step)
        else:
            env[step.output] = bind(step.primitive, *(env[i] for i in step.inputs), **step.kwargs)

    ct_env: dict[int, Any] = {}
    for i, ct in zip(program.outputs, cts_in):
        if i in lin_slots:
            ct_env[i] = add_any(ct_env.get(i), ct)
    for step in reversed(linear_steps):
        ct = ct_env.pop(step.output, None)
        if ct is None:
            continue  # a symbolic zero: nothing flows back
        if step.primitive.transpose is None:
            raise ValueError(f"cannot transpose: {step.primitive} is not linear, but the program "
                             "applies it to a linear input")
        args = [UndefPrimal(program.slots[i]) if i in lin_slots else env[i] for i in step.inputs]
        cts = step.primitive.transpose(ct, *args, **step.kwargs)
        for i, c in zip(step.inputs, cts):
            if c is not None and i in lin_slots:
                ct_env[i] = add_any(ct_env.get(i), c)
    outs = [ct_env[i] if i in ct_env else zeros(program.slots[i].shape)
            for i, is_lin in zip(program.inputs, linear) if is_lin]
    return _build(roots + cts_in, outs)


# ---- composites: vjp, grad, hvp --------------------------------------------------------------

def _vjp_parts(program: Program, k: int | None, wrt: Sequence[int]) -> tuple[Program, Program]:
    """``(primal, pullback)``: the primal program (inputs -> outputs and residuals) and
    the transposed linear program (inputs, residuals, cotangents -> input cotangents)."""
    primal, linear = linearize_program(program, k, wrt)
    n_fixed = len(linear.inputs) - len(wrt)  # the inputs, then the residuals
    pullback = transpose_program(linear, [False] * n_fixed + [True] * len(wrt))
    return primal, pullback


def _pull(program: Program, primal: Program, pullback: Program, xs: list[Var],
          ws: list[Any]) -> list[Any]:
    """The outputs of ``program`` at ``xs`` followed by the cotangents pulled back from ``ws``."""
    n_out = len(program.outputs)
    outs = interpret(primal, xs)
    return outs[:n_out] + interpret(pullback, xs + outs[n_out:] + ws)


@gc_paused
def vjp_program(program: Program, k: int | None, wrt: Sequence[int] = (0,)) -> Program:
    """``vjp = transpose ∘ linearize`` over cotangent frames of ``k`` columns.

    Returns a program taking the inputs followed by one cotangent frame per output
    (shape ``out + (k,)``, or ``out`` when ``k`` is None) and returning the outputs
    followed by one cotangent frame per ``wrt`` input.
    """
    primal, pullback = _vjp_parts(program, k, wrt)
    xs = _tracers(program.in_slots)
    ws = _tracers([frame_slot(s, k) for s in program.out_slots])
    return simplify(_build(xs + ws, _pull(program, primal, pullback, xs, ws)))


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
    # The vjp with its cotangent bound to the constant 1 before simplification: one
    # simplifying pass instead of one for the vjp and another once the 1 is bound.
    primal, pullback = _vjp_parts(program, None, (0,))  # one cotangent column: no frame axis
    xs = _tracers(program.in_slots)
    y, ct = _pull(program, primal, pullback, xs, [Var(np.ones(()), const=True)])
    return simplify(_build(xs, [y, ct]))


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
    return simplify(jvp_program(grad_program(program), k), keep=[1])


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
    jp = select_outputs(fold_scalings(jp, known), [0, 1, 3])
    primal, linear = partial_eval(jp, known, 2, remat=True)
    return simplify(primal), simplify(linear)


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
    ``program`` has, so every axis of that length in the derived program is a frame
    axis. Width 1 and no frame axis (``None``) are derived as they are: their
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


#: Candidate template widths: primes, so that products of a program's lengths are unlikely
#: to meet one.
_WIDTHS = (61, 67, 71, 73, 79, 83, 89, 97, 101, 103, 107, 109, 113, 127, 131, 137, 139)


@functools.lru_cache(maxsize=32)
def _template_width(program: Program) -> int:
    """The first of :data:`_WIDTHS` that no axis length and no integer parameter of
    ``program`` equals (0 when all do: frames are then always derived)."""
    used: set[int] = set()
    for slot in program.slots:
        used.update(slot.shape)
    for step in program.steps:
        _integers(step.params, used)
    return next((w for w in _WIDTHS if w not in used), 0)


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
    if value.__class__ is int:
        return new if value == old else value
    if isinstance(value, tuple):
        return tuple(_resized(v, old, new) for v in value)
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
    slots = tuple(s if old not in s.shape else
                  Slot(tuple(new if n == old else n for n in s.shape), s.dtype)
                  for s in program.slots)
    steps = []
    try:
        for step in program.steps:
            params = _resized(step.params, old, new)
            if params != step.params:
                step = Step(step.primitive, step.inputs, params, step.output)
            elif slots[step.output] is program.slots[step.output] and all(
                    slots[i] is program.slots[i] for i in step.inputs):
                steps.append(step)  # nothing of it resized: its shape rule still holds
                continue
            in_slots = tuple(slots[i] for i in step.inputs)
            if output_slot(step.primitive, in_slots, step.params) != slots[step.output]:
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


@gc_paused
def simplify(program: Program, keep: Sequence[int] | None = None) -> Program:
    """Constant folding, algebraic identities, common subexpressions and dead code.

    Folding happens in ``bind`` (all-constant steps), identities in ``_rewrite``,
    and ``to_program`` shares identical steps and drops unreachable ones. ``keep``:
    return only the outputs at these positions (``simplify(select_outputs(p, keep))``
    in one pass; rewrites are local, so the steps only dropped outputs need are
    rewritten, then dropped).
    """
    roots = _tracers(program.in_slots)
    env: dict[int, Any] = dict(zip(program.inputs, roots))
    for step in program.steps:
        args = [env[i] for i in step.inputs]
        if step.primitive is not const_p and all(isinstance(a, Var) for a in args):
            replaced = _rewrite(step.primitive, args, program.slots[step.output], step.kwargs)
            if replaced is not None:
                env[step.output] = replaced
                continue
        env[step.output] = bind(step.primitive, *args, **step.kwargs)
    outputs = program.outputs if keep is None else [program.outputs[j] for j in keep]
    return _build(roots, [env[i] for i in outputs])


__all__ = ["jvp_program", "partial_eval", "fold_scalings", "linearize_program",
           "transpose_program", "vjp_program", "value_and_grad_program", "grad_program",
           "hvp_program", "linearized_hvp", "select_outputs", "simplify", "frame_slot",
           "rewidth", "clear_caches", "DERIVATIONS"]
