"""Parallel kernels give bit-identical results for any number of threads.

The data is large enough (> 4096 rows, many queries) for the chunked X^T z and the parallel
per-query sweeps to run in parallel.
"""

from __future__ import annotations

import numpy as np
import pytest

from rankkit import threads
from rankkit.sparse import csr_rmatvec, rmatvec_chunks
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers.newton import NewtonRankSVM
from tests.conftest import make_dataset
from tests.reference import RTOL_KERNEL


@pytest.fixture(autouse=True)
def split_small_work(monkeypatch):
    """Kernels split even this data over the threads (rankkit.threads runs small work on one)."""
    from rankkit import threads

    monkeypatch.setattr(threads, "MIN_WORK_PER_THREAD", 16)


@pytest.fixture(scope="module")
def big_ds():
    rng = np.random.default_rng(0)
    sizes = tuple(int(v) for v in rng.integers(1, 60, size=250))
    ds = make_dataset(seed=21, sizes=sizes, n_features=12, n_labels=4)
    assert ds.n_rows > 4096 and rmatvec_chunks(ds.n_rows, ds.n_features) > 1
    return ds


def _with_threads(n, fn):
    with threads.limited(n):
        return fn()


def test_rmatvec_matches_scipy_and_is_thread_independent(big_ds):
    z = np.random.default_rng(1).standard_normal(big_ds.n_rows)
    X = big_ds.csr()

    def run():
        return csr_rmatvec(big_ds.data, big_ds.indices, big_ds.indptr, z, np.empty(big_ds.n_features))

    one, two = _with_threads(1, run), _with_threads(2, run)
    assert np.array_equal(one, two)
    np.testing.assert_allclose(one, X.T @ z, rtol=0, atol=RTOL_KERNEL * np.abs(X.T @ z).max())


def test_objective_and_fit_are_bitwise_thread_independent(big_ds):
    w = np.random.default_rng(2).standard_normal(big_ds.n_features) * 0.3
    s = np.random.default_rng(3).standard_normal(big_ds.n_features)

    def run():
        obj = PairwiseObjective(big_ds, 0.01)
        f, g = obj.fun_grad(w)
        hv = obj.hess_vec(s)
        fit = NewtonRankSVM(C=0.01).fit(big_ds)
        return f, g.copy(), hv.copy(), fit.w.copy(), fit.objective

    if threads.pool_size() < 2:
        pytest.skip("numba runs with one thread here")
    one, two = _with_threads(1, run), _with_threads(2, run)
    assert one[0] == two[0] and one[4] == two[4]
    for a, b in zip(one[1:4], two[1:4]):
        assert np.array_equal(a, b)


def test_parallel_objective_matches_explicit_pairs_on_big_data(big_ds):
    from tests.reference import sqhinge_loss_y

    obj = PairwiseObjective(big_ds, 1.0)
    y = np.random.default_rng(4).standard_normal(big_ds.n_rows)
    d = np.random.default_rng(5).standard_normal(big_ds.n_rows)
    L = obj.loss_y(y)
    Hd = obj.hess_vec_y(d).copy()
    L_ref, g_ref, Hd_ref = sqhinge_loss_y(y, big_ds.y, big_ds.qptr, d)
    assert abs(L - L_ref) <= RTOL_KERNEL * L_ref
    np.testing.assert_allclose(obj.gy, g_ref, rtol=0, atol=RTOL_KERNEL * np.abs(g_ref).max())
    np.testing.assert_allclose(Hd, Hd_ref, rtol=0, atol=RTOL_KERNEL * np.abs(Hd_ref).max())


