"""Primitives, one module per family, each primitive with all its rules in one place.

The families depend on each other one way: :mod:`.core` (the Primitive object, ``const``)
← :mod:`.structural` (shapes, broadcasting and its transpose ``reduce_sum``, frames) ←
:mod:`.elementwise` ← :mod:`.reductions`, :mod:`.linalg`, :mod:`.special`,
:mod:`.sorting`, :mod:`.sparse_matmul` ← :mod:`.decompositions`. :data:`REGISTRY` maps
each name to its primitive (programs are pickled by primitive name).
"""

from . import (
    core,
    decompositions,
    elementwise,
    linalg,
    reductions,
    sorting,
    sparse_matmul,
    special,
    structural,
)
from .core import REGISTRY, Primitive, UndefPrimal, const_p

__all__ = ["REGISTRY", "Primitive", "UndefPrimal", "const_p", "core", "decompositions",
           "elementwise", "linalg", "reductions", "sorting", "sparse_matmul", "special",
           "structural"]
