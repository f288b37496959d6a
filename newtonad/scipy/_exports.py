"""Shared by the ``newtonad.scipy`` submodules: SciPy's routed functions by name."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..ad import scipy_dispatch


def routed_exports(module: ModuleType) -> dict[str, Any]:
    """The routed functions (newtonad's wrappers, which trace whether or not
    ``newtonad.scipy_routing`` is on) and distributions of SciPy's ``module``, by name."""
    return scipy_dispatch.traced_exports(module)
