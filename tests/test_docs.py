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
