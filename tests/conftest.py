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
