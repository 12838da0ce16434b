"""What each subcommand does, as plain functions of plain arguments (the CLI only parses options).

Imported lazily by cli.py, so numpy and numba load only when a command runs.
"""

from __future__ import annotations

import glob
import multiprocessing
import os
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, process
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

import numpy as np

from rankkit import console, threads, training
from rankkit import metrics as M
from rankkit.app.report import aligned, docids, format_label, print_evaluation, query_names, short_query_notes
from rankkit.config import __version__
from rankkit.distributed import commands as parts
from rankkit.distributed.path import path_one
from rankkit.errors import DataError, UsageError
from rankkit.evaluation import summarize
from rankkit.io.atomic import atomic_open, check_output
from rankkit.io.foreign_models import TOOL, ForeignModel, foreign_text, holds_format, linear_view, load_model
from rankkit.io.groups import resolve
from rankkit.io.model import Model, write_model
from rankkit.io.output import read_scores, write_scores
from rankkit.io.query_weights import read_query_weights, weights_for
from rankkit.io.svmlight import FileDigest, display_name, read_svmlight
from rankkit.io.trec import lexicographic_rank, read_qrels, read_trec_run, run_against_qrels, skipped_queries, utf8
from rankkit.io.trec import write_trec_run
from rankkit.metrics import parse_metric, per_query
from rankkit.paths.grid import (fixed_c_folds, fixed_c_model_name, fold_dirs, validation_metric, write_exact_table,
                                write_fixed_c_table, write_table)
from rankkit.paths.select import chosen_model, path_on_datasets
from rankkit.plot import check_plot_target, write_plot
from rankkit.scoring import model_scores
from rankkit.solvers import SOLVERS

Log = Callable[[str], None] | None

_docids, _aligned = docids, aligned  # the names some tests still import (now rankkit.app.report's)


def train(train_file, model_file, solver, params, zero_based=False, group_queries=False, log: Log = None, warn=print,
          query_weights_file=None, auc=False, kernel=None, stochastic=None, progress=None, group_file="auto"):
    """`rankkit train`: check the options and the output, read the files, fit (rankkit.training:
the code the Python estimators run), write the model with the files' facts in its header."""
    t0 = time.perf_counter()
    stochastic = dict(stochastic or {})
    groups = resolve(train_file, group_file)  # LightGBM's FILE.query / XGBoost's FILE.group, or --group
    inputs = (train_file, stochastic.get("valid_file"), query_weights_file, groups and groups.source)
    check_output(model_file, inputs, kind="model")  # fail now, not after training
    check_output(stochastic.get("save_factors"), inputs, outputs=(model_file,))
    if stochastic.get("sampler") == "stream":
        return _train_stream(train_file, model_file, solver, params, stochastic, zero_based, group_queries, log,
                             query_weights_file, auc, kernel, t0, groups)
    plan = training.plan(solver, params, stochastic, kernel, query_weights_file is not None)  # before any reading
    name = display_name(train_file)
    # perf: read_svmlight streams a large file in blocks and hashes it as it goes (no whole buffer
    # kept), and gives the exact linear solvers uint16 column indices when the columns fit
    checksum = FileDigest()
    ds = read_svmlight(train_file, zero_based, group_queries, groups=groups, digest=checksum,
                       narrow_indices=plan.narrow_indices)
    if groups is not None and log:
        log(groups.describe(name))
    t_read = time.perf_counter() - t0
    if log:
        log(
            f"read {name}: {ds.n_rows} documents, {ds.n_queries} queries, {ds.n_pairs} pairs, "
            f"{ds.n_features} features, {ds.nnz} non-zeros in {t_read:.3f}s"
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
                  "train_file": name, "train_file_bytes": checksum.nbytes, "train_file_sha256": checksum.hexdigest()})
    if factors_file is not None:
        facts["factors_file"] = factors_file
    model, result = training.fit_dataset(plan, ds, valid=valid, query_weights=weights, log=log, progress=progress,
                                         warn=warn, facts=facts, run_facts={"read_time_seconds": round(t_read, 6)})
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


