"""The LETOR protocol in one call: for each fold, a grid of hyperparameters per solver, the choice
on the fold's validation set, the chosen model scored on its test set, and a paired significance
test of every solver against the first over all test queries of all folds.

    experiment(folds, solvers=("newton", "pegasos"), metrics=("map", "ndcg@10"), out_dir="OUT")

returns the results as plain data, the shape of OUT/results.json (README, section `rankkit
experiment`). The faces are thin over it and word its warnings with their own Words:
`rankkit.experiment(...)` (the Python face, rankkit.estimators.experiment; the module is named
experiments so that the package's name stays the function) and `rankkit experiment`
(rankkit.app.experiment).

Grids (each overridable with `grids={"pegasos": {"lambda": [...]}}`; CLI `--grid pegasos:lambda=...`),
listed from the most regularised point on (the order the one-standard-error rule walks):
- exact solvers (newton, newton-pairs, bundle): C, `n_points` values from C_min (where w is still
  nearly 0) up by `ratio`, a warm-started path (rankkit.paths.grid.path_over: for newton the very
  loop `rankkit path --method grid` runs, so the choices are the same);
- stochastic solvers with a lambda (sgd, pegasos, logreg, margin-perceptron): lambda, `n_points`
  values from LAMBDA_SPAN x lambda_min down to lambda_min = LAMBDA_SAFETY x R2 / T, R2 the mean
  squared distance of two documents of a training query and T the steps (--iterations): Pegasos'
  error bound grows as R2 / (lambda T), and below a few R2 / T the steps diverge (MQ2008: below
  ~2 R2 / T, LightGBM's example ~5 R2 / T); each fit from w = 0 with the same --seed; pa: its step cap C, 1e-3
  to 10; pair-sgd and query-sgd: the C of their squared-hinge objective, as the exact solvers; romma
  has no hyperparameter (one point);
- factorized: K in (5, 10, 20) times C in (0.01, 0.1, 1, 10);
- a kernel (`kernel="rbf"` or "poly", exact solvers): gamma in (0.1, 1, 10) / features times C in
  (0.001, 0.01, 0.1, 1).
A choice at an end of a one-parameter grid (C or lambda) extends the grid past that end
(rankkit.paths.grid's edge rule; results.json's "at_edge" says where a choice still sits at an end),
and a point with constant validation scores or a diverged stochastic fit is never chosen.
Every point is graded on the validation set by every metric under `convention`, ties broken as
`rankkit eval` breaks them; the first metric chooses (`select` "best" or "1se",
rankkit.paths.grid.select_point). The test metrics are those `rankkit eval TEST SCORES` prints for
the written scores (rankkit.evaluation.dataset_table), and the p-values those of `rankkit eval`
on the folds' test files and score files concatenated in fold order (rankkit.evaluation.summarize).

Outputs under out_dir, each written atomically: FoldK/SOLVER.model, FoldK/SOLVER.test.scores,
FoldK/SOLVER.vali.tsv (every grid point: its hyperparameters and validation metrics; whether the
edge rule added it, whether its scores are constant or its fit diverged, the choice's at_edge),
FoldK/SOLVER.done.json (what a re-run reuses), results.json, results.tsv, results.txt and
SOLVER.vali.svg (the validation metric along the grid, a line per fold). A fold's record is
written last, after its model and scores, and names the SHA-256 of the bytes read from its inputs
(computed while reading: a pipe is identified by its content), of its settings and of the files it
wrote, and carries a checksum over its own content: a re-run with the same inputs and settings
reuses every fold whose record is intact and whose files match, so an interrupted experiment
resumes where it stopped; a record that does not verify is fitted again, said in one warning.
Every input is read and checked before anything is created under out_dir.

Reproducible: no timing or date enters the tables, the records or results.json, so they have the
same bytes for any `jobs` and thread count (the model files carry their creation time and training
time, as every rankkit model does).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import threading
from dataclasses import dataclass

import numpy as np

from rankkit import threads, training
from rankkit.config import DEFAULT_CONVENTION, DEFAULT_PERMUTATIONS, __version__
from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.evaluation import dataset_table, dataset_tiebreak, mean_skipping_nan, summarize
from rankkit.io.atomic import atomic_open, check_output, check_output_directory, output_directory
from rankkit.io.files import display_name, open_regular
from rankkit.io.groups import resolve as resolve_groups
from rankkit.io.model import Model, write_model
from rankkit.io.output import write_scores
from rankkit.io.svmlight import read_svmlight
from rankkit.metrics import describe, gradable_labels, parse_metric, per_query_table, ungradable
from rankkit.paths.grid import (DEFAULT_N_POINTS, DEFAULT_RATIO, PathPoint, constant_scores, edge_of, extend_grid,
                                fold_dirs, fold_file, grid, linear_scale, mean_se, path_over, reported_metrics, select_point,
                                validation_can_judge)
from rankkit.scoring import model_scores
from rankkit.solvers import SOLVERS
from rankkit.solvers.newton import path_memory
from rankkit.solvers.options import NAMES, WORDS, Words, stop_message
from rankkit.solvers.sgd import DEFAULT_ITERATIONS as SGD_ITERATIONS

__all__ = ["experiment", "Fold", "letor_folds", "default_grid", "GRID_PARAMETERS", "RESULTS_VERSION"]

RESULTS_VERSION = 1  # the shape of results.json (README: rankkit experiment)
_RECORD_VERSION = 4  # what a FoldK/SOLVER.done.json holds and how grids are made: a change refits
#                     (3: the edge rule's extended points, constant and diverged points, at_edge;
#                      and, separately, digests of the bytes read and a checksum over the record;
#                      4: both together)
DEFAULT_METRICS = ("ndcg@10", "map")
DEFAULT_SOLVERS = ("newton",)
LAMBDA_SAFETY = 3.0  # the smallest default lambda: LAMBDA_SAFETY x (mean ||x_a - x_b||^2 in a query) / steps
LAMBDA_SPAN = 1e4  # the default lambda grid: from LAMBDA_SPAN x the smallest down to it (n_points, log-spaced)
FACTORIZED_K = (5, 10, 20)
FACTORIZED_C = (0.01, 0.1, 1.0, 10.0)
KERNEL_GAMMA = (0.1, 1.0, 10.0)  # times 1/features
KERNEL_C = (0.001, 0.01, 0.1, 1.0)
PA_C = (1e-3, 10.0)
# the hyperparameters a grid may name (command-line spelling) -> the training option they set
GRID_PARAMETERS = {"C": "C", "lambda": "lam", "K": "K", "gamma": "gamma"}
_EXACT = ("newton", "newton-pairs", "nlcg", "bundle")
# the parameters a grid of each kind of solver (_kind) may name: those default_grid varies
_GRID_TAKES = {"C-path": ("C",), "C": ("C",), "pa": ("C",), "lambda": ("lambda",), "factorized": ("C", "K"),
               "kernel": ("C", "gamma"), "none": ()}


@dataclass(frozen=True)
class Fold:
    name: str
    train: str
    valid: str
    test: str


def letor_folds(directory: str) -> list[Fold]:
    """Fold1..FoldK of a LETOR directory, each with train, vali and test: LETOR 4.0's train.txt,
    vali.txt, test.txt or LETOR 3.0's trainingset.txt, validationset.txt, testset.txt (each plain or
    .gz/.bz2/.xz: rankkit.paths.grid.fold_file)."""
    if not os.path.isdir(directory):
        raise UsageError(f"{directory}: not a directory")
    return [Fold(d, *(fold_file(os.path.join(directory, d), part) for part in ("train", "vali", "test")))
            for d in fold_dirs(directory)]


def as_folds(folds) -> list[Fold]:
    """A LETOR directory, or a list of (train, valid, test) triples (named Fold1, Fold2, ...) or Folds."""
    if isinstance(folds, (str, os.PathLike)):
        return letor_folds(os.fspath(folds))
    out = []
    for i, f in enumerate(folds):
        if isinstance(f, Fold):
            out.append(f)
            continue
        if len(f) != 3:
            raise UsageError(f"a fold is (train, valid, test), got {f!r}")
        out.append(Fold(f"Fold{i + 1}", *(os.fspath(x) for x in f)))
    if not out:
        raise UsageError("no folds")
    if len({f.name for f in out}) != len(out):
        raise UsageError("two folds have the same name")
    return out


# -- grids ------------------------------------------------------------------------------------------
def _kind(solver: str, kernel: str | None) -> str:
    spec = SOLVERS[solver]
    if kernel is not None:
        if solver not in _EXACT:
            raise UsageError(f"--kernel goes with the exact solvers ({', '.join(_EXACT)}), not --solver {solver}")
        return "kernel"
    if spec.factorized:
        return "factorized"
    if solver in _EXACT or solver in ("pair-sgd", "query-sgd"):
        return "C-path" if solver in _EXACT else "C"
    if solver == "pa":
        return "pa"
    if solver == "romma":
        return "none"
    return "lambda"


def pair_spread(train: Dataset) -> float:
    """R2: the mean over the training documents of 2 ||x - mean of its query||^2, the mean squared
    distance ||x_a - x_b||^2 of two documents of a query (the scale of a pairwise step)."""
    X = train.csr()
    sizes = np.diff(train.qptr).astype(np.float64)
    total = float(X.multiply(X).sum())
    owner = np.repeat(np.arange(train.n_queries), np.diff(train.qptr))
    sums = np.zeros((train.n_queries, X.shape[1]))
    coo = X.tocoo()
    np.add.at(sums, (owner[coo.row], coo.col), coo.data)
    within = total - float(np.sum((sums * sums).sum(axis=1) / sizes))
    return 2.0 * max(within, 0.0) / max(train.n_rows, 1)


def lambda_grid(train: Dataset, n_points: int = DEFAULT_N_POINTS, iterations: int | None = None) -> list:
    """The default lambda grid (module docstring): from LAMBDA_SPAN x lambda_min down to lambda_min =
    LAMBDA_SAFETY x R2 / T."""
    steps = iterations or SGD_ITERATIONS
    r2 = pair_spread(train)
    if not r2 > 0:
        raise UsageError(f"{train.source}: the documents of every training query have the same features: no "
                         "lambda to choose")
    lo = LAMBDA_SAFETY * r2 / steps
    return (lo * np.logspace(math.log10(LAMBDA_SPAN), 0.0, n_points)).tolist()


def default_grid(solver: str, train: Dataset, n_points: int = DEFAULT_N_POINTS, ratio: float = DEFAULT_RATIO,
                 kernel: str | None = None, iterations: int | None = None) -> dict:
    """{parameter: values} of a solver's default grid on this training set (see the module docstring)."""
    kind = _kind(solver, kernel)
    if kind in ("C-path", "C"):
        return {"C": grid(train, n_points, ratio).tolist()}
    if kind == "lambda":
        return {"lambda": lambda_grid(train, n_points, iterations)}
    if kind == "pa":
        return {"C": np.logspace(math.log10(PA_C[0]), math.log10(PA_C[1]), n_points).tolist()}
    if kind == "factorized":
        return {"C": list(FACTORIZED_C), "K": list(FACTORIZED_K)}
    if kind == "kernel":
        return {"C": list(KERNEL_C), "gamma": [g / max(train.n_features, 1) for g in KERNEL_GAMMA]}
    return {}


