"""Buffer plan for the numba engine: intermediates packed into one arena per dtype.

Each intermediate array lives at an offset of a flat arena (one per dtype) that the
runner allocates once and passes to every call, so nothing is allocated per call and
the generated kernel only carves views. Two intermediates share memory when their
live ranges (first writing item to last reading item) do not overlap: first-fit
placement in order of first use.

In a row-blocked region (see :mod:`.numba_plan`) every slot the region touches is
live over the whole region, intermediates that exist only inside it take one block
of rows, and the temporary of an einsum summed over blocks is a buffer of its own
(a negative ``slot``, ``-1 - output``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ALIGN = 8  # elements: 64-byte alignment for float64 and int64 buffers
ALIGN_BYTES = 64  # a cache line


def aligned_array(shape: tuple[int, ...], dtype: np.dtype | str, zero: bool = False) -> np.ndarray:
    """A C-contiguous array whose data starts on a cache-line (64-byte) boundary.

    NumPy aligns data to 16 bytes only, and a large block from glibc sits 16 bytes past
    a page boundary, so a frame's rows start 16 bytes off a cache line: every vector
    load and store of the innermost loop then spans two lines (measured 1.4-1.6x slower
    at k = 64 on this machine, hand kernels included).

    Parameters
    ----------
    shape : tuple of int
        Shape of the array.
    dtype : numpy dtype or str
        Its element type.
    zero : bool, optional
        Fill with zeros the lazy way (``np.zeros``: pages are touched by their first
        use, not here); otherwise the contents are undefined, as with ``np.empty``.

    Returns
    -------
    ndarray
        A writeable C-contiguous view into a slightly larger private buffer.
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize  # math.prod: np.prod costs 3 µs a call
    raw = (np.zeros if zero else np.empty)(nbytes + ALIGN_BYTES, np.uint8)
    start = -raw.ctypes.data % ALIGN_BYTES
    return raw[start:start + nbytes].view(dtype).reshape(shape)


@dataclass(frozen=True)
class Buffer:
    """One intermediate: ``size`` elements of ``dtype`` live over items ``[first, last]``."""

    slot: int
    dtype: str
    size: int
    first: int
    last: int


def _round_up(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def place(buffers: list[Buffer]) -> tuple[dict[int, int], dict[str, int]]:
    """Assign arena offsets.

    Parameters
    ----------
    buffers : list of Buffer
        The intermediates with their live ranges.

    Returns
    -------
    offsets : dict
        Slot number to offset (in elements) in its dtype's arena.
    sizes : dict
        Arena length per dtype name.
    """
    offsets: dict[int, int] = {}
    sizes: dict[str, int] = {}
    placed: dict[str, list[tuple[int, int, Buffer]]] = {}
    for buf in sorted(buffers, key=lambda b: (b.first, -b.size)):
        taken = sorted((lo, hi) for lo, hi, other in placed.get(buf.dtype, [])
                       if other.first <= buf.last and buf.first <= other.last)
        offset = 0
        for lo, hi in taken:
            if offset + buf.size <= lo:
                break
            offset = max(offset, _round_up(hi))
        placed.setdefault(buf.dtype, []).append((offset, offset + buf.size, buf))
        offsets[buf.slot] = offset
        sizes[buf.dtype] = max(sizes.get(buf.dtype, 0), offset + buf.size)
    return offsets, sizes