def predict(data_file, model_file, out_file="-", fmt="scores", tag="rankkit", zero_based=None, group_queries=False,
            log: Log = None, model_format=None, group_file="auto"):
    if data_file == "-" and model_file == "-":
        raise UsageError("DATA and MODEL cannot both be '-' (standard input): give one of them as a file")
    groups = resolve(data_file, group_file)
    check_output(out_file, (data_file, model_file, groups and groups.source), kind="scores")
    model = load_model(model_file, model_format)
    foreign = isinstance(model, ForeignModel)
    if foreign and zero_based:
        raise UsageError(f"--zero-based: a {model.format} model numbers features from 1, like {model.format} itself")
    base0 = model.zero_based if zero_based is None else zero_based
    ds = read_svmlight(data_file, zero_based=base0, group_queries=group_queries, labels_optional=True,
                       groups=groups, log=log)
    scores, ignored = model_scores(model, ds)
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:  # a score of inf or nan ranks nothing: never write it as if it were one
        raise DataError(display_name(data_file), f"the score of this document is {float(scores[bad[0]])!r} ({bad.size} such): "
                        "its feature values are too large for the model's weights", int(ds.line[bad[0]]))
    if fmt == "scores":
        in_input_order = scores
        if ds.order is not None:
            in_input_order = np.empty_like(scores)
            in_input_order[ds.order] = scores
        write_scores(out_file, in_input_order)
    elif fmt == "trec":
        write_trec_run(out_file, query_names(ds), docids(ds), scores, ds.qptr, tag=tag)
    else:
        write_ranked(out_file, ds, scores, docids(ds))
    if not model.verified:  # said after the scores, so that an error stays the only line
        console.warn(f"{model_file} is a format-1 model (rankkit < 0.2) without a checksum: its structure was checked, "
                     "its numbers cannot be verified; train it again to upgrade")
    if log:
        kind = f"; {model.format} format, scored as {model.format}'s own predict does" if foreign else ""
        log(f"scored {ds.n_rows} documents in {ds.n_queries} queries with {model_file} ({model.n_features} features{kind})")
        if ignored:
            log(
                f"ignored {ignored} feature values with an index above "
                f"{model.n_features - 1 if base0 else model.n_features} (features the model was not trained on)"
            )
    return scores


def write_ranked(out_file, ds, scores, docids) -> None:
    """Each query's documents by score (ties: file order): qid, rank, docid, score, label. Bytes
    out: docids are written as they were read, whatever the locale's encoding."""
    labelled = ds.labelled
    qnames = query_names(ds)
    if out_file == "-":
        sys.stdout.flush()
    with atomic_open(out_file, binary=True) as fh:
        fh.write(b"qid\trank\tdocid\tscore\tlabel\n")
        for q in range(ds.n_queries):
            s, e = int(ds.qptr[q]), int(ds.qptr[q + 1])
            order = s + np.argsort(-scores[s:e], kind="stable")
            lines = []
            for rank, i in enumerate(order.tolist(), start=1):
                label = "" if labelled is not None and not labelled[i] else format_label(ds.y[i])
                lines.append(b"%s\t%d\t%s\t%.17g\t%s\n" % (qnames[i].encode(), rank, utf8(docids[i]), scores[i],
                                                             label.encode()))
            fh.write(b"".join(lines))


