"""Stochastic pairwise descent (Sculley 2009, sofia-ml) and Chapelle & Keerthi's stochastic
gradient algorithms (Sect. 6.1): solvers sgd, pegasos, pa, romma, logreg, margin-perceptron,
pair-sgd and query-sgd.

The sofia-ml learners approximately minimise the paper's objective

    lambda/2 ||w||^2 + 1/|P| sum over pairs max(0, 1 - w.(x_a - x_b))

by single steps on sampled pairs (rankkit/solvers/_sgd_kernels.py: samplers and steps in Numba,
w as scale x vector). pair-sgd and query-sgd are Chapelle & Keerthi's Algorithms 2 and 3 for the
squared-hinge objective 0.5||w||^2 + C sum over pairs max(0, 1 - t)^2 (the Newton solver's).

Runs proceed through fixed checkpoints (100, 200, 500, 1000, 2000, ... iterations, then the
last), always the same for a given --iterations, so the result is identical with or without -v:
the first segment uses --seed, later segments seeds derived from it, and the learning-rate
schedule continues across segments. Under -v each checkpoint prints the iteration, the mean
hinge loss of the pairs sampled since the previous one and, with a validation file, its metric.

The exact objective at the end (and the divergence check that compares it with the start) is an
O(nnz + n log n) pass over the data: on a large file it costs more than a short run's steps (100
steps on 781k documents: 0.6 s of figures for 0.001 s of steps). It is computed when asked
(-v, or `exact_objective=True`) or when it costs no more than the steps (`exact_objective=None`,
the default: compare figures_cost and steps_cost); otherwise the result's objective is NaN and
its violated pairs None, and the model records neither (no figure that was not computed).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.metrics import evaluate
from rankkit.sparse import csr_matvec
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers import _sgd_kernels as K
from rankkit.solvers._query_sgd import run_query_sgd, step_offset
from rankkit.solvers.base import FitResult, Log, check_finite, check_magnitude, quiet_fp
from rankkit.solvers.options import PA_DEFAULT_C, stop_message
from rankkit.vectors import dot

DEFAULT_LAMBDA = 0.1
DEFAULT_ITERATIONS = 100_000
SAMPLER_NAMES = ("uniform", "indexed", "query-norm", "roc", "sofia")
ETA_NAMES = ("pegasos", "basic", "constant")


def checkpoints(iterations: int) -> list[int]:
    """100, 200, 500, 1000, 2000, 5000, ... below `iterations`, then `iterations`."""
    out = []
    base = 100
    while base < iterations:
        for m in (1, 2, 5):
            if m * base < iterations:
                out.append(m * base)
        base *= 10
    out.append(iterations)
    return out


def is_checkpoint(step: int) -> bool:
    """step is one of the schedule's fixed checkpoints 100, 200, 500, 1000, 2000, 5000, ..."""
    if step < 100:
        return False
    while step % 10 == 0 and step >= 1000:
        step //= 10
    return step in (100, 200, 500)


@dataclass
class RunState:
    """Where a stochastic run stands (StochasticRankSVM.resume): the steps done; the last fixed
    checkpoint passed (its step, the index of the segment that starts there, w there); the
    objective at w = 0 (the divergence test compares with it)."""

    done: int
    anchor: int
    k: int
    w_anchor: np.ndarray
    f_start: float


def _segment_seed(seed: int, k: int) -> int:
    return seed if k == 0 else (seed * 1_000_003 + 7919 * k) % (2**31 - 1)


def hinge_objective(ds: Dataset, w: np.ndarray, lam: float) -> float:
    """lambda/2 ||w||^2 + 1/|P| sum over pairs max(0, 1 - w.(x_a - x_b)), in O(n log n)."""
    return hinge_objective_active(ds, w, lam)[0]


def hinge_objective_active(ds: Dataset, w: np.ndarray, lam: float) -> tuple[float, int]:
    """(the hinge objective, pairs with margin < 1): the O(n log n) kernel counts them."""
    obj = PairwiseObjective(ds.with_float_values(), 1.0, "hinge")
    f = 0.5 * lam * dot(w, w) + obj.loss_y(obj.scores(w)) / max(ds.n_pairs, 1)
    return f, obj.n_active


