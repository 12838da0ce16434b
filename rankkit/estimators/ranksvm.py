"""RankSVM: the exact solvers (newton, newton-pairs, nlcg, bundle), on arrays or on part files."""

from __future__ import annotations

import os

from rankkit import training
from rankkit.errors import UsageError
from rankkit.estimators.base import KERNEL_DOC, Threads, Trainable, convergence_warning, set_fitted_state, verbose_log
from rankkit.estimators.validation import count_or_none, flag, positive, positive_or_none, random_seed
from rankkit.estimators.words import PYTHON_WORDS
from rankkit.io.parts import concatenate, expand_parts, refuse_collection
from rankkit.io.query_weights import read_query_weights, weights_for
from rankkit.io.svmlight import read_svmlight
from rankkit.solvers import SOLVERS
from rankkit.solvers.base import DEFAULT_C
from rankkit.solvers.options import check_dask, check_depends


class RankSVM(Trainable):
    __doc__ = """The RankSVM over all within-query preference pairs, solved exactly.

    minimise 0.5 ||w||^2 + C * sum over queries q of weight_q * sum over pairs (i, j) of q with
    y_i > y_j of loss(w.x_i - w.x_j)

    Parameters
    ----------
    C : float, default 1.0
        Weight of the loss summed over all pairs (liblinear-ranksvm's ``-c``).
    loss : {"squared-hinge", "huber", "logistic", "hinge"}, optional
        Default: the solver's first (squared-hinge for newton, hinge for bundle).
    solver : {"newton", "newton-pairs", "nlcg", "bundle"}, optional
        Default: newton, or the solver of ``loss`` (bundle for hinge).
    tol : float, optional
        Stopping rule: Newton decrement / objective (default 1e-6); nlcg: ||gradient||^2 / objective
        (1e-6; it implies Newton's rule); bundle: relative gap (1e-4).
    max_iter : int, optional
        At most this many iterations (default 100 Newton, 5000 nlcg, 1000 bundle; a ConvergenceWarning).
    query_norm : bool, default False
        Divide each query's loss by its number of pairs (svm_rank's normalisation).
    rescale : {None, "margin", "margin-sqrt", "margin-delta", "slack"}, default None
        Cost-sensitive pairs (Sect. 6.2), with D_ij from ``delta``: "margin" (= "margin-sqrt", the
        paper's) max(0, sqrt(D_ij) - t)^2; "margin-delta" max(0, D_ij - t)^2; "slack" D_ij max(0, 1 - t)^2.
    delta : str, optional
        D_ij of ``rescale``: "gain" (default), comma-separated values per label, or "swap"
        (newton-pairs).
{KERNEL_DOC}    random_state : int, default 0
        Seed of the landmark choice (formerly ``seed``, still accepted with a FutureWarning).
    warm_start : bool, default False
        Start the next ``fit`` from this fit's weights (linear models): the same optimum, fewer
        Newton steps when C or the data changed a little.
    n_jobs : int, optional
        Numba threads while fitting and predicting (-1: every usable core, -2 all but one, as
        joblib's); results do not depend on it. Formerly ``threads``, still accepted with a
        FutureWarning.
    verbose : bool, default False
        Progress on standard error.
    scoring_metric : str, default "ndcg@10"
        The metric of ``score``.
    scoring_convention : str, optional
        The metric convention of ``score`` (see ``rankkit eval --help``); default: that of
        ``rankkit.evaluate``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features_in_,)
    intercept_ : float
        0.0: a ranking does not change when a constant is added to every score.
    feature_importances_ : ndarray of shape (n_features_in_,)
        ``|coef_|``; comparable across features only on features of comparable scale.
    feature_names_in_ : ndarray of str
        The column names of a data frame X (only then); ``predict`` checks them.
    n_features_in_ : int
    n_iter_ : int
    objective_ : float
        The objective at the solution.
    converged_ : bool
    n_pairs_ : int
        Preference pairs in the training data.
    model_ : rankkit.io.model.Model
        What ``save`` writes.

    Examples
    --------
    >>> import numpy as np, rankkit
    >>> X = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    >>> y = np.array([2, 1, 0, 1, 0])
    >>> ranker = rankkit.RankSVM(C=10.0, scoring_metric="ndcg@2").fit(X, y, qid=[1, 1, 1, 2, 2])
    >>> ranker.converged_, ranker.n_pairs_
    (True, 4)
    >>> bool(ranker.coef_[0] > ranker.coef_[1])
    True
    >>> round(ranker.score(X, y, qid=[1, 1, 1, 2, 2]), 6)  # NDCG@2 (@10 would be 0: LETOR's rule for short queries)
    1.0
    """.replace("{KERNEL_DOC}", KERNEL_DOC)

    def __init__(self, C: float = DEFAULT_C, loss: str | None = None, solver: str | None = None, tol: float | None = None,
                 max_iter: int | None = None, query_norm: bool = False, rescale: str | None = None,
                 delta: str | None = None, kernel: str | None = None, gamma: float | None = None, degree: int = 3,
                 coef0: float = 0.0, landmarks: int | None = None, random_state: int = 0, warm_start: bool = False,
                 n_jobs: int | None = None, verbose: bool = False, scoring_metric: str = "ndcg@10",
                 scoring_convention: str | None = None):
        self.C = C
        self.loss = loss
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.query_norm = query_norm
        self.rescale = rescale
        self.delta = delta
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.landmarks = landmarks
        self.random_state = random_state
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.scoring_metric = scoring_metric
        self.scoring_convention = scoring_convention


    def _options(self):
        flag(self.warm_start, "warm_start")
        if self.solver is not None and self.solver in SOLVERS and (SOLVERS[self.solver].stochastic
                                                                   or SOLVERS[self.solver].factorized):
            other = "SGDRanker(learner=...)" if SOLVERS[self.solver].stochastic else "FactorizedRankSVM"
            raise UsageError(f"solver '{self.solver}' is not an exact RankSVM solver: use rankkit.{other}")
        check_depends(["delta"] if self.delta is not None else [], {"rescale": self.rescale}, PYTHON_WORDS)
        if self.rescale not in (None, "margin", "margin-sqrt", "margin-delta", "slack"):
            raise UsageError(f"rescale must be None, 'margin' (= 'margin-sqrt', the paper's), 'margin-delta' or "
                             f"'slack', not {self.rescale!r}")
        query_norm = flag(self.query_norm, "query_norm")
        params = {"C": positive(self.C, "C"), "tol": positive_or_none(self.tol, "tol"),
                  "max_iter": count_or_none(self.max_iter, "max_iter"), "loss": self.loss,
                  "query_norm": query_norm}
        if self.rescale:
            params.update({"rescale": self.rescale, "delta": self.delta or "gain"})
        return self.solver, params, {"seed": random_seed(self.random_state)}


    def fit_parts(self, parts, *, client=None, zero_based: bool = False, query_weights=None) -> "RankSVM":
        """Fit on files of whole queries: on a Dask cluster, or in this process (the same bytes).

        Parameters
        ----------
        parts : str or sequence of str
            Paths (or globs, expanded and sorted) of SVMlight/LETOR files, each holding whole
            queries; on a cluster, paths the workers can read (a shared file system, or URLs that
            fsspec reads).
        client : dask.distributed.Client or str, optional
            A Client (used as it is), an address ``tcp://host:8786``, or ``local[:N]`` (a
            LocalCluster of N processes for this fit). The data stays on the workers; each Newton
            step is one round of per-part sums, reduced in part order, so the model is the same
            for any number of workers (README: Distributed training). Needs ``rankkit[dask]``;
            solver newton, linear models. None: the parts held here, part by part, the same
            weight bytes as on a cluster (solver newton); another exact solver, or a single
            part, trains on them as on one concatenated file.
        zero_based : bool, default False
            Feature indices in the files start at 0.
        query_weights : str or dict, optional
            A ``qid weight`` file, or ``{qid: weight}``.

        Returns
        -------
        self
        """
        # training on parts, a use case (tests/test_architecture.py's table) whose module sits under
        # distributed/: imported here, on the one call that needs it, so that importing the estimators
        # loads no Dask-face package (it imports dask itself only when it runs on a cluster)
        from rankkit.parts.newton import fit_parts as train_on_parts

        refuse_collection(parts, "parts", "rankkit.dask.DaskRankSVM().fit(X, y, qid=...) for dask arrays and dataframes")
        paths = expand_parts([parts] if isinstance(parts, (str, os.PathLike)) else [os.fspath(p) for p in parts])
        if client is None:
            p = self._plan(False, query_weights is not None)
            if p.spec.name != "newton" or p.kernel is not None or len(paths) == 1:  # one part: fit's own path
                return self._fit_joined(paths, zero_based, query_weights)
        else:
            solver, params, _ = self._options()
            loss = check_dask(solver, params.get("loss"), self.kernel is not None, PYTHON_WORDS)
            p = training.plan("newton", dict(params, loss=loss), words=PYTHON_WORDS)
        for stale in ("train_auc_", "factors_"):
            self.__dict__.pop(stale, None)
        with Threads(self.n_jobs):  # the one fit on parts of every face (rankkit.parts.newton.fit_parts)
            model, result, facts = train_on_parts(p, paths, client, query_weights=query_weights, zero_based=zero_based,
                                                  log=verbose_log(self.verbose), warn=convergence_warning(5))
        set_fitted_state(self, model, result, facts["n_pairs"], facts["n_queries"])
        return self

    def _fit_joined(self, paths, zero_based, query_weights):
        ds = concatenate([read_svmlight(p, zero_based=zero_based) for p in paths], consume=True)  # grown in place
        weights = None
        if query_weights is not None:
            is_file = isinstance(query_weights, (str, os.PathLike))
            table = read_query_weights(os.fspath(query_weights)) if is_file else {
                int(k): float(v) for k, v in dict(query_weights).items()}
            weights = weights_for(ds, table, os.fspath(query_weights) if is_file else "query_weights")
        with Threads(self.n_jobs):  # the warning points at the caller of fit_parts
            return self.fit_dataset(ds, query_weights=weights, log=verbose_log(self.verbose),
                                    warn=convergence_warning(6))
