"""rankkit.sorting.ties_by_index turns an unstable argsort into the stable one, and
rankkit.sorting.radix_order (the large-query sort of PairwiseObjective) is the stable one:
checked against np.argsort(kind="stable") on ties, long tie runs, -0.0 and 0.0, nans, infinities,
one and no element; and the objective on a large query gives the same bits as the kernel's own
stable sort."""

from __future__ import annotations

import numpy as np
import pytest

from rankkit.sorting import ties_by_index


def _cases():
    rng = np.random.default_rng(0)
    yield np.zeros(0)
    yield np.array([3.0])
    yield np.full(500, 2.5)  # one long run of ties
    yield rng.integers(0, 5, 3000).astype(float)  # many long runs
    yield rng.integers(0, 400, 3000).astype(float)  # many short runs
    yield rng.standard_normal(2000)  # no ties
    z = rng.choice([0.0, -0.0, 1.0, -1.0], 1000)
    yield z  # -0.0 == 0.0: one run
    w = rng.standard_normal(1000)
    w[rng.integers(0, 1000, 100)] = np.nan
    w[::7] = 0.5
    yield w  # nans last, in row order
    v = rng.standard_normal(1500) * 10.0 ** rng.integers(-300, 300, 1500)
    v[rng.integers(0, 1500, 60)] = -np.nan  # a nan with its sign bit set: last too
    v[rng.integers(0, 1500, 60)] = np.inf
    v[rng.integers(0, 1500, 60)] = -np.inf
    v[rng.integers(0, 1500, 60)] = 5e-324  # the smallest subnormal, and its negative
    v[rng.integers(0, 1500, 60)] = -5e-324
    yield v


@pytest.mark.parametrize("y", list(_cases()))
@pytest.mark.parametrize("offset", [0, 3])
def test_unstable_then_ties_is_the_stable_argsort(y, offset):
    ref = np.argsort(y, kind="stable")
    for kind in ("quicksort", "heapsort"):
        full = np.concatenate([np.full(offset, -7.0), y])  # a query that starts at row `offset`
        order = np.arange(full.shape[0], dtype=np.int64)
        order[offset:] = offset + np.argsort(full[offset:], kind=kind)
        ties_by_index(full, order, offset, full.shape[0])
        assert np.array_equal(order[offset:] - offset, ref)
        assert np.array_equal(order[:offset], np.arange(offset))


def test_objective_large_query_same_bits(monkeypatch):
    """A query above RADIX_SORT_MIN (the radix sort) and the same query below it (the kernel's
    stable merge sort): the same loss, gradient and Hessian products, bit for bit, on scores with
    many ties."""
    import rankkit.objectives.pairwise as P
    from rankkit.data import Dataset

    rng = np.random.default_rng(1)
    n, d = 3000, 4
    X = rng.integers(0, 3, (n, d)).astype(float)  # few distinct rows: tied scores
    data = X.ravel()
    ds = Dataset(data=data, indices=np.tile(np.arange(d, dtype=np.int32), n),
                 indptr=np.arange(0, n * d + 1, d, dtype=np.int64), y=rng.integers(0, 3, n).astype(float),
                 qid=np.zeros(n, dtype=np.int64), qptr=np.array([0, n], dtype=np.int64), n_features=d).validate()
    w = np.array([0.5, -0.25, 1.0, 0.0])
    s = rng.standard_normal(d)
    out = []
    for limit in (10**9, 100):
        monkeypatch.setattr(P, "RADIX_SORT_MIN", limit)
        obj = P.PairwiseObjective(ds, 0.1)
        y = obj.scores(w)
        f = obj.evaluate(w, y)
        out.append((f, obj.gradient(w).copy(), obj.hess_vec(s).copy(), obj.n_active, obj.order.copy()))
    a, b = out
    assert a[0] == b[0] and a[3] == b[3]
    for x, z in zip(a[1:3] + a[4:], b[1:3] + b[4:]):
        assert np.array_equal(x, z)


@pytest.mark.parametrize("y", list(_cases()))
@pytest.mark.parametrize("offset", [0, 3])
def test_radix_order_is_the_stable_argsort(y, offset):
    from rankkit.sorting import radix_order

    full = np.concatenate([np.full(offset, -7.0), y, [1.0, 2.0]])  # a query at rows offset..offset + n
    order = np.arange(full.shape[0], dtype=np.int64)
    start = order.copy()
    radix_order(full, offset, offset + y.shape[0], order)
    assert np.array_equal(order[offset:offset + y.shape[0]] - offset, np.argsort(y, kind="stable"))
    assert np.array_equal(order[:offset], start[:offset]) and np.array_equal(order[-2:], start[-2:])


def test_radix_order_any_starting_permutation():
    """The result does not depend on what order[s:e] held before (the objective sorts over the last
    evaluation's order): the rows' one order by (score, row)."""
    from rankkit.sorting import radix_order

    rng = np.random.default_rng(5)
    y = rng.integers(0, 50, 6000) / 4.0
    ref = np.argsort(y, kind="stable")
    for _ in range(3):
        order = rng.permutation(6000).astype(np.int64)
        radix_order(y, 0, 6000, order)
        assert np.array_equal(order, ref)


