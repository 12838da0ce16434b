"""Model selection along the regularisation path: the use case under `rankkit path` (rankkit.app.path)
and `rankkit.regularization_path` (rankkit.regularization, the Python face), the same code.

`path_on_datasets` runs the warm-started Newton grid (``method="grid"``, grid_path: the grid path
algorithm of rankkit.paths.grid over the Newton fit) or the exact
piecewise-linear path of the hinge-loss RankSVM (``method="exact"``, Zapien et al.) and evaluates
every point on validation queries; `chosen_model` makes the chosen point a model (its header the
path's facts); `path_curves` and `plot_path` draw the path.

A use case (tests/test_architecture.py's layer table): it imports the path algorithms below it
(rankkit.paths.grid, rankkit.paths.exact), the training use case beside it for the model header,
and rankkit.plot; never a face (no estimator: the Python face builds its estimator from
`chosen_model`'s model).
"""

from __future__ import annotations

import numpy as np

from rankkit import training
from rankkit.config import DEFAULT_CONVENTION
from rankkit.errors import UsageError
from rankkit.io.model import Model
from rankkit.data import Dataset
from rankkit.metrics import parse_metric
from rankkit.paths.grid import (DEFAULT_METRIC, DEFAULT_N_POINTS, DEFAULT_RATIO, PathResult, choose_method,
                                exact_path_points, grid, path_over)
from rankkit.plot import PLOT_KINDS, Curves, check_plot_target, write_plot
from rankkit.resources import check_memory
from rankkit.solvers.newton import NewtonRankSVM, path_memory
from rankkit.solvers.options import Words, check_depends

__all__ = ["path_on_datasets", "chosen_model", "path_curves", "plot_path"]

CURVES_TOP = 10  # coef: the features (documents) with the largest |coefficient| at the chosen point
CURVES_MAX_POINTS = 2000  # a longer path is drawn at this many of its points (evenly spaced, the chosen one kept)
CURVES_DENSIFY = 400  # an exact path with fewer breakpoints is drawn with 8 points per segment (it is not
#                       linear in C between breakpoints: lambda * w is linear in lambda)
DECISION_MAX_DOCS = 40  # decision: at most this many documents of the query are drawn


def grid_path(train: Dataset, valid: Dataset, Cs=None, metric: str = DEFAULT_METRIC, select: str = "best",
              n_points: int = DEFAULT_N_POINTS, ratio: float = DEFAULT_RATIO, tol: float | None = None,
              max_iter: int | None = None, warm_start: bool = True, log=None, warn=None,
              convention: str = DEFAULT_CONVENTION, metrics=None, progress=None) -> PathResult:
    """The Newton solver along a C grid (increasing), warm-started, evaluated on `valid`: the grid
    path algorithm (rankkit.paths.grid.path_over) over the Newton fit, its CG preconditioner carried
    along the path (rankkit.solvers.newton.path_memory). Warnings about the choice are in the
    result's `notes` (and passed to `warn` if given). metrics: every metric to report at each point
    (`metric`, which selects, first)."""
    parse_metric(metric)
    train.require_pairs()
    Cs = grid(train, n_points, ratio) if Cs is None else np.asarray(Cs, dtype=np.float64)

    def fit(C, w0):
        return NewtonRankSVM(C=C, tol=tol, max_iter=max_iter).fit(train, w0=w0)

    return path_over(fit, Cs, valid, metric=metric, select=select, warm_start=warm_start, log=log, warn=warn,
                     convention=convention, metrics=metrics, progress=progress, along=path_memory)


def path_on_datasets(train_ds, valid_ds, method: str | None = None, metric: str = "ndcg@10", select: str = "best",
                     n_points: int = 30, ratio: float = 1e7, exact: dict | None = None, log=None, progress=None,
                     words: Words | None = None, convention: str = DEFAULT_CONVENTION, metrics=None):
    """(PathResult, raw exact-path result or None, notes, method) on rankkit Datasets. method None
    chooses: exact for small problems, grid otherwise. progress(total, label): the exact path's
    progress display (rankkit.paths.grid.exact_path_points)."""
    if select not in ("best", "1se"):
        raise UsageError(f"select must be 'best' or '1se', not {select!r}")
    if method not in (None, "grid", "exact"):
        raise UsageError(f"method must be 'grid', 'exact' or None, not {method!r}")
    method = method or choose_method(train_ds)
    if method == "grid":  # the path keeps each point's weights and validation values (rankkit.resources)
        check_memory("n_points", n_points, 8.0 * n_points * (train_ds.n_features + valid_ds.n_queries + 16),
                     f"the path's points ({train_ds.n_features} weights and {valid_ds.n_queries} validation values "
                     "each)", words)
    exact = dict(exact or {})
    raw = None
    if method == "exact":
        result, raw, notes = exact_path_points(train_ds, valid_ds, metric=metric, select=select, log=log,
                                               progress=progress, convention=convention, metrics=metrics, **exact)
    else:
        if exact.get("kernel", "linear") != "linear" or exact.get("graph", "full") != "full":
            raise UsageError("--kernel and --graph are options of --method exact")
        result = grid_path(train_ds, valid_ds, metric=metric, select=select, n_points=n_points, ratio=ratio, log=log,
                           convention=convention, metrics=metrics)
        notes = result.notes
    return result, raw, notes, method


