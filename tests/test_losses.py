"""The objectives as a family (issue 36): every loss of the registry (objectives.losses.LOSSES) in
both objectives (PairwiseObjective's sweeps, ExplicitPairObjective's pair list) passes the same
checks: gradient against central differences of f, Hessian-vector product against differences
of the gradient; the pair kernel, the sweeps' terms and the naive reference agree on each loss;
the names and messages users see are today's."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rankkit.objectives.base import PairObjective
from rankkit.objectives.logistic import STATED_ERROR
from rankkit.objectives.losses import LOSSES, PairLoss, pair_loss
from rankkit.objectives.pairs import ExplicitPairObjective, _loss
from rankkit.objectives.pairwise import PairwiseObjective
from tests.conftest import make_dataset
from tests.reference import FD_STEP, pair_loss as reference_pair_loss

OBJECTIVES = {"pairwise": PairwiseObjective, "pairs": ExplicitPairObjective}
# margins t on both sides of every kink (0, 1, the logistic pieces' ends +-8) and far out
T = np.concatenate([np.linspace(-12.0, 12.0, 481), [-1e6, -0.0, 1e-300, 1.0 - 1e-12, 1e6]])


def _reference(loss, t):
    """(value, slope, curvature) of the loss at each t, by tests/reference.py's pair_loss."""
    return np.array([reference_pair_loss(float(x), loss) for x in t])


def _point(ds, seed=4, scale=0.3):
    return np.random.default_rng(seed).standard_normal(ds.n_features) * scale


