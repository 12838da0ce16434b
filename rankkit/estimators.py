"""scikit-learn-style rankers over rankkit's solvers: the same code `rankkit train` runs.

    RankSVM            the exact solvers: newton (default), newton-pairs, nlcg, bundle
    SGDRanker          the stochastic family of sofia-ml: pegasos, sgd, pa, romma, logreg, ...
    FactorizedRankSVM  Zhang et al.'s factorized pair multipliers
    load_model         any model file (rankkit's, svm_rank's, liblinear's, sofia-ml's) as a fitted ranker

Conventions are scikit-learn's: parameters only in ``__init__``, stored unchanged and checked in
``fit``; ``get_params`` / ``set_params``; learned attributes end with an underscore; ``fit``
returns ``self``; ``sklearn.base.clone`` works. scikit-learn itself is not needed: it is imported
only when one of its functions asks an estimator for its tags or its metadata routing.

Queries: ``fit(X, y, qid=...)`` with a query id per row (XGBoost's convention) or
``fit(X, y, group=...)`` with the number of documents of each query (LightGBM's); the rows of a
query are contiguous, as in a LETOR file.

``fit`` checks its arrays and parameters and runs rankkit.training.fit_dataset, the code ``rankkit
train`` runs after reading its files, so a model trained in Python and one trained by ``rankkit
train`` with the same data and options have the same weights and the same header (the command line
adds the facts of its files), and either predicts the same scores, bit for bit.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
import os
import sys
import warnings
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from rankkit import console, experiments, threads, training
from rankkit.datasets import as_dataset, check_dense_width, column_names, per_query_weights, split_qid_column
from rankkit.io.parts import concatenate, expand_parts
from rankkit.distributed.newton import fit_parts  # training on parts; dask itself is imported only when it runs
from rankkit.errors import DataError, UsageError
from rankkit.evaluation import evaluate
from rankkit.io.atomic import check_output
from rankkit.io.foreign_models import ForeignModel
from rankkit.io.foreign_models import load_model as _read_model
from rankkit.io.model import Model, write_model
from rankkit.io.query_weights import read_query_weights, weights_for
from rankkit.io.svmlight import read_svmlight
from rankkit.text import printable
from rankkit.objectives.rescale import MODEL_NAMES as MODEL_RESCALE_NAMES
from rankkit.scoring import model_scores
from rankkit.solvers import LOSSES, SOLVERS
from rankkit.solvers.base import DEFAULT_C
from rankkit.solvers.options import DASK_LOSSES, DASK_SOLVER, SOLVER_OPTIONS, Words, check_dask, check_depends

__all__ = ["Ranker", "RankSVM", "SGDRanker", "FactorizedRankSVM", "load_model", "ConvergenceWarning", "experiment"]

Log = Callable[[str], None]


class ConvergenceWarning(UserWarning):
    """A solver stopped before its stopping rule was met (``max_iter``, or the line search)."""


class Threads:
    """Run with `n` kernel threads (None: leave the setting alone), restoring the previous count
    (rankkit.threads: the count the kernels split their work by). The estimators' ``threads``."""

    def __init__(self, n: int | None):
        self.n, self.before = n, None

    def __enter__(self):
        if self.n is not None:
            if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or int(self.n) < 1:
                raise UsageError(f"threads must be an integer >= 1, not {self.n!r}")
            self.before = (threads.explicit(),)
            threads.apply(int(self.n))
        return self

    def __exit__(self, *exc):
        if self.before is not None:
            threads.apply(self.before[0])  # the count asked for before, or the default again
        return False


def verbose_log(verbose: bool):
    """The log of an estimator's ``verbose``: lines on standard error, or None."""
    return console.say if verbose else None


class _Requests(dict):
    """The metadata requests of an estimator ({method: {param: True/False/None/alias}}); scikit-learn's
    clone copies them to the clone (it calls __sklearn_clone__)."""

    def __sklearn_clone__(self):
        return _Requests(copy.deepcopy(dict(self)))