def evaluate(files, qrels=None, metrics=None, convention="letor4", empty_query=None, fmt="table", per_query=False,
             test="randomization", permutations=10_000, seed=0, zero_based=False, group_queries=False, echo=print,
             group_file="auto", log: Log = None):
    """`rankkit eval`: DATA SCORES [SCORES ...], or RUN [RUN ...] against qrels. `log` (-v) gets the
    files read, their queries and documents, and the time of each step; nothing else changes."""
    t_start = time.perf_counter()
    clock = [t_start]

    def say(msg):
        if log:
            now = time.perf_counter()
            log(f"{msg} ({now - clock[0]:.3f} s)")
            clock[0] = now

    names = tuple(metrics) if metrics else M.DEFAULT_METRICS
    for m in names:
        M.parse_metric(m)  # fail on a bad metric name before reading anything
    systems = []  # (name, query ids, {metric: per-query values})
    if qrels is not None and group_file not in ("auto", None):
        raise UsageError("--group is for DATA SCORES; with --qrels the runs name their queries")
    if qrels is not None:
        judgements = read_qrels(qrels)
        say(f"read qrels {display_name(qrels)}")
        skipped = []
        for run_path in files:
            run = read_trec_run(run_path)
            say(f"read run {display_name(run_path)}: {len(run[0])} lines")
            labels, scores, qptr, tiebreak, judged, qids = run_against_qrels(run, judgements)[:6]
            if len(qids) == 0:
                raise DataError(display_name(qrels), f"judges none of the queries of {display_name(run_path)}")
            try:
                table = M.per_query_table(names, labels, scores, qptr, convention,
                                          tiebreak=tiebreak, judged=judged, empty_query=empty_query)
            except M.GainOverflow as exc:  # the labels come from the qrels
                raise DataError(display_name(qrels), f"label '{format_label(exc.label)}' {exc.reason}") from None
            systems.append((display_name(run_path), list(qids), table))
            say(f"evaluated {display_name(run_path)}: {len(qids)} judged queries, {labels.shape[0]} retrieved "
                f"documents, {judged[1].shape[0]} judged documents, convention {convention}")
            if skipped_queries(run, judgements):
                skipped.append(f"{display_name(run_path)}: {len(skipped_queries(run, judgements))}")
        described = f"{len(systems[0][1])} queries of {display_name(files[0])} judged in {display_name(qrels)}"
        if skipped:
            described += "; run queries without judgements (ignored, as trec_eval does): " + ", ".join(skipped)
        query_sets = [set(q) for _, q, _ in systems]
        if any(qs != query_sets[0] for qs in query_sets[1:]):
            common = set.intersection(*query_sets)
            described += (
                "\nthe runs cover different queries ("
                + ", ".join(f"{name}: {len(q)}" for name, q, _ in systems)
                + f"; {len(common)} in common): each mean is over that run's own judged queries, "
                "p-values over the queries in common"
            )
    else:
        data_file, score_files = files[0], files[1:]
        ds = read_svmlight(data_file, zero_based=zero_based, group_queries=group_queries, groups=group_file, log=log)
        say(f"read {display_name(data_file)}: {ds.n_queries} queries, {ds.n_rows} documents"
            + ("" if ds.has_qid else " (no qid: one query)"))
        if not ds.has_qid and ds.nnz == 0 and ds.docid_spans is None:  # one number per line
            raise DataError(display_name(data_file), "looks like a scores file (one number per line: no qid, no "
                            "features); DATA is the LETOR file: `rankkit eval DATA SCORES`", int(ds.line[0]))
        tiebreak = lexicographic_rank(docids(ds)) if convention == "trec" else None
        qids = [str(q) for q in ds.qid[ds.qptr[:-1]].tolist()] if ds.has_qid else ["1"]
        for path in score_files:
            scores = read_scores(path)
            say(f"read {display_name(path)}: {scores.shape[0]} scores")
            if scores.shape[0] != ds.n_rows:
                raise DataError(
                    display_name(path),
                    f"has {scores.shape[0]} scores but {display_name(data_file)} has {ds.n_rows} documents",
                )
            if ds.order is not None:
                scores = scores[ds.order]
            try:
                table = M.per_query_table(names, ds.y, scores, ds.qptr, convention,
                                          tiebreak=tiebreak, empty_query=empty_query)
            except M.GainOverflow as exc:
                raise DataError(display_name(data_file), f"label '{format_label(exc.label)}' {exc.reason}",
                                int(ds.line[exc.row])) from None
            systems.append((display_name(path), qids, table))
            say(f"evaluated {display_name(path)}: {len(names)} metrics over {ds.n_queries} queries, convention "
                f"{convention}" + (" (score ties by docid, descending)" if tiebreak is not None else ""))
        described = f"{ds.n_queries} queries, {ds.n_rows} documents in {display_name(data_file)}"
        described += short_query_notes(names, convention, np.diff(ds.qptr))
    means, pvalues = summarize(systems, names, test, permutations, seed)
    header = f"convention {convention}: {M.describe(convention)}"
    if len(systems) > 1:
        what = f"{permutations} permutations, seed {seed}" if test == "randomization" else "two-sided"
        header += f"\nsignificance: paired {test} test ({what}) of each system against {systems[0][0]}"
    if len(systems) > 1:
        say(f"{test} tests of {len(systems) - 1} system(s) against {systems[0][0]}, {len(names)} metrics")
    print_evaluation(echo, fmt, names, systems, means, pvalues, per_query, header, described, convention)
    if log:
        log(f"eval done in {time.perf_counter() - t_start:.3f} s")
    return means[0] if len(means) == 1 else means


