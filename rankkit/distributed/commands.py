"""The CLI's use cases over PARTS: `rankkit train PARTS... MODEL [--dask ADDRESS]`,
`rankkit predict PARTS... MODEL OUT --dask ADDRESS` (or `--out-dir DIR`) and
`rankkit eval PARTS... SCORES --dask ADDRESS`. commands.py only dispatches here; the models are
fitted and described by rankkit.training, the tables shown by rankkit.app.report."""

from __future__ import annotations

import hashlib
import os
import time

import numpy as np

from rankkit import metrics as M
from rankkit import training
from rankkit.config import DEFAULT_CONVENTION
from rankkit.app.report import docids, format_label, print_evaluation, short_query_notes
from rankkit.distributed.cluster import ClusterError, cluster_failures, connect, describe_failure, is_cluster_failure
from rankkit.distributed.newton import fit_newton
from rankkit.distributed.parts import concatenate, expand_parts, joined_name
from rankkit.distributed.worker import apply_threads, read_part
from rankkit.errors import DataError, UsageError
from rankkit.io.atomic import atomic_open, check_output
from rankkit.io.foreign_models import ForeignModel, load_model
from rankkit.io.model import Model, write_model
from rankkit.io.output import read_scores
from rankkit.io.query_weights import read_query_weights, weights_for
from rankkit.io.svmlight import FileDigest, display_name, read_svmlight
from rankkit.io.trec import lexicographic_rank
from rankkit.scoring import model_scores
from rankkit.solvers.options import CLI_NAMES, check_dask


def _parts_sha(facts) -> str:
    """SHA-256 of the parts' own SHA-256s (one `sha256  name` line each, in part order)."""
    h = hashlib.sha256()
    for name, sha in facts:
        h.update(f"{sha}  {name}\n".encode())
    return h.hexdigest()


# options of the stochastic and factorized solvers: a fit on a Dask cluster (solver newton) has none
STOCHASTIC_KEYS = ("lam", "iterations", "eta", "eta0", "batch_size", "K", "init_scale", "patience")


def train_parts(patterns, model_file, dask=None, solver=None, params=None, query_weights_file=None, zero_based=False,
                unsupported=(), stochastic=None, log=None, warn=print):
    """Train on several parts: on a Dask cluster (`dask` an address or Client), or without it in
    this process on the parts joined as if concatenated. `unsupported`: the flags given that
    training on parts does not offer (an error naming the first)."""
    t0 = time.perf_counter()
    params = dict(params or {})
    parts = expand_parts(patterns)
    if unsupported:
        where = "--dask" if dask is not None else "several training files"
        raise UsageError(f"{unsupported[0]} is not offered with {where} (see README: Distributed training)")
    check_output(model_file, (*parts, query_weights_file), kind="model")
    stochastic = {k: v for k, v in (stochastic or {}).items() if v is not None}
    if dask is None:
        return _train_joined(parts, model_file, solver, params, stochastic, query_weights_file, zero_based, log, warn, t0)
    for key in STOCHASTIC_KEYS:
        if key in stochastic:
            raise UsageError(f"{CLI_NAMES[key]} is not offered with --dask (it trains --solver newton)")
    loss = check_dask(solver, params.get("loss"))
    settings = training.plan("newton", dict(params, loss=loss)).solver().hyperparameters()  # C, tol, max_iter, ...
    qw = None
    if query_weights_file is not None:  # read here once to report a bad file before the cluster starts
        read_query_weights(query_weights_file)
        qw = os.path.abspath(query_weights_file)
    result, facts = fit_newton(parts, dask, C=settings["C"], loss=loss, tol=settings["tol"],
                               max_iter=settings["max_iter"], query_norm=settings["query_norm"],
                               rescale=settings.get("rescale"), delta=settings.get("delta", "gain"), query_weights=qw,
                               zero_based=zero_based, log=log)
    if training.needs_warning(result):
        warn(training.stop_words(result, "cli"))
    data = {"query_weights_file": display_name(query_weights_file)} if query_weights_file is not None else {}
    files = facts["part_files"]
    group_files = [f["group_file"] for f in files if f["group_file"] is not None]
    if group_files:  # the group files that numbered the parts' queries, as one process records its own
        data["group_file"] = joined_name(group_files)
    data.update({
        "index_base": 0 if zero_based else 1, "group_queries": False, "auc": False, "n_features": facts["n_features"],
        "train_file": joined_name(parts), "train_file_bytes": sum(f["bytes"] for f in files),
        "parts_sha256": _parts_sha([(p, f["sha256"]) for p, f in zip(parts, files)]),
        "n_queries": facts["n_queries"], "n_documents": facts["n_documents"], "n_pairs": facts["n_pairs"]})
    header = training.model_header("newton", loss, settings, data, training.fit_outcome(result),
                                   training.cluster_facts(facts), result.train_time)
    write_model(model_file, Model(weights=result.w, header=header))
    if log:
        log(f"{'converged' if result.converged else 'NOT converged'} after {result.iterations} iterations: objective "
            f"{result.objective:.12g} on {len(parts)} parts, {facts['workers']} workers ({facts['rounds']} rounds, "
            f"compute {facts['compute_seconds']:.3f}s, communication {facts['communication_seconds']:.3f}s); wrote "
            f"{model_file} in {time.perf_counter() - t0:.3f}s total")
    return result, facts


