"""Two-operand einsum: the one contraction primitive.

dot, matmul, vdot, inner, outer and tensordot are written as einsum by the numpy
layer. einsum is bilinear: its jvp adds a frame letter to the tangent operand and
the output; its transpose contracts the output cotangent with the known operand.
"""

from __future__ import annotations

import functools
import math
import string

import numpy as np

from ..program import Slot
from .core import Frame, Primitive, is_undef, shape_of
from .elementwise import add_any
from .structural import broadcast_to, reshape


def parse(spec: str) -> tuple[list[str], str]:
    lhs, out = spec.split("->")
    return lhs.split(","), out


def _einsum_shape(a: Slot, b: Slot, *, spec: str) -> Slot:
    (sa, sb), out = parse(spec)
    sizes: dict[str, int] = {}
    for subs, x in ((sa, a), (sb, b)):
        if len(subs) != x.ndim:
            raise ValueError(f"einsum {spec!r}: operand subscripts {subs!r} do not match "
                             f"shape {x.shape}")
        if len(set(subs)) != len(subs):
            raise ValueError(f"einsum {spec!r}: repeated subscripts within one operand "
                             "(diagonals, traces) are not supported")
        for c, n in zip(subs, x.shape):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"einsum {spec!r}: size mismatch for index {c!r}: "
                                 f"{sizes[c]} vs {n}")
    if any(c not in sizes for c in out) or len(set(out)) != len(out):
        raise ValueError(f"einsum {spec!r}: bad output subscripts")
    dtype = np.result_type(np.dtype(a.dtype), np.dtype(b.dtype)).name
    return Slot(tuple(sizes[c] for c in out), dtype)


def _free_letter(spec: str) -> str:
    return next(c for c in string.ascii_letters if c not in spec)


def _einsum_jvp(frame: Frame, primals, tangents, out, *, spec):
    (sa, sb), so = parse(spec)
    z = _free_letter(spec) if frame.framed else ""  # the frame's column index
    a, b = primals
    ta, tb = tangents
    da = None if ta is None else einsum(f"{sa}{z},{sb}->{so}{z}", ta, b)
    db = None if tb is None else einsum(f"{sa},{sb}{z}->{so}{z}", a, tb)
    return add_any(da, db)


def _einsum_transpose(ct, a, b, *, spec):
    if is_undef(a) == is_undef(b):
        raise ValueError("einsum in a linear program needs exactly one linear operand")
    (sa, sb), so = parse(spec)
    if is_undef(a):
        target, known, st, sk = a, b, sa, sb
    else:
        target, known, st, sk = b, a, sb, sa
    # Indices of the target found in neither the output nor the known operand were
    # summed on the way forward: their cotangent is broadcast back.
    present = "".join(c for c in st if c in so or c in sk)
    ct_t = einsum(f"{so},{sk}->{present}", ct, known)
    if present != st:
        sizes = dict(zip(st, target.shape))
        shape = tuple(sizes[c] if c in present else 1 for c in st)
        ct_t = broadcast_to(reshape(ct_t, shape), target.shape)
    return [ct_t, None] if is_undef(a) else [None, ct_t]


#: Products summing or writing fewer entries than this go to BLAS as NumPy chooses.
SERIAL_FROM = 10_000


@functools.lru_cache(maxsize=1024)
def is_vector_product(spec: str, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> bool:
    """Whether ``einsum(spec)`` of operands of these shapes is a vector operation in a
    matrix product's clothes: a dot product (one output entry) or an elementwise product
    (nothing summed but axes of length 1) of at least :data:`SERIAL_FROM` entries.

    A one-row matrix times a vector (a volume or budget constraint, ``a @ x``) is one.
    OpenBLAS runs such products on all its threads from about ten thousand entries, and
    a threaded call waits for every core: beside one busy process a (1, 100 000) matrix
    times a vector took 18-54 ms instead of 0.04 ms. They run on serial loops instead
    (NumPy's own einsum loops; the numba engine's explicit loops).

    Parameters
    ----------
    spec : str
        The einsum's subscripts, ``"ab,b->a"`` (two operands).
    shape_a, shape_b : tuple of int
        The operands' shapes.

    Returns
    -------
    bool
        True for a dot or elementwise product of at least :data:`SERIAL_FROM` entries.

    Examples
    --------
    >>> is_vector_product("ij,j->i", (1, 100_000), (100_000,))
    True
    >>> is_vector_product("ij,j->i", (3, 100_000), (100_000,))
    False
    """
    (sa, sb), so = parse(spec)
    sizes = dict(zip(sa, shape_a)) | dict(zip(sb, shape_b))
    summed = math.prod(n for c, n in sizes.items() if c not in so)
    written = math.prod(sizes[c] for c in so)
    return (written == 1 and summed >= SERIAL_FROM) or (summed == 1 and written >= SERIAL_FROM)


def _einsum_impl(a, b, *, spec):
    a, b = np.asarray(a), np.asarray(b)
    serial = is_vector_product(spec, a.shape, b.shape)
    return np.einsum(spec, a, b, optimize=not serial)


einsum_p = Primitive("einsum", impl=_einsum_impl, shape=_einsum_shape, jvp=_einsum_jvp,
                     transpose=_einsum_transpose, linear_in=(0, 1), kind="contraction")


def einsum(spec: str, a, b):
    return einsum_p(a, b, spec=spec.replace(" ", ""))


__all__ = ["SERIAL_FROM", "einsum", "is_vector_product", "parse", "shape_of"]
