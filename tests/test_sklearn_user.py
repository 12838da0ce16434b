"""Issue 24: the Python API as a scikit-learn / LightGBM / XGBoost user writes it, without reading
rankkit's docs. Each test is a few lines of such a user's script, then what must hold.

The core behaviour (weights, eval sets, partial_fit, errors) is tested without scikit-learn or pandas;
the tests that need them import them inside (pytest.importorskip), so they skip cleanly where those
are not installed. Small data throughout (the bundled sample, or a few of its queries)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import rankkit
from rankkit.errors import DataError, UsageError
from tests.test_cli import ROOT, SAMPLE_TRAIN, SAMPLE_TEST

SAMPLE_VALI = ROOT / "data" / "sample.vali.txt"


def _bits(a):
    return np.asarray(a, dtype=np.float64).view(np.int64)


@pytest.fixture(scope="module")
def data():
    X, y, qid = rankkit.load_svmlight_file(str(SAMPLE_TRAIN), query_id=True)
    Xv, yv, qv = rankkit.load_svmlight_file(str(SAMPLE_VALI), query_id=True, n_features=X.shape[1])
    Xt, yt, qt = rankkit.load_svmlight_file(str(SAMPLE_TEST), query_id=True, n_features=X.shape[1])
    return X, y, qid, Xv, yv, qv, Xt, yt, qt


@pytest.fixture(scope="module")
def small(data):
    """The first 60 queries of the training sample (grid searches stay cheap)."""
    X, y, qid = data[:3]
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    n = int(starts[60])
    return X[:n], y[:n], qid[:n]


def _sizes(qid):
    return np.diff(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True]))


# -- 1. GridSearchCV the LightGBM way; scorers ---------------------------------------------------------------
GRID = {"C": [1e-3, 1e-1, 10.0]}


def test_grid_search_the_lightgbm_way_raises_on_the_first_fit_never_nan_scores(small):
    """GridSearchCV(RankSVM(), grid, cv=GroupKFold()).fit(X, y, groups=q, qid=q) without routing:
    scikit-learn would pass qid to fit but score without it (every score NaN). Every fit raises before
    training instead, so the search raises, naming routing and the qid column."""
    pytest.importorskip("sklearn")
    from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler

    X, y, q = small
    with pytest.raises(UsageError, match="without metadata routing.*enable_metadata_routing=True"):
        GridSearchCV(rankkit.RankSVM(), GRID, cv=GroupKFold(n_splits=3), error_score="raise").fit(X, y, groups=q, qid=q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's FitFailedWarning for each failed fit
        with pytest.raises(ValueError, match="fits failed(.|\n)*without metadata routing"):
            GridSearchCV(rankkit.RankSVM(), GRID, cv=GroupKFold(n_splits=3)).fit(X, y, groups=q, qid=q)
        with pytest.raises(ValueError, match="without metadata routing"):
            cross_val_score(rankkit.SGDRanker(iterations=200), X, y, groups=q, cv=GroupKFold(n_splits=3),
                            params={"qid": q})
        with pytest.raises(ValueError, match="without metadata routing"):  # a ranking scorer, unrouted
            GridSearchCV(rankkit.RankSVM(), GRID, cv=GroupKFold(n_splits=3),
                         scoring=rankkit.make_scorer("map")).fit(X, y, groups=q, qid=q)
        with pytest.raises(ValueError, match="without metadata routing"):  # in a Pipeline (step__param)
            GridSearchCV(make_pipeline(MaxAbsScaler(), rankkit.RankSVM()), {"ranksvm__C": GRID["C"]},
                         cv=GroupKFold(n_splits=3)).fit(X, y, groups=q, ranksvm__qid=q)
    # cross_val_predict scores nothing: qid split with X is all it needs, and it works unrouted
    from sklearn.model_selection import cross_val_predict

    pred = cross_val_predict(rankkit.RankSVM(C=0.1), X, y, groups=q, cv=GroupKFold(n_splits=3), params={"qid": q})
    assert pred.shape == (X.shape[0],) and np.all(np.isfinite(pred))


def test_grid_search_with_routing_needs_no_set_fit_request(small):
    """With routing on, the estimators ask for qid in fit and score by default: the LightGBM call
    works as written, and equals the explicit set_fit_request(qid=True).set_score_request(qid=True) form."""
    pytest.importorskip("sklearn")
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV, GroupKFold

    X, y, q = small
    with config_context(enable_metadata_routing=True):
        plain = GridSearchCV(rankkit.RankSVM(), GRID, cv=GroupKFold(n_splits=3)).fit(X, y, groups=q, qid=q)
        explicit = GridSearchCV(rankkit.RankSVM().set_fit_request(qid=True).set_score_request(qid=True), GRID,
                                cv=GroupKFold(n_splits=3)).fit(X, y, groups=q, qid=q)
    assert plain.best_params_ == explicit.best_params_
    np.testing.assert_array_equal(plain.cv_results_["mean_test_score"], explicit.cv_results_["mean_test_score"])
    assert np.all(np.isfinite(plain.cv_results_["mean_test_score"]))


def test_grid_search_with_a_qid_column_works_without_routing(small):
    """XGBoost's way: the queries travel with X as a 'qid' column of a data frame; no routing, no
    qid= argument, and the same choice as the routed search."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("sklearn")
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV, GroupKFold

    X, y, q = small
    frame = pd.DataFrame(X.toarray(), columns=[f"f{j}" for j in range(X.shape[1])])
    frame.insert(0, "qid", q)
    unrouted = GridSearchCV(rankkit.RankSVM(), GRID, cv=GroupKFold(n_splits=3)).fit(frame, y, groups=q)
    with config_context(enable_metadata_routing=True):
        routed = GridSearchCV(rankkit.RankSVM(), GRID, cv=GroupKFold(n_splits=3)).fit(X, y, groups=q, qid=q)
    assert unrouted.best_params_ == routed.best_params_
    np.testing.assert_allclose(unrouted.cv_results_["mean_test_score"], routed.cv_results_["mean_test_score"],
                               rtol=0, atol=1e-12)
    assert list(unrouted.best_estimator_.feature_names_in_) == [f"f{j}" for j in range(X.shape[1])]


