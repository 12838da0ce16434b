"""Training, prediction and evaluation on a Dask cluster (`--dask ADDRESS`; README: Distributed
training). Dask is imported only when a function here runs (`pip install 'rankkit[dask]'`).

    rankkit/distributed/path.py      the warm-started grid of C on a cluster
    rankkit/distributed/commands.py  the CLI's use cases over parts (train, predict, eval)
    rankkit/distributed/collections.py  dask arrays and dataframes as parts of whole queries
    rankkit/parts/                   training on parts, a use case every face calls: cluster.py (ADDRESS
                                     or a Client; cluster failures as one line), worker.py (what runs on
                                     a worker), newton.py (the Newton driver over per-part partial sums,
                                     on a cluster or in this process; fit_parts)
    rankkit/io/parts.py              PARTS as paths; joined as if concatenated for the solvers other than newton

Python: fit_newton (and RankSVM.fit_parts), predict_parts and evaluate_parts (also rankkit.predict_parts,
rankkit.evaluate_parts); every cluster failure is a rankkit.ClusterError (exit status 2 on the CLI).
SGDRanker has no fit on a cluster: see README, Distributed training, "Not supported".

Layer (tests/test_architecture.py's LAYERS): the whole package is the Dask face, over the Python
face: it may import rankkit.estimators and every layer below (rankkit.parts, the use case
"training on parts" that every face uses), never the CLI (rankkit.app, rankkit.cli).
"""

from __future__ import annotations

from rankkit.config import DEFAULT_CONVENTION


def fit_newton(parts, client, *, C: float = 1.0, loss: str = "squared-hinge", tol: float = 1e-6, max_iter: int = 100,
               query_norm: bool = False, rescale: str | None = None, delta: str = "gain", query_weights=None,
               zero_based: bool = False, log=None, w0=None):
    """Train the Newton RankSVM on `parts` on a Dask cluster; returns (FitResult, facts).

    parts: paths (or globs, expanded here and sorted) that the workers can read, each holding
        whole queries; their order is the order of the reduction.
    client: None (in this process: the same partial sums in the same order, so the same w), a
        dask.distributed.Client (used as it is, never closed), or an address string:
        'tcp://host:8786', or 'local[:N]' (a LocalCluster of N processes for this call).
    C, loss ('squared-hinge', 'huber', 'logistic'), tol, max_iter, query_norm, rescale (None,
        'margin', 'slack'), delta ('gain' or a value per label '0,1,3,7,15'): as `rankkit train`.
    query_weights: None, a path to a `qid weight` file (each worker reads it), or {qid: weight}.
    zero_based: feature indices in the parts start at 0.
    log: None or a callable taking one line of progress (what `-v` prints).
    w0: None or a starting point of n_features numbers (a warm start; the optimum is the same).

    FitResult: w, objective, iterations, converged, message, n_active, train_time, extra
    (cg_iterations, gradient_norm). facts: n_documents, n_queries, n_pairs, n_features, nnz,
    parts, workers, rounds, compute_seconds, communication_seconds, bytes_moved, parts_read_again,
    feature_index (the columns trained on when few of many occur, as `rankkit train FILE` does;
    None otherwise: w still has n_features numbers, 0 outside them).

    The same w, bit for bit, in this process and for any number of workers and any assignment
    of parts to them.
    Raises rankkit.errors.DataError (bad data: the part and line; a query split across parts),
    UsageError, or rankkit.parts.cluster.ClusterError (unreachable or lost cluster)."""
    from rankkit.parts.newton import fit_newton as fit

    return fit(parts, client, C=C, loss=loss, tol=tol, max_iter=max_iter, query_norm=query_norm, rescale=rescale,
               delta=delta, query_weights=query_weights, zero_based=zero_based, log=log, w0=w0)


def fit_parts(plan, parts, client=None, *, query_weights=None, zero_based: bool = False, log=None, warn=None):
    """The one fit of solver newton on parts, for every face (rankkit.parts.newton.fit_parts):
    on a cluster (client a Client or an address) or in this process (client None), the same bytes.
    Returns (Model, FitResult, facts)."""
    from rankkit.parts.newton import fit_parts as fit

    return fit(plan, parts, client, query_weights=query_weights, zero_based=zero_based, log=log, warn=warn)


