"""Numba kernels of stochastic pairwise descent (SPD): Sculley (2009), "Large scale learning to rank",
the sofia-ml family. Pairs are sampled from an index of the data, never materialised; each step
applies one update rule to w stored as scale x vector.

Data: CSR rows (data float64, indices int32 or uint16, indptr int64), labels y float64[n], query offsets
qptr int64[Q+1] (query q = rows qptr[q]:qptr[q+1]). A preference pair is two documents of one
query with different labels, the higher label first; with x = x_a - x_b and label +1 the margin is
p = w.x and the hinge loss max(0, 1 - p).

Values: every kernel reads value t as `value_at(data, t, scale)` (rankkit.sparse): data[t] itself
with float64 data and scale 1.0; with int32 decimal codes (rankkit.data.Dataset.value_scale, 10**d:
the reader stored k where the file's value is the double k / 10**d, checked value by value) the
correctly rounded k / 10**d, that same double (by one multiply and two FMAs, no division).
So a run gives the same bits on either storage (tests/test_decimal_values.py).

The index (`build_index`, six int64 arrays, passed on in this order, INDEX_FIELDS):

    doc[n]      rows grouped by (query, label): query by query, labels ascending within a query,
                rows in file order within a group
    gptr[G+1]   group g (one label of one query) = doc[gptr[g]:gptr[g+1]]
    qgptr[Q+1]  the groups of query q are qgptr[q]:qgptr[q+1], ascending label (its levels)
    gpair[G+1]  cumulative pair counts by upper group: gpair[g+1] - gpair[g] = n_g * (documents of
                the query in lower groups) = pairs whose higher document lies in g
    qpair[Q+1]  cumulative pair counts by query: qpair[q] = gpair[qgptr[q]], |P| = qpair[Q]
    qlist[Q']   the queries with at least two levels (= with pairs), ascending

Counts are int64 (one query can hold ~n^2/4 pairs). The documents of the levels below group g of
query q are the contiguous block doc[gptr[qgptr[q]]:gptr[g]], so no (upper, lower) level table is
needed: a pair with its higher document in g has its lower document uniform in that block.

Samplers (SAMPLERS codes):

    indexed     the paper's constant-time sampler (Sect. 3.1): query uniform among qlist, level
                y_a uniform among its levels, y_b uniform among the other levels, one document
                uniform in each; the higher-labelled one is returned first. Uniform over P only
                when all queries and levels have equal sizes. 5 random integers per pair.
    uniform     exactly uniform over P: one integer r uniform in [0, |P|); the query is found by
                binary search in qpair (O(log Q)), the upper group by binary search in the query's
                slice of gpair (O(log levels)), and r - gpair[g] = i * below + j picks document i
                of g and document j of the block below it. 1 random integer per pair.
    query-norm  every query of qlist equally likely, then a pair uniform within it (2 integers).
                sofia-ml's query-norm-rank draws a uniformly, then b uniformly among the query's
                documents with another label (not uniform within the query); this is the
                distribution its name promises (Cao et al.'s query normalisation).
    roc         the AUC case: the index of a single query (e.g. Dataset.as_one_query(), binary
                labels), sampled as `uniform`. Any other number of queries -> ROC_NEEDS_ONE_QUERY.
    sofia       sofia-ml's own rank loop (StochasticRankLoop): a uniform among all n documents
                (a position of doc; its group and query by binary search), then b uniform among
                the m - n_a documents of a's query with another label; P(pair) = (1/(m - n_a) +
                1/(m - n_b)) / n. When a's query has one label the draw gives (-1, -1) and the
                step is skipped (sofia-ml `continue`s: its step counter still advances, so does
                ours). 1 or 2 random integers per draw.

Tied pairs (run_spd with ties, tpair = tie_index(gptr)): after each pair, a tied pair (two
different documents of one query with one label) uniform over the ordered tied pairs, one random
integer: the group by binary search in tpair, then the two documents.

Random numbers: numba's own Mersenne Twister (np.random inside jitted code), seeded in the kernel
by np.random.seed(seed), seed in [0, 2**32). The sampler is the only consumer, so the pair
sequence of run_spd(seed, iterations, batch_size) is sample_pairs(seed, iterations * batch_size).
Runs are reproducible byte for byte for a given numba version (numba's integer drawing could
change between versions); everything is serial.

Learners (LEARNERS codes), eta_t at step t = 1..iterations (ETA codes: pegasos 1/(lam t); basic
eta0 * c/(t + c), sofia-ml's BASIC_ETA 10/(i + 10) with eta0 = 1 and c = 10; constant eta0):

    sgd                 w <- (1 - eta lam) w; then, if p < 1, w <- w + eta x
    pegasos             the sgd step, then w <- w / (sqrt(lam) ||w||) if ||w|| > 1/sqrt(lam)
    pa                  PA-I: tau = min(C, (1 - p) / ||x||^2) if p < 1 and ||x|| > 0; w <- w + tau x
    romma               aggressive ROMMA, if p < 1: with D = ||x||^2 ||w||^2 - p^2 > 0,
                        w <- c w + d x, c = (||x||^2 ||w||^2 - p) / D, d = ||w||^2 (1 - p) / D;
                        from w = 0 the first update is w <- x / ||x||^2 (Li & Long); D <= 0 (x
                        parallel to w, or x = 0): no update
    logreg              w <- (1 - eta lam) w + eta x / (1 + exp(p))
    margin-perceptron   if p < 1: w <- w + eta x
    perceptron          if p <= 0: w <- w + eta x (sofia-ml's margin-perceptron with margin 0)

With ties, each tied pair (x_t = x_ta - x_tb, p_t = w.x_t at the incoming w) adds -eta p_t x_t:
the step on its squared loss p_t^2 / 2, target 0 (sofia-ml's SinglePegasosRankWithTiesStep);
not with pa, romma or pair-sgd (TIES_NOT_SUPPORTED).

pa and romma use neither eta nor lam. Differences from sofia-ml, on purpose: no clamp of the
shrink factor at 1e-7 (the factor is 1 - eta lam exactly, 0 at the first Pegasos step); pa
does not project; romma has no 1e-10 fudge terms (so its first step is x/||x||^2, not x);
margin-perceptron uses p < 1, not p <= C; logreg does not project (sofia-ml's logreg-pegasos does).

Mini-batches (batch_size b): a step draws b pairs, computes all b margins at the current w, then
shrinks once and adds the average of the b per-pair additions; pegasos then projects once. The
step counter t counts steps, not pairs. pa and romma are single-pair rules: b > 1 returns
BATCH_NOT_SUPPORTED.

w = s * v, so the shrink and the projection are O(1) and a step costs O(nnz(a) + nnz(b)):
the margin is s (v.x_a - v.x_b), two sparse dot products (x_a - x_b is never formed, except that
pa and romma sum ||x||^2 over the scattered difference, which stays exact for near-identical
rows); the addition c x goes row by row, and ||w||^2 is tracked by adding each coordinate's exact
change c x_j (2 w_j + c x_j), so rows sharing columns telescope correctly. A shrink factor of
exactly 0 clears v (O(d)); when |s| leaves [1e-10, 1e10], v is multiplied out and ||w||^2
recomputed (O(d), rare). run_spd draws each step's pairs one step ahead and prefetches their rows
(llvm.prefetch), which halves the time per step when the rows do not fit in cache; the random
sequence is unchanged.
"""

