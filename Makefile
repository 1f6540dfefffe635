# The commands a fresh machine needs: `make demo`, `make test`, `make install`.
# Every target installs from uv.lock (`uv sync --locked`): a lock that no longer matches pyproject.toml
# fails the target instead of resolving anew. Raise the lock on purpose: `make latest` (the suite
# against the newest allowed versions, in a throw-away venv), then `make lock-upgrade`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# uv itself lives in its own small venv (.uv/), from PyPI: `uv sync` makes .venv exactly the lock,
# so uv cannot live inside it.
UV_HOME := .uv
UV := $(UV_HOME)/bin/uv
export UV_PROJECT_ENVIRONMENT := $(VENV)
# The extras the suite needs: tests/ray/ runs on a local Ray cluster, tests of traces need otel, the
# MCP server's tests need the MCP SDK (also in `test`).
TEST_EXTRAS := --extra test --extra ray --extra otel --extra mcp
ALL_EXTRAS := mcp,ray,otel

.PHONY: sync-test demo test lint typecheck unit bench install latest lock lock-upgrade lock-check wheel clean

$(UV):
	PYTHON=$(PYTHON) bash -c 'source .ci/_uv.sh'

# `make demo` needs only the runtime dependencies; `make test` syncs the same venv with the test
# extras (and compiles bytecode up front). Each sync is a no-op when the venv already matches.
demo: $(UV)
	$(UV) sync --quiet --locked --python $(PYTHON)
	$(BIN)/corral demo
	@echo
	@echo "corral is in $(BIN)/corral. To run it as 'corral' from anywhere:"
	@echo "  make install        # uv tool install: corral with every extra on your PATH (~/.local/bin)"
	@echo "  or: export PATH=\"$(abspath $(BIN)):\$$PATH\""

sync-test: $(UV)
	$(UV) sync --quiet --locked --python $(PYTHON) --compile-bytecode $(TEST_EXTRAS)

lint: sync-test
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src

typecheck: sync-test
	$(BIN)/mypy

unit: sync-test
	$(BIN)/python -m pytest -q

test: lint typecheck unit

bench: sync-test
	$(BIN)/python benchmarks/run_all.py

# corral with every extra, as a uv tool, its dependencies pinned to uv.lock's versions.
install: $(UV)
	$(UV) export --quiet --locked --no-hashes --no-emit-project --all-extras --no-dev -o $(UV_HOME)/pins.txt
	$(UV) tool install --force --python $(PYTHON) --constraints $(UV_HOME)/pins.txt '.[$(ALL_EXTRAS)]'
	@$(UV) tool dir --bin | xargs -I{} echo "corral installed in {}: make sure it is on your PATH (uv tool update-shell adds it)"

# A wheel and an sdist in dist/.
wheel: $(UV)
	$(UV) build --quiet

# The whole check (lint, types, suite) against the newest versions pyproject.toml allows, in a
# throw-away venv; the lock is not touched. Run before `make lock-upgrade`.
latest: $(UV)
	.ci/latest

lock-check: $(UV)
	$(UV) lock --check

lock: $(UV)
	$(UV) lock

lock-upgrade: $(UV)
	$(UV) lock --upgrade

clean:
	rm -rf $(VENV) $(UV_HOME) build dist .pytest_cache .mypy_cache .ruff_cache
