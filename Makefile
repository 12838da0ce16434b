# rankkit: every target sets up its own virtual environment, so a fresh clone needs only Python.
#   make demo    train, predict and evaluate on the bundled sample in data/
#   make test    run the test suite (all but the tests marked slow)
#   make test-all   the whole suite, the slow tests too (full-size cases, worker processes killed mid-fit, ...)
#   make wheel-check  build the sdist and wheel, install the wheel alone in a new environment outside the
#                checkout and run the demo and `rankkit warmup` from it (scripts/check_wheel.py; CI runs it)
#   make fuzz    the randomized reader and model-file tests with many more cases (a few minutes)
#   make trial   the operator trial: ~1,900 real runs over fault families, a table of outcomes (scripts/operator_trial.py)
#   make bench   run the benchmarks (installs scikit-learn into .venv for the reader comparison)
#   make bench-peers  only the side-by-side against liblinear-ranksvm / sofia-ml (RANKKIT_PEERS=/tmp/peers)
#   make bench-distributed  only one process against a 2-worker Dask LocalCluster (BENCHMARKS-distributed.md)
#   make papers  rerun every table and figure of the four papers the data at hand allows (../shared/data):
#                scripts/reproduce_*.py, each writing the paper's figures beside rankkit's into out/papers/
#   make sample  regenerate data/ (deterministic)
#   make clean   remove the virtual environment, caches and generated outputs

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
RANKKIT := $(VENV)/bin/rankkit
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.test-installed
BENCH_STAMP := $(VENV)/.bench-installed
WARM_STAMP := $(VENV)/.kernels-compiled
OUT    := out

.PHONY: all venv demo test test-all wheel-check fuzz bench bench-peers bench-distributed warmup papers sample clean

all: test

# The demo's environment: rankkit and its four dependencies only (the first run: the test extras,
# scikit-learn, dask, pandas, ..., took a third of the install's time). pip is upgraded only if it
# cannot install a pyproject project in editable mode (21.3, PEP 660): a venv's own pip usually can.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@# PYTHONWARNINGS reaches pip's isolated build: setuptools' notices about editable installs are not ours to show
	@# --quiet twice: pip's errors only (a machine's index settings it cannot use drew a warning per package)
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --quiet 'pip>=21.3'
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --quiet -e .
	@touch $(STAMP)

# what scripts/check_wheel.py needs besides rankkit's own dependencies (`build`), installed before the
# test extras, so that .ci/run's `make -j2 venv wheel-check` installs those while the wheel is built,
# installed and checked (two pip runs of one core each, side by side; never two into one environment)
BUILD_STAMP := $(VENV)/.build-installed
$(BUILD_STAMP): $(STAMP)
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --quiet 'build>=1'
	@touch $(BUILD_STAMP)

# ... and what the tests need besides (make venv, test, test-all, fuzz)
$(TEST_STAMP): $(BUILD_STAMP)
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --quiet -e '.[test]'
	@touch $(TEST_STAMP)

venv: $(TEST_STAMP)

# every kernel call of every command compiled ahead of time (in parallel processes), again whenever a
# source file changes (the build is only used for the exact sources it was made from); `make test`
# makes its own, in the suite's cache. The demo's first commands' calls (train, predict, eval: 23 of
# the table's 87, FIRST_STAMP) are built first, so that its first model comes after a third of the
# compiling; the rest is added to the same build before the demo's API tour, so nothing compiles
# after make demo.
SOURCES := $(shell find rankkit -name "*.py" -type f ! -name ".*")
FIRST_STAMP := $(VENV)/.first-kernels-compiled
$(WARM_STAMP): $(STAMP) $(SOURCES)
	$(PY) -m rankkit.warmup
	@touch $(WARM_STAMP)

$(FIRST_STAMP): $(STAMP) $(SOURCES)
	$(PY) -m rankkit.warmup --first
	@touch $(FIRST_STAMP)

demo: $(FIRST_STAMP)
	@mkdir -p $(OUT)
	$(RANKKIT) train data/sample.train.txt $(OUT)/sample.model -C 0.01 -v
	$(RANKKIT) predict data/sample.test.txt $(OUT)/sample.model $(OUT)/sample.test.scores
	$(RANKKIT) eval data/sample.test.txt $(OUT)/sample.test.scores
	@$(MAKE) --no-print-directory $(WARM_STAMP)
	$(PY) scripts/python_api_tour.py --out $(OUT)