# -- the base: parameters, metadata routing, predict / score / save ------------------------------------
class Ranker:
    """A fitted ranking function: scores documents, ranks each query by score.

    The base of the estimators, and what `load_model` returns for a model that no estimator class
    trains (another tool's model, a `rankkit path` or converted model). It has no parameters.

    Attributes
    ----------
    model_ : rankkit.io.model.Model or rankkit.io.foreign_models.ForeignModel
        The model, as written to and read from model files.
    n_features_in_ : int
        Number of features the model uses.
    """

    _metadata_params = {"fit": ("qid", "group", "sample_weight", "query_weight", "eval_set", "eval_qid", "eval_group"),
                        "partial_fit": ("qid", "group", "sample_weight", "eval_set", "eval_qid", "eval_group"),
                        "score": ("qid", "group", "sample_weight")}
    # what metadata routing passes without being asked (set_fit_request(qid=False) turns it off): the
    # query ids, which every ranking fit and score needs
    _default_requests = {m: {"qid": True, "group": True} for m in ("fit", "partial_fit", "score")}
    scoring_metric = "ndcg@10"
    scoring_convention = None

    # -- scikit-learn's parameter protocol ---------------------------------------------------------------
    @classmethod
    def _get_param_names(cls) -> list[str]:
        init = cls.__init__
        if init is object.__init__:
            return []
        sig = inspect.signature(init)
        return sorted(p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The estimator's parameters, as given to ``__init__``."""
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params: Any) -> "Ranker":
        """Set parameters (checked at the next ``fit``); returns self."""
        valid = self._get_param_names()
        for key, value in params.items():
            if key not in valid:
                raise UsageError(f"{key!r} is not a parameter of {type(self).__name__} (its parameters: "
                                 f"{', '.join(valid)})")
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()
                    if p.name != "self"} if type(self).__init__ is not object.__init__ else {}
        shown = [f"{k}={v!r}" for k, v in self.get_params().items()
                 if k in defaults and not (v is defaults[k] or (type(v) is type(defaults[k]) and v == defaults[k]))]
        return f"{type(self).__name__}({', '.join(shown)})"

    def __sklearn_tags__(self):
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=True),
                    input_tags=InputTags(sparse=True), non_deterministic=False)

    # -- scikit-learn's metadata routing (qid / group reach fit and score through GridSearchCV) ------------
    def _set_request(self, method: str, requests: dict) -> "Ranker":
        allowed = self._metadata_params[method]
        store = self.__dict__.setdefault("_metadata_request", _Requests())
        for key, value in requests.items():
            if key not in allowed:
                raise UsageError(f"{method} takes no metadata {key!r} (it takes: {', '.join(allowed)})")
            if not (value is None or isinstance(value, (bool, str))):
                raise UsageError(f"set_{method}_request({key}=...) takes True, False, None or an alias string")
            store.setdefault(method, {})[key] = value
        return self

    def set_fit_request(self, **requests: bool | str | None) -> "Ranker":
        """Ask a scikit-learn meta-estimator (with ``sklearn.set_config(enable_metadata_routing=True)``)
        to pass ``qid``, ``group``, ``query_weight``, ``eval_set``, ... to ``fit``."""
        return self._set_request("fit", requests)

    def set_score_request(self, **requests: bool | str | None) -> "Ranker":
        """Ask a scikit-learn meta-estimator to pass ``qid`` or ``group`` to ``score``."""
        return self._set_request("score", requests)

    def get_metadata_routing(self):
        """scikit-learn's MetadataRequest of this estimator (imports scikit-learn)."""
        from sklearn.utils.metadata_routing import MetadataRequest

        request = MetadataRequest(owner=type(self).__name__)
        store = self.__dict__.get("_metadata_request", {})
        for method, params in self._metadata_params.items():
            if not hasattr(self, method) or not hasattr(request, method):
                continue
            defaults = self._default_requests.get(method, {})
            for param in params:
                alias = store.get(method, {}).get(param, defaults.get(param))
                getattr(request, method).add_request(param=param, alias=alias)
        return request

    def set_partial_fit_request(self, **requests: bool | str | None) -> "Ranker":
        """As set_fit_request, for ``partial_fit``."""
        return self._set_request("partial_fit", requests)

    # -- fitted state --------------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if getattr(self, "model_", None) is None:
            try:
                from sklearn.exceptions import NotFittedError
            except ImportError:
                NotFittedError = UsageError  # noqa: N806
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit(X, y, qid=...) first")

    def __sklearn_is_fitted__(self) -> bool:
        """scikit-learn's check_is_fitted asks this (fitted: a model_ is set by fit or load_model)."""
        return getattr(self, "model_", None) is not None

    @property
    def n_features_in_(self) -> int:
        self._check_fitted()
        return int(self.model_.n_features)

    @property
    def intercept_(self) -> float:
        """0.0 for rankkit's models: a ranking is unchanged by a constant added to every score, so
        rankkit fits none (scikit-learn code that reads ``intercept_`` gets the true value). A model
        of svm_rank, liblinear (-B) or sofia-ml: the constant its predict program adds."""
        self._check_fitted()
        m = self.model_
        if isinstance(m, ForeignModel):
            if m.format == "liblinear":
                return float(m.bias_weight * m.bias) if m.bias >= 0 else 0.0
            return float(m.constant)
        return 0.0

    @property
    def feature_importances_(self) -> np.ndarray:
        """|coef_|: the absolute weight of each feature (linear models). Comparable across features
        only when the features have comparable scales (standardise them first); kernel models have
        none (AttributeError)."""
        return np.abs(self.coef_)

    def decision_function(self, X) -> np.ndarray:
        """The scores, as ``predict`` (scikit-learn's name for a real-valued score)."""
        return self.predict(X)

    # -- input: data frames (names, the qid column), arrays --------------------------------------------
    def _features(self, X, fitting: bool = False):
        """(X without a qid column, the qid column or None), checking a data frame's column names
        against those seen by fit (scikit-learn's rule: the same names in the same order)."""
        X, qid_column = split_qid_column(X)
        names = column_names(X)
        if fitting:
            self.__dict__.pop("feature_names_in_", None)
            if names is not None:
                self.feature_names_in_ = names
            return X, qid_column
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None and names is None and getattr(X, "ndim", 2) == 2:
            warnings.warn(f"X has no feature names, but this {type(self).__name__} was fitted with feature names: "
                          "its columns are taken in the order of fit", UserWarning, stacklevel=3)
        elif fitted is None and names is not None:
            warnings.warn(f"X has feature names, but this {type(self).__name__} was fitted without them",
                          UserWarning, stacklevel=3)
        elif fitted is not None and names is not None:
            check_feature_names(fitted, names)
        return X, qid_column

    @property
    def coef_(self) -> np.ndarray:
        """The weight of each feature (a linear model); column j of X is feature j."""
        self._check_fitted()
        m = self.model_
        if getattr(m, "landmarks", None) is not None:
            raise AttributeError("a kernel model has no coef_: its scores are dual_coef_ . k(landmarks_, x)")
        if getattr(m, "feature_index", None) is not None:
            w = np.zeros(m.n_features)
            w[m.feature_index] = m.weights
            return w
        return np.array(m.weights, dtype=np.float64)

    @property
    def dual_coef_(self) -> np.ndarray:
        """Kernel models: beta, one per landmark (score = sum_r beta_r k(landmark_r, x))."""
        self._check_fitted()
        if getattr(self.model_, "landmarks", None) is None:
            raise AttributeError("a linear model has no dual_coef_: see coef_")
        return np.array(self.model_.weights)

    @property
    def landmarks_(self):
        """Kernel models: the landmark documents (scipy CSR, one per row)."""
        self._check_fitted()
        if getattr(self.model_, "landmarks", None) is None:
            raise AttributeError("a linear model has no landmarks_")
        return self.model_.landmarks

    def predict(self, X) -> np.ndarray:
        """Scores of the documents (rows of X); rank a query's documents by decreasing score.

        Parameters
        ----------
        X : array-like or sparse matrix, shape (n_samples, n_features)
            Columns beyond the model's features are ignored (as the command line ignores their
            indices); missing columns are zeros.

        Returns
        -------
        ndarray of float64, shape (n_samples,)
        """
        self._check_fitted()
        X, _ = self._features(X)
        if getattr(X, "shape", (1,))[0] == 0:
            return np.zeros(0)
        check_dense_width(X, self.n_features_in_, "X", type(self).__name__, "predict")
        ds = as_dataset(X, name="X")
        with Threads(getattr(self, "threads", None)):
            scores = model_scores(self.model_, ds)[0]
        bad = np.flatnonzero(~np.isfinite(scores))
        if bad.size:
            raise DataError("<X>", f"the score of this row is {float(scores[bad[0]])!r} ({bad.size} such): its "
                            "feature values are too large for the model's weights", int(bad[0]) + 1)
        return scores

    def score(self, X, y, qid=None, group=None, sample_weight=None) -> float:
        """Mean ``scoring_metric`` (NDCG@10) over the queries, under ``scoring_convention`` (None:
        ``rankkit.evaluate``'s default, as ``rankkit eval``). Needs the queries: ``qid`` or
        ``group``, or a ``qid`` column of a data frame X.

        In scikit-learn's model selection, enable metadata routing
        (``sklearn.set_config(enable_metadata_routing=True)``): the estimators ask for ``qid`` in
        ``fit`` and ``score`` by default. ``rankkit.make_scorer`` gives other metrics.
        """
        from rankkit.scoring import make_scorer

        return make_scorer(self.scoring_metric, convention=self.scoring_convention)(
            self, X, y, qid=qid, group=group, sample_weight=sample_weight)

    def save(self, path: str | os.PathLike, *, zero_based: bool | None = None) -> None:
        """Write the model file `rankkit train` writes (atomically, with its checksum).

        As `rankkit train` does, it never replaces a file that is not a rankkit model (LETOR or
        SVMlight data, a scores file, ...): that is a UsageError, and the file is left as it was.

        Parameters
        ----------
        path : str or path-like
        zero_based : bool, optional
            Index base of the files the model will score: column j of X is feature j + 1 of a
            1-based LETOR file (as ``load_svmlight_file`` reads one). Default: the base the model
            was trained with (1 for a model fitted in Python).
        """
        self._check_fitted()
        model = self.model_
        if isinstance(model, ForeignModel):
            raise UsageError(f"this is a {model.format} model: write it with `rankkit convert` or its own tool")
        check_output(os.fspath(path), kind="model")
        header = dict(model.header)
        if zero_based is not None or "index_base" not in header:
            header["index_base"] = 0 if zero_based else 1
        names = getattr(self, "feature_names_in_", None)
        write_model(os.fspath(path), _with_header(model, header, None if names is None else list(names)))


