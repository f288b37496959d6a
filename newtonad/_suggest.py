"""``did you mean ...?`` for a misspelt name (a method, a problem, an option).

One helper for the library's errors and the command line's, so both suggest the same
name for the same typo.
"""

from __future__ import annotations

import difflib
from typing import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(name: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``choices``, else ``""``.

    Parameters
    ----------
    name : str
        What was given; compared in lower case, as method names are.
    choices : iterable of str
        The names that exist.
    cutoff : float
        :func:`difflib.get_close_matches`' similarity threshold in [0, 1].

    Returns
    -------
    str
        Text to put right after the quoted name in an error message.

    Examples
    --------
    >>> did_you_mean("trust-krylv", ["trust-ncg", "trust-krylov", "trust-exact"])
    " (did you mean 'trust-krylov'?)"
    >>> did_you_mean("simplex", ["trust-ncg", "bfgs"])
    ''
    """
    close = difflib.get_close_matches(str(name).lower(), list(choices), n=1, cutoff=cutoff)
    return f" (did you mean {close[0]!r}?)" if close else ""
