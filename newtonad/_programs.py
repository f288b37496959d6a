"""What the public AD functions and ``Objective`` share: checked inputs, ``f`` traced
once per signature, its derived programs compiled once per kind, identity frames in chunks.

Internal: :mod:`newtonad.api` and :mod:`newtonad.objective` both build on it, so neither
reaches into the other's private names.
"""

from __future__ import annotations

import collections
import functools
import math
import os
import sys
import threading
import warnings
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from .ad import reroll
from .ad import transforms as tf
from .ad.engine import compile_program, numba_threads
from .ad.numpy_api import fold_objects
from .ad.primitives.elementwise import mul_p
from .ad.primitives.structural import reduce_sum_p
from .ad.program import Program, Slot, dtype_name
from .ad.trace import interpret, to_program, trace_function
from .ad.var import Var, new_tracer

FRAME_BUDGET = 1 << 24  # elements per frame chunk in jacobian / hessian (128 MiB of float64)


# ---- inputs ---------------------------------------------------------------------------------

def as_point(x: Any, what: str = "x", finite: bool = True) -> Any:
    """Validate a differentiation point: a finite float64 array, or a Var as it is.

    ``finite=False`` leaves the finiteness test to the caller: the derived programs of
    :func:`run_derived` with ``tests_point`` make it in their own loops.
    """
    if isinstance(x, Var):
        return x
    arr = np.asarray(x)
    if arr.dtype.kind in "biu":
        raise TypeError(f"{what} has integer dtype {arr.dtype}; derivatives need floats: "
                        f"pass {what}.astype(float)")
    if arr.dtype.kind == "c":
        raise complex_error(what, arr.dtype)
    if arr.dtype.kind != "f":
        raise TypeError(f"{what} must be a float array, got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=np.float64)
    if finite:
        require_finite(arr, what)
    return arr


def require_finite(arr: np.ndarray, what: str = "x") -> None:
    """Raise the ValueError for a point with non-finite entries (float64 ``arr``)."""
    if not _all_finite(arr):
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(f"{what} has {bad.size} non-finite entries (first at flat index "
                         f"{bad[0]}); derivatives are only defined at finite points")


#: From this many entries the finiteness test is a serial compiled loop: OpenBLAS runs
#: ``ddot`` on all its threads from 10 000 entries, and a threaded call waits for every
#: core, which on a busy machine is a scheduler time slice (8 ms) per call.
SERIAL_FROM = 8192
#: From this many entries the compiled test runs on numba's threads (2^20 entries: 0.26
#: ms on one core, 0.14 ms on two); below, starting them costs more than they save.
PARALLEL_FROM = 1 << 18


def _all_finite(arr: np.ndarray) -> bool:
    """Whether every entry of the float64 array ``arr`` is finite, in one pass, no mask."""
    if arr.size < SERIAL_FROM:
        # a finite sum of squares means finite entries (nan and inf propagate); BLAS runs
        # this size on one thread; only an overflowing sum takes the exact test
        return math.isfinite(np.vdot(arr, arr)) or bool(np.all(np.isfinite(arr)))
    if "numba" in sys.modules:  # loaded by the kernels: the compiled loop, 1.5x NumPy's sum
        if arr.size >= PARALLEL_FROM:
            from ._threaded import nonfinite

            return not nonfinite(arr.reshape(-1))
        return not _nonfinite_loop()(arr.reshape(-1))
    # before any kernel is loaded, importing numba for this would cost 0.3-1 s: NumPy's
    # own reduction (serial too)
    with np.errstate(over="ignore", invalid="ignore"):
        return math.isfinite(np.add.reduce(arr, axis=None)) or bool(np.all(np.isfinite(arr)))


def _nonfinite_sum(x: np.ndarray) -> bool:
    s = 0.0
    for i in range(x.size):
        s += x[i] * 0.0  # 0 for a finite entry, nan for inf or nan: no overflow possible
    return s != 0.0


@functools.cache
def _nonfinite_loop() -> Callable[[np.ndarray], bool]:
    import numba

    # "reassoc" lets LLVM vectorise the sum; no flag that assumes finite values (x * 0.0
    # must stay nan for inf and nan)
    return numba.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz"})(_nonfinite_sum)


def complex_error(what: str, dtype: np.dtype) -> TypeError:
    """The error for a complex point or direction: derivatives here are real, and casting
    would drop the imaginary part without a word."""
    return TypeError(f"{what} has complex dtype {dtype}, but derivatives are taken of real "
                     f"functions at real points in real directions: pass {what}.real and "
                     f"{what}.imag separately (the products are linear in the direction), or "
                     f"write f on a real array of both parts")


def as_data(a: Any) -> Any:
    """Validate an extra argument: a bool, int64 or float64 array (or a Var), never copied
    when it already is one."""
    if isinstance(a, Var):
        return a
    arr = np.asarray(a)
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        arr = arr.astype(np.float64)
    if arr.dtype.kind in "iu" and arr.dtype != np.int64:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"extra argument of dtype {arr.dtype} cannot be passed to a traced "
                        "function")
    return arr


