"""Eager backward on the expression graph: one Op's pull-back, derived, not hand-written.

``newtonad.Var(value)`` values compute as they go; ``f.backward()`` (on the class
:class:`~newtonad.ad.var.Var`) walks the graph in reverse and asks each Op for the
cotangents of its arguments. This module answers that question: the vjp of the Op's
one-step program (:func:`~newtonad.ad.transforms.vjp_program`), run on the NumPy
reference evaluator and cached per primitive, params and argument shapes. It sits above
the transforms it uses and registers itself in :mod:`.dispatch` as ``op_backward``, so
``Var`` (far below) needs no import of it.
"""

from __future__ import annotations

import functools

import numpy as np

from .dispatch import implements_method
from .engine.numpy_eval import compile_program
from .primitives.core import Primitive
from .program import Slot
from .trace import to_program
from .transforms import vjp_program
from .var import Op, Var, bind, is_float, new_tracer


@functools.lru_cache(maxsize=1024)
def _op_pullback(primitive: Primitive, params: tuple, avals: tuple[Slot, ...],
                 wrt: tuple[int, ...]):
    xs = [new_tracer(a) for a in avals]
    program, _ = to_program(xs, [bind(primitive, *xs, **dict(params))])
    return compile_program(vjp_program(program, None, wrt))


@implements_method("op_backward")
def op_vjp(op: Op, out_ct: np.ndarray) -> list[np.ndarray | None]:
    """Cotangents of an eager Op's arguments, from the vjp of its one-step program."""
    wrt = tuple(i for i, a in enumerate(op.args) if not a.const and is_float(a.aval))
    if not wrt:
        return [None] * len(op.args)
    params = tuple(sorted(op.params.items()))
    run = _op_pullback(op.primitive, params, tuple(a.aval for a in op.args), wrt)
    results = run(*[np.asarray(a.value) for a in op.args], np.asarray(out_ct))
    cts: list[np.ndarray | None] = [None] * len(op.args)
    for i, ct in zip(wrt, results[1:]):
        cts[i] = ct
    return cts


__all__ = ["Var", "op_vjp"]
