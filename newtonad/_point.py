"""The record of what an :class:`~newtonad.objective.Objective` knows at its current
point, and how points are told apart.

A point is remembered by value (scipy passes copies of ``x``): small points by their
bytes, larger ones by a private copy whose first entries are compared first. When x
changes the whole record is replaced at once, so nothing computed at one point is ever
read at another (as in scipy's ``ScalarFunction``).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from .ad.captures import same_contents

#: Points of up to this many entries are compared by their bytes: one memcmp, ~0.1 µs.
SMALL_POINT_SIZE = 2048
#: A point's linearisations before the first: shared and read-only, so clearing a point
#: allocates nothing (the first linearisation there makes the point its own dict).
NO_LINEARIZATION: Mapping[int | None, tuple] = MappingProxyType({})


def new_key(key: tuple | None, x: np.ndarray) -> tuple | None:
    """``None`` when ``x`` equals the point ``key`` was made from, else the key of ``x``
    (its bytes, or for a large point a new private copy). :meth:`Point.move_to` does the
    same and reuses the old copy where it can."""
    if x.size <= SMALL_POINT_SIZE:
        new = (x.shape, x.tobytes())
        return None if new == key else new
    return None if is_point(key, x) else (x.shape, x.copy())


def is_point(key: tuple | None, x: np.ndarray) -> bool:
    """Whether ``x`` equals the point ``key`` was made from (no key is made)."""
    if key is None or key[0] != x.shape:
        return False
    data = key[1]
    return x.tobytes() == data if data.__class__ is bytes else same_contents(x, data)


class Unseen:
    """A gradient the kernel wrote into an array that no one holds yet: the first caller
    to ask for the gradient takes the array itself (no copy), and the record forgets it
    (see ``Objective._hand_out``)."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        self.array = array


class Point:
    """What is known at the current point. When x changes every field is replaced at once
    (:meth:`move_to`), so nothing computed at one point is ever read at another.

    A point is remembered by value (scipy passes copies of ``x``): small points by their
    bytes, so the test is one bytes comparison; larger ones by a private copy whose first
    entries are compared first (:func:`~newtonad.ad.captures.same_contents`: a new point
    usually differs there, and is told apart at once), copied once on a miss, into the
    previous point's copy when nothing else holds that (no allocation per point). Under
    the compiled engines the value-and-gradient kernel writes that copy itself, in the
    loops that read x (:func:`~newtonad._programs.with_copy_of_x`).

    A ``grad`` array is never handed out: callers get ``grad.copy()`` (they may write into
    what they get). An :class:`Unseen` one is given to the first caller as it is, and then
    the record has no gradient (``value`` stays): a second caller at the point has it
    computed again.
    """

    __slots__ = ("key", "x", "value", "grad", "linear", "products")

    key: tuple | None  # (shape, bytes) of a small point, (shape, private copy) of a large one
    x: np.ndarray | None  # a private copy of it, read by the linear runners
    value: Any  # f there, a 0-d array until fun asks for a float (None: not computed)
    grad: np.ndarray | Unseen | None  # ∇f there (None: not computed, or given away)
    linear: Mapping[int | None, tuple]  # frame width -> (linear runner, its inputs before V)
    products: bool  # hessp ran here or residuals were made here: the next product linearises

    def __init__(self) -> None:
        self.clear(None)

    def clear(self, key: tuple | None) -> None:
        """Forget everything and stand for the point ``key``."""
        self.key = key
        self.x = self.value = self.grad = None
        self.linear = NO_LINEARIZATION
        self.products = False

    def free_copy(self, x: np.ndarray) -> np.ndarray | None:
        """The private copy of the last large point, when it can be overwritten with
        ``x``: of x's shape, and no linearisation took it as an input (the operators
        linearize_hessp handed out may still run there)."""
        key = self.key
        kept = key[1] if key is not None else None
        if (kept.__class__ is np.ndarray and kept.shape == x.shape
                and self.linear is NO_LINEARIZATION):
            return kept
        return None

    def move_to(self, x: np.ndarray) -> bool:
        """Stand for ``x`` (a checked point); whether it is a new point (then cleared)."""
        if x.size <= SMALL_POINT_SIZE:
            return self.move_to_small(x)
        if is_point(self.key, x):
            return False
        self.copy_in(x)
        return True

    def move_to_small(self, x: np.ndarray) -> bool:
        """:meth:`move_to` for a point of at most ``SMALL_POINT_SIZE`` entries."""
        new = (x.shape, x.tobytes())
        if new == self.key:  # a shape mismatch ends the comparison
            return False
        # clear(new), written out: this is the per-call path of small problems
        self.key = new
        self.x = self.value = self.grad = None
        self.linear = NO_LINEARIZATION
        self.products = False
        return True

    def copy_in(self, x: np.ndarray) -> None:
        """Stand for the new large point ``x``, copied into the last point's copy when
        that is free (:meth:`free_copy`), else into a new array."""
        key = self.key
        kept = key[1] if key is not None else None
        # free_copy, written out: this is the per-call path of first-order solvers
        if (kept.__class__ is np.ndarray and kept.shape == x.shape
                and self.linear is NO_LINEARIZATION):
            np.copyto(kept, x)
        else:
            kept = x.copy()
        self.clear((x.shape, kept))


__all__ = ["SMALL_POINT_SIZE", "NO_LINEARIZATION", "Unseen", "Point", "is_point",
           "new_key"]
