"""The examples in newtonad's docstrings run, and print what they show.

Every module of the package is searched for docstring examples (``>>>``); each
docstring with examples is one test, so a failure names the function. They run on
the NumPy reference engine (``newtonad.api.DEFAULT_ENGINE = "numpy"``): the
examples show values, not speed, and a numba compile per example would cost about
a second each. Options: whitespace is normalised and ``...`` matches anything
(the same flags as ``doctest_optionflags`` in pyproject.toml, for
``pytest --doctest-modules``).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

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
def numpy_engine(monkeypatch):
    monkeypatch.setattr(newtonad.api, "DEFAULT_ENGINE", "numpy")


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
