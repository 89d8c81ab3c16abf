# Two entry points: `make demo` (the main job) and `make test` (the whole suite).
# Both create .venv and install everything on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CPU build of torch; on a GPU machine: make TORCH_SPEC="torch" install
TORCH_SPEC ?= torch==2.13.0

.PHONY: install demo test test-fast sft notebooks lab clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH_SPEC)"
	$(BIN)/pip install -q -e ".[test,notebook]"
	touch $@

demo: install  ## the default algorithm comparison on the shipped tiny model
	$(BIN)/rlalgos compare --algos reinforce,ppo,grpo,dapo --steps 40 --eval-every 10 --out-dir runs/demo

test: install  ## unit tests, smoke runs, learning tests and every notebook in fast mode
	RLALGOS_FAST=1 $(BIN)/pytest -q -p no:cacheprovider --nbmake --nbmake-timeout=900 tests notebooks

test-fast: install  ## skip the minutes-long learning tests
	RLALGOS_FAST=1 $(BIN)/pytest -q -m "not slow" --nbmake tests notebooks

sft: install  ## rebuild data/base_model with its fixed seed
	$(BIN)/rlalgos sft

lab: install  ## open the notebooks; read them in order 00 -> 06
	$(BIN)/jupyter lab notebooks/

notebooks: install  ## re-run every notebook in full mode and keep the outputs (the committed figures)
	cd notebooks && for nb in 0*.ipynb; do ../$(BIN)/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=3600 $$nb || exit 1; done

clean:
	rm -rf runs $(VENV) .pytest_cache
