"""The Python API (issue 12): readers against scikit-learn's, estimators against the command line,
scikit-learn conventions (clone, get/set_params, GridSearchCV with metadata routing), errors."""

from __future__ import annotations

import doctest
import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import rankkit
from rankkit.errors import DataError, ModelError, UsageError
from tests.test_cli import ROOT, SAMPLE_TEST, SAMPLE_TRAIN, _env, rankkit as run_cli

SHARED_DATA = ROOT.parent / "shared" / "data"
SAMPLE_VALI = ROOT / "data" / "sample.vali.txt"

sklearn = pytest.importorskip("sklearn")  # a test dependency (pyproject's `test` extra); rankkit never needs it
from sklearn.datasets import load_svmlight_file as sk_load  # noqa: E402


def _cli(*args):
    """`rankkit ARGS` in this process through Click (the command's own parser and code); stdout text."""
    from click.testing import CliRunner

    from rankkit.cli import cli

    res = CliRunner().invoke(cli, [str(a) for a in args])
    assert res.exit_code == 0, (res.output, res.exception)
    return res.stdout


def _bits(a):
    return np.asarray(a, dtype=np.float64).view(np.int64)


def _same_csr(a, b):
    assert a.shape == b.shape
    a, b = a.tocsr(), b.tocsr()
    a.sort_indices()
    b.sort_indices()
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(_bits(a.data), _bits(b.data))


# -- load_svmlight_file is scikit-learn's --------------------------------------------------------------
def _shared_files():
    if not SHARED_DATA.is_dir():
        return []
    return sorted(p for p in SHARED_DATA.rglob("*") if p.is_file() and p.suffix in (".txt", ".train", ".test")
                  and p.name.lower() not in ("readme.md", "readme.txt") and not p.name.endswith(".query"))


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is absent")
def test_load_svmlight_file_equals_sklearn_on_every_shared_file():
    files = _shared_files()
    assert len(files) >= 15
    for path in files:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            X, y, qid = rankkit.load_svmlight_file(str(path), query_id=True)
        beside = [Path(f"{path}.{ext}") for ext in ("query", "group")]
        # a group file beside the file is named (it is not read: the values stay scikit-learn's)
        assert [str(w.message).split(" has no qid")[0] for w in said] == \
            ([str(path)] if any(p.exists() for p in beside) else [])
        Xs, ys, qs = sk_load(str(path), query_id=True)
        _same_csr(X, Xs)
        np.testing.assert_array_equal(_bits(y), _bits(ys))
        if qs.shape[0]:  # a file without qid: scikit-learn returns no ids at all, rankkit one 0 per row
            np.testing.assert_array_equal(qid, qs)
        else:
            assert np.all(qid == 0) and qid.shape == y.shape


EDGE_CASES = {
    "plain": b"2 qid:1 1:0.5 3:1\n0 qid:1 2:1\n1 qid:2 1:0.25 2:-3e-5\n",
    "comments and blank lines": b"# head\n2 qid:1 1:0.5 # docid = a\n\n0 qid:1 2:1 #c\n",
    "crlf": b"1 qid:1 1:2\r\n0 qid:1 2:3\r\n",
    "no final newline": b"1 qid:1 1:2\n0 qid:1 2:3",
    "zero-based": b"1 qid:1 0:2 4:1\n0 qid:1 1:3\n",
    "label only lines": b"3\n1 1:2\n0\n",
    "scattered qids": b"1 qid:3 1:1\n0 qid:1 2:1\n1 qid:3 1:2\n",
    "exponents and signs": b"-1.5e1 qid:-4 1:+1e-300 2:-0 7:1E3\n+2 qid:-4 3:.5\n",
    "leading space": b"  1 qid:1 1:2\n",
    "tabs": b"1\tqid:1\t1:2\t2:3\n",
    "no qid": b"1 1:1 2:2\n0 2:1\n",
    "integers": b"4 qid:9 1:1 2:2 3:3\n",
    "big index": b"1 qid:1 100000:1\n",
    "many digits": b"1 qid:1 1:0.1000000000000000055511151231257827 2:123456789012345678901234567890\n",
}


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
@pytest.mark.parametrize("kw", [{}, {"zero_based": True}, {"zero_based": False}, {"n_features": 200_000},
                                {"dtype": np.float32}], ids=["auto", "zb", "ob", "nf", "f32"])
