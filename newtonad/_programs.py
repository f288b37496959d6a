"""What the public AD functions and ``Objective`` share: checked inputs, ``f`` traced
once per signature, its derived programs compiled once per kind, identity frames in chunks.

Internal: :mod:`newtonad.api` and :mod:`newtonad.objective` both build on it, so neither
reaches into the other's private names.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import threading
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from .ad import reroll
from .ad import transforms as tf
from .ad.engine import compile_program
from .ad.numpy_api import fold_objects
from .ad.primitives.elementwise import mul_p
from .ad.program import Program, Slot
from .ad.trace import interpret, to_program, trace_function
from .ad.var import Var, new_tracer

FRAME_BUDGET = 1 << 24  # elements per frame chunk in jacobian / hessian (128 MiB of float64)


# ---- inputs ---------------------------------------------------------------------------------

def as_point(x: Any, what: str = "x") -> Any:
    """Validate a differentiation point: a finite float64 array, or a Var as it is."""
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
    if not _all_finite(arr):
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(f"{what} has {bad.size} non-finite entries (first at flat index "
                         f"{bad[0]}); derivatives are only defined at finite points")
    return arr


#: From this many entries the finiteness test is a serial compiled loop: OpenBLAS runs
#: ``ddot`` on all its threads from 10 000 entries, and a threaded call waits for every
#: core, which on a busy machine is a scheduler time slice (8 ms) per call.
SERIAL_FROM = 8192


def _all_finite(arr: np.ndarray) -> bool:
    """Whether every entry of the float64 array ``arr`` is finite, in one pass, no mask."""
    if arr.size < SERIAL_FROM:
        # a finite sum of squares means finite entries (nan and inf propagate); BLAS runs
        # this size on one thread; only an overflowing sum takes the exact test
        return math.isfinite(np.vdot(arr, arr)) or bool(np.all(np.isfinite(arr)))
    if "numba" in sys.modules:  # loaded by the kernels: the compiled loop, 1.5x NumPy's sum
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
    return Slot(tuple(a.shape), a.dtype.name)


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

class Traced:
    """``f`` traced at one signature: its program and closed-over Vars."""

    def __init__(self, f: Callable, avals: Sequence[Slot], scalar: bool):
        wrap = functools.partial(checked_result, f, scalar=scalar)
        self.program, self.closed, self.from_outer, self.guard = trace_function(f, avals, wrap=wrap)
        if reroll.REROLL:  # loops traced term by term, folded into vector steps
            self.program = reroll.reroll(self.program)
        self.derived: dict[Any, Any] = {}

    def stale(self) -> bool:
        """Whether a value ``f`` read outside its arguments has changed since the trace."""
        return self.guard is not None and self.guard.changed()

    def closed_values(self) -> list[np.ndarray]:
        """The current values of the closed-over Vars: the program's inputs after ``args``."""
        return [np.asarray(v.value) for v in self.closed]


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
        raise ValueError(f"{name} must return a scalar for grad / hvp / hessian / minimize, but "
                         f"it returned shape {shape}; reduce it (e.g. np.sum) or use jacobian "
                         "/ vjp")
    return out


#: f -> {(input slots, scalar): Traced}; an entry lives as long as its function.
TRACES: "weakref.WeakKeyDictionary[Callable, dict]" = weakref.WeakKeyDictionary()
#: Held to trace, derive and compile (the misses of the caches here and the Objective's):
#: tracing keeps process-wide state, and one thread's work then serves the others.
#: Re-entrant: tracing f may trace a function f calls (``grad(inner)`` inside f).
TRACE_LOCK = threading.RLock()


def traced_at(f: Callable, x: Any, args: tuple, scalar: bool) -> Traced:
    """``f`` traced at the signature of ``(x, *args)``: cached, re-traced when a value it
    reads outside its arguments has changed."""
    avals = (aval_of(x),) + tuple(aval_of(a) for a in args)
    key = (avals, scalar)
    try:
        per_fun = TRACES.get(f)
    except TypeError:  # not weak-referenceable: trace every time
        with TRACE_LOCK:
            return Traced(f, avals, scalar)
    traced = None if per_fun is None else per_fun.get(key)
    if traced is None or traced.stale():
        with TRACE_LOCK:
            per_fun = TRACES.setdefault(f, {})
            traced = per_fun.get(key)
            if traced is None or traced.stale():
                new = Traced(f, avals, scalar)
                if traced is not None and new.program == traced.program:
                    new.derived = traced.derived  # e.g. only a lifted input changed
                traced = per_fun[key] = new
    return traced


def derive(traced: Traced, kind: str, k: int | None, make: Callable[[], Any],
           engine: str | None) -> Any:
    """The derived program(s) of one kind and frame width, made by ``make`` once per trace
    and compiled with ``engine`` (``None``: kept as programs, for inlining into a trace)."""
    key = (kind, k, engine)
    found = traced.derived.get(key)
    if found is None:
        with TRACE_LOCK:
            found = traced.derived.get(key)
            if found is None:
                found = traced.derived[key] = _derived(make(), engine)
    return found


def _derived(programs: Any, engine: str | None) -> Any:
    """``programs`` (one or a tuple) compiled with ``engine``, or as they are for None."""
    if engine is None:  # inlining: keep the programs
        return programs
    if isinstance(programs, Program):
        return compile_program(programs, engine)
    return tuple(compile_program(p, engine) for p in programs)


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


def run_derived(traced: Traced, kind: str, k: int | None, make: Callable[[], Any],
                engine: str, x: Any, args: Sequence[Any], extra: Sequence[Any] = ()) -> list:
    """Run a derived program, compiled (arrays) or inlined (Vars)."""
    if inlines(traced, x, args, extra):
        program = derive(traced, kind, k, make, None)
        return interpret(program, [x, *args, *traced.closed, *extra])
    run = derive(traced, kind, k, make, engine)
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