from __future__ import annotations

import numpy as np

from rankkit.compiler.dispatch import NumbaGlobal, njit
from rankkit.sorting import longest, stable_order
from rankkit.sparse import value_at

SAMPLERS = {"indexed": 0, "uniform": 1, "query-norm": 2, "roc": 3, "sofia": 4}
LEARNERS = {"sgd": 0, "pegasos": 1, "pa": 2, "romma": 3, "logreg": 4, "margin-perceptron": 5, "pair-sgd": 6,
            "perceptron": 7}
ETA = {"pegasos": 0, "basic": 1, "constant": 2, "inverse-t": 3}
INDEX_FIELDS = ("doc", "gptr", "qgptr", "gpair", "qpair", "qlist")

_INDEXED, _UNIFORM, _QUERY_NORM, _ROC, _SOFIA = 0, 1, 2, 3, 4
_SGD, _PEGASOS, _PA, _ROMMA, _LOGREG, _MARGIN_PERCEPTRON, _PAIR_SGD, _PERCEPTRON = 0, 1, 2, 3, 4, 5, 6, 7
_ETA_PEGASOS, _ETA_BASIC, _ETA_CONSTANT, _ETA_INVERSE_T = 0, 1, 2, 3
# pair-sgd is Chapelle & Keerthi's Algorithm 2 on the squared hinge: with lam = 1/|P| and
# eta_t = 1/t (inverse-t), w <- (1 - eta lam) w + eta * 2C max(0, 1 - p) x.

BASIC_T0 = 10.0  # eta_t = eta0 * c / (t + c), c = BASIC_T0 by default: sofia-ml's BASIC_ETA 10/(i + 10)
SCALE_MIN = 1e-10  # |s| below SCALE_MIN or above SCALE_MAX: multiply s into v, s = 1
SCALE_MAX = 1e10

# status codes returned by the kernels (the Python wrapper turns them into errors)
OK = 0
NO_PAIRS = 1
BAD_SAMPLER = 2
ROC_NEEDS_ONE_QUERY = 3
BAD_LEARNER = 4
BAD_ETA = 5
BAD_ETA0 = 6
BAD_LAMBDA = 7
BAD_C = 8
BAD_BATCH = 9
BATCH_NOT_SUPPORTED = 10
BAD_ITERATIONS = 11
BAD_SEED = 12
BAD_TRACE = 13
BAD_OUTPUT = 14
BAD_COLUMN = 15
NON_FINITE = 16
BAD_ETA_C = 17
TIES_NOT_SUPPORTED = 18
NO_TIES = 19

