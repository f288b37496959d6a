"""The documentation builds with warnings as errors, and its examples really ran.

Skipped when Sphinx (or an extension the docs need) is not installed: ``make test``
installs only the ``test`` extra; ``make docs`` installs the ``docs`` extra and builds
the same way. The build executes every example of every page (about half a minute).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
NEEDED = ("sphinx", "numpydoc", "pydata_sphinx_theme", "matplotlib")
missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]

pytestmark = pytest.mark.skipif(
    bool(missing), reason=f"docs build needs {', '.join(missing)}: pip install -e '.[docs]'")

PAGES = ["index", "getting-started", "tutorials/rosenbrock", "tutorials/logistic",
         "tutorials/grid-energy", "tutorials/scipy", "tutorials/constraints",
         "howto/index", "howto/fit-with-data", "howto/scipy-callbacks",
         "howto/choose-method", "howto/iteration-table", "howto/asv", "howto/loops",
         "howto/finite-sum", "tutorials/finite_sum", "traced", "sharp-bits",
         "explanations/programs", "explanations/frames", "explanations/modes",
         "explanations/transforms", "cli", "performance", "api"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
         str(DOCS), str(out)],
        capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def test_every_page_is_built(built):
    for page in PAGES:
        assert (built / f"{page}.html").exists(), page


def test_examples_ran(built):
    """Outputs of executed code are on the pages, and the figures were drawn."""
    start = (built / "getting-started.html").read_text()
    assert "runblock-output" in start and "Optimization terminated successfully" in start
    programs = (built / "explanations" / "programs.html").read_text()
    assert "reduce_sum" in programs and "digraph program" in programs
    images = list((built / "_images").glob("*.png"))
    assert len(images) >= 6
    api = (built / "api.html").read_text()
    for name in ("newtonad.grad", "newtonad.hvp", "newtonad.Objective", "newtonad.minimize"):
        assert f'id="{name}"' in api, name
    for name in ("newtonad.problems.SizeRule", "newtonad.solvers.HessianFallbackWarning",
                 "newtonad.cli.main"):
        assert f'id="{name}"' in api, name


def _text(html: str) -> str:
    """The text of an HTML page: tags dropped, entities decoded, spaces collapsed."""
    import html as html_lib
    import re

    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _traced_module():
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import traced
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    return traced


def test_traced_page_lists_every_dispatch_entry(built):
    """"What newtonad traces" has one row per entry of the live dispatch tables."""
    import numpy as np

    traced = _traced_module()
    tables = traced.dispatch_tables()
    page = _text((built / "traced.html").read_text())
    names = [traced.public_name(fn) for fn in tables["FUNCTIONS"]]
    names += list(tables["SCIPY_FUNCTIONS"]) + [f"{name}" for name in tables["UFUNCS"]]
    missing = [name for name in names if name not in page]
    assert not missing, missing
    # keywords come from the implementations' signatures
    assert "numpy.sum a, axis=None, dtype=None, keepdims=False, initial=None, where=None" in page
    assert "scipy.special.logsumexp" in page and "numpy.linalg.slogdet" in page
    assert traced.is_refusal(tables["FUNCTIONS"][np.fft.fft])
    assert not traced.is_refusal(tables["FUNCTIONS"][np.sum])


def test_numpy_evaluated_ufuncs_are_marked():
    """The ufunc table's engine column reads the primitives' numpy_only flag."""
    traced = _traced_module()
    engine = {row[0]: row[2] for row in traced.ufunc_rows()}
    assert engine["``scipy.special.erfinv``"] == "NumPy / SciPy"
    assert engine["``numpy.sin``"] == "compiled"
    assert engine["``scipy.special.erf``"] == "compiled"