def test_group_under_cross_validation_points_to_qid_and_routing(small):
    pytest.importorskip("sklearn")
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV, GroupKFold

    X, y, q = small
    with config_context(enable_metadata_routing=True):
        est = rankkit.RankSVM()  # group is asked for by default, as qid: the error is rankkit's, naming qid=
        with pytest.raises(UsageError, match=r"group sizes add up to \d+, but X has \d+ rows.*pass qid="):
            GridSearchCV(est, GRID, cv=GroupKFold(n_splits=3), error_score="raise").fit(X, y, groups=q, group=_sizes(q))


def test_ranking_scorers_in_grid_search(small):
    """rankkit.make_scorer("ndcg@10") as scoring=, a dict of them with refit=; each fold's score is
    rankkit.evaluate's on that fold's queries under the convention named in the scorer."""
    pytest.importorskip("sklearn")
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV, GroupKFold

    X, y, q = small
    scoring = {"ndcg@10": rankkit.make_scorer("ndcg@10", convention="exp"), "map": rankkit.get_scorer("map:trec")}
    with config_context(enable_metadata_routing=True):
        search = GridSearchCV(rankkit.RankSVM(), GRID, cv=GroupKFold(n_splits=3), scoring=scoring, refit="map")
        search.fit(X, y, groups=q, qid=q)
        single = GridSearchCV(rankkit.RankSVM(), GRID, cv=GroupKFold(n_splits=3),
                              scoring=rankkit.make_scorer("ndcg@10", convention="exp")).fit(X, y, groups=q, qid=q)
    np.testing.assert_array_equal(single.cv_results_["mean_test_score"], search.cv_results_["mean_test_ndcg@10"])
    train, test = next(GroupKFold(n_splits=3).split(X, y, groups=q))
    fold = rankkit.RankSVM(C=GRID["C"][0]).fit(X[train], y[train], qid=q[train])
    for name, metric, conv in (("ndcg@10", "ndcg@10", "exp"), ("map", "map", "trec")):
        scores = fold.predict(X[test])
        expected = rankkit.evaluate(y[test], scores, qid=q[test], metrics=metric, convention=conv)[metric]
        assert search.cv_results_[f"split0_test_{name}"][0] == expected
    assert search.best_params_["C"] in GRID["C"]
    with pytest.raises(UsageError):
        rankkit.make_scorer("ndcg@x")


