# coscheduler's tasks. `make test` is what CI runs; `make demo` is the main job.
# Every target installs what it needs into .venv first, from pyproject.toml.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PY_SOURCES := coscheduler tests e2e bench scripts

.PHONY: help install lint unit cluster-build browser bench-smoke test demo demo-down clean

help:
	@echo "make demo     a sandbox cluster with coscheduler placing real gangs (left running)"
	@echo "make demo-down  stop the sandbox"
	@echo "make test     lint, type-check, run every test on Kubernetes 1.37, the version-sensitive ones on 1.35"
	@echo "              (builds both local control planes on first use)"
	@echo "make unit     lint and run the unit and property tests only (not the slow wheel test)"
	@echo "make lint     ruff, mypy --strict and import-linter"
	@echo "make clean    remove the virtualenv and caches of this checkout"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $@

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check $(PY_SOURCES)
	$(BIN)/ruff format --check $(PY_SOURCES)
	$(BIN)/mypy coscheduler e2e bench tests scripts
	$(BIN)/lint-imports

unit: lint
	$(BIN)/pytest tests -m "not slow"

# Kubernetes releases `make test` runs on (e2e/versions.py): every test on the
# newest (the default), the version-sensitive ones on the oldest supported.
OLDEST_KUBERNETES := 1.35

# The local control plane is built from Go modules the first time (minutes,
# with progress), then taken from ~/.cache/coscheduler: both releases the tests use.
cluster-build: $(STAMP)
	$(BIN)/python -m e2e.cluster build
	COSCHEDULER_KUBERNETES=$(OLDEST_KUBERNETES) $(BIN)/python -m e2e.cluster build

# The dashboard's browser tests (e2e/browser.py) drive Debian's Chromium,
# installed here once (as root, as on CI); Playwright only drives it.
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }

# A few nodes, a few gangs, every peer of the benchmark (about 3 minutes
# once built): keeps the runner working. Full suites run by hand (bench/README.md).
bench-smoke: $(STAMP)
	$(BIN)/python -m bench run --suite smoke

test: lint cluster-build browser
	$(BIN)/pytest
	COSCHEDULER_E2E_JOB_WORKLOADS=1 $(BIN)/pytest -m job_workloads e2e/tests
	COSCHEDULER_KUBERNETES=$(OLDEST_KUBERNETES) $(BIN)/pytest -m version_sensitive e2e/tests
	$(MAKE) bench-smoke

demo: $(STAMP)
	$(BIN)/python -m e2e.demo up

demo-down: $(STAMP)
	$(BIN)/python -m e2e.demo down

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