def test_cli_threads_give_identical_models(tmp_path):
    """`rankkit train --threads 1` and `--threads 2` write the same weights, byte for byte."""
    from tests.test_cli import SAMPLE_TRAIN, rankkit

    for n in (1, 2):
        proc = rankkit("train", SAMPLE_TRAIN, f"m{n}.txt", "--threads", str(n), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr.decode()

    def weights(name):
        text = (tmp_path / name).read_text()
        return text[text.index("\nweights ") : text.index("\nchecksum ")]  # the checksum covers the timings

    assert weights("m1.txt") == weights("m2.txt")


def test_weights_do_not_depend_on_blas_threads(tmp_path):
    """OpenBLAS splits a dot product of over 10,000 entries over its threads (one per core by
    default), so its last bits depend on the machine; the solvers' products (rankkit.vectors) do
    not use BLAS: `rankkit train` writes the same weights with OPENBLAS_NUM_THREADS=1 and 2, on
    sparse data with 30,000 features (CG's products are that long)."""
    import os
    import subprocess
    import sys

    import scipy.sparse as sp

    from rankkit.datasets import dump_svmlight_file

    rng = np.random.default_rng(3)
    n, d = 2_000, 30_000
    # 10 entries a row at random columns (sp.random(n, d, density=10 / d) drew them by permuting all
    # n * d positions: 3.7 s of CPU for the same kind of matrix)
    draw = np.random.default_rng(4)
    X = sp.csr_matrix((draw.random(n * 10), (np.repeat(np.arange(n), 10), draw.integers(0, d, n * 10))), shape=(n, d))
    y = np.digitize(X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n), [-0.3, 0.0, 0.3])
    qid = np.repeat(np.arange(n // 40), 40)
    path = tmp_path / "wide.txt"
    dump_svmlight_file(X, y, str(path), query_id=qid, zero_based=False)
    out = {}
    for t in ("1", "2"):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=t)
        proc = subprocess.run([sys.executable, "-m", "rankkit", "train", str(path), str(tmp_path / f"m{t}.txt"), "-C", "10"],
                              env=env, capture_output=True)
        assert proc.returncode == 0, proc.stderr.decode()
        text = (tmp_path / f"m{t}.txt").read_text()
        out[t] = text[text.index("\nweights ") : text.index("\nchecksum ")]
    assert out["1"] == out["2"]


def _record_items(seen, lock):
    import threading

    def kernel(scale, lo, hi):
        with lock:
            seen.append((lo, hi, threading.get_ident(), scale))
    return kernel


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 40])
def test_run_each_takes_every_item_once(n_threads, n):
    """run_each: kernel(*args, c, c + 1) for every c < n, each exactly once, on at most count() threads."""
    import threading

    seen, lock = [], threading.Lock()
    with threads.limited(n_threads):
        threads.run_each(_record_items(seen, lock), n, 2.5)
    assert sorted((lo, hi) for lo, hi, _, _ in seen) == [(c, c + 1) for c in range(n)]
    assert all(s == 2.5 for *_, s in seen)
    assert len({t for _, _, t, _ in seen}) <= max(1, min(n_threads, n))


def test_run_each_lets_a_fast_thread_take_a_slow_ones_items():
    """The items are taken in turn: while one thread is held on its first item, the other takes
    every other item (run()'s fixed ranges would give each thread half)."""
    import threading

    release, taken, lock = threading.Event(), [], threading.Lock()
    first = threading.get_ident()

    def kernel(lo, hi):
        with lock:
            taken.append((lo, threading.get_ident()))
        if threading.get_ident() == first and len(taken) == 1:
            release.wait(5)  # the calling thread's first item: held until the pool is done

    def hold_then_release():
        # the pool thread takes the other items while the caller is held
        while True:
            with lock:
                if len(taken) >= 10:
                    break
            threading.Event().wait(0.001)
        release.set()

    watcher = threading.Thread(target=hold_then_release, daemon=True)
    watcher.start()
    with threads.limited(2):
        threads.run_each(kernel, 10)
    watcher.join(5)
    assert sorted(c for c, _ in taken) == list(range(10))
    by_caller = [c for c, t in taken if t == first]
    assert len(by_caller) < 5, taken  # the held thread took fewer than half


def test_run_each_runs_on_the_caller_when_no_thread_can_be_started(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    import threading

    def refuse(self, *a, **k):
        raise RuntimeError("can't start new thread")

    threads.stop_pool()
    monkeypatch.setattr(ThreadPoolExecutor, "submit", refuse)
    monkeypatch.setattr(threads, "_no_new_threads", False)
    seen, lock = [], threading.Lock()
    with threads.limited(2):
        threads.run_each(_record_items(seen, lock), 6, 1.0)
    assert sorted(lo for lo, *_ in seen) == list(range(6))
    assert {t for _, _, t, _ in seen} == {threading.get_ident()}
    assert threads._no_new_threads
