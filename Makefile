# `make demo` and `make test` work on a fresh clone: they create .venv if absent and install.
# `make demo` installs only what the demo needs (the package and its plotting extra); `make test`
# (and test-slow, bench, install) installs the test, benchmark and peer extras too, and the
# polytope extra (torch==2.13.0, the local CPU build) so that the polytope trees are tested.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
HASH   := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
DEMO_STAMP := $(VENV)/.installed-demo-$(HASH)
TEST_STAMP := $(VENV)/.installed-test-$(HASH)

.PHONY: demo test test-slow bench install clean gosdt-venv

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Installing for the demo also compiles the demo's numba kernels into numba's cache (once per
# machine, about 7 s; `arboretum compile` prints the time), so the demo itself starts at once.
$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[plot]"
	$(VENV)/bin/arboretum compile maptree-classification
	rm -f $(VENV)/.installed-demo-*
	touch $@

$(TEST_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[plot,test,bench,peers,polytope]"
	rm -f $(VENV)/.installed-*
	touch $@ $(DEMO_STAMP)

install: $(TEST_STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/arboretum fit --dataset hepatitis --time-limit 20

test: $(TEST_STAMP) gosdt-venv
	$(PY) -m pytest -q -m "not slow" --doctest-modules tests src/arboretum

test-slow: $(TEST_STAMP)
	$(PY) -m pytest -q -m slow tests

bench: $(TEST_STAMP)
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
