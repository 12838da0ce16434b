"""What the estimators share: the fitted ranker (Ranker: predict, score, save, scikit-learn's
parameter and metadata-routing protocols), the trainable base (Trainable: fit on arrays or on a
Dataset, the command line's entry, through rankkit.training), eval sets and their monitor, the
fitted state.
"""

from __future__ import annotations

import copy
import inspect
import os
import sys
import warnings
from typing import Any, Callable

import numpy as np

from rankkit import console, threads, training
from rankkit.datasets import as_dataset, check_dense_width, column_names, per_query_weights, split_qid_column
from rankkit.errors import DataError, UsageError
from rankkit.estimators.validation import (check_feature_names, choice, count_or_none, number, positive_or_none,
                                           random_seed)
from rankkit.estimators.words import PYTHON_WORDS
from rankkit.evaluation import evaluate
from rankkit.io.atomic import check_output
from rankkit.io.foreign_models import ForeignModel
from rankkit.io.model import write_model
from rankkit.io.parts import refuse_collection
from rankkit.metrics import parse_metric
from rankkit.scoring import model_scores
from rankkit.solvers import SOLVERS
from rankkit.solvers.options import SOLVER_OPTIONS, check_depends

Log = Callable[[str], None]


class ConvergenceWarning(UserWarning):
    """A solver stopped before its stopping rule was met (``max_iter``, or the line search)."""


class Threads:
    """Run with `n` kernel threads (None: leave the setting alone), restoring the previous count
    (rankkit.threads: the count the kernels split their work by). The estimators' ``n_jobs``:
    as joblib's, -1 is every usable core and -2 all but one (`name`: the parameter's name)."""

    def __init__(self, n: int | None, name: str = "n_jobs"):
        self.n, self.before, self.name = n, None, name

    def __enter__(self):
        if self.n is not None:
            self.before = (threads.explicit(),)
            threads.apply(thread_count(self.n, self.name))
        return self

    def __exit__(self, *exc):
        if self.before is not None:
            threads.apply(self.before[0])  # the count asked for before, or the default again
        return False