def aval_of(a: Any) -> Slot:
    """The slot (shape, dtype) an input takes in a traced program."""
    if isinstance(a, Var):
        return a.aval
    return Slot(tuple(a.shape), dtype_name(a.dtype))


def as_frame(V: Any, x_shape: tuple[int, ...], name: str = "V") -> tuple[Any, int | None]:
    """Accept ``x.shape + (k,)`` (a frame of k directions) or ``x.shape`` (one direction).

    Returns the array and its frame width, ``None`` for a single direction: that case
    runs programs without a frame axis, whose loops are as simple as a gradient's.
    """
    if not isinstance(V, Var):
        V = np.asarray(V)
        if V.dtype.kind == "c":
            raise complex_error(name, V.dtype)
        V = np.asarray(V, dtype=np.float64)
    shape = tuple(V.shape)
    if shape == x_shape:
        return V, None
    if len(shape) == len(x_shape) + 1 and shape[:-1] == x_shape and shape[-1] >= 1:
        return V, shape[-1]
    raise ValueError(f"{name} has shape {shape}, but a frame at a point of shape {x_shape} must "
                     f"have shape {x_shape} + (k,) for k directions (or {x_shape} for one)")


# ---- tracing and caching -------------------------------------------------------------------

class GuardFailed(Exception):
    """A guarded program ran at a point where one of its branches goes the other way.

    Internal: the callers (the AD functions, :class:`~newtonad.objective.Objective`)
    catch it, find or trace the path that holds there (:func:`path_at`) and run again.
    """


#: Paths (guarded traces) kept per function and signature; past this the least recently
#: used one is dropped, with one warning per function.
MAX_PATHS = 16


class Traced:
    """``f`` traced at one signature: its program and closed-over Vars.

    For a function that branches on traced values this is one path: ``check`` is the
    program telling where its branches all go the same way, and every derived program
    gets that test as one more output (see :func:`derive`).
    """

    def __init__(self, f: Callable, avals: Sequence[Slot], scalar: bool,
                 point: Sequence[Any] | None = None):
        wrap = functools.partial(checked_result, f, scalar=scalar)
        result = trace_function(f, avals, wrap=wrap, point=point)
        self.program, self.closed, self.from_outer, self.guard = result[:4]
        self.check: Program | None = result.check
        self.decisions = result.decisions
        if reroll.REROLL:  # loops traced term by term, folded into vector steps
            self.program = rerolled(self.program)
        self.derived: dict[Any, Any] = shared_derivations(self.program, self.check)
        self.site = (_weak(f), tuple(avals), scalar)
        self._check_run: Callable | None = None

    def stale(self) -> bool:
        """Whether a value ``f`` read outside its arguments has changed since the trace."""
        return self.guard is not None and self.guard.changed()

    def closed_values(self) -> list[np.ndarray]:
        """The current values of the closed-over Vars: the program's inputs after ``args``."""
        return [np.asarray(v.value) for v in self.closed]

    def holds(self, x: Any, args: Sequence[Any]) -> bool:
        """Whether this path's branches all go the same way at ``(x, *args)`` (values, or
        Vars with values); always for a function that took no decision."""
        if self.check is None:
            return True
        values = [_value_of(v) for v in (x, *args, *self.closed)]
        if any(v is None for v in values):
            return False
        if self._check_run is None:
            self._check_run = compile_program(self.check, "numpy")
        return bool(self._check_run(*values)[0])


