"""Tracing: seed 002's Var / Op expression graph, and its conversion to Programs.

A :class:`Var` is a node of an expression graph. It holds an abstract value
(:class:`~newtonad.ad.program.Slot`: shape and dtype), optionally a concrete value,
and its ``creator``: the :class:`Op` (primitive, argument Vars, params) that made it.
Three kinds of Var exist:

* a *tracer* root has no value: tracing a function on tracers records its Ops
  without computing anything (abstract tracing, for compiled use);
* an *eager* Var (``newtonad.Var(value)``) has a value; Ops on it compute their value
  as they are recorded, and ``backward()`` pulls gradients through the graph;
* a *constant* Var wraps a value that is not differentiated (a NumPy array or a
  Python number met during tracing).

:func:`bind` is the single entry point through which every primitive is applied, and
:func:`to_program` turns the graph reachable from some outputs into a
:class:`~newtonad.ad.program.Program` by a topological sort, eliminating dead code
and common subexpressions as it goes.
"""

from __future__ import annotations

import dis
import itertools
import sys
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple, Sequence

import numpy as np

from .captures import Guard, find_captures, lifted_var, lifting
from .program import ArrayConst, Program, Slot, Step

if TYPE_CHECKING:
    from .primitives.core import Primitive

_ids = itertools.count()


class TracerBoolError(TypeError):
    """Raised when traced code asks for the concrete value of a tracer."""


class Op:
    """The creator of a Var: a primitive applied to argument Vars with params."""

    __slots__ = ("primitive", "args", "params")

    def __init__(self, primitive: Primitive, args: tuple[Var, ...], params: dict[str, Any]):
        self.primitive = primitive
        self.args = args
        self.params = params

    def __repr__(self) -> str:
        return f"Op({self.primitive}, {len(self.args)} args)"

    def backward(self, out_grad: np.ndarray) -> list[np.ndarray | None]:
        """Pull ``out_grad`` back to each argument (seed 002's ``Op.backward``).

        Returns the cotangent of each argument, ``None`` for constants. The pull-back
        is derived, not written by hand: vjp of a one-step program.
        """
        from .transforms import op_vjp

        return op_vjp(self, out_grad)


class Var:
    """A node of the expression graph; see the module docstring.

    Parameters
    ----------
    value : array_like
        The concrete value of a new eager leaf, e.g. ``Var(np.array([0.5, 2.0]))``.
        Integer values are converted to float64.
    """

    __slots__ = ("aval", "value", "creator", "grad", "const", "captured", "id", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, value: Any = None, *, aval: Slot | None = None,
                 creator: Op | None = None, const: bool = False, captured: bool = False):
        if aval is None:
            value = np.asarray(value)
            if not const and value.dtype.kind in "biu":
                value = value.astype(np.float64)
            aval = Slot(tuple(value.shape), value.dtype.name)
        self.aval = aval
        self.value = value
        self.creator = creator
        self.grad: np.ndarray | None = None
        self.const = const
        self.captured = captured  # a value f read outside its arguments, lifted to an input
        self.id = next(_ids)

    # ---- abstract value ----------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.aval.dtype)

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        if self.value is not None:
            return f"Var({np.array2string(np.asarray(self.value), threshold=8)})"
        return f"Var<{self.aval}>"

    # ---- concrete value: refused while tracing ------------------------------------
    def _concrete(self, what: str) -> np.ndarray:
        if self.value is None:
            raise TracerBoolError(_with_scipy_hint(_concrete_message(what, self.shape)))
        return np.asarray(self.value)

    def __bool__(self) -> bool:
        return bool(self._concrete("bool(x) or `if x`"))

    def __float__(self) -> float:
        return float(self._concrete("float(x)"))

    def __int__(self) -> int:
        return int(self._concrete("int(x)"))

    def __index__(self) -> int:
        return int(self._concrete("using an array as an index").__index__())

    def item(self) -> Any:
        return self._concrete("x.item()").item()

    def tolist(self) -> Any:
        return self._concrete("x.tolist()").tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """An object array of this Var's entries, so ``np.array([x[0], x[1]])`` keeps them.

        NumPy builds lists of traced values into object arrays of Vars; the first
        primitive they reach folds them back into one traced array (:func:`fold_objects`).
        When NumPy asks for numbers instead (``np.asarray(x, dtype=float)``, storing into a
        float array) only an eager Var's value can give them.
        """
        if dtype is not None and np.dtype(dtype) != np.dtype(object):
            if self.value is None:
                raise TracerBoolError(_with_scipy_hint(_numbers_asked_message(self.shape)))
            return np.asarray(self.value, dtype=dtype)
        return _as_objects(self)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    # ---- seed 002: backward --------------------------------------------------------
    def backward(self, grad: Any = None) -> None:
        """Accumulate d(self)/d(v) into ``v.grad`` for every non-constant Var ``v`` above.

        Runs the graph's Ops in reverse topological order, each pulling its output's
        cotangent back to its arguments, and adds cotangents arriving at one Var along
        several paths (seed 002). ``grad`` is the upstream cotangent (1 by default for a
        scalar).
        """
        if self.value is None:
            raise TypeError("backward() needs an eager Var (made with newtonad.Var(value)); "
                            "use newtonad.grad for traced functions")
        if grad is None:
            if self.shape != ():
                raise ValueError(f"backward() without an explicit grad needs a scalar, got "
                                 f"shape {self.shape}; pass grad= of that shape")
            grad = np.ones(())
        cts: dict[int, np.ndarray] = {self.id: np.asarray(grad, dtype=np.float64)}
        for var in reversed(toposort([self])):
            ct = cts.pop(var.id, None)
            if ct is None or var.const:
                continue
            var.grad = ct if var.grad is None else var.grad + ct
            if var.creator is None:
                continue
            for arg, arg_ct in zip(var.creator.args, var.creator.backward(ct)):
                if arg_ct is not None and not arg.const:
                    cts[arg.id] = arg_ct if arg.id not in cts else cts[arg.id] + arg_ct


