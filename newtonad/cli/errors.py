"""The one exception the command line turns into a clean one-line error."""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    """A mistake in the command line (unknown problem, method, bad size, ...).

    :func:`newtonad.cli.main` prints ``newtonad: error: <message>`` on one line
    to standard error and exits with status 2, as argparse does.
    """
