"""Issue 40, "the names Python users type": every estimator takes scikit-learn's random_state and
n_jobs (seed and threads, rankkit's former names, still work for one release, with a
FutureWarning), and eval_metric names the metric early stopping watches on the first eval set
(LightGBM's eval_at, XGBoost's eval_metric; MAP by default, as before). Small data: the bundled
sample's first queries."""

from __future__ import annotations

import inspect
import pickle
import warnings

import numpy as np
import pytest

import rankkit
from rankkit import threads
from rankkit.errors import UsageError
from rankkit.estimators.base import thread_count
from tests.test_cli import ROOT, SAMPLE_TRAIN

ESTIMATORS = [rankkit.RankSVM, rankkit.SGDRanker, rankkit.FactorizedRankSVM]


def _bits(a):
    return np.asarray(a, dtype=np.float64).view(np.int64)


def _first_queries(X, y, q, n):
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    end = int(starts[n]) if n < starts.size else X.shape[0]
    return X[:end], y[:end], q[:end]


@pytest.fixture(scope="module")
def data():
    X, y, q = rankkit.load_svmlight_file(str(SAMPLE_TRAIN), query_id=True)
    Xv, yv, qv = rankkit.load_svmlight_file(str(ROOT / "data" / "sample.vali.txt"), query_id=True,
                                            n_features=X.shape[1])
    return (*_first_queries(X, y, q, 60), *_first_queries(Xv, yv, qv, 30))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_the_scikit_learn_names_are_the_parameters(cls):
    params = cls().get_params()
    assert params["random_state"] == 0 and params["n_jobs"] is None
    assert "seed" not in params and "threads" not in params
    assert {"random_state", "n_jobs"} <= set(inspect.signature(cls).parameters)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_the_former_names_work_for_one_release_with_a_future_warning(cls):
    with pytest.warns(FutureWarning, match=r"\(seed=\.\.\.\) is deprecated: the parameter is now random_state"):
        est = cls(seed=3)
    assert est.get_params()["random_state"] == 3
    with pytest.warns(FutureWarning, match="now n_jobs"):
        est = cls(threads=2)
    assert est.get_params()["n_jobs"] == 2
    with pytest.warns(FutureWarning, match="seed is deprecated"):
        assert est.set_params(seed=4) is est
    assert est.random_state == 4
    with pytest.warns(FutureWarning, match="threads is deprecated"):
        assert est.threads == 2  # read under the old name: the new parameter's value
    with pytest.warns(FutureWarning), pytest.raises(UsageError, match="not both random_state and seed"):
        cls(seed=1, random_state=2)
    with pytest.raises(AttributeError, match="nonsense"):
        est.nonsense


def test_random_state_is_the_seed_and_n_jobs_the_threads(data):
    X, y, q = data[:3]
    a = rankkit.SGDRanker(iterations=2000, random_state=5).fit(X, y, qid=q)
    with pytest.warns(FutureWarning):
        b = rankkit.SGDRanker(iterations=2000, seed=5).fit(X, y, qid=q)
    c = rankkit.SGDRanker(iterations=2000, random_state=6).fit(X, y, qid=q)
    np.testing.assert_array_equal(_bits(a.coef_), _bits(b.coef_))
    assert not np.array_equal(a.coef_, c.coef_)
    assert a.model_.header["seed"] == 5  # the model file keeps the command line's word (--seed)
    k1 = rankkit.RankSVM(kernel="rbf", landmarks=15, random_state=1).fit(X, y, qid=q)
    k2 = rankkit.RankSVM(kernel="rbf", landmarks=15, random_state=2).fit(X, y, qid=q)
    assert k1.model_.header["landmark_seed"] == 1 and k2.model_.header["landmark_seed"] == 2
    before = threads.explicit()
    one = rankkit.RankSVM(C=0.01, n_jobs=1).fit(X, y, qid=q)
    every = rankkit.RankSVM(C=0.01, n_jobs=-1).fit(X, y, qid=q)
    np.testing.assert_array_equal(_bits(one.coef_), _bits(every.coef_))
    assert threads.explicit() == before  # the count asked for before is restored
    assert thread_count(-1) == threads.usable_cores() and thread_count(-10**6) == 1 and thread_count(3) == 3
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(UsageError, match="n_jobs must be an integer >= 1, or negative as joblib's"):
            rankkit.RankSVM(C=0.01, n_jobs=bad).fit(X, y, qid=q)
    with pytest.raises(UsageError, match="random_state must be an integer >= 0"):
        rankkit.SGDRanker(random_state=-1).fit(X, y, qid=q)