@functools.lru_cache(maxsize=32)
def rerolled(program: Program) -> Program:
    """``reroll.reroll(program)``, once per program: a second trace of the same code (a new
    ``Objective``, a new function object) gives an equal program, and re-rolling a long
    one costs as much as a tenth of its first derivation.

    Parameters
    ----------
    program : Program
        A traced program.

    Returns
    -------
    Program
        Its loops re-rolled (``program`` itself when it has none).
    """
    return reroll.reroll(program)


def _value_of(v: Any) -> Any:
    return v.value if isinstance(v, Var) else v


def _weak(f: Callable) -> Callable[[], Any]:
    try:
        return weakref.ref(f)
    except TypeError:
        return lambda: f


#: (program, check) -> the derived programs made for it, shared by every trace that
#: gives the same program (a second function object of the same code, a re-trace after
#: a captured value changed): each kind is derived and compiled once per process.
_SHARED: "weakref.WeakValueDictionary[tuple, Derivations]" = weakref.WeakValueDictionary()
#: The most recently made derivations, held so that a function object dropped and made
#: again (a lambda written in a loop) still finds them.
_RECENT: "collections.OrderedDict[tuple, Derivations]" = collections.OrderedDict()
_RECENT_KEPT = 64


class Derivations(dict):
    """The derived programs (compiled runners) of one program: ``(kind, k, engine,
    tests_point) ->``."""


def shared_derivations(program: Program, check: Program | None) -> dict:
    """The :class:`Derivations` of ``program`` (with its branch ``check``), made once."""
    key = (program, check)
    with TRACE_LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = Derivations()
        _RECENT[key] = found
        _RECENT.move_to_end(key)
        if len(_RECENT) > _RECENT_KEPT:
            _RECENT.popitem(last=False)
    return found


class Paths:
    """The paths traced so far of a function that branches on traced values, most
    recently used first; ``current`` is the one tried first."""

    __slots__ = ("variants", "current", "warned")

    def __init__(self, first: Traced):
        self.variants = [first]
        self.current = first
        self.warned = False

    def use(self, traced: Traced) -> None:
        if self.variants[0] is not traced:
            self.variants.remove(traced)
            self.variants.insert(0, traced)
        self.current = traced

    def add(self, traced: Traced, name: str) -> None:
        self.variants.insert(0, traced)
        self.current = traced
        if len(self.variants) > MAX_PATHS:
            self.variants.pop()
            if not self.warned:
                self.warned = True
                warnings.warn(
                    f"{name} has taken more than {MAX_PATHS} paths through its branches on "
                    f"traced values; newtonad keeps the {MAX_PATHS} most recent and traces, "
                    "derives and compiles each new one again, which is slow. Write the "
                    "branches with np.where(condition, a, b) (or np.maximum / np.minimum / "
                    "np.clip) so that one program serves every point.",
                    PathsWarning, stacklevel=find_user_stacklevel())


class PathsWarning(UserWarning):
    """A function branched on traced values along more paths than are kept.

    Each path a branch on traced values takes is a program of its own, kept per function
    and signature up to a bound; past it the least recently used path is dropped and
    this warning is given once. Write such branches with ``np.where`` instead.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, newtonad as nad
    >>> def f(x):  # one path per sign pattern of x: 2**5 of them
    ...     return sum(xi ** 2 if xi > 0 else -xi for xi in x)
    >>> signs = np.array([[1 if (k >> i) & 1 else -1 for i in range(5)] for k in range(32)])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     for s in signs:
    ...         _ = nad.grad(f, engine="numpy")(s * 0.5)
    >>> any(issubclass(w.category, nad.PathsWarning) for w in caught)
    True
    """


