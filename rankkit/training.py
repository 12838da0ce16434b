"""The one training path, and the one model-header builder, under every face.

    plan(...)          the solver and its keyword arguments, checked, messages worded for a face
    fit_dataset(...)   fit a plan on a Dataset -> (Model, FitResult): `rankkit train FILE`, the
                       estimators' fit, and PARTS in one process with a solver other than newton
                       (joined as if concatenated) all run it; solver newton on PARTS, in one
                       process or on a cluster, is rankkit.parts.newton.fit_parts (the same
                       driver on per-part sums, the same bytes either way), whose header is made here
    fit_stream(...)    --sampler stream: two passes over a file -> (Model, FitResult)
    model_header(...)  the header of every model rankkit writes (train, fit, fit_parts, path, --dask)
    stop_words(...)    why a fit stopped, in the caller's words (the command line's by default)

The faces (rankkit.app, rankkit.estimators and rankkit.regularization, rankkit.distributed.commands)
and the use cases beside this one (rankkit.experiments, rankkit.selection) read and check their
own inputs, then come here; this module imports none of them (a use case: tests/test_architecture.py).
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from rankkit.compiler.dispatch import compile_seconds
from rankkit.config import __version__
from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.feature_maps import choose_landmarks, fit_map, make_kernel, mapped_dataset
from rankkit.io.model import Model
from rankkit.metrics import per_query
from rankkit.resources import check_fit
from rankkit.scoring import model_scores
from rankkit.solvers import SolverSpec
from rankkit.solvers.base import FitResult, Log
from rankkit.solvers.options import Words, resolve_solver, solver_kwargs, stop_message
from rankkit.solvers.stream import train_stream

__all__ = ["Plan", "plan", "fit_dataset", "fit_stream", "model_header", "fit_outcome", "data_counts", "cluster_facts",
           "stop_words", "needs_warning"]


# -- why a fit stopped ----------------------------------------------------------------------------
def stop_words(result: FitResult, words: Words | None = None) -> str:
    """Why the fit stopped, naming the options through `words` (rankkit.solvers.options.Words; by
    default the command line's, --max-iter, the words model files record as stop_reason; the
    Python face passes its own, max_iter). Every solver sets a stop code and its figures, worded
    by rankkit.solvers.options.stop_message; a result without one (the chosen point of a path,
    which stopped by being chosen) is given in its own words."""
    if result.stop:
        return stop_message(result.stop, result.detail, words)
    return result.message


def needs_warning(result: FitResult) -> bool:
    """The fit stopped before its stopping rule was met (not a fixed budget of steps)."""
    return not result.converged and not result.fixed_budget


# -- the model header -------------------------------------------------------------------------------
def now() -> str:
    """The header's `created`: UTC, to the second."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def model_header(solver: str, loss: str, settings: dict, data: dict, outcome: dict, run: dict | None = None,
                 seconds: float = 0.0) -> dict:
    """The header of a model file, in its order: who wrote it (version, time, solver, loss), the
    settings (the solver's hyperparameters, a kernel map), the training data (files, checksums,
    counts: in the caller's order), the outcome of the fit, facts of the run, the training time."""
    header = {"rankkit_version": __version__, "created": now(), "solver": solver, "loss": loss}
    header.update(settings)
    header.update(data)
    header.update(outcome)
    header.update(run or {})
    header["train_time_seconds"] = round(seconds, 6)
    return header


def fit_outcome(result: FitResult) -> dict:
    """The figures of a fit a model records (stop_reason in the command line's words)."""
    out = {"objective": float(result.objective), "iterations": result.iterations,
           "converged": bool(result.converged), "stop_reason": stop_words(result),
           "violated_pairs": result.n_active, **result.extra}
    if result.n_active is None:  # a stochastic run that skipped the exact figures: nothing untrue recorded
        del out["violated_pairs"]
    return out


