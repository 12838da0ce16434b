"""rankkit.dask (issue 40): DaskRankSVM and evaluate over dask arrays (dense, scipy.sparse chunks)
and dask dataframes, on a real LocalCluster of worker processes (one for the module, two workers of
one thread; a cluster of one and of three workers for the worker-count claim).

The claims: the weights equal RankSVM().fit on the computed arrays (RTOL, at tol 1e-9) for any
chunking, queries split by chunk boundaries included, and any number of workers; predict is lazy
and gives RankSVM.predict's scores; rankkit.dask.evaluate gives rankkit.evaluate's numbers; errors
name the row of the whole collection as RankSVM.fit names it; the Python face refuses dask
collections at once, pointing here. The hung scheduler (SIGSTOP) is tests/test_dask_hung.py.
"""

from __future__ import annotations

import os
import pickle
import signal
import time
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")  # the test extra installs it: a skip only outside `make test`
da = pytest.importorskip("dask.array")

import rankkit  # noqa: E402
from rankkit.dask import DaskRankSVM  # noqa: E402
from rankkit.datasets import load_svmlight_file  # noqa: E402
from rankkit.errors import DataError, UsageError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample.train.txt"
RTOL = 1e-9  # DaskRankSVM's weights against RankSVM.fit's on the computed arrays, both at tol 1e-9
QUIET = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}


def _cluster(n_workers: int):
    return distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                    scheduler_kwargs=QUIET, silence_logs=50, host="127.0.0.1",
                                    env={"NUMBA_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def client():
    with _cluster(2) as cluster, distributed.Client(cluster, set_as_default=False) as c:
        yield c


@pytest.fixture(scope="module")
def data():
    X, y, qid = load_svmlight_file(str(SAMPLE), query_id=True)
    X = X.toarray()[:900]  # 900 rows, 46 features, ~20 queries: a few parts, quick rounds
    return X, y[:900], qid[:900]


@pytest.fixture(scope="module")
def reference(data):
    X, y, qid = data
    return rankkit.RankSVM(C=0.01, tol=1e-9).fit(X, y, qid=qid)


def _dask(data, chunk):
    X, y, qid = data
    return (da.from_array(X, chunks=(chunk, -1)), da.from_array(y, chunks=chunk), da.from_array(qid, chunks=chunk))


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * np.abs(b).max())


def _query_split_by(data, chunk) -> bool:
    qid = data[2]
    cuts = np.arange(chunk, qid.shape[0], chunk)
    return bool(np.any(qid[cuts] == qid[cuts - 1]))


@pytest.mark.parametrize("chunk", [900, 137])
def test_dense_array_any_chunking_is_ranksvm_fit(client, data, reference, chunk):
    """Chunk boundaries inside queries (137 splits some) are joined, not refused: the same weights."""
    assert chunk == 900 or _query_split_by(data, chunk)
    X, y, qid = _dask(data, chunk)
    est = DaskRankSVM(C=0.01, tol=1e-9, client=client).fit(X, y, qid=qid)
    _close(est.coef_, reference.coef_)
    assert (est.n_pairs_, est.n_queries_) == (reference.n_pairs_, reference.n_queries_)
    assert est.model_.header["engine"] == "dask" and est.model_.header["workers"] == 2
    scores = est.predict(X)
    assert isinstance(scores, da.Array) and scores.chunks[0] == X.chunks[0]  # lazy, block by block
    _close(scores.compute(), reference.predict(data[0]))


def test_sparse_chunks_and_columns_chunked(client, data, reference):
    """scipy.sparse chunks, X chunked along its columns too: the same weights and scores."""
    import scipy.sparse as sp

    _, y, qid = _dask(data, 200)
    Xs = da.from_array(data[0], chunks=(200, 20)).map_blocks(sp.csr_matrix, dtype=np.float64,
                                                             meta=sp.csr_matrix((0, 0)))
    est = DaskRankSVM(C=0.01, tol=1e-9, client=client).fit(Xs, y, qid=qid)
    _close(est.coef_, reference.coef_)
    _close(est.predict(Xs).compute(scheduler=client.get), reference.predict(data[0]))


@pytest.mark.slow  # two more clusters of worker processes (~30 s)
@pytest.mark.parametrize("n_workers", [1, 3])
def test_one_or_three_workers(data, reference, n_workers):
    X, y, qid = _dask(data, 137)
    with _cluster(n_workers) as cluster, distributed.Client(cluster, set_as_default=False) as c:
        est = DaskRankSVM(C=0.01, tol=1e-9, client=c).fit(X, y, qid=qid)
        assert est.model_.header["workers"] == n_workers
        _close(est.coef_, reference.coef_)


