"""The Primitive object, everything a primitive knows, and the rules every family shares.

Rules are data (JAX's autodidax): a primitive is a small named object, and each of
its rules is one short entry next to it, in its family's module:

* ``shape``: abstract evaluation, ``Slot``s in, the output ``Slot`` out;
* ``impl``: the NumPy reference evaluation;
* ``jvp``: ``(frame, primals, tangents, out, **params) -> tangent of out``. Tangents are
  *frames*: a tangent at a slot of shape ``s`` with ``k`` directions has shape
  ``s + (k,)``. A transform may also run without a frame axis (one direction, tangent
  shape ``s``), as gradients do. The rule is told which by its first argument, a
  :class:`Frame` (as JAX's batching rules are told their batch dims), and lines primals
  up with tangents with ``structural.lift(frame, x)``. A missing tangent is ``None`` (a
  symbolic zero), and a rule may return ``None``. Rules are written with the ops of
  this package, so the derived program can itself be differentiated again;
* ``transpose`` (linear primitives only): ``(ct, *args, **params) -> cotangent per
  argument``. Linear arguments arrive as :class:`UndefPrimal`; the others are the
  known values (residuals). ``None`` means a zero cotangent. ``linear_in`` names the
  arguments that may be linear.

What the transforms and the engine need to know besides the rules is on the primitive
too, so nothing recognises a primitive by its name:

* ``kind``: one of :data:`KINDS` -- how an engine may loop over it;
* ``weight``: what recomputing one output element costs in a fused loop, in bytes of a
  load stream (``None``: not recomputable; see :mod:`newtonad.ad.remat`);
* ``algebra``: the :class:`Algebra` facts simplification and partial evaluation use;
* ``numpy_only``: no compiled lowering by design (the NumPy evaluator runs it);
* ``sparsity``: ``(in_avals, out_aval, consts, **params) -> local map per operand``,
  for :mod:`newtonad.ad.sparsity`; ``None``: the generic rule of the primitive's kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..program import ArrayConst, Slot, dtype_name
from ..var import Var, bind

REGISTRY: dict[str, "Primitive"] = {}

#: What a primitive does to its operands' elements, as an engine sees it.
KINDS = {
    "const": "no inputs: a value baked into the program",
    "elementwise": "each output element from the operands' elements at its (broadcast) index",
    "structural": "moves or copies elements: reshape, transpose, broadcast, slices, concatenation",
    "reduction": "sums (or max, min, product) over static axes",
    "contraction": "einsum: products summed over shared indices",
    "gather": "indexes along an axis with an integer array (gather and its transpose)",
    "scan": "a running recurrence along an axis (cumsum, linear_scan)",
    "positions": "integer positions computed from values (argsort, argmax, ...)",
    "matrix": "a factorisation or solve of stacks of matrices (LAPACK)",
}


@dataclass(frozen=True)
class Algebra:
    """Algebraic facts about a primitive, for simplification and partial evaluation.

    Attributes
    ----------
    left_identity, right_identity : float or None
        ``op(e, b) == b`` / ``op(a, e) == a`` for the constant ``e`` (``mul``: 1, 1).
    involution : bool
        ``op(op(a)) == a`` (``neg``).
    collapses : bool
        ``op(op(a, p), q) == op(a, q)``: the outer params win, and ``op(a, q) == a``
        when ``a`` already has the output's shape (``reshape``).
    noop_same_dtype : bool
        ``op(a) == a`` when ``a`` already has the output's dtype (``convert``).
    scalar_operands : bool
        A binary operation that broadcasts: an operand that is one constant broadcast
        to a shape may be replaced by that scalar.
    transparent : bool
        The output of a uniform operand (one value everywhere) is that uniform value:
        simplification looks through the step for a constant (``broadcast_to``).
    scaling : callable or None
        ``scaling(unknown, args) -> (i, factor)`` when ``op(*args) == args[i] * factor``
        with ``args[i]`` the one unknown operand and ``factor`` known (a value, or a
        Python number); ``None`` when the step is not such a scaling. ``unknown`` flags
        which operands depend on the unknown inputs of partial evaluation.
    """

    left_identity: float | None = None
    right_identity: float | None = None
    involution: bool = False
    collapses: bool = False
    noop_same_dtype: bool = False
    scalar_operands: bool = False
    transparent: bool = False
    scaling: Callable[[Sequence[bool], Sequence[Any]], tuple[int, Any] | None] | None = None


NO_ALGEBRA = Algebra()

Weight = int | Callable[[Sequence[Slot], Slot], int | None] | None


class Primitive:
    """A named operation with its rules and properties (see the module docstring)."""

    def __init__(self, name: str, *, impl: Callable, shape: Callable,
                 jvp: Callable | None = None, transpose: Callable | None = None,
                 linear_in: tuple[int, ...] | None = None, kind: str = "elementwise",
                 weight: Weight = None, algebra: Algebra = NO_ALGEBRA,
                 numpy_only: bool = False, sparsity: Callable | None = None):
        if name in REGISTRY:
            raise ValueError(f"primitive {name!r} is defined twice")
        if kind not in KINDS:
            raise ValueError(f"primitive {name!r}: kind {kind!r} is not one of {sorted(KINDS)}")
        self.name = name
        self.impl = impl
        self.shape_rule = shape
        self.jvp = jvp
        self.transpose = transpose
        #: Arguments that may be linear (UndefPrimal) in the transpose rule; "all" for
        #: a variadic primitive linear in every operand (concatenate).
        self.linear_in = linear_in if linear_in is not None else ((0,) if transpose else ())
        self.kind = kind
        self.weight = weight
        self.algebra = algebra
        # No numba lowering by design (matrix factorisations, special functions numba
        # lacks): a program using it runs on the NumPy evaluator, without a warning.
        self.numpy_only = numpy_only
        # Which operand entries each output entry may depend on (newtonad.ad.sparsity).
        self.sparsity = sparsity
        REGISTRY[name] = self

    @property
    def linear(self) -> bool:
        return self.transpose is not None

    def abstract_eval(self, *avals: Slot, **params: Any) -> Slot:
        return self.shape_rule(*avals, **params)

    def recompute_weight(self, in_avals: Sequence[Slot], out_aval: Slot) -> int | None:
        """Cost per output element of recomputing this step in a fused loop; ``None``
        when it cannot be recomputed there (a barrier for rematerialisation)."""
        if callable(self.weight):
            return self.weight(in_avals, out_aval)
        return self.weight

    def __call__(self, *args: Any, **params: Any) -> Any:
        return bind(self, *args, **params)

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self):  # pickle by name: programs can be sent to other processes
        return (primitive_named, (self.name,))


def primitive_named(name: str) -> Primitive:
    """The primitive called ``name`` (how a pickled program finds its primitives).

    A module-level function, so that pickle stores a reference to it; the registry's
    own ``__getitem__`` would pickle the registry with every primitive in it.
    """
    return REGISTRY[name]


class UndefPrimal:
    """Marks a linear argument of a transpose rule (autodidax's ``UndefPrimal``)."""

    __slots__ = ("aval",)

    def __init__(self, aval: Slot):
        self.aval = aval

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    def __repr__(self) -> str:
        return f"UndefPrimal({self.aval})"


def is_undef(x: Any) -> bool:
    return isinstance(x, UndefPrimal)


def aval_of(x: Any) -> Slot:
    """The abstract value of a Var, UndefPrimal or array-like."""
    if isinstance(x, (Var, UndefPrimal)):
        return x.aval
    a = np.asarray(x)
    return Slot(tuple(a.shape), dtype_name(a.dtype))


def shape_of(x: Any) -> tuple[int, ...]:
    return aval_of(x).shape


# ---- frame layout: the argument every jvp rule receives first -------------------------------

@dataclass(frozen=True)
class Frame:
    """How the jvp transform running a rule lays its tangents out.

    ``k`` directions as a trailing column axis (a tangent at shape ``s`` has shape
    ``s + (k,)``), or ``k=None``: one direction without a frame axis (shape ``s``).
    """

    k: int | None

    @property
    def framed(self) -> bool:
        """Do tangents carry a trailing frame axis?"""
        return self.k is not None

    @property
    def cols(self) -> tuple[int, ...]:
        """The frame's trailing axis, ``(k,)``, or ``()`` for a single tangent."""
        return () if self.k is None else (self.k,)


# ---- const -------------------------------------------------------------------------

def _const_impl(*, value: Any, dtype: str) -> np.ndarray:
    if isinstance(value, ArrayConst):
        return value.array
    return np.asarray(value, dtype=dtype)


def _const_shape(*, value: Any, dtype: str) -> Slot:
    shape = value.array.shape if isinstance(value, ArrayConst) else ()
    return Slot(tuple(shape), dtype)


const_p = Primitive("const", impl=_const_impl, shape=_const_shape, kind="const")