def cluster_facts(facts: dict) -> dict:
    """What a fit on a Dask cluster records after its outcome: parts, workers and the cost of its
    rounds (facts: rankkit.parts.newton.prob_facts)."""
    return {"parts": facts["parts"], "workers": facts["workers"], "engine": "dask",
            **{k: facts[k] for k in ("rounds", "parts_read_again", "bytes_moved") if k in facts}}


def data_counts(n_features: int, n_queries: int, n_documents: int, n_pairs: int) -> dict:
    return {"n_features": n_features, "n_queries": n_queries, "n_documents": n_documents, "n_pairs": n_pairs}


# -- what to train ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """A solver and the keyword arguments of its class, checked; the kernel map to train on (None:
    linear); `words`: how messages name the options (None: the command line's names)."""

    spec: SolverSpec
    kwargs: dict
    kernel: dict | None = None
    words: Words | None = None

    @property
    def narrow_indices(self) -> bool:
        """Its kernels take uint16 column indices (the reader may narrow them)."""
        return self.spec.narrow_indices and self.kernel is None

    @property
    def narrow_values(self) -> bool:
        """Its kernels take int32 decimal codes as values (the reader may store them so)."""
        return self.spec.narrow_values and self.kernel is None

    def solver(self, **more):
        """An instance of the solver's class."""
        return self.spec.load()(**self.kwargs, **more)


def plan(solver: str | None, params: dict, stochastic: dict | None = None, kernel: dict | None = None,
         query_weights: bool = False, valid: bool = False, words: Words | None = None) -> Plan:
    """The Plan of these options: every option the solver does not take is a UsageError worded by
    `words`, raised before any data is read. valid: a validation set is given (eval_set, --valid)."""
    stochastic = dict(stochastic or {})
    if valid:
        stochastic.setdefault("valid_file", "eval_set")
    spec, loss = resolve_solver(solver, params.get("loss"), words)
    kwargs = solver_kwargs(spec, dict(params, loss=loss), stochastic, query_weights, words)
    return Plan(spec, kwargs, kernel, words)


# -- fitting ----------------------------------------------------------------------------------------
def fit_dataset(p: Plan, ds: Dataset, *, valid: Dataset | None = None, query_weights: np.ndarray | None = None,
                log: Log | None = None, progress=None, warn: Callable[[str], None] | None = None,
                facts: dict | None = None, run_facts: dict | None = None, w0: np.ndarray | None = None,
                monitor: Callable | None = None, patience: int | None = None,
                run: dict | None = None, maps: dict | None = None) -> tuple[Model, FitResult]:
    """Fit the plan on `ds`: the model (its header from model_header) and the solver's result.

    valid: validation data (stochastic and factorized solvers). query_weights: one per query.
    progress(total, label): a progress display for the stochastic solvers. warn(words): called
    when the fit stops before its stopping rule, in the plan's words. facts: what
    the face knows of the training files (names, checksums, index base), recorded before the
    counts; run_facts: recorded last (the reading time). The Python estimators' extras: w0, the
    starting weights (warm_start; linear models); monitor(step, w) -> float, called with the
    weights (over ds's columns) at each iteration of factorized and each checkpoint of the
    stochastic learners (eval_set), its value their early-stopping metric, with `patience`
    (stochastic learners: checkpoints); run, a dict whose "state" is a stochastic run to continue
    (rankkit.solvers.sgd.RunState, None: a new one), replaced by the run's state at its end; maps,
    a cache of `ds`'s kernel map for a caller fitting several C at one kernel (one entry: the last
    kernel's settings and map, reused when they are the same).
    Size parameters that cannot fit in memory are refused first (rankkit.resources)."""
    kwargs = dict(p.kwargs)
    spec = p.spec
    if spec.stochastic and kwargs.get("sampler") == "stream":
        raise UsageError("sampler 'stream' reads a file in two passes: it is for `rankkit train FILE`, "
                         "not for data in memory")
    ds.require_pairs()
    if not p.narrow_values:  # decimal codes are for the kernels that divide by the scale
        ds = ds.with_float_values()
    if valid is not None:
        kwargs["valid"] = valid
    if query_weights is not None:
        kwargs["query_weights"] = query_weights
    t0 = time.perf_counter()
    fit_ds, kmap, used = ds, None, None
    if p.kernel is None:  # few of many feature indices used (a mistyped index): train on those columns only
        fit_ds, used = ds.compact_columns()
        if used is not None and kwargs.get("valid") is not None:
            kwargs["valid"] = kwargs["valid"].take_columns(used)
        if used is not None and log:
            log(f"training on the {used.shape[0]} feature indices that occur (of {ds.n_features}); sparse model")
    check_fit(spec, kwargs, ds.n_rows, ds.n_features, p.kernel, p.words)
    if monitor is not None and used is not None:  # the caller scores with weights over ds's columns
        inner, n_total = monitor, ds.n_features

        def monitor(step, w):
            full = np.zeros(n_total)
            full[used] = w
            return inner(step, full)
        monitor.metric = getattr(inner, "metric", None)
    if w0 is not None and used is not None:
        w0 = np.asarray(w0, dtype=np.float64)[used]
    if monitor is not None and spec.factorized:
        kwargs["monitor"] = monitor
    model_solver = spec.load()(**kwargs)
    if p.kernel is not None:  # non-linear: the linear solver on the kernel map (Chapelle & Keerthi Sect. 6.3)
        key = repr(sorted(p.kernel.items()))
        if maps is not None and maps.get("ds") is ds and maps.get("key") == key:
            fit_ds, kmap = maps["map"]
        else:
            fit_ds, kmap = _kernel_map(ds, p.kernel, log)
            if maps is not None:
                maps.update(ds=ds, key=key, map=(fit_ds, kmap))
    compiled = compile_seconds()
    if spec.stochastic and (monitor is not None or (run is not None and run.get("state") is not None)):
        bar = progress(model_solver.iterations, spec.name) if progress else None
        result, state = model_solver.resume(fit_ds, (run or {}).get("state"), log=log, progress=bar, monitor=monitor,
                                            patience=patience, w0=w0)
        if run is not None:
            run["state"] = state
    elif spec.stochastic or spec.factorized:
        bar = progress(model_solver.iterations, spec.name) if progress else None
        if w0 is not None and spec.stochastic:
            result = model_solver.fit(fit_ds, w0=w0, log=log, progress=bar)
        else:
            result = model_solver.fit(fit_ds, log=log, progress=bar)
        if run is not None and spec.stochastic and w0 is None:
            run["state"] = result.iterations  # a run from w = 0 of that many steps: resume continues it
    elif w0 is not None:
        result = model_solver.fit(fit_ds, w0=w0, log=log)
    else:
        result = model_solver.fit(fit_ds, log=log)
    compiled = compile_seconds() - compiled  # kernels compiled during the fit (none after `make`)
    if compiled > 0.0:
        result.train_time = max(result.train_time - compiled, 0.0) if result.train_time else result.train_time
        if log:
            log(f"compiling kernels took {compiled:.3f}s of the fit (not counted as training time)")
    watched = getattr(monitor, "metric", None)
    if watched not in (None, "map") and ("patience" in result.detail or "best_map" in result.detail):
        result.detail["metric"] = watched  # early stopping watched another metric than MAP: its words name it
    if needs_warning(result) and warn is not None:
        warn(stop_words(result, p.words))
    settings = dict(model_solver.hyperparameters())
    if kmap is not None:
        settings.update(kmap.kernel.params())
        settings.update({"landmarks": int(kmap.landmarks.shape[0]), "landmark_seed": p.kernel.get("seed", 0),
                         "map_rank": int(kmap.projection.shape[1])})
    outcome = fit_outcome(result)
    # AUC optimisation: the training AUC (not where a stochastic run skipped its exact figures as
    # dearer than its steps: rankkit.solvers.sgd, the same O(n log n) pass)
    if ds.n_queries == 1 and not (spec.stochastic and result.n_active is None):
        scores = model_scores(Model(weights=result.w), fit_ds)[0]  # (decimal codes: read as their doubles)
        outcome["train_auc"] = float(per_query("auc", (ds.y > ds.y.min()).astype(float), scores, ds.qptr, "exp")[0])
        if log:
            log(f"training AUC {outcome['train_auc']:.6f}")
    seconds = result.train_time if result.train_time else time.perf_counter() - t0 - compiled
    header = model_header(spec.name, getattr(model_solver, "loss", spec.losses[0]), settings,
                          {**(facts or {}), **data_counts(ds.n_features, ds.n_queries, ds.n_rows, ds.n_pairs)},
                          outcome, run_facts, seconds)
    if kmap is not None:  # score = w' Phi(x) = beta' k(x): store the landmarks and beta
        model = Model(weights=kmap.projection @ result.w, header=header, landmarks=kmap.landmarks)
    elif used is not None:  # weights of the columns that occur; every other feature's weight is exactly 0
        model = Model(weights=result.w, header=header, feature_index=used, n_total=ds.n_features)
    else:
        model = Model(weights=result.w, header=header)
    return model, result


def _kernel_map(ds: Dataset, kernel: dict, log: Log | None):
    """(the dataset on the kernel PCA map of the landmarks, the map)."""
    t_map = time.perf_counter()
    k = make_kernel(kernel["name"], ds.n_features, kernel.get("gamma"), kernel.get("degree", 3),
                    kernel.get("coef0", 0.0))
    X = ds.csr()
    kmap = fit_map(X, k, choose_landmarks(ds.n_rows, kernel.get("landmarks"), kernel.get("seed", 0)))
    mapped = mapped_dataset(ds, kmap.transform(X))
    if log:
        log(f"kernel map: {k.name}, {kmap.landmarks.shape[0]} landmarks, rank {kmap.projection.shape[1]} "
            f"in {time.perf_counter() - t_map:.3f}s")
    return mapped, kmap


def fit_stream(p: Plan, path: str, *, index_base: int, train_file: str, log: Log | None = None,
               groups=None) -> tuple[Model, FitResult]:
    """--sampler stream: the plan's stochastic solver over `path` in two streaming passes, never
    holding the file (rankkit.solvers.stream); the model, and a FitResult with no objective (it
    would need a third pass)."""
    check_fit(p.spec, p.kwargs, 0, 0, None, p.words)  # --batch-size: before the two passes allocate
    model_solver = p.solver()
    w, facts = train_stream(path, model_solver, zero_based=index_base == 0, log=log, groups=groups)
    result = FitResult(w=w, objective=float("nan"), iterations=model_solver.iterations, converged=False, message="",
                       train_time=facts["train_time"], fixed_budget=True, stop="stream_budget",
                       detail={"iterations": model_solver.iterations},
                       extra={"sampled_pair_hinge": facts["sampled_hinge"]})
    result.message = stop_words(result)
    data = {"index_base": index_base, "n_features": facts["n_features"], "train_file": train_file,
            "train_file_sha256": facts["sha256"], **({"group_file": groups.source} if groups is not None else {}),
            "n_queries": facts["n_queries"], "n_documents": facts["n_rows"], "n_pairs": facts["n_pairs"]}
    outcome = {"objective": result.objective, "stop_reason": result.message, **result.extra,
               "iterations": result.iterations, "converged": False}
    header = model_header(p.spec.name, model_solver.loss, model_solver.hyperparameters(), data, outcome,
                          seconds=result.train_time)
    used = facts["feature_index"]
    return Model(weights=w, header=header, feature_index=used,
                 n_total=facts["n_features"] if used is not None else None), result
