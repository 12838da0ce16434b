"""Model selection along the regularisation path, for Python and for `rankkit path`.

`regularization_path` runs the warm-started Newton grid (``method="grid"``) or the exact
piecewise-linear path of the hinge-loss RankSVM (``method="exact"``, Zapien et al.), evaluates
every point on validation queries, and returns the table as arrays with the chosen model as a
fitted ranker. `rankkit path TRAIN VALID` reads its files and calls `path_on_datasets`, the same
code.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankkit import training
from rankkit.config import DEFAULT_CONVENTION
from rankkit.datasets import as_dataset, check_dense_width, column_names
from rankkit.errors import UsageError
from rankkit.estimators import Ranker, RankSVM, Threads, check_feature_names, set_fitted_state, verbose_log
from rankkit.io.model import Model
from rankkit.paths.grid import choose_method, exact_path_points, grid_path
from rankkit.plot import PLOT_KINDS, Curves, check_plot_target, write_plot
from rankkit.resources import check_memory
from rankkit.solvers.base import FitResult
from rankkit.solvers.options import check_depends

__all__ = ["RegularizationPath", "regularization_path", "path_curves", "plot_path"]

CURVES_TOP = 10  # coef: the features (documents) with the largest |coefficient| at the chosen point
CURVES_MAX_POINTS = 2000  # a longer path is drawn at this many of its points (evenly spaced, the chosen one kept)
CURVES_DENSIFY = 400  # an exact path with fewer breakpoints is drawn with 8 points per segment (it is not
#                       linear in C between breakpoints: lambda * w is linear in lambda)
DECISION_MAX_DOCS = 40  # decision: at most this many documents of the query are drawn


@dataclass
class RegularizationPath:
    """A regularisation path, one entry per point (grid values of C, or exact-path breakpoints),
    in increasing C.

    Attributes
    ----------
    method : str
        "grid" or "exact".
    metric : str
        The validation metric.
    select : str
        "best" or "1se" (the smallest C within one standard error of the best).
    C : ndarray
    iterations : ndarray of int
        Newton iterations at each point (0 for exact-path breakpoints).
    objective : ndarray
        The training objective at each point.
    train_loss : ndarray
        The training loss (sum over pairs) at each point.
    violated_pairs : ndarray of int
        Pairs with margin below 1.
    w_norm : ndarray
    valid_metric : ndarray
        Mean validation metric at each point.
    chosen : int
        Index of the chosen point.
    best_estimator_ : rankkit.RankSVM (a kernel path: rankkit.estimators.Ranker)
        The chosen model, fitted (``predict``, ``save``); a RankSVM with the chosen C (squared
        hinge for the grid, hinge for the exact path), so it can be cloned and fitted again.
    notes : list of str
        Remarks about the choice (e.g. a validation set that cannot tell the points apart).
    at_edge : None, "low" or "high"
        The grid path's choice is still its smallest / largest C after the edge rule extended the
        grid past that end (rankkit.paths.grid); None when interior.

    ``plot(file, plot_kind="metric", plot_query=None)`` draws the path as `rankkit path --plot`
    does (the same code): the validation metric and the active set, the coefficients (coef) or the
    decision values of one validation query's documents (decision) against C.
    """

    method: str
    metric: str
    select: str
    C: np.ndarray
    iterations: np.ndarray
    objective: np.ndarray
    train_loss: np.ndarray
    violated_pairs: np.ndarray
    w_norm: np.ndarray
    valid_metric: np.ndarray
    valid_metric_se: np.ndarray
    seconds: np.ndarray
    chosen: int
    best_estimator_: Any = field(repr=False, default=None)
    notes: list = field(default_factory=list)
    at_edge: str | None = None  # "low" / "high": the chosen C is still the smallest / largest after the edge rule
    _drawn: tuple = field(repr=False, default=())  # (PathResult, raw exact result, train, valid) for plot()

    @property
    def best_C(self) -> float:
        return float(self.C[self.chosen])

    def plot(self, file: str, plot_kind: str = "metric", plot_query=None) -> None:
        """Write the path's plot to `file` (.svg, or .png with matplotlib); see the class docstring."""
        check_plot_options(file, plot_kind, plot_query, style="python")
        result, raw, train, valid = self._drawn
        plot_path(file, result, raw, valid, plot_kind, plot_query, train, index_base=0)

    def __len__(self) -> int:
        return int(self.C.shape[0])