def test_a_saved_model_loads_with_the_new_names(tmp_path, data):
    X, y, q = data[:3]
    est = rankkit.SGDRanker(iterations=500, random_state=7).fit(X, y, qid=q)
    est.save(tmp_path / "m.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # no old name used on the way
        again = rankkit.load_model(tmp_path / "m.model")
    assert again.get_params()["random_state"] == 7
    with pytest.warns(rankkit.ConvergenceWarning):
        f = rankkit.FactorizedRankSVM(K=2, iterations=5, random_state=3).fit(X, y, qid=q)
    f.save(tmp_path / "f.model")
    assert rankkit.load_model(tmp_path / "f.model").random_state == 3


def test_clone_pickle_and_grid_search(data):
    pytest.importorskip("sklearn")
    from sklearn import config_context
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV, GroupKFold

    X, y, q = data[:3]
    est = rankkit.SGDRanker(iterations=300, random_state=3, n_jobs=1, eval_metric="ndcg@5")
    assert clone(est).get_params() == est.get_params()
    fitted = est.fit(X, y, qid=q)
    back = pickle.loads(pickle.dumps(fitted))
    assert back.get_params() == est.get_params()
    np.testing.assert_array_equal(_bits(back.predict(X)), _bits(fitted.predict(X)))
    # an estimator pickled before the rename (its attributes seed and threads) unpickles with the new names
    old = rankkit.RankSVM(C=0.5, random_state=2, n_jobs=1)
    old.__dict__["seed"], old.__dict__["threads"] = old.__dict__.pop("random_state"), old.__dict__.pop("n_jobs")
    again = pickle.loads(pickle.dumps(old))
    assert again.get_params()["random_state"] == 2 and again.get_params()["n_jobs"] == 1
    with config_context(enable_metadata_routing=True):
        search = GridSearchCV(rankkit.SGDRanker(iterations=300), {"random_state": [1, 2], "n_jobs": [1, -1]},
                              cv=GroupKFold(n_splits=3)).fit(X, y, groups=q, qid=q)
    assert set(search.best_params_) == {"random_state", "n_jobs"}
    by = {(p["random_state"], p["n_jobs"]): v for p, v in zip(search.cv_results_["params"],
                                                            search.cv_results_["mean_test_score"])}
    assert np.all(np.isfinite(list(by.values())))
    assert by[1, 1] == by[1, -1] and by[2, 1] == by[2, -1]  # the thread count changes nothing


def test_eval_metric_chooses_what_early_stopping_watches(data, capfd):
    X, y, q, Xv, yv, qv = data
    watched = dict(iterations=20_000, random_state=1, patience=2)
    default = rankkit.SGDRanker(**watched).fit(X, y, qid=q, eval_set=[(Xv, yv)], eval_qid=[qv])
    assert list(default.evals_result_["valid_0"]) == ["map", "ndcg@10"]  # as before: MAP watched
    est = rankkit.SGDRanker(**watched, eval_metric="ndcg@3").fit(X, y, qid=q, eval_set=[(Xv, yv)], eval_qid=[qv])
    history = est.evals_result_["valid_0"]
    assert list(history) == ["ndcg@3", "ndcg@10"]
    k = est.eval_steps_.index(est.best_iteration_)
    assert history["ndcg@3"][k] == max(history["ndcg@3"])
    best = rankkit.evaluate(yv, est.predict(Xv), qid=qv, metrics="ndcg@3")["ndcg@3"]
    assert best == pytest.approx(max(history["ndcg@3"]), abs=1e-12)  # the model kept is the best by ndcg@3
    # it stopped early (at its last checkpoint): the words name the metric watched
    assert "eval set's ndcg@3 did not improve" in est.stop_reason_ and "MAP" not in est.stop_reason_
    assert "ndcg@3 did not improve" in est.model_.header["stop_reason"]
    fact = rankkit.FactorizedRankSVM(K=2, iterations=300, patience=3, eta0=1e-2, eval_metric="ndcg@3", verbose=True)
    fact.fit(X, y, qid=q, eval_set=[(Xv, yv)], eval_qid=[qv])
    assert "  valid ndcg@3 " in capfd.readouterr().err  # the -v log names it too
    h = fact.evals_result_["valid_0"]["ndcg@3"]
    assert fact.best_iteration_ == 1 + int(np.argmax(h))
    assert "validation ndcg@3" in fact.stop_reason_ and "MAP" not in fact.stop_reason_
    with pytest.raises(UsageError, match="unknown metric 'nope'"):
        rankkit.SGDRanker(iterations=100, eval_metric="nope").fit(X, y, qid=q, eval_set=[(Xv, yv)], eval_qid=[qv])
    with pytest.raises(UsageError, match="eval_metric must be a metric name"):
        rankkit.SGDRanker(iterations=100, eval_metric=3).fit(X, y, qid=q)
