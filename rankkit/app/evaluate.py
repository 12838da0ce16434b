"""`rankkit eval`: metrics of score files against a data file, or of TREC runs against qrels,
with significance tests; shown by rankkit.report."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from rankkit import metrics as M
from rankkit.report import convention_header, format_label, print_evaluation, short_query_notes
from rankkit.config import DEFAULT_CONVENTION
from rankkit.errors import DataError, UsageError
from rankkit.evaluation import dataset_table, dataset_tiebreak, summarize
from rankkit.io.files import looks_like
from rankkit.io.output import read_scores
from rankkit.io.svmlight import display_name, read_svmlight
from rankkit.io.trec import read_qrels, read_trec_run, run_against_qrels, skipped_queries

Log = Callable[[str], None] | None


def evaluate(files, qrels=None, metrics=None, convention=DEFAULT_CONVENTION, empty_query=None, fmt="table",
             per_query=False, test="randomization", permutations=10_000, seed=0, zero_based=False, group_queries=False,
             echo=print, group_file="auto", log: Log = None, convention_named: bool = True, warn=None):
    """`rankkit eval`: DATA SCORES [SCORES ...], or RUN [RUN ...] against qrels. `log` (-v) gets the
    files read, their queries and documents, and the time of each step; nothing else changes.
    convention_named: the convention was asked for by name (else it is the default): a label it
    cannot grade is then one warning (`warn`), not an error naming the file and line."""
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
    if qrels is not None and group_file not in ("auto", None):
        raise UsageError("--group is for DATA SCORES; with --qrels the runs name their queries")
    if qrels is not None:
        systems, described = _against_qrels(files, qrels, names, convention, empty_query, say)
    else:
        systems, described = _against_data(files, names, convention, empty_query, zero_based, group_queries,
                                           group_file, log, say, convention_named, warn)
    means, pvalues = summarize(systems, names, test, permutations, seed)
    header = convention_header(convention, log)
    if len(systems) > 1:
        what = f"{permutations} permutations, seed {seed}" if test == "randomization" else "two-sided"
        header += f"\nsignificance: paired {test} test ({what}) of each system against {systems[0][0]}"
    if len(systems) > 1:
        say(f"{test} tests of {len(systems) - 1} system(s) against {systems[0][0]}, {len(names)} metrics")
    print_evaluation(echo, fmt, names, systems, means, pvalues, per_query, header, described, convention)
    if log:
        log(f"eval done in {time.perf_counter() - t_start:.3f} s")
    return means[0] if len(means) == 1 else means


def _against_qrels(files, qrels, names, convention, empty_query, say):
    """(systems, description) of TREC runs against qrels: each system (name, query ids,
    {metric: per-query values}) over its judged queries."""
    systems = []
    try:
        judgements = read_qrels(qrels)
    except DataError as exc:
        _in_another_order(exc, files, qrels)
        raise
    say(f"read qrels {display_name(qrels)}")
    skipped = []
    for run_path in files:
        try:
            run = read_trec_run(run_path)
        except DataError as exc:
            _in_another_order(exc, files, qrels)
            raise
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
    n_judged = len(systems[0][1])
    described = (f"{n_judged} {'query' if n_judged == 1 else 'queries'} of {display_name(files[0])} judged in "
                 f"{display_name(qrels)}")
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
    return systems, described


def _in_another_order(exc: DataError, files, qrels) -> None:
    """A file that failed to read may be in the right place for another tool (trec_eval's QRELS RUN,
    a run or scores file where the other belongs): raise a DataError that gives the command in
    rankkit's order instead; return (the caller re-raises `exc`) when nothing fits."""
    given = [qrels, *files] if qrels is not None else list(files)
    shapes = {f: looks_like(f) for f in given}
    qrels_files = [f for f in given if shapes[f] == "qrels"]
    runs = [f for f in given if shapes[f] == "run"]
    first = given[0]
    if len(qrels_files) == 1 and runs and len(runs) == len(given) - 1:
        what = ("a TREC qrels file (qid iter docid rel)" if shapes[first] == "qrels"
                else "a TREC run (qid Q0 docid rank score tag)")
        raise DataError(display_name(first), f"looks like {what}: runs are evaluated against qrels with "
                        f"`rankkit eval --qrels {qrels_files[0]} {' '.join(runs)}`") from None
    if qrels is None and shapes[first] in ("qrels", "run"):
        what = "a TREC qrels file (qid iter docid rel)" if shapes[first] == "qrels" else "a TREC run"
        hint = (f"`rankkit eval --qrels {first} RUN ...`" if shapes[first] == "qrels"
                else f"`rankkit eval --qrels QRELS {' '.join(files)}`")
        raise DataError(display_name(first), f"looks like {what}: TREC files are evaluated with {hint}") from None
    if qrels is not None:
        data = [f for f in given if shapes[f] == "svmlight"]
        scores = [f for f in given if shapes[f] == "scores"]
        hint = f"`rankkit eval {(data or ['DATA'])[0]} {' '.join(scores or ['SCORES'])}`"
        if scores:
            raise DataError(display_name(scores[0]), "looks like a scores file: scores are evaluated against "
                            f"their data file, without --qrels: {hint}") from None
        if data:
            raise DataError(display_name(data[0]), "looks like a LETOR data file: its scores are evaluated "
                            f"against it without --qrels: {hint}") from None


