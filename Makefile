# `make demo` and `make test` work on a fresh clone: they create .venv if absent and install.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test test-slow bench install clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,bench]"
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/arboretum fit --dataset hepatitis --time-limit 20

test: $(STAMP)
	$(PY) -m pytest -q -m "not slow" tests

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow tests

bench: $(STAMP)
	$(PY) benchmarks/maptree_reference.py

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
