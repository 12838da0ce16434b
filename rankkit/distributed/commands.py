"""The CLI's use cases over PARTS: `rankkit train PARTS... MODEL [--dask ADDRESS]`,
`rankkit predict PARTS... MODEL OUT --dask ADDRESS` (or `--out-dir DIR`) and
`rankkit eval PARTS... SCORES --dask ADDRESS`. commands.py only dispatches here; the models are
fitted and described by rankkit.training, the tables shown by rankkit.report."""

from __future__ import annotations

import contextlib
import glob
import os
import time

import numpy as np

from rankkit import metrics as M
from rankkit import training
from rankkit.config import DEFAULT_CONVENTION
from rankkit.report import convention_header, docids, format_label, print_evaluation, short_query_notes
from rankkit.parts.cluster import cluster_failures, connect, watch
from rankkit.parts.newton import fit_parts, parts_sha
from rankkit.io.parts import concatenate, expand_parts, joined_name, refuse_collection
from rankkit.parts.worker import apply_threads, read_part
from rankkit.errors import DataError, UsageError
from rankkit.io.atomic import atomic_open, check_output
from rankkit.io.foreign_models import ForeignModel, load_model
from rankkit.io.model import Model, write_model
from rankkit.io.output import read_scores
from rankkit.io.query_weights import read_query_weights, weights_for
from rankkit.io.svmlight import FileDigest, display_name, read_svmlight
from rankkit.metrics.ties import lexicographic_rank
from rankkit.scoring import model_scores
from rankkit.solvers.options import NAMES, check_dask
from rankkit.evaluation import summarize
from rankkit.io.files import iter_blocks


# options of the stochastic and factorized solvers: a fit on a Dask cluster (solver newton) has none
STOCHASTIC_KEYS = ("lam", "iterations", "eta", "eta0", "batch_size", "K", "init_scale", "patience", "optimizer")


def train_parts(patterns, model_file, dask=None, solver=None, params=None, query_weights_file=None, zero_based=False,
                unsupported=(), stochastic=None, log=None, warn=print):
    """Train on several parts. Solver newton (the default), on a Dask cluster (`dask` an address
    or Client) or in this process: rankkit.parts.newton.fit_parts, the same per-part sums in
    the same order either way, so the same model bytes. Another solver (no --dask): the parts
    joined as if concatenated, then the one-file fit. `unsupported`: the flags given that training
    on parts does not offer (an error naming the first)."""
    t0 = time.perf_counter()
    params = dict(params or {})
    parts = expand_parts(patterns)
    if unsupported:
        where = "--dask" if dask is not None else "several training files"
        raise UsageError(f"{unsupported[0]} is not offered with {where} (see docs/dask.md)")
    check_output(model_file, (*parts, query_weights_file), kind="model")
    stochastic = {k: v for k, v in (stochastic or {}).items() if v is not None}
    if dask is None:
        plan = training.plan(solver, params, stochastic, None, query_weights_file is not None)
        if plan.spec.name != "newton" or len(parts) == 1:  # one part is one file: `rankkit train FILE`'s fit
            return _train_joined(parts, model_file, plan, query_weights_file, zero_based, log, warn, t0)
    else:
        _no_stdin(parts)
        for key in STOCHASTIC_KEYS:
            if key in stochastic:
                raise UsageError(f"{NAMES[key]} is not offered with --dask (it trains --solver newton)")
        loss = check_dask(solver, params.get("loss"))
        plan = training.plan("newton", dict(params, loss=loss))
    model, result, facts = fit_parts(plan, parts, dask, query_weights=query_weights_file, zero_based=zero_based,
                                     log=log, warn=warn)
    write_model(model_file, model)
    if log:
        where = (f"{facts['workers']} workers ({facts['rounds']} rounds, compute {facts['compute_seconds']:.3f}s, "
                 f"communication {facts['communication_seconds']:.3f}s)" if dask is not None
                 else f"in this process ({facts['rounds']} rounds of partial sums)")
        log(f"{'converged' if result.converged else 'NOT converged'} after {result.iterations} iterations: objective "
            f"{result.objective:.12g} on {len(parts)} parts, {where}; wrote {model_file} in "
            f"{time.perf_counter() - t0:.3f}s total")
    return result, facts