def test_scorer_without_sklearn_and_without_queries_raises(data):
    X, y, q = data[:3]
    est = rankkit.RankSVM(C=0.1).fit(X, y, qid=q)
    scorer = rankkit.make_scorer("map", convention="trec")
    expected = rankkit.evaluate(y, est.predict(X), qid=q, metrics="map", convention="trec")["map"]
    assert scorer(est, X, y, qid=q) == expected
    assert est.score(X, y, qid=q) == rankkit.evaluate(y, est.predict(X), qid=q, metrics="ndcg@10")["ndcg@10"]
    with pytest.raises(UsageError, match="needs the queries"):
        scorer(est, X, y)


# -- 2. validation sets, history, early stopping ---------------------------------------------------------------
def test_eval_set_lists_record_history_and_do_not_change_the_model(data):
    X, y, q, Xv, yv, qv, Xt, yt, qt = data
    plain = rankkit.SGDRanker(iterations=2000, random_state=4).fit(X, y, qid=q)
    est = rankkit.SGDRanker(iterations=2000, random_state=4).fit(X, y, qid=q, eval_set=[(Xv, yv), (Xt, yt)],
                                                                 eval_qid=[qv, qt])
    np.testing.assert_array_equal(_bits(est.coef_), _bits(plain.coef_))  # watching changes nothing
    assert set(est.evals_result_) == {"valid_0", "valid_1"}
    assert set(est.evals_result_["valid_0"]) == {"map", "ndcg@10"}
    assert est.eval_steps_ == [100, 200, 500, 1000, 2000]
    assert len(est.evals_result_["valid_1"]["map"]) == 5
    last = rankkit.evaluate(yt, est.predict(Xt), qid=qt, metrics=("map", "ndcg@10"))  # the same default convention
    assert est.evals_result_["valid_1"]["map"][-1] == pytest.approx(last["map"], abs=1e-12)
    assert est.best_iteration_ in est.eval_steps_
    k = est.eval_steps_.index(est.best_iteration_)
    assert est.evals_result_["valid_0"]["map"][k] == max(est.evals_result_["valid_0"]["map"])
    # one set: a bare array for eval_qid (not wrapped in a list), a single (X, y) tuple, eval_group
    one = rankkit.SGDRanker(iterations=500, random_state=4).fit(X, y, qid=q, eval_set=(Xv, yv), eval_group=_sizes(qv))
    again = rankkit.SGDRanker(iterations=500, random_state=4).fit(X, y, qid=q, eval_set=[(Xv, yv)], eval_qid=qv)
    assert one.evals_result_ == again.evals_result_
    with pytest.raises(UsageError, match="one entry per eval_set pair"):
        rankkit.SGDRanker(iterations=100).fit(X, y, qid=q, eval_set=[(Xv, yv), (Xt, yt)], eval_qid=[qv])
    with pytest.raises(UsageError, match="needs its queries"):
        rankkit.SGDRanker(iterations=100).fit(X, y, qid=q, eval_set=[(Xv, yv)])


def test_early_stopping_keeps_the_best_model(data):
    X, y, q, Xv, yv, qv = data[:6]
    # (an explicit convention: the run stops where MAP under it stops improving, whatever evaluate's default)
    sgd = rankkit.SGDRanker(iterations=50_000, random_state=1, patience=2, scoring_convention="letor4")
    sgd.fit(X, y, qid=q, eval_set=[(Xv, yv)], eval_qid=[qv])
    assert sgd.n_iter_ < 50_000 and "patience" in sgd.stop_reason_ and "--patience" not in sgd.stop_reason_
    best = rankkit.evaluate(yv, sgd.predict(Xv), qid=qv, metrics="map", convention="letor4")["map"]
    assert best == pytest.approx(max(sgd.evals_result_["valid_0"]["map"]), abs=1e-12)
    assert best == pytest.approx(sgd.best_score_["valid_0"]["map"], abs=1e-12)
    fact = rankkit.FactorizedRankSVM(K=2, iterations=300, patience=3, eta0=1e-2, scoring_convention="letor4")
    fact.fit(X, y, qid=q, eval_set=[(Xv, yv)], eval_qid=[qv])
    assert fact.stop_reason_.startswith("early stopping") and "(patience)" in fact.stop_reason_
    assert "--patience" not in fact.stop_reason_
    assert fact.best_iteration_ <= fact.n_iter_ and len(fact.evals_result_["valid_0"]["map"]) == fact.n_iter_


