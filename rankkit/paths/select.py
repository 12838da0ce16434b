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
from rankkit.datasets import as_dataset
from rankkit.errors import UsageError
from rankkit.estimators import Ranker, RankSVM, Threads, set_fitted_state, verbose_log
from rankkit.io.model import Model
from rankkit.paths.grid import choose_method, exact_path_points, grid_path
from rankkit.resources import check_memory
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

    @property
    def best_C(self) -> float:
        return float(self.C[self.chosen])

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
                        convention: str = DEFAULT_CONVENTION) -> RegularizationPath:
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
    >>> len(path), path.method, bool(path.best_C > 0)
    (5, 'grid', True)
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
    train_ds = as_dataset(X, y, qid, group, name="X")
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
    pts = result.points
    return RegularizationPath(
        method=method, metric=metric, select=select,
        C=np.array([p.C for p in pts]), iterations=np.array([p.iterations for p in pts], dtype=np.int64),
        objective=np.array([p.objective for p in pts]), train_loss=np.array([p.loss for p in pts]),
        violated_pairs=np.array([p.n_active for p in pts], dtype=np.int64), w_norm=np.array([p.w_norm for p in pts]),
        valid_metric=np.array([p.metric for p in pts]), valid_metric_se=np.array([p.metric_se for p in pts]),
        seconds=np.array([p.seconds for p in pts]), chosen=int(result.chosen), best_estimator_=est, notes=list(notes))
