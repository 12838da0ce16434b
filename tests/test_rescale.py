"""Cost-sensitive pairs (Sect. 6.2): margin rescaling in O(n log n) equals the explicit per-pair
margins; slack rescaling and the swap delta through newton-pairs."""

from __future__ import annotations

import math
from pathlib import Path

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

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "MQ2008"


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=0, atol=RTOL_KERNEL * max(1.0, float(np.max(np.abs(b)))))


@pytest.mark.parametrize("loss", ["squared-hinge", "hinge"])
@pytest.mark.parametrize("delta", ["gain", "0,0.5,2,2.5"])
@pytest.mark.parametrize("margins", ["margin_offsets", "margin_sqrt_values"])
def test_margin_rescaling_n_log_n_equals_explicit_pair_margins(loss, delta, margins):
    """Both margin rescalings without the pair list (margin Delta: one shifted sort; the paper's
    sqrt(Delta): a sweep per pair of labels) equal the explicit per-pair margins."""
    ds = make_dataset(seed=2, n_labels=4, sizes=(30, 1, 12, 25, 8), one_label_queries=(3,))
    u = label_values(ds, delta)
    fast = PairwiseObjective(ds, 0.8, loss, **{margins: u})
    pairs = explicit_pairs(ds)
    d = pair_deltas(ds, *pairs, delta)
    slow = ExplicitPairObjective(ds, 0.8, loss, pairs=pairs, pair_margins=np.sqrt(d) if "sqrt" in margins else d)
    for scale in (0.0, 0.5, 3.0):
        w = np.random.default_rng(1).standard_normal(ds.n_features) * scale
        y = fast.scores(w)
        _close(fast.loss_y(y), slow.loss_y(y))
        _close(fast.gy, slow.gy)
        assert fast.n_active == slow.n_active
        if loss == "squared-hinge":
            d = np.random.default_rng(2).standard_normal(ds.n_rows)
            _close(fast.hess_vec_y(d).copy(), slow.hess_vec_y(d).copy())


GAIN = (lambda v: 2.0 ** v - 1.0, "gain")
TABLE = (lambda v: [0.0, 0.5, 2.0, 2.5][int(v)], "0,0.5,2,2.5")


def _objectives(ds, C, loss, rescale, delta, qw):
    """The objective of every solver that takes a rescaling: newton and bundle's (O(n log n)), and
    newton-pairs' (explicit pairs)."""
    from rankkit.solvers.base import ExactRankSVM

    out = [ExactRankSVM(C=C, loss=loss, rescale=rescale, delta=delta, query_weights=qw).objective(ds)]
    if loss != "hinge":
        out.append(NewtonPairsRankSVM(C=C, loss=loss, rescale=rescale, delta=delta, query_weights=qw).objective(ds))
    return out


@pytest.mark.parametrize("rescale,loss", [("margin", "squared-hinge"), ("margin-delta", "squared-hinge"),
                                          ("slack", "squared-hinge"), ("slack", "huber"), ("margin", "hinge"),
                                          ("margin-delta", "hinge"), ("slack", "hinge")])