def test_ranksvm_eval_set_names_the_classes_to_use(data):
    X, y, q, Xv, yv, qv = data[:6]
    with pytest.raises(UsageError, match="rankkit.SGDRanker and rankkit.FactorizedRankSVM"):
        rankkit.RankSVM().fit(X, y, qid=q, eval_set=[(Xv, yv)], eval_qid=[qv])
    with pytest.raises(UsageError, match=r"learner='query-sgd'\) takes no eval_set.*pegasos"):
        rankkit.SGDRanker(learner="query-sgd").fit(X, y, qid=q, eval_set=[(Xv, yv)], eval_qid=[qv])


# -- 3. weights ---------------------------------------------------------------------------------------------
def test_sample_weight_per_query_per_row_and_dict_agree_with_fit_parts(tmp_path, data):
    X, y, q = data[:3]
    sizes = _sizes(q)
    ids = q[np.r_[0, np.cumsum(sizes)[:-1]]]
    w = np.random.default_rng(3).uniform(0.5, 2.0, sizes.shape[0])
    per_query = rankkit.RankSVM(C=0.1).fit(X, y, qid=q, sample_weight=w)
    per_row = rankkit.RankSVM(C=0.1).fit(X, y, qid=q, sample_weight=np.repeat(w, sizes))
    as_dict = rankkit.RankSVM(C=0.1).fit(X, y, qid=q, sample_weight=dict(zip(ids.tolist(), w.tolist())))
    old_name = rankkit.RankSVM(C=0.1).fit(X, y, qid=q, query_weight=dict(zip(ids.tolist(), w.tolist())))
    parts = rankkit.RankSVM(C=0.1).fit_parts([str(SAMPLE_TRAIN)], query_weights=dict(zip(ids.tolist(), w.tolist())))
    for other in (per_row, as_dict, old_name, parts):
        np.testing.assert_array_equal(_bits(other.coef_), _bits(per_query.coef_))
    with pytest.raises(UsageError, match="same for every row of a query"):
        rankkit.RankSVM().fit(X, y, qid=q, sample_weight=np.arange(X.shape[0], dtype=float))
    with pytest.raises(DataError, match="has no weight for qid"):
        rankkit.RankSVM().fit(X, y, qid=q, sample_weight={int(ids[0]): 1.0})
    with pytest.raises(UsageError, match="not both"):
        rankkit.RankSVM().fit(X, y, qid=q, sample_weight=w, query_weight=w)
    with pytest.raises(UsageError, match="sample_weight is not a parameter of solver 'pegasos'"):
        rankkit.SGDRanker(iterations=100).fit(X, y, qid=q, sample_weight=w)


# -- 4. features: names, intercept_, decision_function, importances, warm_start, partial_fit ----------------------
class Frame:
    """The least of a data frame (string columns, __array__, column selection): what scikit-learn and
    rankkit look at, so that the names are tested without pandas."""

    def __init__(self, values, columns):
        self.values, self.columns = np.asarray(values, dtype=float), list(columns)
        self.shape = self.values.shape

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)

    def __getitem__(self, cols):
        if isinstance(cols, str):
            return self.values[:, self.columns.index(cols)]
        return Frame(self.values[:, [self.columns.index(c) for c in cols]], cols)


def test_feature_names_are_kept_and_checked(data):
    X, y, q = data[:3]
    names = [f"f{j}" for j in range(X.shape[1])]
    dense = X.toarray()
    est = rankkit.RankSVM(C=0.1).fit(Frame(dense, names), y, qid=q)
    assert list(est.feature_names_in_) == names and est.n_features_in_ == X.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (X without names: tested below)
        np.testing.assert_array_equal(est.predict(Frame(dense, names)), est.predict(dense))
    shuffled = names[::-1]
    with pytest.raises(UsageError, match="same names in another order"):
        est.predict(Frame(dense[:, ::-1], shuffled))
    with pytest.raises(UsageError, match="missing: f0"):
        est.predict(Frame(dense[:, 1:], names[1:]))
    with pytest.warns(UserWarning, match="no feature names"):
        est.predict(dense)
    # the qid column travels with X
    with_qid = Frame(np.c_[q, dense], ["qid", *names])
    by_column = rankkit.RankSVM(C=0.1).fit(with_qid, y)
    np.testing.assert_array_equal(_bits(by_column.coef_), _bits(est.coef_))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert by_column.score(with_qid, y) == est.score(dense, y, qid=q)
    assert not hasattr(rankkit.RankSVM(C=0.1).fit(X, y, qid=q), "feature_names_in_")