STATUS_MESSAGES = {
    OK: "ok",
    NO_PAIRS: "no preference pairs: every query has a single relevance level",
    BAD_SAMPLER: "unknown sampler code",
    ROC_NEEDS_ONE_QUERY: "the roc sampler needs the data as a single query",
    BAD_LEARNER: "unknown learner code",
    BAD_ETA: "unknown learning-rate schedule code",
    BAD_ETA0: "the initial learning rate eta0 must be positive and finite",
    BAD_LAMBDA: "lambda must be >= 0, and > 0 for pegasos (projection radius or 1/(lambda t) schedule)",
    BAD_C: "C must be positive (PA-I step cap)",
    BAD_BATCH: "batch size must be >= 1",
    BATCH_NOT_SUPPORTED: "pa and romma take one pair per step (batch size 1)",
    BAD_ITERATIONS: "iterations must be >= 0",
    BAD_SEED: "seed must lie in [0, 2**32)",
    BAD_TRACE: "trace iterations must be strictly increasing within [1, iterations], one loss slot each",
    BAD_OUTPUT: "output array has the wrong length",
    BAD_COLUMN: "a column index lies outside w",
    NON_FINITE: "w is no longer finite (learning rate too large?)",
    BAD_ETA_C: "c of the basic learning rate eta0 c/(t + c) must be positive and finite",
    TIES_NOT_SUPPORTED: "tied pairs take a learning-rate step: not with pa, romma or pair-sgd",
    NO_TIES: "no tied pairs: no two documents of a query share a label",
}


# -- index ---------------------------------------------------------------------------------------


@njit
def build_index(y, qptr):
    """The sampling index (doc, gptr, qgptr, gpair, qpair, qlist) of labels y and query offsets
    qptr; see the module docstring. Labels are grouped by exact equality. O(n log n)."""
    n = y.shape[0]
    nq = qptr.shape[0] - 1
    doc = np.empty(n, dtype=np.int64)
    sort_tmp = np.empty(longest(qptr, 0, nq), dtype=np.int64)
    # pass 1: sort each query by label (stable), count groups
    n_groups = 0
    for q in range(nq):
        s = qptr[q]
        e = qptr[q + 1]
        if e > s:
            stable_order(y, s, e, doc, sort_tmp)
            n_groups += 1
            for t in range(s + 1, e):
                if y[doc[t]] != y[doc[t - 1]]:
                    n_groups += 1
    gptr = np.empty(n_groups + 1, dtype=np.int64)
    qgptr = np.empty(nq + 1, dtype=np.int64)
    gpair = np.empty(n_groups + 1, dtype=np.int64)
    qpair = np.empty(nq + 1, dtype=np.int64)
    # pass 2: group boundaries and cumulative pair counts
    g = 0
    gpair[0] = 0
    n_multi = 0
    for q in range(nq):
        s = qptr[q]
        e = qptr[q + 1]
        qgptr[q] = g
        qpair[q] = gpair[g]
        for t in range(s, e):
            if t == s or y[doc[t]] != y[doc[t - 1]]:
                gptr[g] = t
                g += 1
        if g - qgptr[q] >= 2:
            n_multi += 1
        for h in range(qgptr[q], g):
            hi = gptr[h + 1] if h + 1 < g else e
            gpair[h + 1] = gpair[h] + (hi - gptr[h]) * (gptr[h] - s)
    gptr[n_groups] = n
    qgptr[nq] = n_groups
    qpair[nq] = gpair[n_groups]
    qlist = np.empty(n_multi, dtype=np.int64)
    k = 0
    for q in range(nq):
        if qgptr[q + 1] - qgptr[q] >= 2:
            qlist[k] = q
            k += 1
    return doc, gptr, qgptr, gpair, qpair, qlist


def tie_index(gptr):
    """tpair[G+1]: cumulative counts of ordered tied pairs by group, tpair[g+1] - tpair[g] =
    n_g (n_g - 1) (two different documents of one label of one query, either order)."""
    sizes = np.diff(np.asarray(gptr, dtype=np.int64))
    return np.concatenate([np.zeros(1, np.int64), np.cumsum(sizes * (sizes - 1), dtype=np.int64)])


NO_TIE_INDEX = np.zeros(1, dtype=np.int64)  # tpair of a run without tied pairs


# -- samplers ------------------------------------------------------------------------------------


@njit
def _last_le(arr, lo, hi, r):
    """The last i in [lo, hi) with arr[i] <= r, given arr non-decreasing, arr[lo] <= r < arr[hi]."""
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if arr[mid] <= r:
            lo = mid
        else:
            hi = mid
    return lo


@njit
def _pair_at(doc, gptr, qgptr, gpair, q, r):
    """Pair number r of the global enumeration, r in [qpair[q], qpair[q + 1]) (query q)."""
    g = _last_le(gpair, qgptr[q], qgptr[q + 1], r)
    base = gptr[qgptr[q]]
    below = gptr[g] - base
    rem = r - gpair[g]
    i = rem // below
    j = rem - i * below
    return doc[gptr[g] + i], doc[base + j]


