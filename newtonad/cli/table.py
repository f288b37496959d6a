"""Fixed-width text tables and markdown tables, printed row by row.

Rows can be printed as results arrive (under a progress display) because every
column has a width fixed up front.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

__all__ = ["Column", "Table", "fmt_float", "fmt_time", "fmt_bytes"]

FORMATS = ("text", "markdown")


@dataclass(frozen=True)
class Column:
    """One column: its title, width, alignment (``"<"`` or ``">"``) and group.

    Adjacent columns with the same non-empty ``group`` share a heading above
    their titles (in markdown the group prefixes each title instead).
    """

    title: str
    width: int = 10
    align: str = ">"
    group: str = ""


class Table:
    """A table of fixed columns, rendered as aligned text or as markdown.

    Parameters
    ----------
    columns : sequence of Column
    fmt : {"text", "markdown"}

    Examples
    --------
    >>> t = Table([Column("name", 6, "<"), Column("value", 7)])
    >>> print("\\n".join(t.header()))
    name      value
    ------  -------
    >>> print(t.row(["x", 1.5]))
    x           1.5
    """

    def __init__(self, columns: Sequence[Column], fmt: str = "text") -> None:
        if fmt not in FORMATS:
            raise ValueError(f"table format must be one of {FORMATS}, got {fmt!r}")
        self.columns = list(columns)
        self.fmt = fmt

    def _cells(self, values: Iterable[Any]) -> list[str]:
        cells = []
        for col, value in zip(self.columns, values):
            text = "" if value is None else str(value)
            cells.append(f"{text:{col.align}{col.width}}")
        return cells

    def _group_line(self) -> Optional[str]:
        """Group headings centred over their columns, or None without groups."""
        if not any(c.group for c in self.columns):
            return None
        parts: list[str] = []
        i = 0
        while i < len(self.columns):
            j = i
            while j + 1 < len(self.columns) and self.columns[j + 1].group == self.columns[i].group:
                j += 1
            span = sum(c.width for c in self.columns[i:j + 1]) + 2 * (j - i)
            label = self.columns[i].group
            parts.append(f"{label:^{span}}" if label else " " * span)
            i = j + 1
        return "  ".join(parts).rstrip()

    def header(self) -> list[str]:
        """The group line (if any), the title line and the rule under it."""
        if self.fmt == "markdown":
            titles = [f"{c.group} {c.title}" if c.group else c.title for c in self.columns]
            rule = ["---:" if c.align == ">" else ":---" for c in self.columns]
            return ["| " + " | ".join(titles) + " |", "|" + "|".join(rule) + "|"]
        titles = "  ".join(self._cells(c.title for c in self.columns)).rstrip()
        rule = "  ".join("-" * c.width for c in self.columns)
        groups = self._group_line()
        return ([groups] if groups else []) + [titles, rule]

    def row(self, values: Sequence[Any]) -> str:
        """One row; ``None`` prints as an empty cell."""
        if len(values) != len(self.columns):
            raise ValueError(f"row has {len(values)} values for {len(self.columns)} columns")
        if self.fmt == "markdown":
            return "| " + " | ".join("" if v is None else str(v) for v in values) + " |"
        return "  ".join(self._cells(values)).rstrip()

    def render(self, rows: Iterable[Sequence[Any]]) -> str:
        """The whole table as one string."""
        return "\n".join(self.header() + [self.row(r) for r in rows])


def fmt_float(x: Optional[float], digits: int = 3) -> str:
    """``x`` in compact scientific notation; ``-`` for None or nan."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}e}"


def fmt_time(seconds: Optional[float]) -> str:
    """A duration with a unit chosen for it (ns, µs, ms, s)."""
    if seconds is None or math.isnan(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_bytes(n: int) -> str:
    """A size in bytes with a decimal unit (B, kB, MB, GB).

    Examples
    --------
    >>> fmt_bytes(512), fmt_bytes(73_400_000)
    ('512 B', '73.4 MB')
    """
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"