# -- path -----------------------------------------------------------------------------------------
def _path_one(train_file, valid_file, test_file, method, metric, select, n_points, ratio, zero_based, group_queries,
              log=None, exact=None, group_file="auto", progress=None):
    """One regularisation path (a fold); module level so that --jobs can run it in a worker process.
    method None chooses: exact for small problems, grid otherwise. group_file is TRAIN's; VALID and
    TEST use the group files next to them."""
    exact = dict(exact or {})
    # the grid path's Newton fits take uint16 column indices (half their memory); the exact path
    # works on a scipy matrix, whose int32 indices would then be a second copy
    train_ds = read_svmlight(train_file, zero_based=zero_based, group_queries=group_queries, groups=group_file, log=log,
                             narrow_indices=method != "exact")
    valid_ds = read_svmlight(valid_file, zero_based=zero_based, group_queries=group_queries, log=log)
    result, raw, notes, method = path_on_datasets(train_ds, valid_ds, method, metric, select, n_points, ratio, exact,
                                                  log=log, progress=progress)
    test_value = None
    if test_file is not None:
        test_ds = read_svmlight(test_file, zero_based=zero_based, group_queries=group_queries, log=log)
        if method == "exact" and exact.get("kernel", "linear") != "linear":
            vals = per_query(metric, test_ds.y, raw.scores_at(1.0 / result.best.C, test_ds), test_ds.qptr)
            test_value = float(np.nanmean(vals))
        else:
            test_value = validation_metric(test_ds, result.best.w, metric)[0]
    facts = {"train_file": display_name(train_file), "n_queries": train_ds.n_queries, "n_documents": train_ds.n_rows,
             "n_pairs": train_ds.n_pairs, "n_features": train_ds.n_features, "method": method, "notes": notes,
             "raw": raw if method == "exact" and test_file is None else None, "train_csr": None}
    if method == "exact" and exact.get("kernel", "linear") != "linear" and test_file is None:
        facts["train_csr"] = train_ds.csr()
    return result, test_value, facts


def _worker_init(n_threads: int) -> None:
    threads.apply(max(1, n_threads))


def _quiet_broken_pool_manager(pool) -> None:
    """When a worker dies while this thread is still submitting, CPython's pool manager thread can
    fail marking the pool broken ("dictionary changed size during iteration": it walks the workers
    while a submit adds one) after it has failed every future; the main thread then reports the
    broken pool in one line and stops the workers itself. That thread's traceback, printed by
    threading's excepthook, is dropped; any other thread's error is printed as before."""
    manager = getattr(process, "_ExecutorManagerThread", None)
    previous = threading.excepthook

    def hook(args):
        if manager is not None and isinstance(args.thread, manager) and getattr(pool, "_broken", False):
            return
        previous(args)

    threading.excepthook = hook


def _forget_pool_manager(thread) -> None:
    """After a failed pool: wait (at most 5 s) for CPython's pool manager thread to end, then take it
    off concurrent.futures' exit hook, which would otherwise write to the wakeup pipe the thread has
    already closed (a traceback at exit, "Bad file descriptor", after the one-line error)."""
    if thread is None:
        return
    thread.join(timeout=5)
    if not thread.is_alive():
        getattr(process, "_threads_wakeups", {}).pop(thread, None)


