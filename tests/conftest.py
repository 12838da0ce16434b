from __future__ import annotations

import signal

import numpy as np
import pytest

from rankkit.data import Dataset
from rankkit.io.svmlight import parse_bytes


def pytest_configure(config):
    """A suite started in the background by a non-interactive shell (`cmd &`, nohup) has SIGINT
    ignored, and every process it starts inherits that: the tests of what Ctrl-C does to rankkit
    would then see rankkit (rightly) ignore it. They model a user at a terminal, so the suite's
    processes get SIGINT's default back (a Python handler is reset to the default in a child).
    Likewise SIGHUP under nohup (`nohup make test`: CI's log once showed a SIGHUP test's rankkit
    complete its run, as it rightly does under nohup); the test of that case ignores SIGHUP itself."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


# The order in which `make test`'s two processes take the test files (pytest-xdist --dist loadfile,
# with --no-loadscope-reorder: xdist would otherwise hand out the files with the most tests first,
# which left the few long Dask files to the end, one process running them while the other had
# finished). Longest first (the longest-processing-time rule: the last files handed out are short,
# so both processes finish together); files not listed follow in their usual order. Seconds of a
# whole run on 2 busy cores (2026-11-28 13:57, load 2.6-3.8; pytest --durations, summed per file;
# on an idle machine the suite took 191 s). test_aot.py comes first and test_faults.py only after
# three Dask files: both compile train's and predict's kernels by the JIT into the suite's kernel
# cache (their reference runs), and the one that starts second should load them, not compile them
# again beside the first.
HEAVY_FIRST = (
    "test_aot.py",                # 98 s
    "test_distributed_bytes.py",  # 33 s
    "test_dask_hung.py",          # 30 s, mostly waiting out RANKKIT_DASK_TIMEOUT
    "test_distributed.py",        # 25 s
    "test_faults.py",             # 34 s
    "test_cli.py",                # 30 s
    "test_dask_collections.py",   # 21 s
    "test_sgd_kernels.py",        # 20 s
    "test_distributed_kills.py",  # 15 s
    "test_eval_cli.py",           # 14 s
    "test_shared_dirs.py",        # 13 s
    "test_api.py",                # 12 s
    "test_experiment_inputs.py",  # 12 s
    "test_faces_io.py",           # 11 s
    "test_habits.py",             # 11 s
    "test_threads.py",            # 9 s
    "test_sgd_solvers.py",        # 10 s
    "test_bundle.py",             # 8 s
    "test_reader_stream.py",      # 8 s
    "test_reader_faults.py",      # 7 s
    "test_interrupt_workers.py",  # 6 s
)


def pytest_collection_modifyitems(session, config, items):
    """Files in HEAVY_FIRST's order, then the rest as collected (a stable sort: each file's tests
    keep their order). Every process sorts the same collection the same way, as xdist requires."""
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(HEAVY_FIRST)))


def make_dataset(
    seed: int = 0,
    sizes=(1, 2, 7, 30, 12, 5, 1, 25, 9),
    n_features: int = 6,
    n_labels: int = 3,
    density: float = 0.6,
    one_label_queries=(4,),
    integer_features: bool = False,
) -> Dataset:
    """Random ranking data with the awkward cases: one-document queries, a one-label query,
    heavy label ties, empty feature rows, duplicated rows (tied scores), zero columns."""
    rng = np.random.default_rng(seed)
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    X = rng.standard_normal((n, n_features))
    if integer_features:
        X = np.round(X * 2)
    X[rng.random((n, n_features)) > density] = 0.0
    X[::7] = 0.0  # empty rows
    if n > 12:
        X[10] = X[11]  # identical documents: tied scores for every w
    X[:, -1] = 0.0  # a feature that never occurs (still counted: a later column is set below)
    X[0, -1] = 1.5
    y = rng.integers(0, n_labels, n).astype(np.float64)
    for q in (q for q in one_label_queries if q < len(sizes)):
        y[qptr[q] : qptr[q + 1]] = 1.0
    rows = []
    for r in range(n):
        feats = " ".join(f"{j + 1}:{float(X[r, j])!r}" for j in range(n_features) if X[r, j] != 0.0)
        q = int(np.searchsorted(qptr, r, side="right"))
        rows.append(f"{int(y[r])} qid:{q} {feats}".rstrip())
    buf = np.frombuffer(("\n".join(rows) + "\n").encode(), dtype=np.uint8)
    return parse_bytes(buf, "<test>")


@pytest.fixture
def small_ds() -> Dataset:
    return make_dataset()


@pytest.fixture
def tied_ds() -> Dataset:
    """Integer features, so many documents share a score and margins hit exact values."""
    return make_dataset(seed=3, integer_features=True, n_labels=4)
