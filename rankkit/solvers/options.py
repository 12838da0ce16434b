"""Which options each solver takes, and the keyword arguments of its class.

One table (SOLVER_OPTIONS) serves the command line and the Python estimators: an option given that
the chosen solver does not use is an error, never silently ignored and never written into a model.
Messages name the options through a `Words`: by default the command line's flags (`-C`,
`--lambda`), the names a model file records (NAMES; its stop_reason); a face that names them
otherwise passes its own Words (the Python face: rankkit.estimators.PYTHON_WORDS, `C`, `alpha`).
The rules and the figures are here; no function here knows which face called it.
"""

from __future__ import annotations

from rankkit.errors import UsageError
from rankkit.solvers import LOSSES, SOLVERS, solver_for
from rankkit.solvers.base import DEFAULT_C

STOCHASTIC_DEFAULTS = {"lam": None, "iterations": None, "eta": "pegasos", "eta0": 1.0, "batch_size": 1,
                       "sampler": "uniform", "eta_c": None, "ties": False, "t0": None}
PA_DEFAULT_C = 1e7  # sofia-ml's --passive_aggressive_c default: PA-I's step cap, in effect unclipped

# the options as the command line names them: the words of every model file's stop_reason
NAMES = {"C": "-C", "tol": "--tol", "max_iter": "--max-iter", "query_norm": "--query-norm",
         "query_weights": "--query-weights", "rescale": "--rescale", "lam": "--lambda",
         "iterations": "--iterations", "eta": "--eta", "eta0": "--eta0", "batch_size": "--batch-size",
         "sampler": "--sampler", "valid_file": "--valid", "K": "-K", "init_scale": "--init-scale",
         "patience": "--patience", "save_factors": "--save-factors", "kernel": "--kernel", "gamma": "--gamma",
         "degree": "--degree", "coef0": "--coef0", "landmarks": "--landmarks", "delta": "--delta",
         "eta_c": "--eta-c", "ties": "--ties", "t0": "--t0", "optimizer": "--optimizer",
         "plot": "--plot", "plot_kind": "--plot-kind", "plot_query": "--plot-query", "n_points": "--n-points"}

_EXACT = {"C", "tol", "max_iter", "query_norm", "query_weights", "rescale"}
_SOFIA = {"iterations", "sampler", "valid_file"}
SOLVER_OPTIONS = {
    "newton": _EXACT,
    "newton-pairs": _EXACT,
    "nlcg": _EXACT,
    "bundle": _EXACT,
    "factorized": {"C", "iterations", "eta", "eta0", "valid_file", "K", "init_scale", "patience", "save_factors",
                   "optimizer", "tol"},
    "sgd": _SOFIA | {"lam", "eta", "eta0", "eta_c", "batch_size", "ties"},
    "pegasos": _SOFIA | {"lam", "eta", "eta0", "eta_c", "batch_size", "ties"},
    "logreg": _SOFIA | {"lam", "eta", "eta0", "eta_c", "batch_size", "ties"},
    # the perceptrons: lambda only through --eta pegasos
    "margin-perceptron": _SOFIA | {"lam", "eta", "eta0", "eta_c", "batch_size", "ties"},
    "perceptron": _SOFIA | {"lam", "eta", "eta0", "eta_c", "batch_size", "ties"},
    "pa": _SOFIA | {"C"},  # PA-I: C caps the step (default PA_DEFAULT_C); no learning rate, no lambda
    "romma": _SOFIA,  # aggressive ROMMA: no C, no learning rate, no lambda
    "pair-sgd": {"C", "iterations", "valid_file", "t0"},  # Algorithm 2: uniform pairs, step 1/(t + t0)
    "query-sgd": {"C", "iterations", "t0"},  # Algorithm 3: whole queries, step 1/(t + t0)
}


