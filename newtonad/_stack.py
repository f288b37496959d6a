"""Where a warning should point: the user's line, the first frame outside newtonad."""

from __future__ import annotations

import os
import sys

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes ``warnings.warn``, called by the caller of this
    function, point at the first frame outside the newtonad package.

    Counting frames by hand breaks whenever a call is added in between; this stays
    right however deep inside newtonad the warning is issued.
    """
    frame = sys._getframe(1)  # the function that calls warnings.warn: stacklevel 1
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level
