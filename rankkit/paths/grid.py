"""Regularisation paths and model selection for `rankkit path`.

Grid path (`--method grid`, the glmnet experience at LETOR scale): a fit at each C of a log-spaced
grid, from C_min, where w is still nearly zero, up by a factor `ratio`, each fit warm-started from
the previous w (the optimum does not depend on the start; warm starts only save iterations). The
loop (path_over) knows no solver: the caller hands it fit(C, w0) -> FitResult and, for a solver
that carries state from fit to fit beside w, the context the fits of one path share (`along`:
Newton's CG preconditioner, rankkit.solvers.newton.path_memory). The Newton grid of `rankkit path`
is rankkit.selection.grid_path; on a cluster, rankkit.distributed.path; `rankkit experiment`'s C
paths, rankkit.experiments.

Every point is evaluated on the validation set; `select` picks the best point or, with `1se`, the
smallest C whose mean validation metric is within one standard error of the best (the "one
standard error rule"). The points are compared on the same validation queries, so the
standard error is that of the per-query *difference* to the best point (a paired comparison), not
the spread of the best point's own per-query values: queries differ far more from each other than
two models differ on one query, and the unpaired spread lets a nearly-zero w (the smallest C) pass.

A validation set that cannot tell the models apart (no query with two different labels, or the
same metric at every point) still gives a choice, the most regularised point, with a warning
that says so.

C_min: for small C the optimum is w ~ -C grad L(0) (first order in C), so the largest score
difference it implies is C * max_i |x_i . grad L(0)|... up to a factor 2; C_min makes that 0.01.

Edges (`extend`, on by default): when the choice is the first or the last point, the grid goes on
past that end, a point at a time, with the spacing (in log C) of its two end points, each fit
warm-started from its neighbour, until the choice is interior or a bound is reached: EDGE_EXTRA
points per end at most; at the large-C end, the model no longer changes (||w - w_prev|| <=
EDGE_STILL ||w||); at the small-C end, a model with constant scores (below), or a direction of w
that no longer changes (the ranking's limit as C -> 0). A choice still at the first or last point
after a cap or a failed fit is `at_edge` ("low" or "high": the end of C it sits at); one at a limit
(nothing past it differs) is not, and a note says which.

Constant models: a point whose validation scores are constant within every validation query that
has two different labels (the spread of its scores at most CONSTANT_RTOL x their scale, sum_j
|w_j x_j|: a difference no larger than the rounding of the scores themselves, so all-zero weights,
and weights on features constant within each query) is never chosen: its metric would be that of
the tie-breaking order, not of the model. If every point is constant, there is no choice: a
UsageError."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import numpy as np

from rankkit import threads
from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.io.atomic import atomic_open
from rankkit.io.svmlight import read_svmlight
from rankkit.config import DEFAULT_CONVENTION
from rankkit.metrics.ties import dataset_tiebreak
from rankkit.metrics import parse_metric, per_query, per_query_table
from rankkit.sparse import csr_matvec
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.vectors import dot, norm

DEFAULT_N_POINTS = 30
DEFAULT_RATIO = 1e7
DEFAULT_METRIC = "ndcg@10"
EDGE_EXTRA = 10  # at most this many points past each end of a grid whose choice sits at that end
EDGE_STILL = 1e-4  # the model no longer changes: ||w - w_prev|| <= EDGE_STILL ||w|| (direction, at small C)
CONSTANT_RTOL = 1e-12  # scores whose spread within a query is at most this x their scale are constant


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
    values: np.ndarray | None = field(default=None, repr=False)  # per validation query (NaN: undefined)
    metrics: dict = field(default_factory=dict)  # every reported metric: mean over validation queries
    constant: bool = False  # its validation scores are constant within every query: never chosen
    excluded: bool = False  # never chosen for another reason (a stochastic fit that diverged)
    extended: bool = False  # added past an end of the grid given, by the edge rule


@dataclass
class PathResult:
    method: str
    metric: str
    points: list
    chosen: int  # index into points
    select: str
    notes: list = field(default_factory=list)  # warnings about the choice (also printed on stderr)
    metrics: tuple = ()  # every reported metric, the first (`metric`) selecting
    convention: str = DEFAULT_CONVENTION
    at_edge: str | None = None  # "low" / "high": the choice is the smallest / largest C even after extending

    @property
    def best(self) -> PathPoint:
        return self.points[self.chosen]


def c_min(ds: Dataset) -> float:
    """The smallest C of the grid: where the first-order solution -C grad L(0) moves scores by 0.01."""
    obj = PairwiseObjective(ds, 1.0)
    w0 = np.zeros(ds.n_features)
    obj.loss_y(obj.scores(w0))
    g = obj.gradient_loss()  # X' dL/dy at w = 0
    spread = float(np.max(np.abs(csr_matvec(ds.data, ds.indices, ds.indptr, g, np.empty(ds.n_rows)))))
    return c_min_of_spread(spread, ds.source)


def c_min_of_spread(spread: float, source: str) -> float:
    """C_min = 0.01 / max_i |x_i . grad L(0)| (spread: that maximum, computed where the data is)."""
    if spread == 0.0:
        raise UsageError(f"{source}: the loss gradient at w = 0 is zero (all features empty?)")
    return 0.01 / spread


def grid(ds: Dataset, n_points: int = DEFAULT_N_POINTS, ratio: float = DEFAULT_RATIO) -> np.ndarray:
    return grid_from(c_min(ds), n_points, ratio)


def grid_from(lo: float, n_points: int = DEFAULT_N_POINTS, ratio: float = DEFAULT_RATIO) -> np.ndarray:
    """n_points values of C from lo up by `ratio`, log-spaced."""
    return lo * np.logspace(0.0, np.log10(ratio), n_points)


def validation_values(valid: Dataset, w: np.ndarray, metric: str, convention: str = DEFAULT_CONVENTION,
                      tiebreak=None) -> np.ndarray:
    """The metric of every validation query under w (NaN where undefined)."""
    return validation_table(valid, w, [metric], convention, tiebreak)[metric]


def validation_table(valid: Dataset, w: np.ndarray, metrics, convention: str = DEFAULT_CONVENTION,
                     tiebreak=None) -> dict:
    """{metric: values of every validation query under w}, as `rankkit eval` grades them (tiebreak:
    rankkit.metrics.ties.dataset_tiebreak(valid, convention), given when `valid` is scored often)."""
    scores = csr_matvec(valid.data, valid.indices, valid.indptr, w, np.empty(valid.n_rows))
    return per_query_table(list(metrics), valid.y, scores, valid.qptr, convention, tiebreak=tiebreak)


def mean_se(vals: np.ndarray) -> tuple[float, float]:
    """(mean, standard error) over the defined values (NaN: undefined query)."""
    vals = vals[~np.isnan(vals)]
    if vals.size == 0:
        return float("nan"), float("nan")
    se = float(vals.std(ddof=1) / np.sqrt(vals.size)) if vals.size > 1 else 0.0
    return float(vals.mean()), se


def validation_metric(valid: Dataset, w: np.ndarray, metric: str, convention: str = DEFAULT_CONVENTION,
                      tiebreak=None) -> tuple[float, float]:
    """(mean, standard error) of the metric over the validation queries."""
    return mean_se(validation_values(valid, w, metric, convention, tiebreak))


def paired_se(a: np.ndarray, b: np.ndarray) -> tuple[float, float, int]:
    """(mean, standard error, number) of the per-query differences a - b over the queries where
    both are defined."""
    both = ~(np.isnan(a) | np.isnan(b))
    d = a[both] - b[both]
    if d.size == 0:
        return float("nan"), float("nan"), 0
    se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
    return float(d.mean()), se, int(d.size)


def constant_scores(scores: np.ndarray, scale: np.ndarray, valid: Dataset) -> bool:
    """True when the scores are constant within every validation query that has two different
    labels: each such query's spread max - min is at most CONSTANT_RTOL x the largest `scale` of its
    documents (sum_j |w_j x_j|, or |score| where the terms are unknown), i.e. no larger than the
    rounding of the scores. All-zero weights give spread 0 at scale 0: constant. A set without such
    a query: False (select_point says the set cannot tell the models apart)."""
    two = valid.levels_per_query >= 2
    if not np.any(two):
        return False
    starts = valid.qptr[:-1]  # every query holds a document: reduceat's segments are the queries
    spread = (np.maximum.reduceat(scores, starts) - np.minimum.reduceat(scores, starts))[two]
    size = np.maximum.reduceat(np.abs(scale), starts)[two]
    return bool(np.all(spread <= CONSTANT_RTOL * size))


def linear_scale(valid: Dataset, w: np.ndarray, abs_data: np.ndarray | None = None) -> np.ndarray:
    """sum_j |w_j x_ij| for every validation row: the scale of the scores' rounding."""
    data = np.abs(valid.data) if abs_data is None else abs_data
    return csr_matvec(data, valid.indices, valid.indptr, np.abs(w), np.empty(valid.n_rows),
                      getattr(valid, "value_scale", 1.0))