def check_grades(ds, data_file, convention, named: bool, warn) -> None:
    """A label the convention cannot grade (letor4 and letor3 grade 0, 1, 2; mslr 0..4): an error
    naming the file, line and label, or, when the convention was asked for by name, one warning."""
    row = M.ungradable(convention, ds.y)
    if row is None:
        return
    where = f"{display_name(data_file)}:{int(ds.line[row])}"
    what = (f"label '{format_label(ds.y[row])}' cannot be graded by --convention {convention}, which grades the "
            f"labels {M.gradable_labels(convention)} only")
    if not named:
        raise DataError(display_name(data_file), what + " (--convention trec or exp grades every label)",
                        int(ds.line[row]))
    if warn is not None:
        warn(f"{where}: {what}: it and every other such label count as 0, not relevant, as the "
             f"{convention} script counts them (--convention trec or exp grades every label)")


def _against_data(files, names, convention, empty_query, zero_based, group_queries, group_file, log, say,
                  convention_named=True, warn=None):
    """(systems, description) of score files against the labels of a data file (its first name)."""
    systems = []
    data_file, score_files = files[0], files[1:]
    try:
        ds = read_svmlight(data_file, zero_based=zero_based, group_queries=group_queries, groups=group_file, log=log)
    except DataError as exc:
        _in_another_order(exc, files, None)
        raise
    say(f"read {display_name(data_file)}: {ds.n_queries} queries, {ds.n_rows} documents"
        + ("" if ds.has_qid else " (no qid: one query)"))
    if not ds.has_qid and ds.nnz == 0 and ds.docid_spans is None:  # one number per line
        data = next((f for f in score_files if looks_like(f) == "svmlight"), "DATA")
        order = " ".join([data, data_file, *[f for f in score_files if f != data]])
        raise DataError(display_name(data_file), "looks like a scores file (one number per line: no qid, no "
                        f"features); DATA is the LETOR file, first: `rankkit eval {order}`", int(ds.line[0]))
    check_grades(ds, data_file, convention, convention_named, warn)
    tiebreak = dataset_tiebreak(ds, convention)
    qids = [str(q) for q in ds.qid[ds.qptr[:-1]].tolist()] if ds.has_qid else ["1"]
    for path in score_files:
        scores = read_scores(path)
        say(f"read {display_name(path)}: {scores.shape[0]} scores")
        if scores.shape[0] != ds.n_rows:
            raise DataError(
                display_name(path),
                f"has {scores.shape[0]} scores but {display_name(data_file)} has {ds.n_rows} documents",
            )
        try:
            table = dataset_table(names, ds, scores, convention, tiebreak=tiebreak, empty_query=empty_query)
        except M.GainOverflow as exc:
            raise DataError(display_name(data_file), f"label '{format_label(exc.label)}' {exc.reason}",
                            int(ds.line[exc.row])) from None
        systems.append((display_name(path), qids, table))
        say(f"evaluated {display_name(path)}: {len(names)} metrics over {ds.n_queries} queries, convention "
            f"{convention}" + (" (score ties by docid, descending)" if tiebreak is not None else ""))
    described = (f"{ds.n_queries} {'query' if ds.n_queries == 1 else 'queries'}, {ds.n_rows} "
                 f"{'document' if ds.n_rows == 1 else 'documents'} in {display_name(data_file)}")
    described += short_query_notes(names, convention, np.diff(ds.qptr))
    return systems, described
