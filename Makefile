# The two README commands:  `make demo` (set up + the tail-risk demo)  and  `make test` (set up + tests).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	# The pinned CPU build first: any other torch spec would pull a multi-GB CUDA build.
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/ordergrad-rl reproduce tailrisk --out results/tailrisk --tensorboard runs/tailrisk

test: $(STAMP)
	$(BIN)/lint-imports
	# One worker per core (tests of the Ray sweep share one worker: see tests/conftest.py).
	$(BIN)/python -m pytest -q -n auto --dist loadgroup

bench: $(STAMP)
	$(BIN)/python scripts/bench_core.py

clean:
	rm -rf $(VENV) results runs