@njit
def _draw(sampler, doc, gptr, qgptr, gpair, qpair, qlist):
    """One preference pair (a, b), label of a > label of b. The sampler was checked by the caller."""
    if sampler == _INDEXED:
        q = qlist[np.random.randint(0, qlist.shape[0])]
        g0 = qgptr[q]
        nlev = qgptr[q + 1] - g0
        la = np.random.randint(0, nlev)
        lb = np.random.randint(0, nlev - 1)
        if lb >= la:
            lb += 1
        ga = g0 + la
        gb = g0 + lb
        a = doc[gptr[ga] + np.random.randint(0, gptr[ga + 1] - gptr[ga])]
        b = doc[gptr[gb] + np.random.randint(0, gptr[gb + 1] - gptr[gb])]
        if la > lb:
            return a, b
        return b, a
    if sampler == _SOFIA:
        # sofia-ml's rank loop: a uniform among all documents, b uniform among the documents of
        # a's query with another label; none (-1, -1) when a's query has a single label
        n_groups = gptr.shape[0] - 1
        pos = np.random.randint(0, doc.shape[0])
        g = _last_le(gptr, 0, n_groups, pos)
        q = _last_le(qgptr, 0, qgptr.shape[0] - 1, g)
        base = gptr[qgptr[q]]
        before = gptr[g] - base
        others = gptr[qgptr[q + 1]] - base - (gptr[g + 1] - gptr[g])
        if others == 0:
            return -1, -1
        r = np.random.randint(0, others)
        pb_pos = base + r if r < before else gptr[g + 1] + r - before
        if r < before:  # b lies in a lower group: a is the higher document
            return doc[pos], doc[pb_pos]
        return doc[pb_pos], doc[pos]
    if sampler == _QUERY_NORM:
        q = qlist[np.random.randint(0, qlist.shape[0])]
        r = qpair[q] + np.random.randint(0, qpair[q + 1] - qpair[q])
        return _pair_at(doc, gptr, qgptr, gpair, q, r)
    # uniform and roc
    nq = qpair.shape[0] - 1
    r = np.random.randint(0, qpair[nq])
    q = _last_le(qpair, 0, nq, r)
    return _pair_at(doc, gptr, qgptr, gpair, q, r)


@njit
def _draw_tie(doc, gptr, tpair):
    """One tied pair (two different documents of one query with one label), uniform over the
    ordered tied pairs: r uniform in [0, tpair[G]) gives the group by binary search, then
    r - tpair[g] = i (n_g - 1) + j picks document i and, skipping i, document j of the group."""
    n_groups = gptr.shape[0] - 1
    r = np.random.randint(0, tpair[n_groups])
    g = _last_le(tpair, 0, n_groups, r)
    m = gptr[g + 1] - gptr[g] - 1
    rem = r - tpair[g]
    i = rem // m
    j = rem - i * m
    if j >= i:
        j += 1
    return doc[gptr[g] + i], doc[gptr[g] + j]


@njit
def _draw_batch(sampler, doc, gptr, qgptr, gpair, qpair, qlist, pa, pb, off, nb, ties, tpair, ta, tb):
    """nb pairs into pa/pb[off:off + nb]; with `ties`, after each pair a tied pair into ta/tb."""
    for i in range(off, off + nb):
        a, b = _draw(sampler, doc, gptr, qgptr, gpair, qpair, qlist)
        pa[i] = a
        pb[i] = b
        if ties:
            a, b = _draw_tie(doc, gptr, tpair)
            ta[i] = a
            tb[i] = b


@njit
def _check_sampler(sampler, qgptr, qpair, seed):
    if sampler < 0 or sampler > 4:
        return BAD_SAMPLER
    if seed < 0 or seed > 4294967295:
        return BAD_SEED
    nq = qgptr.shape[0] - 1
    if qpair[nq] <= 0:
        return NO_PAIRS
    if sampler == _ROC and nq != 1:
        return ROC_NEEDS_ONE_QUERY
    return OK


@njit
def sample_pairs(doc, gptr, qgptr, gpair, qpair, qlist, sampler, seed, n_draws, out_a, out_b):
    """Draw n_draws pairs into out_a[:n_draws] (higher label) and out_b[:n_draws]: exactly the
    pairs run_spd draws with the same seed and sampler, in order (sofia: -1, -1 where the draw
    found no pair and run_spd takes no step). Returns a status."""
    st = _check_sampler(sampler, qgptr, qpair, seed)
    if st != OK:
        return st
    if n_draws < 0 or out_a.shape[0] < n_draws or out_b.shape[0] < n_draws:
        return BAD_OUTPUT
    np.random.seed(seed)
    _draw_batch(sampler, doc, gptr, qgptr, gpair, qpair, qlist, out_a, out_b, 0, n_draws, False, NO_TIE_INDEX,
                out_a, out_b)
    return OK


