"""The truncated Newton RankSVM on parts: the driver (CG, line search, stopping rule:
rankkit.solvers.newton.truncated_newton, unchanged) runs on the client; each f/g, each
Hessian-vector product and each line-search step is one round of per-part partial sums computed
where the parts live (rankkit.parts.worker): on the workers of a Dask cluster (Problem), or
in this process (LocalProblem: `rankkit train PARTS...` without --dask, fit_parts without a client).

    f(w)  = 0.5 w.w + C sum_k L_k(X_k w)          g = w + C sum_k X_k' dL_k/dy
    H s   = s + C sum_k X_k' H_k X_k s            phi(t) = f(w + t d), phi', phi'' as sums of scalars

Only d-vectors and scalars travel: the scores y = Xw and delta = Xd stay with the parts. The
scores follow the one-process rule (rankkit.solvers.newton.LocalObjective): y = X w at the first
point, then y += t delta along the steps (the accepted line-search trial's scores become the
point's: no new product, no new sort), X w afresh at the returned point. A part that lost them
(its worker was lost, or it moved to another worker) answers NEED_LINEAGE, and the client sends
the point's lineage (the first w, each step's direction and length, and the CG steps (alpha, p)
whose X p summed its X d), which the part replays: the same bits. X d is summed from CG's
products as one process sums it (rankkit.solvers.newton.SummedXd, the same directions): each
Hessian-vector round carries the previous CG step's alpha, the line search's first round the last
one (DaskObjective.cg_step; no round of its own).

The partial sums are added in part order (never in order of arrival), and each part's sum is a
deterministic function of its data and the point, so the model has the same bytes for any number
of workers, any assignment of parts to workers, after a worker is lost and its parts are read
again elsewhere, and in one process (LocalProblem runs the same task functions, part after part,
and the same reduction): one process and a cluster give the same weights, iterations, CG steps
and objective, bit for bit (tests/test_distributed_bytes.py). On a single part every number is
LocalObjective's on that file (a sum over one part is that part's number), so `--dask` on one
file is `rankkit train FILE`, bit for bit; on several parts the sums are grouped by part, so the
concatenated file's one-file fit is the same optimum to rounding, not the same bytes.

Why per-part sums in one process rather than one reduction order independent of the partition
(a fixed tree over the global query index): that would change the one-file fit too, and every
kernel's internal sums (per thread chunk, per query block) would have to follow the global tree
across part boundaries; the per-part reduction needs no new kernel, keeps the parts apart in
memory (never concatenated: the data once, not twice), and makes any future change of the
driver apply to both faces at once, since both run truncated_newton on the same DaskObjective.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
import uuid
from dataclasses import replace

import numpy as np

from rankkit.parts import worker as W
from rankkit.parts.cluster import ClusterError, cluster_failures, connect, watch, workers
from rankkit.io.parts import expand_parts, joined_name
from rankkit.data import COMPACT_MIN_FEATURES
from rankkit.errors import DataError, UsageError
from rankkit.io.model import Model
from rankkit.io.query_weights import read_query_weights
from rankkit.io.svmlight import display_name
from rankkit.objectives.rescale import canonical_rescale
from rankkit.paths.grid import c_min_of_spread
from rankkit.solvers.base import DEFAULT_MAX_ITER, DEFAULT_TOL, MAGNITUDE_LIMIT, FitResult, quiet_fp
from rankkit.solvers.newton import DENSE_MAX_FEATURES, SummedXd, minimise_along, truncated_newton
from rankkit.solvers.options import check_dask
from rankkit.training import Plan, cluster_facts, fit_outcome, model_header, needs_warning, stop_words
from rankkit.vectors import dot


class Problem:
    """The parts loaded on a cluster, for one or several fits (a C path) on the same data.

    Parts are assigned to the workers round-robin in part order; a task carries its part's spec,
    so if the worker holding a part is lost, the scheduler runs the task elsewhere and that worker
    reads the part again. Each round records where every part actually ran, and the next round
    goes there."""

    moves = True  # its rounds move bytes between the client and the workers (counted)

    def __init__(self, client, parts, *, loss="squared-hinge", query_norm=False, rescale=None, delta="gain",
                 query_weights=None, zero_based=False, log=None):
        self.client = client
        self.log = log
        self.parts = [str(p) for p in parts]
        if not self.parts:
            raise UsageError("no parts to train on")
        self.fit_id = uuid.uuid4().hex
        self.specs = [self._spec(k, p, zero_based) for k, p in enumerate(self.parts)]
        self._connect()
        self.reads = 0  # parts read again after their worker was lost
        self.rounds = 0
        self.bytes_in = 0  # to the workers (points and directions), bytes of the numpy payloads
        self.bytes_out = 0  # back from the workers (partial sums)
        self.compute = 0.0  # critical path of the rounds: the busiest worker's compute
        self.wall = 0.0  # wall time of the rounds on the client
        self._submits = 0  # tasks submitted (a suffix making every task key new)
        self._keys = 0  # names of the points (w) and directions (d) whose state the workers cache
        self.new_fit()
        t0 = time.perf_counter()
        try:
            self._load()
            self._setup(loss, query_norm, rescale, delta, query_weights)
        except BaseException:
            self.close()  # nothing of a Problem that failed to start is left held
            raise
        self.read_seconds = time.perf_counter() - t0
        self.loaded = (self.rounds, self.compute, self.wall, self.bytes_in + self.bytes_out)  # the fits' figures start here

    def _connect(self) -> None:
        client = self.client
        self.watch = watch(client)  # every wait bounded (rankkit.parts.cluster.Watch)
        live = self.watch.live() if client.status == "running" else workers(client)
        if not live:
            raise ClusterError("the Dask cluster has no worker")
        self.where = [live[k % len(live)] for k in range(len(self.parts))]
        self.n_workers = len(live)

    # -- rounds -------------------------------------------------------------------------------
    def _place(self, live) -> None:
        """Parts whose worker is gone go to the live workers, round-robin in part order."""
        alive = set(live)
        for k in range(len(self.where)):
            if self.where[k] not in alive:
                self.where[k] = live[k % len(live)]

    sources = None  # parts of a dask collection: the future of each part's data (collections.CollectionProblem)

    def _spec(self, k: int, path: str, zero_based: bool) -> W.PartSpec:
        return W.PartSpec(self.fit_id, k, path, bool(zero_based))

    def _submit(self, fn, k, *args, key=None):
        self._submits += 1
        data = {} if self.sources is None else {"part_data": self.sources[k]}
        return self.client.submit(fn, self.specs[k], *args, workers=[self.where[k]], allow_other_workers=True,
                                  pure=False, key=f"{key}-{self._submits}" if key else None, **data)

    def _run(self, fn, ks, args, tag):
        """fn(spec_k, *args) for the parts ks, results in that order: (result, seconds, address,
        rebuilt). A batch whose workers change under it is submitted again (Watch): the same results."""

        def submit(live):
            self._place(live)
            return [self._submit(fn, k, *args, key=f"{tag}-{k}") for k in ks]

        return self.watch.gather(submit)

    def _round(self, fn, *args, sent_bytes=0, point=None, direction=None):
        """One task per part, results in part order. A part that answers NEED_LINEAGE (it lost
        the scores of `point`, or the summed X d of `direction`: its worker was lost, or it moved)
        is asked again with their lineage, and replays it: the same results."""
        t0 = time.perf_counter()
        tag = f"rankkit-{fn.__name__}-{self.fit_id[:8]}-{self.rounds}"
        self.rounds += 1
        per_worker: dict = {}
        results = [None] * len(self.specs)
        ks, batch = list(range(len(self.specs))), args
        for attempt in range(2):
            outs = self._run(fn, ks, batch, tag if attempt == 0 else tag + "-lineage")
            for k, (res, seconds, addr, rebuilt) in zip(ks, outs):
                results[k] = res
                per_worker[addr] = per_worker.get(addr, 0.0) + seconds
                if rebuilt and self.rounds > 1:
                    self.reads += 1
                    if self.log:
                        self.log(f"part {k} ({self.parts[k]}) read again on {addr} (its worker was lost)")
                self.where[k] = addr
            if self.moves:
                self.bytes_in += sent_bytes * len(ks)
                self.bytes_out += sum(_nbytes(results[k]) for k in ks)
            ks = [k for k in ks if isinstance(results[k], str) and results[k] == W.NEED_LINEAGE]
            if not ks:
                break
            if point is None or attempt:
                raise RuntimeError(f"rankkit: a part could not rebuild the point {point!r}")  # never: a bug
            lineage = self.lineage(point, direction)
            batch = args + (lineage,)
            sent_bytes += _nbytes(lineage)
        wall = time.perf_counter() - t0
        compute = max(per_worker.values())
        self.wall += wall
        self.compute += min(compute, wall)
        return results

    def _call(self, fn, k, *args):
        """fn(spec_k, *args) once, on part k's worker (a RankkitError raised there stays itself)."""

        def submit(live):
            self._place(live)
            return [self._submit(fn, k, *args)]

        return self.watch.gather(submit)[0]

    def _where_words(self) -> str:
        return f"on {self.n_workers} workers"

    # -- loading and the checks a single process makes on the whole file ----------------------------
    def _load(self):
        t0 = time.perf_counter()
        facts = [r for r in self._round(W.load)]
        self.facts = facts
        no_qid = [k for k, f in enumerate(facts) if not f["has_qid"]]
        if no_qid and len(facts) > 1:
            raise DataError(self.parts[no_qid[0]], "has no qid (the whole file is one query): with several parts, "
                            "every line needs qid:<int> and each query must be whole in one part")
        self._check_split()
        self.n_rows = sum(f["n_rows"] for f in facts)
        self.n_queries = sum(f["n_queries"] for f in facts)
        self.n_pairs = sum(f["n_pairs"] for f in facts)
        self.n_features = max(f["n_features"] for f in facts)
        self.nnz = sum(f["nnz"] for f in facts)
        if self.log:
            self.log(f"read {len(self.parts)} parts {self._where_words()}: {self.n_rows} documents, "
                     f"{self.n_queries} queries, {self.n_pairs} pairs, {self.n_features} features, {self.nnz} "
                     f"non-zeros in {time.perf_counter() - t0:.3f}s")
        if self.n_pairs == 0:
            raise DataError(self.parts[0] if len(self.parts) == 1 else f"{self.parts[0]} ... ({len(self.parts)} parts)",
                            "no preference pairs: every query has only one relevance level, so there is nothing to rank")
        self._compact()

    def _compact(self) -> None:
        """Dataset.compact_columns' rule on all the parts (what `rankkit train FILE` does): when
        more than COMPACT_MIN_FEATURES columns and at most half of them occur (a mistyped index
        such as 100000000), train on the columns that occur (`columns`; n_features becomes their
        number, n_total stays the data's) and write a sparse model."""
        self.n_total, self.columns = self.n_features, None
        if self.n_features <= COMPACT_MIN_FEATURES:
            return
        used = np.unique(np.concatenate(self._round(W.columns)))
        if used.shape[0] > self.n_features // 2:
            return
        self.columns, self.n_features = used, int(used.shape[0])
        if self.log:
            self.log(f"training on the {used.shape[0]} feature indices that occur (of {self.n_total}); sparse model")

    def _check_split(self):
        """A query id in two parts is an error naming both."""
        if len(self.specs) == 1:
            return
        found = self._split_finding()
        if found is not None:
            _, q, a, b = found
            line = self._call(W.first_line_of_qid, b, q)
            raise DataError(self.parts[b], f"qid {q} is also in the part {self.parts[a]}: a query split across parts "
                            "(each query must be whole in one part)", line)

    def _split_finding(self):
        """None, or ("split", qid, part, part): a tree of merges on the workers, so the client never
        holds the list of query ids (only the finding travels back)."""
        c = self.client

        def submit(live):  # the whole tree, again if a worker is lost under it
            self._place(live)
            level = [self._submit(W.part_qids, k) for k in range(len(self.specs))]
            held = list(level)
            while len(level) > 1:
                nxt = [c.submit(W.merge_qids, level[i], level[i + 1], pure=False) for i in range(0, len(level) - 1, 2)]
                if len(level) % 2:
                    nxt.append(level[-1])
                held.extend(nxt)
                level = nxt
            top = c.submit(_finding, level[0], pure=False)
            for f in held:  # the scheduler keeps what `top` needs
                f.release()
            return [top]

        return self.watch.gather(submit)[0]

    def _setup(self, loss, query_norm, rescale, delta, query_weights):
        loss = check_dask(None, loss)
        if rescale is not None and delta == "swap":
            raise UsageError("--delta swap is not a function of the labels: it needs --solver newton-pairs (one process)")
        if rescale is not None and loss != "squared-hinge" and rescale.startswith("margin"):
            raise UsageError("margin rescaling is defined for the squared-hinge loss")
        rescale = canonical_rescale(rescale)  # the name the model records, as one process records it
        self.loss, self.query_norm, self.rescale, self.delta = loss, bool(query_norm), rescale, delta
        self.query_weights = query_weights
        self.specs = [replace(s, n_features=self.n_features, loss=loss, query_norm=bool(query_norm), rescale=rescale,
                              delta=delta, query_weights=query_weights, columns=self.columns) for s in self.specs]
        outs = self._round(W.setup)
        if query_weights is not None and not any(o["weighted_pairs"] for o in outs):
            name = display_name(query_weights) if isinstance(query_weights, str) else "query_weights"
            raise DataError(name, "gives weight 0 to every query that has preference pairs: the loss would vanish and "
                            "the model would be all zero; give some of them a positive weight")

    def check_magnitude(self, C: float) -> None:
        """The single-process check (rankkit.solvers.base.check_exact_magnitude) on all the parts:
        run on the part holding the largest |x|, with the global pairs and features."""
        big = max(f["max_abs"] for f in self.facts)
        scale = C * max(self.n_pairs, 1)
        if not math.isfinite(big) or scale * big * big * max(self.n_features, 1) > MAGNITUDE_LIMIT:
            k = int(np.argmax([f["max_abs"] for f in self.facts]))
            self._call(W.check_magnitude, k, scale, f"-C {C:g}", "C x pairs", self.n_features)

    # -- the points of a fit and their lineage ----------------------------------------------------
    def new_fit(self) -> None:
        """Forget the lineage of the previous fit (its points are never asked for again)."""
        self._fresh, self._steps, self._dirs, self._sums = {}, {}, {}, {}

    def fresh(self, w) -> str:
        """A point whose scores the parts compute afresh, X w."""
        key = self.new_key("w")
        self._fresh[key] = np.array(w, dtype=np.float64, copy=True)
        return key

    def direction(self, d, key=None, summed=None) -> str:
        """A direction of the line search: its key (a new one, or the one its CG steps were summed
        under); summed: its CG steps [(alpha, p), ...] when the parts sum X d from them (the
        lineage a part replays), None when X d is a product."""
        key = self.new_key("d") if key is None else key
        self._dirs[key] = np.array(d, dtype=np.float64, copy=True)
        if summed is not None:
            self._sums[key] = summed
        return key

    def step(self, key, dkey, t: float) -> tuple:
        """The point a Newton step reaches from `key` along `dkey` with length t: (its key, how
        the parts make its scores: those of the line search's trial at t)."""
        child = self.new_key("w")
        self._steps[child] = (key, dkey, float(t))
        return child, ("step", key, dkey, float(t))

    def lineage(self, key, direction=None) -> tuple:
        """(w0, [(d, t, summed), ...], summed): the fit's first point, the steps that lead to `key`
        (summed: the direction's CG steps [(alpha, p), ...] when X d was summed from them, else
        None), and the CG steps of `direction` (the line search's, None if not asked)."""
        steps = []
        while key in self._steps:
            key, dkey, t = self._steps[key]
            steps.append((self._dirs[dkey], t, self._sums.get(dkey)))
        return self._fresh[key], steps[::-1], None if direction is None else self._sums[direction]

    # -- the objective as partial sums -------------------------------------------------------------
    def fg(self, key, how):
        outs = self._round(W.fg, key, how, sent_bytes=_nbytes(how), point=key)
        loss = 0.0
        g = np.zeros(self.n_features)
        active = 0
        for L, gk, a in outs:  # in part order
            loss += L
            g += gk
            active += a
        return loss, g, active

    def hv(self, key, how, s, acc=None, pkey=None):
        """The sum of the parts' X_k' H_k X_k s; acc: the previous CG step to add to the summed X d
        first (worker.hv), pkey: this round's name."""
        outs = self._round(W.hv, key, how, s, acc, pkey, sent_bytes=_nbytes(how) + s.nbytes + _nbytes(acc), point=key)
        z = np.zeros(self.n_features)
        for zk in outs:
            z += zk
        return z

    def precond(self, key, how, kind):
        """The sum over the parts (in part order) of worker.precond's shares."""
        outs = self._round(W.precond, key, how, kind, sent_bytes=_nbytes(how), point=key)
        total = np.zeros_like(outs[0])
        for x in outs:
            total += x
        return total

    def ls(self, key, how, dkey, d, t, summed=None):
        """(L, slopes): L summed over the parts at the trial w + t d, and slopes() -> (g_y.delta,
        delta.H_y.delta) summed over them (each in part order). On a cluster one round gives all
        three (a round trip is dear); LocalProblem asks the slopes only when the search needs them.
        summed: None (the parts form X d by a product), or (n, last step) (worker.ls: X d summed
        from the direction's n CG steps; d itself is then not sent)."""
        d = d if summed is None else None
        outs = self._round(W.ls, key, how, dkey, d, float(t), True, summed,
                           sent_bytes=_nbytes(how) + _nbytes(d) + _nbytes(summed), point=key,
                           direction=None if summed is None else dkey)
        L = gyd = dhd = 0.0
        for a, b, c in outs:
            L += a
            gyd += b
            dhd += c
        return L, lambda: (gyd, dhd)

    def times_clock(self) -> tuple:
        return (self.compute, self.wall, self.bytes_in + self.bytes_out)

    def c_min(self) -> float:
        """rankkit.paths.grid.c_min on the parts: max_i |x_i . grad L(0)| computed where they are."""
        self.new_fit()
        w = np.zeros(self.n_features)
        _, gl, _ = self.fg(self.fresh(w), w)
        spread = max(self._round(W.score_spread, gl, sent_bytes=gl.nbytes))
        return c_min_of_spread(spread, self.parts[0])

    def close(self):
        """Free the parts on every worker (a lost connection is not an error here)."""
        try:
            if self.client.status == "running":
                # never waits on a lost or hung cluster
                self.client.run(W.release_soon, self.fit_id, wait=False, callback_timeout=min(self.watch.connect_timeout, 5))
        except Exception:
            pass

    # -- Newton -----------------------------------------------------------------------------------
    def fit(self, C: float, w0=None, tol: float = DEFAULT_TOL, max_iter: int = DEFAULT_MAX_ITER, log=None,
            precondition: str = "auto", full: bool = True) -> FitResult:
        """Truncated Newton at this C from w0 (zeros if None): rankkit.solvers.newton's driver, on
        the parts' partial sums (precondition: rankkit.solvers.newton.PRECONDITIONERS). With
        `columns` (few of many columns occur), it trains on those: w0 may be over all the columns,
        and the result's w is over all of them (full) or over `columns` only (not full)."""
        C = float(C)
        if self.columns is not None and w0 is not None and np.shape(w0) == (self.n_total,):
            w0 = np.asarray(w0, dtype=np.float64)[self.columns]
        self.check_magnitude(C)
        with quiet_fp():
            res = truncated_newton(DaskObjective(self, C), w0=w0, tol=tol, max_iter=max_iter, log=log,
                                   precondition=precondition)
        if self.columns is not None and full:  # every other column's weight is exactly 0
            w = np.zeros(self.n_total)
            w[self.columns] = res.w
            res = replace(res, w=w)
        return res

    def new_key(self, kind: str) -> str:
        """A name for a point (w) or direction (d) whose state the workers cache: unique over the
        Problem's life, so a later fit never meets an earlier point's state."""
        self._keys += 1
        return f"{kind}{self._keys}"

    def overflow(self, what: str) -> DataError:
        big = max(f["max_abs"] for f in self.facts)
        name = self.parts[0] if len(self.parts) == 1 else f"{self.parts[0]} ... ({len(self.parts)} parts)"
        return DataError(name, f"newton: the {what} overflowed (not finite); the largest feature value is {big:.3g}: "
                         "scale the features down (or lower -C) and train again")

    def times(self, clock) -> str:
        c0, w0, b0 = clock
        comp, wall = self.compute - c0, self.wall - w0
        return (f"compute {comp:.3f}s  communication {max(wall - comp, 0.0):.3f}s  "
                f"moved {_human(self.bytes_in + self.bytes_out - b0)}")


