"""A traced array as a NumPy object array of its scalar entries.

``np.array([x[0], x[1]])`` and NumPy functions that do not dispatch to newtonad ask a
traced array for a NumPy array (``Var.__array__``); newtonad answers with an object
array of scalar Vars, which the first primitive it reaches folds back into one traced
array (:func:`newtonad.ad.numpy_api.fold_objects`). This module imports nothing of
newtonad: it needs only the array's shape, size and indexing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Entries beyond which a traced array is not split into an object array of scalars.
MAX_OBJECT_ENTRIES = 4096


def as_objects(var: Any) -> np.ndarray:
    """``var`` as an object array of scalar Vars (of itself, when it is a scalar)."""
    out = np.empty(var.shape, dtype=object)
    if var.shape == ():
        out[()] = var
        return out
    if var.size > MAX_OBJECT_ENTRIES:
        raise TypeError(
            f"NumPy asked for a traced array of {var.size} entries as a NumPy array (np.array "
            "or np.asarray of a list holding it, or a NumPy function that does not dispatch to "
            "newtonad); build arrays from traced parts with np.stack or np.concatenate")
    for index in np.ndindex(var.shape):
        out[index] = var[index]
    return out


__all__ = ["MAX_OBJECT_ENTRIES", "as_objects"]
