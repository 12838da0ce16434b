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
"""

from __future__ import annotations

import time

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import UsageError
from rankkit.solvers.base import FitResult, Log

DEFAULT_LAMBDA = 0.1
DEFAULT_ITERATIONS = 100_000
SAMPLER_NAMES = ("uniform", "indexed", "query-norm", "roc")
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


def _segment_seed(seed: int, k: int) -> int:
    return seed if k == 0 else (seed * 1_000_003 + 7919 * k) % (2**31 - 1)


def hinge_objective(ds: Dataset, w: np.ndarray, lam: float) -> float:
    """lambda/2 ||w||^2 + 1/|P| sum over pairs max(0, 1 - w.(x_a - x_b)), in O(n log n)."""
    from rankkit.objectives.pairwise import PairwiseObjective

    obj = PairwiseObjective(ds, 1.0, "hinge")
    return 0.5 * lam * float(w @ w) + obj.loss_y(obj.scores(w)) / max(ds.n_pairs, 1)


class StochasticRankSVM:
    """Base of the stochastic solvers; subclasses set `learner`."""

    learner = "pegasos"
    name = "pegasos"

    def __init__(self, C: float = 1.0, lam: float | None = None, iterations: int | None = None, eta: str = "pegasos",
                 eta0: float = 1.0, seed: int = 0, batch_size: int = 1, sampler: str = "uniform",
                 valid: Dataset | None = None, loss: str | None = None, **ignored):
        self.C = float(C)
        self.lam = DEFAULT_LAMBDA if lam is None else float(lam)
        self.iterations = DEFAULT_ITERATIONS if iterations is None else int(iterations)
        self.eta, self.eta0 = eta, float(eta0)
        self.seed, self.batch_size, self.sampler = int(seed), int(batch_size), sampler
        self.valid = valid
        self.loss = loss or ("squared-hinge" if self.learner in ("pair-sgd", "query-sgd") else "hinge")
        if self.iterations < 1:
            raise UsageError("--iterations must be at least 1")

    def hyperparameters(self) -> dict:
        out = {"learner": self.learner, "sampler": self.sampler, "lambda": self.lam, "iterations": self.iterations,
               "eta": self.eta, "seed": self.seed, "batch_size": self.batch_size}
        if self.eta != "pegasos":
            out["eta0"] = self.eta0
        if self.learner == "pa":
            out["C"] = self.C
        return out

    # -- the run, segment by segment -------------------------------------------------------------
    def _segment(self, ds, index, w, n, t_start, seed):
        from rankkit.solvers import _sgd_kernels as K

        trace_iters = np.array([n], dtype=np.int64)
        trace_loss = np.zeros(1)
        status = K.run_spd(ds.data, ds.indices, ds.indptr, *index, K.SAMPLERS[self.sampler], K.LEARNERS[self.learner],
                           K.ETA[self.eta], self.eta0, self.lam, self.C, n, self.batch_size, seed, w,
                           trace_iters, trace_loss, t_start)
        if status != K.OK:
            raise UsageError(f"{self.name}: {K.STATUS_MESSAGES[status]}")
        return float(trace_loss[0])

    def _check(self, ds: Dataset) -> None:
        ds.require_pairs()
        if self.sampler == "roc" and ds.n_queries != 1:
            raise UsageError("--sampler roc samples one query: use it on a file without qid, or with --auc")

    def fit(self, ds: Dataset, w0: np.ndarray | None = None, log: Log | None = None, progress=None) -> FitResult:
        from rankkit.solvers import _sgd_kernels as K

        self._check(ds)
        t0 = time.perf_counter()
        index = K.build_index(ds.y, ds.qptr)
        w = np.zeros(ds.n_features) if w0 is None else np.array(w0, dtype=np.float64, copy=True)
        done = 0
        for k, cp in enumerate(checkpoints(self.iterations)):
            loss = self._segment(ds, index, w, cp - done, done, _segment_seed(self.seed, k))
            done = cp
            if log:
                log(self._progress_line(cp, loss, w, t0))
            if progress:
                progress(done, self.iterations)
        return self._result(ds, w, t0)

    def _progress_line(self, it, loss, w, t0):
        line = f"iter {it:>10d}  sampled-pair hinge {loss:.6f}"
        if self.valid is not None:
            from rankkit.metrics import evaluate
            from rankkit.objectives._sparse import csr_matvec

            v = self.valid  # columns beyond w are ignored by csr_matvec
            m = evaluate(v.y, csr_matvec(v.data, v.indices, v.indptr, w, np.empty(v.n_rows)), v.qptr, ("map", "ndcg@10"))
            line += f"  valid map {m['map']:.4f} ndcg@10 {m['ndcg@10']:.4f}"
        return line + f"  {time.perf_counter() - t0:.3f}s"

    def _result(self, ds, w, t0) -> FitResult:
        train_time = time.perf_counter() - t0
        return FitResult(
            w=w,
            objective=hinge_objective(ds, w, self.lam),
            iterations=self.iterations,
            converged=True,
            message=f"ran {self.iterations} stochastic steps",
            n_active=0,
            train_time=train_time,
            extra={"objective_kind": "lambda/2 ||w||^2 + mean hinge over pairs"},
        )


def _learner_class(learner: str, doc: str):
    return type(f"{learner.title().replace('-', '')}RankSVM", (StochasticRankSVM,),
                {"learner": learner, "name": learner, "__doc__": doc})


SgdRankSVM = _learner_class("sgd", "SGD-SVM: shrink every step, add eta x on positive hinge loss.")
PegasosRankSVM = _learner_class("pegasos", "Pegasos: the sgd step, then projection onto ||w|| <= 1/sqrt(lambda).")
PaRankSVM = _learner_class("pa", "Passive-aggressive PA-I with aggressiveness C.")
RommaRankSVM = _learner_class("romma", "Aggressive ROMMA.")
LogregRankSVM = _learner_class("logreg", "Logistic loss with Pegasos-style steps.")
MarginPerceptronRankSVM = _learner_class("margin-perceptron", "Perceptron updating when the margin is below 1.")


class PairSgdRankSVM(StochasticRankSVM):
    """Chapelle & Keerthi Algorithm 2: SGD on uniformly sampled pairs of the squared-hinge RankSVM
    objective 0.5||w||^2 + C sum max(0, 1 - t)^2, w <- w - (1/t)(w/|P| + C l'(t) x)."""

    learner = "pair-sgd"
    name = "pair-sgd"

    def hyperparameters(self) -> dict:
        return {"learner": self.learner, "sampler": "uniform", "C": self.C, "iterations": self.iterations,
                "seed": self.seed}

    def fit(self, ds: Dataset, w0=None, log=None, progress=None) -> FitResult:
        self.sampler, self.eta, self.eta0, self.batch_size = "uniform", "inverse-t", 1.0, 1
        self.lam = 1.0 / ds.n_pairs if ds.n_pairs else 1.0
        result = super().fit(ds, w0, log, progress)
        return self._squared_result(ds, result)

    def _squared_result(self, ds, result):
        from rankkit.objectives.pairwise import PairwiseObjective

        result.objective = PairwiseObjective(ds, self.C).fun_grad(result.w)[0]
        result.extra = {"objective_kind": "0.5 ||w||^2 + C * sum of squared hinge over pairs"}
        return result


class QuerySgdRankSVM(PairSgdRankSVM):
    """Chapelle & Keerthi Algorithm 3: SGD on whole queries with the O(n log n) per-query gradient."""

    learner = "query-sgd"
    name = "query-sgd"

    def hyperparameters(self) -> dict:
        return {"learner": self.learner, "C": self.C, "iterations": self.iterations, "seed": self.seed}

    def fit(self, ds: Dataset, w0=None, log=None, progress=None) -> FitResult:
        from rankkit.solvers._query_sgd import run_query_sgd

        ds.require_pairs()
        t0 = time.perf_counter()
        w = np.zeros(ds.n_features) if w0 is None else np.array(w0, dtype=np.float64, copy=True)
        lev = np.ascontiguousarray(ds.levels, dtype=np.int32)
        pairs_q = ds.pairs_per_query.astype(np.float64)
        # one run (the 1/t schedule starts at 1 inside the kernel); the checkpoints only trace
        trace_iters = np.array(checkpoints(self.iterations), dtype=np.int64)
        trace_loss = np.zeros(trace_iters.shape[0])
        status = run_query_sgd(ds.data, ds.indices, ds.indptr, lev, ds.qptr, ds.levels_per_query, pairs_q, self.C,
                               self.iterations, self.seed, w, trace_iters, trace_loss)
        if status != 0:
            raise UsageError("query-sgd: no query has two relevance levels")
        if log:
            for it, loss in zip(trace_iters.tolist(), trace_loss.tolist()):
                log(f"iter {it:>10d}  query squared-hinge per pair {loss:.6f}")
        if progress:
            progress(self.iterations, self.iterations)
        result = self._result(ds, w, t0)
        return self._squared_result(ds, result)
