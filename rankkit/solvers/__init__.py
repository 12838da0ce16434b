"""The solver registry: the CLI's `--solver` choices come from SOLVERS.

Each entry names the module and class that implement it; the module is imported only when the
solver is used, so listing the choices (`rankkit train --help`) does not load numba. A new method
joins by adding one SolverSpec here and one module under rankkit/solvers/.

Layer: algorithms (tests/test_architecture.py's LAYERS). The solvers may import the objectives,
io, the kernels and data and the base; never the use cases or a face. A solver reports why it
stopped as a code and its figures (FitResult.stop, .detail).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class SolverSpec:
    name: str
    summary: str
    module: str
    cls: str
    losses: tuple[str, ...]
    stochastic: bool = False  # takes --lambda, --iterations, --eta, --sampler, ... instead of --tol
    factorized: bool = False  # takes -K, --iterations, --eta0, --init-scale, --patience, --save-factors
    # its kernels take uint16 column indices as well as int32: `rankkit train` then reads a file whose
    # columns are all below 65,536 with uint16 indices (half their memory; rankkit.io.svmlight)
    narrow_indices: bool = False
    # its kernels read values as data[t] / value_scale: `rankkit train` then reads a file whose values
    # are all exactly k / 10**d (LETOR's %.6f, counts) as int32 decimal codes (rankkit.data.Dataset)
    narrow_values: bool = False

    def load(self):
        return getattr(importlib.import_module(self.module), self.cls)


SOLVERS: dict[str, SolverSpec] = {
    spec.name: spec
    for spec in [
        SolverSpec(
            name="newton",
            summary="primal truncated-Newton RankSVM, O(nnz + n log n) per step (Chapelle & Keerthi, PRSVM+)",
            module="rankkit.solvers.newton",
            cls="NewtonRankSVM",
            losses=("squared-hinge", "huber", "logistic"),
            narrow_indices=True,
            narrow_values=True,  # PairwiseObjective passes Dataset.value_scale to every kernel
        ),
        SolverSpec(
            name="newton-pairs",
            summary="the same Newton method on the explicit pair list, O(nnz + pairs) per step "
            "(Chapelle & Keerthi Sect. 3, PRSVM): any per-pair cost, exact logistic (RankNet) loss",
            module="rankkit.solvers.newton",
            cls="NewtonPairsRankSVM",
            losses=("squared-hinge", "huber", "logistic"),
            narrow_indices=True,
        ),
        SolverSpec(
            name="nlcg",
            summary="the same objective by primal non-linear conjugate gradient (Polak-Ribiere+, secant line "
            "search; Chapelle & Keerthi Sect. 2's alternative to truncated Newton), O(nnz + n log n) per iteration",
            module="rankkit.solvers.nlcg",
            cls="NlcgRankSVM",
            losses=("squared-hinge",),
            narrow_indices=True,
        ),
        SolverSpec(
            name="bundle",
            summary="the hinge-loss RankSVM (svm_rank's objective) by a bundle / cutting-plane method (BMRM) "
            "on the O(n log n) subgradient, stopped on the relative duality gap",
            module="rankkit.solvers.bundle",
            cls="BundleRankSVM",
            losses=("hinge",),
            narrow_indices=True,
        ),
    ]
    + [
        SolverSpec(
            name="factorized",
            summary="Factorized Ranking SVM (Zhang et al. 2015): pair multipliers <v_i, v_j> with K-dimensional "
            "latent vectors, gradient descent in O(nnz + N K + N log N) per iteration",
            module="rankkit.solvers.factorized",
            cls="FactorizedRankSVM",
            losses=("hinge", "squared-hinge"),
            factorized=True,
        )
    ]
    + [
        SolverSpec(
            name=name,
            summary=summary,
            module="rankkit.solvers.sgd",
            cls=cls,
            losses=losses,
            stochastic=True,
            narrow_indices=True,  # uint16 columns: 2 bytes a non-zero less than int32 (Pegasos' memory vs sofia-ml)
            # int32 decimal codes instead of float64 values where exact: 4 bytes a non-zero less (run_spd)
            narrow_values=name not in ("pair-sgd", "query-sgd"),
        )
        for name, cls, losses, summary in [
            ("sgd", "SgdRankSVM", ("hinge",), "stochastic pairwise descent (sofia-ml): SGD-SVM, eta = 1/(lambda t)"),
            ("pegasos", "PegasosRankSVM", ("hinge",), "SGD-SVM plus projection onto ||w|| <= 1/sqrt(lambda)"),
            ("pa", "PaRankSVM", ("hinge",), "passive-aggressive PA-I on sampled pairs, aggressiveness -C"),
            ("romma", "RommaRankSVM", ("hinge",), "aggressive ROMMA on sampled pairs"),
            ("logreg", "LogregRankSVM", ("logistic",), "logistic loss with Pegasos-style steps on sampled pairs"),
            ("margin-perceptron", "MarginPerceptronRankSVM", ("hinge",), "perceptron with margin 1 on sampled pairs"),
            ("perceptron", "PerceptronRankSVM", ("hinge",),
             "plain perceptron on sampled pairs (a step when w.(x_a - x_b) <= 0): Sculley's 'did not help'"),
            ("pair-sgd", "PairSgdRankSVM", ("squared-hinge",),
             "Chapelle & Keerthi Algorithm 2: SGD on uniform pairs, squared hinge, step 1/t"),
            ("query-sgd", "QuerySgdRankSVM", ("squared-hinge",),
             "Chapelle & Keerthi Algorithm 3: SGD on whole queries with the O(n log n) gradient, step 1/t"),
        ]
    ]
}

DEFAULT_SOLVER = "newton"


def get_solver(name: str) -> SolverSpec:
    return SOLVERS[name]


def solver_for(loss: str) -> str:
    """The default solver of a loss: newton where it applies, else the first solver offering it."""
    if loss in SOLVERS[DEFAULT_SOLVER].losses:
        return DEFAULT_SOLVER
    return next(spec.name for spec in SOLVERS.values() if loss in spec.losses)


# every loss some solver offers, for the CLI's --loss choices (the first is the default)
LOSSES: tuple[str, ...] = tuple(dict.fromkeys(loss for spec in SOLVERS.values() for loss in spec.losses))