class Words:
    """How messages name the options and the solvers: the command line's words (NAMES), which are
    also those a model file records. A face whose names differ subclasses it and overrides what
    differs (rankkit.estimators.PythonWords); the checks below take one and word every message
    through it."""

    names = NAMES
    kind = "an option"  # what an option is called: "not an option of --solver pa"
    hints = {"query_norm": " (use --sampler query-norm)"}
    remedies = {
        "eta0": "the fixed learning rate is too large for this data: lower --eta0, or use --optimizer backtracking",
        "separable": "aggressive ROMMA assumes pairs a hyperplane can separate: try --solver pa or pegasos",
    }

    def solver(self, name: str) -> str:
        return f"--solver {name}"

    def given(self, key: str, value) -> str:
        """An option with its value, as the caller wrote it."""
        return f"{self.names.get(key, key)} {value}"

    def depends(self, key: str, need: str, allowed, value) -> str:
        """`key` given without `need` (or with a value of it that `key` does not apply to)."""
        names = self.names
        with_ = f"{names[need]} {' or '.join(allowed)}" if allowed else names[need]
        what = f"{names[key]} applies only with {with_}"
        return f"{what}" + (f", not {names[need]} {value}" if value not in (None, False) else "")

    def unknown_loss(self, loss) -> str:
        return f"--loss must be one of {', '.join(LOSSES)}, not {loss!r}"

    def loss_not_offered(self, solver: str, loss: str, offered) -> str:
        return f"--solver {solver} does not offer --loss {loss} (it offers: {', '.join(offered)})"

    def dask_solver(self, solver) -> str:
        return f"--dask trains --solver {DASK_SOLVER} only, not --solver {solver} (see docs/dask.md)"

    def dask_loss(self, loss) -> str:
        return f"--dask trains --loss {', '.join(DASK_LOSSES[:-1])} or {DASK_LOSSES[-1]}, not {loss}"

    def grid(self, solver: str, param: str) -> str:
        """How `rankkit experiment` sets a grid's values of `param` (C, lambda, K, gamma) for `solver`."""
        return f"{param} (--grid {solver}:{param}=...)"


# Options that apply only with another: (the option it needs, the values of it it applies to; None:
# any). One rule for every face: given without what it needs, it is an error, never silently
# ignored (and never recorded in a model). "Given" is on the command line (not a default) or, in
# Python, a value other than the parameter's default.
DEPENDS = {
    "gamma": ("kernel", ("poly", "rbf")),
    "degree": ("kernel", ("poly",)),
    "coef0": ("kernel", ("poly",)),
    "landmarks": ("kernel", None),
    "delta": ("rescale", None),
    "patience": ("valid_file", None),
    "eta_c": ("eta", ("basic",)),
    "plot_kind": ("plot", None),  # rankkit path
    "plot_query": ("plot_kind", ("decision",)),
}


def check_depends(given, values: dict, words: Words | None = None) -> None:
    """Raise a UsageError for the first option in `given` (names of DEPENDS) whose required option
    is missing from `values` or has a value it does not apply to; worded by `words`."""
    words = words or WORDS
    for key in sorted(set(given) & set(DEPENDS), key=list(DEPENDS).index):
        need, allowed = DEPENDS[key]
        value = values.get(need)
        if value is not None and value is not False and (allowed is None or value in allowed):
            continue
        raise UsageError(words.depends(key, need, allowed, value))