def validation_can_judge(points: list, valid: Dataset | None) -> bool:
    """The validation set can tell points apart: a query with two labels, and two usable points
    (else the choice is the first by convention, and no edge rule). Points that all score the same
    are not told apart yet: the choice, the first by convention, sits at an end, and the edge rule
    looks past it (two close values of C can rank alike where smaller ones rank better)."""
    if valid is not None and not np.any(valid.levels_per_query >= 2):
        return False
    m = [p.metric for p in points if not (p.constant or p.excluded) and p.metric == p.metric]
    return len(m) >= 2


def edge_of(points: list, chosen: int) -> str | None:
    """"low" when the choice is the first point of several, "high" the last (points in increasing C)."""
    if len(points) < 2:
        return None
    return "low" if chosen == 0 else "high" if chosen == len(points) - 1 else None


def _first(label: str) -> str:
    """The first (most regularised) point of a grid, in words."""
    return {"C": "smallest C", "lambda": "largest lambda"}.get(label, f"first {label}")


def select_point(points: list, select: str, valid: Dataset | None = None, values_at=None, notes: list | None = None,
                 metric: str = "metric", label: str = "C") -> int:
    """The chosen point (points in increasing C). best: the highest mean validation metric (ties:
    the most regularised). 1se: the smallest C whose per-query differences to the best point have a
    mean within one standard error of 0 (paired over the same validation queries). values_at(i)
    gives point i's per-query values when points do not carry them (the exact path computes them
    only for the candidates it examines). Warnings about the choice are appended to `notes`."""
    notes = [] if notes is None else notes
    usable = [not (getattr(p, "constant", False) or getattr(p, "excluded", False)) for p in points]
    if not any(usable):
        if all(getattr(p, "constant", False) for p in points):
            raise UsageError(f"every one of the {len(points)} grid points scores the documents of every validation "
                             "query alike (constant scores: all weights zero?): no model to choose")
        raise UsageError(f"no grid point of {len(points)} can be chosen: each diverged or scores every validation "
                         "query alike")
    metrics = np.array([p.metric if ok else np.nan for p, ok in zip(points, usable)])
    if valid is not None and not np.any(valid.levels_per_query >= 2):
        first = usable.index(True)
        notes.append(f"the validation set cannot tell the models apart (no validation query has two different "
                     f"labels, so every ranking scores the same): chose the {_first(label)} "
                     f"({points[first].C:.4g}), the most regularised point, by convention")
        return first
    if np.all(np.isnan(metrics)):
        raise UsageError("the validation metric is undefined at every point (no validation query with pairs?)")
    finite = metrics[~np.isnan(metrics)]
    if finite.max() == finite.min():
        first = int(np.flatnonzero(~np.isnan(metrics))[0])
        notes.append(f"the validation {metric} is {finite.max():.4g} at every point, so the validation set cannot tell "
                     f"the models apart: chose the {_first(label)} ({points[first].C:.4g}), the most regularised "
                     "point, by convention")
        return first
    best = int(np.nanargmax(metrics))
    if select == "best":
        return best

    def values(i):
        if points[i].values is not None:
            return points[i].values
        return values_at(i)

    v_best = values(best)
    n_defined = int(np.count_nonzero(~np.isnan(v_best)))
    if n_defined < 2:
        notes.append(f"--select 1se needs at least two validation queries with a defined {metric} "
                     f"({n_defined} here): chose the best point ({label} {points[best].C:.4g})")
        return best
    # a difference of two metrics in [0, 1] has sd <= sqrt(n / (n - 1)) ... so se <= 1/sqrt(n - 1):
    # points further below the best than that cannot qualify and need no per-query values
    reach = 1.0 / np.sqrt(n_defined - 1)
    for i in range(best):
        if np.isnan(metrics[i]) or metrics[i] < metrics[best] - reach:
            continue
        mean_diff, se, _ = paired_se(values(i), v_best)
        if mean_diff >= -se:
            return i
    return best


