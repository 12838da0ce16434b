"""`rankkit path TRAIN VALID --dask ADDRESS --method grid`: the warm-started grid of C
(rankkit.paths.grid.grid_path) with each fit on the cluster. The parts are read once and stay on the
workers for the whole path; VALID (a single file, normally small) is read and scored here."""

from __future__ import annotations

import time

import numpy as np

from rankkit.errors import UsageError


def grid_path_parts(parts, valid, client, *, metric="ndcg@10", select="best", n_points=30, ratio=1e7, tol=None,
                    max_iter=None, zero_based=False, log=None):
    """rankkit.paths.grid.grid_path on a cluster: returns (PathResult, facts). `valid` is a Dataset."""
    from rankkit.distributed.cluster import connect
    from rankkit.distributed.cluster import cluster_failures
    from rankkit.distributed.newton import Problem, prob_facts
    from rankkit.distributed.parts import expand_parts
    from rankkit.metrics import parse_metric
    from rankkit.paths.grid import PathPoint, PathResult, mean_se, select_point, validation_values
    from rankkit.solvers.base import quiet_fp
    from rankkit.solvers.newton import DEFAULT_MAX_ITER, DEFAULT_TOL

    parse_metric(metric)
    parts = expand_parts(parts)
    tol = DEFAULT_TOL if tol is None else tol
    max_iter = DEFAULT_MAX_ITER if max_iter is None else max_iter
    with connect(client, log=log) as cl, cluster_failures():
        prob = Problem(cl, parts, zero_based=zero_based, log=log)
        try:
            with quiet_fp():
                lo = prob.c_min()
                Cs = lo * np.logspace(0.0, np.log10(ratio), n_points)
                points, w = [], None
                for k, C in enumerate(Cs.tolist()):
                    t0 = time.perf_counter()
                    res = prob.fit(C, w0=w, tol=tol, max_iter=max_iter)
                    w = res.w
                    vals = validation_values(valid, w, metric)
                    m, se = mean_se(vals)
                    loss = (res.objective - 0.5 * float(w @ w)) / C
                    points.append(PathPoint(C, res.iterations, res.objective, loss, res.n_active,
                                            float(np.linalg.norm(w)), m, se, time.perf_counter() - t0, w.copy(), vals))
                    if log:
                        log(f"point {k + 1:3d}/{len(Cs)}  C {C:.4g}  newton iterations {res.iterations:3d}  "
                            f"violated {res.n_active}  valid {metric} {m:.4f}  {points[-1].seconds:.3f}s")
        finally:
            prob.close()
    notes: list = []
    chosen = select_point(points, select, valid=valid, notes=notes, metric=metric)
    return PathResult("grid", metric, points, chosen, select, notes), prob_facts(prob)


def path_one(train, valid_file, method, metric, select, n_points, ratio, zero_based, group_queries, log, exact,
             group_file, dask):
    """commands._path_one for `--dask`: (PathResult, None, facts) with the facts `rankkit path` records."""
    from rankkit.io.svmlight import read_svmlight

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
