# The two README commands:  `make demo` (set up + the tail-risk demo)  and  `make test` (set up + tests).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Where pip looks for torch: empty takes the configured index (on this project's machines, its local CPU wheel);
# on plain PyPI a Linux torch wheel is the CUDA build, so `make setup TORCH_INDEX=https://download.pytorch.org/whl/cpu`.
TORCH_INDEX ?=

.PHONY: setup demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	# The pinned torch first (the CPU build from this project's index, or TORCH_INDEX's): any other spec pulls a CUDA build.
	$(BIN)/pip install torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
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
