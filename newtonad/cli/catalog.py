"""``newtonad problems``: the built-in problem library, and name lookup for the CLI."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from .errors import UsageError
from .methods import suggest
from .table import Column, Table, fmt_float

__all__ = ["add_parser", "run", "load_problem"]


def load_problem(name: str, n: Optional[int] = None, *, nearest: bool = False) -> Any:
    """The built-in problem ``name`` at size ``n``, or a :class:`UsageError`.

    Parameters
    ----------
    name : str
        A name from ``newtonad.problems.names()``.
    n : int, optional
        Size of a scalable problem (its default when omitted).
    nearest : bool
        Round ``n`` to the problem's nearest allowed size and ignore it for
        fixed-size problems (as ``problems.all_problems`` does) instead of
        rejecting it.
    """
    from newtonad import problems

    known = problems.names() + problems.names(bounded=True)
    if name not in known:
        raise UsageError(f"unknown problem {name!r}{suggest(name, known)} "
                         "(`newtonad problems` lists all)")
    if n is not None and n < 1:
        raise UsageError(f"--n must be a positive integer, got {n}")
    if n is not None and not problems.get(name).scalable:
        if nearest:
            return problems.get(name)
        raise UsageError(f"problem {name!r} has a fixed size, n = {problems.get(name).n}; "
                         "leave out --n")
    if nearest and n is not None:
        # all_problems rounds n to each problem's nearest allowed size
        bounded = name not in problems.names()
        return next(p for p in problems.all_problems(scalable_n=n, bounded=bounded)
                    if p.name == name)
    try:
        return problems.get(name, n)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def add_parser(sub: Any) -> None:
    """Register ``problems`` on the subcommand parsers ``sub``."""
    p = sub.add_parser("problems", help="list the built-in problems",
                       description="List the built-in test problems: name, default size, "
                                   "known optimal value f*, whether n is free, and source.")
    p.add_argument("--format", choices=("text", "markdown"), default="text",
                   help="table format (default: text)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the problem table."""
    from newtonad import problems

    table = Table([Column("problem", 26, "<"), Column("n", 5), Column("f*", 10),
                   Column("scalable", 8, "<"), Column("bounds", 6, "<"),
                   Column("source", 48, "<")], args.format)
    def source(text: str) -> str:  # long citations are cut in the text table
        return text if args.format == "markdown" or len(text) <= 48 else text[:45] + "..."

    # the unconstrained problems, then those with bounds (solve passes them to the method)
    every = problems.all_problems() + problems.all_problems(bounded=True)
    rows = [[p.name, p.n, fmt_float(p.fstar, 3), "yes" if p.scalable else "no",
             "yes" if getattr(p, "bounds", None) is not None else "no", source(p.source)]
            for p in every]
    print(table.render(rows), file=sys.stdout)
    return 0