def find_user_stacklevel() -> int:
    """The stacklevel of the first frame outside newtonad (for warnings)."""
    frame: Any = sys._getframe(1)
    level = 1
    package = os.path.dirname(os.path.abspath(__file__))
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame = frame.f_back
        level += 1
    return level


def checked_result(f: Callable, out: Any, *, scalar: bool) -> Any:
    """``f``'s result as one traced value, or an error saying what it returned instead."""
    name = getattr(f, "__name__", type(f).__name__)
    need = "a scalar (a number computed from x)" if scalar else "an array computed from x"
    if isinstance(out, (list, tuple)) and not scalar and all(np.ndim(o) == 0 for o in out):
        out = np.array(out, dtype=object)  # residuals listed one by one: one array, as np.array
    if isinstance(out, np.ndarray) and out.dtype == object:
        folded = fold_objects(out)
        out = out if folded is None else folded
    if out is None:
        raise TypeError(f"{name} returned None, but it must return {need}: is a `return` "
                        "statement missing?")
    if isinstance(out, (tuple, list)) and scalar:
        raise TypeError(
            f"{name} returned a {type(out).__name__} of {len(out)} values, but grad, hvp, "
            f"hessian and minimize need {need}. If it returns (f, gradient) as for scipy's "
            "jac=True, pass jac=True to newtonad.minimize, or return f alone")
    if isinstance(out, (tuple, list)):
        raise TypeError(f"{name} returned a {type(out).__name__} of {len(out)} arrays, but "
                        "jacobian, jvp and vjp need one array: combine them with np.stack or "
                        "np.concatenate")
    if not isinstance(out, (Var, np.ndarray, bool, int, float, np.number)):
        shown = repr(out) if len(repr(out)) <= 40 else repr(out)[:37] + "..."
        raise TypeError(f"{name} returned a {type(out).__name__} ({shown}), but it must return "
                        f"{need}")
    if not isinstance(out, Var) and np.asarray(out).dtype.kind not in "biuf":
        raise TypeError(f"{name} returned an array of dtype {np.asarray(out).dtype}, but it "
                        f"must return {need}")
    shape = tuple(out.shape) if isinstance(out, Var) else np.shape(out)
    if scalar and shape != () and math.prod(shape) == 1:
        # one entry in an array, e.g. x @ A @ x of shape (1, 1): its value, as scipy and
        # autograd take it
        return out.reshape(()) if isinstance(out, Var) else np.reshape(out, ())
    if scalar and shape != ():
        raise ValueError("The user-provided objective function must return a scalar value: "
                         f"{name} returned shape {shape}; reduce it (e.g. np.sum), or use "
                         "jacobian / vjp (grad, hvp, hessian and minimize need a scalar)")
    return out


#: f -> {(input slots, scalar): Traced, or Paths of a function that branches}; an entry
#: lives as long as its function.
TRACES: "weakref.WeakKeyDictionary[Callable, dict]" = weakref.WeakKeyDictionary()
#: Held to trace, derive and compile (the misses of the caches here and the Objective's):
#: tracing keeps process-wide state, and one thread's work then serves the others.
#: Re-entrant: tracing f may trace a function f calls (``grad(inner)`` inside f).
TRACE_LOCK = threading.RLock()


def _point(x: Any, args: Sequence[Any]) -> list | None:
    """The input values a guarded trace follows its branches at (``None``: a Var without
    one, in a trace made without values)."""
    values = [_value_of(v) for v in (x, *args)]
    return None if any(v is None for v in values) else values