def solver_kwargs(spec, params: dict, stochastic: dict | None, query_weights_given: bool,
                  words: Words | None = None) -> dict:
    """The keyword arguments of the chosen solver's class. Every option given (not None, not False)
    that the solver does not use is a UsageError, worded by `words`; C not given is DEFAULT_C."""
    words = words or WORDS
    names = words.names
    solver_word = words.solver(spec.name)
    stochastic = dict(stochastic or {})
    given = {k for k, v in params.items() if k not in ("loss", "delta") and v not in (None, False)}
    given |= {k for k, v in stochastic.items() if k != "seed" and v is not None and v is not False}
    if query_weights_given:
        given.add("query_weights")
    takes = SOLVER_OPTIONS.get(spec.name)
    if takes is None:  # a solver added to the registry without a row here: be strict by kind
        takes = SOLVER_OPTIONS["factorized" if spec.factorized else "sgd" if spec.stochastic else "newton"]
    for key in sorted(given - takes, key=list(NAMES).index):
        users = [name for name, opts in SOLVER_OPTIONS.items() if key in opts]
        raise UsageError(f"{names[key]} is not {words.kind} of {solver_word} (it is for: {', '.join(users)})"
                         f"{words.hints.get(key, '')}")
    eta = stochastic.get("eta")
    if stochastic.get("eta0") is not None and "eta0" in takes and (eta or "pegasos") == "pegasos" and not spec.factorized:
        raise UsageError(f"{names['eta0']} is the scale of {names['eta']} basic or constant; "
                         f"{names['eta']} pegasos is 1/(lambda t)")
    if spec.name in ("margin-perceptron", "perceptron") and stochastic.get("lam") is not None and (eta or "pegasos") != "pegasos":
        raise UsageError(f"{names['lam']} is used by {solver_word} only through {names['eta']} pegasos, "
                         f"not {names['eta']} {eta}")
    C = (PA_DEFAULT_C if spec.name == "pa" else DEFAULT_C) if params.get("C") is None else params["C"]
    if spec.factorized:
        out = {"C": C, "loss": params.get("loss"), "seed": stochastic.get("seed", 0)}
        for key in ("iterations", "eta", "eta0", "K", "init_scale", "patience", "optimizer"):
            if stochastic.get(key) is not None:
                out[key] = stochastic[key]
        if params.get("tol") is not None:
            out["tol"] = params["tol"]
        if "eta" not in out:
            out["eta"] = "constant"
        if out.get("optimizer") == "paper" and out["eta"] != "constant":
            raise UsageError(f"{names['optimizer']} paper has a fixed learning rate (Algorithm 1), not "
                             f"{names['eta']} {out['eta']}")
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


def resolve_solver(solver: str | None, loss: str | None, words: Words | None = None):
    """(spec, loss): the solver named, or the default one of the loss; the loss given, or the
    solver's first. A loss the solver does not offer is a UsageError, worded by `words`."""
    words = words or WORDS
    if loss is not None and loss not in LOSSES:
        raise UsageError(words.unknown_loss(loss))
    if solver is None:
        solver = solver_for(loss or "squared-hinge")
    if solver not in SOLVERS:
        raise UsageError(f"unknown solver {solver!r} (known: {', '.join(SOLVERS)})")
    spec = SOLVERS[solver]
    if loss is None:
        loss = spec.losses[0]
    if loss not in spec.losses:
        raise UsageError(words.loss_not_offered(solver, loss, spec.losses))
    return spec, loss


# -- what a fit on a Dask cluster offers (rankkit.distributed): one solver, its losses, linear models
DASK_SOLVER = "newton"
DASK_LOSSES = SOLVERS[DASK_SOLVER].losses


def check_dask(solver: str | None, loss: str | None, kernel: bool = False, words: Words | None = None) -> str:
    """The loss a fit on a Dask cluster trains (the solver's first when not given). A solver, loss
    or kernel it does not offer is a UsageError, worded by `words`."""
    words = words or WORDS
    if solver not in (None, DASK_SOLVER) or kernel:
        raise UsageError(words.dask_solver(solver))
    loss = loss or DASK_LOSSES[0]
    if loss not in DASK_LOSSES:
        raise UsageError(words.dask_loss(loss))
    return loss


WORDS = Words()


# -- why a solver stopped: the solvers return a code and its numbers (FitResult.stop, .detail); the
# words are made here, once, naming the options through the caller's Words


