# Each target works on a fresh clone: it creates .venv when missing and installs.
# The test install includes the docs extra: tests/test_docs.py builds the site.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# numba compiles dominate the test suite: one pytest worker per core
TEST_WORKERS ?= auto

.PHONY: demo test lint install clean docs doctest bench bench-full bench-deps check-install

# pyproject.toml and the version line in newtonad/__init__.py make the installed metadata
$(STAMP): pyproject.toml newtonad/__init__.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,docs]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m newtonad demo

# lint and type-check first (configured in pyproject.toml): each stops the target on an error
test: lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal

lint: $(STAMP)
	$(PY) -m ruff check newtonad tests benchmarks docs
	$(PY) -m mypy

# `make docs` shows the examples' committed output (nothing runs, no network);
# `make doctest` runs every example again and fails where its output differs
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

doctest: $(STAMP)
	$(PY) -m sphinx -W --keep-going -b doctest docs docs/_build/doctest

# `make bench`: a quick subset (value+gradient, HVP frames, solver counts), each benchmark once
# (asv --quick); `make bench-full`: every benchmark with asv's repeats. Both record the
# results under the current commit (--set-commit-hash) and build the dashboard in
# .asv/html (`python -m asv preview` serves it). Durations: README.md.
BENCH_QUICK ?= ^(bench_frames\.(ValueAndGrad|HVPFrame)|bench_solvers\.Solvers)\.
ASV_RUN = $(PY) -m asv run --python=same --show-stderr --set-commit-hash=$$(git rev-parse HEAD)

bench-deps: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) -m asv machine --yes

bench: bench-deps
	$(ASV_RUN) --quick --bench '$(BENCH_QUICK)'
	$(PY) -m asv publish

bench-full: bench-deps
	$(ASV_RUN)
	$(PY) -m asv publish

# build the sdist and wheel, install into a fresh venv (the wheel, then `pip install .`),
# run .ci/smoke.py outside the checkout; see .ci/check_install.sh
check-install: $(STAMP)
	$(PY) -m pip install --quiet "build>=1.0"
	bash .ci/check_install.sh $(PY) $(PYTHON)

clean:
	rm -rf $(VENV) build *.egg-info
