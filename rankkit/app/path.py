"""`rankkit path`: a regularisation path with C chosen on a validation set, per fold of --folds
(in worker processes with --jobs), or fixed values of C on every fold."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor, process
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

import numpy as np

from rankkit import commands, console, interrupts, processes, threads
from rankkit.report import aligned
from rankkit.app.train import train
from rankkit.errors import UsageError
from rankkit.io.atomic import check_output
from rankkit.io.model import write_model
from rankkit.io.svmlight import display_name, read_svmlight
from rankkit.config import DEFAULT_CONVENTION
from rankkit.metrics.ties import dataset_tiebreak
from rankkit.experiments import check_out_dir, make_out_dirs
from rankkit.metrics import describe, gradable_labels, parse_metric, per_query_table, ungradable
from rankkit.paths.grid import (fixed_c_folds, fixed_c_model_name, fold_dirs, fold_file, mean_se, reported_metrics,
                                validation_table, write_exact_table, write_fixed_c_table, write_table)
from rankkit.selection import check_plot_options, chosen_model, path_on_datasets, plot_path

Log = Callable[[str], None] | None


def _path_one(train_file, valid_file, test_file, method, metric, select, n_points, ratio, zero_based, group_queries,
              log=None, exact=None, group_file="auto", progress=None, convention=DEFAULT_CONVENTION, metrics=None,
              keep_data=False):
    """One regularisation path (a fold); module level so that --jobs can run it in a worker process.
    method None chooses: exact for small problems, grid otherwise. group_file is TRAIN's; VALID and
    TEST use the group files next to them. The test values: {metric: mean over the test queries}.
    keep_data: the facts keep the datasets (train, valid) for a plot of the path's curves."""
    exact = dict(exact or {})
    names = reported_metrics(metric, metrics)
    # the grid path's Newton fits take uint16 column indices (half their memory); the exact path
    # works on a scipy matrix, whose int32 indices would then be a second copy
    train_ds = read_svmlight(train_file, zero_based=zero_based, group_queries=group_queries, groups=group_file, log=log,
                             narrow_indices=method != "exact")
    valid_ds = read_svmlight(valid_file, zero_based=zero_based, group_queries=group_queries, log=log)
    row = ungradable(convention, valid_ds.y)
    if row is not None:  # asked for by name (the default grades every label): one warning, as eval
        console.warn(f"{display_name(valid_file)}:{int(valid_ds.line[row])}: label '{valid_ds.y[row]:g}' cannot be "
                     f"graded by --convention {convention}, which grades the labels {gradable_labels(convention)} "
                     "only: it and every other such label count as 0, not relevant")
    result, raw, notes, method = path_on_datasets(train_ds, valid_ds, method, metric, select, n_points, ratio, exact,
                                                  log=log, progress=progress, convention=convention, metrics=names)
    test_value = None
    if test_file is not None:
        test_ds = read_svmlight(test_file, zero_based=zero_based, group_queries=group_queries, log=log)
        tiebreak = dataset_tiebreak(test_ds, convention)
        if method == "exact" and exact.get("kernel", "linear") != "linear":
            scores = raw.scores_at(1.0 / result.best.C, test_ds)
            table = per_query_table(list(names), test_ds.y, scores, test_ds.qptr, convention, tiebreak=tiebreak)
        else:
            table = validation_table(test_ds, result.best.w, names, convention, tiebreak)
        test_value = {m: mean_se(table[m])[0] for m in names}
    facts = {"train_file": display_name(train_file), "n_queries": train_ds.n_queries, "n_documents": train_ds.n_rows,
             "n_pairs": train_ds.n_pairs, "n_features": train_ds.n_features, "method": method, "notes": notes,
             "raw": raw if method == "exact" and test_file is None else None, "train_csr": None}
    if method == "exact" and exact.get("kernel", "linear") != "linear" and test_file is None:
        facts["train_csr"] = train_ds.csr()
    if keep_data:
        facts["datasets"] = (train_ds, valid_ds)
    return result, test_value, facts


def _worker_init(n_threads: int) -> None:
    processes.die_with_parent()  # SIGKILL of the parent must not leave workers holding its stdout
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


_WORKER_LOST = ("a --jobs worker process ended abruptly (killed by a signal, or out of memory?); "
                "run again, or with fewer --jobs")


