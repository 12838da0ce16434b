"""The words of the Python face: its messages name parameters (C, alpha, max_iter), not --flags
(rankkit.solvers.options.Words names the command line's; the checks below the faces take either).
"""

from __future__ import annotations

from rankkit.solvers import LOSSES
from rankkit.solvers.options import DASK_LOSSES, DASK_SOLVER, Words

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