def reported_metrics(metric: str, metrics=None) -> tuple:
    """`metric` (which selects) first, then the others, each once."""
    names = tuple(dict.fromkeys([metric, *(metrics or ())]))
    for name in names:
        parse_metric(name)
    return names


def path_over(fit, Cs, valid: Dataset, metric: str = DEFAULT_METRIC, select: str = "best", warm_start: bool = True,
              log=None, warn=None, convention: str = DEFAULT_CONVENTION, metrics=None, progress=None,
              label: str = "C", extend: bool = True, along=None) -> PathResult:
    """The one grid-path loop: fit(C, w0) -> FitResult (.w, .objective, .iterations, .n_active) at
    each C in turn (in this process, or on a cluster: rankkit.distributed.path), each warm-started
    from the previous w, scored on `valid` under `convention` (ties as `rankkit eval` breaks them),
    then the choice by `metric`; every metric of `metrics` is reported at each point. extend: a
    choice at an end of the grid extends it past that end (the module docstring's edge rule).
    Warnings about the choice are in the result's `notes` (and passed to `warn`). progress(done,
    total): called after each point. along: None, or a context manager factory entered around the
    fits when they are warm-started: what the fits of one path share beside w (the solvers' state,
    rankkit.solvers.newton.path_memory: Newton's CG preconditioner)."""
    with along() if warm_start and along is not None else contextlib.nullcontext():
        return _path_over(fit, Cs, valid, metric, select, warm_start, log, warn, convention, metrics, progress, label,
                          extend)


