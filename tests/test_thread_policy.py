"""The default thread policy (rankkit/threads.py): idle OpenMP threads sleep, and the default
count never exceeds the usable cores nor ignores other busy processes. Results do not depend on
the count (tests/test_threads.py); these tests check the policy itself."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rankkit import threads
from tests.test_cli import _env

PROBE = (
    "import os\n"
    "import rankkit.compiler.jit, numba\n"
    "from numba import prange\n"
    "@numba.njit(parallel=True)\n"
    "def f(n):\n"
    "    s = 0.0\n"
    "    for i in prange(n):\n"
    "        s += i\n"
    "    return s\n"
    "f(10)\n"
    "print(numba.threading_layer(), os.environ.get('OMP_WAIT_POLICY'), os.environ.get('KMP_BLOCKTIME'))\n"
)


def test_threads_sleep_when_idle_and_a_user_choice_is_kept():
    env = _env()
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("KMP_BLOCKTIME", None)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out[1:] == ["PASSIVE", "0"]
    env["OMP_WAIT_POLICY"] = "ACTIVE"
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == "ACTIVE"


@pytest.mark.parametrize("cores, busy, limit, expected", [
    (2, 0, 8, 2),   # idle: every usable core
    (2, 1, 8, 1),   # another process running: the free core
    (2, 7, 8, 1),   # a crowded machine: one thread, never zero
    (8, 2, 4, 4),   # never above numba's pool
    (4, 0, None, 4),
])
def test_default_threads(monkeypatch, cores, busy, limit, expected):
    monkeypatch.setattr(threads, "usable_cores", lambda: cores)
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: busy)
    assert threads.default_threads(limit) == expected


def test_usable_cores_within_affinity():
    n = threads.usable_cores()
    assert 1 <= n <= len(os.sched_getaffinity(0))
    assert threads.busy_elsewhere() >= 0


def test_first_dispatch_does_not_import_scipy_linalg():
    """numba's import-time BLAS check (numba.np.arraymath) would import scipy.linalg (~0.2 s of a
    small run's start); rankkit's kernels load without it, and BLAS kernels still work."""
    code = (
        "import sys, numpy as np\n"
        "from rankkit.io.svmlight import parse_bytes\n"
        "parse_bytes(np.frombuffer(b'1 qid:1 1:1\\n0 qid:1 1:2\\n', dtype=np.uint8))\n"
        "print('scipy.linalg' in sys.modules)\n"
        "import numba\n"
        "from rankkit.compiler.dispatch import njit\n"
        "f = njit(cache=False)(lambda a, b: np.dot(a, b))\n"
        "print(f(np.ones(3), np.ones(3)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "3.0"]


def test_stochastic_training_does_not_import_scipy_linalg():
    """No kernel uses BLAS (np.dot would import scipy.linalg on its first call, ~0.2 s of every
    stochastic run): the stochastic learners and Newton train and predict without it."""
    code = (
        "import sys, numpy as np, rankkit\n"
        "rng = np.random.default_rng(0)\n"
        "X = rng.random((60, 4)); y = rng.integers(0, 3, 60); qid = np.repeat(np.arange(6), 10)\n"
        "for learner in ('sgd', 'pegasos', 'pa', 'romma', 'logreg', 'margin-perceptron', 'pair-sgd', 'query-sgd'):\n"
        "    rankkit.SGDRanker(learner=learner, iterations=200).fit(X, y, qid=qid).predict(X)\n"
        "rankkit.RankSVM().fit(X, y, qid=qid).predict(X)\n"
        "print('scipy.linalg' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False"]


@pytest.mark.parametrize("n_threads", [1, 2, 3, 8])
def test_split_covers_every_item_once(monkeypatch, n_threads):
    import numpy as np

    monkeypatch.setattr(threads, "count", lambda: n_threads)
    monkeypatch.setattr(threads, "MIN_WORK_PER_THREAD", 1)
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 100):
        qptr = np.concatenate([[0], np.cumsum(rng.integers(1, 50, n))])
        for weights in (qptr, None):
            parts = threads.split(weights, n, int(qptr[-1]))
            assert parts[0][0] == 0 and parts[-1][1] == n
            assert all(a[1] == b[0] for a, b in zip(parts, parts[1:])) and all(lo < hi for lo, hi in parts)
            assert len(parts) == min(n_threads, n) or weights is not None
    out = threads.run(lambda k, lo, hi: (k, lo, hi), [(0, 2), (2, 5), (5, 9)], "x")
    assert out == [("x", 0, 2), ("x", 2, 5), ("x", 5, 9)]


def test_warmup_writes_rankkit_bytecode():
    """`make warmup` writes rankkit's bytecode (an editable install does not), so no run compiles
    rankkit's modules from source."""
    import importlib.util

    from rankkit import cli, warmup

    assert warmup.compile_bytecode()
    assert os.path.isfile(importlib.util.cache_from_source(cli.__file__))


