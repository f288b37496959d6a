"""Thinning of a solver's iteration table (``newtonad solve --disp``).

The native solvers print one row per iteration under a header whose first word
is ``iter`` (see :class:`newtonad.solvers.monitor.Monitor`). On long runs that is
thousands of rows, so :class:`IterationFilter` stands in for standard output and
passes on the header, every row the stride selects, the last row of the table
(always), and every other line unchanged.
"""

from __future__ import annotations

import io
from typing import Callable, Optional

__all__ = ["default_shows", "IterationFilter", "ALL_ROWS_UP_TO"]

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


class IterationFilter(io.TextIOBase):
    """A text stream that forwards a thinned iteration table to ``sink``.

    Parameters
    ----------
    sink : callable
        Receives each line to print (without its newline).
    every : int, optional
        Show iterations ``0, every, 2 every, ...``; by default :func:`default_shows`.

    Notes
    -----
    A row is a line whose first word is an integer, after a header line whose
    first word is ``iter``. A row held back is printed when the next non-row
    line arrives (the solver's closing message) or on :meth:`finish`, so the
    last iteration is always shown. :attr:`hidden` counts the rows left out.

    Examples
    --------
    >>> lines = []
    >>> table = IterationFilter(lines.append, every=2)
    >>> _ = table.write("  iter  f\\n     0  9.0\\n     1  4.0\\n     2  1.0\\n     3  0.5\\n")
    >>> _ = table.write("done\\n")
    >>> lines, table.hidden
    (['  iter  f', '     0  9.0', '     2  1.0', '     3  0.5', 'done'], 1)
    """

    def __init__(self, sink: Callable[[str], None], every: Optional[int] = None) -> None:
        super().__init__()
        if every is not None and every < 1:
            raise ValueError(f"every must be a positive integer, got {every}")
        self.sink = sink
        self.every = every
        self.hidden = 0
        self._partial = ""
        self._in_table = False
        self._held: Optional[str] = None

    def writable(self) -> bool:
        return True

    def _shows(self, k: int) -> bool:
        return default_shows(k) if self.every is None else k % self.every == 0

    def _line(self, line: str) -> None:
        words = line.split()
        if words and words[0] == "iter":
            self._in_table = True
        elif self._in_table and words and words[0].isdigit():
            if self._held is not None:  # a later row came: the held one is not the last
                self.hidden += 1
                self._held = None
            if self._shows(int(words[0])):
                self.sink(line)
            else:
                self._held = line
            return
        else:
            self._release()
            self._in_table = False
        self.sink(line)

    def _release(self) -> None:
        if self._held is not None:
            self.sink(self._held)
            self._held = None

    def write(self, text: str) -> int:
        """Take ``text``; complete lines are classified and forwarded at once."""
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._line(line)
        return len(text)

    def finish(self) -> None:
        """Forward what is held back: the last row and an unterminated line."""
        self._release()
        if self._partial:
            self.sink(self._partial)
            self._partial = ""
