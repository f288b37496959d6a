"""Sphinx configuration of the newtonad documentation (``make docs``).

Examples are ``sphinx.ext.doctest`` blocks (``testcode`` / ``testoutput``): the HTML
build shows the committed output and runs nothing; ``make doctest`` (``sphinx -b
doctest``) runs every example and fails when an output has changed. Figures are drawn
by matplotlib's ``plot`` directive, the performance figures from the benchmark results
saved in ``docs/_data``. Nothing is fetched while building: the intersphinx inventories
are in ``docs/_inventories`` and MathJax is copied into the site.
"""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))  # progdraw, traced
sys.path.insert(0, str(HERE))  # perf_plots

import newtonad  # noqa: E402

#: the engine the examples run on (the figures switch to NumPy; see plot_pre_code)
EXAMPLE_ENGINE = newtonad.settings.engine

project = "newtonad"
author = "the newtonad developers"
copyright = "2025, the newtonad developers"
release = newtonad.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 copied into _static: math renders offline
    "sphinx_copybutton",
    "matplotlib.sphinxext.plot_directive",
    "numpydoc",
    "traced",
    "machine_numbers",  # :options: +NUMBERS_VARY for one machine's long runs
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["newtonad.css"]
html_theme = "pydata_sphinx_theme"
html_title = f"newtonad {release}"
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
# The left sidebar lists a section's pages; single pages have none to list, so they get
# no sidebar (an empty "Section Navigation" box otherwise).
html_sidebars = {"**": ["sidebar-nav-bs"]}
html_sidebars.update({page: [] for page in (
    "index", "getting-started", "traced", "sharp-bits", "cli", "performance")})
html_show_sourcelink = False

# ---- autodoc, autosummary and numpydoc --------------------------------------------------------
autosummary_generate = True  # one page per public function and class, under api/
# no default options: the templates say what each page shows (a False here would still
# switch the option on)
autodoc_default_options: dict[str, object] = {}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc's Parameters sections say it
numpydoc_show_class_members = False  # the class template lists the members
numpydoc_class_members_toctree = False
# types in Parameters / Returns link into the Python, NumPy and SciPy references; a type
# not listed here stays plain text ("all": no warning for it)
numpydoc_xref_param_type = True
numpydoc_xref_ignore = "all"
numpydoc_xref_aliases = {
    "ndarray": "numpy.ndarray", "array_like": ":term:`numpy:array_like`",
    "dtype": "numpy.dtype", "callable": ":term:`python:callable`",
    "float": "float", "int": "int", "bool": "bool", "str": "str", "dict": "dict",
    "tuple": "tuple", "list": "list", "OptimizeResult": "scipy.optimize.OptimizeResult",
    "LinearOperator": "scipy.sparse.linalg.LinearOperator",
    "csr_array": "scipy.sparse.csr_array", "Bounds": "scipy.optimize.Bounds",
}

# every cross-reference must resolve (sphinx -W makes a dangling one an error)
nitpicky = True
# Internal modules and helpers that docstrings name for the curious: they are not part of
# the API reference, so they render as code without a link. Modules have no pages except
# newtonad.numpy and newtonad.problems, so a module reference elsewhere is internal.
nitpick_ignore_regex = [("py:mod", r"(?!newtonad\.numpy$|newtonad\.problems$).*")]
nitpick_ignore = [
    ("py:data", "DEFAULT_METHOD"), ("py:func", "remat.choose"), ("py:func", "_framed"),
    ("py:func", "simplify"), ("py:func", "newtonad.ad.trace.to_program"),
    # FiniteSum's docstring names it without its module
    ("py:class", "FiniteSumTimeout"),
    # the home of Var's NumPy methods, documented on Var's page
    ("py:class", "newtonad.ad.array_methods.ArrayMethods")]

# ---- intersphinx: local inventories, so the build needs no network ----------------------------
INVENTORIES = HERE / "_inventories"
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", str(INVENTORIES / "python.inv")),
    "numpy": ("https://numpy.org/doc/stable", str(INVENTORIES / "numpy.inv")),
    "scipy": ("https://docs.scipy.org/doc/scipy", str(INVENTORIES / "scipy.inv")),
}

# ---- examples: sphinx.ext.doctest -------------------------------------------------------------
doctest_default_flags = (doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
                         | doctest.IGNORE_EXCEPTION_DETAIL | doctest.DONT_ACCEPT_TRUE_FOR_1)
doctest_test_doctest_blocks = ""  # docstring examples: tests/test_doctests.py runs them
doctest_global_setup = f'''
import newtonad as _newtonad

_newtonad.settings.engine = {EXAMPLE_ENGINE!r}
import contextlib as _contextlib
import shlex as _shlex

import matplotlib as _matplotlib

_matplotlib.use("Agg")


def newtonad_cli(arguments, returncode=0):
    """Run ``newtonad ARGUMENTS`` in-process, print the session as a console shows it."""
    import io
    from newtonad.cli import main

    out = io.StringIO()
    with _contextlib.redirect_stdout(out), _contextlib.redirect_stderr(out):
        code = main(_shlex.split(arguments))
    print(f"$ newtonad {{arguments}}")
    print(out.getvalue().rstrip())
    if code != returncode:
        raise AssertionError(f"newtonad {{arguments}} exited with {{code}}, not {{returncode}}")
'''

# ---- figures: matplotlib's plot directive -----------------------------------------------------
plot_include_source = False
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]
plot_rcparams = {"savefig.bbox": "tight"}
# figures need values, not speed: the NumPy engine, so no kernel is compiled for a figure
plot_pre_code = """import numpy as np
import matplotlib.pyplot as plt
import newtonad

newtonad.settings.engine = "numpy"
"""

# ---- copy button: copies the code without prompts or output -----------------------------------
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_exclude = ".linenos, .gp, .go"