def _grid_for(solver: str, train: Dataset, grids: dict, n_points: int, ratio: float, kernel: dict | None,
              iterations: int | None = None) -> dict:
    """The solver's default grid with the parameters `grids` names replaced (a parameter the
    solver does not take is refused by training.plan, before any reading)."""
    if "lambda" in grids.get(solver, {}) and _kind(solver, kernel and kernel["name"]) == "lambda":
        return dict(grids[solver])  # no default to compute
    values = default_grid(solver, train, n_points, ratio, kernel and kernel["name"], iterations)
    values.update(grids.get(solver, {}))
    return values


def _points(solver: str, values: dict) -> list[dict]:
    """The grid's points, most regularised first: C increasing, lambda decreasing; for a product
    grid the first parameter (C) outermost."""
    keys = list(values)
    for k in keys:
        if k not in GRID_PARAMETERS:
            raise UsageError(f"--grid {solver}:{k}: unknown parameter (known: {', '.join(GRID_PARAMETERS)})")
    ordered = {}
    for k in keys:
        v = [float(x) for x in values[k]]
        if not v or any(not math.isfinite(x) or x <= 0 for x in v):
            raise UsageError(f"--grid {solver}:{k}: give positive finite values")
        if k == "K":
            if any(x != int(x) for x in v):
                raise UsageError(f"--grid {solver}:K: give integers")
            v = [int(x) for x in v]
        v = sorted(set(v), reverse=(k == "lambda"))
        ordered[k] = v
    keys = sorted(keys, key=lambda k: 0 if k in ("C", "lambda") else 1)
    points = [{}]
    for k in keys:
        points = [dict(p, **{k: x}) for p in points for x in ordered[k]]
    return points


# -- one fold, one solver ---------------------------------------------------------------------------
def _settings(solver: str, point: dict, kernel: dict | None, iterations, seed: int):
    params = {"C": point.get("C"), "tol": None, "max_iter": None, "loss": None, "query_norm": False}
    spec = SOLVERS[solver]
    stochastic = None
    if spec.stochastic or spec.factorized:
        params = {"C": point.get("C"), "loss": None}
        stochastic = {"lam": point.get("lambda"), "iterations": iterations, "seed": seed, "K": point.get("K")}
    kmap = None
    if kernel is not None:
        kmap = dict(kernel, gamma=point.get("gamma", kernel.get("gamma")), seed=seed)
    return params, stochastic, kmap


