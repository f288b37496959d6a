"""The ``newtonad`` command line: ``demo``, ``solve``, ``bench``, ``problems`` and ``cache``.

Each subcommand is a small module with ``add_parser(sub)`` and ``run(args) -> int``.
Usage mistakes (an unknown problem, method or engine, a bad size or tolerance) end
with one line ``newtonad: error: ...`` on standard error and exit status 2, as
argparse's own errors do; so does a command line without a subcommand, after the
help text.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from typing import Iterator, NoReturn, Optional, Sequence

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
    """Build the argument parser of the ``newtonad`` command.

    One subparser per subcommand (``demo``, ``solve``, ``bench``, ``problems``,
    ``cache``); each sets ``handler``, the function :func:`main` calls with the
    parsed arguments. Its ``error`` prints one line and exits with status 2.

    Returns
    -------
    argparse.ArgumentParser
        A fresh parser; ``parse_args`` gives a namespace with ``command`` (the
        subcommand's name, or None) and that subcommand's options.

    See Also
    --------
    main : Parse and run.

    Examples
    --------
    >>> from newtonad.cli import build_parser
    >>> args = build_parser().parse_args(["solve", "beale", "--method", "trust-exact"])
    >>> args.command, args.problem, args.method
    ('solve', 'beale', 'trust-exact')
    """
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
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log newtonad's events (the 'newtonad' logger: engine compiles "
                             "and hand-overs, fallbacks, solver runs) to standard error: "
                             "-v for INFO, -vv for DEBUG")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    demo.add_parser(sub)
    solve.add_parser(sub)
    bench.add_parser(sub)
    catalog.add_parser(sub)
    cache.add_parser(sub)
    return parser


@contextlib.contextmanager
def _logging(verbose: int) -> Iterator[None]:
    """Send the ``newtonad`` logger's records to standard error at the level ``-v``
    asks for, above any progress bar (tqdm's logging redirection); silent without it.
    The logger is as it was afterwards (``main`` may run many times in one process)."""
    if not verbose:
        yield
        return
    from tqdm.contrib.logging import logging_redirect_tqdm  # type: ignore[import-untyped]

    logger = logging.getLogger("newtonad")
    level = logger.level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(relativeCreated)8.0f ms %(name)s: %(message)s"))
    logger.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
    logger.addHandler(handler)
    try:
        with logging_redirect_tqdm([logger]):
            yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``newtonad`` command line and return its exit status.

    The console script ``newtonad`` and ``python -m newtonad`` call it with
    ``sys.argv[1:]``; it never calls ``sys.exit`` itself, so it can be run
    in-process (the documentation does). Usage mistakes print one line
    ``newtonad: error: ...`` on standard error instead of raising.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success (``solve``: the solver reported success); 1 when
        ``solve`` ends without success or the output pipe closed early; 2 for
        a usage error, an unknown problem or method, or no subcommand (the help
        text then goes to standard error); 130 when interrupted (Ctrl-C).

    See Also
    --------
    build_parser : The parser, its subcommands and their options.

    Examples
    --------
    >>> from newtonad.cli import main
    >>> main(["--version"])
    newtonad 0.1.0
    0
    >>> main(["solve", "rosenbrok"])  # the message goes to standard error
    2
    >>> main([])  # no subcommand: the help text goes to standard error
    2
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors: return, don't exit
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:  # argparse's convention for a missing subcommand: status 2
        parser.print_help(sys.stderr)
        return 2
    try:
        with _logging(args.verbose):
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