@njit
def sample_pairs_with_ties(doc, gptr, qgptr, gpair, qpair, qlist, sampler, seed, n_draws, out_a, out_b, tpair,
                           out_ta, out_tb):
    """sample_pairs with the tied pair run_spd draws after each pair when run with ties (tpair =
    tie_index(gptr)) into out_ta/out_tb. Returns a status."""
    st = _check_sampler(sampler, qgptr, qpair, seed)
    if st != OK:
        return st
    if n_draws < 0 or min(out_a.shape[0], out_b.shape[0], out_ta.shape[0], out_tb.shape[0]) < n_draws:
        return BAD_OUTPUT
    if tpair.shape[0] != gptr.shape[0] or tpair[tpair.shape[0] - 1] <= 0:
        return NO_TIES
    np.random.seed(seed)
    _draw_batch(sampler, doc, gptr, qgptr, gpair, qpair, qlist, out_a, out_b, 0, n_draws, True, tpair, out_ta, out_tb)
    return OK


def _make_prefetch():
    """A read prefetch of &arr[idx] into all cache levels (llvm.prefetch): a hint, no effect on
    results. Made when numba first compiles a kernel that uses it (numba is not imported before)."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def _prefetch(typingctx, arr, idx):
        if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
            i8p = builder.bitcast(ptr, ir.IntType(8).as_pointer())
            i32 = ir.IntType(32)
            # the intrinsic's name mangles the pointer type: "p0" with opaque pointers (LLVM >= 15
            # builds of llvmlite), "p0i8" with typed ones
            name = "llvm.prefetch.p0" if str(i8p.type) == "ptr" else "llvm.prefetch.p0i8"
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p.type, i32, i32, i32]), name)
            builder.call(fn, [i8p, i32(0), i32(3), i32(1)])  # read, high locality, data cache
            return context.get_dummy_value()

        return types.void(arr, idx), codegen

    return _prefetch


_prefetch = NumbaGlobal(_make_prefetch)


@njit
def _prefetch_row(data, indices, indptr, r):
    hi = indptr[r + 1]
    for t in range(indptr[r], hi, 8):  # 64-byte lines: 8 values, 16 column indices
        _prefetch(data, t)
    for t in range(indptr[r], hi, 16):
        _prefetch(indices, t)


# -- learners ------------------------------------------------------------------------------------


@njit
def _check_learner(learner, lam, C, batch_size):
    if learner < 0 or learner > 7:
        return BAD_LEARNER
    if not (lam >= 0.0) or lam == np.inf:
        return BAD_LAMBDA
    if learner == _PEGASOS and lam == 0.0:
        return BAD_LAMBDA
    if learner == _PA and not (C > 0.0):
        return BAD_C
    if batch_size < 1:
        return BAD_BATCH
    if (learner == _PA or learner == _ROMMA) and batch_size > 1:
        return BATCH_NOT_SUPPORTED
    return OK


@njit
def _uses_eta(learner):
    return learner != _PA and learner != _ROMMA


@njit
def _check_eta(learner, eta_mode, eta0, lam, eta_c):
    if eta_mode < 0 or eta_mode > 3:
        return BAD_ETA
    if not _uses_eta(learner):
        return OK
    if eta_mode == _ETA_BASIC and (not (eta_c > 0.0) or eta_c == np.inf):
        return BAD_ETA_C
    if eta_mode == _ETA_PEGASOS:
        if not (lam > 0.0):
            return BAD_LAMBDA
    elif not (eta0 > 0.0) or eta0 == np.inf:
        return BAD_ETA0
    return OK


@njit
def eta_at(eta_mode, eta0, lam, t, eta_c=BASIC_T0):
    """The learning rate of step t (t = 1, 2, ...); eta_c is the c of basic's eta0 c/(t + c)."""
    if eta_mode == _ETA_PEGASOS:
        return 1.0 / (lam * t)
    if eta_mode == _ETA_BASIC:
        return eta0 * eta_c / (t + eta_c)
    if eta_mode == _ETA_INVERSE_T:
        return eta0 / t
    return eta0


@njit
def _row_dot(data, indices, indptr, scale, r, v):
    """(v . x_r, True), or (0, False) if a column of row r lies outside v. Four partial sums
    (a fixed order, so still reproducible): a single accumulator is bound by the add latency."""
    d = v.shape[0]
    hi = indptr[r + 1]
    t = indptr[r]
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    while t + 4 <= hi:
        j0 = indices[t]
        j1 = indices[t + 1]
        j2 = indices[t + 2]
        j3 = indices[t + 3]
        if min(min(j0, j1), min(j2, j3)) < 0 or max(max(j0, j1), max(j2, j3)) >= d:
            return 0.0, False
        a0 += value_at(data, t, scale) * v[j0]
        a1 += value_at(data, t + 1, scale) * v[j1]
        a2 += value_at(data, t + 2, scale) * v[j2]
        a3 += value_at(data, t + 3, scale) * v[j3]
        t += 4
    while t < hi:
        j = indices[t]
        if j < 0 or j >= d:
            return 0.0, False
        a0 += value_at(data, t, scale) * v[j]
        t += 1
    return (a0 + a1) + (a2 + a3), True