def _lost_a_worker(pool) -> bool:
    """The pool is broken, or one of its workers has ended."""
    if getattr(pool, "_broken", False):
        return True
    return any(p.exitcode is not None for p in list((getattr(pool, "_processes", None) or {}).values()))


def _run_folds_in_processes(args: list, jobs: int) -> list:
    """Folds in `jobs` worker processes. Workers are spawned, not forked: a fork of a process whose
    OpenMP runtime is running is unsafe (and GNU OpenMP refuses it). jobs x threads never exceeds
    the threads this process may use, so workers do not wait on each other's cores. An error in a
    fold (bad input) reaches the CLI as itself; a signal stops the workers."""
    # perf: jobs x threads never above the usable cores
    jobs = min(jobs, len(args), threads.usable_cores())
    per_job = max(1, threads.count() // jobs)
    processes.before_spawning()
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_init, initargs=(per_job,))
    _quiet_broken_pool_manager(pool)

    try:
        # a signal while a worker is being spawned (the parent writing its start-up data) waits until
        # the workers exist: stopped then (terminate), they end quietly; stopped halfway, a worker
        # printed multiprocessing's "EOFError: Ran out of input" traceback
        try:
            interrupts.hold()
            try:
                futures = [pool.submit(_path_one, *a) for a in args]
            finally:
                interrupts.release()
            outs = [f.result() for f in futures]
        except BrokenProcessPool:
            raise UsageError(_WORKER_LOST) from None
        except (OSError, ValueError):
            # a worker killed while the next one was being spawned: the pool's manager thread closes
            # the pipes the spawn was handing over ("bad value(s) in fds_to_keep")
            if _lost_a_worker(pool):
                raise UsageError(_WORKER_LOST) from None
            raise
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


def _path_fixed_c(folds, Cs, out_dir, table, names, zero_based, group_queries, log, echo, others, jobs=None,
                  convention=DEFAULT_CONVENTION):
    """`rankkit path --folds DIR -C c1 -C c2 ...`: every fold trained at every C in this process,
    models as `rankkit train -C` writes them, and a table of their test (and vali) metric."""
    if folds is None or any(v is not None for v in others):
        raise UsageError("-C values go with --folds DIR only (no TRAIN VALID, --out-model, --plot or --method)")
    metric = names[0]
    out_dir = "." if out_dir is None else out_dir
    check_out_dir(out_dir)  # no empty name, no planted link; nothing created before the inputs are read
    inputs = tuple(f for d in fold_dirs(folds) for f in _fold_files(os.path.join(folds, d)) if f is not None)
    models = [os.path.join(out_dir, fixed_c_model_name(d, C)) for d in fold_dirs(folds) for C in Cs]
    if os.path.isdir(out_dir):
        for m in models:
            check_output(m, inputs, kind="model")
    check_output(table, inputs, outputs=tuple(models))
    _check_fold_files(inputs, zero_based, group_queries)
    make_out_dirs(out_dir)  # every input read and checked: only now is anything created

    def train_one(train_file, model_file, C, log):  # exactly `rankkit train TRAIN MODEL -C C`
        return train(train_file, model_file, "newton", {"C": C, "tol": None, "max_iter": None, "loss": None,
                                                        "query_norm": False}, zero_based, group_queries, log=log,
                     warn=console.warn)

    # folds side by side on the threads the kernels would otherwise use (--threads, or the free
    # cores); one kernel thread each, so never more threads than cores
    jobs = min(jobs if jobs is not None else threads.count(), threads.usable_cores())
    rows = fixed_c_folds(folds, Cs, out_dir, train_one, metric, zero_based, group_queries, log, jobs=jobs,
                         convention=convention, metrics=names)
    echo(f"# rankkit path, fixed C, newton; models in {out_dir}")
    echo(f"# convention {convention}: {describe(convention, short=True)}")
    lines = [["fold", "C", *(f"valid {m}" for m in names), *(f"test {m}" for m in names), "iterations"]]
    lines += [[r["fold"], f"{r['C']:g}", *(f"{r['valid_metrics'][m]:.4f}" for m in names),
               *(f"{r['test_metrics'][m]:.4f}" for m in names), str(r["iterations"])] for r in rows]
    for C in Cs:
        mine = [r for r in rows if r["C"] == float(C)]
        lines.append(["mean", f"{C:g}", *(f"{np.nanmean([r['valid_metrics'][m] for r in mine]):.4f}" for m in names),
                      *(f"{np.nanmean([r['test_metrics'][m] for r in mine]):.4f}" for m in names), ""])
    for line in aligned(lines):
        echo(line)
    if table:
        write_fixed_c_table(table, rows, metric, names)
    return rows


