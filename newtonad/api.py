"""The public AD functions: grad, value_and_grad, jvp, vjp, hvp, linearize, jacobian,
hessian and trace.

Each traces ``f`` once per input signature (shapes and dtypes of ``x`` and ``args``)
into a Program, derives the program it needs by transformation, compiles it with an
engine and caches the result on the function. Called on Vars (inside a traced
function, or on eager ``newtonad.Var`` values) they instead inline the derived program
into the enclosing graph, so transforms compose: ``grad(grad(g))``,
``jacobian(grad(f))`` and a gradient inside an objective all work.
"""

from __future__ import annotations

import functools
import os
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from .ad import numpy_api as npa
from .ad import transforms as tf
from .ad.engine import compile_program
from .ad.numpy_api import fold_objects
from .ad.program import Program, Slot
from .ad.trace import interpret, trace_function
from .ad.var import Var, const_var

# "numba": fused kernels compiled on first use and kept in the disk cache. "auto" (NumPy
# until a program is hot, then numba) and "numpy" (the reference evaluator) are opt-ins.
DEFAULT_ENGINE = os.environ.get("NEWTONAD_ENGINE", "numba")
_FRAME_BUDGET = 1 << 24  # elements per frame chunk in jacobian / hessian (128 MiB of float64)


# ---- inputs ---------------------------------------------------------------------------------

def _as_point(x: Any, what: str = "x") -> np.ndarray:
    """Validate a differentiation point: a finite float array."""
    if isinstance(x, Var):
        return x
    arr = np.asarray(x)
    if arr.dtype.kind in "biu":
        raise TypeError(f"{what} has integer dtype {arr.dtype}; derivatives need floats: "
                        f"pass {what}.astype(float)")
    if arr.dtype.kind != "f":
        raise TypeError(f"{what} must be a float array, got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(f"{what} has {bad.size} non-finite entries (first at flat index "
                         f"{bad[0]}); derivatives are only defined at finite points")
    return arr


def _as_data(a: Any) -> Any:
    if isinstance(a, Var):
        return a
    arr = np.asarray(a)
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        arr = arr.astype(np.float64)
    if arr.dtype.kind in "iu" and arr.dtype != np.int64:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"extra argument of dtype {arr.dtype} cannot be passed to a traced function")
    return arr


def _aval(a: Any) -> Slot:
    if isinstance(a, Var):
        return a.aval
    return Slot(tuple(a.shape), a.dtype.name)


def _frame(V: Any, x_shape: tuple[int, ...], name: str = "V") -> tuple[Any, int | None]:
    """Accept ``x.shape + (k,)`` (a frame of k directions) or ``x.shape`` (one direction).

    Returns the array and its frame width, ``None`` for a single direction: that case
    runs programs without a frame axis, whose loops are as simple as a gradient's.
    """
    V = V if isinstance(V, Var) else np.asarray(V, dtype=np.float64)
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
        wrap = functools.partial(_checked_result, f, scalar=scalar)
        self.program, self.closed, self.from_outer, self.guard = trace_function(f, avals, wrap=wrap)
        self.derived: dict[Any, Any] = {}

    def stale(self) -> bool:
        """Whether a value ``f`` read outside its arguments has changed since the trace."""
        return self.guard is not None and self.guard.changed()

    def closed_values(self) -> list[np.ndarray]:
        return [np.asarray(v.value) for v in self.closed]


def _checked_result(f: Callable, out: Any, *, scalar: bool) -> Any:
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
    if scalar and shape != ():
        raise ValueError(f"{name} must return a scalar for grad / hvp / hessian / minimize, but "
                         f"it returned shape {shape}; reduce it (e.g. np.sum) or use jacobian "
                         "/ vjp")
    return out


_cache: "weakref.WeakKeyDictionary[Callable, dict]" = weakref.WeakKeyDictionary()


def _traced(f: Callable, x: Any, args: tuple, scalar: bool) -> Traced:
    avals = (_aval(x),) + tuple(_aval(a) for a in args)
    try:
        per_fun = _cache.setdefault(f, {})
    except TypeError:  # not weak-referenceable: trace every time
        return Traced(f, avals, scalar)
    key = (avals, scalar)
    traced = per_fun.get(key)
    if traced is None or traced.guard is not None and traced.guard.changed():
        new = Traced(f, avals, scalar)
        if traced is not None and new.program == traced.program:
            new.derived = traced.derived  # e.g. only a lifted input changed: same kernels
        traced = per_fun[key] = new
    return traced


def _derived(traced: Traced, kind: str, k: int, make: Callable[[], Any], engine: str | None):
    key = (kind, k, engine)
    if key not in traced.derived:
        programs = make()
        if engine is None:  # inlining: keep the programs
            traced.derived[key] = programs
        elif isinstance(programs, Program):
            traced.derived[key] = compile_program(programs, engine)
        else:
            traced.derived[key] = tuple(compile_program(p, engine) for p in programs)
    return traced.derived[key]