def traced_at(f: Callable, x: Any, args: tuple, scalar: bool) -> Traced:
    """``f`` traced at the signature of ``(x, *args)``: cached, re-traced when a value it
    reads outside its arguments has changed. For a function that branches on traced
    values, the path used last (its runners raise :class:`GuardFailed` where it does not
    hold; :func:`path_at` then gives the one that does)."""
    avals = (aval_of(x),) + tuple(aval_of(a) for a in args)
    key = (avals, scalar)
    try:
        per_fun = TRACES.get(f)
    except TypeError:  # not weak-referenceable: trace every time
        with TRACE_LOCK:
            return Traced(f, avals, scalar, _point(x, args))
    entry = None if per_fun is None else per_fun.get(key)
    traced = entry.current if entry.__class__ is Paths else entry
    if traced is None or traced.stale():
        with TRACE_LOCK:
            per_fun = TRACES.setdefault(f, {})
            entry = per_fun.get(key)
            traced = entry.current if entry.__class__ is Paths else entry
            if traced is None or traced.stale():
                if isinstance(x, np.ndarray):  # its branches are followed at finite values
                    require_finite(x)
                traced = Traced(f, avals, scalar, _point(x, args))
                per_fun[key] = traced if traced.check is None else Paths(traced)
    return traced


def path_at(traced: Traced, x: Any, args: Sequence[Any]) -> Traced:
    """The path of ``traced``'s function whose branches hold at ``(x, *args)``: one kept,
    or a new guarded trace there (kept beside the others, at most :data:`MAX_PATHS`)."""
    f_ref, avals, scalar = traced.site
    f = f_ref()
    if f is None:
        raise RuntimeError("the traced function no longer exists")
    key = (avals, scalar)
    with TRACE_LOCK:
        try:
            per_fun = TRACES.setdefault(f, {})
        except TypeError:
            return Traced(f, avals, scalar, _point(x, args))
        entry = per_fun.get(key)
        if entry.__class__ is Paths:
            for variant in entry.variants:
                if not variant.stale() and variant.holds(x, args):
                    entry.use(variant)
                    return variant
        new = Traced(f, avals, scalar, _point(x, args))
        if new.check is None:  # no branch on this path: it serves every point
            per_fun[key] = new
        elif entry.__class__ is Paths and not any(v.stale() for v in entry.variants):
            entry.add(new, getattr(f, "__name__", type(f).__name__))
        else:
            per_fun[key] = Paths(new)
        return new


def traced_here(f: Callable, x: Any, args: tuple, scalar: bool) -> Traced:
    """:func:`traced_at`, on the path that holds at ``(x, *args)`` (tested first: for
    callers that read the program itself, a sparsity pattern say)."""
    traced = traced_at(f, x, args, scalar)
    if traced.check is not None and not traced.holds(x, args):
        traced = path_at(traced, x, args)
    return traced


#: How many times a call looks for the path that holds before giving up (a path traced
#: at x holds at x: more than one retry means the function is not deterministic).
PATH_RETRIES = 4


def derive(traced: Traced, kind: str, k: int | None, make: Callable[..., Any],
           engine: str | None, tests_point: bool = False) -> Any:
    """The derived program(s) of one kind and frame width, made by ``make(program)`` once
    per trace and compiled with ``engine`` (``None``: kept as programs, for inlining into a
    trace). For a path of a function that branches, the first program also says whether
    the path holds (one more output), and its runner raises :class:`GuardFailed` where it
    does not. With ``tests_point`` the first program also tests that its first input is
    finite (:func:`with_point_test`), and its runner raises ValueError where it is not."""
    key = (kind, k, engine, tests_point)
    found = traced.derived.get(key)
    if found is None:
        with TRACE_LOCK:
            found = traced.derived.get(key)
            if found is None:
                programs = _make(make, traced.program)
                if tests_point:
                    programs = with_point_test(programs)
                if traced.check is not None:
                    programs = with_check(programs, traced.check)
                found = traced.derived[key] = _derived(programs, engine,
                                                       traced.check is not None, tests_point)
    return found


def _make(make: Callable[..., Any], program: Program) -> Any:
    """``make(program)``; ``make()`` for a maker that takes no argument (it reads the
    program of the trace it was made for)."""
    code = getattr(make, "__code__", None)
    if code is not None and code.co_argcount == 0 and not code.co_flags & 0x04:
        return make()
    return make(program)