def _path_over(fit, Cs, valid, metric, select, warm_start, log, warn, convention, metrics, progress, label, extend):
    names = reported_metrics(metric, metrics)
    tiebreak = dataset_tiebreak(valid, convention)
    abs_data = np.abs(valid.data)
    points = []
    Cs = np.asarray(Cs, dtype=np.float64).tolist()
    total = [len(Cs)]

    def point(C, w0, k, extended=False):
        t0 = time.perf_counter()
        res = fit(C, w0 if warm_start else None)
        w = res.w
        scores = csr_matvec(valid.data, valid.indices, valid.indptr, w, np.empty(valid.n_rows))
        table = per_query_table(list(names), valid.y, scores, valid.qptr, convention, tiebreak=tiebreak)
        vals = table[metric]
        m, se = mean_se(vals)
        loss = (res.objective - 0.5 * dot(w, w)) / C
        p = PathPoint(C, res.iterations, res.objective, loss, res.n_active, float(norm(w)), m, se,
                      time.perf_counter() - t0, w.copy(), vals, {name: mean_se(table[name])[0] for name in names},
                      constant=constant_scores(scores, linear_scale(valid, w, abs_data), valid), extended=extended)
        if log:
            where = "extended" if extended else f"{k + 1:3d}/{len(Cs)}"
            log(f"point {where}  {label} {C:.4g}  iterations {res.iterations:3d}  violated {res.n_active}  "
                f"valid {metric} {m:.4f}{'  constant scores' if p.constant else ''}  {p.seconds:.3f}s")
        return p

    w = None
    for k, C in enumerate(Cs):
        points.append(point(C, w, k))
        w = points[-1].w
        if progress:
            progress(k + 1, total[0])
    notes: list = []
    chosen = select_point(points, select, valid=valid, notes=notes, metric=metric)
    at_edge = edge_of(points, chosen) if validation_can_judge(points, valid) else None  # else: chosen by convention
    if extend and at_edge:
        notes = []
        chosen, at_edge = extend_grid(points, chosen, at_edge, point, select, valid, metric, notes, label,
                                      progress, total)
    for note in notes:
        if warn:
            warn(note)
    result = PathResult("grid", metric, points, chosen, select, notes, names, convention)
    result.at_edge = at_edge
    return result


def _still(w_new: np.ndarray, w_old: np.ndarray, direction: bool) -> bool:
    """The model no longer changes: ||w_new - w_old|| <= EDGE_STILL ||w_new|| (direction: of w / ||w||)."""
    a, b = float(norm(w_new)), float(norm(w_old))
    if a == 0.0 or b == 0.0:
        return a == b
    if direction:
        return float(norm(w_new / a - w_old / b)) <= EDGE_STILL
    return float(norm(w_new - w_old)) <= EDGE_STILL * a


