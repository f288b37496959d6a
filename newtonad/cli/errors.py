"""The one exception the command line turns into a clean one-line error."""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    """A mistake in the command line (unknown problem, method, bad size, ...).

    :func:`newtonad.cli.main` prints ``newtonad: error: <message>`` on one line
    to standard error and exits with status 2, as argparse does. Raise it with a
    message that names the mistake and the fix.

    Examples
    --------
    >>> from newtonad.cli import UsageError
    >>> from newtonad.cli.catalog import load_problem
    >>> try:
    ...     load_problem("rosenbrok", None)
    ... except UsageError as exc:
    ...     print(exc)
    unknown problem 'rosenbrok' (did you mean 'rosenbrock'?) (`newtonad problems` lists all)
    """
