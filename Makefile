# Two entry points: `make demo` (the main job) and `make test` (the whole suite).
# Both create .venv and install everything on first use.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CPU build of torch; on a GPU machine: make TORCH_SPEC="torch" install
TORCH_SPEC ?= torch==2.13.0
# Where pip finds torch; empty = pip's own settings (a local wheel, or PyPI, whose Linux
# torch is the multi-GB CUDA build). With no local wheel, get the CPU build with
#   make install TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
TORCH_INDEX_URL ?=
# The lowest transformers pyproject.toml allows (make test-transformers-range runs it)
TRANSFORMERS_LOWEST ?= 5.0.0
# pytest-xdist workers for make test, one thread each (auto: one per core)
TEST_WORKERS ?= auto
export TORCH_SPEC TORCH_INDEX_URL  # tests/test_install.py installs torch the same way

.PHONY: help install demo lint test docs browser test-fast test-transformers-range sft trap-model notebooks student lab bench bench-step bench-scaling bench-trl bench-learning bench-mechanisms bench-regimes bench-sweep bench-kl bench-profile bench-spread bench-memory gpu-check clean

help:  ## list the targets and what each does
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-zA-Z_-]+):.*## /\1\t/' | awk -F'\t' '{ printf "  %-22s %s\n", $$1, $$2 }'

install: $(VENV)/.installed  ## create .venv and install the package with every extra (make demo and make test do it first)

# The install compiles every .py to .pyc (pip does by default, uv with --compile-bytecode). These machines
# set PYTHONDONTWRITEBYTECODE=1, so nothing else would ever write them, and every interpreter start of the
# suite would compile torch and transformers from source (measured: make test 29 min 52 s against ~18).
$(VENV)/.bootstrap:  ## the venv with pip and pytest only: enough for the install test, which make test starts before the rest
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "pytest>=8"
	touch $@