def test_feature_names_with_pandas(data):
    pd = pytest.importorskip("pandas")
    X, y, q = data[:3]
    frame = pd.DataFrame(X.toarray(), columns=[f"f{j}" for j in range(X.shape[1])])
    est = rankkit.RankSVM(C=0.1).fit(frame, y, qid=q)
    with pytest.raises(UsageError, match="another order"):
        est.predict(frame[frame.columns[::-1]])
    with pytest.warns(UserWarning, match="no feature names"):
        np.testing.assert_array_equal(est.predict(frame), est.predict(X))
    qids = pd.Series(q, dtype="Int64")
    qids[5] = pd.NA
    with pytest.raises(ValueError, match="qid") as info:
        rankkit.RankSVM().fit(frame, y, qid=qids)
    assert info.value.line == 6
    labels = pd.Series(y, dtype="Float64")
    labels[2] = pd.NA
    with pytest.raises(ValueError) as info:
        rankkit.RankSVM().fit(frame, labels, qid=q)
    assert info.value.line == 3


def test_intercept_decision_function_importances(data):
    X, y, q, Xv = data[:4]
    for est in (rankkit.RankSVM(C=0.1).fit(X, y, qid=q), rankkit.SGDRanker(iterations=300).fit(X, y, qid=q)):
        assert est.intercept_ == 0.0
        np.testing.assert_array_equal(est.decision_function(Xv), est.predict(Xv))
        np.testing.assert_array_equal(est.feature_importances_, np.abs(est.coef_))
    kernel = rankkit.RankSVM(kernel="rbf", landmarks=30).fit(X, y, qid=q)
    with pytest.raises(AttributeError):
        kernel.feature_importances_


def test_warm_start(data):
    X, y, q = data[:3]
    cold = rankkit.RankSVM(C=1.0).fit(X, y, qid=q)
    warm = rankkit.RankSVM(C=0.5, warm_start=True).fit(X, y, qid=q)
    warm.set_params(C=1.0).fit(X, y, qid=q)
    assert warm.objective_ == pytest.approx(cold.objective_, rel=1e-6)  # the same optimum (to the stopping rule)
    np.testing.assert_allclose(warm.coef_, cold.coef_, rtol=0, atol=1e-3)
    assert warm.n_iter_ < cold.n_iter_  # from close by
    sgd = rankkit.SGDRanker(iterations=500, random_state=2, eta="basic", eta0=0.01, warm_start=True).fit(X, y, qid=q)
    first = sgd.coef_.copy()
    sgd.fit(X, y, qid=q)
    assert not np.array_equal(sgd.coef_, first)  # a second run, from the first one's weights
    from rankkit.solvers.sgd import SgdRankSVM

    by_hand = SgdRankSVM(iterations=500, seed=2, eta="basic", eta0=0.01).fit(rankkit.datasets.as_dataset(X, y, q),
                                                                            w0=first)
    np.testing.assert_array_equal(_bits(sgd.coef_), _bits(by_hand.w))
    with pytest.raises(UsageError, match="forgets the starting weights"):
        rankkit.SGDRanker(warm_start=True).fit(X, y, qid=q)
    with pytest.raises(UsageError, match="warm_start must be True or False"):
        rankkit.RankSVM(warm_start="yes").fit(X, y, qid=q)


