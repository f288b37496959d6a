"""The examples in newtonad's docstrings and on the docs pages run, and print what they show.

Every module of the package is searched for docstring examples (``>>>``); each
docstring with examples is one test, so a failure names the function. They run on
the NumPy reference engine (``newtonad.settings.override(engine="numpy")``): the
examples show values, not speed, and a numba compile per example would cost about
a second each. Options: whitespace is normalised and ``...`` matches anything
(the same flags as ``doctest_optionflags`` in pyproject.toml, for
``pytest --doctest-modules``).
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import newtonad
import newtonad.api

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
# modules that only run as programs (``python -m newtonad``) have no examples to find
SKIP_MODULES = {"newtonad.__main__"}


def _modules() -> list[str]:
    names = ["newtonad"]
    for info in pkgutil.walk_packages(newtonad.__path__, prefix="newtonad."):
        if info.name not in SKIP_MODULES:
            names.append(info.name)
    return sorted(names)


def _doctests() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = []
    for name in _modules():
        module = importlib.import_module(name)
        found += [t for t in finder.find(module, name) if t.examples]
    return sorted(found, key=lambda t: t.name)


DOCTESTS = _doctests()


@pytest.fixture(autouse=True)
def numpy_engine():
    with newtonad.settings.override(engine="numpy"):
        yield


def test_examples_are_found():
    """The public API's examples are among those collected (a broken finder fails here)."""
    names = {t.name for t in DOCTESTS}
    for name in ("newtonad.solvers.minimize.minimize", "newtonad.problems._registry.get",
                 "newtonad.cli.main", "newtonad.problems._registry.Problem"):
        assert name in names, name


@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name for t in DOCTESTS])
def test_docstring_examples(test: doctest.DocTest):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    test.globs = dict(test.globs)  # each run starts from the module's namespace
    report: list[str] = []
    result = runner.run(test, out=report.append)
    assert result.failed == 0, "".join(report)


# ---- the documentation's examples ----------------------------------------------------------

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.skipif(importlib.util.find_spec("sphinx") is None,
                    reason="the docs' examples need the docs extra: pip install '.[docs]'")
def test_documentation_examples(tmp_path):
    """Every example on the docs pages prints the output the page shows.

    The pages hold each example's output (``sphinx.ext.doctest``'s testcode and
    testoutput blocks), so the HTML build runs nothing; this runs them all, as
    ``make doctest`` does. Timings on the pages are ``...``.
    """
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "doctest",
         str(DOCS), str(tmp_path)],
        capture_output=True, text=True, timeout=1200)
    report = (tmp_path / "output.txt")
    detail = report.read_text()[-6000:] if report.exists() else proc.stdout[-6000:]
    assert proc.returncode == 0, detail + proc.stderr[-2000:]
    assert "0 failures in tests" in report.read_text()


def test_numbers_vary_flag_lets_numbers_differ_and_nothing_else():
    # the docs' checker for one machine's long runs (docs/_ext/machine_numbers.py)
    pytest.importorskip("sphinx")
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from machine_numbers import NUMBERS_VARY, MachineNumbersChecker
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    check = MachineNumbersChecker().check_output
    flags = FLAGS | NUMBERS_VARY
    want = "Optimization terminated successfully. 175 iterations\n  f  3.8e-10  time ...s\n"
    assert check(want, "Optimization terminated successfully. 1177 iterations\n"
                       "  f 1.5e-09  time 0.25s\n", flags)
    assert not check(want, "Optimization terminated successfully. 177 iterations\n"
                           "  f 1.5e-09\n", flags)  # a missing word
    assert not check(want, "Desired error not necessarily achieved. 177 iterations\n"
                           "  f 1.5e-09  time 0.2s\n", flags)
    assert not check(want, want.replace("175", "177"), FLAGS)  # off without the flag