def test_load_svmlight_file_equals_sklearn_on_edge_cases(name, kw):
    content = EDGE_CASES[name]
    try:
        expected = sk_load(io.BytesIO(content), query_id=True, **kw)
    except ValueError:
        with pytest.raises(ValueError):
            rankkit.load_svmlight_file(io.BytesIO(content), query_id=True, **kw)
        return
    got = rankkit.load_svmlight_file(io.BytesIO(content), query_id=True, **kw)
    _same_csr(got[0], expected[0])
    assert got[0].dtype == expected[0].dtype
    np.testing.assert_array_equal(_bits(got[1]), _bits(expected[1]))
    if expected[2].shape[0]:
        np.testing.assert_array_equal(got[2], expected[2])
    assert len(rankkit.load_svmlight_file(io.BytesIO(content), **kw)) == 2


def test_load_svmlight_file_offset_and_length_windows_equal_sklearn():
    content = b"".join(b"%d qid:%d 1:%d 2:0.5\n" % (i % 3, i // 4, i) for i in range(40))
    for offset in (0, 1, 5, 17, 18, 19, 100, len(content) - 3):
        for length in (-1, 1, 20, 37, 200):
            got = rankkit.load_svmlight_file(io.BytesIO(content), n_features=3, offset=offset, length=length,
                                             query_id=True)
            exp = sk_load(io.BytesIO(content), n_features=3, offset=offset, length=length, query_id=True)
            _same_csr(got[0], exp[0])
            np.testing.assert_array_equal(got[1], exp[1])
            np.testing.assert_array_equal(got[2], exp[2])
    # consecutive windows partition the file, as in scikit-learn's chunked reading
    rows = [rankkit.load_svmlight_file(io.BytesIO(content), n_features=3, offset=o, length=64)[1]
            for o in range(0, len(content), 64)]
    np.testing.assert_array_equal(np.concatenate(rows), rankkit.load_svmlight_file(io.BytesIO(content))[1])


def test_load_svmlight_file_sources_and_errors(tmp_path):
    p = tmp_path / "d.txt"
    p.write_bytes(EDGE_CASES["plain"])
    for source in (str(p), p, open(p, "rb")):
        X, y = rankkit.load_svmlight_file(source)
        assert X.shape == (3, 3)
    fd = os.open(p, os.O_RDONLY)
    try:
        assert rankkit.load_svmlight_file(fd)[0].shape == (3, 3)
    finally:
        os.close(fd)
    Xs = rankkit.load_svmlight_files([str(p), io.BytesIO(b"1 qid:5 7:1\n")])
    assert Xs[0].shape == (3, 7) and Xs[2].shape == (1, 7)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"1 qid:1 1:2\n0 qid:1 2:x\n")
    with pytest.raises(DataError) as info:
        rankkit.load_svmlight_file(str(bad))
    assert isinstance(info.value, ValueError)
    assert info.value.path == str(bad) and info.value.line == 2 and "'x'" in str(info.value)
    windowed = b"1 qid:1 1:2\n0 qid:1 2:3\n0 qid:1 2:y\n"
    with pytest.raises(DataError) as info:  # a window's errors still name the file's own line
        rankkit.load_svmlight_file(io.BytesIO(windowed), n_features=3, offset=5)
    assert info.value.line == 3
    with pytest.raises(ValueError, match="n_features was set to 2, but input file contains 3 features"):
        rankkit.load_svmlight_file(str(p), n_features=2)
    with pytest.raises(ValueError, match="n_features is required"):
        rankkit.load_svmlight_file(str(p), offset=3)
    with pytest.raises(UsageError, match="multilabel"):
        rankkit.load_svmlight_file(str(p), multilabel=True)
    with pytest.raises(UsageError, match="binary mode"):
        rankkit.load_svmlight_file(io.StringIO("1 1:1\n"))
    with pytest.raises(DataError, match="not finite"):
        rankkit.load_svmlight_file(io.BytesIO(b"1 1:nan\n"))


def test_dump_svmlight_file_round_trips_and_sklearn_reads_it(tmp_path):
    X, y, qid = rankkit.load_svmlight_file(str(SAMPLE_TRAIN), query_id=True)
    out = tmp_path / "dump.txt"
    rankkit.dump_svmlight_file(X, y, out, zero_based=False, query_id=qid, comment="made by a test\nsecond line")
    text = out.read_text()
    assert text.startswith("# Generated by rankkit") and "# second line\n" in text
    X2, y2, q2 = rankkit.load_svmlight_file(str(out), query_id=True, n_features=X.shape[1])
    _same_csr(X2, X)
    np.testing.assert_array_equal(_bits(y2), _bits(y))
    np.testing.assert_array_equal(q2, qid)
    Xs, ys, qs = sk_load(str(out), query_id=True, n_features=X.shape[1], zero_based=False)
    _same_csr(Xs, X)
    dense = io.BytesIO()
    rankkit.dump_svmlight_file(np.array([[0.0, 1.5], [2.0, 0.0]]), np.array([1, 0]), dense)
    assert dense.getvalue().decode().splitlines()[2:] == ["1 1:1.5", "0 0:2"]
    with pytest.raises(UsageError):
        rankkit.dump_svmlight_file(np.array([[np.nan]]), [1], io.BytesIO())


def test_load_letor_is_what_train_reads():
    d = rankkit.load_letor(SAMPLE_TRAIN)
    from rankkit.io.svmlight import read_svmlight

    ds = read_svmlight(str(SAMPLE_TRAIN))
    _same_csr(d.X, ds.csr())
    np.testing.assert_array_equal(d.query_offsets, ds.qptr)
    assert d.n_queries == ds.n_queries and d.group.sum() == ds.n_rows
    assert d.docids == ds.docids() and d.docids[0] is not None
    X, y, qid = rankkit.load_svmlight_file(str(SAMPLE_TRAIN), query_id=True)
    _same_csr(d.X, X)
    np.testing.assert_array_equal(d.qid, qid)


# -- the estimators equal the command line --------------------------------------------------------------
CASES = [
    ("newton", rankkit.RankSVM, {"C": 0.01}, ["-C", "0.01"]),
    ("newton huber query_norm", rankkit.RankSVM, {"C": 0.5, "loss": "huber", "query_norm": True},
     ["-C", "0.5", "--loss", "huber", "--query-norm"]),
    ("newton-pairs logistic", rankkit.RankSVM, {"C": 0.01, "solver": "newton-pairs", "loss": "logistic"},
     ["-C", "0.01", "--solver", "newton-pairs", "--loss", "logistic"]),
    ("bundle", rankkit.RankSVM, {"C": 0.01, "loss": "hinge"}, ["-C", "0.01", "--loss", "hinge"]),
    ("rescale margin", rankkit.RankSVM, {"C": 0.01, "rescale": "margin"}, ["-C", "0.01", "--rescale", "margin"]),
    ("rbf landmarks", rankkit.RankSVM, {"C": 0.1, "kernel": "rbf", "landmarks": 60, "random_state": 3},
     ["-C", "0.1", "--kernel", "rbf", "--landmarks", "60", "--seed", "3"]),
    ("pegasos", rankkit.SGDRanker, {"iterations": 5000, "random_state": 7, "alpha": 0.01},
     ["--solver", "pegasos", "--iterations", "5000", "--seed", "7", "--lambda", "0.01"]),
    ("pa indexed", rankkit.SGDRanker, {"learner": "pa", "C": 0.1, "iterations": 3000, "sampler": "indexed"},
     ["--solver", "pa", "-C", "0.1", "--iterations", "3000", "--sampler", "indexed"]),
    ("query-sgd", rankkit.SGDRanker, {"learner": "query-sgd", "C": 0.01, "iterations": 300},
     ["--solver", "query-sgd", "-C", "0.01", "--iterations", "300"]),
    ("factorized", rankkit.FactorizedRankSVM, {"K": 3, "iterations": 20, "random_state": 2},
     ["--solver", "factorized", "-K", "3", "--iterations", "20", "--seed", "2"]),
]


@pytest.fixture(scope="module")
def sample():
    X, y, qid = rankkit.load_svmlight_file(str(SAMPLE_TRAIN), query_id=True)
    Xt, yt, qt = rankkit.load_svmlight_file(str(SAMPLE_TEST), query_id=True, n_features=X.shape[1])
    return X, y, qid, Xt, yt, qt


@pytest.mark.parametrize("name,cls,params,flags", CASES, ids=[c[0] for c in CASES])
def test_estimator_equals_cli_model(tmp_path, sample, name, cls, params, flags):
    """Same data and options: the Python estimator and `rankkit train` give the same weights bit
    for bit (the CLI is run in this process through Click, the same parser as the command)."""
    from click.testing import CliRunner

    from rankkit.cli import cli
    from rankkit.io.model import read_model

    X, y, qid, Xt, yt, qt = sample
    model = tmp_path / "cli.model"
    res = CliRunner().invoke(cli, ["train", str(SAMPLE_TRAIN), str(model), *flags])
    assert res.exit_code == 0, res.output
    cli_model = read_model(str(model))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankkit.ConvergenceWarning)
        est = cls(**params).fit(X, y, qid=qid)
    np.testing.assert_array_equal(_bits(est.model_.weights), _bits(cli_model.weights))
    if cli_model.landmarks is not None:
        _same_csr(est.landmarks_, cli_model.landmarks)
    assert est.n_iter_ == int(cli_model.header["iterations"])
    assert est.n_pairs_ == int(cli_model.header["n_pairs"])
    if est.objective_ == est.objective_:
        assert repr(est.objective_) == cli_model.header["objective"]
    # the CLI's model, loaded in Python, predicts what the estimator predicts
    loaded = rankkit.load_model(model)
    assert type(loaded) is cls
    np.testing.assert_array_equal(_bits(loaded.predict(Xt)), _bits(est.predict(Xt)))


