"""Shared by the ``newtonad.scipy`` submodules: SciPy's routed functions by name."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..ad import scipy_dispatch


def routed_exports(module: ModuleType) -> dict[str, Any]:
    """The routed functions and distributions of SciPy's ``module``, wrapped, by name."""
    scipy_dispatch.install_pending()
    names = {path.split(".")[0] for path in scipy_dispatch.routed().get(module.__name__, {})}
    return {name: getattr(module, name) for name in sorted(names) if hasattr(module, name)}
