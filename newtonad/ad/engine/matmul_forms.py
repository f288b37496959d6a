"""Einsums of two operands that are one matrix product (``np.dot`` of 2-D views).

Read by the row-blocked regions (:mod:`.row_blocks`: which einsums may join one) and by
the opaque lowering of einsum (:mod:`.opaque_lowering`); it depends on neither.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MatMul:
    """An einsum of two operands as one matrix product ``out = L @ R``.

    ``left`` is the operand position (0 or 1) of ``L``; ``free`` the output letters of
    ``L`` and of ``R``; ``contracted`` the summed letters (in ``L``'s order);
    ``transposed`` says per factor whether its memory holds the transpose of the matrix
    (``L`` stored as contracted x free, ``R`` as free x contracted).
    """

    left: int
    free: tuple[str, str]
    contracted: str
    transposed: tuple[bool, bool]


def matmul_form(sa: str, sb: str, so: str) -> MatMul | None:
    """How ``einsum(sa, sb -> so)`` is one ``np.dot`` of 2-D views, or None."""
    A, B, Out = set(sa), set(sb), set(so)
    if A & B & Out or (A - B - Out) or (B - A - Out):
        return None
    contracted = [c for c in sa if c in B]
    if [c for c in sb if c in A] != contracted:
        return None
    fa = [c for c in so if c in A]
    fb = [c for c in so if c in B]
    if list(so) == fa + fb:
        left, (sl, fl), (sr, fr) = 0, (sa, fa), (sb, fb)
    elif list(so) == fb + fa:
        left, (sl, fl), (sr, fr) = 1, (sb, fb), (sa, fa)
    else:
        return None
    flips = []
    for subs, free, free_first in ((sl, fl, True), (sr, fr, False)):
        if list(subs) == free + contracted:
            flips.append(not free_first)
        elif list(subs) == contracted + free:
            flips.append(free_first)
        else:
            return None
    return MatMul(left, ("".join(fl), "".join(fr)), "".join(contracted), (flips[0], flips[1]))


__all__ = ["MatMul", "matmul_form"]