def check_feature_names(fitted, names, name: str = "X", fix: str = "X[est.feature_names_in_]") -> None:
    """UsageError unless the column `names` of data frame `name` are the `fitted` ones in the same
    order (scikit-learn's rule)."""
    if len(names) == len(fitted) and not np.any(np.asarray(names) != np.asarray(fitted)):
        return
    missing = [c for c in fitted if c not in set(names)]
    extra = [c for c in names if c not in set(fitted)]
    what = (f"missing: {_names_shown(missing)}" if missing else
            f"unseen at fit: {_names_shown(extra)}" if extra else
            "the same names in another order")
    raise UsageError(f"the feature names of {name} differ from those seen by fit ({what}): the columns must be "
                     f"the same, in the same order (reorder them with {fix})")


def _names_shown(names) -> str:
    """The first five names of a list, each on one line (a tab or newline in a name is escaped)."""
    return ", ".join(printable(str(c), 40) for c in names[:5])


def _with_header(model, header: dict, feature_names=None):
    """A copy of `model` with this header and these feature names (the data frame's columns, which
    the model file records and load_model checks as fit's estimator does)."""
    out = copy.copy(model)
    out.header = header
    out.feature_names = feature_names
    return out


# -- the Python face's words: its messages name parameters (C, alpha, max_iter), not --flags --------
PYTHON_NAMES = {"C": "C", "tol": "tol", "max_iter": "max_iter", "query_norm": "query_norm",
                "query_weights": "sample_weight", "rescale": "rescale", "lam": "alpha", "iterations": "iterations",
                "eta": "eta", "eta0": "eta0", "batch_size": "batch_size", "sampler": "sampler",
                "valid_file": "eval_set", "K": "K", "init_scale": "init_scale", "patience": "patience",
                "save_factors": "save_factors", "kernel": "kernel", "gamma": "gamma", "degree": "degree",
                "coef0": "coef0", "landmarks": "landmarks", "delta": "delta", "eta_c": "eta_c", "ties": "ties",
                "t0": "t0", "optimizer": "optimizer",
                "plot": "plot", "plot_kind": "plot_kind", "plot_query": "plot_query", "n_points": "n_points"}


class PythonWords(Words):
    """The words of the Python face (rankkit.solvers.options.Words names the command line's)."""

    names = PYTHON_NAMES
    kind = "a parameter"
    hints = {"query_norm": " (use sampler='query-norm')"}
    remedies = {
        "eta0": "the fixed learning rate is too large for this data: lower eta0, or use optimizer='backtracking'",
        "separable": "aggressive ROMMA assumes pairs a hyperplane can separate: try learner='pa' or 'pegasos'",
    }

    def solver(self, name: str) -> str:
        return f"solver '{name}'"

    def given(self, key: str, value) -> str:
        return f"{self.names.get(key, key)}={value!r}"

    def depends(self, key: str, need: str, allowed, value) -> str:
        names = self.names
        with_ = f"{need if need != 'valid_file' else 'eval_set'}=" + " or ".join(repr(a) for a in allowed) if allowed \
            else f"{names[need]}"
        given = f", not {need}={value!r}" if value not in (None, False) else ""
        return f"{names[key]} applies only with {with_}{given}"

    def unknown_loss(self, loss) -> str:
        return f"loss must be one of {', '.join(LOSSES)}, not {loss!r}"

    def loss_not_offered(self, solver: str, loss: str, offered) -> str:
        return f"solver '{solver}' does not offer loss '{loss}' (it offers: {', '.join(offered)})"

    def dask_solver(self, solver) -> str:
        return f"on a Dask cluster RankSVM trains solver '{DASK_SOLVER}', linear models (kernel=None)"

    def dask_loss(self, loss) -> str:
        return f"on a Dask cluster the loss is {', '.join(DASK_LOSSES[:-1])} or {DASK_LOSSES[-1]}, not {loss!r}"

    def grid(self, solver: str, param: str) -> str:
        return f"{param} (grids={{'{solver}': {{'{param}': [...]}}}})"


PYTHON_WORDS = PythonWords()


@functools.wraps(experiments.experiment)
def experiment(folds, *args, words: Words | None = None, **kwargs) -> dict:
    # rankkit.experiment: the use case, its warnings worded for Python (grids={...}, not --grid); the
    # docstring and signature are the use case's (functools.wraps)
    if "style" in kwargs:  # rankkit.experiment(style=...) before issue 36
        style = kwargs.pop("style")
        warnings.warn("rankkit.experiment(style=...) is deprecated: pass words= (a rankkit.solvers.options.Words; "
                      "the default words are Python's)", FutureWarning, stacklevel=2)
        if style not in ("python", "cli"):
            raise UsageError(f"style must be 'python' or 'cli', not {style!r}")
        if words is None and style == "cli":
            words = Words()
    return experiments.experiment(folds, *args, words=words or PYTHON_WORDS, **kwargs)


