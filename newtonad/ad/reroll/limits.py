"""The limits of the re-rolling search, and the signal that a candidate group fails."""

from __future__ import annotations

#: Fewest iterations worth folding.
MIN_TRIP = 4
#: Longest period (terms added per iteration) looked for.
MAX_PERIOD = 16
#: Nodes of a term's expression tree looked at to pre-check its element reads.
READS_BUDGET = 64


class Bail(Exception):
    """A group cannot be folded; ``k`` is the first iteration that breaks it."""

    def __init__(self, k: int):
        super().__init__(k)
        self.k = k