def _label(point: dict) -> str:
    return " ".join(f"{k} {v:g}" for k, v in point.items()) or "(no hyperparameter)"


def _fit_grid(solver, points, train, valid, names, convention, select, kernel, iterations, seed, log, tick,
              words: Words = WORDS):
    """(chosen index, per-point rows, chosen Model, notes, at_edge). A one-parameter grid of C or
    lambda whose choice sits at an end is extended past it (rankkit.paths.grid's edge rule: warm-started
    along the C path, each point from w = 0 with the same seed for the stochastic solvers, which also
    stop at a point that diverges); a point with constant validation scores, or a stochastic fit that
    diverged, is never chosen. at_edge: None, or "low" / "high", the end of the parameter's values the
    choice still sits at (product grids are not extended: their choice of C at an end is marked)."""
    spec = SOLVERS[solver]
    tiebreak = dataset_tiebreak(valid, convention)
    metric = names[0]
    notes: list = []
    param = list(points[0])
    if _kind(solver, kernel and kernel.get("name")) == "C-path" and param == ["C"]:
        # the warm-started C path: for newton, exactly what `rankkit path --method grid` runs
        def fit(C, w0):  # newton's CG preconditioner goes along the path too (path_memory)
            params, _, _ = _settings(solver, {"C": C}, None, iterations, seed)
            p = training.plan(solver, params)
            return p.solver().fit(train, w0=w0)

        res = path_over(fit, [p["C"] for p in points], valid, metric=metric, select=select, convention=convention,
                        metrics=names, log=log, progress=lambda done, total: tick(),
                        warn=notes.append, along=path_memory)
        notes = list(res.notes)
        best = res.best
        params, _, _ = _settings(solver, {"C": best.C}, None, iterations, seed)
        p = training.plan(solver, params)
        sol = p.solver()
        outcome = {"objective": best.objective, "iterations": best.iterations, "violated_pairs": best.n_active,
                   "chosen_on": f"{display_name(valid.source)} by {metric} ({select}), point {res.chosen + 1} of "
                   f"{len(res.points)} of a warm-started C path"}
        header = training.model_header(spec.name, getattr(sol, "loss", spec.losses[0]), dict(sol.hyperparameters()),
                                       training.data_counts(train.n_features, train.n_queries, train.n_rows,
                                                            train.n_pairs), outcome)
        model = Model(weights=best.w.copy(), header=header)
        rows = [{"point": {"C": q.C}, "iterations": q.iterations, "objective": q.objective,
                 "valid": {m: q.metrics[m] for m in names}, "valid_se": q.metric_se, "constant": q.constant,
                 "diverged": False, "extended": q.extended} for q in res.points]
        return res.chosen, rows, model, notes, res.at_edge
    n = len(points)
    fitted: dict = {}  # id(PathPoint) -> (model, row, warning)
    # a kernel grid runs its points one value of gamma after another, so that the kernel map of the
    # training data is computed once per gamma (maps: training.fit_dataset's cache, one entry);
    # the rows keep the grid's order
    gammas = list(dict.fromkeys(pt.get("gamma") for pt in points))
    order = sorted(range(n), key=lambda k: gammas.index(points[k].get("gamma")))
    maps: dict = {}

    def fit_point(pt, k, extended=False):
        params, stochastic, kmap = _settings(solver, pt, kernel, iterations, seed)
        p = training.plan(solver, params, stochastic, kmap)
        said: list = []
        model, result = training.fit_dataset(p, train, warn=said.append, maps=maps)
        warning = stop_message(result.stop, result.detail, words, _option_names(solver, words)) \
            if said else None
        where = "extended" if extended else f"{k + 1:3d}/{n}"
        if warning and log:
            log(f"point {where}  {_label(pt)}: {warning}")
        scores = model_scores(model, valid)[0]
        table = per_query_table(list(names), valid.y, scores, valid.qptr, convention, tiebreak=tiebreak)
        m, se = mean_se(table[metric])
        constant = constant_scores(scores, _score_scale(model, valid, scores), valid)
        diverged = result.stop == "diverged"
        key = pt["C"] if "C" in pt else pt["lambda"] if "lambda" in pt else float(k + 1)
        q = PathPoint(key, result.iterations, result.objective, float("nan"), result.n_active, 0.0, m, se, 0.0,
                      np.asarray(model.weights, dtype=np.float64), table[metric], constant=constant, excluded=diverged,
                      extended=extended)  # w: the edge rule's "no longer changes"
        row = {"point": dict(pt), "iterations": int(result.iterations), "objective": float(result.objective),
               "valid": {name: mean_se(table[name])[0] for name in names}, "valid_se": se, "constant": constant,
               "diverged": diverged, "extended": extended}
        fitted[id(q)] = (model, row, warning)
        if log:
            log(f"point {where}  {_label(pt)}  valid {metric} {m:.4f}{'  constant scores' if constant else ''}")
        tick()
        return q

    path_points = [None] * n
    for k in order:
        path_points[k] = fit_point(points[k], k)
    if all(q.excluded or q.constant for q in path_points) and any(q.excluded for q in path_points):
        first = next(fitted[id(q)][2] for q in path_points if q.excluded)
        raise UsageError(f"no grid point of {n} can be chosen: each diverged or scores every validation query "
                         f"alike; the first that diverged: {first}")
    label = param[0] if len(param) == 1 else "point"
    chosen = select_point(path_points, select, valid=valid, notes=notes, metric=metric, label=label)
    at_edge = None
    one = param[0] if len(param) == 1 and n >= 2 and param[0] in ("C", "lambda") else None
    if one is not None:
        side = edge_of(path_points, chosen) if validation_can_judge(path_points, valid) else None  # else: by convention
        if side:
            notes = []
            ends = ("largest", "smallest") if one == "lambda" else ("smallest", "largest")
            chosen, side = extend_grid(path_points, chosen, side, lambda v, w0, k, extended: fit_point(
                {one: v}, k, extended), select, valid, metric, notes, one, ends=ends)
        # at_edge names the end of the parameter's values: the first lambda is the largest
        at_edge = side if one == "C" or side is None else {"low": "high", "high": "low"}[side]
    elif "C" in param and len({pt["C"] for pt in points}) >= 2:  # a product grid: not extended, marked
        Cs = sorted({pt["C"] for pt in points})
        c = points[chosen]["C"]
        at_edge = "low" if c == Cs[0] else "high" if c == Cs[-1] else None
        if at_edge:
            notes.append(f"the choice (C {c:g}) is the {'smallest' if at_edge == 'low' else 'largest'} C of this "
                         "product grid, which is not extended: marked at an edge")
    model, _, warning = fitted[id(path_points[chosen])]
    rows = [fitted[id(q)][1] for q in path_points]
    warned = [fitted[id(q)][2] for q in path_points]
    if warning:
        notes.append(f"the chosen point ({_label(rows[chosen]['point'])}): {warning}")
    others = sum(1 for i, w in enumerate(warned) if w and i != chosen)
    if others:
        kinds = sorted({"diverged" if rows[i]["diverged"] else "stopped before its stopping rule"
                        for i in range(len(warned)) if warned[i] and i != chosen})
        notes.append(f"{others} other grid point{'s' if others > 1 else ''} of {len(rows)} "
                     f"{' or '.join(kinds)} (-v names them)")
    model.header["chosen_on"] = (f"{display_name(valid.source)} by {metric} ({select}), point {chosen + 1} of "
                                 f"{len(rows)}")
    return chosen, rows, model, notes, at_edge


