"""Two-operand einsum: the one contraction primitive.

dot, matmul, vdot, inner, outer and tensordot are written as einsum by the numpy
layer. einsum is bilinear: its jvp adds a frame letter to the tangent operand and
the output; its transpose contracts the output cotangent with the known operand.
"""

from __future__ import annotations

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


def _einsum_impl(a, b, *, spec):
    return np.einsum(spec, a, b, optimize=True)


einsum_p = Primitive("einsum", impl=_einsum_impl, shape=_einsum_shape, jvp=_einsum_jvp,
                     transpose=_einsum_transpose, linear_in=(0, 1), kind="contraction")


def einsum(spec: str, a, b):
    return einsum_p(a, b, spec=spec.replace(" ", ""))


__all__ = ["einsum", "parse", "shape_of"]