def thread_count(n, name: str = "n_jobs") -> int:
    """The kernel threads of ``n_jobs`` n: n >= 1 itself, a negative n joblib's count (-1 every usable
    core, -2 all but one, ...; at least 1); 0 and anything else a UsageError."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or int(n) == 0:
        raise UsageError(f"{name} must be an integer >= 1, or negative as joblib's (-1: every core), not {n!r}")
    return int(n) if n > 0 else max(1, threads.usable_cores() + 1 + int(n))


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
        refuse_collection(X, "X", "rankkit.dask.DaskRankSVM (fit, predict) and rankkit.dask.evaluate")
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
        with Threads(getattr(self, "n_jobs", None)):
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


def _with_header(model, header: dict, feature_names=None):
    """A copy of `model` with this header and these feature names (the data frame's columns, which
    the model file records and load_model checks as fit's estimator does)."""
    out = copy.copy(model)
    out.header = header
    out.feature_names = feature_names
    return out


class RenamedParameters(type):
    """A former parameter name still works, with a FutureWarning, for one release: the class's
    ``_renamed`` {old: (new, why)}. The old name is rewritten before __init__, so the signature
    scikit-learn inspects (get_params, clone) has only the new one, and so has the class's (help,
    inspect.signature: __init__'s, not this __call__'s)."""

    def __init__(cls, name, bases, namespace):
        super().__init__(name, bases, namespace)
        cls.__signature__ = inspect.Signature(list(inspect.signature(cls.__init__).parameters.values())[1:])

    def __call__(cls, *args, **kwargs):
        for old, (new, why) in cls._renamed.items():
            if old in kwargs:
                warnings.warn(f"{cls.__name__}({old}=...) is deprecated: the parameter is now {new} ({why})",
                              FutureWarning, stacklevel=2)
                value = kwargs.pop(old)
                if kwargs.get(new) is not None and value is not None:
                    raise UsageError(f"give {new}, not both {new} and {old} (its former name)")
                if kwargs.get(new) is None:
                    kwargs[new] = value
        return super().__call__(*args, **kwargs)


class Trainable(Ranker, metaclass=RenamedParameters):
    """What the three estimators share: fit on arrays, fit on a Dataset (the command line's entry)."""

    _words = PYTHON_WORDS  # how messages name the parameters
    # former names of parameters (issue 40: scikit-learn's names, which code written for LightGBM,
    # XGBoost and scikit-learn passes): {old: (new, why)}
    _renamed = {"seed": ("random_state", "scikit-learn's name, as LightGBM's and XGBoost's"),
                "threads": ("n_jobs", "scikit-learn's name, as LightGBM's and XGBoost's")}

    def set_params(self, **params: Any) -> "Trainable":
        for old, (new, _) in self._renamed.items():
            if old in params:
                warnings.warn(f"{old} is deprecated: the parameter is now {new}", FutureWarning, stacklevel=2)
                params[new] = params.pop(old)
        return super().set_params(**params)

    def __getattr__(self, name: str):
        """A former parameter name read (est.seed): the new parameter's value, with a FutureWarning."""
        renamed = type(self)._renamed.get(name)
        if renamed is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(f"{name} is deprecated: the parameter is now {renamed[0]}", FutureWarning, stacklevel=2)
        return getattr(self, renamed[0])

    def __setstate__(self, state: dict) -> None:
        """Unpickling an estimator pickled before a parameter was renamed: its value under the new name."""
        state = dict(state)
        for old, (new, _) in self._renamed.items():
            if old in state and new not in state:
                state[new] = state.pop(old)
        self.__dict__.update(state)
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
        choice(self.kernel, "kernel", ("linear", "poly", "rbf"))
        positive_or_none(self.gamma, "gamma")
        count_or_none(self.degree, "degree")
        count_or_none(self.landmarks, "landmarks")
        number(self.coef0, "coef0")
        return {"name": self.kernel, "gamma": self.gamma, "degree": self.degree, "coef0": self.coef0,
                "landmarks": self.landmarks, "seed": random_seed(self.random_state)}

    def fit(self, X, y, qid=None, group=None, sample_weight=None, eval_set=None, eval_qid=None, eval_group=None,
            query_weight=None) -> "Trainable":
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
        sets = eval_sets(eval_set, eval_qid, eval_group, self, ds.n_features)
        w0 = self._warm_start_weights(ds)
        with Threads(self.n_jobs):
            return self._fit_checked(ds, sets, weights, w0, warn=convergence_warning(6))

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
        metrics = self._eval_metrics()  # (eval_metric checked with or without eval sets)
        if sets:
            history = {name: {m: [] for m in metrics} for name, _ in sets}
            monitor = _Monitor(sets, history, metrics, self.scoring_convention)
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
            self._run = {"state": run["state"], "data": run_key(ds), "params": self._run_params()}
        if monitor is not None:
            self.evals_result_ = history
            self.eval_steps_ = list(monitor.steps)
            self.best_iteration_, self.best_score_ = monitor.best(self.fit_result_)
        return self

    _records_run = False  # fit keeps its stochastic run's state (SGDRanker.partial_fit continues it)

    def _run_params(self) -> dict:
        """The parameters a continued run must keep."""
        return {k: v for k, v in self.get_params().items()
                if k not in ("iterations", "n_jobs", "verbose", "scoring_metric", "scoring_convention", "patience")}

    def _eval_metrics(self) -> tuple:
        """The metrics recorded on eval sets: ``eval_metric`` (what early stopping watches; MAP by
        default, as the command line's --patience) and the estimator's scoring_metric."""
        watched = getattr(self, "eval_metric", None)
        if watched is not None:
            if not isinstance(watched, str):
                raise UsageError(f"eval_metric must be a metric name as rankkit.evaluate takes (e.g. 'ndcg@10'), "
                                 f"not {watched!r}")
            parse_metric(watched)  # a UsageError naming the metrics rankkit.evaluate takes
        return tuple(dict.fromkeys((watched or "map", self.scoring_metric)))

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
                    run=None, iterations=None) -> "Trainable":
        """Fit on a rankkit Dataset: what ``fit`` runs after checking its arrays, and what `rankkit
        train` runs after reading its files (rankkit.training.fit_dataset). `facts` and
        `run_facts`: what the command line records in the model header of the files (names,
        checksum, index base; the reading time). warn: the command line's warning; None warns
        with a ConvergenceWarning worded for Python."""
        for stale in ("train_auc_", "factors_"):  # attributes only some fits set: never left from an earlier fit
            self.__dict__.pop(stale, None)
        p = self._plan(valid is not None, query_weights is not None, iterations)
        model, result = training.fit_dataset(p, ds, valid=valid, query_weights=query_weights, log=log,
                                             progress=progress, warn=warn or convergence_warning(4), facts=facts,
                                             run_facts=run_facts, w0=w0, monitor=monitor, patience=patience, run=run)
        set_fitted_state(self, model, result, ds.n_pairs, ds.n_queries)
        if "train_auc" in model.header:
            self.train_auc_ = model.header["train_auc"]
        if result.factors is not None:
            self.factors_ = result.factors
        return self


def convergence_warning(stacklevel: int) -> Callable[[str], None]:
    """warn(words) as a ConvergenceWarning at `stacklevel` counted from this warn, which
    training.fit_dataset calls: 4 is the caller of fit_dataset, 5 the caller of fit."""
    def warn(words: str) -> None:
        warnings.warn(words, ConvergenceWarning, stacklevel=stacklevel)

    return warn


def run_key(ds) -> tuple:
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
    returns the first set's first metric (eval_metric, MAP by default), which early stopping
    watches; `metric` names it (the solvers' logs and stop messages say which)."""

    def __init__(self, sets, history, metrics, convention):
        self.sets, self.history, self.metrics = sets, history, metrics
        self.metric = metrics[0]
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
        """(best_iteration_, best_score_): the step of the best first-set eval_metric (the model's own step
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


def eval_sets(eval_set, eval_qid, eval_group, est, width: int) -> list:
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


KERNEL_DOC = """    kernel : {None, "linear", "poly", "rbf"}, default None
        A non-linear ranker (Chapelle & Keerthi Sect. 6.3): the solver runs on the kernel PCA map
        of the landmarks, and the model stores them.
    gamma : float, optional
        rbf exp(-gamma ||x - z||^2), poly (gamma x.z + coef0)^degree; default 1 / n_features.
    degree : int, default 3
    coef0 : float, default 0.0
    landmarks : int, optional
        Nystrom approximation with this many landmark documents drawn at random (``random_state``);
        default every training document (exact, up to 4000 documents).
"""
