"""What runs on a Dask worker: each part's data and objective, kept in the worker's memory.

State lives in a per-process dict keyed by (fit id, part number), not in a Dask Actor: an actor
dies with its worker and its calls are never re-run elsewhere, whereas a plain task that finds no
state for its part simply rebuilds it (reads the part again) wherever the scheduler ran it. A part
is opened exactly as one process opens a file (rankkit.io.svmlight.read_svmlight: its group file
`part.query` / `part.group`, its compression, a URL through fsspec); its path is absolute (made so
on the client by rankkit.io.parts.expand_parts), since a worker has its own working
directory. Every task therefore carries everything needed to rebuild its state: the part's
spec (path, options, the fit's settings) and the point (w, and the direction d in a line search)
at which it computes. The state is only a cache; a task's result is a deterministic function of
its arguments, so a part re-read on another worker after a crash gives the same bits, and the
model the same bytes.

    load      read the part, return its facts (rows, queries, pairs, features, largest |x|)
    fg        L_k(Xw) and X' dL_k/dy at w                  (y = X w computed afresh, kept)
    hv        X' H_k X s at w                              (re-sorts only if the state moved)
    ls        L_k, gy.delta, delta' H_k delta at y + t delta (delta = X d kept per direction)

delta = X d is summed from CG's own products as one process sums it (rankkit.solvers.newton.SummedXd):
each hv round brings the step length alpha of the previous round's p (its X p is still in the
objective's last_xs) and the part adds alpha X p into delta before its product; the line search's
first round brings the last one. A part that lost the sum (its worker was lost, it moved) replays
the direction's steps (alpha, p) from the lineage, the same bits.

Nothing here imports dask: the functions are plain and testable in-process.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from rankkit import threads
from rankkit.io.parts import shareable_qids
from rankkit.errors import DataError, UsageError
from rankkit.io.files import display_name, is_url
from rankkit.io.query_weights import read_query_weights
from rankkit.io.svmlight import FileDigest, read_svmlight
from rankkit.sparse import csr_matvec
from rankkit.solvers.base import ExactRankSVM
from rankkit.solvers.base import check_magnitude as _check_magnitude
from rankkit.solvers.newton import add_step_scores
from rankkit.vectors import dot

_STATE: dict = {}  # (fit_id, part) -> _Part
_THREADS: int | None = None  # kernel threads per task (set_threads); numba's setting is per calling thread
_LOCK = threading.Lock()  # a worker with several threads may run two tasks of one part at once
_PART_LOCKS: dict = {}


@dataclass(frozen=True)
class PartSpec:
    """How to build one part's state from nothing: picklable, sent with every task."""

    fit_id: str
    index: int
    path: str  # absolute, or a URL
    zero_based: bool = False
    # set once the global facts are known (None while loading)
    n_features: int | None = None
    loss: str = "squared-hinge"
    query_norm: bool = False
    rescale: str | None = None
    delta: str = "gain"
    query_weights: object = None  # a path, a {qid: weight} dict, or None
    group_file: str | None = "auto"  # "auto": the part's own FILE.query / FILE.group; None: none
    narrow_indices: bool = True  # uint16 column indices when they fit (as `rankkit train FILE` reads for newton)
    narrow_values: bool = True  # 4-byte decimal codes when every value is one exactly (the same bits; as train FILE)
    # the columns that occur in some part (sorted int64), when few of many do (Dataset.compact_columns'
    # rule, on all the parts): the part trains on them renumbered 0..len-1; None: every column
    columns: object = field(default=None, compare=False)
    # a part of a dask collection (rankkit.distributed.collections): its data comes with each task
    # (part_data, a future the scheduler recomputes from the collection's graph if its worker is
    # lost); path is then only its name in messages
    in_memory: bool = False

    def __post_init__(self):  # on the client, where the spec is made (unpickling does not run it)
        if self.in_memory:
            return
        _readable_on_a_worker(self.path)
        if not is_url(self.path) and not os.path.isabs(self.path):  # the user's directory, not the worker's
            object.__setattr__(self, "path", os.path.abspath(self.path))


@dataclass
class _Part:
    ds: object
    obj: object = None
    reads: int = 1
    y: np.ndarray | None = None
    y_key: object = None
    delta: np.ndarray | None = None
    delta_key: object = None
    trial: np.ndarray | None = None  # the last line-search trial's scores y + t delta
    trial_key: object = None  # (point key, direction key, t) of those
    at: object = None  # the point the objective's sorted state belongs to
    xp_key: object = None  # the hv round whose X p is in obj.last_xs
    sum_key: object = None  # the direction whose X d is being summed into delta (CG's steps so far)
    sum_steps: int = 0  # how many of its steps delta holds
    sum_last: object = None  # the hv round of the last step added
    extra: dict = field(default_factory=dict)