def test_python_model_predicts_the_same_from_the_cli_and_back(tmp_path, sample):
    X, y, qid, Xt, yt, qt = sample
    for est in (rankkit.RankSVM(C=0.01).fit(X, y, qid=qid),
                rankkit.RankSVM(C=0.1, kernel="poly", degree=2, landmarks=40).fit(X, y, qid=qid)):
        path = tmp_path / "py.model"
        est.save(path)
        cli_scores = np.array([float(v) for v in _cli("predict", SAMPLE_TEST, path, "-").split()])
        np.testing.assert_array_equal(_bits(cli_scores), _bits(est.predict(Xt)))
        again = rankkit.load_model(path)
        np.testing.assert_array_equal(_bits(again.predict(Xt)), _bits(est.predict(Xt)))
        assert again.get_params() == {**est.get_params(), **{k: v for k, v in again.get_params().items()
                                                             if est.get_params()[k] is None}}


def test_foreign_model_loads_as_a_ranker():
    foreign = ROOT / "tests" / "data" / "foreign"
    est = rankkit.load_model(foreign / "svm_rank.model")
    assert type(est) is rankkit.Ranker
    X, _ = rankkit.load_svmlight_file(str(foreign / "test.txt"))
    proc = run_cli("predict", foreign / "test.txt", foreign / "svm_rank.model", "-", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr  # (tests/test_foreign_models.py checks these against svm_rank's own)
    np.testing.assert_array_equal(_bits(est.predict(X)), _bits([float(v) for v in proc.stdout.split()]))
    with pytest.raises(UsageError, match="convert"):
        est.save("/tmp/never-written.model")
    with pytest.raises(ModelError):
        rankkit.load_model(SAMPLE_TRAIN)


def test_threads_do_not_change_the_weights(sample):
    X, y, qid = sample[:3]
    a = rankkit.RankSVM(C=0.01, n_jobs=1).fit(X, y, qid=qid)
    b = rankkit.RankSVM(C=0.01, n_jobs=2).fit(X, y, qid=qid)
    np.testing.assert_array_equal(_bits(a.coef_), _bits(b.coef_))


def test_qid_group_query_weight_and_dense_input_agree(tmp_path, sample):
    X, y, qid = sample[:3]
    sizes = np.diff(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True]))
    a = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid)
    b = rankkit.RankSVM(C=0.01).fit(X.toarray(), y, group=sizes)
    np.testing.assert_array_equal(_bits(a.coef_), _bits(b.coef_))
    rng = np.random.default_rng(0)
    per_query = rng.uniform(0.5, 2.0, sizes.shape[0])
    c = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid, query_weight=per_query)
    d = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid, query_weight=np.repeat(per_query, sizes))
    np.testing.assert_array_equal(_bits(c.coef_), _bits(d.coef_))
    weights = tmp_path / "w.txt"
    weights.write_text("".join(f"{q} {float(w)!r}\n" for q, w in zip(qid[np.r_[0, np.cumsum(sizes)[:-1]]], per_query)))
    model = tmp_path / "m.model"
    proc = run_cli("train", SAMPLE_TRAIN, model, "-C", "0.01", "--query-weights", weights, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    from rankkit.io.model import read_model

    np.testing.assert_array_equal(_bits(read_model(str(model)).weights), _bits(c.coef_))
    with pytest.raises(UsageError, match="same for every row"):
        rankkit.RankSVM().fit(X, y, qid=qid, query_weight=rng.random(X.shape[0]))


# -- scikit-learn conventions ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [rankkit.RankSVM, rankkit.SGDRanker, rankkit.FactorizedRankSVM])
def test_params_clone_and_repr(cls, sample):
    from sklearn.base import clone

    X, y, qid = sample[:3]
    est = cls(random_state=5, n_jobs=1)
    params = est.get_params()
    assert params["random_state"] == 5 and "n_jobs" in params
    assert est.set_params(random_state=6) is est and est.random_state == 6
    with pytest.raises(ValueError, match="not a parameter"):
        est.set_params(nonsense=1)
    copy = clone(est)
    assert copy is not est and copy.get_params() == est.get_params()
    assert repr(est).startswith(cls.__name__ + "(") and "random_state=6" in repr(est)
    small = {"iterations": 200} if cls is not rankkit.RankSVM else {}
    est.set_params(**small)
    before = dict(est.get_params())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankkit.ConvergenceWarning)
        assert est.fit(X, y, qid=qid) is est
    assert est.get_params() == before  # fit never changes a parameter
    assert clone(est).get_params() == before and not hasattr(clone(est), "model_")
    import pickle  # (joblib's parallel GridSearchCV pickles estimators)

    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(_bits(again.predict(X)), _bits(est.predict(X)))
    for attr in ("coef_", "n_iter_", "objective_", "converged_", "n_pairs_", "n_features_in_"):
        getattr(est, attr)


