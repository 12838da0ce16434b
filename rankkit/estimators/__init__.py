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

The Python face, one module per estimator over one base, as scikit-learn's (sklearn/linear_model/,
sklearn/utils/validation.py):

    base.py        Ranker (predict, score, save, the parameter and metadata-routing protocols),
                   Trainable (fit, fit_dataset), eval sets and their monitor, the fitted state
    validation.py  the parameter checks (one module, public names)
    words.py       PythonWords: messages name parameters (C, alpha), not --flags
    ranksvm.py     RankSVM        sgd.py  SGDRanker        factorized.py  FactorizedRankSVM
    load.py        load_model     protocol.py  experiment (rankkit.experiment, in Python's words)

A face: it imports every layer below (use cases, algorithms, io, kernels, base), never another
face; the Dask face (rankkit.distributed, rankkit.dask) imports it, never the other way.
"""

from __future__ import annotations

# the public names, and those the other modules of the Python and Dask faces import from here
from rankkit.estimators.base import (ConvergenceWarning, Ranker, Threads, Trainable, check_feature_names,
                                     set_fitted_state, verbose_log)
from rankkit.estimators.factorized import FactorizedRankSVM
from rankkit.estimators.load import load_model
from rankkit.estimators.protocol import experiment
from rankkit.estimators.ranksvm import RankSVM
from rankkit.estimators.sgd import SGDRanker
from rankkit.estimators.words import PYTHON_NAMES, PYTHON_WORDS, PythonWords

__all__ = ["Ranker", "RankSVM", "SGDRanker", "FactorizedRankSVM", "load_model", "ConvergenceWarning", "experiment"]