@pytest.mark.parametrize("label_value", [GAIN, TABLE], ids=["gain", "table"])
def test_every_rescaling_against_brute_force(rescale, loss, label_value):
    """Objective, gradient, Hessian (products, and against finite differences) and the violated
    pairs of every rescaling and solver objective, against pair-by-pair enumeration; on data with
    label ties, tied scores (duplicate and empty rows), one-document and one-label queries, a query
    with labels on one side of a threshold only, and a query of weight 0."""
    from tests.reference import FD_STEP, rescaled_pair_objective

    value_of, delta = label_value
    ds = make_dataset(seed=12, n_labels=4, sizes=(1, 9, 30, 1, 12, 25, 8, 6), one_label_queries=(4,))
    y = ds.y.copy()
    y[ds.qptr[7]:ds.qptr[8]] = [3, 2, 3, 2, 2, 3]  # labels 2 and 3 only: no pair crosses the lower thresholds
    ds = ds.with_changes(y=y)
    qw = np.random.default_rng(0).random(ds.n_queries) + 0.5
    qw[2] = 0.0
    C = 0.7
    name = {"margin": "margin-sqrt"}.get(rescale, rescale)
    for obj in _objectives(ds, C, loss, rescale, delta, qw):
        for scale in (0.0, 0.4, 2.0):
            w = np.random.default_rng(3).standard_normal(ds.n_features) * scale
            f_ref, g_ref, H_ref, viol = rescaled_pair_objective(ds, C, w, loss, name, value_of, qw)
            f, g = obj.fun_grad(w)
            _close(f, f_ref)
            _close(g, g_ref)
            assert obj.n_active == viol, (type(obj).__name__, scale)
            if loss == "hinge":
                continue
            s = np.random.default_rng(4).standard_normal(ds.n_features)
            _close(obj.hess_vec(s), H_ref @ s)
            if scale == 0.4:  # finite differences of f and g (no pair at a kink for this w)
                e = np.eye(ds.n_features)
                fd = [(obj.fun_grad(w + FD_STEP * e[k])[0] - obj.fun_grad(w - FD_STEP * e[k])[0]) / (2 * FD_STEP)
                      for k in range(ds.n_features)]
                np.testing.assert_allclose(fd, g_ref, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(g_ref).max()))
                hv = (obj.fun_grad(w + FD_STEP * s)[1] - obj.fun_grad(w - FD_STEP * s)[1]) / (2 * FD_STEP)
                np.testing.assert_allclose(hv, H_ref @ s, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(H_ref @ s).max()))
        if hasattr(obj, "hess_diag") and loss != "hinge":  # CG's preconditioners at the last point (scale 2)
            obj.fun_grad(w)
            Hl = (H_ref - np.eye(ds.n_features)) / C
            _close(obj.hess_diag(), np.diag(Hl))
            _close(obj.hess_matrix(), Hl)


@pytest.mark.parametrize("rescale", ["margin", "margin-delta"])
def test_margin_rescaled_optimum_is_the_same_for_every_solver(rescale):
    """newton (O(n log n)), newton-pairs (explicit pairs) and nlcg reach one optimum; bundle's hinge
    with the same margins converges, and its objective is the brute-force one at its w."""
    from rankkit.solvers.nlcg import NlcgRankSVM
    from tests.reference import rescaled_pair_objective

    ds = make_dataset(seed=3, n_labels=3, sizes=(25, 20, 1, 30))
    a = NewtonRankSVM(C=0.5, tol=1e-12, rescale=rescale, delta="gain").fit(ds)
    b = NewtonPairsRankSVM(C=0.5, tol=1e-12, rescale=rescale, delta="gain").fit(ds)
    c = NlcgRankSVM(C=0.5, tol=1e-12, rescale=rescale, delta="gain").fit(ds)
    assert a.converged and b.converged and c.converged
    assert abs(a.objective - b.objective) <= 1e-10 * a.objective
    assert abs(a.objective - c.objective) <= 1e-10 * a.objective
    h = BundleRankSVM(C=0.5, tol=1e-8, rescale=rescale, delta="gain").fit(ds)
    assert h.converged
    f, *_ = rescaled_pair_objective(ds, 0.5, h.w, "hinge", {"margin": "margin-sqrt"}.get(rescale, rescale),
                                    lambda v: 2.0 ** v - 1.0)
    assert h.objective == pytest.approx(f, rel=1e-10)


def test_the_paper_margin_bounds_delta_and_the_old_one_delta_squared():
    """At w = 0 every pair is tied: the paper's margin rescaling (margin sqrt(Delta)) gives loss
    sum Delta over the pairs, the bound (9) of Sect. 6.2 with every pair counted; margin-delta gives
    sum Delta^2. At any w each pair's term is at least Delta (resp. Delta^2) when inverted."""
    ds = make_dataset(seed=5, n_labels=3, sizes=(9, 14, 6))
    pairs = explicit_pairs(ds)
    d = pair_deltas(ds, *pairs, "gain")
    u = label_values(ds, "gain")
    assert PairwiseObjective(ds, 1.0, margin_sqrt_values=u).loss_y(np.zeros(ds.n_rows)) == pytest.approx(d.sum())
    assert PairwiseObjective(ds, 1.0, margin_offsets=u).loss_y(np.zeros(ds.n_rows)) == pytest.approx((d * d).sum())
    w = np.random.default_rng(0).standard_normal(ds.n_features)
    obj = PairwiseObjective(ds, 1.0, margin_sqrt_values=u)
    y = obj.scores(w)
    inverted = y[pairs[0]] < y[pairs[1]]
    assert obj.loss_y(y) >= d[inverted].sum()