def test_dataframe_with_a_qid_column(client, data):
    """A dask dataframe (partitions splitting queries) with qid= naming a column: RankSVM.fit's
    weights and feature names on the computed frame; predict gives a dask series on X's index;
    rankkit.dask.evaluate and score are rankkit.evaluate's and RankSVM.score's numbers."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y, qid = data
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame.insert(3, "query", qid)
    frame["label"] = y
    ddf = dd.from_pandas(frame, npartitions=4, sort=False)
    features = ddf.drop(columns=["label"])
    est = DaskRankSVM(C=0.01, tol=1e-9, client=client).fit(features, ddf["label"], qid="query")
    local_X = frame.drop(columns=["label", "query"])
    ref = rankkit.RankSVM(C=0.01, tol=1e-9).fit(local_X, y, qid=qid)
    _close(est.coef_, ref.coef_)
    assert list(est.feature_names_in_) == list(local_X.columns)
    scores = est.predict(features.drop(columns=["query"]))
    assert type(scores).__name__ == "Series" and hasattr(scores, "npartitions")
    computed = scores.compute()
    assert list(computed.index) == list(frame.index)
    _close(computed.to_numpy(), ref.predict(local_X))
    got = rankkit.dask.evaluate(ddf["label"], scores, ddf["query"], metrics=("ndcg@10", "map", "err@5"), client=client)
    want = rankkit.evaluate(y, ref.predict(local_X), qid=qid, metrics=("ndcg@10", "map", "err@5"))
    assert got.keys() == want.keys()
    for m in want:
        assert got[m] == pytest.approx(want[m], rel=1e-12)
    assert est.score(features.drop(columns=["query"]), ddf["label"], ddf["query"]) == pytest.approx(
        ref.score(local_X, y, qid=qid), rel=1e-12)


def test_evaluate_ties_and_per_query_as_rankkit_evaluate(client, data):
    """Tied scores (every score rounded to one decimal), chunks splitting queries, trec (ties by row
    number) and letor4: per query, the same values and ids as rankkit.evaluate."""
    X, y, qid = data
    scores = np.round(X[:, 0] * 3, 1)
    for convention in ("trec", "letor4"):
        means, each = rankkit.dask.evaluate(da.from_array(y, chunks=137), da.from_array(scores, chunks=137),
                                            da.from_array(qid, chunks=137), metrics=("ndcg@10", "map", "p@5"),
                                            convention=convention, per_query=True, client=client)
        m1, e1 = rankkit.evaluate(y, scores, qid=qid, metrics=("ndcg@10", "map", "p@5"), convention=convention,
                                  per_query=True)
        assert means == m1
        np.testing.assert_array_equal(each["qid"], e1["qid"])
        for m in ("ndcg@10", "map", "p@5"):
            np.testing.assert_array_equal(each[m], e1[m])


def test_group_and_sample_weights(client, data):
    """group= sizes, and sample_weight per row (a dask array) or {qid: weight}: RankSVM.fit's weights."""
    X, y, qid = data
    _, sizes = np.unique(qid, return_counts=True)
    order = np.unique(qid, return_index=True)[1].argsort()
    sizes = sizes[order]  # in row order
    dX, dy, dq = _dask(data, 250)
    ref = rankkit.RankSVM(C=0.01, tol=1e-9).fit(X, y, group=sizes)
    _close(DaskRankSVM(C=0.01, tol=1e-9, client=client).fit(dX, dy, group=sizes).coef_, ref.coef_)
    table = {int(q): 1.0 + (int(q) % 3) * 0.5 for q in np.unique(qid)}
    per_row = np.array([table[int(q)] for q in qid])
    ref = rankkit.RankSVM(C=0.01, tol=1e-9).fit(X, y, qid=qid, sample_weight=per_row)
    got = DaskRankSVM(C=0.01, tol=1e-9, client=client).fit(dX, dy, qid=dq,
                                                           sample_weight=da.from_array(per_row, chunks=250))
    _close(got.coef_, ref.coef_)
    _close(DaskRankSVM(C=0.01, tol=1e-9, client=client).fit(dX, dy, qid=dq, sample_weight=table).coef_, ref.coef_)


def test_bad_rows_are_named_as_ranksvm_fit_names_them(client, data):
    """A NaN in the third chunk, and a query that appears again after other queries (in another
    chunk): the message of RankSVM.fit on the computed arrays, the row of the whole collection."""
    X, y, qid = data
    bad = X.copy()
    bad[613, 2] = np.nan
    with pytest.raises(DataError) as local:
        rankkit.RankSVM().fit(bad, y, qid=qid)
    with pytest.raises(DataError) as got:
        DaskRankSVM(client=client).fit(da.from_array(bad, chunks=(250, -1)), da.from_array(y, chunks=250),
                                       qid=da.from_array(qid, chunks=250))
    assert str(got.value) == str(local.value) and got.value.line == 614
    again = qid.copy()
    again[800:830] = qid[0]  # the first query again, in the fourth chunk
    with pytest.raises(DataError) as local:
        rankkit.RankSVM().fit(X, y, qid=again)
    with pytest.raises(DataError) as got:
        DaskRankSVM(client=client).fit(da.from_array(X, chunks=(250, -1)), da.from_array(y, chunks=250),
                                       qid=da.from_array(again, chunks=250))
    assert str(got.value) == str(local.value)