def _train_joined(parts, model_file, solver, params, stochastic, query_weights_file, zero_based, log, warn, t0):
    """Several parts, one process: read each, join them as if concatenated, and fit the options'
    plan (rankkit.training: the code `rankkit train` and the Python API run)."""
    plan = training.plan(solver, params, stochastic, None, query_weights_file is not None)
    if plan.spec.factorized:
        raise UsageError("--solver factorized trains on one file (its factors are per training document)")
    datasets, shas, nbytes = [], [], 0
    for p in parts:  # each part read as `rankkit train` reads a file (its group file too), hashed as it streams
        digest = FileDigest()
        datasets.append(read_svmlight(p, zero_based, digest=digest))
        shas.append((p, digest.hexdigest()))
        nbytes += digest.nbytes
    ds = concatenate(datasets)
    del datasets
    if log:
        log(f"read {len(parts)} parts: {ds.n_rows} documents, {ds.n_queries} queries, {ds.n_pairs} pairs, "
            f"{ds.n_features} features in {time.perf_counter() - t0:.3f}s")
    ds.require_pairs()
    weights = None
    if query_weights_file is not None:
        weights = weights_for(ds, read_query_weights(query_weights_file), query_weights_file)
    facts = {"query_weights_file": display_name(query_weights_file)} if query_weights_file is not None else {}
    facts.update({"index_base": 0 if zero_based else 1, "group_queries": False, "auc": False,
                  "train_file": joined_name(parts), "train_file_bytes": nbytes, "parts_sha256": _parts_sha(shas),
                  "parts": len(parts), "workers": 1})
    model, result = training.fit_dataset(plan, ds, query_weights=weights, log=log, warn=warn, facts=facts)
    write_model(model_file, model)
    if log:
        log(f"{'converged' if result.converged else 'NOT converged'} after {result.iterations} iterations: objective "
            f"{result.objective:.12g}; wrote {model_file} in {time.perf_counter() - t0:.3f}s total")
    return result, {"parts": len(parts), "workers": 1}


# -- predict and eval: a map over the parts ------------------------------------------------------
def _score_part(path, model, zero_based):
    """On a worker: the part's scores under the model (input order), as `rankkit predict` computes them."""
    apply_threads()
    ds = read_part(path, zero_based=zero_based, labels_optional=True)
    scores, _ = model_scores(model, ds)
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise DataError(display_name(path), f"the score of this document is {float(scores[bad[0]])!r} ({bad.size} such): "
                        "its feature values are too large for the model's weights", int(ds.line[bad[0]]))
    return scores


def _write_score_lines(fh, scores) -> None:
    values = scores.tolist()
    for start in range(0, len(values), 1 << 16):
        fh.write("\n".join(["%.17g" % v for v in values[start:start + (1 << 16)]]))
        fh.write("\n")


def _ordered(client, fn, items, *args):
    """fn(item, *args) on the cluster for every item; yields the results in item order, each
    released once read (the client holds one part's result at a time)."""
    futures = [client.submit(fn, it, *args, pure=False) for it in items]
    try:
        for f in futures:
            try:
                out = f.result()
            except Exception as exc:
                if isinstance(exc, (DataError, UsageError)) or not is_cluster_failure(exc):
                    raise
                raise ClusterError(f"the Dask cluster failed during the run ({describe_failure(exc)}); no output written") from None
            f.release()
            yield out
    finally:
        for f in futures:
            f.release()


