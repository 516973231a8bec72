# memflow — `make run` serves, `make test` tests; both set everything up first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run test test-slow test-harness harness-cli harness-dsh lint format bench clean

# torch first, as the local CPU build: any other torch pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "memflow needs Python 3.11 or newer")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/memflow serve

# Test workers (pytest-xdist, each with its own test database and live
# servers): two where the machine has two cores or more, not one per core, as
# each worker loads the model, migrations and servers again (docs/PERFORMANCE.md);
# `make test TEST_JOBS=0` runs the suite in one process.
TEST_JOBS ?= $(shell [ "$$(nproc 2>/dev/null || echo 1)" -ge 2 ] && echo 2 || echo 0)

test: install
	$(BIN)/pytest -m "not slow" --durations=15 -n $(TEST_JOBS) --dist load

test-slow: install
	$(BIN)/pytest -m slow

# The real Claude Code CLI that tests/harness drives (the version pinned in
# tests/harness/claude-code-version), from the npm registry into
# ~/.cache/memflow/claude-code/<version>; without it that suite skips.
harness-cli:
	tests/harness/install_claude_code.sh >/dev/null

# The real DeepSeek Harness that tests/dsh drives (the version pinned in
# tests/dsh/dsh-version), with the Node and pnpm it needs, from the npm
# registry into ~/.cache/memflow/dsh/<version>; kept there, so the second run
# only checks it. Without it that suite skips.
harness-dsh:
	tests/dsh/install_dsh.sh >/dev/null

test-harness: install harness-cli harness-dsh
	$(BIN)/pytest tests/harness tests/dsh

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) build *.egg-info