def with_check(programs: Any, check: Program) -> Any:
    """``programs`` (one, or a tuple whose first runs at x) with ``check``'s output
    appended to the first: the derived program then tests its own path in its loops."""
    first = programs if isinstance(programs, Program) else programs[0]
    roots = [new_tracer(slot) for slot in first.in_slots]
    outs = interpret(first, roots)
    (ok,) = interpret(check, roots[:len(check.inputs)])
    combined, closed = to_program(roots, [*outs, ok])
    assert not closed  # both programs are closed: interpreting them reaches only roots
    return combined if isinstance(programs, Program) else (combined, *programs[1:])


def with_point_test(programs: Any) -> Any:
    """``programs`` (one, or a tuple whose first runs at x) with one more output for the
    first: ``sum(x * 0.0)``, 0 when every entry of x is finite and nan otherwise (inf * 0
    is nan). The numba engine fuses it into the loops that read x, so a large point is not
    read once more, before the kernel, to be tested."""
    first = programs if isinstance(programs, Program) else programs[0]
    roots = [new_tracer(slot) for slot in first.in_slots]
    outs = interpret(first, roots)
    zero = Var(np.zeros(()), const=True)
    x = roots[0]
    test = reduce_sum_p(mul_p(x, zero), axes=tuple(range(len(x.aval.shape))))
    tested, closed = to_program(roots, [*outs, test])
    assert not closed  # a derived program is closed: interpreting it reaches only roots
    return tested if isinstance(programs, Program) else (tested, *programs[1:])


def _derived(programs: Any, engine: str | None, guarded: bool = False,
             tests_point: bool = False) -> Any:
    """``programs`` (one or a tuple) compiled with ``engine``, or as they are for None;
    a guarded first runner checks its last output, a point-testing one the output
    before (or the last, unguarded)."""
    if engine is None:  # inlining: keep the programs
        return programs
    first = programs if isinstance(programs, Program) else programs[0]
    run = compile_program(first, engine)
    if guarded:
        run = guarded_runner(run, len(first.outputs) - 1)
    if tests_point:
        run = point_tested_runner(run)
    if isinstance(programs, Program):
        return run
    return (run, *(compile_program(p, engine) for p in programs[1:]))


def point_tested_runner(run: Callable) -> Callable:
    """``run`` (of a program whose last output is :func:`with_point_test`'s) without that
    output: raises the ValueError of :func:`require_finite` when its first input has a
    non-finite entry. ``out=`` and ``reusing_outputs`` as in :func:`guarded_runner`."""
    def tested(*inputs: Any, out: Any = None) -> Any:
        if out is None:
            outs = run(*inputs)
        else:
            outs = run(*inputs, out=(*out, np.empty((), dtype=np.float64)))
        if outs[-1]:  # nan (an inf or nan in x), never -0.0 or 0.0
            require_finite(np.asarray(inputs[0], dtype=np.float64))
        return outs[:-1]

    if hasattr(run, "reusing_outputs"):
        tested.reusing_outputs = (  # type: ignore[attr-defined]
            lambda: point_tested_runner(run.reusing_outputs()))
    return tested


def guarded_runner(run: Callable, outputs: int) -> Callable:
    """``run`` (of a program with ``outputs`` outputs and the path's test after them)
    without the test's output: raises :class:`GuardFailed` when the path does not hold.
    ``out=`` gets an array for that output added; ``reusing_outputs`` (where ``run`` has
    it) gives a guarded runner too. One and two outputs (a product; a value and a
    gradient) are unpacked directly: the check then costs about 0.1 µs per call."""
    guarded: Callable
    if outputs == 1:
        def guarded(*inputs: Any, out: Any = None) -> Any:
            if out is not None:
                return _checked(run(*inputs, out=(*out, np.empty((), dtype=np.bool_))))
            y, ok = run(*inputs)
            if ok:
                return (y,)
            raise GuardFailed
    elif outputs == 2:
        def guarded(*inputs: Any, out: Any = None) -> Any:
            if out is not None:
                return _checked(run(*inputs, out=(*out, np.empty((), dtype=np.bool_))))
            y, g, ok = run(*inputs)
            if ok:
                return y, g
            raise GuardFailed
    else:
        def guarded(*inputs: Any, out: Any = None) -> Any:
            if out is not None:
                return _checked(run(*inputs, out=(*out, np.empty((), dtype=np.bool_))))
            return _checked(run(*inputs))
    if hasattr(run, "reusing_outputs"):
        guarded.reusing_outputs = (  # type: ignore[attr-defined]
            lambda: guarded_runner(run.reusing_outputs(), outputs))
    guarded.unguarded = run  # type: ignore[attr-defined]
    return guarded