def _part_lock(key):
    with _LOCK:
        return _PART_LOCKS.setdefault(key, threading.Lock())


def _readable_on_a_worker(path) -> None:
    if path == "-":
        raise UsageError("standard input (-) cannot be a part on a Dask cluster (the workers cannot read it): "
                         "give a file or URL the workers can read")


def _read(spec: PartSpec):
    """The part as one process reads the file (errors: `part:line: message`), and the SHA-256 and
    size of its (decompressed) bytes, recorded in the model."""
    digest = FileDigest()
    _visible_here(spec.path)
    ds = read_svmlight(spec.path, spec.zero_based, groups=spec.group_file, digest=digest,
                       narrow_indices=spec.narrow_indices, narrow_values=spec.narrow_values)
    return ds, digest.hexdigest(), digest.nbytes


def _visible_here(path: str) -> None:
    """A part this worker cannot see: a DataError naming the worker and its host (the path is
    absolute, the client's; the workers must see the same file system)."""
    if is_url(path) or os.path.exists(path):
        return
    where = _address()
    if where.startswith("pid:"):  # not on a worker (predict_parts without a client): the reader's own words
        return
    import socket

    raise DataError(display_name(path), f"no such file on the Dask worker {where} (host {socket.gethostname()}, "
                    f"working directory {os.getcwd()}): the workers must see the parts at the path the client gives")


def read_part(path: str, zero_based: bool = False, labels_optional: bool = False, group_file: str | None = "auto"):
    """A part as a Dataset (predict and eval over parts): opened as one process opens a file."""
    _readable_on_a_worker(path)
    _visible_here(path)
    return read_svmlight(path, zero_based, labels_optional=labels_optional, groups=group_file)


def _state(spec: PartSpec, part_data=None) -> tuple[_Part, bool]:
    """The part's state, built (read, objective) if this process does not hold it. Returns
    (state, whether it was rebuilt here). part_data: (Dataset, query weights or None) of a part
    of a dask collection (spec.in_memory), which is not read but given."""
    key = (spec.fit_id, spec.index)
    st = _STATE.get(key)
    rebuilt = False
    if st is None:
        if spec.in_memory:
            if part_data is None:
                raise RuntimeError("rankkit: a task of a dask collection's part came without its data")  # never: a bug
            ds, weights = part_data
            st = _Part(ds)
            st.extra.update(sha256=None, bytes=0, query_weights=weights)
        else:
            ds, sha, nbytes = _read(spec)
            st = _Part(ds)
            st.extra.update(sha256=sha, bytes=nbytes)
        _STATE[key] = st
        rebuilt = True
    if spec.n_features is not None and st.obj is None:
        _build_objective(st, spec)
    return st, rebuilt


def _build_objective(st: _Part, spec: PartSpec) -> None:
    ds = st.ds
    if spec.columns is not None:  # few of many columns occur: the part on those, renumbered (a sparse model);
        # every column of the part is one of them (Dataset.compact_columns' renumbering)
        indices = np.searchsorted(spec.columns, ds.indices).astype(np.int32)
        ds = ds.with_changes(indices=indices, n_features=int(spec.columns.shape[0]))
        st.ds = ds
    elif ds.n_features != spec.n_features:
        ds = ds.with_changes(n_features=int(spec.n_features))
        st.ds = ds
    weights = st.extra.get("query_weights")
    if spec.query_weights is not None:
        weights = part_query_weights(ds, spec.query_weights)
    # the same objective the single-process solvers build (loss, weights, query_norm, rescaling)
    solver = ExactRankSVM(C=1.0, loss=spec.loss, query_norm=spec.query_norm, query_weights=weights,
                          rescale=spec.rescale, delta=spec.delta)
    st.obj = solver.objective(ds)
    st.extra["weighted_pairs"] = bool(np.any((st.obj.qweight > 0) & (ds.pairs_per_query > 0)))