# which of the options each learner uses (the rest would be ignored: the CLI rejects them, and the
# model header records only these)
USES_LAMBDA = ("sgd", "pegasos", "logreg")  # the perceptrons: only through --eta pegasos, 1/(lambda t)
USES_ETA = ("sgd", "pegasos", "logreg", "margin-perceptron", "perceptron")
USES_C = ("pa", "pair-sgd", "query-sgd")
USES_BATCH = ("sgd", "pegasos", "logreg", "margin-perceptron", "perceptron")
TAKES_TIES = USES_ETA  # a tied pair's step is a learning-rate step on its squared loss


class StochasticRankSVM:
    """Base of the stochastic solvers; subclasses set `learner`."""

    learner = "pegasos"
    name = "pegasos"

    def __init__(self, C: float | None = None, lam: float | None = None, iterations: int | None = None, eta: str = "pegasos",
                 eta0: float = 1.0, seed: int = 0, batch_size: int = 1, sampler: str = "uniform",
                 valid: Dataset | None = None, loss: str | None = None, exact_objective: bool | None = None,
                 eta_c: float | None = None, ties: bool = False, t0: int | None = None, **ignored):
        self.C = float((PA_DEFAULT_C if self.learner == "pa" else 1.0) if C is None else C)
        self.lam = DEFAULT_LAMBDA if lam is None else float(lam)
        self.iterations = DEFAULT_ITERATIONS if iterations is None else int(iterations)
        self.eta, self.eta0 = eta, float(eta0)
        self.seed, self.batch_size, self.sampler = int(seed), int(batch_size), sampler
        self.valid = valid
        self.loss = loss or ("squared-hinge" if self.learner in ("pair-sgd", "query-sgd") else "hinge")
        self.exact_objective = exact_objective
        self.eta_c = K.BASIC_T0 if eta_c is None else float(eta_c)
        self.ties = bool(ties)
        self.t0 = None if t0 is None else int(t0)
        if self.iterations < 1:
            raise UsageError("--iterations must be at least 1")

    def uses_lambda(self) -> bool:
        return self.learner in USES_LAMBDA or (self.learner in ("margin-perceptron", "perceptron")
                                                and self.eta == "pegasos")

    def hyperparameters(self) -> dict:
        """Only what this learner used: pa has C and no eta or lambda; romma has neither."""
        out = {"learner": self.learner, "sampler": self.sampler}
        if self.uses_lambda():
            out["lambda"] = self.lam
        out.update({"iterations": self.iterations})
        if self.learner in USES_ETA:
            out["eta"] = self.eta
            if self.eta != "pegasos":
                out["eta0"] = self.eta0
            if self.eta == "basic":
                out["eta_c"] = self.eta_c
        if self.ties:
            out["ties"] = True
        out["seed"] = self.seed
        if self.learner in USES_BATCH:
            out["batch_size"] = self.batch_size
        if self.learner in USES_C:
            out["C"] = self.C
        return out

    def _magnitude_scale(self, ds: Dataset) -> tuple[float, str, str]:
        """(scale, knob, words) for check_magnitude: w grows by at most (step) x per step."""
        if self.learner in ("pa", "romma"):  # steps scale with 1/||x||^2: only ||x||^2 must exist
            return 1.0, f"--solver {self.learner}", "1"
        step = 1.0 / self.lam if self.eta == "pegasos" and self.lam > 0 else self.eta0
        return step * self.iterations, f"--solver {self.learner}", "first step x iterations"

    # -- the run, segment by segment -------------------------------------------------------------
    step_offset = 0  # t0 of the schedule: step t uses the learning rate of t + t0 (pair-sgd sets it)

    def _segment(self, ds, index, w, n, t_start, seed):
        t_start = t_start + self.step_offset

        trace_iters = np.array([n], dtype=np.int64)
        trace_loss = np.zeros(1)
        tpair = index[1] if self.ties else K.NO_TIE_INDEX  # (doc, gptr, ...): see _index
        status = K.run_spd(ds.data, ds.indices, ds.indptr, *index[0], K.SAMPLERS[self.sampler],
                           K.LEARNERS[self.learner], K.ETA[self.eta], self.eta0, self.lam, self.C, n, self.batch_size,
                           seed, w, trace_iters, trace_loss, t_start, self.eta_c, self.ties, tpair, ds.value_scale)
        if status != K.OK:
            raise UsageError(f"{self.name}: {K.STATUS_MESSAGES[status]}")
        return float(trace_loss[0])

    def _index(self, ds: Dataset):
        """(the sampling index, the tied-pair counts tie_index(gptr) or None without ties)."""
        index = K.build_index(ds.y, ds.qptr)
        return index, (K.tie_index(index[1]) if self.ties else None)

    def _check(self, ds: Dataset) -> None:
        ds.require_pairs()
        if self.ties and self.learner not in TAKES_TIES:
            raise UsageError(f"{self.name}: tied pairs take a learning-rate step: not with pa, romma or pair-sgd")
        if self.sampler == "roc" and ds.n_queries != 1:
            raise UsageError("--sampler roc samples one query: use it on a file without qid, or with --auc")

    def fit(self, ds: Dataset, w0: np.ndarray | None = None, log: Log | None = None, progress=None) -> FitResult:
        """A run of self.iterations steps from w0 (None: w = 0): the run of resume from no state."""
        return self._run(ds, None, log, progress, None, None, w0)[0]

    # -- continuing a run (SGDRanker.partial_fit) and watching it (eval_set): a hook beside fit ----------
    def resume(self, ds: Dataset, state: "RunState | None" = None, log: Log | None = None, progress=None,
               monitor=None, patience: int | None = None, w0: np.ndarray | None = None) -> tuple[FitResult, "RunState"]:
        """Run up to self.iterations steps in all, from `state` (None: from w = 0), exactly as one
        fit(ds) with self.iterations would: the same segments, seeds and roundings. `state` holds w
        at the last checkpoint of the schedule (100, 200, 500, 1000, ...) the run passed; the steps
        since then are run again from there (w between checkpoints is in the kernel's scaled form,
        and a segment's random stream cannot be entered in the middle), so a continuation costs at
        most the steps of one segment more. monitor(step, w) -> float or None is called at each
        checkpoint and at the end; with `patience`, the run stops when the value has not improved
        for that many checkpoints, and w is the best one seen (early stopping).
        pair-sgd and query-sgd run from the start each time (their schedules are one stream). w0: the
        start of a new run (state None), as fit's. state may be an int: the steps of a run fit(ds)
        made from w = 0 (it kept no checkpoint: it is run again from the start)."""
        if isinstance(state, (int, np.integer)):
            state = RunState(int(state), 0, 0, np.zeros(ds.n_features), float("nan"))
        if self.learner in ("pair-sgd", "query-sgd"):
            result = self.fit(ds, w0=w0 if state is None else None, log=log, progress=progress)
            if monitor is not None:
                monitor(self.iterations, result.w)
            return result, RunState(self.iterations, 0, 0, np.zeros(ds.n_features), float("nan"))
        return self._run(ds, state, log, progress, monitor, patience, w0)

    def _run(self, ds: Dataset, state, log, progress, monitor, patience, w0) -> tuple[FitResult, "RunState"]:
        """The one loop of fit and resume: the segments of the schedule from `state` (None: a new
        run from w0, or w = 0)."""
        self._check(ds)
        check_magnitude(ds, *self._magnitude_scale(ds))
        t0 = time.perf_counter()
        index = self._index(ds)
        if state is not None and (state.w_anchor.shape[0] != ds.n_features or state.done > self.iterations):
            raise UsageError("the run to continue has another number of features, or more steps than asked")
        best = None  # (value, step, w) for early stopping
        stale = 0
        stop_early = False
        exact = self.wants_exact_objective(ds, log)  # the same rule as fit: the same figures
        with quiet_fp():
            if state is None:
                w_anchor, anchor, k0 = np.zeros(ds.n_features) if w0 is None else np.array(w0, dtype=np.float64), 0, 0
                f_start = self._start_objective(ds, w_anchor, w0) if exact or w0 is None else math.nan
            else:
                w_anchor, anchor, k0, f_start = state.w_anchor.copy(), state.anchor, state.k, state.f_start
                if f_start != f_start and anchor == 0 and not np.any(w_anchor):  # a run of fit from w = 0
                    f_start = self._objective_at_zero(ds)
            w = w_anchor.copy()
            done, k = anchor, k0
            for cp in checkpoints(self.iterations):
                if cp <= anchor:
                    continue
                loss = self._segment(ds, index, w, cp - done, done, _segment_seed(self.seed, k))
                done = cp
                if is_checkpoint(cp):  # a segment of the schedule completed: the next run starts here
                    anchor, k, w_anchor = cp, k + 1, w.copy()
                if state is not None and cp <= state.done:
                    continue  # a step already reported by the run continued
                if log:
                    log(self._progress_line(cp, loss, w, t0))
                if progress:
                    progress(done, self.iterations)
                if monitor is not None:
                    value = monitor(cp, w)
                    if patience is not None and value is not None:
                        if best is None or value > best[0]:
                            best, stale = (value, cp, w.copy()), 0
                        else:
                            stale += 1
                            if stale >= patience:
                                stop_early = True
                                break
            if stop_early and best is not None:
                result = self._result(ds, best[2], t0, f_start, exact)
                result.iterations = done
                result.stop, result.converged, result.fixed_budget = "early_stop_checkpoints", True, False
                result.detail = {"patience": patience, "best_iteration": best[1], "best_value": best[0],
                                 "iterations": done}
                result.message = stop_message(result.stop, result.detail)
            else:
                result = self._result(ds, w, t0, f_start, exact)
        return result, RunState(done, anchor, k, w_anchor, f_start)

    def _progress_line(self, it, loss, w, t0):
        line = f"iter {it:>10d}  sampled-pair hinge {loss:.6f}"
        if self.valid is not None:
            v = self.valid  # columns beyond w are ignored by csr_matvec
            m = evaluate(v.y, csr_matvec(v.values(), v.indices, v.indptr, w, np.empty(v.n_rows)), v.qptr, ("map", "ndcg@10"))
            line += f"  valid map {m['map']:.4f} ndcg@10 {m['ndcg@10']:.4f}"
        return line + f"  {time.perf_counter() - t0:.3f}s"

    # the objective the learner approximately minimises, and the pairs with margin < 1
    OBJECTIVE_KIND = "lambda/2 ||w||^2 + mean hinge over pairs"

    def _objective(self, ds, w) -> tuple[float, int]:
        return hinge_objective_active(ds, w, self.lam if self.uses_lambda() else 0.0)

    def _objective_at_zero(self, ds) -> float:
        """The objective at w = 0 without a pass over the data: every pair's hinge is 1."""
        return 1.0

    def _start_objective(self, ds, w, w0) -> float:
        if w0 is None or not np.any(w):
            return self._objective_at_zero(ds)
        return self._objective(ds, w)[0]

    # -- when the exact figures are worth their cost -------------------------------------------------
    def figures_cost(self, ds: Dataset) -> float:
        """Element operations of the exact objective at the end: one product X w (nnz), the
        per-query sorts of the scores (sum of m log2 m) and a linear sweep; the training AUC of a
        single query (rankkit.training) costs about the same again."""
        m = np.diff(ds.qptr).astype(np.float64)
        return float(ds.data.size + 2 * ds.n_rows + np.sum(m * np.log2(np.maximum(m, 2.0))))

    def steps_cost(self, ds: Dataset) -> float:
        """Element operations of the steps: each touches the two sampled rows (twice: the margin
        and the update) and the sampler's bookkeeping, per pair of a batch."""
        per_row = ds.data.size / max(ds.n_rows, 1)
        return float(self.iterations) * max(self.batch_size, 1) * (4.0 * per_row + 8.0)

    def wants_exact_objective(self, ds: Dataset, log=None) -> bool:
        """True: compute the objective at the end (and the training AUC of a single query): asked
        for (exact_objective=True, or -v: `log` given), or not dearer than the steps (default)."""
        if self.exact_objective is not None:
            return bool(self.exact_objective)
        if log is not None:
            return True
        return 2.0 * self.figures_cost(ds) <= self.steps_cost(ds)

    def _result(self, ds, w, t0, f_start: float, exact: bool = True) -> FitResult:
        """The run's figures, all true: the objective and violated pairs at w (O(n log n)) when
        `exact`, else NaN and None (not computed); not converged (a fixed number of steps is not a
        convergence test); divergence (an objective above the one at the start) reported as such,
        a non-finite w or objective an error."""
        check_finite(ds, self.name, "weight vector", w)
        if exact:
            f, n_active = self._objective(ds, w)
            check_finite(ds, self.name, "objective", f)
        else:
            f, n_active = math.nan, None
        train_time = time.perf_counter() - t0
        if exact and f > f_start:
            stop, detail = "diverged", {"objective": f, "iterations": self.iterations, "start": f_start,
                                        "remedy": self._divergence_remedy()}
            budget = False
        else:
            stop, detail = "budget", {"iterations": self.iterations}
            budget = True
        return FitResult(
            w=w,
            objective=f,
            iterations=self.iterations,
            converged=False,
            message=stop_message(stop, detail),
            stop=stop,
            detail=detail,
            n_active=n_active,
            train_time=train_time,
            extra={"objective_kind": self._objective_kind()},
            fixed_budget=budget,
        )

    def _objective_kind(self) -> str:
        kind = self.OBJECTIVE_KIND if self.uses_lambda() else "mean hinge over pairs (this learner has no lambda)"
        return kind + (" (without the tied pairs' squared loss it also stepped on)" if self.ties else "")

    def _divergence_remedy(self) -> str:
        """What to change after a divergence (rankkit.solvers.options.stop_message words it)."""
        if self.learner == "romma":
            return "separable"
        if self.learner in USES_C:
            return "lower_C"
        return "lambda"


