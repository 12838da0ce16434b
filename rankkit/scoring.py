"""Scores of documents under a model: rankkit's linear, sparse and kernel models, and the models of
svm_rank, liblinear and sofia-ml exactly as their own predict programs compute them. Used by the
command line's predict and by the Python estimators' predict, so both give the same scores bit for bit.
"""

from __future__ import annotations

import numpy as np

from rankkit.feature_maps import kernel_scores, make_kernel
from rankkit.io.foreign_models import ForeignModel
from rankkit.sparse import csr_matvec, ignored_entries


def model_scores(model, ds) -> tuple[np.ndarray, int]:
    """Scores of ds under the model (linear, or beta' k(x) for a kernel model; a foreign model as
    its tool's predict program computes them), and how many feature values lie beyond the model's
    features (ignored)."""
    ignored = int(ignored_entries(ds.indices, model.n_features))
    if isinstance(model, ForeignModel):
        return foreign_scores(model, ds.with_float_values()), ignored
    if model.landmarks is not None:
        name, gamma, degree, coef0 = model.kernel_args()  # read_model checked them: a ModelError names the model
        k = make_kernel(name, model.n_features, gamma, degree, coef0)
        return kernel_scores(k, model.landmarks, model.weights, ds.csr()), ignored
    if model.feature_index is not None:  # sparse model: data columns -> positions in its sorted feature list
        m = model.feature_index.shape[0]
        pos = np.searchsorted(model.feature_index, ds.indices)
        hit = pos < m
        hit[hit] = model.feature_index[pos[hit]] == ds.indices[hit]
        cols = np.where(hit, pos, m).astype(np.int32)  # m: not a model feature, csr_matvec skips it (weight 0)
        scores = csr_matvec(ds.data, cols, ds.indptr, model.weights, np.empty(ds.n_rows), ds.value_scale)
        return scores, ignored
    scores = csr_matvec(ds.data, ds.indices, ds.indptr, model.weights, np.empty(ds.n_rows), ds.value_scale)
    return scores, ignored


def foreign_scores(model, ds) -> np.ndarray:
    """Each document's score exactly as the tool's own predict program computes it (see
    rankkit.io.foreign_models): the same roundings, the same order of the sums."""
    if model.format == "sofia-ml":  # C floats throughout: acc = w_0 * 1, then += w_j * x_j in feature order
        w32 = model.weights.astype(np.float32)
        x32 = ds.data.astype(np.float32)
        d = w32.shape[0]
        acc = np.full(ds.n_rows, np.float32(model.constant), dtype=np.float32)
        lengths = np.diff(ds.indptr)
        for k in range(int(lengths.max()) if lengths.size else 0):
            rows = np.flatnonzero(lengths > k)
            t = ds.indptr[rows] + k
            j = ds.indices[t]
            keep = j < d  # beyond the model: undefined in sofia-ml, weight 0 here
            rows, t, j = rows[keep], t[keep], j[keep]
            acc[rows] = acc[rows] + w32[j] * x32[t]
        return acc.astype(np.float64)
    data = ds.data
    if model.format == "svm_rank":  # SVMlight stores a document's values as C floats
        data = data.astype(np.float32).astype(np.float64)
    scores = csr_matvec(data, ds.indices, ds.indptr, model.weights, np.empty(ds.n_rows))
    if model.format == "liblinear":
        if model.bias >= 0:  # predict appends feature nr_feature + 1 = bias; summed last
            scores = scores + model.bias_weight * model.bias
        return scores
    return scores + model.constant  # svm_rank: w.x - b