def _check_fold_files(files, zero_based, group_queries) -> None:
    """Read every fold's train.txt (and vali.txt, test.txt where present) once, before any model is
    written: bad input in the last fold leaves nothing behind (the fits read them again, one fold
    at a time, so that only one fold's data is held at once)."""
    for f in files:
        read_svmlight(f, zero_based=zero_based, group_queries=group_queries)


def _fold_files(fold_dir: str) -> tuple:
    """(train, vali, test) of a fold directory, LETOR 4.0 or 3.0 names; vali and test may be absent
    (None) when -C values are trained at (rankkit.paths.grid.fold_file)."""
    return fold_file(fold_dir, "train"), fold_file(fold_dir, "vali", False), fold_file(fold_dir, "test", False)


def path(train_file=None, valid_file=None, out_model=None, table=None, plot=None, method=None, metric="ndcg@10",
         select="best", n_points=30, ratio=1e7, folds=None, jobs=None, zero_based=False, group_queries=False, log=None,
         echo=print, exact=None, group_file="auto", dask=None, progress=None, Cs=(), out_dir=None,
         convention=DEFAULT_CONVENTION, plot_kind="metric", plot_query=None):
    """`rankkit path`: a regularisation path with model selection on a validation set (or per fold).
    metric: a name or several (-m repeated): the first selects, all are reported. progress(total,
    label): a progress display for the exact path of a single TRAIN VALID path. Cs: fixed values
    of C on every fold of --folds, in one process (no path). plot_kind: what --plot draws (metric,
    coef, decision: rankkit.selection.plot_path); plot_query: the validation qid of a decision plot."""
    names = reported_metrics(*((metric, ()) if isinstance(metric, str) else (metric[0], metric[1:])))
    metric = names[0]
    if Cs:  # fixed values of C on every fold, one process (rankkit/paths/grid.py)
        if dask is not None:
            raise UsageError("--dask runs a single TRAIN VALID path, not -C values with --folds")
        return _path_fixed_c(folds, Cs, out_dir, table, names, zero_based, group_queries, log, echo,
                             others=(train_file, valid_file, out_model, plot, method), jobs=jobs, convention=convention)
    if out_dir is not None:  # where the models of --folds DIR -C go; nothing else writes there
        raise UsageError("--out-dir goes with --folds DIR -C C ... (where those models go); "
                         "a path writes --out-model, --table and --plot")
    inputs = (train_file, valid_file)
    check_output(out_model, inputs, kind="model")
    check_output(table, inputs, outputs=(out_model,))
    check_output(plot, inputs, outputs=(out_model, table))
    check_plot_options(plot, plot_kind, plot_query)
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
        return _path_folds(folds, method, names, select, n_points, ratio, zero_based, group_queries, log, echo, exact,
                           jobs, convention)
    if train_file is None or valid_file is None:
        raise UsageError("rankkit path needs TRAIN and VALID (or --folds DIR)")
    t0 = time.perf_counter()
    if dask is not None:  # TRAIN: parts (a quoted glob) on a Dask cluster
        if len(names) > 1 or convention != DEFAULT_CONVENTION:
            raise UsageError("--dask runs a path with one -m under the default convention")
        if plot_kind != "metric":
            raise UsageError("--dask draws the metric plot only (--plot-kind metric): the parts stay on the workers")
        result, _, facts = commands.path_one(train_file, valid_file, method, metric, select, n_points, ratio,
                                             zero_based, group_queries, log, exact, group_file, dask)
    else:
        result, _, facts = _path_one(train_file, valid_file, None, method, metric, select, n_points, ratio, zero_based,
                                     group_queries, log=log, exact=exact, group_file=group_file, progress=progress,
                                     convention=convention, metrics=names, keep_data=plot is not None and plot_kind != "metric")
    method = facts["method"]
    _show_path(result, facts, method, names, select, echo, convention)
    if table:
        if method == "exact":
            write_exact_table(table, facts["raw"])
        else:
            write_table(table, result)
    if plot:
        train_ds, valid_ds = facts.get("datasets", (None, None))
        plot_path(plot, result, facts["raw"], valid_ds, plot_kind, plot_query, train_ds, 0 if zero_based else 1)
    if out_model:
        facts_shown = {k: v for k, v in facts.items() if k not in ("raw", "notes", "train_csr", "train_file", "datasets")}
        header_facts = {"index_base": 0 if zero_based else 1, "train_file": facts["train_file"], **facts_shown,
                        "valid_file": display_name(valid_file)}
        write_model(out_model, chosen_model(result, method, facts["raw"], facts["train_csr"], header_facts,
                                            (exact or {}).get("kernel", "linear"), time.perf_counter() - t0))
    return result