def convention_in_file_order(convention) -> bool:
    """The convention breaks tied scores by file order (every one but trec, which breaks them by
    docid, as trec_eval: rankkit.evaluation.dataset_tiebreak)."""
    return getattr(convention, "name", convention) != "trec"


def tied_in_top(names, ds, scores) -> dict:
    """{metric: queries whose top k (the metric's cutoff; the whole list without one) holds a score
    that documents of two different labels share}: where a tie-breaking order, not the model,
    decides part of the metric. scores: in the Dataset's row order."""
    out = {}
    qptr, y = ds.qptr, ds.y
    for m in names:
        k = parse_metric(m)[1]
        n = 0
        for q in range(qptr.shape[0] - 1):
            a, b = int(qptr[q]), int(qptr[q + 1])
            sq, yq = scores[a:b], y[a:b]
            kk = b - a if k is None else min(k, b - a)
            cut = np.partition(sq, b - a - kk)[b - a - kk]  # the k-th largest score
            inside = sq >= cut
            values, group = np.unique(sq[inside], return_inverse=True)
            lo = np.full(values.shape[0], np.inf)
            hi = np.full(values.shape[0], -np.inf)
            np.minimum.at(lo, group, yq[inside])
            np.maximum.at(hi, group, yq[inside])
            n += bool(np.any(lo < hi))
        out[m] = n
    return out


def _score_scale(model, valid, scores) -> np.ndarray:
    """The scale of each validation score's rounding: sum_j |w_j x_j| for a dense linear model,
    |score| otherwise (rankkit.paths.grid.constant_scores)."""
    if model.landmarks is None and model.feature_index is None:  # scores = X w (csr_matvec skips columns past w)
        return linear_scale(valid, model.weights)
    return np.abs(scores)


def _option_names(solver: str, words: Words) -> dict:
    """How a warning of the experiment names what to change, in the caller's `words`: only what
    the experiment accepts (a grid's C, lambda, K or gamma, Words.grid; the iterations; the
    kernel's options), everything else in plain words (no max_iter, tol, eta or eta0: the
    experiment has none; a remedy through the learning rate is left out, None)."""
    names = {k: k.replace("_", " ") for k in NAMES}
    names["max_iter"] = "the solver's iteration limit"
    for k in ("C", "lambda", "K", "gamma"):
        names[GRID_PARAMETERS[k]] = words.grid(solver, k)
    names.update({k: words.names[k] for k in ("iterations", "kernel", "landmarks", "degree", "coef0")})
    names.update({"eta": None, "eta0": None})
    return names


def _sha256(path: str, regular: bool = False) -> str:
    """The file's SHA-256; `regular`: only of a regular file (an output in OUT: a FIFO there is
    not one, and must not hang the check), else OSError."""
    h = hashlib.sha256()
    with (open_regular(path) if regular else open(path, "rb")) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# -- inputs and the output directory: checked before anything is created -------------------------------
def check_inputs(folds) -> None:
    """Standard input ('-') can be read once: as one file of one fold, not two."""
    stdin = [p for f in folds for p in (f.train, f.valid, f.test) if p == "-"]
    if len(stdin) > 1:
        raise UsageError(f"standard input ('-') is given as {len(stdin)} files: it can be read once; "
                         "give it as one file only")


def _dir_problem(path: str) -> str | None:
    """Why `path` cannot be (or become) a directory rankkit writes into, or None: it exists and is a
    writable directory, or it does not exist and its nearest existing ancestor is one."""
    def dangling(link: str) -> str:
        try:
            target = os.readlink(link)
        except OSError as exc:  # /proc/1/cwd of another user's process
            return f"'{link}' cannot be followed ({exc.strerror or exc})"
        return f"'{link}' is a symbolic link to '{target}', which does not exist"

    if os.path.islink(path) and not os.path.exists(path):
        return dangling(path).replace(f"'{path}' is", "it is", 1)
    here = path
    while not os.path.exists(here):  # up the path as written (the kernel resolves '..' after links)
        up = os.path.dirname(here.rstrip(os.sep)) or os.curdir
        if up == here:
            return "no directory of its path exists"
        if os.path.islink(up) and not os.path.exists(up):
            return dangling(up)
        here = up
    if not os.path.isdir(here):
        return "it is not a directory" if here == path else f"'{here}' is not a directory"
    if not os.access(here, os.W_OK | os.X_OK):
        try:
            if os.statvfs(here).f_flag & os.ST_RDONLY:
                return "read-only file system"
        except (OSError, AttributeError):
            pass
        return "permission denied" if here == path else f"permission denied in '{here}'"
    return None


def check_out_dir(out_dir: str, subdirs=()) -> None:
    """out_dir and its subdirectories can be created or written into (UsageError naming the one
    that cannot: a regular file, a dangling symbolic link, a read-only file system, no permission);
    nothing is created. Then the rules of every output (rankkit.io.atomic.check_output_directory:
    no empty name, no link or special file planted by another user in a shared directory)."""
    for d in (out_dir, *(os.path.join(out_dir, n) for n in subdirs)):
        if d == "":
            check_output_directory(d)  # an empty name: its own words
        problem = _dir_problem(d)
        if problem is not None:
            raise UsageError(f"cannot write into '{d}': {problem}")
        check_output_directory(d)


def make_out_dirs(out_dir: str, subdirs=()) -> None:
    """Create out_dir and its subdirectories; a failure (a full or read-only file system, a file
    put there meanwhile) is one UsageError naming the directory."""
    for d in (out_dir, *(os.path.join(out_dir, n) for n in subdirs)):
        try:
            output_directory(d)  # the shared-directory rules again, at the moment of creating it
        except OSError as exc:  # from resolving the path (output_directory words its own makedirs failures)
            raise UsageError(f"cannot create directory '{d}': {exc.strerror or exc}") from None


