# `make demo` and `make test` work on a fresh clone: they create .venv if absent and install.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test test-slow bench install clean gosdt-venv

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,bench,peers]"
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/arboretum fit --dataset hepatitis --time-limit 20

test: $(STAMP) gosdt-venv
	$(PY) -m pytest -q -m "not slow" --doctest-modules tests src/arboretum

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow tests

bench: $(STAMP)
	$(PY) benchmarks/maptree_reference.py

# GOSDT 1.0.4 crashes with scikit-learn >= 1.8, so it lives in its own venv;
# benchmarks/peers.py runs it through benchmarks/gosdt_worker.py.
GOSDT_VENV ?= .venv-gosdt
gosdt-venv: $(GOSDT_VENV)/.installed
$(GOSDT_VENV)/.installed:
	test -x $(GOSDT_VENV)/bin/python || $(PYTHON) -m venv $(GOSDT_VENV)
	$(GOSDT_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(GOSDT_VENV)/bin/python -m pip install --quiet "gosdt==1.0.4" "scikit-learn<1.8" numpy pandas
	touch $@

clean:
	rm -rf $(VENV) $(GOSDT_VENV) build src/*.egg-info .pytest_cache