def _learner_class(learner: str, doc: str):
    return type(f"{learner.title().replace('-', '')}RankSVM", (StochasticRankSVM,),
                {"learner": learner, "name": learner, "__doc__": doc})


SgdRankSVM = _learner_class("sgd", "SGD-SVM: shrink every step, add eta x on positive hinge loss.")
PegasosRankSVM = _learner_class("pegasos", "Pegasos: the sgd step, then projection onto ||w|| <= 1/sqrt(lambda).")
PaRankSVM = _learner_class("pa", "Passive-aggressive PA-I with aggressiveness C.")
RommaRankSVM = _learner_class("romma", "Aggressive ROMMA.")
LogregRankSVM = _learner_class("logreg", "Logistic loss with Pegasos-style steps.")
MarginPerceptronRankSVM = _learner_class("margin-perceptron", "Perceptron updating when the margin is below 1.")
PerceptronRankSVM = _learner_class("perceptron", "Plain perceptron: w <- w + eta x when w.x <= 0 (no margin).")


class PairSgdRankSVM(StochasticRankSVM):
    """Chapelle & Keerthi Algorithm 2: SGD on uniformly sampled pairs of the squared-hinge RankSVM
    objective 0.5||w||^2 + C sum max(0, 1 - t)^2, w <- w - (1/t)(w/|P| + C l'(t) x)."""

    learner = "pair-sgd"
    name = "pair-sgd"

    OBJECTIVE_KIND = "0.5 ||w||^2 + C * sum of squared hinge over pairs"

    def hyperparameters(self) -> dict:
        out = {"learner": self.learner, "sampler": "uniform", "C": self.C, "iterations": self.iterations,
               "seed": self.seed}
        if self.t0 is not None:
            out["t0"] = self.t0
        return out

    def _magnitude_scale(self, ds: Dataset) -> tuple[float, str, str]:
        return self.C * max(ds.n_pairs, 1), f"-C {self.C:g}", "C x pairs"

    def _objective_kind(self) -> str:
        return self.OBJECTIVE_KIND

    def _objective(self, ds, w) -> tuple[float, int]:
        obj = PairwiseObjective(ds, self.C)
        return obj.evaluate(w, obj.scores(w)), obj.n_active

    def _objective_at_zero(self, ds) -> float:
        return self.C * float(ds.n_pairs)  # every pair's squared hinge is 1

    def fit(self, ds: Dataset, w0=None, log=None, progress=None) -> FitResult:
        """The paper's step 1/t, as 1/(t + t0) with t0 = ceil(2C max_pair ||x_a - x_b||^2 + 1/|P|)
        bounded by 8C max_i ||x_i||^2 + 1/|P| (the curvature of one pair's term): no step overshoots
        the pair it is taken on (on LightGBM's lambdarank example the plain 1/t ends at an objective
        250 times the one at w = 0); where the bound is below 1 nothing changes. t0 given (`--t0`):
        that offset instead, 0 being the paper's 1/t."""
        ds = ds.with_float_values()  # its objective and bound read data as doubles
        self.sampler, self.eta, self.eta0, self.batch_size = "uniform", "inverse-t", 1.0, 1
        self.lam = 1.0 / ds.n_pairs if ds.n_pairs else 1.0
        if ds.data.size:
            with quiet_fp():  # huge features: the magnitude check in fit() refuses them just below
                norms = np.bincount(np.repeat(np.arange(ds.n_rows), np.diff(ds.indptr)), weights=ds.data**2,
                                    minlength=ds.n_rows)
            bound = 8.0 * self.C * float(norms.max()) + self.lam
            self.step_offset = int(min(math.ceil(bound), 2**53)) if math.isfinite(bound) and bound > 1.0 else 0
        if self.t0 is not None:
            self.step_offset = self.t0
        result = super().fit(ds, w0, log, progress)
        result.extra["step_offset"] = self.step_offset
        return result