#: Entries beyond which a traced array is not split into an object array of scalars.
_MAX_OBJECT_ENTRIES = 4096


def _as_objects(var: Var) -> np.ndarray:
    """``var`` as an object array of scalar Vars (of itself, when it is a scalar)."""
    out = np.empty(var.shape, dtype=object)
    if var.shape == ():
        out[()] = var
        return out
    if var.size > _MAX_OBJECT_ENTRIES:
        raise TypeError(
            f"NumPy asked for a traced array of {var.size} entries as a NumPy array (np.array "
            "or np.asarray of a list holding it, or a NumPy function that does not dispatch to "
            "newtonad); build arrays from traced parts with np.stack or np.concatenate")
    for index in np.ndindex(var.shape):
        out[index] = var[index]
    return out


def fold_objects(value: np.ndarray) -> Var | None:
    """One traced array from an object array of Vars and numbers; ``None`` if it holds no Var.

    NumPy makes such arrays from lists of traced values (``np.array([a, b])``, ``np.r_``,
    ``np.append(x, [t, 8.0])``); this is where they become one program value again.
    """
    entries = list(value.flat)
    like = next((e for e in entries if isinstance(e, Var)), None)
    if like is None:
        return None
    from .primitives.structural import concatenate, reshape

    bad = next((e for e in entries if not isinstance(e, (Var, bool, int, float, np.number))), None)
    if bad is not None or any(isinstance(e, Var) and e.shape != () for e in entries):
        raise TypeError(f"an array built from traced values holds {type(bad).__name__ if bad is not None else 'an array'}"
                        "; build it with np.stack or np.concatenate of arrays of one shape")
    parts = [reshape(e if isinstance(e, Var) else const_var(e, like), (1,)) for e in entries]
    flat = parts[0] if len(parts) == 1 else concatenate(parts, 0)
    return reshape(flat, tuple(value.shape))


def _with_scipy_hint(message: str) -> str:
    """``message``, led by the fix when SciPy's own code of a routed function is running."""
    from .scipy_dispatch import scipy_caller_hint

    hint = scipy_caller_hint()
    return message if hint is None else f"{hint} ({message})"