def extend_grid(points, chosen, side, point, select, valid, metric, notes, label, progress=None, total=None,
                ends=("smallest", "largest")):
    """The edge rule (module docstring): points past the end the choice sits at ("low": the first,
    most regularised point; "high": the last), until it is interior or a bound is reached.
    point(value, w0, None, extended=True) fits and scores one point; points past the most
    regularised end stop when the direction of w no longer changes, past the other end when w no
    longer changes; a constant or excluded (diverged) point ends the extension. ends: how the notes
    call the first and last values. Returns (chosen, side still at an end or None)."""
    total = [len(points)] if total is None else total
    added, why = {"low": 0, "high": 0}, None
    last = side
    while side is not None and added[side] < EDGE_EXTRA:
        last = side
        if side == "high":  # the spacing of the two end points, in log C
            near = points[-1]
            p = point(near.C * (near.C / points[-2].C), near.w, None, extended=True)
            points.append(p)
        else:
            near = points[0]
            p = point(near.C / (points[1].C / near.C), near.w, None, extended=True)
            points.insert(0, p)
        added[side] += 1
        total[0] += 1
        if progress:
            progress(total[0], total[0])
        if p.constant or p.excluded:
            why = "constant" if p.constant else "excluded"
        elif _still(p.w, near.w, direction=(side == "low")):
            why = "limit"
        del notes[:]
        chosen = select_point(points, select, valid=valid, notes=notes, metric=metric, label=label)
        side = edge_of(points, chosen)
        if why:
            break
    if why == "excluded":  # the next point diverged: the choice is at the end of what the solver can fit
        usable = [i for i, q in enumerate(points) if not (q.constant or q.excluded)]
        if chosen == (usable[-1] if last == "high" else usable[0]):
            side = last
    if side is None:  # interior now: the table shows the points added (-v: a line each)
        pass
    elif why == "limit":
        end = ends[1] if side == "high" else ends[0]
        notes.append(f"the choice is the {end} {label} ({points[chosen].C:.4g}) after "
                     f"{_extended_words(points, label, ends)}, where the model "
                     f"{'no longer changes' if side == 'high' else 'ranks as every one past it would'}: not an edge")
        side = None
    else:
        end = ends[1] if side == "high" else ends[0]
        bound = {"excluded": f"the next {label} diverged", "constant": f"the next {label} gives constant scores"}.get(
            why, f"at most {EDGE_EXTRA} per end")
        notes.append(f"the choice ({label} {points[chosen].C:.4g}) is still the {end} {label} after "
                     f"{_extended_words(points, label, ends)} ({bound}): marked at an edge")
    return chosen, side


def _extended_words(points, label, ends=("smallest", "largest")) -> str:
    lo = next((i for i, p in enumerate(points) if not p.extended), len(points))
    hi = sum(1 for p in points if p.extended) - lo
    parts = []
    if lo:
        parts.append(f"{lo} point{'s' if lo > 1 else ''} added past the {ends[0]} {label}")
    if hi:
        parts.append(f"{hi} point{'s' if hi > 1 else ''} added past the {ends[1]} {label}")
    return " and ".join(parts)


def write_table(path: str, result: PathResult) -> None:
    others = [m for m in result.metrics if m != result.metric]
    cols = ["C", "lambda", "iterations", "objective", "train_loss", "violated_pairs", "w_norm",
            f"valid_{result.metric}", f"valid_{result.metric}_se", *(f"valid_{m}" for m in others), "seconds",
            "extended", "constant", "at_edge", "chosen"]
    with atomic_open(path) as fh:
        fh.write("\t".join(cols) + "\n")
        for i, p in enumerate(result.points):
            row = [p.C, 1.0 / p.C, p.iterations, p.objective, p.loss, p.n_active, p.w_norm, p.metric, p.metric_se,
                   *(p.metrics.get(m, float("nan")) for m in others), round(p.seconds, 6), int(p.extended),
                   int(p.constant), (result.at_edge or "-") if i == result.chosen else "", int(i == result.chosen)]
            fh.write("\t".join(repr(v) if isinstance(v, float) else str(v) for v in row) + "\n")


# -- the exact path (rankkit/paths/exact.py) as path points -----------------------------------------
EXACT_MAX_PAIRS = 10_000  # no --method: the exact path when the training data has at most this many pairs
EXACT_MAX_DOCUMENTS = 2_000  # ... and documents (rbf/poly: a dense n x n kernel matrix; linear: a short default run)