def test_parameter_errors_name_the_parameter(sample):
    X, y, qid = sample[:3]
    cases = [
        (rankkit.SGDRanker(learner="pa", alpha=0.1), "alpha is not a parameter of solver 'pa'"),
        (rankkit.SGDRanker(learner="nope"), "learner must be one of"),
        (rankkit.RankSVM(C=-1), "C must be > 0"),
        (rankkit.RankSVM(solver="bundle", loss="squared-hinge"), "solver 'bundle' does not offer loss"),
        (rankkit.RankSVM(solver="pegasos"), "SGDRanker"),
        (rankkit.RankSVM(delta="gain"), "delta applies only with rescale"),
        (rankkit.RankSVM(max_iter=0), "max_iter must be an integer >= 1"),
        (rankkit.SGDRanker(sampler="stream"), "not for data in memory"),
        (rankkit.FactorizedRankSVM(eta="pegasos"), "eta must be one of constant, basic"),
        (rankkit.RankSVM(loss="foo"), "loss must be one of"),
        (rankkit.RankSVM(random_state="x"), "random_state must be an integer"),
        (rankkit.RankSVM(query_norm="yes"), "query_norm must be True or False"),
        (rankkit.RankSVM(kernel="rbf", gamma=-1.0), "gamma must be > 0"),
        (rankkit.RankSVM(kernel="poly", degree=0), "degree must be an integer >= 1"),
        (rankkit.RankSVM(kernel="rbf", landmarks=0), "landmarks must be an integer >= 1"),
        (rankkit.RankSVM(kernel="sigmoid"), "kernel must be one of"),
    ]
    for est, message in cases:
        with pytest.raises(UsageError, match=message.replace("(", r"\(")):
            est.fit(X, y, qid=qid)
    with pytest.raises(UsageError, match="needs the queries"):
        rankkit.RankSVM().fit(X, y)
    scattered = qid.copy()
    scattered[:3] = qid[-1]
    with pytest.raises(DataError, match="appears again") as info:
        rankkit.RankSVM().fit(X, y, qid=scattered)
    assert info.value.line == int(np.flatnonzero(qid == qid[-1])[0]) + 1  # the 1-based row where it comes back
    with pytest.raises(DataError, match="no preference pairs"):
        rankkit.RankSVM().fit(X[:3], np.ones(3), group=[3])
    with pytest.raises(DataError, match="not finite"):
        rankkit.RankSVM().fit(np.array([[np.inf], [0.0]]), [1, 0], group=[2])
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        rankkit.RankSVM().predict(X)
    with pytest.warns(rankkit.ConvergenceWarning, match="at max_iter 1 "):
        rankkit.RankSVM(C=10.0, max_iter=1).fit(X, y, qid=qid)
    fitted = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid)
    with pytest.raises(UsageError, match="needs the queries.*enable_metadata_routing"):
        fitted.score(X, y)
    with pytest.raises(UsageError, match="X has 5 features"):  # dense X: scikit-learn's rule
        fitted.predict(X.toarray()[:, :5])
    assert fitted.predict(X[:, :5]).shape == (X.shape[0],)  # sparse X: missing columns are zeros (as the CLI)
    d = rankkit.load_letor(SAMPLE_VALI)
    for kwargs, message in (({}, "needs the queries"), ({"qid": qid}, "needs the queries"),
                            ({"qid": qid, "qid_valid": d.qid, "ratio": 0.5}, "ratio must be"),
                            ({"qid": qid, "qid_valid": d.qid, "n_points": 0}, "n_points must be"),
                            ({"qid": qid, "qid_valid": d.qid, "kernel": "foo"}, "kernel must be one of")):
        with pytest.raises(UsageError, match=message):
            rankkit.regularization_path(X, y, d.X, d.y, **kwargs)
    with pytest.warns(UserWarning, match="grades the labels 0, 1, 2"):  # MSLR-style labels under letor4, by name
        rankkit.evaluate(np.array([4.0, 3, 0]), np.array([3.0, 2, 1]), group=[3], convention="letor4")
    with warnings.catch_warnings():  # the default (trec) grades every label: nothing to say
        warnings.simplefilter("error")
        rankkit.evaluate(np.array([4.0, 3, 0]), np.array([3.0, 2, 1]), group=[3])


