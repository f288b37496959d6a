"""Primitives, one module per family; importing this package registers them all."""

from . import core, elementwise, linalg, reductions, structural  # noqa: F401
from . import special  # noqa: F401
from . import sorting  # noqa: F401
from . import decompositions  # noqa: F401
from .core import REGISTRY, Primitive, UndefPrimal, const_p

__all__ = ["REGISTRY", "Primitive", "UndefPrimal", "const_p"]