def _is_traced_call(x: Any, args: tuple) -> bool:
    return isinstance(x, Var) or any(isinstance(a, Var) for a in args)


def _inlines(traced: Traced, x: Any, args: tuple, extra: Sequence[Any] = ()) -> bool:
    """Whether the result depends on Vars, so the derived program is inlined, not run.

    It does when the call is made on Vars, or when ``f`` closes over values of an
    enclosing trace or eager Vars (``grad(inner)`` inside a traced ``outer``, at a
    constant point): the enclosing level differentiates through them.
    """
    return (traced.from_outer or _is_traced_call(x, args)
            or any(isinstance(e, Var) for e in extra))


def _run(traced: Traced, kind: str, k: int, make, engine: str, x: Any, args: tuple,
         extra: Sequence[Any] = ()) -> list:
    """Run a derived program, compiled (arrays) or inlined (Vars)."""
    if _inlines(traced, x, args, extra):
        program = _derived(traced, kind, k, make, None)
        return interpret(program, [x, *args, *traced.closed, *extra])
    run = _derived(traced, kind, k, make, engine)
    return list(run(x, *args, *traced.closed_values(), *extra))


def _engine(engine: str | None) -> str:
    return engine or DEFAULT_ENGINE


def _prepare(f, x, args, scalar):
    x = _as_point(x)
    args = tuple(_as_data(a) for a in args)
    return x, args, _traced(f, x, args, scalar)


# ---- public API ------------------------------------------------------------------------------

def trace(f: Callable, x: Any, *args: Any) -> Program:
    """Trace ``f(x, *args)`` into a Program.

    Parameters
    ----------
    f : callable
        Plain NumPy code mapping arrays to an array.
    x : array_like
        The point; only its shape and dtype matter.
    *args : array_like
        Extra data inputs; they become program inputs, never constants.

    Returns
    -------
    Program
        ``str(program)`` lists its slots and steps.
    """
    x = _as_point(x)
    args = tuple(_as_data(a) for a in args)
    return _traced(f, x, args, scalar=False).program


def value_and_grad(f: Callable, *, engine: str | None = None) -> Callable:
    """Return ``g(x, *args) -> (f(x, *args), ∇f(x, *args))`` computed in one pass.

    Parameters
    ----------
    f : callable
        A scalar function of an array ``x`` (any shape) and extra data ``args``.
    engine : str, optional
        The engine that runs the derived program (default: the package default).

    Returns
    -------
    callable
        ``(x, *args) -> (float, ndarray shaped like x)``.
    """
    def vg(x, *args):
        x, args, traced = _prepare(f, x, args, scalar=True)
        y, g = _run(traced, "value_and_grad", 0,
                    lambda: tf.value_and_grad_program(traced.program), _engine(engine), x, args)
        return (y if isinstance(y, Var) else float(y)), g

    return vg


def grad(f: Callable, *, engine: str | None = None) -> Callable:
    """Return ``g(x, *args) -> ∇f(x, *args)``, an array shaped like ``x``.

    The gradient is a reverse pass, ``vjp`` with the single cotangent 1.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> nad.grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    array([2., 4.])
    """
    vg = value_and_grad(f, engine=engine)
    return lambda x, *args: vg(x, *args)[1]


def jvp(f: Callable, x: Any, V: Any, args: Sequence[Any] = (), *, engine: str | None = None):
    """Forward mode: ``(f(x), J V)`` for a tangent frame ``V``.

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` returning an array.
    x : array_like
        The point.
    V : array_like
        A frame of shape ``x.shape + (k,)`` (k directions), or ``x.shape`` (one).
    args : sequence
        Extra data inputs.

    Returns
    -------
    (ndarray, ndarray)
        ``f(x)`` and ``J V`` of shape ``y.shape + (k,)`` (``y.shape`` for one direction).
    """
    x, args, traced = _prepare(f, x, tuple(args), scalar=False)
    V, k = _frame(V, tuple(x.shape))
    return tuple(_run(traced, "jvp", k, lambda: tf.jvp_program(traced.program, k),
                      _engine(engine), x, args, [V]))


def vjp(f: Callable, x: Any, W: Any, args: Sequence[Any] = (), *, engine: str | None = None):
    """Reverse mode: ``(f(x), Jᵀ W)`` for a cotangent frame ``W``.

    ``W`` has shape ``y.shape + (k,)`` (k cotangents) or ``y.shape`` (one); the result
    has shape ``x.shape + (k,)`` (or ``x.shape``). ``vjp = transpose ∘ linearize``.
    """
    x, args, traced = _prepare(f, x, tuple(args), scalar=False)
    y_shape = traced.program.out_slots[0].shape
    W, k = _frame(W, y_shape, "W")
    return tuple(_run(traced, "vjp", k, lambda: tf.vjp_program(traced.program, k),
                      _engine(engine), x, args, [W]))


