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
from typing import Any, Callable, Sequence

import numpy as np

from ._programs import (
    FRAME_BUDGET,
    HESSIAN_INSTEAD,
    NO_PATH_MESSAGE,
    PATH_RETRIES,
    GuardFailed,
    Traced,
    as_data,
    as_frame,
    as_point,
    check_dense,
    derive,
    frame_chunks,
    identity_columns,
    inlines,
    is_traced_call,
    path_at,
    run_derived,
    traced_at,
)
from ._settings import settings
from ._static_args import bind_static
from .ad import numpy_api as npa
from .ad import transforms as tf
from .ad.program import Program
from .ad.var import Var, const_var
from .objective_protocol import dense_hessian
from .sparse_derivatives import (
    hessian_sparsity,
    jacobian_sparsity,
    sparse_hessian,
    sparse_jacobian,
)

# ---- running derived programs ---------------------------------------------------------------

def _engine(engine: str | None) -> str:
    return engine or settings.engine


def _prepare(f: Callable, x: Any, args: Sequence[Any], scalar: bool,
             finite: bool = True) -> tuple[Any, tuple[Any, ...], Traced]:
    """``x`` checked (finite unless the derived program tests it: ``finite=False``), the
    static arguments bound, the data checked, and ``f`` traced at their signature."""
    x = as_point(x, finite=finite)
    f, args = bind_static(f, tuple(args))  # Python scalars and strings: static
    args = tuple(as_data(a) for a in args)
    return x, args, traced_at(f, x, args, scalar)


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

    Raises
    ------
    TypeError
        When ``x`` is not a float array or ``f`` returns something other than an array.
    ValueError
        When ``x`` has non-finite entries.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> program = nad.trace(lambda x, a: np.sum(a * x ** 2), np.zeros(2), np.ones(2))
    >>> print(program)
    program(s0:f64[2], s1:f64[2])
      s2:f64[2] = square(s0)
      s3:f64[2] = mul(s1, s2)
      s4:f64[] = reduce_sum(s3, axes=(0,))
      return s4
    """
    x = as_point(x)
    f, args = bind_static(f, tuple(args))
    args = tuple(as_data(a) for a in args)
    return traced_at(f, x, args, scalar=False).program


def value_and_grad(f: Callable, *, engine: str | None = None) -> Callable:
    """Return ``g(x, *args) -> (f(x, *args), ∇f(x, *args))`` computed in one pass.

    Parameters
    ----------
    f : callable
        A scalar function of an array ``x`` (any shape) and extra data ``args``.
    engine : str, optional
        The engine that runs the derived program: ``"numba"``, ``"numpy"`` or ``"auto"``
        (default: ``newtonad.settings.engine``, from ``NEWTONAD_ENGINE``).

    Returns
    -------
    callable
        ``(x, *args) -> (float, ndarray shaped like x)``. It traces ``f`` once per
        shape and dtype of its inputs and raises TypeError or ValueError when ``f`` does
        not return a scalar or ``x`` is not a finite float array.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> nad.value_and_grad(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    (9.0, array([ 3., 12.]))
    """
    def vg(x, *args):
        x, args, traced = _prepare(f, x, args, scalar=True, finite=False)
        y, g = run_derived(traced, "value_and_grad", 0,
                           tf.value_and_grad_program, _engine(engine),
                           x, args, tests_point=True)
        return (y if isinstance(y, Var) else float(y)), g

    return vg


def grad(f: Callable, *, engine: str | None = None) -> Callable:
    """Return ``g(x, *args) -> ∇f(x, *args)``, an array shaped like ``x``.

    The gradient is a reverse pass, ``vjp`` with the single cotangent 1.

    Parameters
    ----------
    f : callable
        A scalar function of an array ``x`` (any shape) and extra data ``args``.
    engine : str, optional
        The engine that runs the derived program: ``"numba"``, ``"numpy"`` or ``"auto"``
        (default: ``newtonad.settings.engine``, from ``NEWTONAD_ENGINE``).

    Returns
    -------
    callable
        ``(x, *args) -> ndarray shaped like x``; it raises as
        :func:`value_and_grad`'s function does.

    See Also
    --------
    value_and_grad : The value and the gradient in one pass.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> nad.grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    array([2., 4.])
    """
    vg = value_and_grad(f, engine=engine)
    return lambda x, *args: vg(x, *args)[1]


def jvp(f: Callable, x: Any, V: Any, args: Sequence[Any] = (), *,
        engine: str | None = None) -> tuple[Any, ...]:
    """Forward mode: ``(f(x), J V)`` for a tangent frame ``V``.

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` returning an array.
    x : array_like
        The point.
    V : array_like
        A frame of shape ``x.shape + (k,)`` (k directions), or ``x.shape`` (one).
    args : sequence, optional
        Extra data inputs.
    engine : str, optional
        The engine that runs the derived program: ``"numba"``, ``"numpy"`` or ``"auto"``
        (default: ``newtonad.settings.engine``, from ``NEWTONAD_ENGINE``).

    Returns
    -------
    y : ndarray
        ``f(x, *args)``.
    JV : ndarray
        ``J V`` of shape ``y.shape + (k,)`` (``y.shape`` for one direction).

    Raises
    ------
    TypeError
        When ``x`` is not a float array or ``f`` does not return an array.
    ValueError
        When the frame's shape does not fit, or ``x`` has non-finite entries.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> nad.jvp(lambda x: x ** 2, np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    (array([1., 4.]), array([2., 0.]))
    """
    x, args, traced = _prepare(f, x, tuple(args), scalar=False, finite=False)
    V, k = as_frame(V, tuple(x.shape))
    return tuple(run_derived(traced, "jvp", k, lambda program: tf.jvp_program(program, k),
                             _engine(engine), x, args, [V], tests_point=True))


def vjp(f: Callable, x: Any, W: Any, args: Sequence[Any] = (), *,
        engine: str | None = None) -> tuple[Any, ...]:
    """Reverse mode: ``(f(x), Jᵀ W)`` for a cotangent frame ``W``.

    ``vjp = transpose ∘ linearize``.

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` returning an array.
    x : array_like
        The point.
    W : array_like
        A frame of shape ``y.shape + (k,)`` (k cotangents) or ``y.shape`` (one), where
        ``y = f(x, *args)``.
    args : sequence, optional
        Extra data inputs.
    engine : str, optional
        The engine that runs the derived program: ``"numba"``, ``"numpy"`` or ``"auto"``
        (default: ``newtonad.settings.engine``, from ``NEWTONAD_ENGINE``).

    Returns
    -------
    y : ndarray
        ``f(x, *args)``.
    JtW : ndarray
        ``Jᵀ W`` of shape ``x.shape + (k,)`` (``x.shape`` for one cotangent).

    Raises
    ------
    TypeError
        When ``x`` is not a float array or ``f`` does not return an array.
    ValueError
        When the frame's shape does not fit, or ``x`` has non-finite entries.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> nad.vjp(lambda x: x ** 2, np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    (array([1., 4.]), array([2., 4.]))
    """
    x, args, traced = _prepare(f, x, tuple(args), scalar=False, finite=False)
    y_shape = traced.program.out_slots[0].shape
    W, k = as_frame(W, y_shape, "W")
    return tuple(run_derived(traced, "vjp", k, lambda program: tf.vjp_program(program, k),
                             _engine(engine), x, args, [W], tests_point=True))


def hvp(f: Callable, x: Any, V: Any, args: Sequence[Any] = (), *,
        engine: str | None = None) -> Any:
    """Hessian-vector products ``H V`` by forward-over-reverse.

    The k columns of ``V`` share one primal pass and one cotangent column: the reverse
    pass runs once, the forward pass over it carries all k directions.

    Parameters
    ----------
    f : callable
        A scalar function ``f(x, *args)``.
    x : array_like
        The point.
    V : array_like
        A frame of shape ``x.shape + (k,)`` (k directions), or ``x.shape`` (one).
    args : sequence, optional
        Extra data inputs.
    engine : str, optional
        The engine that runs the derived program: ``"numba"``, ``"numpy"`` or ``"auto"``
        (default: ``newtonad.settings.engine``, from ``NEWTONAD_ENGINE``).

    Returns
    -------
    ndarray
        ``H V``, of the shape of ``V``.

    Raises
    ------
    TypeError
        When ``x`` is not a float array or ``f`` does not return an array.
    ValueError
        When ``f`` is not scalar, the frame's shape does not fit, or ``x`` has
        non-finite entries.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> nad.hvp(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    x, args, traced = _prepare(f, x, tuple(args), scalar=True, finite=False)
    V, k = as_frame(V, tuple(x.shape))
    (hv,) = run_derived(traced, "hvp", k, lambda program: tf.hvp_program(program, k),
                        _engine(engine), x, args, [V], tests_point=True)
    return hv


def linearize(f: Callable, x: Any, args: Sequence[Any] = (), *,
              engine: str | None = None) -> tuple[Any, Callable[[Any], Any]]:
    """Return ``(f(x), lin)`` with ``lin(V) == J V``; the primal work is done once.

    ``linearize = partial_eval ∘ jvp``: the residuals at ``x`` are computed once per
    frame width, then each ``lin(V)`` runs only the linear program.

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` returning an array.
    x : array_like
        The point (copied: later changes to the caller's array do not reach ``lin``).
    args : sequence, optional
        Extra data inputs.
    engine : str, optional
        The engine that runs the derived program: ``"numba"``, ``"numpy"`` or ``"auto"``
        (default: ``newtonad.settings.engine``, from ``NEWTONAD_ENGINE``).

    Returns
    -------
    y : ndarray
        ``f(x, *args)``.
    lin : callable
        ``lin(V) -> J V`` for a frame ``V`` of shape ``x.shape + (k,)`` or ``x.shape``.

    Raises
    ------
    TypeError
        Inside a traced function or on ``newtonad.Var`` values (use :func:`jvp`), or
        when ``x`` is not a float array.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> y, lin = nad.linearize(lambda x: x ** 2, np.array([1.0, 2.0]))
    >>> y, lin(np.array([1.0, 1.0]))
    (array([1., 4.]), array([2., 4.]))
    """
    x, args, traced = _prepare(f, x, tuple(args), scalar=False)
    if inlines(traced, x, args):
        raise TypeError("linearize is for concrete points and functions of them; inside a "
                        "traced function (or on newtonad.Var values) use jvp")
    x = x.copy()  # lin reads x later: the caller may change its array meanwhile
    eng = _engine(engine)
    n_out = len(traced.program.outputs)
    for _ in range(PATH_RETRIES):
        try:
            return _linearized(traced, x, args, eng, n_out)
        except GuardFailed:  # f branches another way at x than on the path traced first
            traced = path_at(traced, x, args)
    raise RuntimeError(NO_PATH_MESSAGE)


def _linearized(traced: Traced, x: np.ndarray, args: tuple, eng: str,
                n_out: int) -> tuple[Any, Callable[[Any], Any]]:
    """linearize on one path of f (its runners raise GuardFailed where it does not hold)."""
    known = (x, *args, *traced.closed_values())
    residuals: dict[int | None, tuple] = {}

    def programs(k):
        return derive(traced, "linearize", k,
                      lambda program: tf.linearize_program(program, k), eng)

    primal, _ = programs(None)
    outs = primal(*known)
    residuals[None] = outs[n_out:]

    def lin(V):
        V, k = as_frame(V, tuple(x.shape))
        prim_k, linear_k = programs(k)
        if k not in residuals:
            residuals[k] = prim_k(*known)[n_out:]  # the same path: x is the same point
        (t,) = linear_k(*known, *residuals[k], V)
        return t

    return outs[0], lin


def jacobian(f: Callable, *, engine: str | None = None, sparse: bool = False) -> Callable:
    """Return ``J(x, *args)`` of shape ``y.shape + x.shape``.

    Forward frames of identity columns when ``x`` is smaller than ``y``, reverse frames
    otherwise; columns go in chunks so memory stays bounded.

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` returning an array.
    engine : str, optional
        The engine that runs the derived program: ``"numba"``, ``"numpy"`` or ``"auto"``
        (default: ``newtonad.settings.engine``, from ``NEWTONAD_ENGINE``).
    sparse : bool
        Return a ``scipy.sparse.csr_array`` of shape ``(y.size, x.size)`` recovered from
        one coloured jvp frame or one vjp frame, whichever is narrower (see
        :func:`jacobian_sparsity`).

    Returns
    -------
    callable
        ``(x, *args) -> ndarray`` of shape ``y.shape + x.shape``; it raises as
        :func:`jvp` does.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> nad.jacobian(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    if sparse:
        return sparse_jacobian(f, functools.partial(_engine, engine))

    def jac(x, *args):
        x_ = as_point(x)
        if is_traced_call(x_, args):
            return _jacobian_traced(f, x_, args)
        g, args = bind_static(f, args)
        args_ = tuple(as_data(a) for a in args)
        traced = traced_at(g, x_, args_, scalar=False)
        if traced.from_outer:
            return _jacobian_traced(g, x_, args_)
        y_shape = traced.program.out_slots[0].shape
        n, m = x_.size, int(np.prod(y_shape, dtype=np.int64))
        check_dense(m, n, "nad.jacobian", _JACOBIAN_INSTEAD)
        out = np.empty((m, n))
        if n <= m:
            for a, b in frame_chunks(n, max(n, m)):
                E = identity_columns(n, a, b)
                _, t = jvp(g, x_, E.reshape(x_.shape + (b - a,)), args_, engine=engine)
                out[:, a:b] = t.reshape(m, b - a)
        else:
            for a, b in frame_chunks(m, max(n, m)):
                E = identity_columns(m, a, b)
                _, ct = vjp(g, x_, E.reshape(y_shape + (b - a,)), args_, engine=engine)
                out[a:b, :] = ct.reshape(n, b - a).T
        return out.reshape(y_shape + x_.shape)

    return jac


_JACOBIAN_INSTEAD = ("Use nad.jacobian(g, sparse=True) for a sparse Jacobian, or products with "
                     "it: nad.jvp(g, x, V) (J V) and nad.vjp(g, x, W) (J^T W).")


def _jacobian_traced(f, x, args):
    """Jacobian inside a trace: one forward frame of identity columns."""
    n = int(np.prod(x.shape, dtype=np.int64))
    eye = np.eye(n).reshape(tuple(x.shape) + (n,))
    _, t = jvp(f, x, const_var(eye), args)
    y_shape = tuple(t.shape[:-1])
    return npa.reshape(t, y_shape + tuple(x.shape))


def hessian(f: Callable, *, engine: str | None = None, sparse: bool = False) -> Callable:
    """Return ``H(x, *args)`` of shape ``x.shape + x.shape``.

    Forward-over-reverse with identity frames, in chunks so memory stays bounded.

    Parameters
    ----------
    f : callable
        A scalar function ``f(x, *args)``.
    engine : str, optional
        The engine that runs the derived program: ``"numba"``, ``"numpy"`` or ``"auto"``
        (default: ``newtonad.settings.engine``, from ``NEWTONAD_ENGINE``).
    sparse : bool
        Return a ``scipy.sparse.csr_array`` of shape ``(x.size, x.size)`` recovered from
        one HVP frame of a star colouring of :func:`hessian_sparsity`'s pattern.

    Returns
    -------
    callable
        ``(x, *args) -> ndarray`` of shape ``x.shape + x.shape``; it raises as
        :func:`hvp` does.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> nad.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    if sparse:
        return sparse_hessian(f, functools.partial(_engine, engine))

    def hess(x, *args):
        x_ = as_point(x)
        if is_traced_call(x_, args):
            return _jacobian_traced(grad(f), x_, args)
        g, args = bind_static(f, args)
        if traced_at(g, x_, tuple(as_data(a) for a in args), scalar=True).from_outer:
            return _jacobian_traced(grad(g), x_, args)
        n = x_.size
        check_dense(n, n, "nad.hessian", HESSIAN_INSTEAD)
        out = dense_hessian(lambda frame: hvp(g, x_, frame, args, engine=engine), x_.shape,
                            block_elements=FRAME_BUDGET)
        return out.reshape(x_.shape + x_.shape)

    return hess


__all__ = ["trace", "value_and_grad", "grad", "jvp", "vjp", "hvp", "linearize", "jacobian",
           "hessian", "hessian_sparsity", "jacobian_sparsity"]