def _run_folds_in_processes(args: list, jobs: int) -> list:
    """Folds in `jobs` worker processes. Workers are spawned, not forked: a fork of a process whose
    OpenMP runtime is running is unsafe (and GNU OpenMP refuses it). jobs x threads never exceeds
    the threads this process may use, so workers do not wait on each other's cores. An error in a
    fold (bad input) reaches the CLI as itself; a signal stops the workers."""
    # perf: jobs x threads never above the usable cores
    jobs = min(jobs, len(args), threads.usable_cores())
    per_job = max(1, threads.count() // jobs)
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_init, initargs=(per_job,))
    _quiet_broken_pool_manager(pool)

    try:
        futures = [pool.submit(_path_one, *a) for a in args]
        try:
            outs = [f.result() for f in futures]
        except BrokenProcessPool:
            raise UsageError("a --jobs worker process ended abruptly (killed by a signal, or out of memory?); "
                             "run again, or with fewer --jobs") from None
    except BaseException:
        manager = getattr(pool, "_executor_manager_thread", None)
        for proc in list(getattr(pool, "_processes", {}).values()):  # do not wait for folds nobody will read
            try:
                proc.terminate()
            except Exception:
                pass
        pool.shutdown(wait=False, cancel_futures=True)
        _forget_pool_manager(manager)
        raise
    pool.shutdown()
    return outs


def _path_fixed_c(folds, Cs, out_dir, table, metric, zero_based, group_queries, log, echo, others, jobs=None):
    """`rankkit path --folds DIR -C c1 -C c2 ...`: every fold trained at every C in this process,
    models as `rankkit train -C` writes them, and a table of their test (and vali) metric."""
    if folds is None or any(v is not None for v in others):
        raise UsageError("-C values go with --folds DIR only (no TRAIN VALID, --out-model, --plot or --method)")
    parse_metric(metric)
    out_dir = out_dir or "."
    os.makedirs(out_dir, exist_ok=True)
    inputs = tuple(os.path.join(folds, d, f) for d in fold_dirs(folds) for f in ("train.txt", "vali.txt", "test.txt"))
    models = [os.path.join(out_dir, fixed_c_model_name(d, C)) for d in fold_dirs(folds) for C in Cs]
    for m in models:
        check_output(m, inputs, kind="model")
    check_output(table, inputs, outputs=tuple(models))

    def train_one(train_file, model_file, C, log):  # exactly `rankkit train TRAIN MODEL -C C`
        return train(train_file, model_file, "newton", {"C": C, "tol": None, "max_iter": None, "loss": None,
                                                        "query_norm": False}, zero_based, group_queries, log=log,
                     warn=console.warn)

    # folds side by side on the threads the kernels would otherwise use (--threads, or the free
    # cores); one kernel thread each, so never more threads than cores
    jobs = min(jobs if jobs is not None else threads.count(), threads.usable_cores())
    rows = fixed_c_folds(folds, Cs, out_dir, train_one, metric, zero_based, group_queries, log, jobs=jobs)
    echo(f"# rankkit path, fixed C, newton; models in {out_dir}")
    lines = [["fold", "C", "valid " + metric, "test " + metric, "iterations"]]
    lines += [[r["fold"], f"{r['C']:g}", f"{r['vali']:.4f}", f"{r['test']:.4f}", str(r["iterations"])] for r in rows]
    for C in Cs:
        mine = [r for r in rows if r["C"] == float(C)]
        lines.append(["mean", f"{C:g}", f"{np.nanmean([r['vali'] for r in mine]):.4f}",
                      f"{np.nanmean([r['test'] for r in mine]):.4f}", ""])
    for line in aligned(lines):
        echo(line)
    if table:
        write_fixed_c_table(table, rows, metric)
    return rows