def _check_outputs(out_dir: str, folds, solvers) -> None:
    """Every output of the experiment checked (rankkit.io.atomic.check_output) before any reading;
    those in a directory that does not exist yet cannot replace anything."""
    check_out_dir(out_dir, [f.name for f in folds])
    inputs = tuple(p for f in folds for p in (f.train, f.valid, f.test))
    outputs: list[str] = []

    def check(path, kind="file"):
        if os.path.isdir(os.path.dirname(path) or "."):
            check_output(path, inputs, kind=kind, outputs=tuple(outputs))
            if os.path.exists(path) and not os.path.isfile(path):  # a FIFO: never read nor written
                raise UsageError(f"cannot write '{path}': it exists and is not a regular file")
        outputs.append(path)

    for f in folds:
        for s in solvers:
            for suffix, kind in ((".model", "model"), (".test.scores", "file"), (".vali.tsv", "file"),
                                 (".done.json", "file")):
                check(os.path.join(out_dir, f.name, s + suffix), kind)
    for name in ("results.json", "results.tsv", "results.txt", *(f"{s}.vali.svg" for s in solvers)):
        check(os.path.join(out_dir, name))


# -- resume records ------------------------------------------------------------------------------------
def _record_checksum(rec: dict) -> str:
    """SHA-256 of a record's content (every key but "checksum", as canonical JSON)."""
    body = {k: v for k, v in rec.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(_clean(body), sort_keys=True, allow_nan=False).encode()).hexdigest()


def _write_record(path: str, rec: dict) -> dict:
    """Write a fold's record with its checksum; returns it as a re-run reads it back."""
    rec = json.loads(json.dumps(_clean(rec), allow_nan=False))
    rec["checksum"] = _record_checksum(rec)
    _write_json(path, rec)
    return rec


def _read_record(path: str, digest: str, out: str) -> tuple[dict | None, str | None]:
    """(record, None) of a finished (fold, solver) when the record is intact (its checksum), is for
    these inputs and settings, and the files it names are those it wrote; else (None, why it is
    not trusted), the reason None when there is no record or it is for other inputs or settings
    (nothing to say: the fold is simply run). Only a regular file is opened (never a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO: opened, not waited on
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "is not a regular file"
        with os.fdopen(fd, "rb") as fh:
            fd = None
            raw = fh.read()
        rec = json.loads(raw.decode("utf-8"))
        if not isinstance(rec, dict) or rec.get("checksum") != _record_checksum(rec):
            return None, "does not match its checksum (changed or damaged after it was written)"
        if rec.get("digest") != digest:
            return None, None
        for name, sha in rec["files"].items():
            if os.path.basename(name) != name:
                return None, "names a file outside its directory"
            try:
                if _sha256(os.path.join(out, name), regular=True) != sha:
                    return None, f"does not match {os.path.join(out, name)} (changed after the record was written)"
            except OSError:
                return None, f"names {os.path.join(out, name)}, which cannot be read"
        return rec, None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None, "is damaged (not a record rankkit wrote)"
    finally:
        if fd is not None:
            os.close(fd)


def _json_number(v):
    return None if v is None or (isinstance(v, float) and v != v) else v


def _clean(obj):
    """NaN -> null, numpy numbers -> Python numbers, recursively (JSON has no NaN)."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        return _json_number(float(obj))
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def _write_json(path: str, data) -> None:
    with atomic_open(path) as fh:
        fh.write(json.dumps(_clean(data), indent=1, sort_keys=False, allow_nan=False) + "\n")


def _fmt(v) -> str:
    return "nan" if v is None or v != v else repr(float(v))


def _write_vali_table(path: str, rows: list, chosen: int, names, params, at_edge=None) -> None:
    """Every grid point: its values, validation metrics, iterations, objective; extended (1: added
    past an end by the edge rule), constant (1: constant scores within every query, never chosen),
    diverged (1: a stochastic fit whose objective ended above its start, never chosen), at_edge (the
    chosen row: low or high when the choice is still at an end, else -; other rows empty), chosen."""
    with atomic_open(path) as fh:
        fh.write("\t".join(["point", *params, *(f"valid_{m}" for m in names), f"valid_{names[0]}_se", "iterations",
                            "objective", "extended", "constant", "diverged", "at_edge", "chosen"]) + "\n")
        for i, r in enumerate(rows):
            cells = [str(i + 1), *(repr(r["point"][p]) if p in r["point"] else "" for p in params),
                     *(_fmt(r["valid"][m]) for m in names), _fmt(r["valid_se"]), str(r["iterations"]),
                     _fmt(r["objective"]), str(int(r["extended"])), str(int(r["constant"])), str(int(r["diverged"])),
                     (at_edge or "-") if i == chosen else "", str(int(i == chosen))]
            fh.write("\t".join(cells) + "\n")