def test_rescale_names_and_old_models(tmp_path):
    """`margin` is the paper's rescaling (recorded as margin-sqrt); margin-delta is the margin Delta;
    a model written before the change records `rescale margin` and still means margin-delta."""
    import rankkit
    from rankkit.objectives.rescale import canonical_rescale
    from tests.test_cli import SAMPLE_TRAIN

    assert canonical_rescale("margin") == "margin-sqrt" and canonical_rescale("margin-delta") == "margin-delta"
    with pytest.raises(UsageError, match="rescale must be one of"):
        canonical_rescale("margins")
    with pytest.raises(UsageError, match="rescale must be None, 'margin'"):
        rankkit.RankSVM(rescale="sqrt").fit(np.eye(3), [0, 1, 2], qid=[1, 1, 1])
    ds = make_dataset(seed=3, n_labels=3, sizes=(25, 20, 1, 30))
    assert NewtonRankSVM(rescale="margin").hyperparameters()["rescale"] == "margin-sqrt"
    fits = {r: NewtonRankSVM(C=0.5, tol=1e-10, rescale=r).fit(ds) for r in ("margin", "margin-sqrt", "margin-delta")}
    assert np.array_equal(fits["margin"].w, fits["margin-sqrt"].w)
    assert not np.allclose(fits["margin"].w, fits["margin-delta"].w)
    # a model of before: `rescale margin` in its header (re-signed as a model of then would be)
    from rankkit.io.model import read_model, write_model

    X = np.random.default_rng(0).standard_normal((12, 3))
    est = rankkit.RankSVM(C=0.5, rescale="margin-delta").fit(X, [0, 1, 2, 1] * 3, qid=[1] * 6 + [2] * 6)
    path = tmp_path / "old.model"
    est.save(str(path))
    model = read_model(str(path))
    assert model.header["rescale"] == "margin-delta"
    model.header["rescale"] = "margin"
    write_model(str(path), model)
    back = rankkit.load_model(str(path))
    assert back.get_params()["rescale"] == "margin-delta"
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    again = rankkit.RankSVM(**back.get_params()).fit(X, [0, 1, 2, 1] * 3, qid=[1] * 6 + [2] * 6)
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    assert SAMPLE_TRAIN


@pytest.mark.skipif(not (DATA / "Fold1" / "train.txt").exists(), reason="../shared/data/MQ2008 absent")
def test_mq2008_fold1_rescaled_loss_at_zero():
    """The issue's figures: sum Delta over MQ2008 Fold1's pairs (gain) is 87,098, the paper's margin
    rescaling at w = 0; the margin Delta gives sum Delta^2 = 187,178."""
    from rankkit.io.svmlight import read_svmlight

    ds = read_svmlight(str(DATA / "Fold1" / "train.txt"))
    u = label_values(ds, "gain")
    zero = np.zeros(ds.n_rows)
    assert PairwiseObjective(ds, 1.0, margin_sqrt_values=u).loss_y(zero) == pytest.approx(87098, abs=1e-6)
    assert PairwiseObjective(ds, 1.0, margin_offsets=u).loss_y(zero) == pytest.approx(187178, abs=1e-6)


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
    assert "rescale margin-sqrt" in (tmp_path / "m.txt").read_text()
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


def test_margin_rescaling_of_huber_needs_the_pair_list(tmp_path):
    """It was an internal error (a ValueError from the objective); now one line naming the way out."""
    from tests.test_cli import SAMPLE_TRAIN, rankkit

    bad = rankkit("train", SAMPLE_TRAIN, "m.txt", "--loss", "huber", "--rescale", "margin", cwd=tmp_path)
    err = bad.stderr.decode()
    assert bad.returncode == 2 and "needs --solver newton-pairs" in err and err.count("\n") == 1
    ok = rankkit("train", SAMPLE_TRAIN, "m.txt", "--loss", "huber", "--rescale", "margin", "--solver", "newton-pairs",
                 "-C", "0.1", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr.decode()
