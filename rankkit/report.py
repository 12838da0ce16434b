"""How the command line shows its results: evaluation tables (text, TSV, JSON), aligned columns,
the labels and docids of a Dataset as text. Used by the CLI (rankkit.app) and by the Dask face
(rankkit.distributed.commands), both above it: the same tables whether the metrics were computed
in one process or on a cluster."""

from __future__ import annotations

import json

import numpy as np

from rankkit.metrics.ties import dataset_docids
from rankkit.metrics import describe, parse_metric


def docids(ds, line_offset: int = 0) -> list[str]:
    """The `# docid = X` of each row (Dataset.docids: bytes that are not UTF-8 kept as surrogate
    escapes, so that writers give back the bytes of the file), or its line number where the line
    had none (after `line_offset` lines: a part numbered as in the parts' concatenation)."""
    return dataset_docids(ds, line_offset)


def query_names(ds) -> list[str]:
    """The qid of each row as text (the TREC run's first column); 1 for a file without qids."""
    return [str(q) for q in ds.qid.tolist()] if ds.has_qid else ["1"] * ds.n_rows


def format_label(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def short_query_notes(names, convention, lengths) -> str:
    """Under the LETOR scripts' rules a query shorter than k scores 0 at k (NDCG@k; P@k too in
    letor3): say how many queries that is, so that NDCG@10 0.16 beside NDCG@5 0.83 explains itself."""
    if convention not in ("letor4", "letor3"):
        return ""
    notes = []
    for name in names:
        base, k = parse_metric(name)
        if k is not None and (base == "ndcg" or (base == "p" and convention == "letor3")):
            short = int(np.count_nonzero(lengths < k))
            if short:
                notes.append(f"\n{name}: {short} of {lengths.shape[0]} queries have fewer than {k} documents and score 0 "
                             f"under the {convention} rule (the default convention, trec, scores them over their "
                             "own length)")
    return "".join(notes)


def _fmt(v, digits=6) -> str:
    return "nan" if v is None or v != v else f"{v:.{digits}f}"


def _json_number(v):
    """JSON has no NaN: an undefined value (a skipped query, a test on too few queries) is null."""
    return None if v is None or v != v else float(v)


def convention_header(convention, log=None) -> str:
    """The first `#` line of an evaluation table: the convention's name and its three defining rules;
    the whole text goes to -v's log (and into JSON output)."""
    if log:
        log(f"convention {convention}: {describe(convention)}")
    return f"convention {convention}: {describe(convention, short=True)}"


def print_evaluation(echo, fmt, names, systems, means, pvalues, per_query, header, described, convention):
    sys_names = [s[0] for s in systems]
    if fmt == "json":
        if len(systems) == 1 and not per_query:
            echo(json.dumps({m: _json_number(v) for m, v in means[0].items()}, allow_nan=False))
            return
        out = {"convention": convention, "convention_description": describe(convention), "systems": []}  # a list: the same file may be given twice
        for (name, qids, table), mean, p in zip(systems, means, pvalues):
            entry = {"name": name, "mean": {m: _json_number(v) for m, v in mean.items()}}
            if p is not None:
                entry["p_value"] = {m: _json_number(v) for m, v in p.items()}
            if per_query:
                entry["per_query"] = {"qid": qids, **{m: [_json_number(v) for v in table[m]] for m in names}}
            out["systems"].append(entry)
        echo(json.dumps(out, allow_nan=False))
        return
    columns = []
    for i, name in enumerate(sys_names):
        columns.append(name)
        if i > 0:
            columns.append(f"p({name})")
    rows = []  # (qid, metric, cells)
    if per_query:
        all_qids = list(dict.fromkeys(q for _, qids, _ in systems for q in qids))  # union, first-seen order
        lookups = [{q: i for i, q in enumerate(qids)} for _, qids, _ in systems]
        for q in all_qids:
            for m in names:
                cells = []
                for i, (_, _, table) in enumerate(systems):
                    j = lookups[i].get(q)
                    cells.append(table[m][j] if j is not None else float("nan"))
                    if i > 0:
                        cells.append(None)
                rows.append((q, m, cells))
    for m in names:
        cells = []
        for i, mean in enumerate(means):
            cells.append(mean[m])
            if i > 0:
                cells.append(pvalues[i][m])
        rows.append(("all", m, cells))
    if fmt == "tsv":  # plain TSV: a header row, no comments; summary rows have qid "all" (as trec_eval)
        echo("\t".join(["qid", "metric", *columns]))
        for q, m, cells in rows:
            echo("\t".join([q, m, *("" if c is None else ("nan" if c != c else repr(float(c))) for c in cells)]))
        return
    for line in (header + "\n" + described).split("\n"):
        echo(f"# {line}")
    text = [["qid", "metric", *columns]] if per_query else [["metric", *columns]]
    p_column = [False] + [c.startswith("p(") for c in columns[1:]]
    for q, m, cells in rows:
        shown = ["" if c is None else _fmt(c, 4 if p_column[i] else 6) for i, c in enumerate(cells)]
        text.append([q, m, *shown] if per_query else [m, *shown])
    widths = [max(len(r[c]) for r in text) for c in range(len(text[0]))]
    for r in text:
        echo("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())


def aligned(rows: list[list[str]]) -> list[str]:
    """Columns as wide as their widest cell, two spaces apart: the first left-aligned, the others
    right-aligned, so that no count, however long, runs into its neighbour."""
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]