def _path_folds(folds, method, names, select, n_points, ratio, zero_based, group_queries, log, echo, exact, jobs,
                convention=DEFAULT_CONVENTION):
    """`rankkit path --folds DIR`: a path on each FoldN (in `jobs` processes), C chosen on its
    vali.txt by the first metric, a table of the chosen C and its vali and test metrics per fold.
    The grid path is rankkit.selection.grid_path, the code `rankkit experiment --solver newton`
    runs: with the same --n-points, --ratio, -m, --convention and --select both choose the same C
    and print the same numbers."""
    metric = names[0]
    names_dirs = fold_dirs(folds)
    args = [(*(fold_file(os.path.join(folds, d), part) for part in ("train", "vali", "test")),
             method, metric, select, n_points, ratio, zero_based, group_queries, None, exact, "auto", None, convention,
             names) for d in names_dirs]
    if jobs is not None and jobs > 1:
        outs = _run_folds_in_processes(args, jobs)
    else:
        outs = [_path_one(*a[:10], log=log, exact=exact, convention=convention, metrics=names) for a in args]
    methods = sorted({f["method"] for _, _, f in outs})
    echo(f"# rankkit path, method {'/'.join(methods)}, selection {select} by validation {metric}")
    echo(f"# convention {convention}: {describe(convention, short=True)}")
    rows = [["fold", "chosen C", *(f"valid {m}" for m in names), *(f"test {m}" for m in names)]]
    for d, (result, test_value, _) in zip(names_dirs, outs):
        edge = getattr(result, "at_edge", None)
        rows.append([d, f"{result.best.C:.4g}" + (f" [{edge} edge]" if edge else ""),
                     *(f"{result.best.metrics.get(m, result.best.metric):.4f}" for m in names),
                     *(f"{test_value[m]:.4f}" for m in names)])
    rows.append(["mean", "", *("" for _ in names), *(f"{float(np.mean([t[m] for _, t, _ in outs])):.4f}" for m in names)])
    for line in aligned(rows):
        echo(line)
    for d, (_, _, facts) in zip(names_dirs, outs):
        for note in facts["notes"] or []:
            console.warn(f"{d}: {note}")
    return outs


def _show_path(result, facts, method, names, select, echo, convention=DEFAULT_CONVENTION) -> None:
    """The path's summary: a title line, its points (about 40 of a long exact path, and the chosen
    one) as aligned columns, and its notes and warnings on standard error."""
    metric = names[0]
    echo(f"# rankkit path, method {method}: {len(result.points)} "
         f"{'breakpoints' if method == 'exact' else 'values of C'}, selection {select} by validation {metric}")
    echo(f"# convention {convention}: {describe(convention, short=True)}")
    for note in facts["notes"] or []:
        console.warn(note)
    shown = result.points
    if method == "exact" and len(shown) > 40:  # a long exact path: show about 40 breakpoints and the chosen one
        step = len(shown) // 40 + 1
        shown = [p for i, p in enumerate(shown) if i % step == 0 or i == result.chosen or i == len(shown) - 1]
    rows = [["C", "iterations", "violated", *(f"valid {m}" for m in names), ""]]
    edge = getattr(result, "at_edge", None)
    for p in shown:
        mark = ""
        if p is result.best:
            mark = f"<- chosen ({edge} edge)" if edge else "<- chosen"
        elif getattr(p, "constant", False):
            mark = "constant scores"
        elif getattr(p, "extended", False):
            mark = "extended"
        rows.append([f"{p.C:.4g}", str(p.iterations), str(p.n_active),
                     *(f"{p.metrics.get(m, p.metric):.4f}" for m in names), mark])
    for line in aligned(rows):
        echo(line)
    if method == "exact" and result.chosen == len(result.points) - 1:  # a grid says so in its notes (edge rule)
        console.warn(f"the chosen C ({result.best.C:.3g}) is the largest breakpoint of the path: a smaller "
                     "--lambda-min may find a better one")