# -- the estimators --------------------------------------------------------------------------------
class _Trainable(Ranker):
    """What the three estimators share: fit on arrays, fit on a Dataset (the command line's entry)."""

    _words = PYTHON_WORDS  # how messages name the parameters
    _iterative = False  # takes eval_set (a validation history, early stopping)

    # subclasses: the solver and its options as the command line's (params, stochastic) dicts
    def _options(self) -> tuple[str | None, dict, dict]:
        raise NotImplementedError

    def _kernel(self) -> dict | None:
        given = [name for name, default in (("gamma", None), ("degree", 3), ("coef0", 0.0), ("landmarks", None))
                 if getattr(self, name) != default]  # options.DEPENDS: the one rule of every face
        check_depends(given, {"kernel": self.kernel}, PYTHON_WORDS)
        if self.kernel is None:
            return None
        _choice(self.kernel, "kernel", ("linear", "poly", "rbf"))
        _positive_or_none(self.gamma, "gamma")
        _count_or_none(self.degree, "degree")
        _count_or_none(self.landmarks, "landmarks")
        _number(self.coef0, "coef0")
        return {"name": self.kernel, "gamma": self.gamma, "degree": self.degree, "coef0": self.coef0,
                "landmarks": self.landmarks, "seed": self.seed}

    def fit(self, X, y, qid=None, group=None, sample_weight=None, eval_set=None, eval_qid=None, eval_group=None,
            query_weight=None) -> "_Trainable":
        """Fit on documents X with relevance labels y in queries given by qid or group.

        Parameters
        ----------
        X : array-like, sparse matrix or data frame, shape (n_samples, n_features)
            A data frame's column names are kept (``feature_names_in_``) and checked by ``predict``;
            a column named ``qid`` gives the queries (XGBoost's convention) and is not a feature.
        y : array-like, shape (n_samples,)
            Relevance labels (larger is better).
        qid : array-like of int, shape (n_samples,), optional
            Query id of each row (XGBoost's convention); a query's rows are contiguous. Under
            scikit-learn's cross-validation, pass ``qid`` (it is split with X), not ``group``.
        group : array-like of int, optional
            Number of rows of each query, in order (LightGBM's convention).
        sample_weight : array-like or dict, optional
            Weight of each query's loss: one value per query, one per row (the same for every row
            of a query: scikit-learn splits it with X), or ``{qid: weight}`` (as ``fit_parts``'
            ``query_weights``). Exact solvers (RankSVM) only.
        eval_set : list of (X, y) pairs, optional
            Validation sets of the iterative estimators (SGDRanker, FactorizedRankSVM), with their
            queries in ``eval_qid`` or ``eval_group`` (lists, one entry per set; a single array
            for a single set). Their metrics are recorded in ``evals_result_``; the first set's
            drives early stopping (``patience``).
        query_weight : array-like or dict, optional
            The former name of ``sample_weight``.

        Returns
        -------
        self
        """
        X, ds = self._training_data(X, y, qid, group, "fit")
        weights = self._weights(ds, sample_weight, query_weight)
        sets = _eval_sets(eval_set, eval_qid, eval_group, self, ds.n_features)
        w0 = self._warm_start_weights(ds)
        with Threads(self.threads):
            return self._fit_checked(ds, sets, weights, w0, warn=_convergence_warning(6))

    # -- the steps of fit ---------------------------------------------------------------------------
    def _training_data(self, X, y, qid, group, method: str):
        """(X, Dataset): the checks every fit makes before training."""
        if y is None:
            raise UsageError(f"{type(self).__name__} requires y to be passed, but the target y is None: a ranker "
                             "learns from relevance labels")
        X, qid_column = self._features(X, fitting=True)
        if qid is None and group is None and qid_column is not None:
            qid = qid_column
        if qid is None and group is None:
            raise UsageError(f"{type(self).__name__}.{method} needs the queries: qid= (one id per row), group= (rows "
                             "per query), or a data frame X with a 'qid' column; for one query of all rows (AUC), "
                             "pass group=[len(X)]")
        _refuse_unrouted_search(self, qid_column is None and (qid is not None or group is not None), method)
        n = _n_rows(X)
        if n == 1:
            raise UsageError(f"X has 1 sample (n_samples = 1): {type(self).__name__} learns from pairs of documents "
                             "of one query with different labels")
        if group is not None and qid is None and n is not None:
            sizes = np.asarray(group)
            if sizes.ndim == 1 and sizes.dtype.kind in "iuf" and sizes.size and int(np.sum(sizes)) != n:
                raise UsageError(
                    f"group sizes add up to {int(np.sum(sizes))}, but X has {n} rows. If scikit-learn's "
                    "cross-validation split X (GridSearchCV, cross_val_score), it cannot split group sizes: pass "
                    "qid= (a query id per row, split with X) with metadata routing, "
                    "sklearn.set_config(enable_metadata_routing=True)")
        ds = as_dataset(X, y, qid, group, name="X")
        return X, ds

    def _weights(self, ds, sample_weight, query_weight):
        if sample_weight is not None and query_weight is not None:
            raise UsageError("give sample_weight or query_weight (its former name), not both")
        given = sample_weight if sample_weight is not None else query_weight
        return None if given is None else per_query_weights(ds, given, "sample_weight")

    def _warm_start_weights(self, ds):
        """The previous fit's weights when warm_start is set (None: start from 0)."""
        if not getattr(self, "warm_start", False) or getattr(self, "model_", None) is None:
            return None
        if self.kernel is not None or getattr(self.model_, "landmarks", None) is not None:
            raise UsageError("warm_start continues a linear model: a kernel model's weights live on its landmarks, "
                             "which a new fit draws again")
        if self.model_.n_features != ds.n_features:
            raise UsageError(f"warm_start: the previous fit had {self.model_.n_features} features, X has "
                             f"{ds.n_features}")
        return self.coef_

    def _fit_checked(self, ds, sets, weights, w0, warn, run=None, iterations=None, patience="own"):
        """Train on checked inputs; record the eval sets' history."""
        monitor, history = None, None
        if sets:
            history = {name: {m: [] for m in self._eval_metrics()} for name, _ in sets}
            monitor = _Monitor(sets, history, self._eval_metrics(), self.scoring_convention)
        self.__dict__.pop("_run", None)
        if run is None and self._records_run and w0 is None:
            run = {"state": None}  # fit starts a new run, which partial_fit may continue
        self.fit_dataset(ds, valid=sets[0][1] if sets else None, query_weights=weights,
                         log=verbose_log(self.verbose), warn=warn, w0=w0, monitor=monitor,
                         patience=getattr(self, "patience", None) if patience == "own" else patience, run=run,
                         iterations=iterations)
        for stale in ("evals_result_", "eval_steps_", "best_iteration_", "best_score_"):
            self.__dict__.pop(stale, None)
        if run is not None and run.get("state") is not None:  # a RunState, or the steps of a plain fit
            self._run = {"state": run["state"], "data": _run_key(ds), "params": self._run_params()}
        if monitor is not None:
            self.evals_result_ = history
            self.eval_steps_ = list(monitor.steps)
            self.best_iteration_, self.best_score_ = monitor.best(self.fit_result_)
        return self

    _records_run = False  # fit keeps its stochastic run's state (SGDRanker.partial_fit continues it)

    def _run_params(self) -> dict:
        """The parameters a continued run must keep."""
        return {k: v for k, v in self.get_params().items()
                if k not in ("iterations", "threads", "verbose", "scoring_metric", "scoring_convention", "patience")}

    def _eval_metrics(self) -> tuple:
        """The metrics recorded on eval sets: MAP (what early stopping watches, as the command
        line's --patience) and the estimator's scoring_metric."""
        return tuple(dict.fromkeys(("map", self.scoring_metric)))

    def _plan(self, valid: bool, query_weights: bool, iterations: int | None = None) -> training.Plan:
        """This estimator's solver and options, checked (messages in its words);
        iterations: instead of the parameter's (partial_fit: the run's steps in all)."""
        solver, params, stochastic = self._options()
        check_depends(["patience"] if getattr(self, "patience", None) is not None else [],
                      {"valid_file": "eval_set" if valid else None}, PYTHON_WORDS)
        if iterations is not None:
            stochastic = dict(stochastic, iterations=iterations)
        return training.plan(solver, params, stochastic, self._kernel(), query_weights, valid, self._words)

    def fit_dataset(self, ds, *, valid=None, query_weights=None, log: Log | None = None, progress=None,
                    warn: Callable[[str], None] | None = None, facts: dict | None = None,
                    run_facts: dict | None = None, w0=None, monitor=None, patience=None,
                    run=None, iterations=None) -> "_Trainable":
        """Fit on a rankkit Dataset: what ``fit`` runs after checking its arrays, and what `rankkit
        train` runs after reading its files (rankkit.training.fit_dataset). `facts` and
        `run_facts`: what the command line records in the model header of the files (names,
        checksum, index base; the reading time). warn: the command line's warning; None warns
        with a ConvergenceWarning worded for Python."""
        for stale in ("train_auc_", "factors_"):  # attributes only some fits set: never left from an earlier fit
            self.__dict__.pop(stale, None)
        p = self._plan(valid is not None, query_weights is not None, iterations)
        model, result = training.fit_dataset(p, ds, valid=valid, query_weights=query_weights, log=log,
                                             progress=progress, warn=warn or _convergence_warning(4), facts=facts,
                                             run_facts=run_facts, w0=w0, monitor=monitor, patience=patience, run=run)
        set_fitted_state(self, model, result, ds.n_pairs, ds.n_queries)
        if "train_auc" in model.header:
            self.train_auc_ = model.header["train_auc"]
        if result.factors is not None:
            self.factors_ = result.factors
        return self