def test_pipeline_with_metadata_routing(sample):
    """In a Pipeline (which routes sample_weight to score), qid still reaches fit and score."""
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV, GroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler

    X, y, qid = sample[:3]
    with config_context(enable_metadata_routing=True):
        pipe = make_pipeline(MaxAbsScaler(), rankkit.RankSVM().set_fit_request(qid=True).set_score_request(qid=True))
        assert 0 < pipe.fit(X, y, qid=qid).score(X, y, qid=qid) <= 1
        search = GridSearchCV(pipe, {"ranksvm__C": [1e-2, 1e-1]}, cv=GroupKFold(n_splits=3), error_score="raise")
        search.fit(X, y, groups=qid, qid=qid)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_grid_search_with_group_kfold_and_metadata_routing(sample):
    """GridSearchCV over C with GroupKFold on the queries: qid reaches fit and score through
    scikit-learn's metadata routing, and the choice is the C with the best mean NDCG@10."""
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV, GroupKFold

    X, y, qid = sample[:3]
    with config_context(enable_metadata_routing=True):
        est = rankkit.RankSVM().set_fit_request(qid=True).set_score_request(qid=True)
        search = GridSearchCV(est, {"C": [1e-4, 1e-2, 1.0]}, cv=GroupKFold(n_splits=3))
        search.fit(X, y, groups=qid, qid=qid)
    assert search.best_params_["C"] in (1e-4, 1e-2, 1.0)
    means = search.cv_results_["mean_test_score"]
    assert search.best_score_ == max(means) and np.all((means > 0) & (means <= 1))
    # the routing really carried qid: a fold's score is the mean NDCG@10 over that fold's queries
    train, test = next(GroupKFold(n_splits=3).split(X, y, groups=qid))
    fold = rankkit.RankSVM(C=search.cv_results_["param_C"][0]).fit(X[train], y[train], qid=qid[train])
    assert fold.score(X[test], y[test], qid=qid[test]) == pytest.approx(search.cv_results_["split0_test_score"][0],
                                                                         abs=0)


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "MQ2008" / "Fold1").is_dir(), reason="../shared/data is absent")
def test_grid_search_on_mq2008_picks_a_c():
    """The issue's check at full size (about 10-20 s: `make test-all`); the same mechanics run on the
    bundled sample in the default suite (test_grid_search_with_group_kfold_and_metadata_routing)."""
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV, GroupKFold

    X, y, qid = rankkit.load_svmlight_file(str(SHARED_DATA / "MQ2008" / "Fold1" / "train.txt"), query_id=True)
    with config_context(enable_metadata_routing=True):
        est = rankkit.RankSVM().set_fit_request(qid=True).set_score_request(qid=True)
        search = GridSearchCV(est, {"C": [1e-4, 1e-3, 1e-2]}, cv=GroupKFold(n_splits=5)).fit(X, y, groups=qid, qid=qid)
    assert search.best_params_["C"] in (1e-4, 1e-3, 1e-2)
    # MQ2008's NDCG@10 under the LETOR 4.0 rules (a query of fewer than 10 documents scores 0) is about 0.23
    assert 0.15 < search.best_score_ < 0.6
    assert search.best_estimator_.converged_


