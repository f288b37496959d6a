# Each target works on a fresh clone: it creates .venv when missing and installs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test install clean docs bench

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m newtonad demo

test: $(STAMP)
	$(PY) -m pytest -q

docs: $(STAMP)
	$(PY) -m pip install --quiet -e ".[docs]"
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) -m asv run --python=same --quick --show-stderr
	$(PY) -m asv publish

clean:
	rm -rf $(VENV) build *.egg-info