@pytest.mark.parametrize("params,chunk,k", [
    ({"learner": "pegasos"}, 700, 3),
    ({"learner": "pegasos"}, 1000, 3),
    ({"learner": "sgd", "eta": "basic", "eta0": 0.1, "batch_size": 3, "sampler": "indexed"}, 150, 4),
    ({"learner": "pa", "C": 0.1, "sampler": "query-norm"}, 333, 3),
    ({"learner": "pair-sgd", "C": 0.01}, 200, 2),
], ids=["pegasos-700", "pegasos-1000", "sgd-batch-indexed", "pa-query-norm", "pair-sgd"])
def test_partial_fit_in_k_chunks_is_one_fit_bit_for_bit(data, params, chunk, k):
    X, y, q = data[:3]
    one = rankkit.SGDRanker(iterations=chunk * k, random_state=9, **params).fit(X, y, qid=q)
    est = rankkit.SGDRanker(iterations=chunk, random_state=9, **params)
    for _ in range(k):
        assert est.partial_fit(X, y, qid=q) is est
    np.testing.assert_array_equal(_bits(est.coef_), _bits(one.coef_))
    assert est.n_iter_ == one.n_iter_ == chunk * k and repr(est.objective_) == repr(one.objective_)


def test_partial_fit_refuses_another_run(data):
    X, y, q = data[:3]
    est = rankkit.SGDRanker(iterations=200, random_state=1).partial_fit(X, y, qid=q)
    with pytest.raises(UsageError, match="same data"):
        est.partial_fit(X[:-10], y[:-10], qid=q[:-10])
    with pytest.raises(UsageError, match="alpha changed"):
        est.set_params(alpha=0.5).partial_fit(X, y, qid=q)
    est.fit(X, y, qid=q)  # fit starts a new run; partial_fit continues it
    est.partial_fit(X, y, qid=q)
    np.testing.assert_array_equal(_bits(est.coef_),
                                  _bits(rankkit.SGDRanker(iterations=400, random_state=1, alpha=0.5).fit(X, y, qid=q).coef_))


# -- 5. fitted-state detection, the old parameter name ------------------------------------------------------------
def test_lambda_is_now_alpha_and_check_is_fitted_works(data):
    X, y, q = data[:3]
    with pytest.warns(FutureWarning, match="now alpha"):
        old = rankkit.SGDRanker(lambda_=0.01, iterations=300)
    assert old.alpha == 0.01 and "lambda_" not in old.get_params()
    new = rankkit.SGDRanker(alpha=0.01, iterations=300).fit(X, y, qid=q)
    np.testing.assert_array_equal(_bits(old.fit(X, y, qid=q).coef_), _bits(new.coef_))
    assert not rankkit.SGDRanker().__sklearn_is_fitted__() and new.__sklearn_is_fitted__()
    sklearn = pytest.importorskip("sklearn")
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    for cls in (rankkit.RankSVM, rankkit.SGDRanker, rankkit.FactorizedRankSVM):
        with pytest.raises(NotFittedError):
            check_is_fitted(cls())
    check_is_fitted(new)
    assert sklearn.base.clone(old).get_params() == old.get_params()


# -- 7. error types and messages -----------------------------------------------------------------------------
def test_input_errors_are_value_errors_naming_the_row(data):
    X, y, q = data[:3]
    q_obj = q.astype(object)
    q_obj[4] = None
    with pytest.raises(ValueError, match="qid is missing") as info:
        rankkit.RankSVM().fit(X, y, qid=q_obj)
    assert info.value.line == 5 and isinstance(info.value, DataError)
    q_nan = q.astype(float)
    q_nan[7] = np.nan
    with pytest.raises(DataError, match="qid is missing") as info:
        rankkit.RankSVM().fit(X, y, qid=q_nan)
    assert info.value.line == 8
    bad = X.copy()
    bad.indptr = bad.indptr.copy()
    bad.indptr[3] = bad.indptr[5] + 1000
    with pytest.raises(ValueError, match="not a valid CSR matrix"):
        rankkit.RankSVM().fit(bad, y, qid=q)
    with pytest.raises(ValueError, match="not a valid CSR matrix"):
        rankkit.RankSVM(C=0.1).fit(X, y, qid=q).predict(bad)
    with pytest.raises(ValueError, match="Complex data not supported"):
        rankkit.RankSVM().fit(X.toarray() * 1j, y, qid=q)
    with pytest.raises(ValueError, match=r"0 feature\(s\)"):
        rankkit.RankSVM().fit(np.zeros((4, 0)), [1, 0, 1, 0], group=[4])
    with pytest.raises(ValueError, match="requires y"):
        rankkit.RankSVM().fit(X, None, qid=q)
    with pytest.raises(ValueError, match="Reshape your data"):
        rankkit.RankSVM().fit(np.arange(4.0), [1, 0, 1, 0], group=[4])


