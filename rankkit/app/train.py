"""`rankkit train` on one file: check the options and the output, read, fit (rankkit.training),
write the model. Several files or --dask: rankkit.distributed.commands."""

from __future__ import annotations

import time
from typing import Callable


from rankkit import training
from rankkit.compiler.dispatch import compile_seconds
from rankkit.errors import DataError, UsageError
from rankkit.io.atomic import atomic_open, check_output
from rankkit.io.files import looks_like
from rankkit.io.groups import resolve
from rankkit.io.model import write_model
from rankkit.io.query_weights import read_query_weights, weights_for
from rankkit.io.svmlight import FileDigest, display_name, read_svmlight
from rankkit.solvers import SOLVERS

Log = Callable[[str], None] | None


def train(train_file, model_file, solver, params, zero_based=False, group_queries=False, log: Log = None, warn=print,
          query_weights_file=None, auc=False, kernel=None, stochastic=None, progress=None, group_file="auto"):
    """`rankkit train`: check the options and the output, read the files, fit (rankkit.training:
the code the Python estimators run), write the model with the files' facts in its header."""
    t0 = time.perf_counter()
    c0 = compile_seconds()
    stochastic = dict(stochastic or {})
    groups = resolve(train_file, group_file)  # LightGBM's FILE.query / XGBoost's FILE.group, or --group
    inputs = (train_file, stochastic.get("valid_file"), query_weights_file, groups and groups.source)
    if looks_like(model_file) == "svmlight" and looks_like(train_file) == "model":  # svm_rank's order is ours
        raise DataError(display_name(train_file), f"is a model file and {display_name(model_file)} a data file: "
                        f"train takes TRAIN MODEL: `rankkit train {model_file} {train_file}`")
    check_output(model_file, inputs, kind="model")  # fail now, not after training
    check_output(stochastic.get("save_factors"), inputs, outputs=(model_file,))
    if stochastic.get("sampler") == "stream":
        return _train_stream(train_file, model_file, solver, params, stochastic, zero_based, group_queries, log,
                             query_weights_file, auc, kernel, t0, groups)
    plan = training.plan(solver, params, stochastic, kernel, query_weights_file is not None)  # before any reading
    name = display_name(train_file)
    # perf: read_svmlight streams a large file in blocks and hashes it as it goes (no whole buffer
    # kept), and gives the exact linear solvers uint16 column indices when the columns fit (and the
    # stochastic pairwise ones int32 decimal codes for values when every value is exactly one).
    # A stochastic solver's steps are serial: its file is hashed during the fit, on the core the
    # steps leave idle (FileDigest(later=True)), and the model's header gets the checksum after it
    checksum = FileDigest(later=plan.spec.stochastic)
    ds = read_svmlight(train_file, zero_based, group_queries, groups=groups, digest=checksum,
                       narrow_indices=plan.narrow_indices, narrow_values=plan.narrow_values)
    if groups is not None and log:
        log(groups.describe(name))
    t_read = time.perf_counter() - t0
    compiled = compile_seconds() - c0  # the reader's kernels compiled now (none after `make`)
    if log:
        log(
            f"read {name}: {ds.n_rows} documents, {ds.n_queries} queries, {ds.n_pairs} pairs, "
            f"{ds.n_features} features, {ds.nnz} non-zeros in {t_read - compiled:.3f}s"
            + (f" (and {compiled:.3f}s compiling kernels)" if compiled > 0.0 else "")
        )
    if auc:
        ds = ds.as_one_query()
    ds.require_pairs()
    valid = None
    if stochastic.get("valid_file") is not None:
        valid = read_svmlight(stochastic["valid_file"], zero_based=zero_based, group_queries=group_queries, log=log)
    weights = None
    if query_weights_file is not None:
        weights = weights_for(ds, read_query_weights(query_weights_file), query_weights_file)
    factors_file = stochastic.get("save_factors")
    facts = {"query_weights_file": display_name(query_weights_file)} if query_weights_file is not None else {}
    if groups is not None:
        facts["group_file"] = groups.source
    facts.update({"index_base": 0 if zero_based else 1, "group_queries": bool(group_queries), "auc": bool(auc),
                  "train_file": name, "train_file_bytes": None, "train_file_sha256": None})  # after the fit
    if factors_file is not None:
        facts["factors_file"] = factors_file
    model, result = training.fit_dataset(plan, ds, valid=valid, query_weights=weights, log=log, progress=progress,
                                         warn=warn, facts=facts, run_facts={"read_time_seconds": round(t_read - compiled, 6)})
    # in their places of the header (a file changed since it was parsed: DataError, no model)
    model.header.update({"train_file_bytes": checksum.nbytes, "train_file_sha256": checksum.hexdigest()})
    if factors_file is not None and result.factors is not None:
        with atomic_open(factors_file) as fh:  # V: one training document per line, K values
            for row in result.factors.tolist():
                fh.write(" ".join("%.17g" % v for v in row) + "\n")
    write_model(model_file, model)
    if log:
        log(
            f"{'converged' if result.converged else 'NOT converged'} after {result.iterations} iterations: "
            f"objective {result.objective:.12g}, {result.n_active} violated pairs; "
            f"wrote {model_file} in {time.perf_counter() - t0:.3f}s total"
            + (f", {compile_seconds() - c0:.3f}s of it compiling kernels" if compile_seconds() > c0 else "")
        )
    return result


def _train_stream(train_file, model_file, solver, params, stochastic, zero_based, group_queries, log,
                  query_weights_file, auc, kernel, t0, groups=None):
    """--sampler stream: two streaming passes over the file, never holding it (rankkit.solvers.stream)."""
    if solver is None:
        raise UsageError("--sampler is for the stochastic solvers: add --solver pegasos (or sgd, pa, ...)")
    spec = SOLVERS[solver]
    if not spec.stochastic:
        raise UsageError(f"--sampler is for the stochastic solvers, not --solver {spec.name}")
    for flag, given in (("--auc", auc), ("--kernel", kernel is not None), ("--group-queries", group_queries),
                        ("--valid", (stochastic or {}).get("valid_file") is not None)):
        if given:
            raise UsageError(f"{flag} does not work with --sampler stream")
    if params.get("loss") is None:
        params = dict(params, loss=spec.losses[0])
    if params["loss"] not in spec.losses:
        raise UsageError(f"--solver {spec.name} does not offer --loss {params['loss']}")
    plan = training.plan(solver, params, stochastic, None, query_weights_file is not None)
    if groups is not None and log:
        log(groups.describe(display_name(train_file)))
    model, result = training.fit_stream(plan, train_file, index_base=0 if zero_based else 1,
                                        train_file=display_name(train_file), log=log, groups=groups)
    write_model(model_file, model)
    if log:
        log(f"ran {result.iterations} steps in two streaming passes; wrote {model_file} in "
            f"{time.perf_counter() - t0:.3f}s total")
    return None
