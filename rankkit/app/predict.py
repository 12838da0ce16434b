"""`rankkit predict`: scores of a model on a data file, as scores, a TREC run or a ranked table."""

from __future__ import annotations

import sys
from typing import Callable

import numpy as np

from rankkit import console
from rankkit.report import docids, format_label, query_names
from rankkit.errors import DataError, UsageError
from rankkit.io.atomic import atomic_open, check_output
from rankkit.io.files import looks_like
from rankkit.io.foreign_models import ForeignModel, load_model
from rankkit.io.groups import resolve
from rankkit.io.output import write_scores
from rankkit.io.svmlight import display_name, read_svmlight
from rankkit.io.trec import utf8, write_trec_run
from rankkit.scoring import model_scores

Log = Callable[[str], None] | None


def predict(data_file, model_file, out_file="-", fmt="scores", tag="rankkit", zero_based=None, group_queries=False,
            log: Log = None, model_format=None, group_file="auto"):
    if data_file == "-" and model_file == "-":
        raise UsageError("DATA and MODEL cannot both be '-' (standard input): give one of them as a file")
    groups = resolve(data_file, group_file)
    check_output(out_file, (data_file, model_file, groups and groups.source), kind="scores")
    try:
        model = load_model(model_file, model_format)
    except DataError:
        if model_format is None and looks_like(data_file) == "model" and looks_like(model_file) == "svmlight":
            rest = "" if out_file == "-" else f" {out_file}"
            raise DataError(display_name(data_file), "is a model file and "
                            f"{display_name(model_file)} a data file: predict takes DATA MODEL: "
                            f"`rankkit predict {model_file} {data_file}{rest}`") from None
        raise
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