def predict_parts(model, parts, client=None, *, zero_based=None):
    """Scores of every document of `parts` under `model`, as ``rankkit predict PARTS... --dask``.

    Parameters
    ----------
    model : Ranker, model or str
        A fitted rankkit estimator, a model (``rankkit.load_model``) or a model file's path.
    parts : str or sequence of str
        Paths or globs (expanded here, sorted) of SVMlight/LETOR files; on a cluster, paths the
        workers can read (made absolute here) or URLs that fsspec reads.
    client : dask.distributed.Client or str, optional
        A Client (used as it is), an address ``tcp://host:8786`` or ``local[:N]``; None reads
        the parts in this process, one at a time.
    zero_based : bool, optional
        The parts' feature indices start at 0 (default: as the model says).

    Returns
    -------
    ndarray of float64, shape (n_documents,)
        The parts' documents in part order, each part's in file order: what ``rankkit predict``
        writes for the concatenated file. The client holds them all; for more documents than fit
        here, ``rankkit predict PARTS... --out-dir DIR --dask`` writes one file per part.

    Raises
    ------
    rankkit.DataError, rankkit.ModelError, rankkit.UsageError, rankkit.ClusterError

    Examples
    --------
    >>> import rankkit
    >>> ranker = rankkit.RankSVM(C=0.01).fit_parts(["data/sample.train.txt"])
    >>> scores = rankkit.predict_parts(ranker, ["data/sample.vali.txt", "data/sample.test.txt"])
    >>> scores.shape
    (1283,)
    >>> scores = rankkit.predict_parts(ranker, "data/sample.*.txt", client="local:2")  # doctest: +SKIP
    """
    from rankkit.distributed.commands import score_parts

    return score_parts(parts, model, dask=client, zero_based=zero_based)


def evaluate_parts(parts, scores, client=None, *, metrics=("ndcg@10", "map"), convention: str = DEFAULT_CONVENTION,
                   per_query: bool = False, empty_query=None, zero_based: bool = False):
    """Ranking metrics of `scores` against the labels of `parts`, as ``rankkit eval PARTS... SCORES
    --dask`` and ``rankkit.evaluate`` on the same data in one file compute them.

    Parameters
    ----------
    parts : str or sequence of str
        Paths or globs of SVMlight/LETOR files, each holding whole queries (a query in two parts
        is a DataError naming both).
    scores : array-like of float or str
        The score of every document of the parts in part order (as ``predict_parts`` returns
        them), or a SCORES file's path.
    client : dask.distributed.Client or str, optional
        As in ``predict_parts``; None computes in this process, one part at a time.
    metrics, convention, per_query, empty_query
        As in ``rankkit.evaluate``.
    zero_based : bool, default False
        The parts' feature indices start at 0.

    Returns
    -------
    dict
        ``{metric: mean over the queries}``.
    dict, only with ``per_query=True``
        ``{"qid": int64[n_queries], metric: float64[n_queries], ...}``, the parts' queries in part order.

    Raises
    ------
    rankkit.DataError, rankkit.UsageError, rankkit.ClusterError

    Examples
    --------
    >>> import rankkit
    >>> ranker = rankkit.RankSVM(C=0.01).fit_parts(["data/sample.train.txt"])
    >>> parts = ["data/sample.vali.txt", "data/sample.test.txt"]
    >>> means = rankkit.evaluate_parts(parts, rankkit.predict_parts(ranker, parts), metrics="map")
    >>> sorted(means)
    ['map']
    """
    from rankkit.distributed.commands import evaluate_over_parts

    return evaluate_over_parts(parts, scores, dask=client, metrics=metrics, convention=convention,
                               per_query=per_query, empty_query=empty_query, zero_based=zero_based)


__all__ = ["fit_newton", "fit_parts", "predict_parts", "evaluate_parts"]
