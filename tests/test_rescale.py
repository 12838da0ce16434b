"""Cost-sensitive pairs (Sect. 6.2): margin rescaling in O(n log n) equals the explicit per-pair
margins; slack rescaling and the swap delta through newton-pairs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankkit.errors import UsageError
from rankkit.objectives.pairs import ExplicitPairObjective, explicit_pairs
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.objectives.rescale import label_values, pair_deltas
from rankkit.solvers.bundle import BundleRankSVM
from rankkit.solvers.newton import NewtonPairsRankSVM, NewtonRankSVM
from tests.conftest import make_dataset
from tests.reference import RTOL_KERNEL


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=0, atol=RTOL_KERNEL * max(1.0, float(np.max(np.abs(b)))))


@pytest.mark.parametrize("loss", ["squared-hinge", "hinge"])
@pytest.mark.parametrize("delta", ["gain", "0,0.5,2,2.5"])
def test_margin_rescaling_n_log_n_equals_explicit_pair_margins(loss, delta):
    ds = make_dataset(seed=2, n_labels=4, sizes=(30, 1, 12, 25, 8), one_label_queries=(3,))
    u = label_values(ds, delta)
    fast = PairwiseObjective(ds, 0.8, loss, margin_offsets=u)
    pairs = explicit_pairs(ds)
    slow = ExplicitPairObjective(ds, 0.8, loss, pairs=pairs, pair_margins=pair_deltas(ds, *pairs, delta))
    for scale in (0.0, 0.5, 3.0):
        w = np.random.default_rng(1).standard_normal(ds.n_features) * scale
        y = fast.scores(w)
        _close(fast.loss_y(y), slow.loss_y(y))
        _close(fast.gy, slow.gy)
        if loss == "squared-hinge":
            d = np.random.default_rng(2).standard_normal(ds.n_rows)
            _close(fast.hess_vec_y(d).copy(), slow.hess_vec_y(d).copy())


def test_margin_rescaled_optimum_is_the_same_for_both_newton_solvers():
    ds = make_dataset(seed=3, n_labels=3, sizes=(25, 20, 1, 30))
    a = NewtonRankSVM(C=0.5, tol=1e-12, rescale="margin", delta="gain").fit(ds)
    b = NewtonPairsRankSVM(C=0.5, tol=1e-12, rescale="margin", delta="gain").fit(ds)
    assert a.converged and b.converged and abs(a.objective - b.objective) <= 1e-10 * a.objective
    h = BundleRankSVM(C=0.5, tol=1e-8, rescale="margin", delta="gain").fit(ds)  # hinge with the same margins
    assert h.converged


def test_slack_rescaling_is_a_per_pair_cost():
    ds = make_dataset(seed=4, n_labels=3, sizes=(15, 12))
    pairs = explicit_pairs(ds)
    delta = pair_deltas(ds, *pairs, "gain")
    assert np.all(delta > 0)
    w = np.random.default_rng(0).standard_normal(ds.n_features) * 0.3
    solver = NewtonPairsRankSVM(C=1.0, rescale="slack", delta="gain")
    f = solver.objective(ds).fun_grad(w)[0]
    X = ds.csr().toarray()
    t = X[pairs[0]] @ w - X[pairs[1]] @ w
    assert f == pytest.approx(0.5 * w @ w + np.sum(delta * np.maximum(0, 1 - t) ** 2), rel=1e-12)


def test_swap_delta_is_the_ndcg_change_of_swapping_at_ideal_positions():
    ds = make_dataset(seed=5, n_labels=3, sizes=(9,), one_label_queries=())
    pi, pj, owner = explicit_pairs(ds)
    got = pair_deltas(ds, pi, pj, owner, "swap")
    labels = list(ds.y)
    ideal = sorted(range(9), key=lambda r: (-labels[r], r))
    pos = {r: p + 1 for p, r in enumerate(ideal)}

    def dcg(order):
        return sum((2 ** labels[r] - 1) / math.log2(p + 2) for p, r in enumerate(order))

    for k in range(len(pi)):
        i, j = int(pi[k]), int(pj[k])
        swapped = list(ideal)
        swapped[pos[i] - 1], swapped[pos[j] - 1] = j, i
        assert got[k] == pytest.approx(abs(dcg(ideal) - dcg(swapped)) / dcg(ideal), rel=1e-12)


def test_delta_validation():
    ds = make_dataset(seed=6, n_labels=3)
    with pytest.raises(UsageError, match="increase with the label"):
        label_values(ds, "0,2,1")
    with pytest.raises(UsageError, match="3 values but the labels include"):
        label_values(make_dataset(seed=6, n_labels=4), "0,1,2")
    with pytest.raises(UsageError, match="newton-pairs"):
        NewtonRankSVM(rescale="slack", delta="swap").fit(ds)
    with pytest.raises(UsageError, match="is not gain"):
        label_values(ds, "")
    with pytest.raises(UsageError, match="--delta value 1e.300 is too large"):
        label_values(ds, "0,1,1e300")


def test_a_label_whose_gain_overflows_is_named_not_the_features():
    """Label 1e308 with --rescale slack leaked numpy's RuntimeWarning, then blamed the features
    ("largest feature value is 1")."""
    import warnings

    from rankkit.errors import DataError

    ds = make_dataset(seed=6, n_labels=3)
    y = ds.y.copy()
    y[5] = 1e308
    big = ds.with_changes(y=y, line=np.arange(1, ds.n_rows + 1, dtype=np.int64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for spec in ("gain", "swap"):
            with pytest.raises(DataError, match=r":6: label 1e\+308: its gain 2\^label - 1 is too large"):
                pair_deltas(big, np.array([5]), np.array([0]), np.array([0]), spec) if spec == "swap" else \
                    label_values(big, spec)


def test_cli_rescale(tmp_path):
    from tests.test_cli import SAMPLE_TRAIN, rankkit

    ok = rankkit("train", SAMPLE_TRAIN, "m.txt", "--rescale", "margin", "--delta", "gain", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr.decode()
    assert "rescale margin" in (tmp_path / "m.txt").read_text()
    swap = rankkit("train", SAMPLE_TRAIN, "s.txt", "--solver", "newton-pairs", "--rescale", "slack", "--delta", "swap",
                   "-C", "0.1", cwd=tmp_path)
    assert swap.returncode == 0, swap.stderr.decode()
    slack = rankkit("train", SAMPLE_TRAIN, "l.txt", "--rescale", "slack", cwd=tmp_path)
    assert slack.returncode == 0, slack.stderr.decode()
    bad = rankkit("train", SAMPLE_TRAIN, "b.txt", "--rescale", "slack", "--delta", "swap", cwd=tmp_path)
    assert bad.returncode == 2 and "newton-pairs" in bad.stderr.decode()


@pytest.mark.parametrize("loss", ["squared-hinge", "huber", "logistic", "hinge"])
@pytest.mark.parametrize("delta", ["gain", "0,0.5,2,2.5"])
def test_slack_rescaling_n_log_n_equals_explicit_pair_costs(loss, delta):
    """Slack rescaling as a positive sum of binary losses at the label thresholds, O(n log n), equals
    the pair-by-pair loss times Delta_ij (value, (sub)gradient, Hv)."""
    ds = make_dataset(seed=8, n_labels=4, sizes=(30, 1, 12, 25, 8), one_label_queries=(3,))
    u = label_values(ds, delta)
    qw = np.random.default_rng(0).random(ds.n_queries) + 0.5
    fast = PairwiseObjective(ds, 0.8, loss, query_weights=qw, slack_values=u)
    pairs = explicit_pairs(ds)
    cost = pair_deltas(ds, *pairs, delta)
    if loss == "logistic":  # compare with the same piecewise-quadratic approximation, pair by pair
        from rankkit.objectives.logistic import piecewise_quadratic

        c, a = piecewise_quadratic()
        X = ds.csr().toarray()
        A = X[pairs[0]] - X[pairs[1]]
        owner_w = qw[pairs[2]] * cost
        for scale in (0.0, 0.5):
            w = np.random.default_rng(1).standard_normal(ds.n_features) * scale
            f, _ = fast.fun_grad(w)
            t = A @ w
            ref = 0.5 * w @ w + 0.8 * np.sum(owner_w * (a * np.maximum(0, c - t[:, None]) ** 2).sum(1))
            _close(f, ref)
        return
    slow = ExplicitPairObjective(ds, 0.8, loss, query_weights=qw, pairs=pairs, pair_costs=cost)
    for scale in (0.0, 0.5, 3.0):
        w = np.random.default_rng(1).standard_normal(ds.n_features) * scale + 1e-3
        y = fast.scores(w)
        _close(fast.loss_y(y), slow.loss_y(y))
        _close(fast.gy, slow.gy)
        if loss != "hinge":
            d = np.random.default_rng(2).standard_normal(ds.n_rows)
            _close(fast.hess_vec_y(d).copy(), slow.hess_vec_y(d).copy())


def test_slack_rescaled_optimum_is_the_same_for_both_newton_solvers():
    ds = make_dataset(seed=10, n_labels=3, sizes=(25, 20, 1, 30))
    a = NewtonRankSVM(C=0.5, tol=1e-12, rescale="slack", delta="gain").fit(ds)
    b = NewtonPairsRankSVM(C=0.5, tol=1e-12, rescale="slack", delta="gain").fit(ds)
    assert a.converged and b.converged and abs(a.objective - b.objective) <= 1e-10 * a.objective
