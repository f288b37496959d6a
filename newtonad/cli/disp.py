"""The iteration table of ``newtonad solve --disp``, thinned on long runs.

The native solvers hand every row of their table to the listeners of
:func:`newtonad.solvers.monitor.watch` as an
:class:`~newtonad.solvers.monitor.IterationRecord`. On long runs that is thousands
of rows, so :class:`IterationTable` prints the header, every row the stride selects
and the last row of the table (always), in the solvers' own ``disp`` layout.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

__all__ = ["default_shows", "IterationTable", "ALL_ROWS_UP_TO", "format_row", "header"]

#: the default stride shows every row up to here, then every 10th, 100th, ...
ALL_ROWS_UP_TO = 200


def default_shows(k: int) -> bool:
    """Whether the default stride shows iteration ``k``.

    Every iteration below :data:`ALL_ROWS_UP_TO`; past it every 10th up to 999,
    every 100th up to 9999, and so on (about 90 rows per decade).

    Examples
    --------
    >>> [k for k in (5, 199, 200, 205, 210, 1000, 1050, 1100) if default_shows(k)]
    [5, 199, 200, 210, 1000, 1100]
    """
    if k < ALL_ROWS_UP_TO:
        return True
    stride = 10 ** max(1, len(str(k)) - 2)
    return k % stride == 0


def header(step_label: str) -> str:
    """The table's header line (the layout of the solvers' ``disp`` table)."""
    return f"{'iter':>6} {'f':>15} {'|g|':>10} {step_label:>10} {'cg':>5} {'time(s)':>8}"


def format_row(r: Any) -> str:
    """One row of the table from an ``IterationRecord``."""
    return (f"{r.k:6d} {r.f:15.8e} {r.gnorm:10.3e} {r.step:10.3e} {r.inner:5d} "
            f"{r.elapsed:8.3f}")


class IterationTable:
    """A listener of iteration records that prints a thinned table through ``sink``.

    Parameters
    ----------
    sink : callable
        Receives each line to print (without its newline).
    every : int, optional
        Show iterations ``0, every, 2 every, ...``; by default :func:`default_shows`.

    Notes
    -----
    A row held back is printed by :meth:`finish`, so the last iteration is always
    shown. :attr:`hidden` counts the rows left out. A record of iteration 0 starts
    a table (with its header).

    Examples
    --------
    >>> from newtonad.solvers.monitor import IterationRecord
    >>> lines = []
    >>> table = IterationTable(lines.append, every=2)
    >>> for k, f in enumerate([9.0, 4.0, 1.0, 0.5]):
    ...     table(IterationRecord(k, f, 1.0, 1.0, 0, 0.0, "radius"))
    >>> table.finish()
    >>> [line.split()[0] for line in lines], table.hidden
    (['iter', '0', '2', '3'], 1)
    """

    def __init__(self, sink: Callable[[str], None], every: Optional[int] = None) -> None:
        if every is not None and every < 1:
            raise ValueError(f"every must be a positive integer, got {every}")
        self.sink = sink
        self.every = every
        self.hidden = 0
        self._held: Optional[str] = None

    def _shows(self, k: int) -> bool:
        return default_shows(k) if self.every is None else k % self.every == 0

    def __call__(self, record: Any) -> None:
        """Take one ``IterationRecord``."""
        if record.k == 0:
            self.finish()
            self.sink(header(record.step_label))
        if self._held is not None:  # a later row came: the held one is not the last
            self.hidden += 1
            self._held = None
        row = format_row(record)
        if self._shows(record.k):
            self.sink(row)
        else:
            self._held = row

    def finish(self) -> None:
        """Print the row held back (the last of its table)."""
        if self._held is not None:
            self.sink(self._held)
            self._held = None