def _convergence_warning(stacklevel: int) -> Callable[[str], None]:
    """warn(words) as a ConvergenceWarning at `stacklevel` counted from this warn, which
    training.fit_dataset calls: 4 is the caller of fit_dataset, 5 the caller of fit."""
    def warn(words: str) -> None:
        warnings.warn(words, ConvergenceWarning, stacklevel=stacklevel)

    return warn


def _run_key(ds) -> tuple:
    """What identifies the training data of a stochastic run (partial_fit continues it only on the same)."""
    import hashlib

    digest = hashlib.sha256()
    for a in (ds.data, ds.indices, ds.indptr, ds.y, ds.qptr):
        digest.update(np.ascontiguousarray(a).tobytes())
    return ds.n_rows, ds.n_features, digest.hexdigest()


def _n_rows(X) -> int | None:
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        return None


def _needs_queries(scorer) -> bool:
    """Whether a scorer of scikit-learn's model selection scores per query (so needs the query ids
    at score time): the estimators' own score, a rankkit scorer, or a dict holding one."""
    from rankkit.scoring import RankingScorer

    if isinstance(scorer, RankingScorer) or type(scorer).__name__ == "_PassthroughScorer":
        return True
    inner = getattr(scorer, "_scorers", None)
    if isinstance(inner, dict):
        return any(_needs_queries(s) for s in inner.values())
    return False


def _refuse_unrouted_search(est, queries_given: bool, method: str) -> None:
    """Fail loudly, before training, when scikit-learn's model selection (GridSearchCV,
    cross_val_score, ...) passes qid= or group= to fit without metadata routing: it would then
    score without the queries, and every score would be NaN (scikit-learn turns the scorer's error
    into error_score). The fit raises instead; every fit of the search does, so the search raises
    "All the N fits failed" with this message (at once with error_score="raise")."""
    if not queries_given or "sklearn" not in sys.modules:
        return
    frame = sys._getframe(2)
    for _ in range(16):
        if frame is None:
            return
        if frame.f_code.co_name == "_fit_and_score" and \
                frame.f_globals.get("__name__") == "sklearn.model_selection._validation":
            break
        frame = frame.f_back
    else:
        return
    from sklearn import get_config

    if get_config().get("enable_metadata_routing", False) or not _needs_queries(frame.f_locals.get("scorer")):
        return
    raise UsageError(
        f"{type(est).__name__}.{method} got the queries (qid= or group=) from scikit-learn's model selection without "
        "metadata routing: it would then score every split without them, and every score would be NaN. Enable "
        "routing, sklearn.set_config(enable_metadata_routing=True), and pass qid= (a query id per row; the "
        "estimators and rankkit.make_scorer ask for it), or give X as a data frame with a 'qid' column")


class _Monitor:
    """The eval sets of a fit: monitor(step, w) records each set's metrics (evals_result_) and
    returns the first set's first metric (MAP), which early stopping watches."""

    def __init__(self, sets, history, metrics, convention):
        self.sets, self.history, self.metrics = sets, history, metrics
        if convention is None:  # rankkit.evaluate's default, whatever it is (score and the scorers use it)
            convention = inspect.signature(evaluate).parameters["convention"].default
        self.kwargs = {"convention": convention}
        self.steps: list[int] = []

    def __call__(self, step: int, w) -> float:
        from rankkit.metrics import evaluate as metric_means
        from rankkit.sparse import csr_matvec

        self.steps.append(int(step))
        first = None
        for name, ds in self.sets:
            v = w if w.shape[0] >= ds.n_features else np.r_[w, np.zeros(ds.n_features - w.shape[0])]
            scores = csr_matvec(ds.data, ds.indices, ds.indptr, v, np.empty(ds.n_rows))
            values = metric_means(ds.y, scores, ds.qptr, self.metrics, **self.kwargs)
            for m in self.metrics:
                self.history[name][m].append(float(values[m]))
            if first is None:
                first = float(values[self.metrics[0]])
        return first

    def best(self, result) -> tuple[int, dict]:
        """(best_iteration_, best_score_): the step of the best first-set MAP (the model's own step
        when early stopping kept the best) and every set's metrics there."""
        name0 = self.sets[0][0]
        values = self.history[name0][self.metrics[0]]
        if not values:
            return 0, {}
        step = result.detail.get("best_iteration") if result.detail else None
        k = self.steps.index(step) if step in self.steps else int(np.argmax(values))
        return self.steps[k], {name: {m: h[m][k] for m in self.metrics} for name, h in self.history.items()}


def _is_arrays(v) -> bool:
    """A list of arrays (one per eval set), rather than one array."""
    return isinstance(v, (list, tuple)) and len(v) > 0 and all(
        hasattr(e, "__len__") and not isinstance(e, (str, bytes)) for e in v)


def _eval_sets(eval_set, eval_qid, eval_group, est, width: int) -> list:
    """[(name, Dataset)] of fit's eval_set, with LightGBM's and XGBoost's forms: a list of (X, y)
    pairs (or one pair), eval_qid / eval_group lists (or one array for one set); a data frame X
    may carry its qid column. Names valid_0, valid_1, ... (LightGBM's). A dense X has the training
    X's `width` (as predict requires of it)."""
    if eval_set is None:
        if eval_qid is not None or eval_group is not None:
            raise UsageError("eval_qid and eval_group go with eval_set")
        return []
    if not est._iterative:
        raise UsageError(f"{type(est).__name__} is solved exactly (no iterations to watch or stop early): eval_set is "
                         "for the iterative estimators, rankkit.SGDRanker and rankkit.FactorizedRankSVM. To choose "
                         "C on validation queries, use rankkit.regularization_path or GridSearchCV with qid=")
    if est.kernel is not None:
        raise UsageError("eval_set is not available with kernel=: the validation scores would need the kernel map of "
                         "each eval set at every step")
    learner = getattr(est, "learner", None)
    if learner is not None and learner in SOLVER_OPTIONS and "valid_file" not in SOLVER_OPTIONS[learner]:
        takes = [n for n, opts in SOLVER_OPTIONS.items() if "valid_file" in opts and SOLVERS[n].stochastic]
        raise UsageError(f"SGDRanker(learner={learner!r}) takes no eval_set (its run is one stream of query steps "
                         f"with no checkpoints to watch): the learners that do are {', '.join(takes)}; or use "
                         "rankkit.FactorizedRankSVM")
    if isinstance(eval_set, tuple) and len(eval_set) == 2 and not isinstance(eval_set[0], (tuple, list)):
        eval_set = [eval_set]
    sets = list(eval_set)
    for k, pair in enumerate(sets):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise UsageError(f"eval_set must be a list of (X, y) pairs; entry {k} is not a pair")

    def per_set(v, name):
        if v is None:
            return [None] * len(sets)
        if not _is_arrays(v):
            v = [v]
        v = list(v)
        if len(v) != len(sets):
            raise UsageError(f"{name} must have one entry per eval_set pair ({len(sets)}), got {len(v)}")
        return v

    qids, groups = per_set(eval_qid, "eval_qid"), per_set(eval_group, "eval_group")
    out = []
    for k, ((Xv, yv), qv, gv) in enumerate(zip(sets, qids, groups)):
        Xv, column = est._features(Xv)
        check_dense_width(Xv, width, f"eval_set[{k}] X", type(est).__name__, "train --valid")
        if qv is None and gv is None:
            qv = column
        if qv is None and gv is None:
            raise UsageError(f"eval_set[{k}] needs its queries: eval_qid=[qid, ...] or eval_group=[group, ...]")
        out.append((f"valid_{k}", as_dataset(Xv, yv, qv, gv, name=f"eval_set[{k}] X")))
    return out