def _concrete_message(what: str, shape: tuple[int, ...]) -> str:
    return (f"{what} needs the value of a traced array, but newtonad traces your function "
            f"once for all inputs of shape {shape}, without values. Value-dependent Python "
            "control flow (if/while on array values, float(x), bool(x), x.item()) cannot be "
            "traced: write the branch with np.where(condition, a, b) (or np.maximum / "
            "np.minimum / np.clip) so both sides are computed and selected elementwise.")


def _numbers_asked_message(shape: tuple[int, ...]) -> str:
    """NumPy wants the numbers of a tracer: name the NumPy function, and the fix."""
    frame, where = sys._getframe(1), ""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("numpy"):
            where = f" (inside NumPy's {frame.f_code.co_name}, called on a Python list or an " \
                    "object array holding traced values)"
        elif where:
            break
        frame = frame.f_back
    return (f"NumPy asked for the numbers of a traced value of shape {shape}{where}, but "
            "newtonad traces your function without values. Build arrays from traced parts "
            "with np.stack([...]) or np.concatenate before calling NumPy on them, so that "
            "NumPy hands the call to newtonad: e.g. np.mean(np.stack([a, b])), not "
            "np.mean([a, b]).")


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


def is_float(aval: Slot) -> bool:
    return np.dtype(aval.dtype).kind == "f"


def const_var(value: Any, like: Var | None = None) -> Var:
    """Wrap a non-differentiated value; Python scalars take a float Var's dtype.

    An object array holding Vars (NumPy's make of a list of traced values) is folded
    into one traced array instead.
    """
    if isinstance(value, np.ndarray) and value.dtype == object:
        folded = fold_objects(value)
        if folded is not None:
            return folded
    if isinstance(value, (bool, np.bool_)):
        arr = np.asarray(value)
    elif isinstance(value, (int, float)) and like is not None and like.dtype.kind == "f":
        arr = np.asarray(value, dtype=like.dtype)
    elif isinstance(value, float):
        arr = np.asarray(value, dtype=np.float64)
    else:
        arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"newtonad cannot use a value of dtype {arr.dtype} in a traced function")
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        arr = arr.astype(np.float64)
    if arr.dtype.kind in "iu" and arr.dtype != np.int64:
        arr = arr.astype(np.int64)
    return Var(arr, const=True)


def _input_var(value: Any, like: Var) -> Var:
    """A non-Var argument of a primitive: a captured value lifted to an input, or a constant."""
    lifted = lifted_var(value)
    return const_var(value, like) if lifted is None else lifted


def bind(primitive: Primitive, *args: Any, **params: Any) -> Any:
    """Apply ``primitive`` to ``args``; record an Op when any argument is a Var.

    With no Var among the arguments this is plain NumPy evaluation. Arguments that
    are all constants fold to a constant.
    """
    if not args:  # a constant step, re-bound by a transform
        return Var(primitive.impl(**params), const=True)
    if not any(isinstance(a, Var) for a in args):
        return primitive.impl(*args, **params)
    like = next(a for a in args if isinstance(a, Var))
    vargs = tuple(a if isinstance(a, Var) else _input_var(a, like) for a in args)
    aval = primitive.abstract_eval(*(a.aval for a in vargs), **params)
    if all(a.const for a in vargs) and aval.size <= max([1] + [a.size for a in vargs]):
        # Constant folding; expansions (broadcasts of a scalar zero, say) stay steps so
        # that large constant arrays are never baked into programs.
        return Var(primitive.impl(*(a.value for a in vargs), **params), const=True)
    value = None
    if all(a.value is not None for a in vargs):
        value = np.asarray(primitive.impl(*(a.value for a in vargs), **params))
    return Var(value, aval=aval, creator=Op(primitive, vargs, params))


def new_tracer(aval: Slot) -> Var:
    """A fresh abstract root."""
    return Var(aval=aval)


