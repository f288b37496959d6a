"""Where a lowering writes: the kernel body, or one block of a row-blocked region.

The loop nests and opaque steps of a kernel address the memory of a slot by name:
``b<i>`` for its whole array, ``r<i>`` for a scalar. Inside a row-blocked region
(:class:`~.row_blocks.RowBlock`) the slots the region blocks are addressed through
the block's views ``k<i>`` of ``nb`` rows instead. A :class:`Where` is that context as
a frozen value, made once per region by the generator and passed to every lowering
called in it; no lowering reads state that another call changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .loop_ir import Assign, IMap, Load, Scalar, Text
from .numba_ops import literal, literal_atom


@dataclass(frozen=True, eq=False)
class Where:
    """The names of slots' memory in the kernel body (``region`` None) or in one block
    of ``region``."""

    # A numba_plan.Plan and a row_blocks.RowBlock, not imported: the opaque lowerings
    # take a Where and sit below the planner (kinds derives OPAQUE from their table).
    plan: Any
    region: Any = None

    @property
    def slots(self) -> tuple:
        return self.plan.program.slots

    def is_scalar(self, i: int) -> bool:
        return self.slots[i].shape == ()

    def base(self, i: int) -> int:
        """The slot whose memory slot ``i`` is a view of (``i`` itself if none)."""
        while i in self.plan.views:
            i = self.plan.views[i]
        return i

    def blocked(self, i: int) -> bool:
        """Slot ``i`` is accessed one block of rows at a time here (in a region)."""
        return self.region is not None and i in self.region.blocked

    def array(self, i: int) -> str:
        """The array holding stored slot ``i``: ``k<i>`` (its block) in a region, else ``b<i>``."""
        return f"k{i}" if self.blocked(i) else f"b{i}"

    def size(self, i: int) -> str:
        """The number of elements of slot ``i`` here (of its block in a region)."""
        if not self.blocked(i):
            return str(self.slots[i].size)
        rest = int(np.prod(self.slots[i].shape[1:], dtype=np.int64))
        return "nb" if rest == 1 else f"nb * {rest}"

    def ref(self, i: int, m: IMap) -> Any:
        """Element ``m`` of stored slot ``i`` as an atom (a local for scalars)."""
        if i in self.plan.literals:
            return literal_atom(self.plan.literals[i], self.slots[i].dtype)
        return Scalar(f"r{i}") if self.is_scalar(i) else Load(self.array(i), m)

    def ref_text(self, i: int, index: str) -> str:
        """Source of element ``index`` of slot ``i`` (outside loop nests)."""
        if i in self.plan.literals:
            return literal(self.plan.literals[i], self.slots[i].dtype)
        return f"r{i}" if self.is_scalar(i) else f"{self.array(i)}[{index}]"

    def ref_reads(self, i: int, index: tuple[str, ...]) -> tuple[str, ...]:
        """The names :meth:`ref_text` reads, ``index`` the names its index reads."""
        if i in self.plan.literals:
            return ()
        return (f"r{i}",) if self.is_scalar(i) else (self.array(i), *index)

    def flat_view(self, i: int) -> str:
        """Source of slot ``i`` as a flat array."""
        return f"{self.array(i)}.reshape({self.size(i)})"

    def view_reads(self, i: int) -> tuple[str, ...]:
        """The names :meth:`flat_view` reads: the array (and ``nb``, a block's rows)."""
        return (self.array(i), "nb") if self.blocked(i) else (self.array(i),)

    def fill(self, i: int, value: Any) -> Assign:
        """Every element of slot ``i`` set to ``value``."""
        lit = literal_atom(value, self.slots[i].dtype)
        target = (Scalar(f"r{i}") if self.is_scalar(i)
                  else Text(f"{self.flat_view(i)}[:]", self.view_reads(i)))
        return Assign(target, lit)


__all__ = ["Where"]
