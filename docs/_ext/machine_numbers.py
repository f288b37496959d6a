"""``:options: +NUMBERS_VARY``: an example's printed numbers are one machine's.

Long solver runs (hundreds of iterations on an ill-conditioned valley) amplify the
last bits in which two CPUs round -- NumPy's SIMD loops and LLVM's code differ between
AVX-512 and AVX2 machines -- into a few iterations more or less and a different final
``1e-14``. A page shows the output as it was printed on one machine; under this flag
the check still runs the example and compares every word, symbol and line of its
output, and lets each number be any number. The numbers such runs produce are checked
where they can be, by the test suite, with tolerances.
"""

from __future__ import annotations

import doctest
import re
from typing import Any

from sphinx.ext import doctest as sphinx_doctest

NUMBERS_VARY = doctest.register_optionflag("NUMBERS_VARY")

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_TOKEN = re.compile(rf"(\.\.\.)|({_NUMBER})|(\s+)")


def _pattern(want: str, optionflags: int) -> re.Pattern[str]:
    """``want`` as a regular expression: numbers match numbers, ``...`` anything."""
    parts, end = [], 0
    for match in _TOKEN.finditer(want):
        parts.append(re.escape(want[end:match.start()]))
        if match.group(1):
            parts.append(r".*?" if optionflags & doctest.ELLIPSIS else re.escape("..."))
        elif match.group(2):
            parts.append(_NUMBER)
        else:
            parts.append(r"\s*")  # a number one digit wider eats a space of the column
        end = match.end()
    parts.append(re.escape(want[end:]))
    return re.compile("".join(parts), re.DOTALL)


class MachineNumbersChecker(doctest.OutputChecker):
    """doctest's checker, and under ``NUMBERS_VARY`` numbers that may differ."""

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        if super().check_output(want, got, optionflags):
            return True
        if not optionflags & NUMBERS_VARY:
            return False
        return _pattern(want.strip(), optionflags).fullmatch(got.strip()) is not None


class _Runner(sphinx_doctest.SphinxDocTestRunner):
    def __init__(self, checker: Any = None, verbose: Any = None, optionflags: int = 0) -> None:
        super().__init__(checker or MachineNumbersChecker(), verbose, optionflags)


def setup(app: Any) -> dict[str, Any]:
    # the doctest builder makes its runners from this module-level name
    sphinx_doctest.SphinxDocTestRunner = _Runner  # type: ignore[misc]
    return {"parallel_read_safe": True}
