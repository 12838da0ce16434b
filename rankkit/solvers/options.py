"""Which options each solver takes, and the keyword arguments of its class.

One table (SOLVER_OPTIONS) serves the command line and the Python estimators: an option given that
the chosen solver does not use is an error, never silently ignored and never written into a model.
Messages name the option as the caller knows it: `-C`, `--lambda` on the command line (CLI_NAMES);
`C`, `lambda_` in Python (PYTHON_NAMES).
"""

from __future__ import annotations

from rankkit.errors import UsageError

STOCHASTIC_DEFAULTS = {"lam": None, "iterations": None, "eta": "pegasos", "eta0": 1.0, "batch_size": 1,
                       "sampler": "uniform"}
DEFAULT_C = 1.0  # C when not given, for every solver that has a C

CLI_NAMES = {"C": "-C", "tol": "--tol", "max_iter": "--max-iter", "query_norm": "--query-norm",
             "query_weights": "--query-weights", "rescale": "--rescale", "lam": "--lambda",
             "iterations": "--iterations", "eta": "--eta", "eta0": "--eta0", "batch_size": "--batch-size",
             "sampler": "--sampler", "valid_file": "--valid", "K": "-K", "init_scale": "--init-scale",
             "patience": "--patience", "save_factors": "--save-factors"}
PYTHON_NAMES = {"C": "C", "tol": "tol", "max_iter": "max_iter", "query_norm": "query_norm",
                "query_weights": "query_weight", "rescale": "rescale", "lam": "lambda_", "iterations": "iterations",
                "eta": "eta", "eta0": "eta0", "batch_size": "batch_size", "sampler": "sampler",
                "valid_file": "eval_set", "K": "K", "init_scale": "init_scale", "patience": "patience",
                "save_factors": "save_factors"}

_EXACT = {"C", "tol", "max_iter", "query_norm", "query_weights", "rescale"}
_SOFIA = {"iterations", "sampler", "valid_file"}
SOLVER_OPTIONS = {
    "newton": _EXACT,
    "newton-pairs": _EXACT,
    "bundle": _EXACT,
    "factorized": {"C", "iterations", "eta", "eta0", "valid_file", "K", "init_scale", "patience", "save_factors"},
    "sgd": _SOFIA | {"lam", "eta", "eta0", "batch_size"},
    "pegasos": _SOFIA | {"lam", "eta", "eta0", "batch_size"},
    "logreg": _SOFIA | {"lam", "eta", "eta0", "batch_size"},
    "margin-perceptron": _SOFIA | {"lam", "eta", "eta0", "batch_size"},  # lambda only through --eta pegasos
    "pa": _SOFIA | {"C"},  # PA-I: C caps the step; no learning rate, no lambda
    "romma": _SOFIA,  # aggressive ROMMA: no C, no learning rate, no lambda
    "pair-sgd": {"C", "iterations", "valid_file"},  # Algorithm 2: uniform pairs, step 1/t
    "query-sgd": {"C", "iterations"},  # Algorithm 3: whole queries, step 1/(t + t0)
}
_HINTS = {"cli": {"query_norm": " (use --sampler query-norm)"}, "python": {"query_norm": " (use sampler='query-norm')"}}


def solver_kwargs(spec, params: dict, stochastic: dict | None, query_weights_given: bool, style: str = "cli") -> dict:
    """The keyword arguments of the chosen solver's class. Every option given (not None, not False)
    that the solver does not use is a UsageError, worded for `style` ("cli" or "python"); C not
    given is DEFAULT_C."""
    names = CLI_NAMES if style == "cli" else PYTHON_NAMES
    solver_word = f"--solver {spec.name}" if style == "cli" else f"solver '{spec.name}'"
    stochastic = dict(stochastic or {})
    given = {k for k, v in params.items() if k not in ("loss", "delta") and v not in (None, False)}
    given |= {k for k, v in stochastic.items() if k != "seed" and v is not None}
    if query_weights_given:
        given.add("query_weights")
    takes = SOLVER_OPTIONS.get(spec.name)
    if takes is None:  # a solver added to the registry without a row here: be strict by kind
        takes = SOLVER_OPTIONS["factorized" if spec.factorized else "sgd" if spec.stochastic else "newton"]
    for key in sorted(given - takes, key=list(CLI_NAMES).index):
        users = [name for name, opts in SOLVER_OPTIONS.items() if key in opts]
        what = "an option" if style == "cli" else "a parameter"
        raise UsageError(f"{names[key]} is not {what} of {solver_word} (it is for: {', '.join(users)})"
                         f"{_HINTS[style].get(key, '')}")
    eta = stochastic.get("eta")
    if stochastic.get("eta0") is not None and "eta0" in takes and (eta or "pegasos") == "pegasos" and not spec.factorized:
        raise UsageError(f"{names['eta0']} is the scale of {names['eta']} basic or constant; "
                         f"{names['eta']} pegasos is 1/(lambda t)")
    if spec.name == "margin-perceptron" and stochastic.get("lam") is not None and (eta or "pegasos") != "pegasos":
        raise UsageError(f"{names['lam']} is used by {solver_word} only through {names['eta']} pegasos, "
                         f"not {names['eta']} {eta}")
    C = DEFAULT_C if params.get("C") is None else params["C"]
    if spec.factorized:
        out = {"C": C, "loss": params.get("loss"), "seed": stochastic.get("seed", 0)}
        for key in ("iterations", "eta", "eta0", "K", "init_scale", "patience"):
            if stochastic.get(key) is not None:
                out[key] = stochastic[key]
        if "eta" not in out:
            out["eta"] = "constant"
        return out
    if spec.stochastic:
        out = {"C": C, "loss": params.get("loss")}
        for key, default in STOCHASTIC_DEFAULTS.items():
            out[key] = stochastic.get(key) if stochastic.get(key) is not None else default
        out["seed"] = stochastic.get("seed", 0)
        return out
    out = {k: v for k, v in params.items() if v is not None}
    out["C"] = C
    return out


def resolve_solver(solver: str | None, loss: str | None, style: str = "cli"):
    """(spec, loss): the solver named, or the default one of the loss; the loss given, or the
    solver's first. A loss the solver does not offer is a UsageError."""
    from rankkit.solvers import LOSSES, SOLVERS, solver_for

    if loss is not None and loss not in LOSSES:
        what = "--loss" if style == "cli" else "loss"
        raise UsageError(f"{what} must be one of {', '.join(LOSSES)}, not {loss!r}")
    if solver is None:
        solver = solver_for(loss or "squared-hinge")
    if solver not in SOLVERS:
        raise UsageError(f"unknown solver {solver!r} (known: {', '.join(SOLVERS)})")
    spec = SOLVERS[solver]
    if loss is None:
        loss = spec.losses[0]
    if loss not in spec.losses:
        if style == "cli":
            raise UsageError(f"--solver {solver} does not offer --loss {loss} (it offers: {', '.join(spec.losses)})")
        raise UsageError(f"solver '{solver}' does not offer loss '{loss}' (it offers: {', '.join(spec.losses)})")
    return spec, loss
