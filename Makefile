# The two commands a fresh machine needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV := $(BIN)/uv
STAMP := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.installed-runtime

.PHONY: demo test lint typecheck unit bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# uv (from PyPI, into the venv) installs the dependencies: several times faster than pip, and the
# venv's own pip stays for anyone who wants it.
$(UV): | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv

# `make demo` needs only the runtime dependencies; the test tools come with `make test`, and so does
# the `ray` extra, so the Ray runtime's tests (tests/ray/) run on a local cluster, and the `otel` extra,
# so the OpenTelemetry traces' tests run. The demo's modules
# compile on first import; the test venv compiles everything up front.
$(RUNTIME_STAMP): pyproject.toml | $(UV)
	$(UV) pip install --quiet --python $(BIN)/python -e .
	touch $(RUNTIME_STAMP)

$(STAMP): pyproject.toml | $(UV)
	$(UV) pip install --quiet --python $(BIN)/python --compile-bytecode -e '.[test,ray,otel]'
	touch $(RUNTIME_STAMP) $(STAMP)

demo: $(RUNTIME_STAMP)
	$(BIN)/corral demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
