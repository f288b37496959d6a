"""Sphinx configuration of the newtonad documentation (``make docs``)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))  # runblock, progdraw, traced
sys.path.insert(0, str(HERE))  # perf_plots

import newtonad  # noqa: E402

project = "newtonad"
author = "the newtonad developers"
copyright = "2025, the newtonad developers"
release = newtonad.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "runblock",
    "traced",
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
html_static_path = ["_static"]
html_css_files = ["runblock.css"]
html_theme = "pydata_sphinx_theme"
html_title = f"newtonad {release}"
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}
html_show_sourcelink = False

# ---- autodoc and numpydoc ---------------------------------------------------------------------
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc's Parameters sections say it
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

nitpicky = False
