"""Sparse derivatives: Hessian and Jacobian patterns, and the matrices recovered from
one coloured frame.

:func:`hessian_sparsity` and :func:`jacobian_sparsity` are public (re-exported by
:mod:`newtonad.api` and :mod:`newtonad`); ``hessian(f, sparse=True)`` and
``jacobian(f, sparse=True)`` call :func:`sparse_hessian` and :func:`sparse_jacobian`.
They work on arrays only (inside a trace the dense forms apply). scipy and
:mod:`newtonad.sparse` (colourings, recovery) are imported on first call, so
``import newtonad`` stays light.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ._programs import as_data, as_point, is_traced_call, run_derived, traced_at, traced_here
from ._static_args import bind_static
from .ad import transforms as tf

# ---- tracing for a sparse derivative ---------------------------------------------------------

def _traced_plain(f: Callable, x: Any, args: Sequence[Any], scalar: bool, what: str):
    """Trace ``f`` for a sparse derivative, which works on arrays, not inside a trace."""
    x_ = as_point(x)
    f, args = bind_static(f, tuple(args))  # Python scalars and strings: static
    args_ = tuple(as_data(a) for a in args)
    if is_traced_call(x_, args_):
        raise TypeError(f"{what} works on arrays, not inside a trace or on Vars; "
                        f"use the dense form there")
    traced = traced_here(f, x_, args_, scalar)  # the path of f's branches that holds at x
    if traced.from_outer:
        raise TypeError(f"{what}: f closes over values of an enclosing trace; "
                        f"use the dense form there")
    return x_, args_, traced


def _scalar_program(f: Callable, x: Any, args: Sequence[Any], what: str):
    # Traced as the dense hessian / hvp trace it: a tuple or list is refused as not
    # scalar (not stacked into an array), one entry in an array counts as a scalar.
    try:
        return _traced_plain(f, x, args, scalar=True, what=what)
    except ValueError:
        shape = _array_output_shape(f, x, args)
        if shape is None or shape == ():  # f's own error, or the tracer's
            raise
        instead = ("jacobian_sparsity(f)" if what == "hessian_sparsity"
                   else "jacobian(f, sparse=True)")
        name = getattr(f, "__name__", type(f).__name__)
        raise ValueError(f"{what} needs a function with one scalar output, but {name} "
                         f"returned an array of shape {shape}; reduce it to a scalar (e.g. "
                         f"np.sum), or use {instead} for the derivatives of a "
                         f"vector-valued function") from None


def _array_output_shape(f: Callable, x: Any, args: Sequence[Any]) -> tuple | None:
    """The shape of ``f``'s one array output, or None if it has none (error path only)."""
    try:
        f, args = bind_static(f, tuple(args))
        traced = traced_at(f, as_point(x), tuple(as_data(a) for a in args), scalar=False)
    except (TypeError, ValueError):
        return None
    return tuple(traced.program.out_slots[0].shape)


def _array_program(f: Callable, x: Any, args: Sequence[Any], what: str):
    x_, args_, traced = _traced_plain(f, x, args, scalar=False, what=what)
    if len(traced.program.outputs) != 1:
        raise ValueError(f"{what} needs a function returning one array, got "
                         f"{len(traced.program.outputs)} outputs; return np.concatenate "
                         f"of them or take the Jacobian of each")
    return x_, args_, traced


# ---- patterns -------------------------------------------------------------------------------

def hessian_sparsity(f: Callable) -> Callable:
    """Return ``P(x, *args)``: the structural non-zeros of the Hessian of a scalar ``f``.

    The pattern is the Jacobian pattern of the gradient program, found by propagating
    dependence patterns through its primitives (:mod:`newtonad.ad.sparsity`). It is
    conservative (an entry left out is zero at every point) and depends on the program
    only, so it is cached with it.

    Parameters
    ----------
    f : callable
        A scalar function ``f(x, *args)``.

    Returns
    -------
    callable
        ``(x, *args) -> scipy.sparse.csr_array`` of bool, shape ``(x.size, x.size)``.

    Raises
    ------
    ValueError
        When ``f`` does not return a scalar.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> f = lambda x: np.sum((x[1:] - x[:-1] ** 2) ** 2)
    >>> nad.hessian_sparsity(f)(np.ones(4)).toarray().astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]])
    """
    from .ad.sparsity import hessian_pattern

    def pattern(x, *args):
        _, _, traced = _scalar_program(f, x, args, "hessian_sparsity")
        return hessian_pattern(traced.program).copy()

    return pattern