def path(train_file=None, valid_file=None, out_model=None, table=None, plot=None, method=None, metric="ndcg@10",
         select="best", n_points=30, ratio=1e7, folds=None, jobs=None, zero_based=False, group_queries=False, log=None,
         echo=print, exact=None, group_file="auto", dask=None, progress=None, Cs=(), out_dir=None):
    """`rankkit path`: a regularisation path with model selection on a validation set (or per fold).
    progress(total, label): a progress display for the exact path of a single TRAIN VALID path.
    Cs: fixed values of C on every fold of --folds, in one process (no path)."""
    if Cs:  # fixed values of C on every fold, one process (rankkit/paths/grid.py)
        if dask is not None:
            raise UsageError("--dask runs a single TRAIN VALID path, not -C values with --folds")
        return _path_fixed_c(folds, Cs, out_dir, table, metric, zero_based, group_queries, log, echo,
                             others=(train_file, valid_file, out_model, plot, method), jobs=jobs)
    parse_metric(metric)
    inputs = (train_file, valid_file)
    check_output(out_model, inputs, kind="model")
    check_output(table, inputs, outputs=(out_model,))
    check_output(plot, inputs, outputs=(out_model, table))
    if plot is not None:
        check_plot_target(plot)
    if folds is not None:
        if dask is not None:
            raise UsageError("--dask runs a single TRAIN VALID path, not --folds")
        if train_file is not None or valid_file is not None:
            raise UsageError("give either TRAIN VALID or --folds DIR, not both")
        if out_model or table or plot:
            raise UsageError("--out-model, --table and --plot are for a single TRAIN VALID path, not --folds")
        if group_file != "auto":
            raise UsageError("--group names TRAIN's group file; with --folds each file's group file is found next to "
                             "it (train.txt.query, ...)")
        names = sorted((d for d in os.listdir(folds) if d.startswith("Fold") and d[4:].isdigit()), key=lambda d: int(d[4:]))
        if not names:
            raise UsageError(f"--folds {folds}: no Fold1, Fold2, ... directories")
        args = [(os.path.join(folds, d, "train.txt"), os.path.join(folds, d, "vali.txt"), os.path.join(folds, d, "test.txt"),
                 method, metric, select, n_points, ratio, zero_based, group_queries, None, exact) for d in names]
        if jobs is not None and jobs > 1:
            outs = _run_folds_in_processes(args, jobs)
        else:
            outs = [_path_one(*a[:10], log=log, exact=exact) for a in args]
        methods = sorted({f["method"] for _, _, f in outs})
        echo(f"# rankkit path, method {'/'.join(methods)}, selection {select} by validation {metric}")
        rows = [["fold", "chosen C", "valid " + metric, "test " + metric]]
        for d, (result, test_value, _) in zip(names, outs):
            rows.append([d, f"{result.best.C:.4g}", f"{result.best.metric:.4f}", f"{test_value:.4f}"])
        mean = float(np.mean([t for _, t, _ in outs]))
        rows.append(["mean", "", "", f"{mean:.4f}"])
        for line in aligned(rows):
            echo(line)
        for d, (_, _, facts) in zip(names, outs):
            for note in facts["notes"] or []:
                console.warn(f"{d}: {note}")
        return outs
    if train_file is None or valid_file is None:
        raise UsageError("rankkit path needs TRAIN and VALID (or --folds DIR)")
    t0 = time.perf_counter()
    if dask is not None:  # TRAIN: parts (a quoted glob) on a Dask cluster
        result, _, facts = path_one(train_file, valid_file, method, metric, select, n_points, ratio, zero_based,
                                    group_queries, log, exact, group_file, dask)
    else:
        result, _, facts = _path_one(train_file, valid_file, None, method, metric, select, n_points, ratio, zero_based,
                                     group_queries, log=log, exact=exact, group_file=group_file, progress=progress)
    method = facts["method"]
    how = "" if method else ""
    echo(f"# rankkit path, method {method}{how}: {len(result.points)} "
         f"{'breakpoints' if method == 'exact' else 'values of C'}, selection {select} by validation {metric}")
    for note in facts["notes"] or []:
        console.warn(note)
    shown = result.points
    if method == "exact" and len(shown) > 40:  # a long exact path: show about 40 breakpoints and the chosen one
        step = len(shown) // 40 + 1
        shown = [p for i, p in enumerate(shown) if i % step == 0 or i == result.chosen or i == len(shown) - 1]
    rows = [["C", "iterations", "violated", "valid " + metric, ""]]
    for p in shown:
        rows.append([f"{p.C:.4g}", str(p.iterations), str(p.n_active), f"{p.metric:.4f}",
                     "<- chosen" if p is result.best else ""])
    for line in aligned(rows):
        echo(line)
    if result.chosen == len(result.points) - 1:
        console.warn(f"the chosen C ({result.best.C:.3g}) is the largest of the grid: a larger --ratio may find a better one")
    if table:
        if method == "exact":
            write_exact_table(table, facts["raw"])
        else:
            write_table(table, result)
    if plot:
        write_plot(plot, result)
    if out_model:
        facts_shown = {k: v for k, v in facts.items() if k not in ("raw", "notes", "train_csr", "train_file")}
        header_facts = {"index_base": 0 if zero_based else 1, "train_file": facts["train_file"], **facts_shown,
                        "valid_file": display_name(valid_file)}
        write_model(out_model, chosen_model(result, method, facts["raw"], facts["train_csr"], header_facts,
                                            (exact or {}).get("kernel", "linear"), time.perf_counter() - t0))
    return result