# Tests run on a kernel cache of their own for exactly these sources (build --suite-cache: a private
# folder named by the digest of every source file, the toolchain and the CPU, under ~/.cache/rankkit-suite),
# so a stale cache can never hide an edit (numba's own cache would not see an edit in another module),
# and a second `make test` on the same sources starts testing at once: the kernels are built ahead
# of time into it first (one build, both cores: the suite's processes then load them instead of each
# compiling or importing numba), and whatever the build does not cover compiles into the same cache.
# Sources edited during the run: the folder is removed afterwards (--suite-cache-done).
SUITE_CACHE := $(PY) -m rankkit.compiler.build --suite-cache
SUITE_CACHE_DONE := $(PY) -m rankkit.compiler.build --suite-cache-done
# The test files run in TEST_JOBS processes (pytest-xdist; each file whole in one process, so a
# file's fixtures are made once); TEST_JOBS=0 runs them in this process, one after the other.
TEST_JOBS ?= 2
XDIST = $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile)

test: $(TEST_STAMP)
	@cache=$$($(SUITE_CACHE)) || exit $$?; \
	NUMBA_CACHE_DIR=$$cache $(PY) -m rankkit.warmup -q && \
	NUMBA_CACHE_DIR=$$cache $(PY) -m pytest -q $(XDIST) tests; status=$$?; \
	$(SUITE_CACHE_DONE) $$cache; exit $$status

# Every test, the ones marked slow included (pyproject's addopts leaves them out; the last -m wins).
test-all: $(TEST_STAMP)
	@cache=$$($(SUITE_CACHE)) || exit $$?; \
	NUMBA_CACHE_DIR=$$cache $(PY) -m rankkit.warmup -q && \
	NUMBA_CACHE_DIR=$$cache $(PY) -m pytest -q $(XDIST) -m '' tests; status=$$?; \
	$(SUITE_CACHE_DONE) $$cache; exit $$status

wheel-check: $(BUILD_STAMP)
	@$(PY) scripts/check_wheel.py

# Many more random mutations of real files than the suite's default (RANKKIT_FUZZ_CASES to change it).
fuzz: $(TEST_STAMP)
	@cache=$$(mktemp -d); \
	RANKKIT_FUZZ_CASES=$${RANKKIT_FUZZ_CASES:-50000} NUMBA_CACHE_DIR=$$cache $(PY) -m pytest -q -m fuzz tests; status=$$?; \
	rm -rf $$cache; exit $$status

.PHONY: trial
trial: $(WARM_STAMP)
	$(PY) scripts/operator_trial.py $(TRIAL_ARGS)

$(BENCH_STAMP): $(TEST_STAMP)
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --quiet -e '.[test,bench]'
	@touch $(BENCH_STAMP)

# One script per paper (scripts/reproduce_*.py): each takes --out DIR, writes DIR/<paper>.md (every table
# and figure: the paper's number, rankkit's, the command) and its figures, and exits 2 naming the
# missing directory when ../shared/data is absent.
papers: $(WARM_STAMP)
	@mkdir -p $(OUT)/papers
	@for s in scripts/reproduce_*.py; do echo "== $$s"; $(PY) $$s --out $(OUT)/papers || exit $$?; done

bench: bench-peers bench-distributed
	$(PY) scripts/bench.py

# One process against a LocalCluster of 2 workers on 8 parts (issue 14); writes BENCHMARKS-distributed.md.
bench-distributed: $(BENCH_STAMP)
	$(PY) scripts/bench_distributed.py --workers 2

# rankkit against liblinear-ranksvm and sofia-ml in one run (issue 11); peers from RANKKIT_PEERS
# (a folder: liblinear/train, sofia/sofia-ml) or RANKKIT_LIBLINEAR / RANKKIT_SOFIA. Rewrites the
# bench-peers block of BENCHMARKS.md.
bench-peers: $(BENCH_STAMP) $(WARM_STAMP)
	$(PY) scripts/bench_peers.py --update BENCHMARKS.md

# compile the common kernels ahead of time (done once, before the first make demo)
warmup: $(WARM_STAMP)

sample: $(STAMP)
	$(PY) scripts/make_sample.py data

clean:
	rm -rf $(VENV) $(OUT) bench-data build *.egg-info .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