@pytest.mark.parametrize("distinct", [1, 2, 7, 8, 9, 30])
def test_query_levels_few_and_many_labels(distinct):
    """query_levels' scan (at most FEW_LABELS labels) and its sort (more, or a nan) against np.unique
    and a brute-force pair count, at the boundary; -0.0 and 0.0 one label; nan labels each their own."""
    from rankkit.data import _levels_and_pairs
    from rankkit.sorting import FEW_LABELS

    assert FEW_LABELS == 8
    rng = np.random.default_rng(distinct)
    sizes = [1, 40, 3, 250]
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    y = rng.permutation(np.resize(np.arange(distinct, dtype=float) - 2.0, qptr[-1]))
    y[y == 0.0] = rng.choice([0.0, -0.0], int(np.sum(y == 0.0)))
    levels, pairs = _levels_and_pairs(y, qptr)
    for q in range(len(sizes)):
        s, e = qptr[q], qptr[q + 1]
        labels = y[s:e]
        assert np.array_equal(levels[s:e], np.searchsorted(np.unique(labels), labels))
        assert pairs[q] == sum(1 for a in labels for b in labels if a > b)
    y2 = y.copy()
    y2[[5, 9]] = np.nan  # a nan: the sort's rule (each nan its own level, after every number)
    levels2, pairs2 = _levels_and_pairs(y2, qptr)
    q1 = y2[1:41]
    finite = q1[q1 == q1]
    nf = np.unique(finite).shape[0]
    assert np.array_equal(levels2[1:41][q1 == q1], np.searchsorted(np.unique(finite), finite))
    assert sorted(levels2[1:41][q1 != q1].tolist()) == [nf, nf + 1] and pairs2[1] >= pairs[1] - 2 * 40


@pytest.mark.parametrize("labels", [2, 5])
def test_hess_vec_two_sweeps_same_bits(monkeypatch, labels):
    """hess_vec_y on one large query: its two sweeps on two threads (SPLIT_SWEEPS_MIN lowered) give
    the bits of the one-thread kernel, ties and equal scores included, weight != 1, z written over ds."""
    from rankkit import threads
    from rankkit.objectives import squared_hinge as sqh

    rng = np.random.default_rng(labels)
    n = 4000
    y = rng.integers(0, 40, n) / 8.0  # tied scores
    lev = rng.integers(0, labels, n).astype(np.int32)
    qptr = np.array([0, n], dtype=np.int64)
    nlev = np.array([labels], dtype=np.int64)
    order = np.argsort(y, kind="stable").astype(np.int64)
    ys, ls, gs, gy = np.zeros(n), np.zeros(n, dtype=np.int32), np.zeros(n), np.zeros(n)
    qw = np.array([0.75])
    sqh.fun_grad_y(y, lev, qptr, nlev, order, ys, ls, gs, gy, qw, 1.0, True)
    d = rng.standard_normal(n)
    out = []
    for split, nthreads in ((10**9, 1), (100, 2), (100, 1)):
        monkeypatch.setattr(sqh, "SPLIT_SWEEPS_MIN", split)
        ds, zs = np.zeros(n), np.zeros(n)
        with threads.limited(nthreads):
            out.append(sqh.hess_vec_y(ys, ls, qptr, nlev, order, d, ds, zs, ds, qw, 1.0).copy())
    assert np.array_equal(out[0], out[1]) and np.array_equal(out[0], out[2])


@pytest.mark.parametrize("labels,margin,squared", [(2, 1.0, True), (5, 1.0, True), (3, 0.0, True), (3, 1.0, False)])
def test_fun_grad_two_sweeps_same_bits(monkeypatch, labels, margin, squared):
    """fun_grad_y on one large query: its two sweeps on two threads (SPLIT_SWEEPS_MIN lowered) give
    the loss, active pairs, gradient, sorted scores and levels of the one-thread kernel, bit for bit
    (tied scores, margin 0 where terms are -0.0, the hinge, a query weight != 1)."""
    from rankkit import threads
    from rankkit.objectives import squared_hinge as sqh

    rng = np.random.default_rng(labels)
    n = 4000
    y = rng.integers(0, 40, n) / 8.0
    lev = rng.integers(0, labels, n).astype(np.int32)
    qptr = np.array([0, n], dtype=np.int64)
    nlev = np.array([labels], dtype=np.int64)
    order = np.argsort(y, kind="stable").astype(np.int64)
    qw = np.array([0.75])
    out = []
    for split, nthreads in ((10**9, 1), (100, 2), (100, 1)):
        monkeypatch.setattr(sqh, "SPLIT_SWEEPS_MIN", split)
        ys, ls, gs, gy = np.full(n, 7.0), np.zeros(n, dtype=np.int32), np.full(n, 7.0), np.full(n, 7.0)
        with threads.limited(nthreads):
            loss, act = sqh.fun_grad_y(y, lev, qptr, nlev, order, ys, ls, gs, gy, qw, margin, squared)
        out.append((loss, act, gy.tobytes(), ys.tobytes(), ls.tobytes()))
    assert out[0] == out[1] == out[2]