# -- several parts, and Dask clusters: rankkit.distributed -----------------------------------------
def is_pattern(path: str) -> bool:
    """A glob that names no file itself: PARTS to expand (rankkit.distributed)."""
    return path != "-" and glob.has_magic(path) and not os.path.exists(path)


train_parts, predict_parts, eval_parts = parts.train_parts, parts.predict_parts, parts.eval_parts


def convert(in_file, out_file, to, model_format=None, log: Log = None) -> None:
    """Write the model IN_FILE (rankkit or foreign, detected or `model_format`) as a `to` model file
    whose own predict program gives the same scores. Linear models only, into a foreign format."""
    if to == "rankkit":
        check_output(out_file, (in_file,), kind="model")
    else:
        check_output(out_file, (in_file,), kind="file")
        if out_file != "-" and os.path.isfile(out_file) and os.path.getsize(out_file) > 0:
            holds = holds_format(out_file)
            if holds != to:
                raise UsageError(f"refusing to replace '{out_file}': it is not a {TOOL[to]} model file "
                                 "(remove it first to reuse the name)")
    model = load_model(in_file, model_format)
    source = display_name(in_file)
    if to == "rankkit" and not isinstance(model, ForeignModel):
        write_model(out_file, model)  # a rankkit model as it is (format 1 becomes format 2)
        if log:
            log(f"wrote {out_file}: the rankkit model {source} unchanged")
        return
    w, constant = linear_view(model, to)
    src_format = model.format if isinstance(model, ForeignModel) else "rankkit"
    if to == "rankkit":
        header = {"rankkit_version": __version__, "solver": "converted", "source_format": src_format,
                  "source_file": source}
        header.update({f"source_{k}": v for k, v in model.info.items()})
        header.update({"index_base": 1, "n_features": int(w.shape[0])})
        if constant != 0.0:
            header["source_constant"] = float(constant)
            console.warn(f"{source}: the {src_format} model adds the constant {constant!r} to every score "
                         f"({_constant_name(src_format)}); a rankkit model has no constant term, so rankkit scores "
                         "differ from its scores by that constant (rankings are unchanged)")
        write_model(out_file, Model(weights=np.array(w, dtype=np.float64), header=header))
    else:
        n_docs = model.info.get("training_documents", 0) if isinstance(model, ForeignModel) else \
            model.header.get("n_documents", "0")
        n_docs = int(n_docs) if str(n_docs).isascii() and str(n_docs).isdigit() else 0  # svm_rank's header line 9
        text = foreign_text(w, constant, to, n_documents=n_docs)
        if out_file == "-":
            sys.stdout.flush()
        with atomic_open(out_file, binary=True) as fh:
            fh.write(text.encode("ascii"))
    if log:
        log(f"wrote {out_file}: the {src_format} model {source} as a {to} model ({w.shape[0]} features)")


def _constant_name(fmt: str) -> str:
    return {"liblinear": "bias weight x bias", "sofia-ml": "the weight of the bias feature 0",
            "svm_rank": "minus the threshold b"}.get(fmt, "")