def _checked(outs: tuple) -> tuple:
    if outs[-1]:
        return outs[:-1]
    raise GuardFailed


# ---- running derived programs ---------------------------------------------------------------

def is_traced_call(x: Any, args: Sequence[Any]) -> bool:
    """Whether the call is made on Vars (inside a trace, or on eager Vars)."""
    return isinstance(x, Var) or any(isinstance(a, Var) for a in args)


def inlines(traced: Traced, x: Any, args: Sequence[Any], extra: Sequence[Any] = ()) -> bool:
    """Whether the result depends on Vars, so the derived program is inlined, not run.

    It does when the call is made on Vars, or when ``f`` closes over values of an
    enclosing trace or eager Vars (``grad(inner)`` inside a traced ``outer``, at a
    constant point): the enclosing level differentiates through them.
    """
    return (traced.from_outer or is_traced_call(x, args)
            or any(isinstance(e, Var) for e in extra))


def run_derived(traced: Traced, kind: str, k: int | None, make: Callable[..., Any],
                engine: str, x: Any, args: Sequence[Any], extra: Sequence[Any] = (),
                tests_point: bool = False) -> list:
    """Run a derived program, compiled (arrays) or inlined (Vars); on the path of ``f``
    that holds at x (``make(program)`` derives it from each path's program).

    ``tests_point``: x has not been tested for non-finite entries (``as_point(x,
    finite=False)``). A large x (:data:`TEST_IN_KERNEL_FROM`) under the compiled engines
    with threads is tested in the derived program's own loops; otherwise here, before
    it runs (one pass: the NumPy evaluator would make two of the test as an output, and
    a serial kernel's loop may no longer be vectorised with the test's sum in it)."""
    if tests_point and not _tests_in_kernel(engine, x):
        if isinstance(x, np.ndarray):  # a Var (a call inside a trace) is not tested
            require_finite(x)
        tests_point = False
    for _ in range(PATH_RETRIES):
        try:
            return _run_derived(traced, kind, k, make, engine, x, args, extra, tests_point)
        except GuardFailed:
            traced = path_at(traced, x, args)
    raise RuntimeError(NO_PATH_MESSAGE)


NO_PATH_MESSAGE = ("the function's branches went another way each time it was traced at the same "
            "point: is it deterministic? (newtonad follows the branches it takes at each "
            "point; a function whose branches depend on a counter or on random numbers "
            "cannot be traced)")


#: Points of this many entries or more are tested inside the derived kernel: its loops
#: over them run on threads (the numba engine's ``parallel_min_iterations``).
TEST_IN_KERNEL_FROM = 1 << 16


def _tests_in_kernel(engine: str, x: Any) -> bool:
    """Does the derived program test the point ``x`` in its own loops (see run_derived)?"""
    if engine == "numpy" or not isinstance(x, np.ndarray) or x.size < TEST_IN_KERNEL_FROM:
        return False
    return numba_threads.threads_expected() >= 2


def _run_derived(traced: Traced, kind: str, k: int | None, make: Callable[..., Any],
                 engine: str, x: Any, args: Sequence[Any], extra: Sequence[Any],
                 tests_point: bool) -> list:
    if inlines(traced, x, args, extra):
        program = derive(traced, kind, k, make, None)
        outs = interpret(program, [x, *args, *traced.closed, *extra])
        if traced.check is not None:
            # the enclosing trace records this as one of its own branches
            ok = outs.pop()
            if not ok:
                raise GuardFailed
        return outs
    run = derive(traced, kind, k, make, engine, tests_point)
    return list(run(x, *args, *traced.closed_values(), *extra))


