"""Regularisation paths and model selection for `rankkit path`.

Grid path (`--method grid`, the glmnet experience at LETOR scale): the primal Newton solver over a
log-spaced grid of C, from C_min, where w is still nearly zero, up by a factor `ratio`, each fit
warm-started from the previous w (the optimum does not depend on the start; warm starts only save
Newton iterations). Every point is evaluated on the validation set; `select` picks the best point or,
with `1se`, the smallest C whose mean validation metric is within one standard error (over
validation queries) of the best (the "one standard error rule").

C_min: for small C the optimum is w ~ -C grad L(0) (first order in C), so the largest score
difference it implies is C * max_i |x_i . grad L(0)|... up to a factor 2; C_min makes that 0.01.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.objectives._sparse import csr_matvec

DEFAULT_N_POINTS = 30
DEFAULT_RATIO = 1e7
DEFAULT_METRIC = "ndcg@10"


@dataclass
class PathPoint:
    C: float
    iterations: int
    objective: float
    loss: float  # training loss (sum over pairs) at the optimum
    n_active: int  # pairs with margin < 1
    w_norm: float
    metric: float  # mean over validation queries
    metric_se: float  # standard error over validation queries
    seconds: float
    w: np.ndarray = field(repr=False)


@dataclass
class PathResult:
    method: str
    metric: str
    points: list
    chosen: int  # index into points
    select: str

    @property
    def best(self) -> PathPoint:
        return self.points[self.chosen]


def c_min(ds: Dataset) -> float:
    """The smallest C of the grid: where the first-order solution -C grad L(0) moves scores by 0.01."""
    from rankkit.objectives.pairwise import PairwiseObjective

    obj = PairwiseObjective(ds, 1.0)
    w0 = np.zeros(ds.n_features)
    obj.loss_y(obj.scores(w0))
    g = obj.gradient_loss()  # X' dL/dy at w = 0
    spread = float(np.max(np.abs(csr_matvec(ds.data, ds.indices, ds.indptr, g, np.empty(ds.n_rows)))))
    if spread == 0.0:
        raise UsageError(f"{ds.source}: the loss gradient at w = 0 is zero (all features empty?)")
    return 0.01 / spread


def grid(ds: Dataset, n_points: int = DEFAULT_N_POINTS, ratio: float = DEFAULT_RATIO) -> np.ndarray:
    lo = c_min(ds)
    return lo * np.logspace(0.0, np.log10(ratio), n_points)


def validation_metric(valid: Dataset, w: np.ndarray, metric: str, convention: str = "letor4") -> tuple[float, float]:
    """(mean, standard error) of the metric over the validation queries."""
    from rankkit.metrics import per_query

    vals = per_query(metric, valid.y, csr_matvec(valid.data, valid.indices, valid.indptr, w, np.empty(valid.n_rows)),
                     valid.qptr, convention)
    vals = vals[~np.isnan(vals)]
    if vals.size == 0:
        return float("nan"), float("nan")
    se = float(vals.std(ddof=1) / np.sqrt(vals.size)) if vals.size > 1 else 0.0
    return float(vals.mean()), se


def select_point(points: list, select: str) -> int:
    metrics = np.array([p.metric for p in points])
    if np.all(np.isnan(metrics)):
        raise UsageError("the validation metric is undefined at every point (no validation query with pairs?)")
    best = int(np.nanargmax(metrics))
    if select == "best":
        return best
    threshold = metrics[best] - points[best].metric_se
    for i, p in enumerate(points):  # points are in increasing C: the first is the most regularised
        if p.metric >= threshold:
            return i
    return best


def grid_path(train: Dataset, valid: Dataset, Cs=None, metric: str = DEFAULT_METRIC, select: str = "best",
              n_points: int = DEFAULT_N_POINTS, ratio: float = DEFAULT_RATIO, tol: float | None = None,
              max_iter: int | None = None, warm_start: bool = True, log=None) -> PathResult:
    """The Newton solver along a C grid (increasing), warm-started, evaluated on `valid`."""
    from rankkit.metrics import parse_metric
    from rankkit.solvers.newton import NewtonRankSVM

    parse_metric(metric)
    train.require_pairs()
    Cs = grid(train, n_points, ratio) if Cs is None else np.asarray(Cs, dtype=np.float64)
    points = []
    w = None
    for k, C in enumerate(Cs.tolist()):
        t0 = time.perf_counter()
        res = NewtonRankSVM(C=C, tol=tol, max_iter=max_iter).fit(train, w0=w if warm_start else None)
        w = res.w
        m, se = validation_metric(valid, w, metric)
        loss = (res.objective - 0.5 * float(w @ w)) / C
        points.append(PathPoint(C, res.iterations, res.objective, loss, res.n_active, float(np.linalg.norm(w)), m, se,
                                time.perf_counter() - t0, w.copy()))
        if log:
            log(f"point {k + 1:3d}/{len(Cs)}  C {C:.4g}  newton iterations {res.iterations:3d}  "
                f"violated {res.n_active}  valid {metric} {m:.4f}  {points[-1].seconds:.3f}s")
    return PathResult("grid", metric, points, select_point(points, select), select)


def write_table(path: str, result: PathResult) -> None:
    from rankkit.io.atomic import atomic_open

    cols = ["C", "lambda", "iterations", "objective", "train_loss", "violated_pairs", "w_norm",
            f"valid_{result.metric}", f"valid_{result.metric}_se", "seconds", "chosen"]
    with atomic_open(path) as fh:
        fh.write("\t".join(cols) + "\n")
        for i, p in enumerate(result.points):
            row = [p.C, 1.0 / p.C, p.iterations, p.objective, p.loss, p.n_active, p.w_norm, p.metric, p.metric_se,
                   round(p.seconds, 6), int(i == result.chosen)]
            fh.write("\t".join(repr(v) if isinstance(v, float) else str(v) for v in row) + "\n")


# -- the exact path (rankkit/exact_path.py) as path points -----------------------------------------
EXACT_MAX_PAIRS = 10_000  # no --method: the exact path when the training data has at most this many pairs
EXACT_MAX_DOCUMENTS = 2_000  # ... and documents (the kernel matrix is dense n x n)


def choose_method(train: Dataset) -> str:
    return "exact" if train.n_pairs <= EXACT_MAX_PAIRS and train.n_rows <= EXACT_MAX_DOCUMENTS else "grid"


def exact_path_points(train: Dataset, valid: Dataset, metric: str = DEFAULT_METRIC, select: str = "best",
                      kernel: str = "linear", gamma=None, degree: int = 3, coef0: float = 0.0, graph: str = "full",
                      lambda_min=None, max_events: int | None = None, log=None):
    """Run the exact path and express its breakpoints (increasing C) as PathPoints. For the linear
    kernel a point's w is w(lambda); for other kernels it is beta (f(x) = sum_r beta_r k(x_r, x))."""
    import warnings

    from rankkit.exact_path import PathWarning, exact_path
    from rankkit.metrics import per_query

    train.require_pairs()
    if max_events is None:  # a path takes about 2-3 events per pair
        max_events = max(10_000, 4 * train.n_pairs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PathWarning)
        res = exact_path(train, valid, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, graph=graph,
                         lambda_min=lambda_min, max_events=max_events, metric=metric)
    notes = [str(w.message) for w in caught if issubclass(w.category, PathWarning)]
    linear = kernel == "linear"
    points = []
    prev = 0.0
    for b in res.breakpoints:
        coef = res.w_at(b.lam) if linear else res.beta_at(b.lam)
        m = float(b.metrics.get(metric, float("nan")))
        points.append(PathPoint(b.C, 0, b.objective_C, b.hinge, b.n_one, float(np.linalg.norm(coef)), m, 0.0,
                                b.seconds - prev, coef))
        prev = b.seconds
        if log:
            log(f"breakpoint {len(points):5d}  lambda {b.lam:.6g}  C {b.C:.6g}  |I_alpha| {b.n_alpha}  |I_0| {b.n_zero}  "
                f"|I_1| {b.n_one}  {b.event}  valid {metric} {m:.4f}")
    chosen = select_point(points, "best")
    if select == "1se":  # the standard error over validation queries, at the best point
        scores = res.scores_at(1.0 / points[chosen].C, valid)
        vals = per_query(metric, valid.y, scores, valid.qptr)
        vals = vals[~np.isnan(vals)]
        points[chosen].metric_se = float(vals.std(ddof=1) / np.sqrt(vals.size)) if vals.size > 1 else 0.0
        chosen = select_point(points, "1se")
    return PathResult("exact", metric, points, chosen, select), res, notes


def write_exact_table(path: str, res) -> None:
    """Every breakpoint: lambda, C, |I_alpha|, |I_0|, |I_1|, hinge loss, objective, metrics, event."""
    from rankkit.io.atomic import atomic_open

    rows = res.table()
    cols = list(rows[0].keys()) if rows else []
    with atomic_open(path) as fh:
        fh.write("\t".join(cols) + "\n")
        for r in rows:
            fh.write("\t".join(repr(v) if isinstance(v, float) else str(v) for v in r.values()) + "\n")