def stop_message(stop: str, detail: dict, words: Words | None = None, names: dict | None = None) -> str:
    """Why a solver stopped, in words: the option names of `words` (by default the command line's,
    the words model files record as stop_reason; the Python face passes its own); `names` replaces
    its table (a face with other options: `rankkit experiment` sets lambda by --grid and has no
    learning-rate options, None there)."""
    words = words or WORDS
    if names is None:
        names = words.names
    d = detail
    watched = d.get("metric") or "MAP"  # the validation metric early stopping watched (the Python face's eval_metric)
    if stop == "converged":  # the Newton driver's rule
        rel = "<=" if d.get("bound") else "="  # bound: CG's iterate proved it below this figure (H >= I)
        text = f"Newton decrement / objective {rel} {d['ratio']:.3g} < tol {d['tol']:g}"
    elif stop == "gradient":  # nlcg's rule: ||g||^2 >= the Newton decrement, since H >= I
        text = f"|g|^2 / objective = {d['ratio']:.3g} <= tol {d['tol']:g} (so Newton decrement / objective too)"
    elif stop == "zero_gradient":
        text = "gradient is exactly zero"
    elif stop == "max_iter":
        text = f"stopped at {names['max_iter']} {d['max_iter']} " + (
            f"with relative duality gap {d['gap']:.3g}" if "gap" in d else "before the stopping rule was met")
    elif stop == "line_search":
        text = "line search could not decrease the objective (numerical precision reached)"
    elif stop == "duality_gap":  # bundle's rule
        text = f"relative duality gap {d['gap']:.3g} <= tol {d['tol']:g}"
    elif stop == "precision":  # bundle: the lower bound's rounding error above the tolerance
        text = (f"cannot certify the solution: the rounding error of the lower bound ({d['rounding']:.3g}) exceeds "
                f"tol x objective ({d['bound']:.3g}); the features (or {names['C']}) are too large for double "
                "precision: scale the features down")
    elif stop == "early_stop":  # factorized, with a validation set
        text = (f"early stopping: validation {watched} did not improve for {d['patience']} iterations "
                f"({names['patience']})")
    elif stop == "early_stop_checkpoints":  # the stochastic learners watched on an eval set (Python's resume)
        text = (f"early stopping: the first eval set's {watched} did not improve for {d['patience']} checkpoints "
                f"(patience={d['patience']}, a Python parameter); kept the best, {d['best_value']:.4f} at step "
                f"{d['best_iteration']} (stopped at step {d['iterations']})")
    elif stop == "objective_change":  # factorized: Algorithm 1's "until convergence"
        text = (f"relative change of the objective {d['change']:.3g} <= {names['tol']} {d['tol']:g} at iteration "
                f"{d['iteration']}")
    elif stop == "no_descent":
        text = (f"no step along the gradient decreases the objective at iteration {d['iteration']} "
                "(numerical precision reached)")
    elif stop == "iterations":
        text = f"stopped at {names['iterations']} {d['iterations']}: ran out of iterations (no stopping rule was met)"
    elif stop == "budget":  # the stochastic solvers: a fixed number of steps
        text = f"ran {d['iterations']} stochastic steps (a fixed budget: no convergence test)"
    elif stop == "stream_budget":
        text = (f"ran {d['iterations']} stochastic steps in two streaming passes (a fixed budget: no convergence "
                "test); the exact objective needs another pass over the file, not computed")
    elif stop == "diverged":
        remedy = d["remedy"]
        if remedy == "lower_C":
            hint = f"the step size is too large for this data: lower {names['C']}"
        elif remedy == "lambda" and names.get("eta") is None:
            hint = f"the step size is too large for this data: use a larger {names['lam']}"
        elif remedy == "lambda":
            hint = (f"the step size is too large for this data: use a larger {names['lam']}, or {names['eta']} basic "
                    f"with a smaller {names['eta0']}")
        else:
            hint = words.remedies[remedy]
        text = (f"diverged: objective {d['objective']:.6g} after {d['iterations']} steps is above {d['start']:.6g} at "
                f"the start ({hint})")
    else:
        raise ValueError(f"unknown stop code {stop!r}")
    if "best_map" in d:  # factorized with patience: the best validation point was kept
        text += f"; kept the best validation {watched} {d['best_map']:.4f}, at iteration {d['best_iteration']}"
    return text