def test_default_count_follows_the_load_and_an_explicit_count_is_kept(monkeypatch):
    """The default is worked out again during a run (processes started together by make -j see
    each other only once they run); a count asked for never changes."""
    import numba

    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    busy = [0]
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: busy[0])
    clock = [1000.0]
    monkeypatch.setattr(threads.time, "monotonic", lambda: clock[0])
    from numba.np.ufunc import parallel

    monkeypatch.setattr(parallel, "_is_initialized", False)  # numba's own layer not started here
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 8)
    monkeypatch.setattr(threads, "_fixed", None)
    monkeypatch.setattr(threads, "_count", None)
    monkeypatch.setattr(threads, "_raise_seen", False)
    assert threads.count() == 2
    busy[0] = 3  # three other processes start running
    assert threads.count() == 2  # not looked at again yet
    clock[0] += threads.RECHECK_SECONDS + 0.01
    assert threads.count() == 1
    busy[0] = 0
    clock[0] += threads.RECHECK_SECONDS + 0.01
    assert threads.count() == 1  # a rise needs two readings in a row
    busy[0] = 3
    clock[0] += threads.RECHECK_SECONDS + 0.01
    assert threads.count() == 1
    busy[0] = 0
    clock[0] += threads.RECHECK_SECONDS + 0.01
    assert threads.count() == 1
    clock[0] += threads.RECHECK_SECONDS + 0.01
    assert threads.count() == 2
    monkeypatch.setattr(threads, "_fixed", 2)  # as threads.apply(2) leaves it
    busy[0] = 5
    clock[0] += threads.RECHECK_SECONDS + 0.01
    assert threads.count() == 2 and threads.explicit() == 2
    with threads.limited(1):
        assert threads.count() == 1
    assert threads.count() == 2


def test_command_line_makes_idle_openblas_threads_sleep():
    """rankkit.cli sets OPENBLAS_THREAD_TIMEOUT before numpy loads (numpy's OpenBLAS threads would
    spin ~0.1 s of another core at start-up); a value the user set is kept."""
    code = "import os, sys, rankkit.cli; print('numpy' in sys.modules, os.environ.get('OPENBLAS_THREAD_TIMEOUT'))"
    env = _env()
    env.pop("OPENBLAS_THREAD_TIMEOUT", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "4"]
    env["OPENBLAS_THREAD_TIMEOUT"] = "20"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "20"]


def test_gc_paused_for_the_start_only_if_it_was_on(monkeypatch):
    """The command line pauses Python's cyclic collector during its start (imports) and turns it
    back on after the pause or when kernels compile; a collector the program turned off stays off."""
    import gc
    import time

    assert gc.isenabled()
    try:
        threads.pause_gc(0.2)
        assert not gc.isenabled()
        time.sleep(0.5)
        assert gc.isenabled()
        threads.pause_gc(60)
        threads.resume_gc()  # what compiling a kernel does
        assert gc.isenabled()
        gc.disable()  # the program's own choice
        threads.pause_gc(0.05)
        time.sleep(0.2)
        threads.resume_gc()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_own_running_threads_are_not_busy_elsewhere(monkeypatch):
    """A thread of this process at work (a reader hashing beside its count, a pool worker) is not
    another process: counted as one, it cut a `rankkit train` on an idle 2-core machine to one
    thread for the rest of its read."""
    import hashlib
    import io
    import threading

    block = bytes(32 << 20)
    stop = threading.Event()

    def hashing():  # hashlib releases the GIL: runnable beside this thread
        while not stop.is_set():
            hashlib.sha256(block).digest()

    monkeypatch.setattr(threads, "open", lambda path, *a, **k: io.StringIO("0.50 0.40 0.30 2/300 4242\n")
                        if path == "/proc/loadavg" else open(path, *a, **k), raising=False)
    t = threading.Thread(target=hashing, daemon=True)
    t.start()
    try:
        # 2 running in all, both ours (this thread and the hashing one): none elsewhere. A reading
        # may catch the hashing thread between two blocks, waiting for the GIL: one of a few suffices
        readings = [threads.busy_elsewhere() for _ in range(20)]
    finally:
        stop.set()
        t.join()
    assert min(readings) == 0
    monkeypatch.setattr(threads, "own_running", lambda: 1)
    assert threads.busy_elsewhere() == 1  # this thread alone: the other running one is elsewhere