def test_the_python_face_refuses_dask_collections_at_once(data, tmp_path):
    """RankSVM.fit / predict, fit_parts, predict_parts and evaluate_parts given a dask collection:
    one UsageError pointing to rankkit.dask, before anything is computed (the graph would raise)."""
    def boom(block):
        raise AssertionError("computed")

    X = da.from_array(data[0], chunks=(300, -1)).map_blocks(boom, dtype=np.float64)
    y = da.from_array(data[1], chunks=300).map_blocks(boom, dtype=np.float64)
    fitted = rankkit.RankSVM(C=0.01).fit(data[0], data[1], qid=data[2])
    calls = [lambda: rankkit.RankSVM().fit(X, y, qid=data[2]), lambda: fitted.predict(X),
             lambda: rankkit.RankSVM().fit_parts(X), lambda: rankkit.predict_parts(fitted, X),
             lambda: rankkit.evaluate_parts(X, y)]
    for call in calls:
        t0 = time.monotonic()
        with pytest.raises(UsageError, match=r"is a dask Array: use rankkit\.dask\.") as exc:
            call()
        assert "\n" not in str(exc.value) and time.monotonic() - t0 < 5


def test_parameters_pickling_clone_and_to_local(client, data, reference):
    """get_params: RankSVM's and client; the client is not pickled; to_local is a RankSVM with the
    fitted model; sklearn's clone; rankkit.DaskRankSVM is this class; the local checks apply."""
    est = DaskRankSVM(C=0.01, tol=1e-9, client=client)
    params = est.get_params()
    assert params["client"] is client
    assert set(params) - {"client"} == set(rankkit.RankSVM().get_params())
    assert rankkit.DaskRankSVM is DaskRankSVM
    X, y, qid = _dask(data, 300)
    est.fit(X, y, qid=qid)
    back = pickle.loads(pickle.dumps(est))
    assert back.client is None and np.array_equal(back.coef_, est.coef_)
    local = est.to_local()
    assert type(local) is rankkit.RankSVM and local.get_params() == {k: v for k, v in params.items() if k != "client"}
    np.testing.assert_array_equal(local.predict(data[0]), est.predict(X).compute())
    sklearn = pytest.importorskip("sklearn.base")
    assert sklearn.clone(est).get_params()["C"] == 0.01
    with pytest.raises(UsageError, match="C"):
        DaskRankSVM(C=-1, client=client).fit(X, y, qid=qid)
    with pytest.raises(UsageError, match="solver"):
        DaskRankSVM(solver="bundle", client=client).fit(X, y, qid=qid)
    with pytest.raises(UsageError, match="not a dask array"):
        DaskRankSVM(client=client).fit(data[0], data[1], qid=data[2])
    with distributed.Client(client.scheduler.address, timeout=30):  # client=None: Dask's default client, as LightGBM
        _close(DaskRankSVM(C=0.01, tol=1e-9).fit(X, y, qid=qid).coef_, reference.coef_)


@pytest.mark.slow
def test_worker_killed_mid_fit_the_same_weights(data, reference):
    """A worker process killed (SIGKILL) in the middle of a fit: its parts are computed again from
    the collection's graph on the other worker; the same weights."""
    from rankkit.dask import _cluster as watched
    from rankkit.distributed.collections import fit_collection, row_blocks

    X, y, qid = _dask(data, 250)
    with _cluster(2) as cluster, distributed.Client(cluster, set_as_default=False) as c:
        pids = c.run(os.getpid)
        victim = sorted(pids)[1]
        killed, lines = [], []

        def log(line):
            lines.append(line)
            if line.startswith("iter   2") and not killed:
                import threading

                threading.Timer(0.05, os.kill, (pids[victim], signal.SIGKILL)).start()
                killed.append(victim)

        with watched(c, log) as cl:
            result, facts = fit_collection(cl, row_blocks(cl, X, y, qid), C=0.01, loss="squared-hinge", tol=1e-9,
                                           max_iter=100, query_norm=False, rescale=None, delta="gain", log=log)
        assert killed
        _close(result.w, reference.coef_)
        assert facts["parts_read_again"] >= 1, lines