@njit
def _difference(data, indices, indptr, scale, a, b, xv, xs, xc):
    """x = x_a - x_b as a compact list (xs[:m] at columns xc[:m], each column once) and ||x||^2
    summed from the difference itself, exact for near-identical rows where ||x_a||^2 + ||x_b||^2
    - 2 x_a.x_b would be rounding noise. xv: zeros of len(w), left zero. Returns (m, ||x||^2)."""
    for t in range(indptr[a], indptr[a + 1]):
        xv[indices[t]] += value_at(data, t, scale)
    for t in range(indptr[b], indptr[b + 1]):
        xv[indices[t]] -= value_at(data, t, scale)
    xx = 0.0
    m = 0
    for t in range(indptr[a], indptr[a + 1]):
        j = indices[t]
        if xv[j] != 0.0:  # zeroed once listed: a repeated or shared column is listed once
            xs[m] = xv[j]
            xc[m] = j
            xx += xv[j] * xv[j]
            xv[j] = 0.0
            m += 1
    for t in range(indptr[b], indptr[b + 1]):
        j = indices[t]
        if xv[j] != 0.0:
            xs[m] = xv[j]
            xc[m] = j
            xx += xv[j] * xv[j]
            xv[j] = 0.0
            m += 1
    return m, xx


@njit
def _add_compact(xs, xc, m, c, v, s):
    """w <- w + c x for x given as a compact list; returns the change of ||w||^2."""
    inv = 1.0 / s
    dsq = 0.0
    for k in range(m):
        j = xc[k]
        dj = c * xs[k]
        dsq += dj * (2.0 * s * v[j] + dj)
        v[j] += dj * inv
    return dsq


@njit
def _add_row(data, indices, indptr, scale, r, c, v, s):
    """w <- w + c x_r on w = s v; returns the exact change of ||w||^2, entry by entry in order (so
    rows sharing columns, and repeated columns, telescope correctly). Four partial sums."""
    inv = 1.0 / s
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    hi = indptr[r + 1]
    t = indptr[r]
    while t + 4 <= hi:
        j = indices[t]
        dj = c * value_at(data, t, scale)
        a0 += dj * (2.0 * s * v[j] + dj)
        v[j] += dj * inv
        j = indices[t + 1]
        dj = c * value_at(data, t + 1, scale)
        a1 += dj * (2.0 * s * v[j] + dj)
        v[j] += dj * inv
        j = indices[t + 2]
        dj = c * value_at(data, t + 2, scale)
        a2 += dj * (2.0 * s * v[j] + dj)
        v[j] += dj * inv
        j = indices[t + 3]
        dj = c * value_at(data, t + 3, scale)
        a3 += dj * (2.0 * s * v[j] + dj)
        v[j] += dj * inv
        t += 4
    while t < hi:
        j = indices[t]
        dj = c * value_at(data, t, scale)
        a0 += dj * (2.0 * s * v[j] + dj)
        v[j] += dj * inv
        t += 1
    return (a0 + a1) + (a2 + a3)


@njit
def _scale(v, st, f):
    """w <- f w, O(1) (O(d) when f == 0: v is cleared)."""
    if f == 1.0:
        return
    if f == 0.0:
        v[:] = 0.0
        st[0] = 1.0
        st[1] = 0.0
        return
    st[0] *= f
    st[1] *= f * f


@njit
def _sq_norm(v):
    """||v||^2 by a plain loop, the order _renormalise sums in (np.dot would call BLAS, whose
    first use in a process imports scipy.linalg: ~0.2 s of a stochastic run's start)."""
    sq = 0.0
    for j in range(v.shape[0]):
        sq += v[j] * v[j]
    return sq


@njit
def _renormalise(v, st):
    s = st[0]
    if abs(s) < SCALE_MIN or abs(s) > SCALE_MAX:
        sq = 0.0
        for j in range(v.shape[0]):
            v[j] *= s
            sq += v[j] * v[j]
        st[0] = 1.0
        st[1] = sq


