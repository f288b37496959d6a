"""What the numba engine knows about each primitive, keyed by the primitive object.

Fused into loop nests: elementwise primitives (one scalar expression each, see
:mod:`.numba_ops`), index-only ones (broadcasts, slices, transposes, reshapes) and
reductions; run as one step on whole arrays (*opaque*): contractions, gathers,
scatters, cumulative sums, concatenations and sparse (CSR) matrix products. A primitive
in none of these tables is not lowered (the engine runs its program on the NumPy
evaluator).
"""

from __future__ import annotations

from ..primitives import REGISTRY

P = REGISTRY  # name -> primitive object (importing the package registers every family)

ADD, MUL, CONVERT = P["add"], P["mul"], P["convert"]
CONST, RESHAPE, UNSLICE = P["const"], P["reshape"], P["unslice"]
BROADCAST_TO, SLICE, TRANSPOSE = P["broadcast_to"], P["slice"], P["transpose"]
REDUCE_SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN = (P["reduce_sum"], P["reduce_prod"],
                                                   P["reduce_max"], P["reduce_min"])
EINSUM, GATHER, SCATTER_ADD, CUMSUM, CONCATENATE = (P["einsum"], P["gather"], P["scatter_add"],
                                                    P["cumsum"], P["concatenate"])
SPARSE_MATMUL = P["sparse_matmul"]

#: Fused as one scalar expression each (:data:`.numba_ops.EXPRESSIONS`): every primitive
#: of kind ``elementwise`` that has a compiled lowering.
ELEMENTWISE = frozenset(p for p in P.values() if p.kind == "elementwise" and not p.numpy_only)
INDEXING = frozenset({BROADCAST_TO, SLICE, TRANSPOSE})
REDUCTIONS = frozenset({REDUCE_SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD})
#: Reductions numba combines across the threads of a parallel loop.
THREAD_REDUCTIONS = frozenset({REDUCE_SUM, REDUCE_PROD})
OPAQUE = frozenset({EINSUM, GATHER, SCATTER_ADD, CUMSUM, CONCATENATE, SPARSE_MATMUL})
SUPPORTED = ELEMENTWISE | INDEXING | REDUCTIONS | OPAQUE | {CONST, RESHAPE, UNSLICE}

__all__ = ["ELEMENTWISE", "INDEXING", "REDUCTIONS", "THREAD_REDUCTIONS", "OPAQUE", "SUPPORTED"]