def path_on_datasets(train_ds, valid_ds, method: str | None = None, metric: str = "ndcg@10", select: str = "best",
                     n_points: int = 30, ratio: float = 1e7, exact: dict | None = None, log=None, progress=None,
                     style: str = "cli", convention: str = DEFAULT_CONVENTION, metrics=None):
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
                     "each)", style)
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


def check_plot_options(plot, plot_kind: str, plot_query, style: str = "cli") -> None:
    """The plot options, checked before any work: the kind, the one rule of options that need another
    (--plot-kind without --plot, --plot-query without --plot-kind decision), the file's format."""
    if plot_kind not in PLOT_KINDS:
        raise UsageError(f"plot_kind must be one of {', '.join(PLOT_KINDS)}, not {plot_kind!r}")
    given = [k for k, v in (("plot_kind", plot_kind != "metric"), ("plot_query", plot_query is not None)) if v]
    check_depends(given, {"plot": plot, "plot_kind": plot_kind}, style)
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


def regularization_path(X, y, X_valid, y_valid, *, qid=None, group=None, qid_valid=None, group_valid=None,
                        method: str | None = None, metric: str = "ndcg@10", select: str = "best", n_points: int = 30,
                        ratio: float = 1e7, kernel: str = "linear", gamma: float | None = None, degree: int = 3,
                        coef0: float = 0.0, threads: int | None = None, verbose: bool = False,
                        convention: str = DEFAULT_CONVENTION, plot: str | None = None, plot_kind: str = "metric",
                        plot_query=None) -> RegularizationPath:
    """Train along the regularisation path and choose C on validation queries (``rankkit path``).

    Parameters
    ----------
    X, y : training documents and labels, with ``qid`` or ``group``
    X_valid, y_valid : validation documents and labels, with ``qid_valid`` or ``group_valid``
    method : {None, "grid", "exact"}
        grid: the squared-hinge RankSVM by Newton over ``n_points`` values of C spaced evenly in
        log scale from C_min (where w is still nearly 0) up by ``ratio``, warm-started. exact: every
        breakpoint of the hinge-loss RankSVM's piecewise-linear path (Zapien et al.). Default:
        exact for small problems (at most 10,000 pairs and 2,000 documents), grid otherwise.
    metric : str, default "ndcg@10"
        Validation metric.
    convention : str, default "trec"
        How the validation metric is graded (``rankkit eval --convention``; trec_eval's by default).
    select : {"best", "1se"}
        The best point, or the smallest C within one standard error of it.
    kernel, gamma, degree, coef0 : the exact path's kernel ("linear", "poly", "rbf")
    threads : int, optional
    verbose : bool, default False
        A line per point on standard error.
    plot : str, optional
        Write the path's plot here (.svg; .png needs matplotlib), as ``rankkit path --plot``.
    plot_kind : {"metric", "coef", "decision"}, default "metric"
        What the plot draws against C: the validation metric and the active set; the 10 weights
        (kernel path: coefficients beta of training documents) largest at the chosen C; the decision
        values f(x) of the documents of one validation query (the paper's Fig. 4 along the path).
    plot_query : int, optional
        plot_kind "decision": the qid of the validation query drawn (default: the first with two labels).

    Returns
    -------
    RegularizationPath
        The table as arrays, the chosen index and ``best_estimator_``.

    Examples
    --------
    >>> import numpy as np, rankkit
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3)); y = (X @ [1.0, 0.5, 0.0] + rng.normal(0, 0.3, 60) > 0).astype(float)
    >>> qid = np.repeat(np.arange(12), 5)
    >>> path = rankkit.regularization_path(X[:40], y[:40], X[40:], y[40:], qid=qid[:40], qid_valid=qid[40:],
    ...                                    method="grid", n_points=5)
    >>> len(path) >= 5, path.method, bool(path.best_C > 0), path.at_edge  # 5 values of C, and the edge rule's
    (True, 'grid', True, None)
    >>> path.best_estimator_.predict(X[40:]).shape
    (20,)
    """
    if (qid is None and group is None) or (qid_valid is None and group_valid is None):
        raise UsageError("regularization_path needs the queries of both sets: qid= or group= for X, and "
                         "qid_valid= or group_valid= for X_valid (a ranking metric is computed per query)")
    if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 1:
        raise UsageError(f"n_points must be an integer >= 1, not {n_points!r}")
    if not (isinstance(ratio, (int, float, np.integer, np.floating)) and np.isfinite(ratio) and ratio > 1):
        raise UsageError(f"ratio must be a finite number > 1 (C_max / C_min), not {ratio!r}")
    if kernel not in ("linear", "poly", "rbf"):
        raise UsageError(f"kernel must be one of linear, poly, rbf, not {kernel!r}")
    if kernel != "linear" and method == "grid":
        raise UsageError("a kernel path is the exact path: method='exact' (or None)")
    check_plot_options(plot, plot_kind, plot_query, style="python")
    names = column_names(X)
    if names is not None and column_names(X_valid) is not None:  # data frames: the same columns, in the same order
        check_feature_names(names, column_names(X_valid), "X_valid", "X_valid[X.columns]")
    train_ds = as_dataset(X, y, qid, group, name="X")
    check_dense_width(X_valid, train_ds.n_features, "X_valid", "the model fitted on X", "path")
    valid_ds = as_dataset(X_valid, y_valid, qid_valid, group_valid, name="X_valid")
    exact = {"kernel": kernel, "gamma": gamma, "degree": degree, "coef0": coef0}
    t0 = time.perf_counter()
    with Threads(threads):
        result, raw, notes, method = path_on_datasets(train_ds, valid_ds, method, metric, select, n_points, ratio,
                                                      exact if (method == "exact" or kernel != "linear") else None,
                                                      log=verbose_log(verbose), style="python", convention=convention)
    facts = {"n_queries": train_ds.n_queries, "n_documents": train_ds.n_rows, "n_pairs": train_ds.n_pairs,
             "n_features": train_ds.n_features, "method": method}
    model = chosen_model(result, method, raw, train_ds.csr() if kernel != "linear" else None, facts, kernel,
                         time.perf_counter() - t0)
    if kernel == "linear":  # the chosen point as the estimator of its objective: refit, clone, grid-search it
        best = result.best
        est = RankSVM(C=best.C) if method == "grid" else RankSVM(C=best.C, loss="hinge")

        point = FitResult(w=best.w, objective=best.objective, iterations=best.iterations, converged=True,
                          message=f"chosen on the {method} path", n_active=best.n_active)  # as a fit reports it
        set_fitted_state(est, model, point, train_ds.n_pairs, train_ds.n_queries)
    else:
        est = Ranker()
        est.model_ = model
    if names is not None:  # predict checks the columns, save records them
        est.feature_names_in_ = names
    pts = result.points
    path = RegularizationPath(
        method=method, metric=metric, select=select,
        C=np.array([p.C for p in pts]), iterations=np.array([p.iterations for p in pts], dtype=np.int64),
        objective=np.array([p.objective for p in pts]), train_loss=np.array([p.loss for p in pts]),
        violated_pairs=np.array([p.n_active for p in pts], dtype=np.int64), w_norm=np.array([p.w_norm for p in pts]),
        valid_metric=np.array([p.metric for p in pts]), valid_metric_se=np.array([p.metric_se for p in pts]),
        seconds=np.array([p.seconds for p in pts]), chosen=int(result.chosen), best_estimator_=est, notes=list(notes),
        at_edge=getattr(result, "at_edge", None),
        _drawn=(result, raw, train_ds, valid_ds))
    if plot is not None:
        path.plot(plot, plot_kind, plot_query)
    return path