class LocalProblem(Problem):
    """A Problem whose parts are held by this process: `rankkit train PARTS...` (solver newton)
    and RankSVM.fit_parts without a cluster. The rounds run the workers' own task functions
    (rankkit.parts.worker) here, part after part, and Problem adds their results in part
    order, as on a cluster: the same partial sums in the same order, so the same bytes as a fit on
    any cluster. Each part stays its own dataset (never joined): the memory is the parts' data
    and their objectives' vectors, the same as one file holding them, not the data twice."""

    moves = False

    def __init__(self, parts, **kwargs):
        super().__init__(None, parts, **kwargs)

    def _connect(self) -> None:
        self.watch = None
        self.where = ["this process"] * len(self.parts)
        self.n_workers = 1

    def _where_words(self) -> str:
        return "in this process"

    def _run(self, fn, ks, args, tag):
        return [fn(self.specs[k], *args) for k in ks]

    def _call(self, fn, k, *args):
        return fn(self.specs[k], *args)

    def ls(self, key, how, dkey, d, t, summed=None):
        """Problem.ls with the slopes computed only when asked (the same numbers, the same order):
        a step whose t = 1 passes Armijo's test never needs them."""
        t = float(t)
        L = 0.0
        d = d if summed is None else None
        for a in self._round(W.ls, key, how, dkey, d, t, False, summed, point=key,
                             direction=None if summed is None else dkey):
            L += a

        def slopes():
            gyd = dhd = 0.0
            for b, c in self._round(W.ls_slopes, key, dkey, t):
                gyd += b
                dhd += c
            return gyd, dhd

        return L, slopes

    def _split_finding(self):
        """The tree of merges of Problem._split_finding, here."""
        level = [W.part_qids(spec) for spec in self.specs]
        while len(level) > 1:
            nxt = [W.merge_qids(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        return _finding(level[0])

    def close(self):
        W.release(self.fit_id)

    def times(self, clock) -> str:
        return f"{self.wall - clock[1]:.3f}s"


class DaskObjective:
    """rankkit.solvers.newton.NewtonObjective on a Problem's parts at one C (on a cluster, or a
    LocalProblem in this process), as LocalObjective is on one dataset: f and g, each
    Hessian-vector product and each line-search trial are one round of partial sums. The scores
    follow the one-process rule: X w at the first point (and at the returned one, `finish`), then
    y += t delta along the steps (each part keeps its accepted trial's scores, and a part that lost
    them replays the steps from the lineage the client keeps: the same bits). So on a single part
    every number is LocalObjective's: `--dask` on one file is `rankkit train FILE`, bit for bit."""

    def __init__(self, prob: Problem, C: float):
        self.prob, self.C = prob, float(C)
        self.n_features = prob.n_features
        self.n_active = 0
        self._xd = SummedXd(prob.nnz, prob.n_rows, prob.n_features)  # as LocalObjective decides
        self._pending = self._last_p = self._dkey = None  # the step whose alpha the next round brings
        self._steps = []  # the direction's summed CG steps [(alpha, p), ...]: the lineage of its X d

    def _point(self, key, how, w):
        """f and g at the point `key` (w its weights; how: worker._ensure_y)."""
        self._key, self._how = key, how
        L, gl, self.n_active = self.prob.fg(key, how)
        return 0.5 * dot(w, w) + self.C * L, w + self.C * gl

    def _fresh(self, w):
        return self._point(self.prob.fresh(w), w, w)

    def start(self, w):
        self.prob.new_fit()
        out = self._fresh(w)
        self._clock = self.prob.times_clock()
        return out

    def hess_vec(self, s):
        """One round: the previous CG step's alpha rides on it (the parts add alpha X p to their
        summed X d before this product, whose X s is the next step's X p)."""
        acc, self._pending = self._pending, None
        pkey = self.prob.new_key("p")
        self._last_p = (pkey, np.array(s, dtype=np.float64, copy=True)) if self._xd.steps >= 0 else None
        return s + self.C * self.prob.hv(self._key, self._how, s, acc, pkey)

    def new_direction(self):
        """CG starts a direction from 0 (as LocalObjective.new_direction)."""
        self._xd.new_direction()
        self._pending = self._dkey = None
        self._steps = []

    def cg_step(self, alpha, x):
        """CG took x += alpha p after hess_vec(p): the parts will add alpha X p (with the next
        round); the client keeps (alpha, p) for a part that must replay the direction."""
        k = self._xd.step(x)
        if k < 0:
            self._pending = None
            return
        if k == 0:
            self._dkey = self.prob.new_key("d")
        pkey, p = self._last_p
        self._steps.append((float(alpha), p))
        self._pending = (self._dkey, k, pkey, float(alpha))

    # CG's preconditioner (rankkit.solvers.newton.Preconditioned): one round each
    def column_sumsq(self):
        return self.prob.precond(self._key, self._how, "sumsq")

    def hess_diag(self):
        return 1.0 + self.C * np.maximum(self.prob.precond(self._key, self._how, "diag"), 0.0)

    @property
    def dense_possible(self) -> bool:
        return self.n_features <= DENSE_MAX_FEATURES

    def hess_matrix(self):
        H = self.prob.precond(self._key, self._how, "matrix")
        H *= self.C
        H[np.diag_indices_from(H)] += 1.0
        return H

    def linesearch_and_update(self, w, d, f, g, gd):
        """rankkit.solvers.newton.line_search with phi, phi' and phi'' summed over the parts."""
        key, how, C = self._key, self._how, self.C
        n = self._xd.take(d)  # > 0: X d summed from CG's n steps (SummedXd), the last one's alpha sent here
        summed = (n, self._pending) if n else None
        dkey = self.prob.direction(d, self._dkey, self._steps) if n else self.prob.direction(d)
        self._pending = None

        def phi(t):  # L, and the slopes g_y.delta and delta.H_y.delta, summed over the parts at w + t d
            L, slopes = self.prob.ls(key, how, dkey, d, t, summed)
            wt = w + d if t == 1.0 else w + t * d  # as line_search forms it
            return 0.5 * dot(wt, wt) + C * L, slopes

        t, _ = minimise_along(phi, f, gd, dot(w, d), dot(d, d), C)
        if t == 0.0:
            return 0.0, w, f, g
        w = w + t * d
        child, child_how = self.prob.step(key, dkey, t)
        f, g = self._point(child, child_how, w)  # the trial's state at t: no new product, no new sort
        return t, w, f, g

    def finish(self, w, f, g):
        """The objective at the returned w computed afresh from X w, and its gradient (as one process)."""
        f, g = self._fresh(w)
        self.check_finite("objective at the solution", f, w)
        return f, g

    def check_finite(self, what, *values):
        for v in values:
            if not np.all(np.isfinite(v)):
                raise self.prob.overflow(what)

    def clock(self) -> str:
        text = self.prob.times(self._clock)
        self._clock = self.prob.times_clock()
        return text


def _finding(x):
    """The top of the split-check tree: None, or ("split", qid, part, part)."""
    if isinstance(x, tuple) and x and isinstance(x[0], str):
        return x
    return None


def _nbytes(r) -> int:
    if isinstance(r, np.ndarray):
        return int(r.nbytes)
    if isinstance(r, (tuple, list)):
        return sum(_nbytes(x) for x in r)
    return 8


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0


def fit_newton(parts, client, *, C: float = 1.0, loss: str = "squared-hinge", tol: float = DEFAULT_TOL,
               max_iter: int = DEFAULT_MAX_ITER, query_norm: bool = False, rescale: str | None = None,
               delta: str = "gain", query_weights=None, zero_based: bool = False, log=None, w0=None,
               full: bool = True):
    """Train the Newton RankSVM on `parts` (paths the workers can read, each holding whole queries;
    globs are expanded here, sorted) on a Dask cluster, as `rankkit train PARTS... --dask`, or in
    this process (client None, a LocalProblem), as `rankkit train PARTS...`: the same bytes.

    client: None (this process), a dask.distributed.Client (used as it is, not closed), or an
        address string: 'tcp://host:8786' or 'local[:N]' (a LocalCluster of N processes, closed at the end).
    C, loss (squared-hinge, huber, logistic), tol, max_iter, query_norm, rescale (None, 'margin' =
        'margin-sqrt' (the paper's), 'margin-delta', 'slack'), delta ('gain' or a comma-separated value per label): as `rankkit train`.
    query_weights: a path to a `qid weight` file (read by each worker) or a {qid: weight} dict.
    w0: a starting point (a warm start); the optimum does not depend on it.
    log: a callable taking one line of progress (-v), or None.
    full: the result's w over every column; False: over facts["feature_index"] only, when few of
        many columns occur (Problem._compact; feature_index None otherwise).

    Returns (FitResult, facts): facts holds n_documents, n_queries, n_pairs, n_features, parts,
    workers, and the cost of the rounds (rounds, compute_seconds, communication_seconds,
    bytes_moved, parts_read_again). The same model bytes in this process and for any number of
    workers and any assignment of parts. Raises DataError (bad data, naming the part and line),
    UsageError, or ClusterError (cluster unreachable or lost): each a one-line message."""
    parts = expand_parts(parts)
    kwargs = dict(loss=loss, query_norm=query_norm, rescale=rescale, delta=delta, query_weights=query_weights,
                  zero_based=zero_based, log=log)
    if client is None:
        prob = LocalProblem(parts, **kwargs)
        try:
            result = prob.fit(C, w0=w0, tol=tol, max_iter=max_iter, log=log, full=full)
        finally:
            prob.close()
        return result, prob_facts(prob)
    with connect(client, log=log) as cl:
        with cluster_failures():
            prob = Problem(cl, parts, **kwargs)
            try:
                result = prob.fit(C, w0=w0, tol=tol, max_iter=max_iter, log=log, full=full)
            finally:
                prob.close()
    return result, prob_facts(prob)


def fit_parts(p: Plan, parts, client=None, *, query_weights=None, zero_based: bool = False, log=None,
              warn=None) -> tuple[Model, FitResult, dict]:
    """The one fit of solver newton on PARTS, under every face: `rankkit train PARTS... [--dask
    ADDRESS]` and RankSVM.fit_parts(PARTS, client=...), with a cluster (client: a Client or an
    address) or without (client None: a LocalProblem, the same task functions run here). p: the
    plan of solver newton (rankkit.training.plan; a linear model). query_weights: a `qid weight`
    file or {qid: weight}. warn(words): called when the fit stops before its stopping rule, in the
    plan's words. Returns (the model, with the header `rankkit train` writes; the
    FitResult; the facts of fit_newton)."""
    if p.spec.name != "newton" or p.kernel is not None:
        raise UsageError(f"training on parts trains solver newton, linear models, not {p.spec.name}")
    solver = p.solver()
    settings, loss = solver.hyperparameters(), solver.loss
    parts = expand_parts(parts)
    qw, data = query_weights, {}
    if isinstance(query_weights, (str, os.PathLike)):  # read here once to report a bad file before the parts
        read_query_weights(os.fspath(query_weights))
        qw = os.path.abspath(os.fspath(query_weights))  # the workers read it: this process's path, made absolute
        data["query_weights_file"] = display_name(os.fspath(query_weights))
    elif query_weights is not None:
        qw = {int(k): float(v) for k, v in dict(query_weights).items()}
    result, facts = fit_newton(parts, client, C=settings["C"], loss=loss, tol=settings["tol"],
                               max_iter=settings["max_iter"], query_norm=settings["query_norm"],
                               rescale=settings.get("rescale"), delta=settings.get("delta", "gain"), query_weights=qw,
                               zero_based=zero_based, log=log, full=False)
    if warn is not None and needs_warning(result):
        warn(stop_words(result, p.words))
    files = facts["part_files"]
    group_files = [f["group_file"] for f in files if f["group_file"] is not None]
    if group_files:  # the group files that numbered the parts' queries, as one process records its own
        data["group_file"] = joined_name(group_files)
    data.update({
        "index_base": 0 if zero_based else 1, "group_queries": False, "auc": False, "n_features": facts["n_features"],
        "train_file": joined_name(parts), "train_file_bytes": sum(f["bytes"] for f in files),
        "parts_sha256": parts_sha([(q, f["sha256"]) for q, f in zip(parts, files)]),
        "n_queries": facts["n_queries"], "n_documents": facts["n_documents"], "n_pairs": facts["n_pairs"]})
    run = cluster_facts(facts) if client is not None else {"parts": facts["parts"], "workers": 1}
    header = model_header("newton", loss, settings, data, fit_outcome(result), run, result.train_time)
    used = facts["feature_index"]
    if used is not None:  # weights of the columns that occur; every other feature's weight is exactly 0
        return Model(weights=result.w, header=header, feature_index=used, n_total=facts["n_features"]), result, facts
    return Model(weights=result.w, header=header), result, facts


def parts_sha(facts) -> str:
    """SHA-256 of the parts' own SHA-256s (one `sha256  name` line each, in part order)."""
    h = hashlib.sha256()
    for name, sha in facts:
        h.update(f"{sha}  {name}\n".encode())
    return h.hexdigest()


def prob_facts(prob: Problem) -> dict:
    """What a run on parts records. rounds, compute, communication and bytes: the fits' rounds (the
    reading of the parts is read_seconds)."""
    r0, c0, w0, b0 = prob.loaded
    compute, wall = prob.compute - c0, prob.wall - w0
    return {"n_documents": prob.n_rows, "n_queries": prob.n_queries, "n_pairs": prob.n_pairs,
            "n_features": prob.n_total, "feature_index": prob.columns, "nnz": prob.nnz, "parts": len(prob.parts), "workers": prob.n_workers,
            "read_seconds": prob.read_seconds, "rounds": prob.rounds - r0, "compute_seconds": compute,
            "communication_seconds": max(wall - compute, 0.0),
            "bytes_moved": prob.bytes_in + prob.bytes_out - b0, "parts_read_again": prob.reads,
            "part_files": [{"bytes": f["bytes"], "sha256": f["sha256"], "group_file": f.get("group_file")}
                           for f in prob.facts]}
