# gang-scheduler developer commands. Each target creates .venv and installs on first use:
# `run` the package alone (what a user needs for `simulate`), every other target its dev extras too.
# Each install has its own stamp, newer than pyproject.toml once done; the dev install also
# stamps the runtime one (it includes it), so `make run` after `make test` installs nothing,
# and `make test` after `make run` adds the dev extras to the same .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP     := $(VENV)/.installed-dev

.PHONY: run test chaos bench lint manifests clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(RUNTIME_STAMP)

run: $(RUNTIME_STAMP)  ## simulate the built-in example cluster
	$(BIN)/gang-scheduler simulate

test: $(DEV_STAMP)  ## the layering contract, then the whole test suite (unit, property, scenario, golden), one worker per core
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q -n auto

chaos: $(DEV_STAMP)  ## the chaos suite (tests/chaos, issue 12): `gang-scheduler run` killed, faulted, robbed, failed over, fed garbage
	$(BIN)/python -m pytest -q -m chaos tests/chaos

bench: $(DEV_STAMP)  ## solver, preemption, end-to-end, cache and simulate-input benchmarks (not part of `make test`; docs/benchmarks.md)
	$(BIN)/python -m tests.bench.bench_solver
	$(BIN)/python -m tests.bench.bench_preemption
	$(BIN)/python -m tests.bench.bench_e2e
	$(BIN)/python -m tests.bench.bench_e2e --case all
	$(BIN)/python -m tests.bench.bench_cache
	$(BIN)/python -m tests.bench.bench_simulate

lint: $(DEV_STAMP)  ## ruff, mypy and the import-linter layering contract (.importlinter)
	$(BIN)/ruff check scheduler tests
	$(BIN)/mypy scheduler
	$(BIN)/lint-imports --no-cache

manifests: $(DEV_STAMP)  ## render charts/gang-scheduler into deploy/gang-scheduler.yaml (plain manifests)
	$(BIN)/python -m tests.chart.helmchart

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .chaos-logs .chaos-report.json
