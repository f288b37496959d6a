"""Linear algebra on traced arrays: ``np.linalg``, ``scipy.linalg`` and matrix helpers.

Registered in :data:`FUNCTIONS` (keyed by the NumPy / SciPy function object), merged
into Var's ``__array_function__`` table by :mod:`newtonad.ad.var_ops`.
"""

from __future__ import annotations

from typing import Any

FUNCTIONS: dict[Any, Any] = {}
