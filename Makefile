# gang-scheduler developer commands. Each target creates .venv and installs on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test bench lint manifests clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)  ## simulate the built-in example cluster
	$(BIN)/gang-scheduler simulate

test: $(STAMP)  ## the whole test suite (unit, property, scenario, golden)
	$(BIN)/python -m pytest -q

bench: $(STAMP)  ## solver and end-to-end benchmarks (not part of `make test`)
	$(BIN)/python -m tests.bench.bench_solver
	$(BIN)/python -m tests.bench.bench_e2e

lint: $(STAMP)  ## ruff + mypy on scheduler/
	$(BIN)/ruff check scheduler tests
	$(BIN)/mypy scheduler

manifests: $(STAMP)  ## render charts/gang-scheduler into deploy/gang-scheduler.yaml (plain manifests)
	$(BIN)/python -m tests.chart.helmchart

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
