"""Solver nlcg: Chapelle & Keerthi Sect. 2's non-linear conjugate gradient on the primal RankSVM
objective reaches the optimum the truncated-Newton solver reaches (the same function), stops by
its certified rule, and records true figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rankkit.solvers.newton import NewtonRankSVM
from rankkit.solvers.nlcg import NlcgRankSVM
from tests.conftest import make_dataset
from tests.reference import dense, explicit_pairs, pair_objective

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "MQ2008"


@pytest.mark.parametrize("C", [0.01, 1.0, 30.0])
def test_nlcg_reaches_newtons_optimum(C):
    """Both stop at relative accuracy tol: |f_nlcg - f_newton| <= tol f (nlcg's rule certifies
    f - f* <= tol f / 2; newton's estimates the same), and nlcg's gradient meets its rule, checked
    against the brute-force gradient."""
    ds = make_dataset(seed=7, n_labels=3)
    tol = 1e-10
    a = NewtonRankSVM(C=C, tol=tol).fit(ds)
    b = NlcgRankSVM(C=C, tol=tol).fit(ds)
    assert a.converged and b.converged and b.stop == "gradient"
    assert abs(a.objective - b.objective) <= tol * a.objective
    f, g, _ = pair_objective(ds, C, b.w)
    assert b.objective == pytest.approx(f, rel=1e-12)
    assert g @ g <= tol * f * (1 + 1e-6)
    assert b.extra["gradient_norm"] == pytest.approx(np.linalg.norm(g), rel=1e-6)
    P = explicit_pairs(ds.y, ds.qptr)
    y = dense(ds) @ b.w
    assert b.n_active == int(np.sum(y[P[:, 0]] - y[P[:, 1]] < 1))


def test_nlcg_query_weights_and_warm_start():
    ds = make_dataset(seed=8, n_labels=4, sizes=(20, 1, 15, 9))
    qw = np.array([1.0, 2.0, 0.0, 0.5])
    a = NewtonRankSVM(C=0.3, tol=1e-12, query_weights=qw).fit(ds)
    b = NlcgRankSVM(C=0.3, tol=1e-12, query_weights=qw).fit(ds)
    assert abs(a.objective - b.objective) <= 1e-12 * a.objective
    warm = NlcgRankSVM(C=0.3, tol=1e-12, query_weights=qw).fit(ds, w0=b.w)
    assert warm.iterations <= 1 and warm.converged


def test_nlcg_max_iter_is_reported_not_converged():
    ds = make_dataset(seed=9, n_labels=3)
    r = NlcgRankSVM(C=10.0, tol=1e-14, max_iter=3).fit(ds)
    assert r.stop == "max_iter" and not r.converged and r.iterations == 3
    assert "--max-iter 3" in r.message


def test_cli_nlcg_model_records_true_figures(tmp_path):
    from rankkit.io.model import read_model
    from tests.test_cli import SAMPLE_TRAIN, rankkit

    out = rankkit("train", SAMPLE_TRAIN, "m.txt", "--solver", "nlcg", "-C", "0.1", "-v", cwd=tmp_path)
    assert out.returncode == 0, out.stderr.decode()
    h = read_model(str(tmp_path / "m.txt")).header
    assert h["solver"] == "nlcg" and h["converged"] == "true"
    assert "|g|^2 / objective" in h["stop_reason"]
    assert int(h["line_search_evaluations"]) >= int(h["iterations"]) >= 1
    newton = rankkit("train", SAMPLE_TRAIN, "n.txt", "-C", "0.1", cwd=tmp_path)
    assert newton.returncode == 0
    hn = read_model(str(tmp_path / "n.txt")).header
    assert abs(float(h["objective"]) - float(hn["objective"])) <= 1e-6 * float(hn["objective"])
    bad = rankkit("train", SAMPLE_TRAIN, "b.txt", "--solver", "nlcg", "--loss", "hinge", cwd=tmp_path)
    assert bad.returncode == 2


@pytest.mark.skipif(not (DATA / "Fold1" / "train.txt").exists(), reason="../shared/data/MQ2008 absent")
def test_nlcg_on_mq2008_fold1():
    from rankkit.io.svmlight import read_svmlight

    ds = read_svmlight(str(DATA / "Fold1" / "train.txt"))
    a = NewtonRankSVM(C=1e-3).fit(ds)
    b = NlcgRankSVM(C=1e-3).fit(ds)
    assert a.converged and b.converged
    assert abs(a.objective - b.objective) <= 1e-6 * a.objective