def toposort(outputs: Iterable[Var], stop: int = -1) -> list[Var]:
    """Vars reachable from ``outputs`` in an order where arguments come first.

    Vars with ``id < stop`` are treated as leaves (they belong to an enclosing trace).
    Iterative, so deep graphs do not hit Python's recursion limit.
    """
    order: list[Var] = []
    seen: set[int] = set()
    for root in outputs:
        if root.id in seen:
            continue
        stack: list[tuple[Var, bool]] = [(root, False)]
        while stack:
            var, expanded = stack.pop()
            if expanded:
                order.append(var)
                continue
            if var.id in seen:
                continue
            seen.add(var.id)
            stack.append((var, True))
            if var.creator is not None and var.id >= stop:
                for arg in reversed(var.creator.args):
                    if arg.id not in seen:
                        stack.append((arg, False))
    return order


def to_program(inputs: Sequence[Var], outputs: Sequence[Var], stop: int = -1
               ) -> tuple[Program, list[Var]]:
    """Record the graph between ``inputs`` and ``outputs`` as a Program.

    Returns the program and the list of *closed-over* Vars: leaves reached that are
    neither inputs nor constants (eager Vars, or tracers of an enclosing trace). They
    are appended to the program's inputs, after ``inputs``, so a derived program can be
    inlined back into the enclosing graph with them as data. Vars created before id
    ``stop`` count as leaves. Dead steps are dropped and identical steps shared.
    """
    from .primitives.core import const_p

    slots: list[Slot] = []
    steps: list[Step] = []
    slot_of: dict[int, int] = {}
    memo: dict[tuple, int] = {}

    def new_slot(aval: Slot) -> int:
        slots.append(aval)
        return len(slots) - 1

    def add_step(primitive: Primitive, in_slots: tuple[int, ...], params: dict, aval: Slot) -> int:
        key_params = tuple(sorted(params.items()))
        key = (primitive, in_slots, key_params)
        if key not in memo:
            out = new_slot(aval)
            steps.append(Step(primitive, in_slots, key_params, out))
            memo[key] = out
        return memo[key]

    input_slots = []
    for v in inputs:
        if v.id in slot_of:
            raise ValueError("the same Var is given twice as a program input")
        slot_of[v.id] = new_slot(v.aval)
        input_slots.append(slot_of[v.id])
    closed: list[Var] = []
    for var in toposort(outputs, stop):
        if var.id in slot_of:
            continue
        if var.const:
            slot_of[var.id] = add_step(const_p, (), const_params(var.value), var.aval)
        elif var.creator is None or var.id < stop:
            slot_of[var.id] = new_slot(var.aval)
            input_slots.append(slot_of[var.id])
            closed.append(var)
        else:
            op = var.creator
            in_slots = tuple(slot_of[a.id] for a in op.args)
            slot_of[var.id] = add_step(op.primitive, in_slots, op.params, var.aval)
    program = Program(tuple(slots), tuple(steps), tuple(input_slots),
                      tuple(slot_of[v.id] for v in outputs))
    return program, closed


def const_params(value: np.ndarray) -> dict[str, Any]:
    """Params of a ``const`` step: scalars inline, arrays by digest."""
    value = np.asarray(value)
    if value.shape == ():
        return {"value": value.item(), "dtype": value.dtype.name}
    return {"value": ArrayConst(value), "dtype": value.dtype.name}


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


def trace_function(fun, avals: Sequence[Slot], *, wrap=None) -> TraceResult:
    """Trace ``fun`` on fresh tracers of ``avals`` into a Program.

    ``wrap`` post-processes the result (e.g. to check it is a scalar). The program's
    outputs are the flattened results.
    """
    from .scipy_dispatch import install_pending; install_pending()  # noqa: E702 (SciPy routing)
    guard = find_captures(fun)
    start = next(_ids)
    tracers = [new_tracer(a) for a in avals]
    with lifting(guard):
        try:
            out = fun(*tracers)
        except ValueError as e:
            if _failed_storing_into_an_array(e):
                raise TracerBoolError(_STORE_INTO_ARRAY) from e
            raise
        if wrap is not None:
            out = wrap(out)
    if guard is not None:
        guard.settle()
    outs = [o if isinstance(o, Var) else const_var(o) for o in (out if isinstance(out, tuple) else (out,))]
    program, closed = to_program(tracers, outs, stop=start)
    return TraceResult(program, closed, any(not v.captured for v in closed), guard)