def test_metric_ranking_of_a_long_query_is_the_stable_one():
    """rankkit.metrics.kernels.rank sorts a query of RADIX_MIN rows and more by radix: the ranking
    (score descending, ties in row order, -0.0 with 0.0, nans last) of the merge sort it used before."""
    from rankkit.metrics.kernels import rank
    from rankkit.sorting import RADIX_MIN

    rng = np.random.default_rng(2)
    n = RADIX_MIN + 500
    scores = np.concatenate([[9.0, 9.0], rng.integers(-20, 20, n) / 4.0, [1.0]])
    scores[rng.integers(2, n, 50)] = -0.0
    scores[rng.integers(2, n, 20)] = np.nan
    neg, order, tmp = np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    rank(scores, 2, n, neg, order, tmp)
    assert np.array_equal(order, np.argsort(-scores[2:2 + n], kind="stable"))


def _nearly(order, rng, swaps):
    """order with `swaps` random adjacent transpositions (a last sort at slightly other scores)."""
    order = order.copy()
    for i in rng.integers(0, max(order.shape[0] - 1, 1), swaps if order.shape[0] > 1 else 0):
        order[i], order[i + 1] = order[i + 1], order[i]
    return order


@pytest.mark.parametrize("y", list(_cases()))
@pytest.mark.parametrize("offset", [0, 3])
@pytest.mark.parametrize("start", ["sorted", "nearly", "reversed", "random", "rows"])
def test_resort_order_is_the_stable_argsort_from_any_permutation(y, offset, start):
    """resort_order: insertion from whatever permutation order[s:e] holds gives np.argsort(kind=
    "stable") (nans last, ties and -0.0/0.0 in row order); given up past the move limit, it says
    so and leaves a permutation of the query's rows; rows outside s:e untouched."""
    from rankkit.sorting import resort_limit, resort_order

    rng = np.random.default_rng(len(y) + offset)
    n = y.shape[0]
    full = np.concatenate([np.full(offset, -7.0), y, [1.0, 2.0]])
    ref = np.argsort(y, kind="stable") + offset
    rows = np.arange(offset, offset + n, dtype=np.int64)
    begin = {"sorted": ref, "nearly": _nearly(ref, rng, 20), "reversed": ref[::-1], "random": rng.permutation(rows),
             "rows": rows}[start]
    for limit in (10**12, int(resort_limit(n)), 5):
        order = np.arange(full.shape[0], dtype=np.int64)
        order[offset:offset + n] = begin
        done = resort_order(full, offset, offset + n, order, limit)
        assert np.array_equal(np.sort(order[offset:offset + n]), rows)  # a permutation of the rows
        assert order[:offset].tolist() == list(range(offset)) and order[offset + n:].tolist() == [offset + n, offset + n + 1]
        if done:
            assert np.array_equal(order[offset:offset + n], ref)
        else:
            assert limit < 10**12
    if start in ("sorted", "nearly") and n:  # few moves: never given up at the objective's limit
        order = np.arange(full.shape[0], dtype=np.int64)
        order[offset:offset + n] = begin
        assert resort_order(full, offset, offset + n, order, int(resort_limit(n)))


def test_objective_sorts_from_the_last_order_with_the_same_bits():
    """PairwiseObjective re-sorts each query from its last order (resort_order): along a sequence
    of points (far apart, then close, then the same) the loss, gradient, Hessian-vector product and
    order equal, bit for bit, those of an objective made afresh at each point (whose sort starts
    from row order), and each query's order is its stable argsort."""
    from rankkit.objectives.pairwise import PairwiseObjective
    from tests.conftest import make_dataset

    ds = make_dataset(seed=11, sizes=(1, 40, 3, 90, 25, 2, 60), n_features=5, n_labels=4, density=0.8)
    rng = np.random.default_rng(1)
    points = [np.zeros(ds.n_features)]
    for step in (1.0, 0.3, 0.01, 0.001, 0.0):
        points.append(points[-1] + step * rng.standard_normal(ds.n_features))
    s = np.linspace(-1, 1, ds.n_features)

    def at(obj, w):
        y = obj.scores(w)
        return obj.evaluate(w, y), obj.gradient(w), obj.hess_vec(s), obj.order.copy(), y

    carried = PairwiseObjective(ds, 1.0)
    for w in points:
        a = at(carried, w)
        b = at(PairwiseObjective(ds, 1.0), w)
        assert a[0] == b[0] and all(np.array_equal(x, z) for x, z in zip(a[1:4], b[1:4]))
        y, qptr = a[4], ds.qptr
        for q in range(qptr.shape[0] - 1):
            lo, hi = qptr[q], qptr[q + 1]
            if len(np.unique(ds.y[lo:hi])) >= 2:  # (one-label queries are never sorted)
                assert np.array_equal(a[3][lo:hi], lo + np.argsort(y[lo:hi], kind="stable"))