def _curve_Cs(result, raw) -> tuple:
    """(C values to draw at, the point index behind each or None for a point inside a segment)."""
    Cs = [p.C for p in result.points]
    if raw is not None and len(Cs) < CURVES_DENSIFY:
        out, idx = [], []
        for i, C in enumerate(Cs):
            out.append(C)
            idx.append(i)
            if i + 1 < len(Cs):
                for u in np.linspace(0, 1, 9)[1:-1]:
                    out.append(float(np.exp((1 - u) * np.log(C) + u * np.log(Cs[i + 1]))))
                    idx.append(None)
        return out, idx
    keep = range(len(Cs))
    if len(Cs) > CURVES_MAX_POINTS:
        keep = sorted(set(np.linspace(0, len(Cs) - 1, CURVES_MAX_POINTS).round().astype(int).tolist())
                      | {int(result.chosen)})
    return [Cs[i] for i in keep], list(keep)


def _coefs_at(result, raw, kernel_path: bool, Cs, idx) -> np.ndarray:
    """The coefficients (w; beta for a kernel path) at each C of the curve, one row each."""
    rows = []
    for C, i in zip(Cs, idx):
        if i is not None:
            rows.append(result.points[i].w)
        else:
            rows.append(raw.beta_at(1.0 / C) if kernel_path else raw.w_at(1.0 / C))
    return np.array(rows)


def path_curves(result, raw=None, valid=None, kind: str = "coef", query=None, train=None, index_base: int = 1,
                top: int = CURVES_TOP) -> Curves:
    """The curves of a path plot (the paper's Fig. 4 as curves along the path), against C:

    coef: the coefficients along the path, the `top` largest in |value| at the chosen point: w_j of
    feature j (linear kernel, grid or exact path), beta_r of training document r (f(x) = sum_r
    beta_r k(x_r, x): a kernel path; `train` gives the documents' line numbers).
    decision: the decision values f(x) of the documents of one validation query (`query`: its qid;
    default the first with two labels or more), coloured by label.

    result: the PathResult; raw: the exact path's result (rankkit.paths.exact.ExactPathResult; None
    for the grid), needed for a kernel path and used to draw a short exact path between its
    breakpoints. Every value is computed from the path itself (no refit)."""
    if kind not in PLOT_KINDS or kind == "metric":
        raise UsageError(f"curves are drawn for the kinds coef and decision, not {kind!r}")
    kernel_path = raw is not None and raw.kernel.name != "linear"
    Cs, idx = _curve_Cs(result, raw)
    chosen_C = result.best.C
    where = f"{result.method} path, {len(result.points):,} {'breakpoints' if result.method == 'exact' else 'values of C'}"
    if kind == "coef":
        W = _coefs_at(result, raw, kernel_path, Cs, idx)
        at = np.abs(result.best.w)
        order = np.argsort(-(at if at.max() > 0 else np.abs(W).max(axis=0)), kind="stable")[:top]
        order = [int(j) for j in order if np.abs(W[:, j]).max() > 0] or [int(order[0])]
        if kernel_path:
            lines = train.line if train is not None and train.line is not None else None
            label = [f"train doc {r}" + (f" (line {int(lines[r])})" if lines is not None else "") for r in order]
            title, ylabel = f"rankkit path: beta of the {len(order)} training documents largest at the chosen C", "beta_r"
        else:
            label = [f"feature {j + index_base}" for j in order]
            title, ylabel = f"rankkit path: the {len(order)} weights largest at the chosen C", "w_j"
        series = [(lab, W[:, j].tolist(), k) for k, (lab, j) in enumerate(zip(label, order))]
        return Curves(title, ylabel, Cs, series, chosen_C, where + f"; {W.shape[1]} coefficients, {len(order)} drawn")
    if valid is None:
        raise UsageError("a decision plot needs the validation data")
    q = _plot_query(valid, query)
    s, e = int(valid.qptr[q]), int(valid.qptr[q + 1])
    rows = np.arange(s, min(e, s + DECISION_MAX_DOCS))
    A = valid.csr(result.best.w.shape[0] if not kernel_path else raw.n_features)[rows]
    if kernel_path:
        Kq = raw.kernel_rows(A)
        F = np.array([Kq @ raw.beta_at(1.0 / C) for C in Cs])
    else:
        W = _coefs_at(result, raw, False, Cs, idx)
        F = np.asarray((A @ W.T).T)
    y = valid.y[rows]
    levels = np.unique(y)[::-1]
    group = {float(v): k for k, v in enumerate(levels)}
    lines = valid.line
    series = [(f"line {int(lines[r])}, label {valid.y[r]:g}" if lines is not None else f"row {r}, label {valid.y[r]:g}",
               F[:, k].tolist(), group[float(y[k])]) for k, r in enumerate(rows)]
    legend = [(group[float(v)], f"label {v:g} ({int(np.count_nonzero(y == v))} docs)") for v in levels]
    more = f"; the first {len(rows)} of its {e - s} documents" if e - s > len(rows) else ""
    return Curves(f"rankkit path: decision values f(x) of validation query {int(valid.qid[s])} along the path",
                  "f(x)", Cs, series, chosen_C, where + more, grouped=True, legend=legend)


