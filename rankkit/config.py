"""Names and defaults the CLI needs before anything heavy is imported (no numpy, no numba here).

The registries themselves live with their code (rankkit.metrics.CONVENTIONS, rankkit.stats.TESTS);
their tests check that these names match them.
"""

CONVENTION_NAMES = ("letor4", "letor3", "mslr", "trec", "exp")
DEFAULT_CONVENTION = "letor4"
EMPTY_QUERY_CHOICES = ("0", "1", "skip")
SIGNIFICANCE_TESTS = ("randomization", "t")
DEFAULT_PERMUTATIONS = 10_000
PREDICT_FORMATS = ("scores", "trec", "ranked")