# -- ranking scorers for scikit-learn's model selection ---------------------------------------------------
class RankingScorer:
    """A scikit-learn scorer of a ranking metric: ``scorer(estimator, X, y, qid=...)`` is the mean of
    `metric` over the queries of the estimator's scores, as ``rankkit.evaluate`` computes it under
    `convention` (None: evaluate's default). Made by `make_scorer`; usable wherever scikit-learn
    takes a scorer (GridSearchCV's ``scoring=``, a dict of them, cross_validate, check_scoring).

    The queries come from ``qid=`` / ``group=`` (metadata routing passes ``qid``: the scorer asks for
    it by default) or from a ``qid`` column of a data frame X. A scorer never returns a number
    computed without the queries: without them it raises."""

    def __init__(self, metric: str, convention: str | None = None):
        from rankkit.metrics import parse_metric

        parse_metric(metric)  # a UsageError now, not inside a search
        self.metric, self.convention = metric, convention
        self._requests: dict = {}

    def __repr__(self) -> str:
        conv = "" if self.convention is None else f", convention={self.convention!r}"
        return f"rankkit.make_scorer({self.metric!r}{conv})"

    def __call__(self, estimator, X, y, qid=None, group=None, sample_weight=None) -> float:
        from rankkit.datasets import split_qid_column
        from rankkit.errors import UsageError
        from rankkit.evaluation import evaluate

        if sample_weight is not None:
            raise UsageError("a ranking metric is a mean over queries: it takes no sample_weight")
        if y is None:
            raise UsageError("a ranking scorer needs the relevance labels y")
        if qid is None and group is None:
            _, qid = split_qid_column(X)
        if qid is None and group is None:
            raise UsageError(
                f"{self!r} needs the queries of X (qid= or group=), and none reached it: a ranking metric is "
                "computed per query. Under scikit-learn's model selection enable metadata routing "
                "(sklearn.set_config(enable_metadata_routing=True)) and pass qid= to the search's fit, or give X "
                "as a data frame with a 'qid' column")
        kwargs = {} if self.convention is None else {"convention": self.convention}
        scores = estimator.predict(X)
        return float(evaluate(y, scores, qid=qid, group=group, metrics=(self.metric,), **kwargs)[self.metric])

    # scikit-learn's metadata routing: the scorer asks for qid (and group) by default
    def set_score_request(self, **requests) -> "RankingScorer":
        from rankkit.errors import UsageError

        for key, value in requests.items():
            if key not in ("qid", "group", "sample_weight"):
                raise UsageError(f"a ranking scorer takes no metadata {key!r} (it takes: qid, group)")
            self._requests[key] = value
        return self

    def get_metadata_routing(self):
        from sklearn.utils.metadata_routing import MetadataRequest

        request = MetadataRequest(owner=repr(self))
        for param, default in (("qid", True), ("group", None), ("sample_weight", None)):
            request.score.add_request(param=param, alias=self._requests.get(param, default))
        return request


def make_scorer(metric: str = "ndcg@10", convention: str | None = None) -> RankingScorer:
    """A scikit-learn scorer of a ranking metric, for GridSearchCV's ``scoring=``.

    scikit-learn has no ranking scorer that knows queries (``scoring="ndcg"`` is not one of its
    names); this one evaluates the estimator's scores per query with ``rankkit.evaluate``.

    Parameters
    ----------
    metric : str, default "ndcg@10"
        A metric name of ``rankkit eval``: ndcg@k, ndcg, map, p@k, mrr, err@k, auc, ...
    convention : str, optional
        The convention (letor4, letor3, trec, exp); default: ``rankkit.evaluate``'s.

    Returns
    -------
    RankingScorer
        ``scorer(estimator, X, y, qid=...)`` -> float (higher is better). Under metadata routing it
        asks for ``qid`` by default; without routing, give X as a data frame with a ``qid`` column.

    Examples
    --------
    >>> import numpy as np, rankkit
    >>> X = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    >>> y, qid = np.array([2, 1, 0, 1, 0]), np.array([1, 1, 1, 2, 2])
    >>> ranker = rankkit.RankSVM(C=10.0).fit(X, y, qid=qid)
    >>> scorer = rankkit.make_scorer("map", convention="trec")
    >>> scorer
    rankkit.make_scorer('map', convention='trec')
    >>> scorer(ranker, X, y, qid=qid)
    1.0
    """
    return RankingScorer(metric, convention)


def get_scorer(name: str) -> RankingScorer:
    """The scorer of a name: ``"ndcg@10"``, ``"map"``, or ``"map:trec"`` (metric:convention).

    Parameters
    ----------
    name : str
        ``METRIC`` or ``METRIC:CONVENTION``.

    Returns
    -------
    RankingScorer

    Examples
    --------
    >>> import rankkit
    >>> rankkit.get_scorer("ndcg@5:exp")
    rankkit.make_scorer('ndcg@5', convention='exp')
    """
    metric, _, convention = str(name).partition(":")
    return RankingScorer(metric, convention or None)