def predict_parts(patterns, model_file, out_file=None, out_dir=None, dask=None, zero_based=None, fmt="scores",
                  model_format=None, log=None):
    """Scores of every part: one file in part order (OUT), or one file per part in OUT_DIR
    (named after the part, .scores appended). Computed on the workers, written here part by part."""
    if fmt != "scores":
        raise UsageError("predict over parts writes --format scores only (one score per line, in part order)")
    if (out_file is None) == (out_dir is None):
        raise UsageError("give OUT (one file, in part order) or --out-dir DIR (one file per part), not both")
    parts = expand_parts(patterns)
    outs = []
    if out_dir is not None:
        if not os.path.isdir(out_dir):
            raise UsageError(f"--out-dir {out_dir}: no such directory")
        names = [os.path.basename(p) + ".scores" for p in parts]
        if len(set(names)) != len(names):
            raise UsageError("two parts have the same file name: --out-dir cannot name their score files apart")
        outs = [os.path.join(out_dir, n) for n in names]
        for o in outs:
            check_output(o, (*parts, model_file), kind="scores")
    else:
        check_output(out_file, (*parts, model_file), kind="scores")
    model = load_model(model_file, model_format)
    if isinstance(model, ForeignModel) and zero_based:
        raise UsageError(f"--zero-based: a {model.format} model numbers features from 1, like {model.format} itself")
    base0 = model.zero_based if zero_based is None else zero_based
    t0 = time.perf_counter()
    n = 0
    with connect(dask, log=log) as client, cluster_failures():
        results = _ordered(client, _score_part, parts, model, base0)
        if out_dir is None:
            with atomic_open(out_file) as fh:
                for scores in results:
                    _write_score_lines(fh, scores)
                    n += scores.shape[0]
        else:
            for o, scores in zip(outs, results):
                with atomic_open(o) as fh:
                    _write_score_lines(fh, scores)
                n += scores.shape[0]
    if log:
        log(f"scored {n} documents in {len(parts)} parts with {model_file} in {time.perf_counter() - t0:.3f}s")


def _eval_part(item, names, convention, empty_query, zero_based):
    """On a worker: the per-query metric table of one part under its slice of the scores."""
    apply_threads()
    path, scores = item
    ds = read_part(path, zero_based=zero_based)
    if scores.shape[0] != ds.n_rows:
        return ("count", ds.n_rows)
    tiebreak = lexicographic_rank(docids(ds)) if convention == "trec" else None
    try:
        table = M.per_query_table(names, ds.y, scores, ds.qptr, convention, tiebreak=tiebreak, empty_query=empty_query)
    except M.GainOverflow as exc:
        raise DataError(display_name(path), f"label '{format_label(exc.label)}' {exc.reason}", int(ds.line[exc.row])) from None
    qids = [str(q) for q in ds.qid[ds.qptr[:-1]].tolist()] if ds.has_qid else ["1"]
    return qids, table, ds.n_rows, np.diff(ds.qptr)


def _count_part(path, zero_based):
    apply_threads()
    return read_part(path, zero_based=zero_based).n_rows


def eval_parts(patterns, scores_file, dask=None, metrics=None, convention=DEFAULT_CONVENTION, empty_query=None, fmt="table",
               per_query=False, zero_based=False, echo=print, log=None):
    """`rankkit eval PARTS... SCORES --dask`: SCORES holds the scores of all the parts in part
    order (as `predict PARTS... --dask` writes it); the metrics are computed on the workers, per
    part, and averaged here over all the queries. A query in two parts is an error."""
    names = tuple(metrics) if metrics else M.DEFAULT_METRICS
    for m in names:
        M.parse_metric(m)
    parts = expand_parts(patterns)
    scores = read_scores(scores_file)
    qids, lengths, tables, n_rows = [], [], [], 0
    with connect(dask, log=log) as client, cluster_failures():
        counts = list(_ordered(client, _count_part, parts, zero_based))
        total = sum(counts)
        if scores.shape[0] != total:
            raise DataError(display_name(scores_file), f"has {scores.shape[0]} scores but the {len(parts)} parts have "
                            f"{total} documents")
        starts = np.cumsum([0] + counts)
        items = [(p, scores[starts[k]:starts[k + 1]]) for k, p in enumerate(parts)]
        for out in _ordered(client, _eval_part, items, names, convention, empty_query, zero_based):
            q, table, n, ln = out
            qids.extend(q)
            tables.append(table)
            lengths.append(ln)
            n_rows += n
    seen = {}
    owner = np.repeat(np.arange(len(parts)), [ln.shape[0] for ln in lengths])
    for q, k in zip(qids, owner.tolist()):
        if q in seen and seen[q] != k:
            raise DataError(display_name(parts[k]), f"qid {q} is also in the part {parts[seen[q]]}: a query split "
                            "across parts (each query must be whole in one part)")
        seen[q] = k
    table = {m: np.concatenate([t[m] for t in tables]) for m in names}
    systems = [(display_name(scores_file), qids, table)]
    means = [{m: float(np.nanmean(table[m])) if np.any(~np.isnan(table[m])) else float("nan") for m in names}]
    header = f"convention {convention}: {M.describe(convention)}"
    described = f"{len(qids)} queries, {n_rows} documents in {len(parts)} parts ({parts[0]} ...)"
    described += short_query_notes(names, convention, np.concatenate(lengths))
    print_evaluation(echo, fmt, names, systems, means, [None], per_query, header, described, convention)
    return means[0]