@pytest.mark.parametrize("est,message", [
    (rankkit.FactorizedRankSVM(K=10**9), r"K=1000000000 is too large: the latent factors .* would need .*; lower K"),
    (rankkit.SGDRanker(batch_size=10**12), r"batch_size=1000000000000 is too large: .*; lower batch_size"),
])
def test_huge_sizes_are_parameter_errors_before_allocating(data, est, message):
    X, y, q = data[:3]
    with pytest.raises(UsageError, match=message):
        est.fit(X, y, qid=q)


def test_huge_sizes_are_refused_by_the_command_line_with_its_option_names(tmp_path, data):
    from click.testing import CliRunner

    from rankkit.cli import cli
    from tests.test_cli import rankkit as run_cli

    X, y, q, Xv, yv, qv = data[:6]
    with pytest.raises(UsageError, match="n_points=1000000000 is too large"):
        rankkit.regularization_path(X, y, Xv, yv, qid=q, qid_valid=qv, method="grid", n_points=10**9)
    proc = run_cli("train", SAMPLE_TRAIN, tmp_path / "m", "--solver", "factorized", "-K", "1000000000", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "-K 1000000000 is too large" in err and "lower -K" in err, err
    assert not (tmp_path / "m").exists()
    for args, flag in ((["train", SAMPLE_TRAIN, tmp_path / "m", "--solver", "pegasos", "--batch-size",
                         "1000000000000"], "--batch-size 1000000000000"),
                       (["train", SAMPLE_TRAIN, tmp_path / "m", "--solver", "pegasos", "--sampler", "stream",
                         "--batch-size", "1000000000000"], "--batch-size 1000000000000"),
                       (["path", SAMPLE_TRAIN, SAMPLE_VALI, "--method", "grid", "--n-points", "1000000000"],
                        "--n-points 1000000000")):
        res = CliRunner().invoke(cli, [str(a) for a in args])  # (in this process: the message, not the exit)
        assert isinstance(res.exception, UsageError) and f"{flag} is too large" in str(res.exception), res.output
        assert not (tmp_path / "m").exists()


# -- 8. check_estimator with wrappers that supply the queries -----------------------------------------------------
class OneQueryRankSVM(rankkit.RankSVM):
    """check_estimator passes no queries: every X is one query (AUC optimisation)."""

    def fit(self, X, y=None, **kwargs):
        return super().fit(X, y, group=[X.shape[0]] if hasattr(X, "shape") else None, **kwargs)

    def score(self, X, y, **kwargs):
        return super().score(X, y, group=[np.shape(X)[0]])


class OneQuerySGDRanker(rankkit.SGDRanker):
    def fit(self, X, y=None, **kwargs):
        return super().fit(X, y, group=[X.shape[0]] if hasattr(X, "shape") else None, **kwargs)

    def partial_fit(self, X, y=None, **kwargs):
        return super().partial_fit(X, y, group=[X.shape[0]] if hasattr(X, "shape") else None, **kwargs)

    def score(self, X, y, **kwargs):
        return super().score(X, y, group=[np.shape(X)[0]])


class OneQueryFactorizedRankSVM(rankkit.FactorizedRankSVM):
    def fit(self, X, y=None, **kwargs):
        return super().fit(X, y, group=[X.shape[0]] if hasattr(X, "shape") else None, **kwargs)

    def score(self, X, y, **kwargs):
        return super().score(X, y, group=[np.shape(X)[0]])


@pytest.mark.parametrize("est", [OneQueryRankSVM(), OneQuerySGDRanker(iterations=200),
                                 OneQueryFactorizedRankSVM(K=2, iterations=20)],
                         ids=["RankSVM", "SGDRanker", "FactorizedRankSVM"])
def test_check_estimator_passes_with_a_query_supplying_wrapper(est):
    """scikit-learn's check_estimator: every check passes (README, "check_estimator", says which
    wording choices that took, and what the wrapper is for)."""
    pytest.importorskip("sklearn")
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None)
    failed = {r["check_name"]: f"{type(r['exception']).__name__}: {r['exception']}" for r in results
              if r["status"] == "failed"}
    assert failed == {}
    assert len(results) >= 40