def choose_method(train: Dataset) -> str:
    return "exact" if train.n_pairs <= EXACT_MAX_PAIRS and train.n_rows <= EXACT_MAX_DOCUMENTS else "grid"


def exact_path_points(train: Dataset, valid: Dataset, metric: str = DEFAULT_METRIC, select: str = "best",
                      kernel: str = "linear", gamma=None, degree: int = 3, coef0: float = 0.0, graph: str = "full",
                      lambda_min=None, max_events: int | None = None, log=None, progress=None,
                      convention: str = DEFAULT_CONVENTION, metrics=None):
    """Run the exact path and express its breakpoints (increasing C) as PathPoints. For the linear
    kernel a point's w is w(lambda); for other kernels it is beta (f(x) = sum_r beta_r k(x_r, x)).
    log(line): progress lines from the start; progress(total, label): a progress display (a factory
    as for `train`: the display it returns is called with (done, total, info))."""
    import warnings

    from rankkit.paths.exact import PROGRESS_STEPS, PathWarning, exact_path  # scipy: only for the exact path

    names = reported_metrics(metric, metrics)
    train.require_pairs()
    if max_events is None:  # a path takes about 2-3 events per pair
        max_events = max(10_000, 4 * train.n_pairs)
    bar = progress(PROGRESS_STEPS, "exact path") if progress else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PathWarning)
        try:
            res = exact_path(train, valid, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, graph=graph,
                             lambda_min=lambda_min, max_events=max_events, metric=list(names), log=log, progress=bar,
                             convention=convention)
        except BaseException:
            if bar:  # an interrupted or failed path still ends the display's line
                bar(PROGRESS_STEPS, PROGRESS_STEPS)
            raise
    notes = [str(w.message) for w in caught if issubclass(w.category, PathWarning)]
    linear = kernel == "linear"
    points = []
    prev = 0.0
    abs_data = np.abs(valid.data) if linear else None
    for b in res.breakpoints:
        coef = res.w_at(b.lam) if linear else res.beta_at(b.lam)
        m = float(b.metrics.get(metric, float("nan")))
        constant = False
        if linear:  # the first breakpoint has w = 0: its metric is the tie-breaking order's, never chosen
            scores = csr_matvec(valid.data, valid.indices, valid.indptr, coef, np.empty(valid.n_rows))
            constant = constant_scores(scores, linear_scale(valid, coef, abs_data), valid)
        points.append(PathPoint(b.C, 0, b.objective_C, b.hinge, b.n_one, float(norm(coef)), m, 0.0,
                                b.seconds - prev, coef, None, {k: float(b.metrics.get(k, float("nan"))) for k in names},
                                constant=constant))
        prev = b.seconds

    tiebreak = dataset_tiebreak(valid, convention)

    def values_at(i):  # per-query values at breakpoint i, computed for the candidates 1se examines
        if points[i].values is None:
            lam = 1.0 / points[i].C
            scores = (csr_matvec(valid.data, valid.indices, valid.indptr, res.w_at(lam), np.empty(valid.n_rows))
                      if linear else res.scores_at(lam, valid))
            points[i].values = per_query(metric, valid.y, scores, valid.qptr, convention, tiebreak=tiebreak)
        return points[i].values

    choice_notes: list = []
    chosen = select_point(points, select, valid=valid, values_at=values_at, notes=choice_notes, metric=metric)
    if select == "1se":
        points[chosen].metric_se = mean_se(values_at(chosen))[1]
    notes = notes + choice_notes  # commands.path prints these notes as warnings
    return PathResult("exact", metric, points, chosen, select, choice_notes, names, convention), res, notes


def write_exact_table(path: str, res) -> None:
    """Every breakpoint: lambda, C, |I_alpha|, |I_0|, |I_1|, hinge loss, objective, metrics, event."""
    rows = res.table()
    cols = list(rows[0].keys()) if rows else []
    with atomic_open(path) as fh:
        fh.write("\t".join(cols) + "\n")
        for r in rows:
            fh.write("\t".join(repr(v) if isinstance(v, float) else str(v) for v in r.values()) + "\n")


