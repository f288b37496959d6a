"""A module of the package that fails to import is a test failure, never a skipped file."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).parent

# importorskip of a package module would turn an import error of newtonad into a skip
PACKAGE_SKIP = re.compile(r"importorskip\(\s*['\"]newtonad")


def test_no_test_file_skips_on_a_missing_newtonad_module():
    offenders = [path.name for path in sorted(TESTS.glob("*.py"))
                 if PACKAGE_SKIP.search(path.read_text(encoding="utf-8"))]
    assert offenders == []
