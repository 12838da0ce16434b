"""RankSVM on dask collections, as Dask users hold their data (issue 40): the counterpart of
``lightgbm.DaskLGBMRanker``.

    from rankkit.dask import DaskRankSVM
    ranker = DaskRankSVM(C=0.01, client=client).fit(X, y, qid="qid")   # X: dask array or dataframe
    scores = ranker.predict(X_test)                                   # lazy: a dask array (or series)
    rankkit.dask.evaluate(y_test, scores, qid_test)                   # rankkit.evaluate's numbers
    ranker.to_local()                                                 # a plain rankkit.RankSVM

The Dask face over the Python face: DaskRankSVM is a RankSVM (its parameters, its checks, its
model and every fitted attribute), whose fit trains where the collection's blocks are with the
Newton driver of ``--dask`` (rankkit.distributed.collections: the blocks become parts of whole
queries, each Newton step one round of per-part sums, the same waits and fault handling), and
whose predict maps the local estimator over the blocks. The estimators never import this module.
Needs ``pip install 'rankkit[dask]'``.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import warnings

import numpy as np

from rankkit import console, training
from rankkit.config import DEFAULT_CONVENTION
from rankkit.parts.cluster import ClusterError, cluster_failures, connect
from rankkit.distributed.collections import evaluate_collection, fit_collection, is_dask_collection, is_frame, row_blocks
from rankkit.errors import UsageError
from rankkit.estimators import ConvergenceWarning, RankSVM, set_fitted_state
from rankkit.evaluation import DEFAULT_METRICS
from rankkit.io.model import Model
from rankkit.solvers.options import check_dask

__all__ = ["DaskRankSVM", "evaluate"]


@contextlib.contextmanager
def _cluster(client, log=None):
    """The client to run on (the one given, an address, or Dask's default client), connected and
    watched (every wait bounded by RANKKIT_DASK_TIMEOUT; Dask's own log lines kept off stderr);
    every cluster failure a ClusterError."""
    if client is None:
        try:
            from distributed import default_client

            client = default_client()
        except ImportError:
            raise ClusterError("rankkit.dask needs Dask's distributed scheduler: pip install 'rankkit[dask]'") from None
        except ValueError:
            raise UsageError("no Dask client: pass client= (a distributed.Client or an address) or create a "
                             "distributed.Client() first") from None
    with connect(client, log=log) as cl, cluster_failures():
        yield cl


class DaskRankSVM(RankSVM):
    __doc__ = """RankSVM (solver newton, linear models) on a Dask cluster, over dask collections.

    Parameters
    ----------
    The parameters of ``rankkit.RankSVM`` (solver newton: C, loss, tol, max_iter, query_norm,
    rescale, delta, warm_start, verbose, ...), and:

    client : distributed.Client or str, optional
        The cluster: a Client (used as it is, never closed), an address ``tcp://host:8786``, or
        None: Dask's default client (the last one created), as ``lightgbm.DaskLGBMRanker``. Not
        pickled (a pickled or ``to_local`` model has none).

    ``fit(X, y, *, qid=None, group=None, sample_weight=None)``: X a dask array (dense, or with
    scipy.sparse chunks; its row chunks are the blocks) or a dask dataframe (its partitions), y
    and qid dask arrays or series of the same rows (qid may name a column of a dataframe X; a
    column named 'qid' is taken when neither qid nor group is given), group the sizes of the
    queries (array-like), sample_weight a dask array or series of one weight per row (the same for
    a query's rows) or ``{qid: weight}``. A query's rows are contiguous; a query that a chunk
    boundary splits is joined on one worker. The data stays on the workers: the client holds a few
    numbers per block and O(features) per Newton step. The weights equal ``RankSVM().fit`` on the
    computed arrays (to the solver's rounding: 1e-9 relative at tol=1e-9), whatever the chunking
    and the number of workers. A worker lost during the fit: its parts are computed again from the
    collection's graph on the others; every worker lost, or the scheduler lost or not answering
    for RANKKIT_DASK_TIMEOUT seconds (default 10): one ``rankkit.ClusterError``.

    Examples
    --------
    >>> import dask.array as da, numpy as np                                  # doctest: +SKIP
    >>> from distributed import Client                                        # doctest: +SKIP
    >>> from rankkit.dask import DaskRankSVM                                  # doctest: +SKIP
    >>> client = Client(n_workers=2, threads_per_worker=1)                    # doctest: +SKIP
    >>> X = da.from_array(X_np, chunks=(1000, -1)); y = da.from_array(y_np, chunks=1000)  # doctest: +SKIP
    >>> ranker = DaskRankSVM(C=0.01).fit(X, y, qid=da.from_array(qid_np, chunks=1000))    # doctest: +SKIP
    >>> ranker.predict(X).compute()                                           # doctest: +SKIP
    """

    def __init__(self, *args, client=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.client = client

    # -- pickling: a client does not travel ------------------------------------------------------------
    def __getstate__(self):
        state = dict(self.__dict__)
        state["client"] = None
        return state

    def __sklearn_clone__(self):
        """scikit-learn's clone: the parameters copied, the client shared (a Client cannot be copied)."""
        new = type(self)(**{k: v if k == "client" else copy.deepcopy(v) for k, v in self.get_params().items()})
        if "_metadata_request" in self.__dict__:  # set_fit_request / set_score_request, as clone copies them
            new.__dict__["_metadata_request"] = copy.deepcopy(self.__dict__["_metadata_request"])
        return new

    def to_local(self) -> RankSVM:
        """A plain ``rankkit.RankSVM`` with the same parameters and the same fitted model."""
        params = {k: v for k, v in self.get_params().items() if k != "client"}
        local = RankSVM(**params)
        for k, v in self.__dict__.items():
            if k.endswith("_") and not k.startswith("_"):
                local.__dict__[k] = v
        return local

    # -- fit -------------------------------------------------------------------------------------------
    def fit(self, X, y, *, qid=None, group=None, sample_weight=None) -> "DaskRankSVM":
        """Fit on dask collections (see the class's docstring); returns self."""
        if y is None:
            raise UsageError("DaskRankSVM requires y to be passed, but the target y is None: a ranker learns from "
                             "relevance labels")
        if not is_dask_collection(X):
            raise UsageError(f"X is a {type(X).__name__}, not a dask array or dataframe: for data in memory, use "
                             "rankkit.RankSVM (DaskRankSVM.to_local() gives one)")
        solver, params, _ = self._options()  # the local estimator's checks, in its words
        loss = check_dask(solver, params.get("loss"), self.kernel is not None, self._words)
        plan = training.plan("newton", dict(params, loss=loss), words=self._words)
        solver_obj = plan.solver()
        settings = solver_obj.hyperparameters()
        w0 = None
        if self.warm_start and getattr(self, "model_", None) is not None:
            w0 = self.coef_
        log = console.say if self.verbose else None
        for stale in ("train_auc_", "factors_", "feature_names_in_"):
            self.__dict__.pop(stale, None)
        with _cluster(self.client, log) as client:
            blocks = row_blocks(client, X, y, qid, group, sample_weight)
            if w0 is not None and w0.shape[0] != blocks.n_features:
                raise UsageError(f"warm_start: the previous fit had {w0.shape[0]} features, X has {blocks.n_features}")
            result, facts = fit_collection(client, blocks, C=settings["C"], loss=solver_obj.loss, tol=settings["tol"],
                                           max_iter=settings["max_iter"], query_norm=settings["query_norm"],
                                           rescale=settings.get("rescale"), delta=settings.get("delta", "gain"),
                                           log=log, w0=w0)
        if training.needs_warning(result):
            warnings.warn(training.stop_words(result, self._words), ConvergenceWarning, stacklevel=2)
        data = training.data_counts(facts["n_features"], facts["n_queries"], facts["n_documents"], facts["n_pairs"])
        header = training.model_header("newton", solver_obj.loss, settings, data, training.fit_outcome(result),
                                       training.cluster_facts(facts), result.train_time)
        used = facts["feature_index"]
        if used is not None:  # weights of the columns that occur; every other feature's weight is exactly 0
            model = Model(weights=result.w, header=header, feature_index=used, n_total=facts["n_features"])
        else:
            model = Model(weights=result.w, header=header)
        set_fitted_state(self, model, result, facts["n_pairs"], facts["n_queries"])
        if blocks.names is not None:
            self.feature_names_in_ = blocks.names
        return self

    # -- predict, score ----------------------------------------------------------------------------------
    def predict(self, X):
        """Scores of the rows of X: a dask array (X a dask array) or series (X a dask dataframe;
        its index kept), lazy, one block per block of X, computed on the workers by the local
        estimator (``to_local().predict``). Arrays in memory: a numpy array, as RankSVM."""
        self._check_fitted()
        if not is_dask_collection(X):
            return self.to_local().predict(X)
        local = self.to_local()
        if is_frame(X):
            import pandas as pd

            return X.map_partitions(_score_frame, local, meta=pd.Series(dtype=np.float64, name="score"))
        if X.ndim != 2:
            raise UsageError(f"X must be a 2-dimensional dask array (rows: documents), got {X.ndim} dimensions")
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        return X.map_blocks(_score_block, local, drop_axis=1, dtype=np.float64, meta=np.zeros(0))

    def score(self, X, y, qid=None, group=None, sample_weight=None) -> float:
        """Mean ``scoring_metric`` over the queries of dask collections (rankkit.dask.evaluate of
        predict(X)), as ``RankSVM.score`` on the computed arrays."""
        if sample_weight is not None:
            raise UsageError("DaskRankSVM.score takes no sample_weight (the metrics are means over the queries)")
        if isinstance(qid, str) or (qid is None and group is None and is_frame(X) and "qid" in X.columns):
            column = qid if isinstance(qid, str) else "qid"
            qid, X = X[column], X.drop(columns=[column])  # the queries, not a feature
        scores = self.predict(X)
        convention = self.scoring_convention or DEFAULT_CONVENTION
        return evaluate(y, scores, qid, group=group, metrics=self.scoring_metric, convention=convention,
                        client=self.client)[self.scoring_metric]


# the parameters: RankSVM's and client= (what get_params, set_params, clone and repr read)
_local = inspect.signature(RankSVM.__init__)
DaskRankSVM.__init__.__signature__ = _local.replace(parameters=[
    *_local.parameters.values(), inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None)])


def _score_block(block, local):
    return local.predict(block)


def _score_frame(frame, local):
    import pandas as pd

    if "qid" in frame.columns and getattr(local, "feature_names_in_", None) is not None \
            and "qid" not in list(local.feature_names_in_):
        frame = frame.drop(columns=["qid"])
    return pd.Series(local.predict(frame), index=frame.index, dtype=np.float64, name="score")


def evaluate(y, scores, qid=None, group=None, metrics=DEFAULT_METRICS, convention: str = DEFAULT_CONVENTION,
             per_query: bool = False, *, empty_query: str | None = None, docids=None, client=None):
    """``rankkit.evaluate`` over dask collections: y, scores (and qid, docids) dask arrays or
    series of the same rows, group query sizes. The per-query values are computed on the workers
    (a query that a chunk boundary splits joined on one), the means here: the same numbers as
    ``rankkit.evaluate`` on the computed arrays, ties broken the same way. client: as
    DaskRankSVM's. Returns ``{metric: mean}`` (and with per_query ``{"qid": ..., metric: ...}``)."""
    with _cluster(client) as cl:
        return evaluate_collection(cl, y, scores, qid, group, metrics=metrics, convention=convention,
                                   per_query=per_query, empty_query=empty_query, docids=docids)