def _run_fold(fold: Fold, data, solvers, grids, names, convention, select, kernel, iterations, seed, out_dir,
              settings_digest, log, tick, reuse, words: Words = WORDS):
    """Every solver on one fold: {solver: record}. Records of a previous run are reused when they match."""
    train, valid, test, digests = data
    fold_dir = os.path.join(out_dir, fold.name) if out_dir is not None else None
    records = {}
    test_tiebreak = dataset_tiebreak(test, convention)
    for solver in solvers:
        mine = {k: v for k, v in settings_digest.items() if k != "grids"}  # another solver's grid is not ours
        digest = hashlib.sha256(json.dumps({"record": _RECORD_VERSION, "inputs": digests, "settings": mine, "solver": solver,
                                            "grid": grids.get(solver)}, sort_keys=True).encode()).hexdigest()
        points = _points(solver, _grid_for(solver, train, grids, *settings_digest["grid_size"], kernel, iterations))
        files = {"model": f"{solver}.model", "test_scores": f"{solver}.test.scores", "vali_table": f"{solver}.vali.tsv"}
        record_path = os.path.join(fold_dir, f"{solver}.done.json") if fold_dir else None
        distrust = None
        if record_path and reuse:
            rec, distrust = _read_record(record_path, digest, fold_dir)
            if rec is not None:
                if log:
                    log(f"{fold.name} {solver}: reusing {record_path} (inputs and settings unchanged)")
                for _ in points:
                    tick()
                records[solver] = rec
                continue
        if log:
            log(f"{fold.name} {solver}: {len(points)} grid points")
        try:
            chosen, rows, model, notes, at_edge = _fit_grid(solver, points, train, valid, names, convention, select,
                                                            kernel, iterations, seed, log, tick, words)
        except UsageError as e:  # no point to choose (every one constant): this fold and solver have no number
            raise UsageError(f"{fold.name} {solver}: {e}") from None
        model.header.update({"train_file": display_name(fold.train), "valid_file": display_name(fold.valid),
                             "fold": fold.name, "convention": convention})
        scores = model_scores(model, test)[0]
        in_file_order = scores
        if test.order is not None:
            in_file_order = np.empty_like(scores)
            in_file_order[test.order] = scores
        table = dataset_table(names, test, in_file_order, convention, tiebreak=test_tiebreak)
        qids = [str(q) for q in test.qid[test.qptr[:-1]].tolist()] if test.has_qid else ["1"]
        rec = {"fold": fold.name, "solver": solver, "digest": digest, "grid": [r["point"] for r in rows],
               "chosen_index": chosen, "chosen": rows[chosen]["point"], "points": rows,
               "valid": rows[chosen]["valid"], "test": {m: mean_skipping_nan(table[m]) for m in names},
               "test_qids": qids, "test_per_query": {m: table[m].tolist() for m in names}, "notes": notes,
               "at_edge": at_edge, "extended": sum(1 for r in rows if r["extended"]),
               "constant_points": sum(1 for r in rows if r["constant"]),
               "test_tied": tied_in_top(names, test, scores) if convention_in_file_order(convention) else None}
        if fold_dir is not None:
            params = list(dict.fromkeys(k for r in rows for k in r["point"]))
            write_model(os.path.join(fold_dir, files["model"]), model)
            write_scores(os.path.join(fold_dir, files["test_scores"]), in_file_order)
            _write_vali_table(os.path.join(fold_dir, files["vali_table"]), rows, chosen, names, params, at_edge)
            rec["files"] = {v: _sha256(os.path.join(fold_dir, v)) for v in files.values()}
            rec = _write_record(record_path, rec)  # last: a fold without its record is run again
        rec = _clean(rec)
        if distrust:  # said once, with the fold's other remarks (not part of the record)
            rec["notes"] = [f"{record_path} {distrust}: not reused, fitted again", *rec["notes"]]
        records[solver] = rec
        if log:
            log(f"{fold.name} {solver}: chose {_label(rec['chosen'])}; valid {names[0]} {rec['valid'][names[0]]:.4f}, "
                f"test {names[0]} {rec['test'][names[0]]:.4f}")
    return records


def _read_fold(fold: Fold, zero_based: bool, group_queries: bool, narrow: bool):
    """(train, valid, test, digests): the datasets and, for the resume records, the SHA-256 of the
    bytes each was read from (decompressed), computed while reading (a pipe or standard input is
    identified by what was read from it, not by its name), and of the queries of its group file."""
    datasets, digests = [], {}
    for part, path, narrow_part in (("train", fold.train, narrow), ("valid", fold.valid, False),
                                    ("test", fold.test, False)):
        found = resolve_groups(path, "auto")
        digest = hashlib.sha256()
        datasets.append(read_svmlight(path, zero_based=zero_based, group_queries=group_queries, groups=found,
                                      digest=digest, narrow_indices=narrow_part))
        digests[part] = digest.hexdigest()
        if found is not None:
            digests[part + "_group"] = hashlib.sha256(np.ascontiguousarray(found.sizes, dtype="<i8").tobytes()).hexdigest()
    datasets[0].require_pairs()
    return (*datasets, digests)


def _say_ungradable(folds, data, convention: str, warn) -> None:
    """One warning for the first label the convention (asked for by name: the default grades every
    label) cannot grade, in the vali or test files: it counts as 0, not relevant (`rankkit eval`'s rule)."""
    for f, (_, valid, test, _) in zip(folds, data):
        for path, ds in ((f.valid, valid), (f.test, test)):
            row = ungradable(convention, ds.y)
            if row is not None:
                if warn:
                    warn(f"{display_name(path)}:{int(ds.line[row])}: label '{ds.y[row]:g}' cannot be graded by "
                         f"--convention {convention}, which grades the labels {gradable_labels(convention)} only: "
                         "it and every other such label count as 0, not relevant")
                return


def _for_each_fold(fn, folds, jobs: int, log):
    """fn(fold, log) for every fold, `jobs` at a time on threads (kernels single-threaded each);
    results and log lines in fold order. A failure stops the other folds at their next kernel call."""
    jobs = max(1, min(jobs, len(folds)))
    if jobs == 1:
        return [fn(f, log) for f in folds]
    from concurrent.futures import ThreadPoolExecutor

    stop = threading.Event()

    def one(fold):
        lines: list[str] = []
        if stop.is_set():
            return None, lines
        with threads.limited(1, cancel=stop):
            try:
                return fn(fold, lines.append if log else None), lines
            except threads.Cancelled:
                return None, lines
            except BaseException:
                stop.set()
                raise

    out = []
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="rankkit-fold")
    try:
        for result, lines in pool.map(one, folds):
            for line in lines:
                log(line)
            out.append(result)
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return out