class QuerySgdRankSVM(PairSgdRankSVM):
    """Chapelle & Keerthi Algorithm 3: SGD on whole queries with the O(n log n) per-query gradient."""

    learner = "query-sgd"
    name = "query-sgd"

    def hyperparameters(self) -> dict:
        out = {"learner": self.learner, "C": self.C, "iterations": self.iterations, "seed": self.seed}
        if self.t0 is not None:
            out["t0"] = self.t0
        return out

    def steps_cost(self, ds: Dataset) -> float:
        """A step is one query's O(m log m) gradient: the figures' cost per query, per step."""
        return float(self.iterations) * self.figures_cost(ds) / max(ds.n_queries, 1)

    def fit(self, ds: Dataset, w0=None, log=None, progress=None) -> FitResult:
        ds = ds.with_float_values()  # run_query_sgd reads data as doubles
        ds.require_pairs()
        check_magnitude(ds, *self._magnitude_scale(ds))
        t0 = time.perf_counter()
        w = np.zeros(ds.n_features) if w0 is None else np.array(w0, dtype=np.float64, copy=True)
        lev = np.ascontiguousarray(ds.levels, dtype=np.int32)
        pairs_q = ds.pairs_per_query.astype(np.float64)
        # one run (the 1/(t + t0) schedule starts at t = 1 inside the kernel); the checkpoints only trace
        trace_iters = np.array(checkpoints(self.iterations), dtype=np.int64)
        trace_loss = np.zeros(trace_iters.shape[0])
        exact = self.wants_exact_objective(ds, log)
        with quiet_fp():
            f_start = self._start_objective(ds, w, w0) if exact else math.nan
            offset = step_offset(ds, self.C) if self.t0 is None else float(self.t0)
            status = run_query_sgd(ds.data, ds.indices, ds.indptr, lev, ds.qptr, ds.levels_per_query, pairs_q, self.C,
                                   self.iterations, self.seed, w, trace_iters, trace_loss, offset)
            if status == 1:
                raise UsageError("query-sgd: no query has two relevance levels")
            if status != 0:
                check_finite(ds, self.name, "weight vector", np.array([np.nan]))
            if log:
                log(f"step 1/(t + t0), t0 = {offset:.6g} (the largest per-query curvature bound)")
                for it, loss in zip(trace_iters.tolist(), trace_loss.tolist()):
                    log(f"iter {it:>10d}  query squared-hinge per pair {loss:.6f}")
            if progress:
                progress(self.iterations, self.iterations)
            result = self._result(ds, w, t0, f_start, exact)
        result.extra["step_offset"] = offset
        return result