def set_fitted_state(est, model, result, n_pairs: int, n_queries: int) -> None:
    """The learned attributes of a fitted estimator (model_, n_iter_, objective_, ...) from a model
    and the result of its fit."""
    est.model_ = model
    est.fit_result_ = result
    est.n_iter_ = int(result.iterations)
    est.objective_ = float(result.objective)
    est.converged_ = bool(result.converged)
    est.stop_reason_ = training.stop_words(result, PYTHON_WORDS)
    est.n_pairs_ = int(n_pairs)
    est.n_queries_ = int(n_queries)
    est.n_violated_pairs_ = None if result.n_active is None else int(result.n_active)


_KERNEL_DOC = """    kernel : {None, "linear", "poly", "rbf"}, default None
        A non-linear ranker (Chapelle & Keerthi Sect. 6.3): the solver runs on the kernel PCA map
        of the landmarks, and the model stores them.
    gamma : float, optional
        rbf exp(-gamma ||x - z||^2), poly (gamma x.z + coef0)^degree; default 1 / n_features.
    degree : int, default 3
    coef0 : float, default 0.0
    landmarks : int, optional
        Nystrom approximation with this many landmark documents drawn at random (``seed``);
        default every training document (exact, up to 4000 documents).
"""


class RankSVM(_Trainable):
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
{_KERNEL_DOC}    seed : int, default 0
        Seed of the landmark choice.
    warm_start : bool, default False
        Start the next ``fit`` from this fit's weights (linear models): the same optimum, fewer
        Newton steps when C or the data changed a little.
    threads : int, optional
        Numba threads while fitting and predicting; results do not depend on it.
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
    """.replace("{_KERNEL_DOC}", _KERNEL_DOC)

    def __init__(self, C: float = DEFAULT_C, loss: str | None = None, solver: str | None = None, tol: float | None = None,
                 max_iter: int | None = None, query_norm: bool = False, rescale: str | None = None,
                 delta: str | None = None, kernel: str | None = None, gamma: float | None = None, degree: int = 3,
                 coef0: float = 0.0, landmarks: int | None = None, seed: int = 0, warm_start: bool = False,
                 threads: int | None = None, verbose: bool = False, scoring_metric: str = "ndcg@10",
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
        self.seed = seed
        self.warm_start = warm_start
        self.threads = threads
        self.verbose = verbose
        self.scoring_metric = scoring_metric
        self.scoring_convention = scoring_convention


    def _options(self):
        _flag(self.warm_start, "warm_start")
        if self.solver is not None and self.solver in SOLVERS and (SOLVERS[self.solver].stochastic
                                                                   or SOLVERS[self.solver].factorized):
            other = "SGDRanker(learner=...)" if SOLVERS[self.solver].stochastic else "FactorizedRankSVM"
            raise UsageError(f"solver '{self.solver}' is not an exact RankSVM solver: use rankkit.{other}")
        check_depends(["delta"] if self.delta is not None else [], {"rescale": self.rescale}, PYTHON_WORDS)
        if self.rescale not in (None, "margin", "margin-sqrt", "margin-delta", "slack"):
            raise UsageError(f"rescale must be None, 'margin' (= 'margin-sqrt', the paper's), 'margin-delta' or "
                             f"'slack', not {self.rescale!r}")
        if not isinstance(self.query_norm, (bool, np.bool_)):
            raise UsageError(f"query_norm must be True or False, not {self.query_norm!r}")
        params = {"C": _positive(self.C, "C"), "tol": _positive_or_none(self.tol, "tol"),
                  "max_iter": _count_or_none(self.max_iter, "max_iter"), "loss": self.loss,
                  "query_norm": bool(self.query_norm)}
        if self.rescale:
            params.update({"rescale": self.rescale, "delta": self.delta or "gain"})
        return self.solver, params, {"seed": _seed(self.seed)}


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
        with Threads(self.threads):  # the one fit on parts of every face (rankkit.distributed.newton.fit_parts)
            model, result, facts = fit_parts(p, paths, client, query_weights=query_weights, zero_based=zero_based,
                                             log=verbose_log(self.verbose), warn=_convergence_warning(5))
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
        with Threads(self.threads):  # the warning points at the caller of fit_parts
            return self.fit_dataset(ds, query_weights=weights, log=verbose_log(self.verbose),
                                    warn=_convergence_warning(6))


class _RenamedParameters(type):
    """SGDRanker(lambda_=...) still works, with a FutureWarning: the parameter is now alpha. (A
    trailing underscore marks fitted attributes in scikit-learn, so lambda_ made check_is_fitted
    take an unfitted SGDRanker for a fitted one.) The old name is rewritten before __init__, so
    the signature scikit-learn inspects has only the new one."""

    def __call__(cls, *args, **kwargs):
        if "lambda_" in kwargs:
            warnings.warn(f"{cls.__name__}(lambda_=...) is deprecated: the parameter is now alpha (scikit-learn's "
                          "name of the same lambda/2 ||w||^2 weight)", FutureWarning, stacklevel=2)
            value = kwargs.pop("lambda_")
            if kwargs.get("alpha") is not None and value is not None:
                raise UsageError("give alpha, not both alpha and lambda_ (its former name)")
            if kwargs.get("alpha") is None:
                kwargs["alpha"] = value
        return super().__call__(*args, **kwargs)


class SGDRanker(_Trainable, metaclass=_RenamedParameters):
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
{_KERNEL_DOC}    patience : int, optional
        With ``eval_set``: stop when the first eval set's MAP has not improved for this many
        checkpoints (steps 100, 200, 500, 1000, 2000, ...), keeping the best weights (early
        stopping; ``best_iteration_``).
    seed : int, default 0
        Seed of every random choice: the same seed gives the same weights.
    warm_start : bool, default False
        Start the next ``fit`` from this fit's weights (a new run of the schedule from there;
        ``partial_fit`` continues the same run instead). Not with sgd, pegasos or logreg under eta
        "pegasos", whose first step 1/(alpha t) sets w to 0 (a UsageError says so).
    threads, verbose, scoring_metric, scoring_convention
        As for `RankSVM`.

    Attributes
    ----------
    coef_, intercept_, feature_importances_, feature_names_in_, n_iter_, objective_, converged_, n_pairs_, model_
        As for `RankSVM` (``converged_`` is False: a fixed number of steps).
    evals_result_ : dict
        With ``eval_set``: ``{"valid_0": {"map": [...], "ndcg@10": [...]}, ...}``, one value per
        checkpoint (the steps are ``eval_steps_``).
    best_iteration_ : int
        With ``eval_set``: the step at which the first eval set's MAP was best (with
        ``patience``, the model is the one of that step).

    Examples
    --------
    >>> import numpy as np, rankkit
    >>> X = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    >>> y = np.array([2, 1, 0, 1, 0])
    >>> ranker = rankkit.SGDRanker(iterations=2000, seed=1).fit(X, y, group=[3, 2])
    >>> ranker.n_iter_, bool(ranker.coef_[0] > ranker.coef_[1])
    (2000, True)
    """.replace("{_KERNEL_DOC}", _KERNEL_DOC)

    _iterative = True
    _records_run = True

    def __init__(self, learner: str = "pegasos", alpha: float | None = None, iterations: int | None = None,
                 eta: str | None = None, eta0: float | None = None, batch_size: int | None = None,
                 sampler: str | None = None, C: float | None = None, loss: str | None = None,
                 kernel: str | None = None, gamma: float | None = None, degree: int = 3, coef0: float = 0.0,
                 landmarks: int | None = None, patience: int | None = None, seed: int = 0, warm_start: bool = False,
                 threads: int | None = None, verbose: bool = False, scoring_metric: str = "ndcg@10",
                 scoring_convention: str | None = None, eta_c: float | None = None, ties: bool = False,
                 t0: int | None = None):
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
        self.seed = seed
        self.warm_start = warm_start
        self.threads = threads
        self.verbose = verbose
        self.scoring_metric = scoring_metric
        self.scoring_convention = scoring_convention

    def set_params(self, **params: Any) -> "SGDRanker":
        if "lambda_" in params:
            warnings.warn("lambda_ is deprecated: the parameter is now alpha", FutureWarning, stacklevel=2)
            params["alpha"] = params.pop("lambda_")
        return super().set_params(**params)

    @property
    def lambda_(self):
        """Deprecated: the parameter alpha (read-only alias)."""
        warnings.warn("lambda_ is deprecated: the parameter is now alpha", FutureWarning, stacklevel=2)
        return self.alpha

    def partial_fit(self, X, y, qid=None, group=None, eval_set=None, eval_qid=None,
                    eval_group=None) -> "SGDRanker":
        """Run ``iterations`` more steps of the same stochastic run, on the same data.

        After k calls the model is the one ``fit`` gives with k x ``iterations`` steps and the same
        seed, bit for bit (the same pairs drawn, the same learning rates, the same roundings). The
        run continues from its last checkpoint of the schedule (100, 200, 500, 1000, ... steps):
        the steps since that checkpoint are drawn again, so a call costs its own steps plus at
        most those of one segment (the first call after ``fit``, which runs the command line's
        code and keeps no checkpoint, runs the fit's steps again). pair-sgd and query-sgd, whose
        runs are one random stream, run from the start at each call. The data and the parameters
        (but ``iterations``, ``threads``, ``verbose``, the scoring ones) must stay the same: a
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
        key, fixed = _run_key(ds), self._run_params()
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
        _count_or_none(self.iterations, "iterations")
        total = done + int(self.iterations or DEFAULT_ITERATIONS)
        sets = _eval_sets(eval_set, eval_qid, eval_group, self, ds.n_features)
        before = (self.__dict__.get("evals_result_"), self.__dict__.get("eval_steps_")) if prev is not None else None
        with Threads(self.threads):
            self._fit_checked(ds, sets, None, None, warn=_convergence_warning(6), run={"state": state},
                              iterations=total, patience=None)
        if before is not None and before[0] is not None and sets and set(before[0]) == set(self.evals_result_):
            for name, metrics in self.evals_result_.items():
                for m in metrics:
                    metrics[m] = before[0][name].get(m, []) + metrics[m]
            self.eval_steps_ = list(before[1] or []) + self.eval_steps_
        return self

    def _options(self):
        if _flag(self.warm_start, "warm_start") and self.learner in ("sgd", "pegasos", "logreg") and \
                self.eta in (None, "pegasos"):
            raise UsageError(f"warm_start with learner '{self.learner}' and eta 'pegasos': its first step, "
                             "1/(alpha t) at t = 1, shrinks w to 0 and forgets the starting weights; use "
                             "partial_fit to continue a run, or eta='basic' or 'constant'")
        _count_or_none(self.patience, "patience")
        spec = SOLVERS.get(self.learner)
        if spec is None or not spec.stochastic:
            known = [n for n, s in SOLVERS.items() if s.stochastic]
            raise UsageError(f"learner must be one of {', '.join(known)}, not {self.learner!r}")
        _choice(self.eta, "eta", ("pegasos", "basic", "constant"))
        _choice(self.sampler, "sampler", ("uniform", "indexed", "query-norm", "roc", "sofia", "stream"))
        check_depends(["eta_c"] if self.eta_c is not None else [], {"eta": self.eta}, PYTHON_WORDS)
        if self.t0 is not None and (isinstance(self.t0, bool) or not isinstance(self.t0, (int, np.integer))
                                    or self.t0 < 0):
            raise UsageError(f"t0 must be an integer >= 0 (0: the paper's step 1/t), not {self.t0!r}")
        params = {"C": _positive_or_none(self.C, "C"), "loss": self.loss}
        stochastic = {"lam": _nonnegative_or_none(self.alpha, "alpha"),
                      "iterations": _count_or_none(self.iterations, "iterations"), "eta": self.eta,
                      "eta0": _positive_or_none(self.eta0, "eta0"),
                      "eta_c": _positive_or_none(self.eta_c, "eta_c"),
                      "ties": True if _flag(self.ties, "ties") else None,
                      "t0": None if self.t0 is None else int(self.t0),
                      "batch_size": _count_or_none(self.batch_size, "batch_size"),
                      "sampler": self.sampler, "seed": _seed(self.seed)}
        return self.learner, params, stochastic


class FactorizedRankSVM(_Trainable):
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
        With ``eval_set``: stop when the first eval set's MAP has not improved for this many
        iterations, keeping the best factors (early stopping; ``best_iteration_``).
{_KERNEL_DOC}    seed : int, default 0
    threads, verbose, scoring_metric, scoring_convention
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
    """.replace("{_KERNEL_DOC}", _KERNEL_DOC)

    def __init__(self, K: int | None = None, C: float | None = None, loss: str | None = None,
                 iterations: int | None = None, eta: str | None = None, eta0: float | None = None,
                 init_scale: float | None = None, patience: int | None = None, kernel: str | None = None,
                 gamma: float | None = None, degree: int = 3, coef0: float = 0.0, landmarks: int | None = None,
                 seed: int = 0, threads: int | None = None, verbose: bool = False, scoring_metric: str = "ndcg@10",
                 scoring_convention: str | None = None, optimizer: str | None = None, tol: float | None = None):
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
        self.seed = seed
        self.threads = threads
        self.verbose = verbose
        self.scoring_metric = scoring_metric
        self.scoring_convention = scoring_convention

    def _options(self):
        _choice(self.eta, "eta", ("constant", "basic"))
        _choice(self.optimizer, "optimizer", ("backtracking", "paper"))
        params = {"C": _positive_or_none(self.C, "C"), "loss": self.loss, "tol": _positive_or_none(self.tol, "tol")}
        stochastic = {"K": _count_or_none(self.K, "K"), "iterations": _count_or_none(self.iterations, "iterations"),
                      "eta": self.eta, "eta0": _positive_or_none(self.eta0, "eta0"),
                      "init_scale": _positive_or_none(self.init_scale, "init_scale"),
                      "patience": _count_or_none(self.patience, "patience"), "seed": _seed(self.seed),
                      "optimizer": self.optimizer}
        return "factorized", params, stochastic

    _iterative = True


