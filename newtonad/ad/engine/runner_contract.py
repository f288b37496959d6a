"""What every runner of a compiled engine checks: its inputs and its ``out=`` arrays.

Shared by the numba engine's runners and the ``auto`` engine's NumPy tier, so a call
is accepted, converted or refused the same way whichever tier runs it. Imports only
NumPy (the ``auto`` engine's first calls must not pay for numba's modules).
"""

from __future__ import annotations

from typing import Any

import numpy as np

Spec = tuple[tuple[int, ...], np.dtype]


def coerce_input(a: Any, shape: tuple[int, ...], dtype: np.dtype, what: str) -> np.ndarray:
    """``a`` as a C-contiguous array of ``shape`` and ``dtype``.

    Raises
    ------
    ValueError
        When ``a`` has another shape (a program is traced for one shape).
    TypeError
        When ``a``'s dtype cannot be cast to ``dtype`` within its kind.
    """
    arr = np.asarray(a)
    if arr.shape != shape:
        raise ValueError(f"{what} has shape {arr.shape}, but this compiled program takes shape "
                         f"{shape}; call the API again to trace it at the new shape")
    if arr.dtype != dtype and not np.can_cast(arr.dtype, dtype, casting="same_kind"):
        raise TypeError(f"{what} has dtype {arr.dtype}, but this compiled program takes {dtype}")
    return np.asarray(arr, dtype=dtype, order="C")


def check_outputs(out: Any, specs: tuple[Spec, ...]) -> tuple:
    """``out=`` as a tuple of arrays matching ``specs`` (shape, dtype) one to one.

    Raises
    ------
    ValueError
        When the count differs, or an array is not writeable, C-contiguous and of its
        output's shape and dtype.
    """
    out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if len(out) != len(specs):
        raise ValueError(f"out= needs {len(specs)} arrays, got {len(out)}")
    for j, (a, (shape, dtype)) in enumerate(zip(out, specs)):
        if not (isinstance(a, np.ndarray) and a.shape == shape and a.dtype == dtype
                and a.flags.c_contiguous and a.flags.writeable):
            raise ValueError(f"out[{j}] must be a writeable C-contiguous {dtype} array "
                             f"of shape {shape}")
    return out


__all__ = ["check_outputs", "coerce_input"]
