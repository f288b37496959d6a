"""numpydoc's validation of every public name of newtonad.

What is public
--------------
``newtonad.__all__`` (modules aside) and the public methods and properties of its
classes (``Objective``, ``Var``, ``Program``, ...); ``newtonad.minimize``; the
functions of ``newtonad.numpy`` and its ``linalg`` namespace; ``newtonad.problems``'
``__all__`` and its classes' methods; ``newtonad.solvers``' ``__all__`` (``minimize``
and the fallback warnings); ``newtonad.cli``'s ``__all__`` (``main``,
``build_parser``, ``UsageError``). Data attributes (``__slots__``) belong in their
class's docstring and are not validated one by one.

The rule for each name
----------------------
* **Own API** -- every check of :data:`CHECKS`: numpy's docstring standard
  (sections, summary line, every parameter documented and no unknown one, a
  Returns section for functions, and an Examples section), except ES01 (an
  extended summary: a one-line summary can say it all), SA01 (See Also:
  welcome, not required) and GL01 (numpydoc wants the text on the line after
  the opening quotes; this project follows PEP 257 and starts on the quotes'
  line).
* **NumPy mirrors** -- a function of ``newtonad.numpy`` or a method or property
  of ``Var`` whose name NumPy (``numpy``, ``numpy.linalg``, ``numpy.fft``,
  ``numpy.ndarray``) or ``scipy.special`` also defines is the traced version of
  that function and takes its arguments. NumPy's own reference documents
  them; repeating it would drift. Its docstring must exist, pass the summary
  and layout checks of :data:`MIRROR_CHECKS` and name the original in its
  summary line (``numpy.sum``, ``numpy.linalg.norm``, ``numpy.ndarray.reshape``,
  ``scipy.special.logsumexp``; ``np.`` for ``numpy.`` is fine), e.g. "Traced version of
  numpy.sum; see numpy.sum." plus, where they differ, what newtonad does not support. If it
  documents parameters, they must match its signature (PR02, PR03).

Names whose docstrings belong to modules under rework by other helpers and still
fail are listed in :data:`PENDING`: expected failures, checked strictly by
``test_pending_docstrings_still_fail`` (a pending name that starts passing fails
that test until it is removed from the list, so the list only shrinks).
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any, Iterator

import numpy as np
import pytest

numpydoc_validate = pytest.importorskip(
    "numpydoc.validate", reason="numpydoc validation needs the docs extra: "
                                "pip install '.[docs]'")


#: every numpydoc check except ES01, SA01 and GL01 (see the module docstring)
CHECKS = frozenset(numpydoc_validate.ERROR_MSGS) - {"ES01", "SA01", "GL01"}
#: NumPy mirrors: a docstring, its layout and summary line, parameters if documented
MIRROR_CHECKS = frozenset({"GL02", "GL03", "GL05", "GL06", "GL07", "GL08", "GL10",
                           "SS01", "SS02", "SS03", "SS04", "SS06", "PR02", "PR03"})
#: the custom check of a mirror's summary line
NAMES_ORIGINAL = "NA01"
ORIGINAL = re.compile(r"\b(numpy|np|scipy)(\.\w+)+")

# ---- the public names ----------------------------------------------------------------------


def _resolve(dotted: str) -> Any:
    module, _, rest = dotted.partition(".")
    obj: Any = importlib.import_module(module)
    for part in rest.split("."):
        obj = getattr(obj, part)
    return obj


def _numpy_has(name: str, namespace: str = "") -> bool:
    import scipy.special

    if namespace == "linalg":
        return hasattr(np.linalg, name)
    if namespace == "ndarray":
        return hasattr(np.ndarray, name)
    return any(hasattr(home, name) for home in (np, np.linalg, np.fft, scipy.special))


def _class_members(cls: type) -> Iterator[tuple[str, Any]]:
    """Public methods and properties a newtonad class defines (data slots excluded)."""
    seen = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("newtonad"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if inspect.isfunction(value) or isinstance(value, (property, classmethod,
                                                                staticmethod)):
                yield name, value


def public_names() -> dict[str, str]:
    """Dotted public name -> rule ("api" or "mirror")."""
    import newtonad.cli
    import newtonad.numpy as nnp
    import newtonad.problems
    import newtonad.solvers

    rules: dict[str, str] = {}
    classes = []
    for home, names in (("newtonad", newtonad.__all__),
                        ("newtonad.problems", newtonad.problems.__all__),
                        ("newtonad.solvers", newtonad.solvers.__all__),
                        ("newtonad.cli", newtonad.cli.__all__)):
        for name in names:
            obj = _resolve(f"{home}.{name}")
            if inspect.ismodule(obj):
                continue
            rules[f"{home}.{name}"] = "api"
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                classes.append((f"{home}.{name}", obj))
    for dotted, cls in classes:
        for name, _ in _class_members(cls):
            mirror = cls is newtonad.Var and _numpy_has(name, "ndarray")
            rules[f"{dotted}.{name}"] = "mirror" if mirror else "api"
    for name in dir(nnp):
        obj = getattr(nnp, name)
        if name.startswith("_") or inspect.ismodule(obj) or not callable(obj):
            continue
        rules[f"newtonad.numpy.{name}"] = "mirror" if _numpy_has(name) else "api"
    for name, obj in vars(nnp.linalg).items():
        if not name.startswith("_") and callable(obj):
            rules[f"newtonad.numpy.linalg.{name}"] = ("mirror" if _numpy_has(name, "linalg")
                                                      else "api")
    return rules


def _validate(dotted: str, rule: str) -> list[tuple[str, str]]:
    """The errors of ``dotted`` among the checks its rule selects."""
    obj = _resolve(dotted)
    # a property's docstring is its getter's; validate objects, not names: a name such
    # as newtonad.solvers.minimize would import the submodule, not the function
    target = obj.fget if isinstance(obj, property) else obj
    doc = numpydoc_validate.get_doc_object(target)
    result = numpydoc_validate.validate(doc)
    checks = CHECKS if rule == "api" else MIRROR_CHECKS
    errors = [(code, msg) for code, msg in result["errors"] if code in checks]
    summary = numpydoc_validate.Validator(doc).summary
    if rule == "mirror" and summary and not ORIGINAL.search(summary):
        errors.append((NAMES_ORIGINAL, "the summary line does not name the NumPy/SciPy "
                                       "function mirrored, e.g. 'Traced version of numpy.sum'"))
    return errors


# ---- expected failures ------------------------------------------------------------------------

# Names whose docstrings are still pending. Empty: every public name passes. The list and
# its strict check stay, so a docstring left for later is tracked here, never skipped
# silently (test_pending_docstrings_still_fail insists that a name leaves once it passes).
PENDING: frozenset[str] = frozenset()

RULES = public_names()
NAMES = sorted(RULES)


@pytest.mark.parametrize("name", [n for n in NAMES if n not in PENDING])
def test_docstring(name: str):
    errors = _validate(name, RULES[name])
    assert not errors, f"{name} ({RULES[name]} rule):\n" + "\n".join(
        f"  {code}: {msg}" for code, msg in errors)


def test_pending_docstrings_still_fail():
    """Expected failures, strictly: a pending name that now passes must leave PENDING.

    One test for the whole list rather than one xfail per name, so that ``make test``
    (``-ra``) does not print two hundred expected-failure lines.
    """
    passing = sorted(name for name in PENDING & set(RULES) if not _validate(name, RULES[name]))
    assert not passing, f"these docstrings now pass: remove them from PENDING: {passing}"


def test_pending_names_are_public():
    """A pending name that is no longer public leaves the list (it only shrinks)."""
    assert not PENDING - set(RULES), sorted(PENDING - set(RULES))


def test_the_walk_finds_the_public_api():
    """The walk reaches each part of the public API, under the rule the docs promise."""
    expected = {"newtonad.grad": "api", "newtonad.minimize": "api",
                "newtonad.Objective.hessp": "api", "newtonad.Var.backward": "api",
                "newtonad.Var.reshape": "mirror", "newtonad.numpy.sum": "mirror",
                "newtonad.numpy.linalg.solve": "mirror", "newtonad.numpy.stop_gradient": "api",
                "newtonad.problems.get": "api", "newtonad.problems.SizeRule.nearest": "api",
                "newtonad.solvers.HessianFallbackWarning": "api", "newtonad.cli.main": "api"}
    for name, rule in expected.items():
        assert RULES.get(name) == rule, name


def test_the_checks_catch_a_bad_docstring():
    """The validator reports what the rules forbid (a validator that passes all is no test)."""
    def undocumented(x, y):
        """returns things"""
        return x

    result = numpydoc_validate.validate(numpydoc_validate.get_doc_object(undocumented))
    codes = {code for code, _ in result["errors"]} & CHECKS
    assert {"SS02", "SS03", "PR01", "RT01", "EX01"} <= codes