# -- parameter checks (in fit, as scikit-learn does) --------------------------------------------------
def _number(v, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(float(v)):
        raise UsageError(f"{name} must be a finite number, not {v!r}")
    return float(v)


def _positive(v, name: str) -> float:
    x = _number(v, name)
    if x <= 0:
        raise UsageError(f"{name} must be > 0, not {v!r}")
    return x


def _positive_or_none(v, name: str):
    return None if v is None else _positive(v, name)


def _nonnegative_or_none(v, name: str):
    if v is None:
        return None
    x = _number(v, name)
    if x < 0:
        raise UsageError(f"{name} must be >= 0, not {v!r}")
    return x


def _count_or_none(v, name: str):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise UsageError(f"{name} must be an integer >= 1, not {v!r}")
    return int(v)


def _flag(v, name: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise UsageError(f"{name} must be True or False, not {v!r}")
    return bool(v)


def _seed(v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise UsageError(f"seed must be an integer >= 0, not {v!r}")
    return int(v)


def _choice(v, name: str, choices: tuple) -> None:
    if v is not None and v not in choices:
        raise UsageError(f"{name} must be one of {', '.join(choices)}, not {v!r}")


# -- from model files ------------------------------------------------------------------------------
_INT_KEYS = ("max_iter", "iterations", "batch_size", "K", "patience", "landmarks", "degree", "seed", "t0")
_FLOAT_KEYS = ("C", "tol", "lambda", "eta0", "init_scale", "gamma", "coef0", "eta_c")


def _header_params(header: dict) -> dict:
    """The estimator parameters a model header records, typed (headers are read back as text)."""
    out = {}
    for key, value in header.items():
        try:
            if key in _INT_KEYS:
                out[key] = int(value)
            elif key in _FLOAT_KEYS:
                out[key] = float(value)
            elif key in ("query_norm", "ties"):
                out[key] = str(value) == "true" or value is True
            elif key in ("loss", "rescale", "delta", "eta", "sampler", "kernel", "learner", "optimizer"):
                out[key] = str(value)
        except ValueError:
            continue
    return out


def load_model(path: str | os.PathLike, model_format: str | None = None) -> Ranker:
    """A fitted ranker from a model file: rankkit's (any solver), or svm_rank's, liblinear's or
    sofia-ml's (detected from the first line, or `model_format`).

    A model of `rankkit train` comes back as the estimator that trained it (RankSVM, SGDRanker or
    FactorizedRankSVM, with the parameters its header records); any other model as a `Ranker`.
    ``predict`` gives the scores ``rankkit predict`` gives, bit for bit (another tool's model: the
    scores of that tool's own predict program).

    Parameters
    ----------
    path : str or path-like
    model_format : {"rankkit", "svm_rank", "liblinear", "sofia-ml"}, optional

    Raises
    ------
    rankkit.errors.ModelError
        Not a model file, or a damaged one (checksum), naming the file and line.

    Examples
    --------
    >>> import numpy as np, os, tempfile, rankkit
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    >>> ranker = rankkit.RankSVM().fit(X, [2, 0, 1], qid=[1, 1, 1])
    >>> path = os.path.join(tempfile.mkdtemp(), "m.model")
    >>> ranker.save(path)
    >>> again = rankkit.load_model(path)
    >>> type(again).__name__, bool(np.array_equal(again.predict(X), ranker.predict(X)))
    ('RankSVM', True)
    """
    model = _read_model(os.fspath(path), model_format)
    est: Ranker
    solver = None if isinstance(model, ForeignModel) else str(model.header.get("solver", ""))
    spec = SOLVERS.get(solver) if solver else None
    if spec is None:
        est = Ranker()
    else:
        p = _header_params(model.header)
        kern = {k: p[k] for k in ("kernel", "gamma", "degree", "coef0") if k in p}
        if "kernel" in kern and "landmarks" in p and p["landmarks"] < int(model.header.get("n_documents", 0) or 0):
            kern["landmarks"] = p["landmarks"]  # a Nystrom map (every document: the exact map, landmarks=None)
        if "kernel" in kern and "landmarks" in p and "landmark_seed" in model.header:
            kern["seed"] = int(model.header["landmark_seed"])
        if spec.factorized:
            names = ("K", "C", "loss", "iterations", "eta", "eta0", "init_scale", "patience", "seed", "optimizer", "tol")
            est = FactorizedRankSVM(**{k: p[k] for k in names if k in p}, **{k: v for k, v in kern.items() if k != "seed"})
        elif spec.stochastic:
            args = {k: p[k] for k in ("iterations", "sampler", "loss", "seed") if k in p}
            if spec.name in ("pair-sgd", "query-sgd"):  # the header says how pairs were drawn; not a parameter
                args.pop("sampler", None)
            if "lambda" in p:
                args["alpha"] = p["lambda"]
            for k in ("eta", "eta0", "batch_size", "C", "eta_c", "ties", "t0"):
                if k in p:
                    args[k] = p[k]
            est = SGDRanker(learner=spec.name, **args, **{k: v for k, v in kern.items() if k != "seed"})
        else:
            args = {k: p[k] for k in ("C", "loss", "tol", "max_iter", "query_norm", "rescale") if k in p}
            if "rescale" in p:  # `margin` in a model file predates issue 26: the margin Delta (margin-delta)
                args["rescale"] = MODEL_RESCALE_NAMES.get(p["rescale"], p["rescale"])
            if "rescale" in p and "delta" in p:
                args["delta"] = p["delta"]
            est = RankSVM(solver=spec.name, **args, **kern)
        h = model.header
        for attr, key, cast in (("n_iter_", "iterations", int), ("objective_", "objective", float),
                                ("n_pairs_", "n_pairs", int), ("n_queries_", "n_queries", int),
                                ("n_violated_pairs_", "violated_pairs", int)):
            if key in h:
                try:
                    setattr(est, attr, cast(h[key]))
                except ValueError:
                    pass
        if "converged" in h:
            est.converged_ = str(h["converged"]) == "true"
        if "stop_reason" in h:
            est.stop_reason_ = str(h["stop_reason"])
    est.model_ = model
    names = getattr(model, "feature_names", None)
    if names is not None:  # a model fitted on a data frame: predict checks the columns as fit's estimator does
        est.feature_names_in_ = np.asarray(names, dtype=object)
    return est


SGDRanker.__signature__ = inspect.signature(SGDRanker.__init__).replace(
    parameters=list(inspect.signature(SGDRanker.__init__).parameters.values())[1:])