@njit
def _batch_step(learner, eta, lam, C, data, indices, indptr, scale, pa, pb, off, nb, v, st, xv, xs, xc, coef, ties, ta, tb,
                tcoef):
    """One step on the pairs pa[i] above pb[i], off <= i < off + nb, at w = st[0] * v with st[1] = ||w||^2.

    Returns (status, sum over the pairs of the hinge loss max(0, 1 - p) at the incoming w, the
    number of pairs). A pair pa[i] = -1 (the sofia sampler found none) counts neither way; a step
    whose pairs are all such (and no tied pairs) leaves w as it is, sofia-ml's `continue`. With
    `ties`, the tied pair ta[i], tb[i] adds the step of its squared loss p_t^2 / 2 (target 0,
    sofia-ml's SinglePegasosRankWithTiesStep): -eta p_t (x_ta - x_tb), averaged with the rest.
    Margins are s (v.x_a - v.x_b). pa and romma (one pair) form x = x_a - x_b in xs/xc and add
    it as such: their steps tau = (1 - p)/||x||^2 can be huge for near-identical rows, and c x_a -
    c x_b row by row would then cancel. The others add c x_a and -c x_b row by row."""
    s = st[0]
    ww = st[1]
    hinge = 0.0
    f = 1.0
    m = 0
    n_valid = 0
    for i in range(nb):
        a = pa[off + i]
        b = pb[off + i]
        coef[i] = 0.0
        if ties:
            ua, ok_a = _row_dot(data, indices, indptr, scale, ta[off + i], v)
            ub, ok_b = _row_dot(data, indices, indptr, scale, tb[off + i], v)
            if not (ok_a and ok_b):
                return BAD_COLUMN, hinge, n_valid
            tcoef[i] = -eta * s * (ua - ub)
        if a < 0:
            continue
        n_valid += 1
        va, ok_a = _row_dot(data, indices, indptr, scale, a, v)
        vb, ok_b = _row_dot(data, indices, indptr, scale, b, v)
        if not (ok_a and ok_b):
            return BAD_COLUMN, hinge, n_valid
        p = s * (va - vb)
        if p < 1.0:
            hinge += 1.0 - p
        alpha = 0.0
        if learner == _SGD or learner == _PEGASOS or learner == _MARGIN_PERCEPTRON:
            if p < 1.0:
                alpha = eta
        elif learner == _PERCEPTRON:
            if p <= 0.0:
                alpha = eta
        elif learner == _LOGREG:
            alpha = eta / (1.0 + np.exp(p))
        elif learner == _PAIR_SGD:
            if p < 1.0:
                alpha = eta * 2.0 * C * (1.0 - p)
        elif p < 1.0:  # pa, romma (one pair)
            m, xx = _difference(data, indices, indptr, scale, a, b, xv, xs, xc)
            if learner == _PA:
                if xx > 0.0:
                    alpha = min(C, (1.0 - p) / xx)
            elif ww == 0.0:
                if xx > 0.0:
                    alpha = 1.0 / xx
            else:
                den = xx * ww - p * p
                if den > 0.0:
                    f = (xx * ww - p) / den
                    alpha = ww * (1.0 - p) / den
        coef[i] = alpha
    if n_valid == 0 and not ties:
        return OK, hinge, n_valid
    if learner == _SGD or learner == _PEGASOS or learner == _LOGREG or learner == _PAIR_SGD:
        f = 1.0 - eta * lam
    _scale(v, st, f)
    s = st[0]
    dsq = 0.0
    if learner == _PA or learner == _ROMMA:
        if coef[0] != 0.0:
            dsq += _add_compact(xs, xc, m, coef[0], v, s)
    else:
        for i in range(nb):
            c = coef[i] / nb
            if c != 0.0:
                dsq += _add_row(data, indices, indptr, scale, pa[off + i], c, v, s)
                dsq += _add_row(data, indices, indptr, scale, pb[off + i], -c, v, s)
            if ties:
                c = tcoef[i] / nb
                if c != 0.0:
                    dsq += _add_row(data, indices, indptr, scale, ta[off + i], c, v, s)
                    dsq += _add_row(data, indices, indptr, scale, tb[off + i], -c, v, s)
    sq = st[1] + dsq
    st[1] = sq if sq > 0.0 else 0.0
    if learner == _PEGASOS and st[1] * lam > 1.0:
        _scale(v, st, 1.0 / np.sqrt(lam * st[1]))
    _renormalise(v, st)
    if not (abs(st[1]) < np.inf and abs(st[0]) < np.inf):
        return NON_FINITE, hinge, n_valid
    return OK, hinge, n_valid


@njit
def _max_row_nnz(indptr, rows):
    mx = 0
    for i in range(rows.shape[0]):
        mx = max(mx, indptr[rows[i] + 1] - indptr[rows[i]])
    return mx


@njit
def _pair_scratch(learner, d, max_pair_nnz):
    """Scratch for forming x_a - x_b (pa and romma only): a dense zero vector and a compact list."""
    if learner == _PA or learner == _ROMMA:
        return np.zeros(d), np.empty(max_pair_nnz), np.empty(max_pair_nnz, dtype=np.int64)
    return np.zeros(0), np.empty(0), np.empty(0, dtype=np.int64)


@njit
def step(learner, eta, lam, C, data, indices, indptr, pa, pb, w, scale=1.0):
    """One step of `learner` with learning rate eta on the mini-batch of pairs pa[i] above pb[i]
    (len(pa) pairs; 1 for a single pair), from the dense w, updated in place. Returns a status.
    The same code as each step of run_spd, starting from scale 1."""
    nb = pa.shape[0]
    status = _check_learner(learner, lam, C, nb)
    if status != OK:
        return status
    if pb.shape[0] != nb:
        return BAD_OUTPUT
    st = np.empty(2)
    st[0] = 1.0
    st[1] = _sq_norm(w)
    xv, xs, xc = _pair_scratch(learner, w.shape[0], 2 * max(_max_row_nnz(indptr, pa), _max_row_nnz(indptr, pb)))
    coef = np.empty(nb)
    status, _, _ = _batch_step(learner, eta, lam, C, data, indices, indptr, scale, pa, pb, 0, nb, w, st, xv, xs, xc, coef,
                               False, pa, pb, coef)
    w *= st[0]
    return status


