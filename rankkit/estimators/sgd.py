"""SGDRanker: the stochastic pairwise learners (sofia-ml's family, Chapelle & Keerthi's pair-sgd and
query-sgd), with eval sets, early stopping and partial_fit."""

from __future__ import annotations

import numpy as np

from rankkit.errors import UsageError
from rankkit.estimators.base import KERNEL_DOC, Threads, Trainable, convergence_warning, eval_sets, run_key
from rankkit.estimators.validation import (choice, count_or_none, flag, nonnegative_or_none, positive_or_none,
                                           random_seed)
from rankkit.estimators.words import PYTHON_WORDS
from rankkit.solvers import SOLVERS
from rankkit.solvers.options import check_depends


class SGDRanker(Trainable):
    __doc__ = """Stochastic pairwise learners (Sculley's sofia-ml family) on sampled preference pairs.

    Parameters
    ----------
    learner : str, default "pegasos"
        pegasos, sgd, pa, romma, logreg, margin-perceptron (sofia-ml's), perceptron (the plain
        perceptron, Sculley's "did not help"), pair-sgd, query-sgd (Chapelle & Keerthi's Algorithms
        2 and 3).
    alpha : float, optional
        Regularisation: lambda of sofia-ml's lambda/2 ||w||^2 + mean loss over pairs (default 0.1;
        ``rankkit train --lambda``; scikit-learn's SGD calls the same weight alpha). Formerly
        ``lambda_``, still accepted with a FutureWarning.
    iterations : int, optional
        Number of steps (default 100000, as in the paper).
    eta : {"pegasos", "basic", "constant"}, optional
        Learning rate: 1/(lambda t), eta0 * 10/(t + 10), or eta0 (default pegasos).
    eta0 : float, optional
        Scale of ``eta`` basic / constant (default 1).
    eta_c : float, optional
        c of ``eta`` basic, eta0 * c/(t + c) (default 10, sofia-ml's); only with eta="basic".
    batch_size : int, optional
        Pairs per step (default 1).
    sampler : {"uniform", "indexed", "query-norm", "roc", "sofia"}, optional
        How pairs are drawn (default uniform over all pairs; sofia: sofia-ml's rank loop, a
        document then one of another label in its query, no step when there is none).
    ties : bool, default False
        Also step on a tied pair (same query, same label) with each pair: squared loss with target
        w.(x_a - x_b) = 0, sofia-ml's rule (sgd, pegasos, logreg and the perceptrons).
    t0 : int, optional
        pair-sgd / query-sgd: the step is 1/(t + t0); 0 is the paper's 1/t (default: the
        curvature bound, with which no step overshoots its pair or query).
    C : float, optional
        pa's aggressiveness (default 1e7, sofia-ml's); pair-sgd / query-sgd's C (default 1).
    loss : str, optional
        The learner's loss (each learner has one).
{KERNEL_DOC}    patience : int, optional
        With ``eval_set``: stop when the first eval set's ``eval_metric`` (MAP by default) has not
        improved for this many checkpoints (steps 100, 200, 500, 1000, 2000, ...), keeping the
        best weights (early stopping; ``best_iteration_``).
    eval_metric : str, optional
        The metric early stopping watches on the first eval set: any name ``rankkit.evaluate``
        takes ("ndcg@10", "map", "err@5", ...; LightGBM's ``eval_at``, XGBoost's ``eval_metric``).
        Default: MAP, as the command line's --patience.
    random_state : int, default 0
        Seed of every random choice: the same seed gives the same weights (formerly ``seed``,
        still accepted with a FutureWarning).
    warm_start : bool, default False
        Start the next ``fit`` from this fit's weights (a new run of the schedule from there;
        ``partial_fit`` continues the same run instead). Not with sgd, pegasos or logreg under eta
        "pegasos", whose first step 1/(alpha t) sets w to 0 (a UsageError says so).
    n_jobs, verbose, scoring_metric, scoring_convention
        As for `RankSVM`.

    Attributes
    ----------
    coef_, intercept_, feature_importances_, feature_names_in_, n_iter_, objective_, converged_, n_pairs_, model_
        As for `RankSVM` (``converged_`` is False: a fixed number of steps).
    evals_result_ : dict
        With ``eval_set``: ``{"valid_0": {"map": [...], "ndcg@10": [...]}, ...}``, one value per
        checkpoint (the steps are ``eval_steps_``).
    best_iteration_ : int
        With ``eval_set``: the step at which the first eval set's ``eval_metric`` was best (with
        ``patience``, the model is the one of that step).

    Examples
    --------
    >>> import numpy as np, rankkit
    >>> X = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    >>> y = np.array([2, 1, 0, 1, 0])
    >>> ranker = rankkit.SGDRanker(iterations=2000, random_state=1).fit(X, y, group=[3, 2])
    >>> ranker.n_iter_, bool(ranker.coef_[0] > ranker.coef_[1])
    (2000, True)
    """.replace("{KERNEL_DOC}", KERNEL_DOC)

    _iterative = True
    _records_run = True

    def __init__(self, learner: str = "pegasos", alpha: float | None = None, iterations: int | None = None,
                 eta: str | None = None, eta0: float | None = None, batch_size: int | None = None,
                 sampler: str | None = None, C: float | None = None, loss: str | None = None,
                 kernel: str | None = None, gamma: float | None = None, degree: int = 3, coef0: float = 0.0,
                 landmarks: int | None = None, patience: int | None = None, random_state: int = 0,
                 warm_start: bool = False, n_jobs: int | None = None, verbose: bool = False,
                 scoring_metric: str = "ndcg@10", scoring_convention: str | None = None, eta_c: float | None = None,
                 ties: bool = False, t0: int | None = None, eval_metric: str | None = None):
        self.learner = learner
        self.eta_c = eta_c
        self.ties = ties
        self.t0 = t0
        self.alpha = alpha
        self.iterations = iterations
        self.eta = eta
        self.eta0 = eta0
        self.batch_size = batch_size
        self.sampler = sampler
        self.C = C
        self.loss = loss
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.landmarks = landmarks
        self.patience = patience
        self.random_state = random_state
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.eval_metric = eval_metric
        self.verbose = verbose
        self.scoring_metric = scoring_metric
        self.scoring_convention = scoring_convention

    # lambda_: a trailing underscore marks fitted attributes in scikit-learn, so lambda_ made
    # check_is_fitted take an unfitted SGDRanker for a fitted one
    _renamed = {**Trainable._renamed, "lambda_": ("alpha", "scikit-learn's name of the same lambda/2 ||w||^2 weight")}

    def partial_fit(self, X, y, qid=None, group=None, eval_set=None, eval_qid=None,
                    eval_group=None) -> "SGDRanker":
        """Run ``iterations`` more steps of the same stochastic run, on the same data.

        After k calls the model is the one ``fit`` gives with k x ``iterations`` steps and the same
        random_state, bit for bit (the same pairs drawn, the same learning rates, the same roundings). The
        run continues from its last checkpoint of the schedule (100, 200, 500, 1000, ... steps):
        the steps since that checkpoint are drawn again, so a call costs its own steps plus at
        most those of one segment (the first call after ``fit``, which runs the command line's
        code and keeps no checkpoint, runs the fit's steps again). pair-sgd and query-sgd, whose
        runs are one random stream, run from the start at each call. The data and the parameters
        (but ``iterations``, ``n_jobs``, ``verbose``, the scoring ones) must stay the same: a
        changed one is a UsageError (start again with ``fit``, or ``fit`` with ``warm_start=True``
        to start a new run from the current weights). With ``eval_set``, ``evals_result_`` grows
        by the checkpoints of each call (no early stopping).

        Parameters
        ----------
        X, y, qid, group, eval_set, eval_qid, eval_group
            As for ``fit``.

        Returns
        -------
        self
        """
        from rankkit.solvers.sgd import DEFAULT_ITERATIONS

        X, ds = self._training_data(X, y, qid, group, "partial_fit")
        key, fixed = run_key(ds), self._run_params()
        prev = self.__dict__.get("_run") if getattr(self, "model_", None) is not None else None
        if prev is not None and ds.n_features != prev["data"][1]:
            raise UsageError(f"X has {ds.n_features} features, but {type(self).__name__} is expecting "
                             f"{prev['data'][1]} features as input (partial_fit continues a run on the same data)")
        if prev is not None and prev["data"] != key:
            raise UsageError("partial_fit continues one stochastic run on the same data, and X, y or the queries "
                             "changed: call fit to start a new run (warm_start=True starts it from these weights)")
        if prev is not None and prev["params"] != fixed:
            changed = sorted(k for k in fixed if fixed[k] != prev["params"].get(k))
            raise UsageError(f"partial_fit continues one stochastic run, and {', '.join(changed)} changed since it "
                             "started: call fit to start a new run")
        state = prev["state"] if prev is not None else None
        done = 0 if state is None else int(state) if isinstance(state, (int, np.integer)) else state.done
        count_or_none(self.iterations, "iterations")
        total = done + int(self.iterations or DEFAULT_ITERATIONS)
        sets = eval_sets(eval_set, eval_qid, eval_group, self, ds.n_features)
        before = (self.__dict__.get("evals_result_"), self.__dict__.get("eval_steps_")) if prev is not None else None
        with Threads(self.n_jobs):
            self._fit_checked(ds, sets, None, None, warn=convergence_warning(6), run={"state": state},
                              iterations=total, patience=None)
        if before is not None and before[0] is not None and sets and set(before[0]) == set(self.evals_result_):
            for name, metrics in self.evals_result_.items():
                for m in metrics:
                    metrics[m] = before[0][name].get(m, []) + metrics[m]
            self.eval_steps_ = list(before[1] or []) + self.eval_steps_
        return self

    def _options(self):
        if flag(self.warm_start, "warm_start") and self.learner in ("sgd", "pegasos", "logreg") and \
                self.eta in (None, "pegasos"):
            raise UsageError(f"warm_start with learner '{self.learner}' and eta 'pegasos': its first step, "
                             "1/(alpha t) at t = 1, shrinks w to 0 and forgets the starting weights; use "
                             "partial_fit to continue a run, or eta='basic' or 'constant'")
        count_or_none(self.patience, "patience")
        spec = SOLVERS.get(self.learner)
        if spec is None or not spec.stochastic:
            known = [n for n, s in SOLVERS.items() if s.stochastic]
            raise UsageError(f"learner must be one of {', '.join(known)}, not {self.learner!r}")
        choice(self.eta, "eta", ("pegasos", "basic", "constant"))
        choice(self.sampler, "sampler", ("uniform", "indexed", "query-norm", "roc", "sofia", "stream"))
        check_depends(["eta_c"] if self.eta_c is not None else [], {"eta": self.eta}, PYTHON_WORDS)
        if self.t0 is not None and (isinstance(self.t0, bool) or not isinstance(self.t0, (int, np.integer))
                                    or self.t0 < 0):
            raise UsageError(f"t0 must be an integer >= 0 (0: the paper's step 1/t), not {self.t0!r}")
        params = {"C": positive_or_none(self.C, "C"), "loss": self.loss}
        stochastic = {"lam": nonnegative_or_none(self.alpha, "alpha"),
                      "iterations": count_or_none(self.iterations, "iterations"), "eta": self.eta,
                      "eta0": positive_or_none(self.eta0, "eta0"),
                      "eta_c": positive_or_none(self.eta_c, "eta_c"),
                      "ties": True if flag(self.ties, "ties") else None,
                      "t0": None if self.t0 is None else int(self.t0),
                      "batch_size": count_or_none(self.batch_size, "batch_size"),
                      "sampler": self.sampler, "seed": random_seed(self.random_state)}
        return self.learner, params, stochastic


