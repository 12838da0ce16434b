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
# scikit-learn, dask, pandas, ..., took a third of the install's time). The venv is made without
# ensurepip's install of pip (it byte-compiles all of pip: ~4.5 s of a fresh clone's first run);
# pip and setuptools come instead from the wheels the Python bundles for ensurepip, installed by
# that pip wheel itself (1.9 s). A Python without them (Debian's python3 without python3-venv) takes
# `python -m venv` as before, which says what to install. Nothing is byte-compiled at install
# (--no-compile: pip would compile every module of numpy, scipy and numba, ~9 s of CPU; Python
# compiles what a run imports, and keeps it unless PYTHONDONTWRITEBYTECODE is set: then each process
# compiles its imports again, ~1 s of CPU for a build process's numba). pip is upgraded only if it cannot install a pyproject project in
# editable mode (21.3, PEP 660): a bundled pip usually can.
PIP_STAMP := $(VENV)/.pip
BUNDLED := $(PYTHON) -c "import ensurepip, glob, os; print(' '.join(sorted(glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), '_bundled', '*.whl')))))"
$(PIP_STAMP):
	@wheels=$$($(BUNDLED) 2>/dev/null); pip=$$(for w in $$wheels; do case $$w in */pip-*) echo $$w;; esac; done); \
	if [ -n "$$pip" ]; then \
		echo "$(PYTHON) -m venv --without-pip $(VENV); pip and setuptools from ensurepip's wheels" && \
		$(PYTHON) -m venv --without-pip $(VENV) && \
		PYTHONWARNINGS=ignore $(PY) $$pip/pip install --quiet --quiet --no-compile --no-index --disable-pip-version-check $$wheels; \
	else \
		echo "$(PYTHON) -m venv $(VENV)" && $(PYTHON) -m venv $(VENV); \
	fi
	@$(PY) -c "import sys, pip; sys.exit(tuple(int(v) for v in pip.__version__.split('.')[:2]) < (21, 3))" 2>/dev/null || \
		PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --quiet 'pip>=21.3'
	@touch $(PIP_STAMP)

$(STAMP): $(PIP_STAMP) pyproject.toml
	@# PYTHONWARNINGS reaches pip's isolated build: setuptools' notices about editable installs are not ours to show
	@# --quiet twice: pip's errors only (a machine's index settings it cannot use drew a warning per package)
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --quiet --no-compile -e .
	@touch $(STAMP)

# What the ahead-of-time build needs (numpy and numba, as pyproject.toml's dependencies spell them):
# make demo installs these first and builds its first kernels while pip installs the rest.
KERNEL_DEPS = $(shell awk '/^dependencies = \[/ {f = 1; next} f && /^\]/ {exit} f' pyproject.toml | grep -oE '"(numpy|numba)[^"]*"' | tr -d '"')
KERNEL_DEPS_STAMP := $(VENV)/.kernel-deps-installed
$(KERNEL_DEPS_STAMP): $(PIP_STAMP) pyproject.toml
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --quiet --no-compile $(foreach d,$(KERNEL_DEPS),'$(d)')
	@touch $(KERNEL_DEPS_STAMP)

