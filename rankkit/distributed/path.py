"""`rankkit path TRAIN VALID --dask ADDRESS --method grid`: the warm-started grid of C
(rankkit.selection.grid_path) with each fit on the cluster. The parts are read once and stay on the
workers for the whole path; VALID (a single file, normally small) is read and scored here."""

from __future__ import annotations

from rankkit.parts.cluster import cluster_failures, connect
from rankkit.parts.newton import Problem, prob_facts
from rankkit.io.parts import expand_parts
from rankkit.errors import UsageError
from rankkit.io.svmlight import read_svmlight
from rankkit.metrics import parse_metric
from rankkit.paths.grid import grid_from, path_over
from rankkit.solvers.base import quiet_fp
from rankkit.solvers.newton import path_memory
from rankkit.solvers.base import DEFAULT_MAX_ITER, DEFAULT_TOL


def grid_path_parts(parts, valid, client, *, metric="ndcg@10", select="best", n_points=30, ratio=1e7, tol=None,
                    max_iter=None, zero_based=False, log=None):
    """rankkit.selection.grid_path on a cluster: returns (PathResult, facts). `valid` is a Dataset."""
    parse_metric(metric)
    parts = expand_parts(parts)
    tol = DEFAULT_TOL if tol is None else tol
    max_iter = DEFAULT_MAX_ITER if max_iter is None else max_iter
    with connect(client, log=log) as cl, cluster_failures():
        prob = Problem(cl, parts, zero_based=zero_based, log=log)
        try:
            with quiet_fp():
                Cs = grid_from(prob.c_min(), n_points, ratio)

            def fit(C, w0):
                return prob.fit(C, w0=w0, tol=tol, max_iter=max_iter)

            result = path_over(fit, Cs, valid, metric=metric, select=select, log=log, along=path_memory)
        finally:
            prob.close()
    return result, prob_facts(prob)


def path_one(train, valid_file, method, metric, select, n_points, ratio, zero_based, group_queries, log, exact,
             group_file, dask):
    """The single path of rankkit.app.path for `--dask`: (PathResult, None, facts) with the facts `rankkit path` records."""
    if method not in (None, "grid"):
        raise UsageError("--dask runs the grid path (--method grid); the exact path runs in one process")
    exact = dict(exact or {})
    if exact.get("kernel", "linear") != "linear" or exact.get("graph", "full") != "full":
        raise UsageError("--kernel and --graph are options of --method exact")
    if group_queries or group_file not in ("auto", None):
        raise UsageError("--group-queries and --group are not offered with --dask")
    valid = read_svmlight(valid_file, zero_based=zero_based, log=log)
    result, facts = grid_path_parts([train], valid, dask, metric=metric, select=select, n_points=n_points, ratio=ratio,
                                    zero_based=zero_based, log=log)
    out = {"train_file": train, "n_queries": facts["n_queries"], "n_documents": facts["n_documents"],
           "n_pairs": facts["n_pairs"], "n_features": facts["n_features"], "method": "grid", "notes": result.notes,
           "raw": None, "train_csr": None, "parts": facts["parts"], "workers": facts["workers"]}
    return result, None, out
