# gang-scheduler developer commands (`make help` lists them). Each target creates .venv and installs on
# first use: `run` the package alone (what a user needs for `simulate`), every other target its dev extras
# too. The runtime dependencies come from requirements.lock, versions and hashes, as the container image
# installs them, so the tests run what the image ships; the dev extras are added beside them. Each install
# has its own stamp, newer than pyproject.toml and the lock once done, so `make run` after `make test`
# installs nothing, and `make test` after `make run` adds the dev extras to the same .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
LOCK   := requirements.lock
RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP     := $(VENV)/.installed-dev

.DEFAULT_GOAL := help
.PHONY: help run test chaos bench lint manifests lock clean venv-check

help:  ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  make %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# A .venv made by another Python (an older one, or one since removed) is refused: installing into it
# would mix two interpreters' packages.
venv-check:
	@if [ -d $(VENV) ]; then \
	  want=$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])') || exit 1; \
	  have=$$($(BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) \
	    || { echo "error: $(VENV) has no working Python (its interpreter is gone): run \`make clean\`" >&2; exit 1; }; \
	  [ "$$have" = "$$want" ] \
	    || { echo "error: $(VENV) was made by Python $$have, $(PYTHON) is Python $$want: run \`make clean\`" >&2; exit 1; }; \
	fi

$(BIN)/python: | venv-check
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUNTIME_STAMP): pyproject.toml $(LOCK) | venv-check $(BIN)/python
	$(BIN)/python -m pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

$(DEV_STAMP): $(RUNTIME_STAMP) | venv-check
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

run: $(RUNTIME_STAMP) | venv-check  ## simulate the built-in example cluster
	$(BIN)/gang-scheduler simulate

test: $(DEV_STAMP) | venv-check  ## the layering contract, then every test but the chaos suite (unit, property, scenario, golden, integration, chart), one worker per core
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q -n auto

chaos: $(DEV_STAMP) | venv-check  ## the chaos suite (tests/chaos): `gang-scheduler run` killed, faulted, robbed, failed over, fed garbage
	$(BIN)/python -m pytest -q -m chaos tests/chaos

bench: $(DEV_STAMP) | venv-check  ## solver, preemption, end-to-end, cache and simulate-input benchmarks (not part of `make test`; docs/benchmarks.md)
	$(BIN)/python -m tests.bench.bench_solver
	$(BIN)/python -m tests.bench.bench_preemption
	$(BIN)/python -m tests.bench.bench_e2e
	$(BIN)/python -m tests.bench.bench_e2e --case all
	$(BIN)/python -m tests.bench.bench_cache
	$(BIN)/python -m tests.bench.bench_simulate

lint: $(DEV_STAMP) | venv-check  ## ruff, mypy and the import-linter layering contract (.importlinter)
	$(BIN)/ruff check scheduler tests
	$(BIN)/mypy scheduler
	$(BIN)/lint-imports --no-cache

manifests: $(DEV_STAMP) | venv-check  ## render charts/gang-scheduler into deploy/gang-scheduler.yaml (plain manifests)
	$(BIN)/python -m tests.chart.helmchart

# pip-compile (pip-tools, in a venv of its own) resolves pyproject.toml's runtime dependencies constrained to
# what .venv has, the versions the tests ran with, and writes each with the hashes of its release's files.
# To move a dependency on: install the newer version in .venv, run `make test`, then `make lock`.
LOCK_TOOLS := $(VENV)/lock-tools
lock: $(DEV_STAMP) | venv-check  ## rewrite requirements.lock (versions and hashes) from the runtime dependencies installed in .venv
	test -x $(LOCK_TOOLS)/bin/pip-compile || { $(PYTHON) -m venv $(LOCK_TOOLS) && \
	  $(LOCK_TOOLS)/bin/python -m pip install --quiet 'pip-tools>=7.4'; }
	$(BIN)/python -m pip freeze --exclude-editable > $(VENV)/tested.txt
	CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_TOOLS)/bin/pip-compile --quiet --generate-hashes --strip-extras \
	  --no-annotate --no-emit-index-url --no-emit-find-links --constraint $(VENV)/tested.txt \
	  --output-file $(LOCK) pyproject.toml

clean:  ## remove .venv, the build metadata (*.egg-info) and the test and lint caches
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis .chaos-logs .chaos-report.json
