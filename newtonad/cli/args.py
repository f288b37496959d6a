"""Argument types shared by the subcommands: checked when the command line is parsed.

A value argparse rejects ends the command with one line ``newtonad CMD: error:
argument --tol: ...`` and exit status 2, before anything is traced or solved.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Optional

__all__ = ["positive_float", "positive_int", "engine_names", "add_engine_argument"]


def positive_float(text: str) -> float:
    """A finite real number > 0 (``--tol``): argparse's ``type=``.

    Examples
    --------
    >>> positive_float("1e-8")
    1e-08
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number such as 1e-8, got "
                                         f"{text!r}") from None
    if not (math.isfinite(value) and value > 0.0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0 such as 1e-8, got "
                                         f"{text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (``--maxiter``, ``--disp-every``): argparse's ``type=``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def engine_names() -> list[str]:
    """The engines :func:`newtonad.ad.engine.compile_program` knows (registered or lazy)."""
    from newtonad.ad import engine

    return sorted(set(engine.ENGINES) | set(engine.LAZY_ENGINES))


def add_engine_argument(parser: Any, default: Optional[str] = None,
                        note: str = "newtonad's default") -> None:
    """Add ``--engine`` with the known engines as its choices."""
    names = engine_names()
    parser.add_argument("--engine", choices=names, default=default, metavar="ENGINE",
                        help=f"AD engine: {', '.join(names)} (default: {note})")