# -- fixed values of C over every fold, in one process ---------------------------------------------
def fold_dirs(folds_dir: str) -> list[str]:
    """Fold1, Fold2, ... of a LETOR directory, in numeric order (UsageError if none)."""
    import os

    try:
        listed = os.listdir(folds_dir)
    except OSError as exc:
        raise UsageError(f"{folds_dir}: cannot list ({exc.strerror or exc})") from None
    # K in ASCII digits only: str.isdigit() also holds for 'Fold²' (which int() refuses) and
    # 'Fold١' (Arabic-Indic one, which int() reads as 1): such a name is refused, not guessed at
    odd = sorted(d for d in listed if d.startswith("Fold") and d[4:].isdigit() and not d[4:].isascii())
    if odd:
        raise UsageError(f"{folds_dir}: '{odd[0]}' is not a fold directory name: write FoldK with K in the "
                         "digits 0-9 (Fold1, Fold2, ...)")
    names = sorted((d for d in listed if d.startswith("Fold") and d[4:].isdigit()), key=lambda d: (int(d[4:]), d))
    if not names:
        inner = sorted(d for d in listed if os.path.isdir(os.path.join(folds_dir, d))
                       and os.path.isdir(os.path.join(folds_dir, d, "Fold1")))
        where = (f" ({', '.join(inner)} {'holds' if len(inner) == 1 else 'hold'} folds: give "
                 f"{os.path.join(folds_dir, inner[0])})") if inner else ""
        raise UsageError(f"{folds_dir}: no Fold1, Fold2, ... directories{where}")
    return names


# the file names of a fold's parts: LETOR 4.0 / MSLR (train.txt, vali.txt, test.txt) and LETOR 3.0
# (OHSUMED, .gov: trainingset.txt, validationset.txt, testset.txt), each plain or compressed
FOLD_FILE_NAMES = {"train": ("train", "trainingset"), "vali": ("vali", "validationset"), "test": ("test", "testset")}
FOLD_FILE_EXTS = ("", ".gz", ".bz2", ".xz")


def fold_file(fold_dir: str, part: str, required: bool = True) -> str | None:
    """The `part` ("train", "vali" or "test") of one fold directory, by LETOR 4.0's or LETOR 3.0's
    name (FOLD_FILE_NAMES), plain or .gz/.bz2/.xz. A missing part: a UsageError naming every name
    looked for (None when not `required`); two candidates: a UsageError (keep one)."""
    import os

    looked = [stem + ".txt" for stem in FOLD_FILE_NAMES[part]]
    found = [os.path.join(fold_dir, name + ext) for name in looked for ext in FOLD_FILE_EXTS
             if os.path.isfile(os.path.join(fold_dir, name + ext))]
    if len(found) > 1:
        raise UsageError(f"{fold_dir}: both {os.path.basename(found[0])} and {os.path.basename(found[1])}: keep one")
    if found:
        return found[0]
    if not required:
        return None
    raise UsageError(f"{fold_dir}: no {part} file: looked for {' and '.join(looked)} (each also .gz, .bz2, .xz); "
                     "a fold named otherwise is given by its files: rankkit experiment --fold TRAIN VALID TEST")


def fixed_c_model_name(fold: str, C: float) -> str:
    return f"{fold}.C{C:g}.model"


