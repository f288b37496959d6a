"""The ``newtonad`` command line: ``demo``, ``solve``, ``bench``, ``problems`` and ``cache``.

Each subcommand is a small module with ``add_parser(sub)`` and ``run(args) -> int``.
Usage mistakes (an unknown problem, method or engine, a bad size or tolerance) end
with one line ``newtonad: error: ...`` on standard error and exit status 2, as
argparse's own errors do; so does a command line without a subcommand, after the
help text.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn, Optional, Sequence

from . import bench, cache, catalog, demo, solve
from .errors import UsageError

__all__ = ["main", "build_parser", "UsageError"]

PROG = "newtonad"


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``newtonad: error: ...`` and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _version() -> str:
    import newtonad

    return f"newtonad {newtonad.__version__}"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``newtonad`` command."""
    parser = _Parser(
        prog=PROG,
        description="newtonad: automatic differentiation embedded in Newton solvers. "
                    "Solve the built-in test problems, compare with scipy, and time "
                    "derivative frames.",
        epilog="examples:\n"
               "  newtonad demo                       every problem, every method\n"
               "  newtonad solve rosenbrock --disp    one problem, iteration table\n"
               "  newtonad solve chained-rosenbrock --n 10000 --method trust-krylov\n"
               "  newtonad bench --quick --plot frames.png\n"
               "  newtonad cache --clear              delete the compiled kernels",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    demo.add_parser(sub)
    solve.add_parser(sub)
    bench.add_parser(sub)
    catalog.add_parser(sub)
    cache.add_parser(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors: return, don't exit
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:  # argparse's convention for a missing subcommand: status 2
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.handler(args))
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `newtonad problems | head`: stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a real file (captured)
            pass
        return 1