def jacobian_sparsity(f: Callable, *, max_nnz: int | None = None) -> Callable:
    """Return ``P(x, *args)``: the structural non-zeros of the Jacobian of ``f``.

    Parameters
    ----------
    f : callable
        ``f(x, *args)`` returning an array ``y``.
    max_nnz : int, optional
        Raise :class:`~newtonad.ad.sparsity.PatternTooDense` as soon as the pattern
        would have more non-zeros than this (for callers that only want a sparse one:
        propagating a dense pattern is costly).

    Returns
    -------
    callable
        ``(x, *args) -> scipy.sparse.csr_array`` of bool, shape ``(y.size, x.size)``;
        rows and columns in C order.

    Raises
    ------
    ValueError
        When ``f`` returns more than one array.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> nad.jacobian_sparsity(lambda x: x[1:] * x[:-1])(np.ones(3)).toarray().astype(int)
    array([[1, 1, 0],
           [0, 1, 1]])
    """
    from .ad.sparsity import jacobian_patterns

    def pattern(x, *args):
        _, _, traced = _array_program(f, x, args, "jacobian_sparsity")
        return jacobian_patterns(traced.program, 0, max_nnz)[0].copy()

    return pattern


# ---- sparse Hessians and Jacobians -------------------------------------------------------------

def sparse_hessian(f: Callable, engine: Callable[[], str]) -> Callable:
    """``hessian(f, sparse=True)``: ``engine()`` names the engine at each call."""
    from .sparse.hessian import hessian_plan

    def hess(x, *args):
        x_, args_, traced = _scalar_program(f, x, args, "hessian(f, sparse=True)")
        # pattern, colouring, seed and recovery plan: once per program
        plan = hessian_plan(traced.program, traced.derived)
        k = plan.width
        if k == 0:
            return plan.recover(np.zeros((x_.size, 0)))
        # the HVP frame's runner directly: x and args were checked just above
        seed = plan.seed.reshape(x_.shape + (k,))
        (compressed,) = run_derived(traced, "hvp", k, lambda: tf.hvp_program(traced.program, k),
                             engine(), x_, args_, [seed])
        return plan.recover(compressed)

    return hess


def sparse_jacobian(f: Callable, engine: Callable[[], str]) -> Callable:
    """``jacobian(f, sparse=True)``: ``engine()`` names the engine at each call."""
    from .ad.sparsity import jacobian_pattern
    from .sparse import (
        assemble,
        column_colouring,
        column_plan,
        row_colouring,
        row_plan,
        seed_matrix,
    )

    def jac(x, *args):
        x_, args_, traced = _array_program(f, x, args, "jacobian(f, sparse=True)")
        key = ("sparse-jacobian", None, None)
        if key not in traced.derived:
            pattern = jacobian_pattern(traced.program)
            columns, rows = column_colouring(pattern), row_colouring(pattern)
            if columns.max(initial=-1) <= rows.max(initial=-1):  # the narrower frame
                choice = ("columns", seed_matrix(columns), column_plan(pattern, columns))
            else:
                choice = ("rows", seed_matrix(rows), row_plan(pattern, rows))
            traced.derived[key] = (pattern, *choice)
        pattern, side, seed, plan = traced.derived[key]
        k = seed.shape[1]
        if k == 0:
            return assemble(pattern, plan, np.zeros((0,)))
        # the frame's runner directly: x and args were checked just above
        if side == "columns":
            frame = seed.reshape(x_.shape + (k,))
            _, compressed = run_derived(traced, "jvp", k,
                                        lambda: tf.jvp_program(traced.program, k),
                                        engine(), x_, args_, [frame])
        else:
            frame = seed.reshape(traced.program.out_slots[0].shape + (k,))
            _, compressed = run_derived(traced, "vjp", k,
                                        lambda: tf.vjp_program(traced.program, k),
                                        engine(), x_, args_, [frame])
        return assemble(pattern, plan, compressed)

    return jac


__all__ = ["hessian_sparsity", "jacobian_sparsity", "sparse_hessian", "sparse_jacobian"]