# -- the loop ------------------------------------------------------------------------------------


@njit
def run_spd(
    data,
    indices,
    indptr,
    doc,
    gptr,
    qgptr,
    gpair,
    qpair,
    qlist,
    sampler,
    learner,
    eta_mode,
    eta0,
    lam,
    C,
    iterations,
    batch_size,
    seed,
    w_out,
    trace_iters,
    trace_loss,
    t_start,
    eta_c,
    ties,
    tpair,
    scale=1.0,
):
    """Stochastic pairwise descent (Algorithm 1): `iterations` steps t = 1..iterations, each on
    batch_size pairs drawn by `sampler` with learning rate eta_at(eta_mode, eta0, lam, t_start + t,
    eta_c) (t_start > 0 continues a run from a checkpoint: the schedule goes on where it stopped).
    With `ties` (tpair = tie_index(gptr)), each pair comes with a tied pair uniform over the
    ordered tied pairs, stepped on with target 0 (see _batch_step); else tpair is not read.

    w_out: in, the starting point (zeros for the paper's w_0 = 0); out, the final w (also when
    a status other than OK stops the run early). trace_iters (int64[k], strictly increasing in
    [1, iterations]): at those steps trace_loss[i] receives the mean hinge loss, each at the w it
    was drawn at, of the pairs drawn since the previous checkpoint. Returns a status.
    """
    status = _check_sampler(sampler, qgptr, qpair, seed)
    if status == OK:
        status = _check_learner(learner, lam, C, batch_size)
    if status == OK:
        status = _check_eta(learner, eta_mode, eta0, lam, eta_c)
    if status == OK and ties:
        if learner == _PA or learner == _ROMMA or learner == _PAIR_SGD:
            status = TIES_NOT_SUPPORTED
        elif tpair.shape[0] != gptr.shape[0] or tpair[tpair.shape[0] - 1] <= 0:
            status = NO_TIES
    if status != OK:
        return status
    if iterations < 0:
        return BAD_ITERATIONS
    nk = trace_iters.shape[0]
    if trace_loss.shape[0] != nk:
        return BAD_TRACE
    for k in range(nk):
        if trace_iters[k] < 1 or trace_iters[k] > iterations or (k > 0 and trace_iters[k] <= trace_iters[k - 1]):
            return BAD_TRACE
    d = w_out.shape[0]
    mx = 0
    for r in range(indptr.shape[0] - 1):
        mx = max(mx, indptr[r + 1] - indptr[r])
    xv, xs, xc = _pair_scratch(learner, d, 2 * mx)
    coef = np.empty(batch_size)
    pa = np.empty(2 * batch_size, dtype=np.int64)  # this step's pairs and the next step's
    pb = np.empty(2 * batch_size, dtype=np.int64)
    nt = 2 * batch_size if ties else 0
    ta = np.empty(nt, dtype=np.int64)  # the tied pairs, with ties
    tb = np.empty(nt, dtype=np.int64)
    tcoef = np.empty(batch_size)
    v = w_out  # w = st[0] * v, worked on in place
    st = np.empty(2)
    st[0] = 1.0
    st[1] = _sq_norm(v)
    if not (st[1] < np.inf):
        return NON_FINITE
    np.random.seed(seed)
    k = 0
    h_sum = 0.0
    h_cnt = 0
    if iterations > 0:
        _draw_batch(sampler, doc, gptr, qgptr, gpair, qpair, qlist, pa, pb, 0, batch_size, ties, tpair, ta, tb)
    for t in range(1, iterations + 1):
        off = (t - 1) % 2 * batch_size
        if t < iterations:
            # draw the next step's pairs now (same random sequence) and prefetch their rows, so
            # the memory latency of random rows overlaps this step's arithmetic
            nxt = batch_size - off
            _draw_batch(sampler, doc, gptr, qgptr, gpair, qpair, qlist, pa, pb, nxt, batch_size, ties, tpair, ta, tb)
            for i in range(nxt, nxt + batch_size):
                if pa[i] >= 0:
                    _prefetch_row(data, indices, indptr, pa[i])
                    _prefetch_row(data, indices, indptr, pb[i])
        eta = eta_at(eta_mode, eta0, lam, t_start + t, eta_c)
        status, h, nv = _batch_step(
            learner, eta, lam, C, data, indices, indptr, scale, pa, pb, off, batch_size, v, st, xv, xs, xc, coef, ties, ta,
            tb, tcoef
        )
        if status != OK:
            break
        h_sum += h
        h_cnt += nv
        if k < nk and trace_iters[k] == t:
            trace_loss[k] = h_sum / h_cnt if h_cnt > 0 else np.nan
            k += 1
            h_sum = 0.0
            h_cnt = 0
    s = st[0]
    for j in range(d):
        v[j] *= s
    return status
