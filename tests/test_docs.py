"""The documentation builds with warnings as errors, offline, from its committed parts.

Skipped when Sphinx (or an extension the docs need) is not installed: ``make test``
installs the ``docs`` extra. The HTML build runs no example and times nothing (the
examples' output is part of the page sources; ``make doctest`` runs them again), so it
takes seconds plus the figures: matplotlib's plot directive draws them, the performance
figures from the results saved in ``docs/_data``.
"""

from __future__ import annotations

import html as html_lib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NEEDED = ("sphinx", "numpydoc", "pydata_sphinx_theme", "matplotlib", "sphinx_copybutton",
          "sphinx-mathjax-offline")
missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]

pytestmark = pytest.mark.skipif(
    bool(missing), reason=f"docs build needs {', '.join(missing)}: pip install '.[docs]'")

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


def _text(html: str) -> str:
    """The text of an HTML page: tags dropped, entities decoded, spaces collapsed."""
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_every_page_is_built(built):
    for page in PAGES:
        assert (built / f"{page}.html").exists(), page


def test_one_api_page_per_public_name(built):
    """autosummary gives each public function and class of ``newtonad`` its own page."""
    import types

    import newtonad

    for name in newtonad.__all__:
        if isinstance(getattr(newtonad, name), types.ModuleType):
            continue
        page = built / "generated" / f"newtonad.{name}.html"
        assert page.exists(), name
        assert f'id="newtonad.{name}"' in page.read_text(), name
    api = (built / "api.html").read_text()
    assert "generated/newtonad.minimize.html" in api and "generated/newtonad.grad.html" in api


def test_inherited_members_render(built):
    """Objective's Hessian methods come from a base class and are documented on its page."""
    page = (built / "generated" / "newtonad.Objective.html").read_text()
    for member in ("hess", "sparse_hess", "hess_sparsity", "hessp", "value_and_grad"):
        assert f'id="newtonad.Objective.{member}"' in page, member


def test_cross_references_reach_python_numpy_and_scipy(built):
    """intersphinx turns names of the three projects into links into their references."""
    pages = " ".join(p.read_text() for p in built.rglob("*.html"))
    for base in ("https://docs.python.org/3/", "https://numpy.org/doc/stable/",
                 "https://docs.scipy.org/doc/scipy/"):
        assert f'href="{base}' in pages, base


def test_inventories_are_in_the_repository():
    """The build reads every intersphinx inventory from docs/, so it needs no network."""
    sys.path.insert(0, str(DOCS))
    try:
        import conf
    finally:
        sys.path.remove(str(DOCS))
    for name, (_, inventory) in conf.intersphinx_mapping.items():
        assert Path(inventory).is_file() and Path(inventory).is_relative_to(DOCS), name
        assert Path(inventory).read_bytes().startswith(b"# Sphinx inventory version 2"), name
    assert conf.nitpicky


def test_pages_load_nothing_from_the_network(built):
    """No script, style sheet or image comes from elsewhere; MathJax is in the site."""
    remote = re.compile(r"<(?:script|link|img)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.I)
    for page in built.rglob("*.html"):
        found = remote.search(page.read_text())
        assert found is None, (page.relative_to(built), found and found.group(0))
    assert (built / "_static" / "mathjax" / "tex-chtml.js").is_file()
    modes = (built / "explanations" / "modes.html").read_text()
    assert "_static/mathjax/tex-chtml.js" in modes and r"\(" in modes


def test_examples_show_their_output(built):
    """Code and what it printed are on the pages, and the figures were drawn."""
    start = (built / "getting-started.html").read_text()
    assert "Optimization terminated successfully" in _text(start)
    index = _text((built / "index.html").read_text())
    assert "f = 1.6e-12 after 43 iterations, 55 Hessian-vector products" in index
    programs = (built / "explanations" / "programs.html").read_text()
    assert "reduce_sum" in programs and "digraph program" in programs
    images = {p.name for p in (built / "_images").glob("*.png")}
    assert len(images) >= 9, images
    performance = (built / "performance.html").read_text()
    assert performance.count('class="plot-directive"') >= 2
    assert "copybutton" in start  # the copy button's script is on every page


def test_wide_pages_have_no_empty_sidebar(built):
    """Single pages have no left sidebar, so no empty "Section Navigation" box."""
    for page in ("index", "getting-started", "cli", "performance"):
        text = (built / f"{page}.html").read_text()
        assert "Section Navigation" not in text, page
    assert "Section Navigation" in (built / "tutorials" / "rosenbrock.html").read_text()


def test_saved_results_say_where_and_when():
    """Every results file behind a performance figure names its machine and its date."""
    sys.path.insert(0, str(DOCS))
    try:
        import perf_plots
    finally:
        sys.path.remove(str(DOCS))
    for name in ("frames", "solvers", "compare"):
        saved = perf_plots.load(name)
        meta = saved.get("_meta", saved)
        assert re.match(r"\d{4}-\d{2}-\d{2}", meta["date"]), name
        assert meta["machine"]["cpu"] and meta["machine"]["cores"], name
        assert meta["date"] in perf_plots.caption(meta)
    frames = perf_plots.frames(perf_plots.load("frames"))
    assert {m.mode for m in frames} >= {"jvp", "vjp", "hvp", "linearized-hvp"}


def test_readme_example_prints_what_the_readme_says(capsys):
    """The README's example, run as it stands, prints the lines the README shows."""
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"## Example\n.*?```python\n(.*?)```", readme, re.S).group(1)
    shown = re.search(r"It prints the gradient at the start, then\n\n```\n(.*?)```",
                      readme, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "[-215.6  -88. ]"
    assert printed[1:] == shown.strip().splitlines()


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
    # methods of Var's ArrayMethods mixin are listed, not only Var's own
    assert all(f"x.{name}" in page for name in ("reshape", "sum", "T", "astype", "backward"))
    assert traced.is_refusal(tables["FUNCTIONS"][np.fft.fft])
    assert not traced.is_refusal(tables["FUNCTIONS"][np.sum])


def test_numpy_evaluated_ufuncs_are_marked():
    """The ufunc table's engine column reads the primitives' numpy_only flag."""
    traced = _traced_module()
    engine = {row[0]: row[2] for row in traced.ufunc_rows()}
    assert engine["``scipy.special.erfinv``"] == "NumPy / SciPy"
    assert engine["``numpy.sin``"] == "compiled"
    assert engine["``scipy.special.erf``"] == "compiled"


def test_saved_results_are_json():
    for path in (DOCS / "_data").glob("*.json"):
        json.loads(path.read_text())