@pytest.mark.parametrize("kind", sorted(OBJECTIVES))
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_gradient_matches_central_differences(small_ds, kind, loss):
    obj = OBJECTIVES[kind](small_ds, 0.4, loss)
    assert isinstance(obj, PairObjective) and obj.loss == loss and isinstance(obj.pair_loss, LOSSES[loss])
    w = _point(small_ds)
    _, g = obj.fun_grad(w)
    fd = np.empty_like(w)
    for k in range(len(w)):
        e = np.zeros_like(w)
        e[k] = FD_STEP
        fd[k] = (obj.fun_grad(w + e)[0] - obj.fun_grad(w - e)[0]) / (2 * FD_STEP)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(obj.gradient_loss(), (g - w) / obj.C, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", sorted(OBJECTIVES))
@pytest.mark.parametrize("loss", sorted(name for name, cls in LOSSES.items() if cls.second_order))
def test_hessian_vector_matches_gradient_differences(small_ds, kind, loss):
    """Hv = (g(w + eps v) - g(w - eps v)) / 2 eps, away from kinks."""
    obj = OBJECTIVES[kind](small_ds, 0.4, loss)
    w = _point(small_ds)
    v = np.random.default_rng(5).standard_normal(small_ds.n_features)
    obj.fun_grad(w)
    Hv = obj.hess_vec(v).copy()
    np.testing.assert_allclose(obj.hess_vec_loss(v), (Hv - v) / obj.C, rtol=1e-12, atol=1e-12)
    eps = 1e-7
    gp = obj.fun_grad(w + eps * v)[1]
    gm = obj.fun_grad(w - eps * v)[1]
    np.testing.assert_allclose(Hv, (gp - gm) / (2 * eps), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_pair_kernel_is_the_loss_class(loss):
    """pairs._loss at the class's code: the loss's exact value, slope and curvature (the naive
    reference of tests/reference.py)."""
    fn = LOSSES[loss]()
    got = np.array([_loss(float(t), fn.code) for t in T])
    ref = _reference(loss, T)
    np.testing.assert_allclose(got[:, 0], ref[:, 0], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(got[:, 1], ref[:, 1], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(got[:, 2], ref[:, 2], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_sweep_terms_add_up_to_the_loss(loss):
    """sum_k coef_k max(0, margin_k - t)^p (what PairwiseObjective sweeps) is the loss, exactly for
    the piecewise-quadratic ones, within the stated error for the logistic approximation."""
    fn = LOSSES[loss]()
    t = T[np.abs(T) < 1e3]
    swept = sum(c * np.maximum(0.0, m - t) ** (2 if sq else 1) for c, m, sq in fn.terms())
    if loss == "logistic":
        np.testing.assert_allclose(swept, _reference(loss, t)[:, 0], rtol=0, atol=STATED_ERROR)
    else:
        np.testing.assert_allclose(swept, _reference(loss, t)[:, 0], rtol=1e-12, atol=1e-9)
    if fn.margin_rescaling:  # the margin moves: the same loss shifted
        shifted = sum(c * np.maximum(0.0, m - t) ** (2 if sq else 1) for c, m, sq in fn.terms(2.5))
        np.testing.assert_allclose(shifted, _reference(loss, t - 1.5)[:, 0], rtol=1e-12, atol=1e-12)


def test_registry_names_are_the_ones_users_type():
    from rankkit.solvers import SOLVERS

    assert list(LOSSES) == ["squared-hinge", "huber", "hinge", "logistic"]
    for spec in SOLVERS.values():
        assert set(spec.losses) <= set(LOSSES), spec.name
    assert all(issubclass(cls, PairLoss) and cls.name == name for name, cls in LOSSES.items())
    assert pair_loss("huber").name == "huber" and pair_loss(LOSSES["hinge"]()).name == "hinge"


@pytest.mark.parametrize("kind", sorted(OBJECTIVES))
@pytest.mark.parametrize("loss", ["nope", "Hinge", "squared_hinge", ""])
def test_an_unknown_loss_is_named_as_before(small_ds, kind, loss):
    with pytest.raises(ValueError) as err:
        OBJECTIVES[kind](small_ds, 1.0, loss)
    assert str(err.value) == f"unknown loss {loss!r}"


@pytest.mark.parametrize("loss", ["huber", "logistic"])
@pytest.mark.parametrize("rescale", ["margin_offsets", "margin_sqrt_values"])
def test_margin_rescaling_message_names_the_losses_that_have_it(small_ds, loss, rescale):
    with pytest.raises(ValueError) as err:
        PairwiseObjective(small_ds, 1.0, loss, **{rescale: small_ds.y.copy()})
    assert str(err.value) == "margin rescaling is defined for the squared-hinge and hinge losses"


def test_hinge_has_no_hessian(small_ds):
    obj = PairwiseObjective(small_ds, 1.0, "hinge")
    obj.fun_grad(_point(small_ds))
    for op in (lambda: obj.hess_vec(np.ones(small_ds.n_features)), obj.hess_diag, obj.hess_matrix):
        with pytest.raises(ValueError, match="^the hinge loss has no Hessian: use the bundle method$"):
            op()


@pytest.mark.parametrize("loss", ["squared-hinge", "huber", "logistic"])
def test_explicit_pairs_read_decimal_codes_as_their_values(loss):
    """A dataset whose values are int32 decimal codes (Dataset.value_scale) gives the explicit-pair
    objective the same numbers as its float64 values (before the family, ExplicitPairObjective read
    the codes themselves: ten times the values here)."""
    plain = make_dataset(seed=3, integer_features=True, n_labels=4)
    coded = dataclasses.replace(plain, data=np.round(plain.data * 10).astype(np.int32), value_scale=10.0)
    assert coded.decimal_codes and np.array_equal(coded.values(), plain.data)
    w, s = _point(plain, 1, 0.2), _point(plain, 2, 1.0)
    a, b = ExplicitPairObjective(plain, 0.3, loss), ExplicitPairObjective(coded, 0.3, loss)
    fa, ga = a.fun_grad(w)
    fb, gb = b.fun_grad(w)
    assert fa == fb and np.array_equal(ga, gb)
    assert np.array_equal(a.hess_vec(s), b.hess_vec(s))


def test_the_solvers_margin_rescaling_message_as_before(small_ds):
    from rankkit.errors import UsageError
    from rankkit.solvers.newton import NewtonRankSVM

    with pytest.raises(UsageError) as err:
        NewtonRankSVM(loss="logistic", rescale="margin").objective(small_ds)
    assert str(err.value) == ("--rescale margin-sqrt with --loss logistic needs --solver newton-pairs (per-pair margins); "
                              "the O(n log n) objective rescales the margin of the squared-hinge and hinge losses (or "
                              "use --rescale slack)")
