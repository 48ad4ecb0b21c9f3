# The two commands of the README:
#   make serve   set up, then run `aclstore serve` on the embedded default
#   make test    set up, then run lint, type checks and every test tier
# pytest runs on TEST_WORKERS pytest-xdist workers (2: the suite waits on processes more than it
# computes); the tests sharing the SparkSession stay on one of them (tests/conftest.py).
# TEST_WORKERS=0 runs every test in this one process.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
TEST_WORKERS ?= 2
STAMP  := $(VENV)/.installed

.PHONY: setup jars plugin browser serve test lint typecheck pytest unit clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found: install Python 3.11"; exit 2; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

jars: setup
	$(BIN)/python -m devtools jars

plugin: setup
	$(BIN)/python -m devtools plugin

# The web console's tests (tests/console) drive the distribution's Chromium through PyPI's
# playwright (executable_path, never `playwright install`): installed here when it is missing.
CHROMIUM := /usr/bin/chromium

browser:
	@test -x $(CHROMIUM) || { \
	  command -v apt-get >/dev/null || { echo "error: install Chromium at $(CHROMIUM) (the console's browser tests drive it)"; exit 2; }; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium || \
	    { $$SUDO apt-get update && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }; \
	}

serve: jars
	$(BIN)/aclstore serve $(ARGS)

lint: setup
	$(BIN)/ruff check .

typecheck: setup
	$(BIN)/mypy

pytest: jars plugin browser
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

test: lint typecheck pytest

unit: setup
	$(BIN)/pytest -m unit $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