def _train_joined(parts, model_file, plan, query_weights_file, zero_based, log, warn, t0):
    """Parts in one process with a solver other than newton (or a single part): read each, join
    them as if concatenated, and fit the options' plan (rankkit.training: the code `rankkit train`
    and the Python API run)."""
    if plan.spec.factorized:
        raise UsageError("--solver factorized trains on one file (its factors are per training document)")
    datasets, shas, nbytes = [], [], 0
    for p in parts:  # each part read as `rankkit train` reads a file (its group file, narrow column indices for
        digest = FileDigest()  # the exact linear solvers), hashed as it streams
        datasets.append(read_svmlight(p, zero_based, digest=digest, narrow_indices=plan.narrow_indices))
        shas.append((p, digest.hexdigest()))
        nbytes += digest.nbytes
    group_files = [ds.group_file for ds in datasets if ds.group_file is not None]
    ds = concatenate(datasets, consume=True)  # grown in place: the data plus one part at the peak, not twice the data
    if log:
        log(f"read {len(parts)} parts: {ds.n_rows} documents, {ds.n_queries} queries, {ds.n_pairs} pairs, "
            f"{ds.n_features} features in {time.perf_counter() - t0:.3f}s")
    ds.require_pairs()
    weights = None
    if query_weights_file is not None:
        weights = weights_for(ds, read_query_weights(query_weights_file), query_weights_file)
    facts = {"query_weights_file": display_name(query_weights_file)} if query_weights_file is not None else {}
    if group_files:  # the group files that numbered the parts' queries, as on a cluster
        facts["group_file"] = joined_name(group_files)
    facts.update({"index_base": 0 if zero_based else 1, "group_queries": False, "auc": False,
                  "train_file": joined_name(parts), "train_file_bytes": nbytes, "parts_sha256": parts_sha(shas),
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
    released once read (the client holds one part's result at a time). Bounded waits, tasks
    submitted again when their workers are lost (rankkit.parts.cluster.Watch)."""
    items = list(items)
    yield from watch(client).ordered(lambda k, live: client.submit(fn, items[k], *args, pure=False), len(items))


def predict_parts(patterns, model_file, out_file=None, out_dir=None, dask=None, zero_based=None, fmt="scores",
                  model_format=None, log=None):
    """Scores of every part: one file in part order (OUT), or one file per part in OUT_DIR
    (named after the part, .scores appended). Computed on the workers, written here part by part."""
    if fmt != "scores":
        raise UsageError("predict over parts writes --format scores only (one score per line, in part order)")
    if (out_file is None) == (out_dir is None):
        raise UsageError("give OUT (one file, in part order) or --out-dir DIR (one file per part), not both")
    parts = expand_parts(patterns)
    _no_stdin(parts)
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
    with _mapper(dask, log) as each:  # on the cluster, or (dask None) in this process part by part: the same bytes
        results = each(_score_part, parts, model, base0)
        if out_dir is None:
            with atomic_open(out_file) as fh:
                for scores in results:
                    _write_score_lines(fh, scores)
                    n += scores.shape[0]
        else:  # all or nothing: each part's file staged complete, all put in place only once every part is
            staged = []
            try:
                for o, scores in zip(outs, results):
                    stage = os.path.join(os.path.dirname(o) or ".", f".{os.path.basename(o)}.rankkit-staged")
                    staged.append(stage)
                    with atomic_open(stage) as fh:
                        _write_score_lines(fh, scores)
                    n += scores.shape[0]
            except BaseException:
                for stage in staged:
                    with contextlib.suppress(OSError):
                        os.unlink(stage)
                raise
            for stage, o in zip(staged, outs):
                os.replace(stage, o)
    if log:
        log(f"scored {n} documents in {len(parts)} parts with {model_file} in {time.perf_counter() - t0:.3f}s")


def _eval_part(item, names, convention, empty_query, zero_based):
    """On a worker: the per-query metric tables of one part, one per system (its slice of each
    SCORES file)."""
    apply_threads()
    path, slices, line_offset = item
    ds = read_part(path, zero_based=zero_based)
    # trec_eval's ties: by docid, a line without `# docid` numbered as in the parts' concatenation
    # (the file `rankkit eval` and rankkit.evaluate see as one)
    tiebreak = lexicographic_rank(docids(ds, line_offset)) if convention == "trec" else None
    tables = []
    for scores in slices:
        try:
            tables.append(M.per_query_table(names, ds.y, scores, ds.qptr, convention, tiebreak=tiebreak,
                                            empty_query=empty_query))
        except M.GainOverflow as exc:
            raise DataError(display_name(path), f"label '{format_label(exc.label)}' {exc.reason}",
                            int(ds.line[exc.row])) from None
    qids = [str(q) for q in ds.qid[ds.qptr[:-1]].tolist()] if ds.has_qid else ["1"]
    return qids, tables, ds.n_rows, np.diff(ds.qptr)


def _count_part(path, zero_based, lines=False):
    """The part's documents, and with `lines` its lines (a last line without a newline counts)."""
    apply_threads()
    n_rows = read_part(path, zero_based=zero_based).n_rows
    if not lines:
        return n_rows, 0
    count, last = 0, b"\n"
    for block in iter_blocks(path):
        count += bytes(block).count(b"\n")
        last = bytes(block[-1:]) or last
    return n_rows, count + (last != b"\n")


def looks_like_scores(path: str) -> bool:
    """A file whose first line is one number (a SCORES file), not a line of SVMlight data (which
    always has a `qid:` or `index:value` field)."""
    if path == "-" or not os.path.isfile(path):  # a glob, a URL, standard input: PARTS, never SCORES
        return False
    blocks = iter_blocks(path, 1 << 16)
    try:
        head = next(blocks, b"")
    except (DataError, ValueError, OSError):
        return False
    finally:
        blocks.close()
    for line in bytes(head).splitlines()[:-1] or bytes(head).splitlines():
        fields = line.split()
        if fields:
            try:
                float(fields[0])
            except ValueError:
                return False
            return len(fields) == 1
    return False


def eval_parts_given(files) -> bool:
    """`eval FILES...` without --dask names PARTS... SCORES... (evaluated part by part in this
    process, as on a cluster) rather than DATA SCORES...: two or more data files before the SCORES
    files (told apart by their content, as with --dask), or DATA a glob naming no file itself."""
    files = [str(f) for f in files]
    if len(files) < 2:
        return False
    data = list(files[:-1])
    while data and (data[-1] == "-" or looks_like_scores(data[-1])):  # standard input is never a part
        data.pop()
    return len(data) > 1 or (len(data) == 1 and data[0] != "-" and glob.has_magic(data[0])
                             and not os.path.exists(data[0]))


def split_scores(patterns, scores_file) -> tuple[list, list]:
    """`eval PARTS... SCORES... --dask`: (PARTS, SCORES files). The last argument is SCORES; the
    arguments before it that are SCORES files too (by their content: one number per line) are
    the other systems, compared with the first; at least one PART is left."""
    patterns = [str(p) for p in patterns]
    scores = [scores_file] if isinstance(scores_file, (str, os.PathLike)) else [str(s) for s in scores_file]
    while len(patterns) > 1 and looks_like_scores(patterns[-1]):
        scores.insert(0, patterns.pop())
    if not patterns:
        raise UsageError("eval over parts needs PARTS... SCORES...")
    if looks_like_scores(patterns[-1]):
        raise UsageError(f"{patterns[-1]} holds scores, not data: eval over parts needs PARTS... before the SCORES files")
    return patterns, [str(s) for s in scores]


def eval_parts(patterns, scores_file, dask=None, metrics=None, convention=DEFAULT_CONVENTION, empty_query=None, fmt="table",
               per_query=False, zero_based=False, echo=print, log=None, test="randomization", permutations=10_000,
               seed=0):
    """`rankkit eval PARTS... SCORES... --dask`: each SCORES file holds the scores of all the parts
    in part order (as `predict PARTS... --dask` writes it); the metrics are computed on the workers,
    per part, and averaged here over all the queries; several SCORES files are compared side by
    side with the paired test of one-process `rankkit eval` (test, permutations, seed). SCORES
    files given among the PARTS are recognised by their content (split_scores). A query in two
    parts is an error."""
    names = tuple(metrics) if metrics else M.DEFAULT_METRICS
    for m in names:
        M.parse_metric(m)
    patterns, scores_files = split_scores(patterns, scores_file)
    parts = expand_parts(patterns)
    _no_stdin(parts)
    all_scores = [read_scores(f) for f in scores_files]
    qids, tables, n_rows, lengths = _eval_tables(parts, all_scores, scores_files, dask, names, convention, empty_query,
                                                 zero_based, log)
    systems = [(display_name(f), qids, tables[i]) for i, f in enumerate(scores_files)]
    means, pvalues = summarize(systems, names, test, permutations, seed)
    header = convention_header(convention, log)
    if len(systems) > 1:
        what = f"{permutations} permutations, seed {seed}" if test == "randomization" else "two-sided"
        header += f"\nsignificance: paired {test} test ({what}) of each system against {systems[0][0]}"
    described = f"{len(qids)} queries, {n_rows} documents in {len(parts)} parts ({parts[0]} ...)"
    described += short_query_notes(names, convention, np.concatenate(lengths))
    print_evaluation(echo, fmt, names, systems, means, pvalues, per_query, header, described, convention)
    return means[0] if len(means) == 1 else means


def _eval_tables(parts, all_scores, scores_names, dask, names, convention, empty_query, zero_based, log):
    """The per-query tables of each system over the parts: (query ids as text, [{metric: values}
    per system], documents, documents per query). On the cluster, or here (dask None)."""
    qids, lengths, tables, n_rows = [], [], [], 0
    with _mapper(dask, log) as each:
        counted = list(each(_count_part, parts, zero_based, convention == "trec" and len(parts) > 1))
        counts = [n for n, _ in counted]
        line_offsets = np.cumsum([0] + [n for _, n in counted[:-1]]).tolist()
        total = sum(counts)
        for f, scores in zip(scores_names, all_scores):
            if scores.shape[0] != total:
                raise DataError(display_name(f), f"has {scores.shape[0]} scores but the {len(parts)} parts have "
                                f"{total} documents")
        starts = np.cumsum([0] + counts)
        items = [(p, [s[starts[k]:starts[k + 1]] for s in all_scores], line_offsets[k]) for k, p in enumerate(parts)]
        for out in each(_eval_part, items, names, convention, empty_query, zero_based):
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
    merged = [{m: np.concatenate([t[i][m] for t in tables]) for m in names} for i in range(len(all_scores))]
    return qids, merged, n_rows, lengths


@contextlib.contextmanager
def _mapper(dask, log):
    """each(fn, items, *args): fn(item, *args) for every item, in item order: on the cluster
    (`dask` an address or Client), or in this process one item at a time (dask None)."""
    if dask is None:
        yield lambda fn, items, *args: (fn(it, *args) for it in items)
        return
    with connect(dask, log=log) as client, cluster_failures():
        yield lambda fn, items, *args: _ordered(client, fn, items, *args)


def score_parts(patterns, model, dask=None, zero_based=None, log=None) -> np.ndarray:
    """The Python face of `predict PARTS... --dask`: the scores of every document of the parts in
    part order (each part's documents in file order), as one array. `model`: a fitted estimator,
    a Model (or a foreign model), or a model file's path."""
    refuse_collection(patterns, "parts", "rankkit.dask.DaskRankSVM(...).predict(X): a lazy dask array of scores")
    parts = expand_parts([patterns] if isinstance(patterns, (str, os.PathLike)) else patterns)
    if dask is not None:
        _no_stdin(parts)
    model = getattr(model, "model_", model)
    if isinstance(model, (str, os.PathLike)):
        model = load_model(os.fspath(model))
    if not hasattr(model, "n_features"):
        raise UsageError(f"model: a fitted rankkit estimator, a model or a model file's path, not {type(model).__name__}")
    if isinstance(model, ForeignModel) and zero_based:
        raise UsageError(f"zero_based: a {model.format} model numbers features from 1, like {model.format} itself")
    base0 = model.zero_based if zero_based is None else zero_based
    with _mapper(dask, log) as each:
        out = list(each(_score_part, parts, model, base0))
    return np.concatenate(out) if out else np.zeros(0)


def evaluate_over_parts(patterns, scores, dask=None, metrics=None, convention=DEFAULT_CONVENTION, per_query=False,
                        empty_query=None, zero_based=False, log=None):
    """The Python face of `eval PARTS... SCORES --dask`: {metric: mean over the queries} (and,
    with per_query, {"qid": ..., metric: per-query values}) of `scores` (an array of every
    document's score in part order, or a SCORES file's path) against the parts' labels, as
    rankkit.evaluate computes them on the same data in one file."""
    names = (metrics,) if isinstance(metrics, str) else (tuple(metrics) if metrics else M.DEFAULT_METRICS)
    for m in names:
        M.parse_metric(m)
    refuse_collection(patterns, "parts", "rankkit.dask.evaluate(y, scores, qid) for dask collections")
    refuse_collection(scores, "scores", "rankkit.dask.evaluate(y, scores, qid) for dask collections")
    parts = expand_parts([patterns] if isinstance(patterns, (str, os.PathLike)) else patterns)
    if dask is not None:
        _no_stdin(parts)
    if isinstance(scores, (str, os.PathLike)):
        label, values = display_name(os.fspath(scores)), read_scores(os.fspath(scores))
    else:
        label, values = "scores", np.asarray(scores, dtype=np.float64).ravel()
    qids, tables, _, _ = _eval_tables(parts, [values], [label], dask, names, convention, empty_query, zero_based, log)
    (means,), _ = summarize([(label, qids, tables[0])], names)
    if not per_query:
        return means
    each = {"qid": np.array([int(q) for q in qids], dtype=np.int64), **tables[0]}
    return means, each


def _no_stdin(parts) -> None:
    """Standard input cannot be a part on a cluster: refused before any cluster is started."""
    if "-" in parts:
        raise UsageError("standard input (-) cannot be a part with --dask (the workers cannot read it): "
                         "give a file or URL the workers can read")