# pip installs with --no-compile (the first model comes sooner: byte-compiling numpy, scipy and numba
# is ~9 s of CPU); every module is byte-compiled once the demo's first commands have run, beside the
# rest of its kernel build, and before anything else runs from this environment (the tests, the
# benchmarks, the trial): where PYTHONDONTWRITEBYTECODE is set (as in this project's sandbox and CI)
# Python never writes what it compiles, and each later process compiled its imports again (numpy and
# click: 0.24 s wall against 0.09 s). Only a speed-up: a module that cannot be compiled here fails
# where it is imported, as it would have (-qq, no status).
PYC_STAMP := $(VENV)/.byte-compiled
$(PYC_STAMP): $(STAMP)
	@$(PY) -m compileall -qq -j 0 $$($(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") || true
	@touch $(PYC_STAMP)

# what scripts/check_wheel.py needs besides rankkit's own dependencies (`build`), installed before the
# test extras, so that .ci/run's `make -j2 venv wheel-check` installs those while the wheel is built,
# installed and checked (two pip runs of one core each, side by side; never two into one environment)
BUILD_STAMP := $(VENV)/.build-installed
$(BUILD_STAMP): $(STAMP)
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --quiet 'build>=1'
	@touch $(BUILD_STAMP)

# ... and what the tests need besides (make venv, test, test-all, fuzz)
$(TEST_STAMP): $(BUILD_STAMP) $(PYC_STAMP)
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

# On a fresh clone the first build starts as soon as numpy and numba are installed (the build imports
# nothing else: rankkit from the checkout, PYTHONPATH, the same files the editable install then
# points to, so the same fingerprint), while pip installs scipy, click and rankkit (~6 s); its
# summary is shown when both are done. If it failed or could not build ahead of time (no C compiler:
# the JIT cache needs the whole install), `python -m rankkit.warmup --first` runs again after the
# install, as before, and reports. If the install fails, the build is stopped.
$(FIRST_STAMP): $(PIP_STAMP) pyproject.toml $(SOURCES)
	@if $(MAKE) --no-print-directory -q $(STAMP) 2>/dev/null; then \
		echo "$(PY) -m rankkit.warmup --first" && $(PY) -m rankkit.warmup --first || exit $$?; \
	else \
		$(MAKE) --no-print-directory -q $(KERNEL_DEPS_STAMP) 2>/dev/null || $(MAKE) --no-print-directory $(KERNEL_DEPS_STAMP) || exit $$?; \
		log=$(VENV)/.first-build.log; \
		echo "PYTHONPATH=. $(PY) -m rankkit.warmup --first >$$log 2>&1 &  (beside the rest of the install)"; \
		PYTHONPATH=$(CURDIR) $(PY) -m rankkit.warmup --first >$$log 2>&1 & build=$$!; \
		$(MAKE) --no-print-directory $(STAMP) || { status=$$?; kill $$build 2>/dev/null; wait $$build; exit $$status; }; \
		if wait $$build; then cat $$log; else \
			echo "$(PY) -m rankkit.warmup --first" && $(PY) -m rankkit.warmup --first || exit $$?; \
		fi; \
	fi
	@touch $(FIRST_STAMP)

# the rest of the kernel build and the byte-compiling, side by side (-j2); a target of its own so
# that make says nothing when both are done already (after make test)
.PHONY: demo-rest
demo-rest: $(WARM_STAMP) $(PYC_STAMP)
	@:

demo: $(FIRST_STAMP)
	@mkdir -p $(OUT)
	$(RANKKIT) train data/sample.train.txt $(OUT)/sample.model -C 0.01 -v
	$(RANKKIT) predict data/sample.test.txt $(OUT)/sample.model $(OUT)/sample.test.scores
	$(RANKKIT) eval data/sample.test.txt $(OUT)/sample.test.scores
	@$(MAKE) --no-print-directory -j2 demo-rest
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
# file's fixtures are made once), handed out longest first (tests/conftest.py's HEAVY_FIRST; xdist
# would reorder them by their number of tests); TEST_JOBS=0 runs them in this process, one after the other.
TEST_JOBS ?= 2
XDIST = $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder)

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
trial: $(WARM_STAMP) $(PYC_STAMP)
	$(PY) scripts/operator_trial.py $(TRIAL_ARGS)

$(BENCH_STAMP): $(TEST_STAMP)
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --quiet -e '.[test,bench]'
	@touch $(BENCH_STAMP)

# One script per paper (scripts/reproduce_*.py): each takes --out DIR, writes DIR/<paper>.md (every table
# and figure: the paper's number, rankkit's, the command) and its figures, and exits 2 naming the
# missing directory when ../shared/data is absent.
papers: $(WARM_STAMP) $(PYC_STAMP)
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
warmup: $(WARM_STAMP) $(PYC_STAMP)

sample: $(STAMP)
	$(PY) scripts/make_sample.py data

clean:
	rm -rf $(VENV) $(OUT) bench-data build *.egg-info .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