def _plot_query(valid, query) -> int:
    """The position of the validation query to draw: qid `query`, or the first with two labels or more."""
    starts = valid.qptr[:-1]
    if query is None:
        ok = np.flatnonzero(valid.levels_per_query >= 2)
        return int(ok[0]) if ok.size else 0
    hit = np.flatnonzero(valid.qid[starts] == int(query))
    if not hit.size:
        raise UsageError(f"plot query {query}: no validation query has this qid ({valid.n_queries} queries, qids "
                         f"{int(valid.qid[starts].min())}..{int(valid.qid[starts].max())})")
    return int(hit[0])


def check_plot_options(plot, plot_kind: str, plot_query, words: Words | None = None) -> None:
    """The plot options, checked before any work: the kind, the one rule of options that need another
    (--plot-kind without --plot, --plot-query without --plot-kind decision), the file's format."""
    if plot_kind not in PLOT_KINDS:
        raise UsageError(f"plot_kind must be one of {', '.join(PLOT_KINDS)}, not {plot_kind!r}")
    given = [k for k, v in (("plot_kind", plot_kind != "metric"), ("plot_query", plot_query is not None)) if v]
    check_depends(given, {"plot": plot, "plot_kind": plot_kind}, words)
    if plot is not None:
        check_plot_target(plot)


def plot_path(file: str, result, raw=None, valid=None, kind: str = "metric", query=None, train=None,
              index_base: int = 1) -> None:
    """Write the path's plot (rankkit.plot): the validation metric and the active set (metric), or
    the curves of path_curves (coef, decision). What `rankkit path --plot --plot-kind` writes."""
    curves = None if kind == "metric" else path_curves(result, raw, valid, kind, query, train, index_base)
    write_plot(file, result, kind, curves)


def chosen_model(result, method: str, raw, train_csr, facts: dict, kernel: str = "linear", seconds: float = 0.0):
    """The chosen point as a model (header: the path's facts), what `rankkit path --out-model` writes."""
    best = result.best
    outcome = {"path_method": method, "path_metric": result.metric, "path_select": result.select,
               "path_points": len(result.points), "path_C_min": result.points[0].C,
               "path_C_max": result.points[-1].C, "path_chosen_index": result.chosen, "valid_metric": best.metric,
               "objective": best.objective, "iterations": best.iterations, "violated_pairs": best.n_active}
    header = training.model_header("newton" if method == "grid" else "exact-path",
                                   "squared-hinge" if method == "grid" else "hinge", {"C": best.C}, facts, outcome,
                                   seconds=seconds)
    if method == "exact" and kernel != "linear":  # f(x) = sum_r beta_r k(x_r, x): a kernel model
        header.update(raw.kernel.params())
        header["landmarks"] = int(train_csr.shape[0])
        return Model(weights=best.w, header=header, landmarks=train_csr)
    return Model(weights=best.w, header=header)
