"""Special functions on traced arrays: ``scipy.special``, ``scipy.stats`` and the
elementwise NumPy functions that are compositions of primitives.

Registered in :data:`UFUNCS` (by ufunc name, for ``__array_ufunc__``) and
:data:`FUNCTIONS` (by function object), merged by :mod:`newtonad.ad.var_ops`.
"""

from __future__ import annotations

from typing import Any

UFUNCS: dict[str, Any] = {}
FUNCTIONS: dict[Any, Any] = {}
