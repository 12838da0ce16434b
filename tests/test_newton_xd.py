"""The line search's scores X d summed from CG's own products (issue 39): LocalObjective forms
delta = X d as the sum of alpha_k X p_k over CG's steps (each Hessian-vector product made X p_k),
not by a product of its own. Checked: at every line search delta is X d to rounding; a fit makes
one product X.v fewer per line search and reaches the same optimum, steps and CG steps as a fit
that forms X d afresh; past the step budget, or for a direction CG did not make, X d is formed
by a product."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import make_dataset
from rankkit.objectives import base as objective_base
from rankkit.objectives.pairs import ExplicitPairObjective
from rankkit.objectives.pairwise import PairwiseObjective
from rankkit.solvers import newton
from rankkit.solvers.newton import LocalObjective, truncated_newton

DATASETS = {
    "awkward": lambda: make_dataset(),
    "ties": lambda: make_dataset(seed=3, integer_features=True, n_labels=4),
    "dense labels": lambda: make_dataset(seed=5, sizes=(40, 3, 1, 60, 22), n_features=9, n_labels=5, density=0.9),
}
OBJECTIVES = {
    "pairwise": lambda ds, C: PairwiseObjective(ds, C),
    "explicit pairs": lambda ds, C: ExplicitPairObjective(ds, C),
}


class Counted(LocalObjective):
    """LocalObjective that checks delta against a fresh X d at every line search and counts the
    products X.v the fit makes (objective_base.csr_matvec)."""

    fresh_xd = False  # True: the old way, X d formed by a product at every line search

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.searches = self.summed = 0
        self.gaps = []
        self.search_products = []  # (summed, products X.v the line search and update made)

    def cg_step(self, alpha, x):
        if not self.fresh_xd:
            super().cg_step(alpha, x)

    def linesearch_and_update(self, w, d, f, g, gd):
        self.searches += 1
        summed = d is self._xd.of and self._xd.steps > 0
        if summed:
            self.summed += 1
            exact = self.obj.scores(d, out=np.empty_like(self._delta))
            scale = max(float(np.max(np.abs(exact))), 1e-300)
            self.gaps.append(float(np.max(np.abs(self._delta - exact))) / scale)
        before = products.n
        out = super().linesearch_and_update(w, d, f, g, gd)
        self.search_products.append((summed, products.n - before))
        return out


class products:  # the products X.v made since the fixture started
    n = 0


@pytest.fixture
def count_products(monkeypatch):
    original = objective_base.csr_matvec

    def counting(*args, **kwargs):
        products.n += 1
        return original(*args, **kwargs)

    products.n = 0
    monkeypatch.setattr(objective_base, "csr_matvec", counting)


def fit(ds, make, C, fresh, **kw):
    obj = Counted(make(ds, C), ds)
    obj.fresh_xd = fresh
    return truncated_newton(obj, tol=1e-12, **kw), obj


@pytest.mark.parametrize("data", sorted(DATASETS))
@pytest.mark.parametrize("objective", sorted(OBJECTIVES))
@pytest.mark.parametrize("C", [0.1, 10.0])
def test_summed_xd_is_xd_and_saves_one_product_per_line_search(count_products, monkeypatch, data, objective, C):
    monkeypatch.setattr(newton, "XD_STEPS_PER_NNZ", 1e9)  # every direction summed (these files are small)
    monkeypatch.setattr(newton, "XD_KEPT_PER_NNZ", 1e9)
    ds = DATASETS[data]()
    make = OBJECTIVES[objective]
    summed, obj = fit(ds, make, C, fresh=False)
    fresh, obj_fresh = fit(ds, make, C, fresh=True)
    assert obj.searches >= 1 and obj.summed == obj.searches  # every line search used the sum
    assert max(obj.gaps) <= 1e-12, obj.gaps  # X d to rounding
    assert obj.search_products == [(True, 0)] * obj.searches  # and made no product X.v
    assert obj_fresh.search_products == [(False, 1)] * obj_fresh.searches  # where X d afresh made one
    # the same optimum (the steps may differ by one where rounding moves a CG stopping test)
    assert summed.stop == fresh.stop == "converged"
    np.testing.assert_allclose(summed.w, fresh.w, rtol=1e-9, atol=1e-12)
    assert summed.objective == pytest.approx(fresh.objective, rel=1e-12)


def test_past_the_budget_x_d_is_a_product(count_products, monkeypatch):
    """A direction of more CG steps than the budget: delta is formed by one product, as before."""
    ds = DATASETS["dense labels"]()
    monkeypatch.setattr(newton, "XD_STEPS_PER_NNZ", 1e-9)  # a budget of one step
    monkeypatch.setattr(newton, "XD_KEPT_PER_NNZ", 1e9)
    summed, obj = fit(ds, OBJECTIVES["pairwise"], 10.0, fresh=False, precondition="none")
    fresh, _ = fit(ds, OBJECTIVES["pairwise"], 10.0, fresh=True, precondition="none")
    assert obj.summed < obj.searches  # some direction took more than one step: not summed
    assert set(obj.search_products) <= {(True, 0), (False, 1)} and (False, 1) in obj.search_products
    np.testing.assert_allclose(summed.w, fresh.w, rtol=1e-9, atol=1e-12)


def test_a_direction_cg_did_not_make_gets_a_product(count_products, monkeypatch):
    """linesearch_and_update with any other d (a copy of CG's iterate) forms X d itself."""
    monkeypatch.setattr(newton, "XD_STEPS_PER_NNZ", 1e9)
    monkeypatch.setattr(newton, "XD_KEPT_PER_NNZ", 1e9)
    ds = DATASETS["ties"]()
    obj = LocalObjective(PairwiseObjective(ds, 1.0), ds)
    w = np.zeros(obj.n_features)
    f, g = obj.start(w)
    pre = newton.Preconditioned(obj, "none")
    d, steps = pre.solve(-g, 1e-6)
    assert steps >= 1 and d is obj._xd.of
    before = products.n
    obj.linesearch_and_update(w, d.copy(), f, g, float(g @ d))
    assert products.n - before == 1  # X d (the line search and the gradient make no product X.v)
    # and the same call with CG's own iterate makes none
    obj2 = LocalObjective(PairwiseObjective(ds, 1.0), ds)
    f, g = obj2.start(w)
    d2, _ = newton.Preconditioned(obj2, "none").solve(-g, 1e-6)
    before = products.n
    obj2.linesearch_and_update(w, d2, f, g, float(g @ d2))
    assert products.n == before


def test_the_budgets_of_summed_directions(monkeypatch):
    """SummedXd, the rule both faces follow: at most max(1, int(0.4 nnz / rows)) steps a direction
    (the next step closes it: a product), and the summed steps' p of a fit at most 0.1 nnz doubles
    (counted at the line search: a direction whose next step would pass it is a product)."""
    xd = newton.SummedXd(nnz=4600, n_rows=100, n_features=10)  # 46 a row: 18 steps; 460 doubles: 46 steps of p
    assert xd.max_steps == 18 and xd.kept_left == 460.0
    assert newton.SummedXd(nnz=10, n_rows=100, n_features=1).max_steps == 1  # at least one
    x = object()
    assert xd.step(x) == -1  # no direction started
    for n in (18, 18):
        xd.new_direction()
        assert [xd.step(x) for _ in range(n)] == list(range(n))
        assert xd.take(x) == n  # CG's own iterate: summed
    assert xd.kept_left == 460.0 - 36 * 10
    xd.new_direction()
    assert [xd.step(x) for _ in range(11)] == list(range(10)) + [-1]  # 100 doubles left: 10 steps
    assert xd.take(x) == 0 and xd.kept_left == 100.0  # a product, nothing kept
    xd.new_direction()
    assert [xd.step(x) for _ in range(3)] == [0, 1, 2] and xd.take(x.__class__()) == 0  # another d: a product
    xd.new_direction()
    assert [xd.step(x) for _ in range(20)] == list(range(10)) + [-1] * 10 and xd.take(x) == 0
