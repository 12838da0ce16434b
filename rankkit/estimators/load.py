"""load_model: any model file (rankkit's, svm_rank's, liblinear's, sofia-ml's) as a fitted ranker."""

from __future__ import annotations

import os

import numpy as np

from rankkit.estimators.base import Ranker
from rankkit.estimators.factorized import FactorizedRankSVM
from rankkit.estimators.ranksvm import RankSVM
from rankkit.estimators.sgd import SGDRanker
from rankkit.io.foreign_models import ForeignModel
from rankkit.io.foreign_models import load_model as _read_model
from rankkit.objectives.rescale import MODEL_NAMES as MODEL_RESCALE_NAMES
from rankkit.solvers import SOLVERS

_INT_KEYS = ("max_iter", "iterations", "batch_size", "K", "patience", "landmarks", "degree", "seed", "t0")
# the header's name of a parameter whose estimator name differs (the header keeps the command line's)
_PARAMETER = {"seed": "random_state"}
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
            kern["random_state"] = int(model.header["landmark_seed"])
        if spec.factorized:
            names = ("K", "C", "loss", "iterations", "eta", "eta0", "init_scale", "patience", "seed", "optimizer", "tol")
            est = FactorizedRankSVM(**{_PARAMETER.get(k, k): p[k] for k in names if k in p},
                                    **{k: v for k, v in kern.items() if k != "random_state"})
        elif spec.stochastic:
            args = {_PARAMETER.get(k, k): p[k] for k in ("iterations", "sampler", "loss", "seed") if k in p}
            if spec.name in ("pair-sgd", "query-sgd"):  # the header says how pairs were drawn; not a parameter
                args.pop("sampler", None)
            if "lambda" in p:
                args["alpha"] = p["lambda"]
            for k in ("eta", "eta0", "batch_size", "C", "eta_c", "ties", "t0"):
                if k in p:
                    args[k] = p[k]
            est = SGDRanker(learner=spec.name, **args, **{k: v for k, v in kern.items() if k != "random_state"})
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
