"""``python -m newtonad`` and the ``newtonad`` console script; see :mod:`newtonad.cli`."""

from __future__ import annotations

import sys
from typing import Optional, Sequence


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the command line; returns the exit status."""
    from newtonad.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
