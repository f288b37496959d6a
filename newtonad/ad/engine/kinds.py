"""What the numba engine knows about each primitive, keyed by the primitive object.

Fused into loop nests: elementwise primitives (one scalar expression each, see
:mod:`.numba_ops`), index-only ones (broadcasts, slices, transposes, reshapes) and
reductions (each one's :class:`~..primitives.reductions.Reduction` record); run as one
step on whole arrays (*opaque*, the keys of :data:`.opaque_lowering.LOWERINGS`):
contractions, gathers, scatters, cumulative sums, concatenations and sparse (CSR)
matrix products. Rotations (``roll``) are written as two shifted copies before planning
(:mod:`.rolls`). A primitive in none of these tables is not lowered (the engine runs its
program on the NumPy evaluator).
"""

from __future__ import annotations

from collections.abc import Iterator, Set
from typing import Any

from ..primitives import REGISTRY
from ..primitives.reductions import REDUCTIONS
from .opaque_lowering import LOWERINGS

P = REGISTRY  # name -> primitive object (importing the package registers every family)

ADD, MUL, CONVERT = P["add"], P["mul"], P["convert"]
CONST, RESHAPE, UNSLICE, ROLL = P["const"], P["reshape"], P["unslice"], P["roll"]
BROADCAST_TO, SLICE, TRANSPOSE = P["broadcast_to"], P["slice"], P["transpose"]
REDUCE_SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN = (P["reduce_sum"], P["reduce_prod"],
                                                   P["reduce_max"], P["reduce_min"])
EINSUM = P["einsum"]

#: Fused as one scalar expression each (:data:`.numba_ops.EXPRESSIONS`): every primitive
#: of kind ``elementwise`` that has a compiled lowering.
ELEMENTWISE = frozenset(p for p in P.values() if p.kind == "elementwise" and not p.numpy_only)
INDEXING = frozenset({BROADCAST_TO, SLICE, TRANSPOSE})
#: Run as one step on whole arrays: the primitives with an opaque lowering.
OPAQUE = frozenset(LOWERINGS)


class _Supported(Set):
    """The primitives this engine lowers: a live view, reading :data:`REDUCTIONS` when
    asked, so a reduction registered later is lowered too."""

    _fixed = ELEMENTWISE | INDEXING | OPAQUE | {CONST, RESHAPE, UNSLICE, ROLL}

    def __contains__(self, primitive: Any) -> bool:
        return primitive in self._fixed or primitive in REDUCTIONS

    def __iter__(self) -> Iterator[Any]:
        yield from self._fixed
        yield from (p for p in REDUCTIONS if p not in self._fixed)

    def __len__(self) -> int:
        return sum(1 for _ in self)


SUPPORTED = _Supported()

__all__ = ["ELEMENTWISE", "INDEXING", "REDUCTIONS", "OPAQUE", "SUPPORTED"]