def fixed_c_folds(folds_dir: str, Cs, out_dir: str, train_one, metric: str = DEFAULT_METRIC,
                  zero_based: bool = False, group_queries: bool = False, log=None, jobs: int = 1,
                  convention: str = DEFAULT_CONVENTION, metrics=None) -> list[dict]:
    """Train every fold of a LETOR directory (FoldK/train.txt) at each C of `Cs`, in this one
    process (the start is paid once, not once per fit), and score each model on FoldK/test.txt
    (and FoldK/vali.txt when present) with `metric`.

    `train_one(train_file, model_file, C, log)` trains and writes one model exactly as `rankkit train
    TRAIN MODEL -C C` does (the CLI passes its own train) and returns the fit's result (.w,
    .iterations, .objective, .converged). Models are written to OUT_DIR/FoldK.C<C>.model. Returns
    one row per (fold, C): fold, C, model, iterations, objective, converged, valid and test values
    of `metric` (NaN when the file is absent), and in "valid_metrics" / "test_metrics" those of
    every metric of `metrics` (`metric` first), each graded as `rankkit eval` grades it.

    jobs > 1: that many folds at once, each on its own thread with single-threaded kernels (small
    fits gain more from whole folds side by side than from splitting each product). Every kernel
    gives the same bits on any number of threads, so models and rows do not depend on `jobs`; the
    rows come in fold order and each fold's log lines together, in fold order. Once a fold fails
    (or the run is interrupted), no further fold starts and the folds in flight stop at their next
    kernel call (threads.Cancelled), before writing their model."""
    import threading


    folds = fold_dirs(folds_dir)
    names = reported_metrics(metric, metrics)
    jobs = min(jobs, len(folds))
    if jobs <= 1:
        return [row for fold in folds
                for row in _fixed_c_fold(folds_dir, fold, Cs, out_dir, train_one, names, zero_based, group_queries,
                                         log, threading.Event(), convention)]
    from concurrent.futures import ThreadPoolExecutor

    stop = threading.Event()

    def one_fold(fold):
        lines: list[str] = []
        if stop.is_set():
            return [], lines
        # single-threaded kernels; once `stop` is set, the fold's next kernel call raises Cancelled:
        # a fold in flight stops within one kernel call and writes no model
        with threads.limited(1, cancel=stop):
            try:
                return _fixed_c_fold(folds_dir, fold, Cs, out_dir, train_one, names, zero_based, group_queries,
                                     lines.append if log else None, stop, convention), lines
            except threads.Cancelled:
                return [], lines
            except BaseException:
                stop.set()
                raise

    rows = []
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="rankkit-fold")
    try:
        futures = [pool.submit(one_fold, fold) for fold in folds]
        for future in futures:  # in fold order
            # waited for in short steps: a signal the kernel gave to a fold's thread only sets a flag,
            # which this (the main) thread acts on when it next runs; a wait without a timeout let
            # every fold finish first (and write its models) before the run ended with 128 + N
            while True:
                try:
                    fold_rows, lines = future.result(timeout=0.05)
                    break
                except TimeoutError:
                    continue
            for line in lines:
                log(line)
            rows += fold_rows
    except BaseException:
        stop.set()  # an error or a signal: no fold starts, the folds in flight stop at their next kernel
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # returns within one kernel call once stopped
    return rows


def _fixed_c_fold(folds_dir, fold, Cs, out_dir, train_one, names, zero_based, group_queries, log, stop,
                  convention=DEFAULT_CONVENTION) -> list[dict]:
    import math
    import os

    base = os.path.join(folds_dir, fold)
    evals = {}
    for part in ("vali", "test"):
        f = fold_file(base, part, required=False)
        ds = read_svmlight(f, zero_based=zero_based, group_queries=group_queries) if f is not None else None
        evals[part] = (ds, dataset_tiebreak(ds, convention)) if ds is not None else None
    rows = []
    for C in Cs:
        if stop.is_set():
            break
        model = os.path.join(out_dir, fixed_c_model_name(fold, C))
        t = time.perf_counter()
        res = train_one(fold_file(base, "train"), model, C, log)
        row = {"fold": fold, "C": float(C), "model": model, "iterations": int(res.iterations),
               "objective": float(res.objective), "converged": bool(res.converged),
               "seconds": time.perf_counter() - t}
        for part, ev in evals.items():  # csr_matvec ignores features the model has not seen
            table = validation_table(ev[0], res.w, names, convention, ev[1]) if ev is not None else None
            values = {m: mean_se(table[m])[0] if table is not None else math.nan for m in names}
            row["valid_metrics" if part == "vali" else "test_metrics"] = values
            row[part] = values[names[0]]
        if log:
            log(f"{fold} C={C:g}: {row['iterations']} iterations, test {names[0]} {row['test']:.4f}")
        rows.append(row)
    return rows


def write_fixed_c_table(path: str, rows: list[dict], metric: str, metrics=None) -> None:
    """Every (fold, C) as TSV: valid and test columns of `metric`, then of each other metric of
    `metrics` (the rows' valid_metrics / test_metrics)."""
    names = reported_metrics(metric, metrics)
    cols = "\t".join(f"valid_{m}\ttest_{m}" for m in names)
    with atomic_open(path) as fh:
        fh.write(f"fold\tC\tmodel\titerations\tobjective\tconverged\t{cols}\tseconds\n")
        for r in rows:
            vals = "\t".join(f"{r.get('valid_metrics', {m: r['vali']})[m]:.6f}\t"
                             f"{r.get('test_metrics', {m: r['test']})[m]:.6f}" for m in names)
            fh.write(f"{r['fold']}\t{r['C']!r}\t{r['model']}\t{r['iterations']}\t{r['objective']:.17g}\t"
                     f"{int(r['converged'])}\t{vals}\t{r['seconds']:.4f}\n")
