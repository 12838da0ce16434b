"""FactorizedRankSVM: Zhang et al.'s factorized pair multipliers."""

from __future__ import annotations

from rankkit.estimators.base import KERNEL_DOC, Trainable
from rankkit.estimators.validation import choice, count_or_none, positive_or_none, random_seed


class FactorizedRankSVM(Trainable):
    __doc__ = """Factorized Ranking SVM (Zhang et al. 2015): pair multipliers <v_i, v_j> with
    K-dimensional latent vectors, gradient descent in O(nnz + N K + N log N) per iteration.

    Parameters
    ----------
    K : int, optional
        Latent dimension (default 10).
    C : float, optional
        Weight of the loss (default 1).
    loss : {"hinge", "squared-hinge"}, optional
    iterations : int, optional
        Gradient steps (default: see ``rankkit train --help``).
    eta : {"constant", "basic"}, optional
    eta0 : float, optional
    init_scale : float, optional
        Standard deviation of the random initial factors (default 0.01).
    optimizer : {"backtracking", "paper"}, optional
        backtracking (default): the step eta0 halved for good whenever the objective would rise;
        paper: Zhang et al.'s Algorithm 1, a fixed eta0 and no safeguard (``--optimizer``).
    tol : float, optional
        Stop when one iteration changes the objective by at most tol of it (default 1e-6 with
        optimizer="paper", no test with "backtracking").
    patience : int, optional
        With ``eval_set``: stop when the first eval set's ``eval_metric`` (MAP by default) has not
        improved for this many iterations, keeping the best factors (early stopping;
        ``best_iteration_``).
    eval_metric : str, optional
        As for `SGDRanker`: the metric early stopping watches (default MAP).
{KERNEL_DOC}    random_state : int, default 0
        Seed of the initial factors and the landmarks (formerly ``seed``, still accepted with a
        FutureWarning).
    n_jobs, verbose, scoring_metric, scoring_convention
        As for `RankSVM`. (No ``warm_start``: the variables are one latent vector per training
        document, not the weights.)

    Attributes
    ----------
    coef_, intercept_, feature_importances_, feature_names_in_, n_iter_, objective_, converged_, n_pairs_, model_
        As for `RankSVM`.
    evals_result_, best_iteration_
        As for `SGDRanker`, one value per iteration.
    factors_ : ndarray of shape (n_training_documents, K)
        The latent vectors V.

    Examples
    --------
    >>> import numpy as np, rankkit
    >>> X = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    >>> y = np.array([2, 1, 0, 1, 0])
    >>> ranker = rankkit.FactorizedRankSVM(K=2, iterations=50).fit(X, y, qid=[1, 1, 1, 2, 2])
    >>> ranker.factors_.shape
    (5, 2)
    """.replace("{KERNEL_DOC}", KERNEL_DOC)

    def __init__(self, K: int | None = None, C: float | None = None, loss: str | None = None,
                 iterations: int | None = None, eta: str | None = None, eta0: float | None = None,
                 init_scale: float | None = None, patience: int | None = None, kernel: str | None = None,
                 gamma: float | None = None, degree: int = 3, coef0: float = 0.0, landmarks: int | None = None,
                 random_state: int = 0, n_jobs: int | None = None, verbose: bool = False,
                 scoring_metric: str = "ndcg@10", scoring_convention: str | None = None, optimizer: str | None = None,
                 tol: float | None = None, eval_metric: str | None = None):
        self.optimizer = optimizer
        self.tol = tol
        self.K = K
        self.C = C
        self.loss = loss
        self.iterations = iterations
        self.eta = eta
        self.eta0 = eta0
        self.init_scale = init_scale
        self.patience = patience
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.landmarks = landmarks
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.eval_metric = eval_metric
        self.verbose = verbose
        self.scoring_metric = scoring_metric
        self.scoring_convention = scoring_convention

    def _options(self):
        choice(self.eta, "eta", ("constant", "basic"))
        choice(self.optimizer, "optimizer", ("backtracking", "paper"))
        params = {"C": positive_or_none(self.C, "C"), "loss": self.loss, "tol": positive_or_none(self.tol, "tol")}
        stochastic = {"K": count_or_none(self.K, "K"), "iterations": count_or_none(self.iterations, "iterations"),
                      "eta": self.eta, "eta0": positive_or_none(self.eta0, "eta0"),
                      "init_scale": positive_or_none(self.init_scale, "init_scale"),
                      "patience": count_or_none(self.patience, "patience"), "seed": random_seed(self.random_state),
                      "optimizer": self.optimizer}
        return "factorized", params, stochastic

    _iterative = True