def part_query_weights(ds, source) -> np.ndarray:
    """The weight of each query of the part, from a `qid weight` file (read here, on the worker)
    or a dict. Every query needs one; whether some query with pairs has a positive weight is a
    question about all the parts together, answered on the client."""
    table = source if isinstance(source, dict) else read_query_weights(source)
    qids = ds.qid[ds.qptr[:-1]].tolist()
    missing = [q for q in qids if q not in table]
    if missing:
        name = display_name(source) if isinstance(source, str) else "query_weights"
        raise DataError(name, f"has no weight for qid {missing[0]} of {ds.source}"
                        + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    return np.array([table[q] for q in qids], dtype=np.float64)


def _timed(fn):
    """Each task returns (result, seconds of compute, worker address, reads done here)."""

    def wrapper(spec: PartSpec, *args, part_data=None):
        t0 = time.perf_counter()
        apply_threads()
        with _part_lock((spec.fit_id, spec.index)):
            st, rebuilt = _state(spec, part_data)
            out = fn(st, spec, *args)
        return out, time.perf_counter() - t0, _address(), int(rebuilt)

    wrapper.__name__ = fn.__name__
    wrapper.__qualname__ = fn.__qualname__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except Exception:  # not on a worker (in-process tests)
        return f"pid:{os.getpid()}"


# -- the tasks ---------------------------------------------------------------------------------
@_timed
def load(st: _Part, spec: PartSpec) -> dict:
    """The part's facts. group_file: the group file that numbered its queries (None: its own qids)."""
    ds = st.ds
    big = ds.max_abs_value()
    return {"n_rows": ds.n_rows, "n_queries": ds.n_queries, "n_pairs": ds.n_pairs, "n_features": ds.n_features,
            "nnz": ds.nnz, "max_abs": big, "has_qid": bool(ds.has_qid),
            "qid_min": int(ds.qid.min()), "qid_max": int(ds.qid.max()), "sha256": st.extra["sha256"],
            "bytes": st.extra["bytes"], "group_file": ds.group_file}


@_timed
def columns(st: _Part, spec: PartSpec) -> np.ndarray:
    """The sorted distinct columns of the part (int64)."""
    return np.unique(st.ds.indices).astype(np.int64)


def part_qids(spec: PartSpec, part_data=None):
    """(sorted distinct qids, the part number of each): the leaf of the query-split check; none
    for a part whose queries a group file numbered (rankkit.io.parts.shareable_qids)."""
    with _part_lock((spec.fit_id, spec.index)):
        st, _ = _state(spec, part_data)
        q = shareable_qids(st.ds)
    return q, np.full(q.shape[0], spec.index, dtype=np.int64)


def merge_qids(a, b):
    """Merge two (qids, part) lists; a qid in both is a split query: returns ("split", qid, part,
    part) then, and that finding travels up the tree unchanged."""
    if isinstance(a, tuple) and a and isinstance(a[0], str):
        return a
    if isinstance(b, tuple) and b and isinstance(b[0], str):
        return b
    q = np.concatenate([a[0], b[0]])
    p = np.concatenate([a[1], b[1]])
    order = np.argsort(q, kind="stable")
    q, p = q[order], p[order]
    dup = np.flatnonzero(q[1:] == q[:-1])
    if dup.size:
        # the split whose second part comes first in part order, so that the message is stable
        i = int(dup[np.lexsort((p[dup], p[dup + 1]))[0]])
        first, second = sorted((int(p[i]), int(p[i + 1])))
        return ("split", int(q[i]), first, second)
    return q, p


def first_line_of_qid(spec: PartSpec, qid: int, part_data=None) -> int | None:
    with _part_lock((spec.fit_id, spec.index)):
        st, _ = _state(spec, part_data)
        rows = np.flatnonzero(st.ds.qid == qid)
        if rows.size == 0 or st.ds.line is None:
            return None
        return int(st.ds.line[rows[0]])


def check_magnitude(spec: PartSpec, scale: float, knob: str, words: str, n_features: int, part_data=None) -> None:
    """The single-process magnitude check, on this part with the global scale and features."""
    with _part_lock((spec.fit_id, spec.index)):
        st, _ = _state(spec, part_data)
        ds = st.ds if st.ds.n_features == n_features else st.ds.with_changes(n_features=int(n_features))
        _check_magnitude(ds, scale, knob, words)


@_timed
def setup(st: _Part, spec: PartSpec) -> dict:
    return {"weighted_pairs": st.extra["weighted_pairs"]}


NEED_LINEAGE = "rankkit: need the point's lineage"  # a task's answer when its part cannot rebuild the point alone


def step_scores(y: np.ndarray, delta: np.ndarray, t: float, out: np.ndarray) -> np.ndarray:
    """y + t delta into `out` (out may be delta, never y), as rankkit.solvers.newton.line_search
    forms its trial scores: y + delta at t = 1, else (delta * t) then + y."""
    if t == 1.0:
        return np.add(y, delta, out=out)
    np.multiply(delta, t, out=out)
    return np.add(y, out, out=out)


def _ensure_y(st: _Part, key, how, lineage=None):
    """The scores y of the point `key`, or None if this part cannot make them without the
    lineage. how: w (a point whose scores are X w, computed afresh), or ("step", parent key,
    direction key, t): the point reached by a Newton step, whose scores are its parent's plus t X d
    (as one process keeps them: y += t delta), which are the scores of the line search's trial at
    t. lineage: (w0, [(d, t), ...]): the steps from the fit's first point, sent by the client only
    when this part has lost them (its worker was lost, or the part moved): the scores are then
    replayed step by step, the same bits."""
    if st.y_key == key:
        return st.y
    if isinstance(how, np.ndarray):  # y = X w afresh
        st.y = st.obj.scores(how, st.y if st.y is not None else None)
        st.y_key = key
        return st.y
    trial = how[1:]  # (parent, direction, t)
    if st.trial_key == trial:  # the accepted trial: its scores become the point's (no copy)
        st.y, st.trial = st.trial, st.y
        st.y_key, st.trial_key = key, None
        if st.at == trial:
            st.at = key
        return st.y
    if lineage is None:
        return None
    w0, steps = lineage[0], lineage[1]
    st.sum_key = st.xp_key = None  # the buffers below are overwritten
    y = st.obj.scores(w0, st.y if st.y is not None else None)
    for d, t, summed in steps:
        if summed is None:
            st.delta = st.obj.scores(d, st.delta)
        else:
            _replay_sum(st, summed, y)
        step_scores(y, st.delta, t, st.delta)
        np.copyto(y, st.delta)
    st.y, st.y_key, st.delta_key = y, key, None
    return y


def _scratch(st: _Part, y) -> np.ndarray:
    """The trial scores' buffer, never y itself: a line search's trial, or the scratch of a sum
    (free between line searches, as LocalObjective's)."""
    if st.trial is None or st.trial is y:
        st.trial = np.empty(st.obj.n_rows)
    st.trial_key = None
    return st.trial


def _add_step(st: _Part, acc, y) -> None:
    """acc = (direction key, k, hv round, alpha): CG's step k took alpha times the p of that hv
    round, whose X p is in last_xs: delta += alpha X p (rankkit.solvers.newton.add_step_scores).
    A part that cannot (its sum or its product was lost) drops the sum: its line search replays
    the direction from the lineage."""
    if acc is None:
        return
    dkey, k, pkey, alpha = acc
    if st.sum_key == dkey and st.sum_steps == k + 1 and st.sum_last == pkey:
        return  # added already (the same task run twice)
    if st.xp_key != pkey or (k > 0 and (st.sum_key != dkey or st.sum_steps != k)):
        st.sum_key = None
        return
    if k == 0:
        if st.delta is None:
            st.delta = np.empty(st.obj.n_rows)
        st.delta_key = None
    add_step_scores(st.delta, st.obj.last_xs, alpha, k == 0, _scratch(st, y))
    st.sum_key, st.sum_steps, st.sum_last = dkey, k + 1, pkey


def _replay_sum(st: _Part, summed, y) -> None:
    """delta = the sum of alpha X p over a direction's CG steps [(alpha, p), ...], step by step
    as they were added (each X p into last_xs, the buffer the hv round's product used)."""
    if st.delta is None:
        st.delta = np.empty(st.obj.n_rows)
    scratch = _scratch(st, y)
    st.sum_key = st.xp_key = None
    for k, (alpha, p) in enumerate(summed):
        add_step_scores(st.delta, st.obj.scores(p, st.obj.last_xs), alpha, k == 0, scratch)


def _ensure_at(st: _Part, key, how, lineage=None) -> bool:
    """The objective's sorted state at the point `key` (False: the lineage is needed)."""
    if st.at != key:
        y = _ensure_y(st, key, how, lineage)
        if y is None:
            return False
        if st.at != key:
            st.obj.loss_y(y)
            st.at = key
    return True


@_timed
def fg(st: _Part, spec: PartSpec, key, how, lineage=None) -> tuple:
    """(L_k(y), X' dL_k/dy, violated pairs) at the point `key` (how, lineage: _ensure_y)."""
    if not _ensure_at(st, key, how, lineage):
        return NEED_LINEAGE
    return float(st.obj.loss_value), st.obj.gradient_loss(), int(st.obj.n_active)


@_timed
def hv(st: _Part, spec: PartSpec, key, how, s, acc=None, pkey=None, lineage=None) -> np.ndarray:
    """X' H_k X s at the point `key`; before it, acc's step added to the summed X d (_add_step);
    pkey names this round (its X s is the next step's X p)."""
    if not _ensure_at(st, key, how, lineage):
        return NEED_LINEAGE
    _add_step(st, acc, st.y)
    st.xp_key = None
    out = st.obj.hess_vec_loss(s)
    st.xp_key = pkey
    return out


@_timed
def precond(st: _Part, spec: PartSpec, key, how, kind: str, lineage=None) -> np.ndarray:
    """The part's share of CG's preconditioner at the point `key` (rankkit.solvers.newton.Preconditioned):
    "diag" diag(X_k' H_k X_k), "matrix" X_k' H_k X_k, "sumsq" the features' sums of squares."""
    if kind == "sumsq":
        return st.obj.column_sumsq()
    if not _ensure_at(st, key, how, lineage):
        return NEED_LINEAGE
    return st.obj.hess_diag() if kind == "diag" else st.obj.hess_matrix()


@_timed
def ls(st: _Part, spec: PartSpec, key, how, dkey, d, t: float, slopes: bool = True, summed=None, lineage=None):
    """(L_k, gy.delta, delta' H_k delta) at y + t delta, delta = X d, y the scores of the point
    `key`: one step of the line search (on a cluster the slopes come with it: one round; without
    `slopes`, L_k alone, and ls_slopes gives them when the search asks). The trial's scores are
    kept: the point the step reaches. summed: None (delta = X d, a product), or (n, acc): delta
    is the sum of the direction's n CG steps, the last one acc's (_add_step; None if an hv round
    brought it), replayed from the lineage's third entry if this part lost it."""
    y = _ensure_y(st, key, how, lineage)
    if y is None:
        return NEED_LINEAGE
    if st.delta_key != dkey:
        if summed is None:
            st.delta = st.obj.scores(d, st.delta)
        else:
            n, acc = summed
            _add_step(st, acc, y)
            if st.sum_key != dkey or st.sum_steps != n:
                if lineage is None:
                    return NEED_LINEAGE
                _replay_sum(st, lineage[2], y)
        st.delta_key, st.sum_key = dkey, None
    delta = st.delta
    step_scores(y, delta, t, _scratch(st, y))
    loss = st.obj.loss_y(st.trial)
    st.at = st.trial_key = (key, dkey, t)
    if not slopes:
        return float(loss)
    return (float(loss),) + _slopes(st)


def _slopes(st: _Part) -> tuple:
    """(gy.delta, delta' H_k delta) at the last trial."""
    delta = st.delta
    return dot(st.obj.gy, delta), dot(delta, st.obj.hess_vec_y(delta))


@_timed
def ls_slopes(st: _Part, spec: PartSpec, key, dkey, t: float) -> tuple:
    """ls's slopes at its trial (key, dkey, t), asked after it (in the process holding the part)."""
    if st.at != (key, dkey, t) or st.delta_key != dkey:
        raise RuntimeError("rankkit: the line search's slopes asked of a part that moved from its trial")
    return _slopes(st)


@_timed
def score_spread(st: _Part, spec: PartSpec, g) -> float:
    """max_i |x_i . g| over the part's documents (the grid path's C_min)."""
    ds = st.ds
    if ds.n_rows == 0:
        return 0.0
    return float(np.max(np.abs(csr_matvec(ds.data, ds.indices, ds.indptr, g, np.empty(ds.n_rows), ds.value_scale))))


def release(fit_id: str) -> int:
    """Forget every part of a fit held by this process; returns how many."""
    with _LOCK:
        keys = [k for k in _STATE if k[0] == fit_id]
        for k in keys:
            del _STATE[k]
            _PART_LOCKS.pop(k, None)
    return len(keys)


async def release_soon(fit_id: str) -> int:
    """release() as a coroutine: what Client.run(..., wait=False) needs (the client does not wait
    on a cluster that may be lost)."""
    return release(fit_id)


def set_threads(n: int) -> int:
    """The number of kernel threads of this worker's tasks (run on every worker with client.run).
    Set for the worker process (rankkit.threads.apply); each task applies it again
    (apply_threads), in case the process's setting changed. Without it, a task's kernels would use every
    core of the machine, which on a LocalCluster of N processes oversubscribes the cores N times
    (measured here: 15x slower per round)."""
    global _THREADS
    _THREADS = threads.apply(max(1, int(n)))
    return _THREADS


def apply_threads() -> None:
    if _THREADS is not None:
        if threads.explicit() != _THREADS:
            threads.apply(_THREADS)


def held_parts() -> int:
    """How many parts this process holds (of every fit): what a test or an operator asks a worker."""
    return len(_STATE)
