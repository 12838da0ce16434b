"""The regularisation path as the Python face gives it: `regularization_path` and the
`RegularizationPath` it returns, with the chosen point as a fitted estimator (``best_estimator_``).

`regularization_path` runs the warm-started Newton grid (``method="grid"``) or the exact
piecewise-linear path of the hinge-loss RankSVM (``method="exact"``, Zapien et al.), evaluates
every point on validation queries, and returns the table as arrays with the chosen model as a
fitted ranker. `rankkit path TRAIN VALID` reads its files and calls `path_on_datasets`
(rankkit.selection), the same code.

Part of the Python face (over rankkit.estimators): it imports the use case rankkit.selection
and the estimators; nothing below imports it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankkit.config import DEFAULT_CONVENTION
from rankkit.datasets import as_dataset, check_dense_width, column_names
from rankkit.errors import UsageError
from rankkit.estimators import (PYTHON_WORDS, Ranker, RankSVM, Threads, check_feature_names, set_fitted_state,
                                verbose_log)
from rankkit.selection import check_plot_options, chosen_model, path_on_datasets, plot_path
from rankkit.solvers.base import FitResult

__all__ = ["RegularizationPath", "regularization_path"]


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
        check_plot_options(file, plot_kind, plot_query, words=PYTHON_WORDS)
        result, raw, train, valid = self._drawn
        plot_path(file, result, raw, valid, plot_kind, plot_query, train, index_base=0)

    def __len__(self) -> int:
        return int(self.C.shape[0])



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
    check_plot_options(plot, plot_kind, plot_query, words=PYTHON_WORDS)
    names = column_names(X)
    if names is not None and column_names(X_valid) is not None:  # data frames: the same columns, in the same order
        check_feature_names(names, column_names(X_valid), "X_valid", "X_valid[X.columns]")
    train_ds = as_dataset(X, y, qid, group, name="X")
    check_dense_width(X_valid, train_ds.n_features, "X_valid", "the model fitted on X", "path")
    valid_ds = as_dataset(X_valid, y_valid, qid_valid, group_valid, name="X_valid")
    exact = {"kernel": kernel, "gamma": gamma, "degree": degree, "coef0": coef0}
    t0 = time.perf_counter()
    with Threads(threads, "threads"):
        result, raw, notes, method = path_on_datasets(train_ds, valid_ds, method, metric, select, n_points, ratio,
                                                      exact if (method == "exact" or kernel != "linear") else None,
                                                      log=verbose_log(verbose), words=PYTHON_WORDS,
                                                      convention=convention)
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
