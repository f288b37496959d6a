"""Packaging: pyproject metadata, one version, py.typed, the README's promises, a clean build.

The full install check (wheel and ``pip install .`` into a fresh virtual environment,
then a smoke test outside the checkout) is ``make check-install``, which CI runs; here
the wheel is built once, without installing it.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import newtonad

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


# ---- metadata -----------------------------------------------------------------------------

def test_license_is_an_spdx_expression_with_its_file():
    project = PYPROJECT["project"]
    assert project["license"] == "BSD-3-Clause"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("BSD 3-Clause License") and "Neither the name" in text


def test_build_backend_supports_spdx_licenses():
    requires = PYPROJECT["build-system"]["requires"]
    setuptools = [r for r in requires if r.startswith("setuptools")]
    assert setuptools and int(re.search(r">=(\d+)", setuptools[0]).group(1)) >= 77


def test_authors_classifiers_and_no_urls_outside_the_repository():
    project = PYPROJECT["project"]
    assert project["authors"] == [{"name": "newtonad developers"}]
    assert "Typing :: Typed" in project["classifiers"]
    assert "License ::" not in " ".join(project["classifiers"])  # PEP 639: the SPDX field says it
    for url in project.get("urls", {}).values():
        assert not re.match(r"[a-z]+://", url), url


def _version_assignments() -> list[str]:
    tree = ast.parse((ROOT / "newtonad" / "__init__.py").read_text(encoding="utf-8"))
    return [node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            and getattr(node.targets[0], "id", None) == "__version__"
            and isinstance(node.value, ast.Constant)]


def test_one_source_of_truth_for_the_version():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "newtonad.__version__"}
    assert _version_assignments() == [newtonad.__version__]  # a literal, read without import
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", newtonad.__version__)
    # the installed metadata (here the editable install) says the same
    assert importlib.metadata.version("newtonad") == newtonad.__version__


def test_py_typed_is_package_data():
    assert (ROOT / "newtonad" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["newtonad"]


# ---- the README ---------------------------------------------------------------------------

def _make_recipe(target: str) -> str:
    match = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", MAKEFILE, re.M)
    assert match, f"no make target {target!r}"
    return match.group(1)


def test_readme_commands_are_true():
    assert "\npip install .\n" in README
    assert ("make demo   # creates .venv, installs newtonad, runs `python -m newtonad demo`"
            in README)
    assert "-m newtonad demo" in _make_recipe("demo")
    assert "-m pytest" in _make_recipe("test")
    assert "sphinx" in _make_recipe("docs") and "docs/_build/html" in _make_recipe("docs")
    assert "make check-install" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "check_install.sh" in _make_recipe("check-install")


def test_make_test_lints_and_type_checks_first():
    # `make test` depends on `make lint`, which runs ruff and mypy with their
    # pyproject.toml configuration; the test extra installs both on a fresh machine
    assert re.search(r"^test: lint\b", MAKEFILE, re.M)
    lint = _make_recipe("lint")
    assert "-m ruff check newtonad tests benchmarks docs" in lint and "-m mypy" in lint
    assert "`ruff check` and `mypy`" in README
    test_extra = " ".join(PYPROJECT["project"]["optional-dependencies"]["test"])
    assert "ruff>=" in test_extra and "mypy>=" in test_extra
    tool = PYPROJECT["tool"]
    assert tool["ruff"]["line-length"] == 100
    assert set(tool["ruff"]["lint"]["select"]) >= {"E", "F", "W", "I", "B"}
    checked = set(tool["mypy"]["files"])
    assert {"newtonad/__init__.py", "newtonad/api.py", "newtonad/ad/program.py"} <= checked
    for path in checked:
        assert (ROOT / path).is_file(), path


def test_readme_says_what_the_demo_runs():
    from newtonad import problems
    from newtonad.cli import demo, methods

    count = len(problems.all_problems())
    assert f"every built-in problem ({count}, at their default sizes)" in README
    assert f"{count} test problems" in README
    assert len(methods.COMPARED_METHODS) == 4 and "four native methods" in README
    assert demo.DEMO_ENGINE == "numpy" and "on the NumPy reference engine" in README


def test_readme_points_at_nothing_outside_the_repository():
    assert not re.search(r"https?://", README)
    targets = re.findall(r"\]\(([^)]+)\)", README)
    assert "docs/_build/html/index.html" in targets  # what `make docs` builds
    for target in targets:
        assert not target.startswith(("/", "..")), target
        if not target.startswith("docs/_build/"):
            assert (ROOT / target).exists(), target


def test_readme_example_runs_and_prints(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert blocks and len(blocks[0].splitlines()) <= 12
    env = dict(os.environ, NEWTONAD_ENGINE="numpy")
    proc = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "[-215.6  -88. ]"  # the gradient the comment promises
    assert re.fullmatch(r"f = \d\.\de-\d\d after \d+ iterations, \d+ Hessian-vector products",
                        lines[1]), lines[1]
    assert float(lines[1].split()[2]) < 1e-10


# ---- the build ----------------------------------------------------------------------------

def test_wheel_builds_without_warnings_and_ships_py_typed_and_license(tmp_path):
    # build from a copy, so the checkout gets no build/ directory
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "newtonad", src / "newtonad",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--verbose",
                           "--wheel-dir", str(tmp_path / "dist"), str(src)],
                          capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert not re.search(r"DeprecationWarning|is deprecated|BuildBackendWarning", log), log
    (wheel,) = (tmp_path / "dist").glob("newtonad-*.whl")
    assert wheel.name.startswith(f"newtonad-{newtonad.__version__}-py3-none-any")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        info = f"newtonad-{newtonad.__version__}.dist-info"
        metadata = zf.read(f"{info}/METADATA").decode()
    assert "newtonad/py.typed" in names and f"{info}/licenses/LICENSE" in names
    assert "License-Expression: BSD-3-Clause" in metadata
    assert f"\nVersion: {newtonad.__version__}\n" in metadata
    assert "Author: newtonad developers" in metadata