# -- evaluate / compare / regularization_path equal the command line ------------------------------------------
def test_evaluate_and_compare_equal_cli_eval(tmp_path, sample):
    X, y, qid, Xt, yt, qt = sample
    a = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid).predict(Xt)
    b = rankkit.SGDRanker(iterations=3000).fit(X, y, qid=qid).predict(Xt)
    for name, s in (("a", a), ("b", b)):
        (tmp_path / name).write_text("".join(f"{float(v)!r}\n" for v in s))
    metrics = ["ndcg@10", "map", "err@5"]
    proc = run_cli("eval", SAMPLE_TEST, "a", "b", "--format", "json", *sum((["-m", m] for m in metrics), []),
                   "--permutations", "2000", "--per-query", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(proc.stdout)["systems"]
    got = rankkit.compare(yt, {"a": a, "b": b}, qid=qt, metrics=metrics, permutations=2000)
    assert [s["name"] for s in got] == ["a", "b"]
    for g, c in zip(got, cli):
        assert g["mean"] == pytest.approx(c["mean"], abs=0)
    assert got[1]["p_value"] == pytest.approx(cli[1]["p_value"], abs=0)
    means, each = rankkit.evaluate(yt, a, qid=qt, metrics=metrics, per_query=True)
    assert means == got[0]["mean"]
    assert [str(q) for q in each["qid"].tolist()] == cli[0]["per_query"]["qid"] and each["qid"].dtype == np.int64
    for m in metrics:
        np.testing.assert_array_equal(each[m], np.array(cli[0]["per_query"][m], dtype=float))
    trec = rankkit.evaluate(yt, a, qid=qt, metrics="ndcg", convention="trec", docids=[str(i) for i in range(len(a))])
    assert 0 < trec["ndcg"] <= 1
    with pytest.raises(UsageError):
        rankkit.evaluate(yt, a, qid=qt, metrics="ndcg@x")
    with pytest.raises(UsageError, match="needs the queries"):
        rankkit.evaluate(yt, a)


def test_exact_regularization_path_equals_cli_path(tmp_path):
    """method="exact" (Zapien et al.'s path) on a few queries: the same breakpoints and choice as
    `rankkit path --method exact`, and the chosen model predicts as the CLI's --out-model."""
    d = rankkit.load_letor(SAMPLE_TRAIN)
    v = rankkit.load_letor(SAMPLE_VALI)
    rows, vrows = int(d.query_offsets[6]), int(v.query_offsets[5])
    train, vali = tmp_path / "train.txt", tmp_path / "vali.txt"
    rankkit.dump_svmlight_file(d.X[:rows], d.y[:rows], train, zero_based=False, query_id=d.qid[:rows])
    rankkit.dump_svmlight_file(v.X[:vrows], v.y[:vrows], vali, zero_based=False, query_id=v.qid[:vrows])
    path = rankkit.regularization_path(d.X[:rows], d.y[:rows], v.X[:vrows], v.y[:vrows], qid=d.qid[:rows],
                                       qid_valid=v.qid[:vrows], method="exact", metric="map")
    model = tmp_path / "best.model"
    out = _cli("path", train, vali, "--method", "exact", "-m", "map", "--out-model", model)
    assert path.method == "exact" and len(path) > 10
    assert f"{len(path)} breakpoints" in out.splitlines()[0]
    from rankkit.io.model import read_model

    cli_model = read_model(str(model))
    assert path.best_C == float(cli_model.header["C"])
    np.testing.assert_array_equal(_bits(path.best_estimator_.coef_), _bits(cli_model.weights))


def test_regularization_path_equals_cli_path(tmp_path):
    d = rankkit.load_letor(SAMPLE_TRAIN)
    v = rankkit.load_letor(SAMPLE_VALI)
    path = rankkit.regularization_path(d.X, d.y, v.X, v.y, qid=d.qid, qid_valid=v.qid, method="grid", n_points=4,
                                       ratio=1e4)
    table = tmp_path / "path.tsv"
    model = tmp_path / "best.model"
    _cli("path", SAMPLE_TRAIN, SAMPLE_VALI, "--method", "grid", "--n-points", "4", "--ratio", "1e4", "--table", table,
         "--out-model", model)
    rows = [line.split("\t") for line in table.read_text().splitlines()]
    cols = {name: [r[i] for r in rows[1:]] for i, name in enumerate(rows[0])}
    np.testing.assert_array_equal(path.C, np.array(cols["C"], dtype=float))
    np.testing.assert_array_equal(path.valid_metric, np.array(cols["valid_ndcg@10"], dtype=float))
    assert path.chosen == cols["chosen"].index("1") and len(path) == len(rows) - 1 >= 4  # 4 and the edge rule's
    assert path.at_edge == (cols["at_edge"][path.chosen] if cols["at_edge"][path.chosen] != "-" else None)
    from rankkit.io.model import read_model

    np.testing.assert_array_equal(_bits(path.best_estimator_.coef_), _bits(read_model(str(model)).weights))
    assert path.best_C == float(read_model(str(model)).header["C"])


# -- packaging: light import, typing, docstrings --------------------------------------------------------------
def test_import_rankkit_is_light():
    code = ("import sys, rankkit; heavy = [m for m in ('numpy', 'scipy', 'numba', 'sklearn') if m in sys.modules];"
            "rankkit.RankSVM; print(heavy, 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] False"  # nothing heavy on import; no numba until a kernel runs
    assert (ROOT / "rankkit" / "py.typed").is_file()
    assert set(rankkit.__all__) <= set(dir(rankkit))
    with pytest.raises(AttributeError):
        rankkit.no_such_name


@pytest.mark.parametrize("module", ["rankkit.datasets", "rankkit.estimators.ranksvm", "rankkit.estimators.sgd",
                                    "rankkit.estimators.factorized", "rankkit.estimators.load", "rankkit.evaluation",
                                    "rankkit.scoring", "rankkit.regularization", "rankkit.experiments"])
def test_docstring_examples_run(module, monkeypatch):
    import importlib

    monkeypatch.chdir(ROOT)
    mod = importlib.import_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankkit.ConvergenceWarning)
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_public_functions_have_numpydoc_sections_and_examples():
    for name in rankkit.__all__:
        if name == "__version__" or name.endswith("Error") or name == "ConvergenceWarning":
            continue
        obj = getattr(rankkit, name)
        doc = obj.__doc__ or ""
        if name in ("LetorData", "RegularizationPath", "Ranker"):
            assert "Attributes" in doc, name
            continue
        assert "Parameters" in doc and "Examples" in doc and ">>>" in doc, name


def test_notebook_script_runs(tmp_path, monkeypatch, capsys):
    """scripts/python_api_tour.py as `python scripts/python_api_tour.py --out DIR` runs it (in this
    process, so the kernels compiled by the other tests are reused); `make demo` runs it too."""
    import runpy

    monkeypatch.setattr(sys, "argv", ["python_api_tour.py", "--out", str(tmp_path)])
    runpy.run_path(str(ROOT / "scripts" / "python_api_tour.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "chosen C" in out and "GridSearchCV" in out and (tmp_path / "tour.model").is_file()


@pytest.mark.parametrize("page, section, writes", [("docs/python.md", "# The Python API\n", "best.model"),
                                                    ("README.md", "## Python\n", "sample.model")])
def test_readme_python_example_runs(tmp_path, monkeypatch, capsys, page, section, writes):
    """The Python example of docs/python.md and the README's Python section, run as a new user would
    (in a directory holding data/)."""
    import re

    from sklearn import set_config

    text = (ROOT / page).read_text()
    start = text.index(section)
    end = text.find("\n## ", start + len(section))
    code = re.search(r"```python\n(.*?)```", text[start:end if end >= 0 else None], re.S).group(1)
    (tmp_path / "data").symlink_to(ROOT / "data")
    monkeypatch.chdir(tmp_path)
    try:
        exec(compile(code, page, "exec"), {"__name__": "__readme__"})
    finally:
        set_config(enable_metadata_routing=False)
    assert (tmp_path / writes).is_file()
    assert "ndcg@10" in capsys.readouterr().out