# torch with pip (it reads pip's settings: a local wheel, a find-links folder, a cap); the rest with uv, which
# resolves, downloads and compiles in parallel (measured on 2 cores, fresh venv: 24 s against ~2 min 25 s with pip).
# uv keeps the installed torch: 2.13.0 satisfies pyproject's range.
$(VENV)/.installed: pyproject.toml $(VENV)/.bootstrap
	$(BIN)/pip install -q "$(TORCH_SPEC)" $(if $(TORCH_INDEX_URL),--index-url "$(TORCH_INDEX_URL)")
	$(BIN)/pip install -q "uv>=0.5"
	$(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode -e ".[test,notebook,bench,lora,tensorboard,docs]"
	# verl's packaged trainer config, for the export tests (its own dependencies pin an older transformers: not installed)
	$(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode --no-deps "verl==0.9.1"
	touch $@

lint: install  ## ruff: the linter and the formatter's check (ruff format . fixes the second)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

demo: install  ## the default algorithm comparison on the shipped tiny model
	$(BIN)/rlalgos compare --algos reinforce,ppo,grpo,dapo --steps 40 --eval-every 10 --out-dir runs/demo --overwrite

test: $(VENV)/.bootstrap  ## ruff (make lint), then unit tests, smoke runs, learning tests and every notebook in fast mode on TEST_WORKERS workers, and beside them the install test (a fresh venv) at the lowest transformers allowed
	@# The install test is mostly pip unpacking wheels into a fresh venv, on one core: it starts first,
	@# beside the install of .venv (pip, one core too), and goes on beside the suite; its output is
	@# printed at the end, and either failing fails make test. It needs only pytest (no conftest).
	RLALGOS_TRANSFORMERS=$(TRANSFORMERS_LOWEST) OMP_NUM_THREADS=1 $(BIN)/pytest -q -p no:cacheprovider --noconftest tests/test_install.py > $(VENV)/install_test.log 2>&1 & install_test=$$!; \
	$(MAKE) --no-print-directory -j2 install browser || { kill $$install_test; exit 1; }; \
	$(MAKE) --no-print-directory lint || { kill $$install_test; exit 1; }; \
	RLALGOS_FAST=1 OMP_NUM_THREADS=1 $(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist worksteal --durations=40 --nbmake --nbmake-timeout=900 --ignore=tests/test_install.py tests notebooks; suite=$$?; \
	wait $$install_test; install=$$?; echo "--- the install test (tests/test_install.py, transformers $(TRANSFORMERS_LOWEST)):"; cat $(VENV)/install_test.log; \
	exit $$(( suite || install ))

browser:  ## Debian's chromium for the book's browser test (tests/test_book.py skips without it); never fails
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium) || echo "chromium not installed: the book's browser test will skip"

docs: install  ## the book: docs/ and the notebooks with their committed outputs (never executed) -> build/book
	$(BIN)/python docs/build_book.py --site-dir build/book
	@echo "view it: $(BIN)/python -m http.server -d build/book  (then open http://localhost:8000)"

test-fast: install  ## skip the minutes-long learning tests
	RLALGOS_FAST=1 OMP_NUM_THREADS=1 $(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist worksteal -m "not slow" --nbmake --ignore=tests/test_install.py tests notebooks

test-transformers-range: install  ## the install test at the lowest transformers allowed (plus the fast tests there), then at the newest (~6 min on 2 cores)
	RLALGOS_TRANSFORMERS=$(TRANSFORMERS_LOWEST) $(BIN)/pytest -q -p no:cacheprovider tests/test_install.py
	$(BIN)/pytest -q -p no:cacheprovider tests/test_install.py

sft: install  ## rebuild data/base_model with its fixed seed
	$(BIN)/rlalgos sft --overwrite

trap-model: install  ## rebuild data/trap_model (the exploration regime's base model, notebook 09) with its fixed seed
	$(BIN)/rlalgos trap-model --overwrite

lab: install  ## open the notebooks; read them in order 00 -> 13 (12 and 13 may follow 05)
	$(BIN)/jupyter lab notebooks/

notebooks: install  ## re-run every notebook in full mode and keep the outputs (the committed figures)
	cd notebooks && for nb in [0-9][0-9]*_*.ipynb; do ../$(BIN)/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=3600 $$nb || exit 1; done
	$(BIN)/python docs/build_book.py --settle notebooks/[0-9][0-9]*_*.ipynb  # saved progress bars show where they ended, not 0%

student: install  ## the student edition for a class: every notebook without its worked solutions, exercise outputs cleared -> build/student
	$(BIN)/rlalgos student build/student --overwrite

# Benchmarks: each prints JSON lines and keeps them in runs/bench/ (see README, "Speed")
bench: bench-step bench-scaling bench-trl bench-learning  ## all four benchmarks (~40 min on 2 cores)

bench-step: install  ## seconds per step per algorithm, split by stage, model share, peak memory
	@mkdir -p runs/bench
	$(BIN)/python benchmarks/step_throughput.py | tee runs/bench/step_throughput.jsonl

bench-scaling: install  ## GRPO step time against G, completion length and model width
	@mkdir -p runs/bench
	$(BIN)/python benchmarks/scaling.py | tee runs/bench/scaling.jsonl

bench-memory: install  ## peak memory of the log-prob passes at Qwen's vocabulary, unchunked vs logits_chunk 256/1024 (~15 min on 2 cores, at most ~5 GB a process)
	@mkdir -p runs/bench
	$(BIN)/python benchmarks/memory.py | tee runs/bench/memory.jsonl

bench-trl: install  ## rlalgos GRPO against TRL's GRPOTrainer on the same job, alternating
	@mkdir -p runs/bench
	$(BIN)/python benchmarks/trl_side_by_side.py --rounds 3 --steps 6 --learn-steps 40 | tee runs/bench/trl_side_by_side.jsonl

bench-learning: install  ## steps / seconds / samples to reach a test accuracy, 4 algorithms x 3 seeds
	@mkdir -p runs/bench
	$(BIN)/python benchmarks/learning_efficiency.py --quiet | tee runs/bench/learning_efficiency.jsonl

bench-sweep: install  ## the same 6 runs one after another (2 threads) and two at a time (1 thread each): the --jobs 2 speed-up (~3 min)
	@mkdir -p runs/bench
	$(BIN)/python benchmarks/sweep_speedup.py | tee runs/bench/sweep_speedup.jsonl

bench-kl: install  ## the logged KL on 32 of 128 answers per step vs exact: seconds saved, estimate error, coverage of the stated standard error (dapo, 3 seeds x 40 steps, ~4 min)
	@mkdir -p runs/bench
	$(BIN)/python benchmarks/kl_subsample.py | tee runs/bench/kl_subsample.jsonl

bench-profile: install  ## where a GRPO step's time goes at the TRL side-by-side settings: matmul, attention, element-wise, data movement, sampling, Python (~1 min)
	@mkdir -p runs/bench
	$(BIN)/python benchmarks/step_profile.py | tee runs/bench/step_profile.jsonl

bench-regimes: install  ## improved vs vanilla GRPO in a regime made for each failure mode, paired over seeds (~35 min from scratch; finished runs are reused)
	@mkdir -p runs/bench
	$(BIN)/python benchmarks/regimes.py --quiet | tee runs/bench/regimes.jsonl

bench-mechanisms: install  ## improved-GRPO mechanisms measured on real rollouts (aggregation push, truncation, signal), 3 seeds (~5 min)
	@mkdir -p runs/bench
	$(BIN)/python benchmarks/mechanisms.py --seeds 0,1,2 | tee runs/bench/mechanisms.jsonl

bench-spread: install  ## the seed spread behind the learning tests' thresholds, 4 algorithms x 6 seeds (~25 min)
	@mkdir -p runs/bench
	$(BIN)/python benchmarks/learning_test_spread.py --seeds 0,1,2,3,4,5 --jobs 2 | tee runs/bench/learning_spread.jsonl

gpu-check:  ## every CUDA path once on a GPU, installing nothing: GRPO, DAPO, PPO, bf16, LoRA, nccl, resume, Qwen's vocabulary (docs/real_models.md); no GPU: one line, exit 2
	@mkdir -p runs/bench
	PYTHONPATH=$(CURDIR) $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON)) benchmarks/gpu_check.py --out runs/bench/gpu_check.json

clean:
	rm -rf runs $(VENV) .pytest_cache
