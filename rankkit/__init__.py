"""rankkit: learning to rank on SVMlight/LETOR data, from the command line and from Python.

    import rankkit
    X, y, qid = rankkit.load_svmlight_file("train.txt", query_id=True)
    ranker = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid)
    rankkit.evaluate(y_test, ranker.predict(X_test), qid=qid_test)

The names below are imported on first use (PEP 562), so `import rankkit` loads nothing heavy:
numpy and scipy come with the first function or estimator used, numba with the first kernel run,
and `rankkit --help` stays instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankkit.config import __version__

_EXPORTS = {
    "RankSVM": "rankkit.estimators",
    "SGDRanker": "rankkit.estimators",
    "FactorizedRankSVM": "rankkit.estimators",
    "Ranker": "rankkit.estimators",
    "load_model": "rankkit.estimators",
    "make_scorer": "rankkit.scoring",
    "get_scorer": "rankkit.scoring",
    "ConvergenceWarning": "rankkit.estimators",
    "load_svmlight_file": "rankkit.datasets",
    "load_svmlight_files": "rankkit.datasets",
    "dump_svmlight_file": "rankkit.datasets",
    "load_letor": "rankkit.datasets",
    "LetorData": "rankkit.datasets",
    "evaluate": "rankkit.evaluation",
    "compare": "rankkit.evaluation",
    "regularization_path": "rankkit.paths.select",
    "RegularizationPath": "rankkit.paths.select",
    "experiment": "rankkit.experiments",
    "RankkitError": "rankkit.errors",
    "DataError": "rankkit.errors",
    "ModelError": "rankkit.errors",
    "UsageError": "rankkit.errors",
    "ClusterError": "rankkit.distributed.cluster",
    "predict_parts": "rankkit.distributed",
    "evaluate_parts": "rankkit.distributed",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names come from __getattr__
    from rankkit.distributed import evaluate_parts, predict_parts
    from rankkit.distributed.cluster import ClusterError
    from rankkit.datasets import LetorData, dump_svmlight_file, load_letor, load_svmlight_file, load_svmlight_files
    from rankkit.errors import DataError, ModelError, RankkitError, UsageError
    from rankkit.estimators import ConvergenceWarning, FactorizedRankSVM, Ranker, RankSVM, SGDRanker, load_model
    from rankkit.evaluation import compare, evaluate
    from rankkit.scoring import get_scorer, make_scorer
    from rankkit.experiments import experiment
    from rankkit.paths.select import RegularizationPath, regularization_path


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rankkit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