def hvp(f: Callable, x: Any, V: Any, args: Sequence[Any] = (), *, engine: str | None = None):
    """Hessian-vector products ``H V`` by forward-over-reverse.

    ``V`` is a velocity frame of shape ``x.shape + (k,)`` (or ``x.shape``); its k
    columns share one primal pass and one cotangent column (seed 000). The result has
    the shape of ``V``.
    """
    x, args, traced = _prepare(f, x, tuple(args), scalar=True)
    V, k = _frame(V, tuple(x.shape))
    (hv,) = _run(traced, "hvp", k, lambda: tf.hvp_program(traced.program, k), _engine(engine),
                 x, args, [V])
    return hv


def linearize(f: Callable, x: Any, args: Sequence[Any] = (), *, engine: str | None = None):
    """``(f(x), lin)`` with ``lin(V) == J V``; the primal work is done once.

    ``linearize = partial_eval ∘ jvp``: the residuals at ``x`` are computed once per
    frame width, then each ``lin(V)`` runs only the linear program.
    """
    x, args, traced = _prepare(f, x, tuple(args), scalar=False)
    if _inlines(traced, x, args):
        raise TypeError("linearize is for concrete points and functions of them; inside a "
                        "traced function (or on newtonad.Var values) use jvp")
    x = x.copy()  # lin reads x later: the caller may change its array meanwhile
    known = (x, *args, *traced.closed_values())
    eng = _engine(engine)
    residuals: dict[int | None, tuple] = {}

    def programs(k):
        return _derived(traced, "linearize", k,
                        lambda: tf.linearize_program(traced.program, k), eng)

    primal, _ = programs(None)
    outs = primal(*known)
    n_out = len(traced.program.outputs)
    residuals[None] = outs[n_out:]

    def lin(V):
        V, k = _frame(V, tuple(x.shape))
        prim_k, linear_k = programs(k)
        if k not in residuals:
            residuals[k] = prim_k(*known)[n_out:]
        (t,) = linear_k(*known, *residuals[k], V)
        return t

    return outs[0], lin


def _identity_columns(n: int, a: int, b: int) -> np.ndarray:
    """Columns ``a:b`` of the n×n identity: one chunk of an identity frame."""
    E = np.zeros((n, b - a))
    E[np.arange(a, b), np.arange(b - a)] = 1.0
    return E


def _chunks(n: int, rows: int) -> list[tuple[int, int]]:
    width = int(max(1, min(n, _FRAME_BUDGET // max(rows, 1))))
    return [(i, min(n, i + width)) for i in range(0, n, width)]


def jacobian(f: Callable, *, engine: str | None = None) -> Callable:
    """Return ``J(x, *args)`` of shape ``y.shape + x.shape``.

    Forward frames of identity columns when ``x`` is smaller than ``y``, reverse frames
    otherwise; columns go in chunks so memory stays bounded.
    """
    def jac(x, *args):
        x_ = _as_point(x)
        if _is_traced_call(x_, args):
            return _jacobian_traced(f, x_, args)
        args_ = tuple(_as_data(a) for a in args)
        traced = _traced(f, x_, args_, scalar=False)
        if traced.from_outer:
            return _jacobian_traced(f, x_, args_)
        y_shape = traced.program.out_slots[0].shape
        n, m = x_.size, int(np.prod(y_shape, dtype=np.int64))
        out = np.empty((m, n))
        if n <= m:
            for a, b in _chunks(n, max(n, m)):
                E = _identity_columns(n, a, b)
                _, t = jvp(f, x_, E.reshape(x_.shape + (b - a,)), args_, engine=engine)
                out[:, a:b] = t.reshape(m, b - a)
        else:
            for a, b in _chunks(m, max(n, m)):
                E = _identity_columns(m, a, b)
                _, ct = vjp(f, x_, E.reshape(y_shape + (b - a,)), args_, engine=engine)
                out[a:b, :] = ct.reshape(n, b - a).T
        return out.reshape(y_shape + x_.shape)

    return jac


def _jacobian_traced(f, x, args):
    """Jacobian inside a trace: one forward frame of identity columns."""
    n = int(np.prod(x.shape, dtype=np.int64))
    eye = np.eye(n).reshape(tuple(x.shape) + (n,))
    _, t = jvp(f, x, const_var(eye), args)
    y_shape = tuple(t.shape[:-1])
    return npa.reshape(t, y_shape + tuple(x.shape))


def hessian(f: Callable, *, engine: str | None = None) -> Callable:
    """Return ``H(x, *args)`` of shape ``x.shape + x.shape``.

    Forward-over-reverse with identity frames, in chunks so memory stays bounded.
    """
    def hess(x, *args):
        x_ = _as_point(x)
        if _is_traced_call(x_, args) or _traced(f, x_, tuple(_as_data(a) for a in args),
                                                 scalar=True).from_outer:
            return _jacobian_traced(grad(f), x_, args)
        n = x_.size
        out = np.empty((n, n))
        for a, b in _chunks(n, n):
            E = _identity_columns(n, a, b)
            out[:, a:b] = hvp(f, x_, E.reshape(x_.shape + (b - a,)), args, engine=engine).reshape(n, b - a)
        return out.reshape(x_.shape + x_.shape)

    return hess