# ---- value and gradient with copies (Objective at a new large point) -----------------------

def with_copy_of_x(program: Program) -> Program:
    """``program``'s value-and-gradient program, returning ``(f, ∇f, x)``.

    The extra output is ``x * 1`` (exact: 1 is the identity of IEEE multiplication): an
    elementwise step the numba engine fuses into the loops that read ``x``, so the kernel
    writes the private copy of a large point, with threads where its loops have them,
    instead of a serial pass over memory before it. (A plain repeated output would be a
    separate copy loop; ``simplify`` would remove the ``* 1``, so it is not run here.)
    """
    vg = tf.value_and_grad_program(program)
    roots = [new_tracer(slot) for slot in vg.in_slots]
    y, g = interpret(vg, roots)
    one = Var(np.ones(()), const=True)
    copies, closed = to_program(roots, [y, g, mul_p(roots[0], one)])
    assert not closed  # vg is closed: interpreting it reaches nothing outside roots
    return copies


# ---- dense matrices -----------------------------------------------------------------------

#: Dense matrices smaller than this are made without asking how much memory is free
#: (reading /proc/meminfo costs tens of microseconds; trust-exact asks at every point).
CHECK_FROM_BYTES = 1 << 26
#: The memory assumed available where neither /proc/meminfo nor sysconf tells.
FALLBACK_MEMORY = 16 << 30


#: What a dense Hessian too large for memory can be replaced with (api, Objective).
HESSIAN_INSTEAD = ("Use nad.hessian(f, sparse=True) (or Objective(f, sparse=True)) for a "
                   "sparse Hessian, or products with it: nad.hvp(f, x, V) (Objective.hessp), "
                   "as the Newton-CG and Krylov methods do.")


class DenseTooLarge(MemoryError):
    """A dense derivative matrix would not fit in the memory available; refused before
    anything is allocated (an allocation of that size gets the process killed under
    overcommit rather than a MemoryError)."""


def available_memory() -> int:
    """Bytes of memory available to a new allocation: ``MemAvailable`` of /proc/meminfo,
    else the free physical pages sysconf reports, else :data:`FALLBACK_MEMORY`."""
    try:
        with open("/proc/meminfo", "rb") as meminfo:
            for line in meminfo:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return FALLBACK_MEMORY


def check_dense(rows: int, cols: int, what: str, instead: str, copies: int = 1) -> None:
    """Raise :class:`DenseTooLarge` when ``copies`` float64 matrices of ``rows`` x ``cols``
    need more than :func:`available_memory`.

    Parameters
    ----------
    rows, cols : int
        The matrix's shape.
    what : str
        What makes it (``"nad.hessian"``), for the message.
    instead : str
        The alternatives to name, a sentence.
    copies : int, optional
        How many such matrices are alive at once.

    Raises
    ------
    DenseTooLarge
        A MemoryError naming the size in GiB and the alternatives.
    """
    need = 8 * int(rows) * int(cols) * int(copies)
    if need < CHECK_FROM_BYTES:
        return
    free = available_memory()
    if need > free:
        raise DenseTooLarge(
            f"{what}: a dense {rows} x {cols} float64 matrix"
            f"{f' ({copies} of them)' if copies > 1 else ''} needs {need / 2**30:.1f} GiB, "
            f"more than the {free / 2**30:.1f} GiB of memory available. {instead}")


# ---- identity frames --------------------------------------------------------------------

def identity_columns(n: int, a: int, b: int) -> np.ndarray:
    """Columns ``a:b`` of the n×n identity: one chunk of an identity frame."""
    E = np.zeros((n, b - a))
    E[np.arange(a, b), np.arange(b - a)] = 1.0
    return E


def frame_chunks(n: int, rows: int) -> list[tuple[int, int]]:
    """Column ranges ``(a, b)`` covering ``range(n)`` so a frame of ``rows`` rows stays
    within ``FRAME_BUDGET`` elements per chunk."""
    width = int(max(1, min(n, FRAME_BUDGET // max(rows, 1))))
    return [(i, min(n, i + width)) for i in range(0, n, width)]

