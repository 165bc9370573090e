# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test install bench lint clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# A CPU build that lies on disk; an open range would pull a multi-GB CUDA build.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	WANDB_MODE=offline $(BIN)/rlkit demo

test: $(STAMP)
	WANDB_MODE=offline $(BIN)/python -m pytest -q

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check rlkit envs tests benchmarks experiments

clean:
	rm -rf $(VENV) runs wandb
