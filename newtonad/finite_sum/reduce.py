"""Partial sums reduced in a tree of Dask tasks, then on the client.

Each level sums groups of up to ``split_every`` partials in one task, placed by the
scheduler beside the partials it reads (the largest dependency decides), so only
vectors of the parameters' size move between workers; the last ``split_every`` or
fewer partials are summed on the client. With ``W`` worker groups that is
``ceil(log_split_every(W))`` levels; up to ``split_every`` workers the client sums
their partials directly (a tree of one level).
"""

from __future__ import annotations

from typing import Any, Sequence

from .worker import add_partials

__all__ = ["reduce_in_tree"]


def reduce_in_tree(client: Any, futures: Sequence[Any], split_every: int) -> list[Any]:
    """Futures of at most ``split_every`` pickled partials whose sum is the sum of all."""
    level = list(futures)
    while len(level) > split_every:
        level = [client.submit(add_partials, *level[i:i + split_every], pure=False)
                 for i in range(0, len(level), split_every)]
    return level
