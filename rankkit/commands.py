"""What each subcommand does, as plain functions of plain arguments (the CLI only parses options).

Imported lazily by cli.py, so numpy and numba load only when a command runs.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import threading
import time
from typing import Callable

import numpy as np

from rankkit import __version__
from rankkit.errors import DataError
from rankkit.io.atomic import check_writable
from rankkit.io.model import Model, read_model, write_model
from rankkit.io.output import read_scores, write_scores
from rankkit.io.svmlight import display_name, parse_bytes, read_bytes, read_svmlight
from rankkit.solvers import SOLVERS

Log = Callable[[str], None] | None


class _Checksum(threading.Thread):
    """SHA-256 of the training bytes, computed beside parsing and training (hashlib releases the
    GIL on large buffers, and the kernels run without it), so it costs no wall time."""

    def __init__(self, buf: np.ndarray):
        super().__init__(daemon=True)
        self.buf = buf
        self.hexdigest = ""

    def run(self):
        self.hexdigest = hashlib.sha256(memoryview(self.buf)).hexdigest()


def train(train_file, model_file, solver, params, zero_based=False, group_queries=False, log: Log = None, warn=print):
    t0 = time.perf_counter()
    check_writable(model_file)  # fail now, not after training
    name = display_name(train_file)
    buf = read_bytes(train_file)
    checksum = _Checksum(buf)
    checksum.start()
    ds = parse_bytes(buf, name, zero_based, group_queries)
    t_read = time.perf_counter() - t0
    if log:
        log(
            f"read {name}: {ds.n_rows} documents, {ds.n_queries} queries, {ds.n_pairs} pairs, "
            f"{ds.n_features} features, {ds.nnz} non-zeros in {t_read:.3f}s"
        )
    ds.require_pairs()
    spec = SOLVERS[solver]
    model_solver = spec.load()(**params)
    result = model_solver.fit(ds, log=log)
    if not result.converged:
        warn(result.message)
    checksum.join()
    header = {
        "rankkit_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "solver": spec.name,
        "loss": getattr(model_solver, "loss", spec.losses[0]),
    }
    header.update(model_solver.hyperparameters())
    header.update(
        {
            "index_base": 0 if zero_based else 1,
            "group_queries": bool(group_queries),
            "n_features": ds.n_features,
            "train_file": name,
            "train_file_bytes": int(buf.shape[0]),
            "train_file_sha256": checksum.hexdigest,
            "n_queries": ds.n_queries,
            "n_documents": ds.n_rows,
            "n_pairs": ds.n_pairs,
            "objective": float(result.objective),
            "iterations": result.iterations,
            "converged": bool(result.converged),
            "stop_reason": result.message,
            "violated_pairs": result.n_active,
        }
    )
    header.update(result.extra)
    header["read_time_seconds"] = round(t_read, 6)
    header["train_time_seconds"] = round(result.train_time, 6)
    write_model(model_file, Model(weights=result.w, header=header))
    if log:
        log(
            f"{'converged' if result.converged else 'NOT converged'} after {result.iterations} iterations: "
            f"objective {result.objective:.12g}, {result.n_active} violated pairs; "
            f"wrote {model_file} in {time.perf_counter() - t0:.3f}s total"
        )
    return result


def _linear_scores(model: Model, ds) -> tuple[np.ndarray, int]:
    from rankkit.objectives._sparse import csr_matvec, ignored_entries

    scores = csr_matvec(ds.data, ds.indices, ds.indptr, model.weights, np.empty(ds.n_rows))
    return scores, int(ignored_entries(ds.indices, model.n_features))


def predict(data_file, model_file, out_file="-", zero_based=None, group_queries=False, log: Log = None):
    check_writable(out_file)
    model = read_model(model_file)
    base0 = model.zero_based if zero_based is None else zero_based
    ds = read_svmlight(data_file, zero_based=base0, group_queries=group_queries, labels_optional=True)
    scores, ignored = _linear_scores(model, ds)
    if ds.order is not None:
        unsorted = np.empty_like(scores)
        unsorted[ds.order] = scores
        scores = unsorted
    write_scores(out_file, scores)
    if log:
        log(f"scored {ds.n_rows} documents in {ds.n_queries} queries with {model_file} ({model.n_features} features)")
        if ignored:
            log(
                f"ignored {ignored} feature values with an index above "
                f"{model.n_features - 1 if base0 else model.n_features} (features the model was not trained on)"
            )
    return scores


def evaluate(data_file, scores_file, metrics=None, fmt="table", zero_based=False, group_queries=False, echo=print):
    from rankkit import metrics as M

    names = tuple(metrics) if metrics else M.DEFAULT_METRICS
    for m in names:
        M.parse_metric(m)  # fail on a bad metric name before reading anything
    ds = read_svmlight(data_file, zero_based=zero_based, group_queries=group_queries)
    scores = read_scores(scores_file)
    if scores.shape[0] != ds.n_rows:
        raise DataError(
            display_name(scores_file),
            f"has {scores.shape[0]} scores but {display_name(data_file)} has {ds.n_rows} documents",
        )
    if ds.order is not None:
        scores = scores[ds.order]
    convention = "letor4"
    values = M.evaluate(ds.y, scores, ds.qptr, names, convention=convention)
    if fmt == "json":
        echo(json.dumps(values))
    elif fmt == "tsv":
        for k, v in values.items():
            echo(f"{k}\t{v!r}")
    else:
        width = max(len(k) for k in values)
        echo(f"# {ds.n_queries} queries, {ds.n_rows} documents, convention {convention}")
        for k, v in values.items():
            echo(f"{k:<{width}}  {v:.6f}")
    return values

