"""Names and defaults the CLI needs before anything heavy is imported (no numpy, no numba here).

It imports nothing, so any module may take the version from here (never from the package
`rankkit`, whose __init__ imports the public names lazily from the modules that would import it).

The registries themselves live with their code (rankkit.metrics.CONVENTIONS, rankkit.stats.TESTS);
their tests check that these names match them.
"""

__version__ = "0.2.0"  # pyproject.toml reads it from here

CONVENTION_NAMES = ("letor4", "letor3", "mslr", "trec", "exp")
# the one default convention of every face (eval, path, experiment, evaluate, estimators' score):
# trec_eval's, what pytrec_eval, ranx and scikit-learn's ndcg_score compute
DEFAULT_CONVENTION = "trec"
EMPTY_QUERY_CHOICES = ("0", "1", "skip")
SIGNIFICANCE_TESTS = ("randomization", "t")
DEFAULT_PERMUTATIONS = 10_000
PREDICT_FORMATS = ("scores", "trec", "ranked")
# model file formats: rankkit.io.foreign_models.FORMATS is this tuple (the CLI's --to / --model-format choices)
MODEL_FORMATS = ("rankkit", "svm_rank", "liblinear", "sofia-ml")
# rankkit's own model files (rankkit.io.model): the format version written, and the oldest one read
# (every version in between is read too: CHANGELOG.md's compatibility promise, tests/test_model_compat.py)
MODEL_FORMAT_VERSION = 2
OLDEST_MODEL_FORMAT = 1