def experiment(folds, solvers=DEFAULT_SOLVERS, metrics=DEFAULT_METRICS, *, convention: str = DEFAULT_CONVENTION,
               select: str = "best", grids: dict | None = None, n_points: int = DEFAULT_N_POINTS,
               ratio: float = DEFAULT_RATIO, kernel: dict | None = None, iterations: int | None = None, seed: int = 0,
               out_dir: str | None = None, jobs: int = 1, test: str = "randomization",
               permutations: int = DEFAULT_PERMUTATIONS, zero_based: bool = False, group_queries: bool = False,
               resume: bool = True, log=None, progress=None, warn=None, words: Words | None = None) -> dict:
    """The LETOR protocol: per fold, each solver's grid chosen on vali by the first metric, the
    choice scored on test; a paired test of each solver against the first over all test queries
    (``rankkit experiment``).

    Parameters
    ----------
    folds : str or list of (str, str, str)
        A LETOR directory (Fold1..FoldK with train/vali/test.txt, .gz too, group files honoured)
        or a list of (train, valid, test) paths (named Fold1, Fold2, ...).
    solvers : sequence of str, default ("newton",)
        Names from the registry (``rankkit train --solver``); the first is the baseline.
    metrics : sequence of str, default ("ndcg@10", "map")
        Names as in ``rankkit eval``; the first chooses, all are reported.
    convention : str, default "trec"
        How the metrics are graded (trec_eval's by default).
    select : {"best", "1se"}
        The best point, or the most regularised point within one standard error of it.
    grids : dict, optional
        ``{solver: {"C" | "lambda" | "K" | "gamma": values}}`` replacing a solver's default grid
        along the parameters named.
    n_points, ratio : int, float
        Size and span of the default C path (as ``rankkit path``) and size of the lambda grid.
    kernel : dict, optional
        ``{"name": "rbf" | "poly", "degree", "coef0", "landmarks"}`` for the exact solvers.
    iterations, seed : int
        Of the stochastic and factorized solvers (seed: also landmarks and the randomization test).
    out_dir : str, optional
        Where the models, scores, tables and results go (None: nothing is written).
    jobs : int, default 1
        Folds run side by side (threads); the results do not depend on it.
    test, permutations : str, int
        The paired significance test (``rankkit eval --test``, ``--permutations``).
    resume : bool, default True
        Reuse the outputs in out_dir of an earlier run with the same inputs and settings.
    log, progress, warn : callables, optional
        ``log(line)``: -v lines; ``progress(total, label)``: a progress display factory;
        ``warn(line)``: remarks about the choices.
    words : rankkit.solvers.options.Words, optional
        How warnings name what to change: the face's words (default the command line's,
        ``--grid SOLVER:PARAM=...``; ``rankkit.experiment``, the Python face, passes its own,
        ``grids={...}``).

    Returns
    -------
    dict
        The content of out_dir/results.json (README: rankkit experiment), plain data.

    Examples
    --------
    >>> import os, tempfile, rankkit
    >>> d = tempfile.mkdtemp()
    >>> for name, qids in (("train", (1, 2, 3)), ("vali", (4, 5)), ("test", (6, 7))):
    ...     with open(os.path.join(d, name + ".txt"), "w") as fh:
    ...         for q in qids:
    ...             _ = fh.write(f"2 qid:{q} 1:1 2:0.{q}\\n1 qid:{q} 1:0.5 2:0.2\\n0 qid:{q} 1:0.1 2:0.{9 - q}\\n")
    >>> files = [os.path.join(d, n + ".txt") for n in ("train", "vali", "test")]
    >>> out = rankkit.experiment([files], metrics=("map",), n_points=3)
    >>> out["convention"], [f["test"]["map"] for f in out["solvers"][0]["folds"]]
    ('trec', [1.0])
    """
    folds = as_folds(folds)
    solvers = list(dict.fromkeys(solvers))
    if not solvers:
        raise UsageError("give at least one solver")
    for s in solvers:
        if s not in SOLVERS:
            raise UsageError(f"unknown solver {s!r} (known: {', '.join(SOLVERS)})")
    names = reported_metrics(metrics[0], metrics[1:]) if metrics else DEFAULT_METRICS
    for m in names:
        parse_metric(m)
    describe(convention)
    if select not in ("best", "1se"):
        raise UsageError(f"select must be 'best' or '1se', not {select!r}")
    words = words or WORDS
    grids = dict(grids or {})
    for s, g in grids.items():
        if s not in solvers:
            raise UsageError(f"a grid for {s}, which is not among the solvers ({', '.join(solvers)})")
        _points(s, g)  # checked before any reading
        takes = _GRID_TAKES[_kind(s, kernel and kernel.get("name"))]
        for k in g:
            if k not in takes and not (k == "gamma" and kernel is None):  # gamma without a kernel: below
                raise UsageError(f"--grid {s}:{k}: {s} has no hyperparameter to grid over" if not takes else
                                 f"--grid {s}:{k}: {s} has no {k}; its grid parameter"
                                 f"{'s are' if len(takes) > 1 else ' is'} {' and '.join(takes)} "
                                 f"(--grid {s}:{takes[0]}=V1,V2,...)")
    for s in solvers:
        _kind(s, kernel and kernel.get("name"))
        probe = _points(s, grids[s])[0] if s in grids else {}
        if "gamma" in probe and kernel is None:
            raise UsageError(f"--grid {s}:gamma needs --kernel")
        params, stochastic, kmap = _settings(s, probe, kernel, iterations, seed)
        training.plan(s, params, stochastic, kmap)  # an option the solver does not take: now
    check_inputs(folds)
    if out_dir is not None:
        _check_outputs(out_dir, folds, solvers)
    settings = {"version": __version__, "metrics": list(names), "convention": convention, "select": select,
                "grids": {s: grids[s] for s in sorted(grids)}, "grid_size": [n_points, ratio],
                "kernel": kernel, "iterations": iterations, "seed": seed, "zero_based": zero_based,
                "group_queries": group_queries}
    narrow = kernel is None

    # read every fold first: bad input anywhere is reported before anything is written
    data = _for_each_fold(lambda f, lg: _read_fold(f, zero_based, group_queries, narrow), folds, jobs, None)
    if out_dir is not None:  # every input read and checked: only now is anything created
        make_out_dirs(out_dir, [f.name for f in folds])
    _say_ungradable(folds, data, convention, warn)
    sizes = [len(_points(s, _grid_for(s, d[0], grids, n_points, ratio, kernel, iterations))) for d in data
             for s in solvers]
    total = sum(sizes)
    lock = threading.Lock()
    done = [0]
    bar = progress(total, "experiment") if progress else None

    def tick():
        if bar:
            with lock:
                done[0] += 1
                shown = max(total, done[0])  # points added past an end of a grid (the edge rule) add fits
                bar(done[0], shown, f"{done[0]}/{shown} fits")

    by_name = dict(zip((f.name for f in folds), data))
    try:
        per_fold = _for_each_fold(
            lambda f, lg: _run_fold(f, by_name[f.name], solvers, grids, names, convention, select, kernel, iterations,
                                    seed, out_dir, settings, lg, tick, resume, words), folds, jobs, log)
    finally:
        if bar and done[0] < total:
            bar(total, total, "stopped")
    results = _results(folds, solvers, names, convention, select, per_fold, test, permutations, seed, settings)
    for f, recs in zip(folds, per_fold):
        for s in solvers:
            for note in recs[s]["notes"]:
                if warn:
                    warn(f"{f.name} {s}: {note}")
    if out_dir is not None:
        from rankkit.plot import write_grid_plot  # SVG, no dependency

        _write_json(os.path.join(out_dir, "results.json"), results)
        with atomic_open(os.path.join(out_dir, "results.tsv")) as fh:
            fh.write("\n".join(results_tsv(results)) + "\n")
        with atomic_open(os.path.join(out_dir, "results.txt")) as fh:
            fh.write("\n".join(results_text(results)) + "\n")
        for s in solvers:
            write_grid_plot(os.path.join(out_dir, f"{s}.vali.svg"), s, names[0], convention,
                            [(f.name, recs[s]["grid"], [p["valid"][names[0]] for p in recs[s]["points"]],
                              recs[s]["chosen_index"]) for f, recs in zip(folds, per_fold)])
    return results


def _grid_values(points) -> dict:
    """{parameter: its values along the grid, ascending} of a fold's grid points."""
    keys = list(dict.fromkeys(k for p in points for k in p))
    return {k: sorted({p[k] for p in points if k in p}) for k in keys}


def _results(folds, solvers, names, convention, select, per_fold, test, permutations, seed, settings) -> dict:
    systems = []
    for s in solvers:
        qids, table = [], {m: [] for m in names}
        for f, recs in zip(folds, per_fold):
            rec = recs[s]
            qids += [f"{f.name}:{q}" for q in rec["test_qids"]]
            for m in names:
                table[m] += [math.nan if v is None else v for v in rec["test_per_query"][m]]
        systems.append((s, qids, {m: np.asarray(v, dtype=np.float64) for m, v in table.items()}))
    pooled, pvalues = summarize(systems, names, test, permutations, seed)
    out_solvers = []
    for i, s in enumerate(solvers):
        entry = {"name": s, "folds": [], "mean": {}, "pooled": pooled[i]}
        for f, recs in zip(folds, per_fold):
            rec = recs[s]
            entry["folds"].append({"fold": f.name, "chosen": rec["chosen"], "chosen_index": rec["chosen_index"],
                                   "grid_points": len(rec["grid"]), "extended_points": rec["extended"],
                                   "constant_points": rec["constant_points"], "at_edge": rec["at_edge"],
                                   "valid": rec["valid"], "test": rec["test"], "test_tied": rec["test_tied"],
                                   "n_test_queries": len(rec["test_qids"])})
        entry["at_edge"] = sum(1 for fr in entry["folds"] if fr["at_edge"])
        for part in ("valid", "test"):
            entry["mean"][part] = {m: float(np.mean([fr[part][m] if fr[part][m] is not None else math.nan
                                                     for fr in entry["folds"]])) for m in names}
        if pvalues[i] is not None:
            entry["p_value"] = pvalues[i]
        out_solvers.append(entry)
    return _clean({
        "rankkit_experiment": RESULTS_VERSION, "rankkit_version": __version__,
        "convention": convention, "convention_description": describe(convention),
        "metrics": list(names), "selected_by": names[0], "select": select,
        "folds": [{"name": f.name, "train": display_name(f.train), "valid": display_name(f.valid),
                   "test": display_name(f.test)} for f in folds],
        "significance": {"test": test, "permutations": permutations if test == "randomization" else None,
                         "seed": seed, "against": solvers[0], "queries": len(systems[0][1]),
                         "over": "the test queries of all folds, in fold order"},
        # the grid each fold ran (the default grid depends on the fold's training data; the edge rule
        # adds points past an end), and what --grid / grids= asked for ({} for the defaults)
        "settings": {"grids": {s: {f.name: _grid_values(recs[s]["grid"]) for f, recs in zip(folds, per_fold)}
                               for s in solvers},
                     "grids_given": settings["grids"], **{k: settings[k] for k in ("kernel", "iterations", "seed")}},
        "solvers": out_solvers,
    })


def _cell(v, digits=4) -> str:
    return "nan" if v is None or v != v else f"{v:.{digits}f}"


def _test_cell(fr: dict, m: str) -> str:
    tied = (fr.get("test_tied") or {}).get(m)
    return _cell(fr["test"][m]) + (f" ({tied} tied)" if tied else "")


def _point_text(point: dict) -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in point.items()) or "-"


def aligned(rows: list[list[str]]) -> list[str]:
    """Columns two spaces apart, the first left-aligned, the others right-aligned (as rankkit path)."""
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]


def results_text(results: dict) -> list[str]:
    """The results as aligned text: a line per fold and solver, the means, the p-values."""
    names = results["metrics"]
    n_fold_dirs = len(results['folds'])
    lines = [f"# rankkit experiment: {n_fold_dirs} fold{'' if n_fold_dirs == 1 else 's'}, chosen on vali by {results['selected_by']} "
             f"({results['select']})", f"# convention {results['convention']}: {describe(results['convention'], short=True)}"]
    sig = results["significance"]
    if len(results["solvers"]) > 1:
        what = f"{sig['permutations']} permutations, seed {sig['seed']}" if sig["test"] == "randomization" else \
            "two-sided"
        lines.append(f"# significance: paired {sig['test']} test ({what}) of each solver against {sig['against']} "
                     f"over the {sig['queries']} test queries of all folds")
    rows = [["fold", "solver", "chosen", *(f"vali {m}" for m in names), *(f"test {m}" for m in names)]]
    for s in results["solvers"]:
        for fr in s["folds"]:
            edge = f" [{fr['at_edge']} edge]" if fr.get("at_edge") else ""
            rows.append([fr["fold"], s["name"], _point_text(fr["chosen"]) + edge,
                         *(_cell(fr["valid"][m]) for m in names), *(_test_cell(fr, m) for m in names)])
    for s in results["solvers"]:
        rows.append(["mean", s["name"], "", *(_cell(s["mean"]["valid"][m]) for m in names),
                     *(_cell(s["mean"]["test"][m]) for m in names)])
    for s in results["solvers"][1:]:
        rows.append([f"p({s['name']})", "", "", *("" for _ in names), *(_cell(s["p_value"][m]) for m in names)])
    tail = []
    n_folds = sum(len(s["folds"]) for s in results["solvers"])
    edges = sum(s.get("at_edge", 0) for s in results["solvers"])
    extended = sum(fr.get("extended_points", 0) for s in results["solvers"] for fr in s["folds"])
    tail.append(f"# {edges} of {n_folds} choices at an edge of their grid{' (marked [low edge] / [high edge])' if edges else ''}"
                f"; {extended} grid point{'s' if extended != 1 else ''} added past the ends (the edge rule)")
    if any(v for s in results["solvers"] for fr in s["folds"] for v in (fr.get("test_tied") or {}).values()):
        tail.append(f"# (N tied): N test queries whose top k holds a score shared by documents of two labels; "
                    f"--convention {results['convention']} breaks such ties by file order, not by the model")
    return lines + aligned(rows) + tail


def results_tsv(results: dict) -> list[str]:
    """One row per (fold or mean or p-value, solver): plain TSV with a header row."""
    names = results["metrics"]
    params = list(dict.fromkeys(k for s in results["solvers"] for fr in s["folds"] for k in fr["chosen"]))
    out = ["\t".join(["fold", "solver", *params, *(f"valid_{m}" for m in names), *(f"test_{m}" for m in names),
                       "at_edge"])]
    for s in results["solvers"]:
        for fr in s["folds"]:
            out.append("\t".join([fr["fold"], s["name"], *(repr(fr["chosen"][p]) if p in fr["chosen"] else ""
                                                         for p in params),
                                  *(_fmt(fr["valid"][m]) for m in names), *(_fmt(fr["test"][m]) for m in names),
                                  fr.get("at_edge") or "-"]))
        out.append("\t".join(["mean", s["name"], *("" for _ in params), *(_fmt(s["mean"]["valid"][m]) for m in names),
                              *(_fmt(s["mean"]["test"][m]) for m in names), str(s.get("at_edge", ""))]))
        if "p_value" in s:
            out.append("\t".join(["p_value", s["name"], *("" for _ in params), *("" for _ in names),
                                  *(_fmt(s["p_value"][m]) for m in names), ""]))
    return out
