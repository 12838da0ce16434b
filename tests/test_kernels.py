"""Non-linear RankSVM through the kernel map (Sect. 6.3)."""

from __future__ import annotations

import numpy as np
import pytest

from rankkit.errors import UsageError
from rankkit.io.model import Model, read_model, write_model
from rankkit.feature_maps import EXACT_MAP_MAX, choose_landmarks, fit_map, kernel_scores, make_kernel, mapped_dataset
from rankkit.solvers.newton import NewtonRankSVM
from tests.conftest import make_dataset


def _fit_kernel(ds, kernel, landmarks=None, seed=0, C=0.5):
    X = ds.csr()
    kmap = fit_map(X, kernel, choose_landmarks(ds.n_rows, landmarks, seed))
    res = NewtonRankSVM(C=C, tol=1e-12).fit(mapped_dataset(ds, kmap.transform(X)))
    return res, kmap, kmap.projection @ res.w


def test_linear_kernel_equals_the_linear_solver():
    ds = make_dataset(seed=1, sizes=(20, 15, 1, 25), n_features=5)
    test = make_dataset(seed=2, sizes=(10, 12), n_features=5)
    lin = NewtonRankSVM(C=0.5, tol=1e-12).fit(ds)
    res, kmap, beta = _fit_kernel(ds, make_kernel("linear", ds.n_features, None, 3, 0.0))
    assert res.objective == pytest.approx(lin.objective, rel=1e-9)
    X = test.csr()
    np.testing.assert_allclose(kernel_scores(kmap.kernel, kmap.landmarks, beta, X), X @ lin.w, rtol=0, atol=1e-7)


def test_enough_nystrom_landmarks_give_the_exact_kernel_solution():
    """poly degree 2 on 3 features has rank <= 10: 40 random landmarks span it exactly."""
    ds = make_dataset(seed=3, sizes=(30, 25, 40), n_features=3, density=1.0)
    k = make_kernel("poly", 3, 0.5, 2, 1.0)
    exact, kmap_e, beta_e = _fit_kernel(ds, k)
    nys, kmap_n, beta_n = _fit_kernel(ds, k, landmarks=40, seed=7)
    assert kmap_n.landmarks.shape[0] == 40 and kmap_n.projection.shape[1] <= 10
    assert nys.objective == pytest.approx(exact.objective, rel=1e-8)
    test = make_dataset(seed=4, sizes=(15,), n_features=3, density=1.0).csr()
    np.testing.assert_allclose(kernel_scores(k, kmap_n.landmarks, beta_n, test),
                               kernel_scores(k, kmap_e.landmarks, beta_e, test), rtol=0, atol=1e-6)


def test_rbf_nystrom_improves_with_landmarks():
    ds = make_dataset(seed=5, sizes=(40, 40, 40), n_features=4, density=1.0)
    k = make_kernel("rbf", 4, 0.5, 3, 0.0)
    exact = _fit_kernel(ds, k)[0].objective
    gaps = [abs(_fit_kernel(ds, k, landmarks=m, seed=1)[0].objective - exact) / exact for m in (10, 40, 120)]
    assert gaps[2] <= 1e-9 and gaps[0] > gaps[2]


def test_kernel_matrix_matches_definitions():
    ds = make_dataset(seed=6, sizes=(8,), n_features=4)
    X = ds.csr()
    D = X.toarray()
    for name, ref in [
        ("linear", D @ D.T),
        ("poly", (0.3 * D @ D.T + 1.5) ** 3),
        ("rbf", np.exp(-0.3 * ((D[:, None, :] - D[None, :, :]) ** 2).sum(-1))),
    ]:
        k = make_kernel(name, 4, 0.3, 3, 1.5)
        np.testing.assert_allclose(k.matrix(X, X), ref, rtol=1e-12, atol=1e-12)


def test_kernel_model_round_trip(tmp_path):
    ds = make_dataset(seed=7, sizes=(20, 20), n_features=4)
    k = make_kernel("rbf", 4, None, 3, 0.0)
    _, kmap, beta = _fit_kernel(ds, k, landmarks=15)
    header = {"kernel": "rbf", "gamma": k.gamma, "index_base": 1, "n_features": 4}
    write_model(str(tmp_path / "m"), Model(weights=beta, header=header, landmarks=kmap.landmarks))
    back = read_model(str(tmp_path / "m"))
    assert np.array_equal(back.weights, beta)
    assert (back.landmarks != kmap.landmarks).nnz == 0 and back.n_features == 4


def test_exact_map_is_limited_and_landmarks_are_reproducible():
    with pytest.raises(UsageError, match="--landmarks"):
        choose_landmarks(EXACT_MAP_MAX + 1, None, 0)
    assert np.array_equal(choose_landmarks(1000, 50, 3), choose_landmarks(1000, 50, 3))
    assert not np.array_equal(choose_landmarks(1000, 50, 3), choose_landmarks(1000, 50, 4))


def test_cli_kernel_train_and_predict(tmp_path):
    from tests.test_cli import SAMPLE_TEST, SAMPLE_TRAIN, rankkit

    ok = rankkit("train", SAMPLE_TRAIN, "k.txt", "--kernel", "rbf", "--landmarks", "300", "-C", "0.01", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr.decode()
    text = (tmp_path / "k.txt").read_text()
    assert "kernel rbf" in text and "landmarks 300" in text
    pred = rankkit("predict", SAMPLE_TEST, "k.txt", cwd=tmp_path)
    assert pred.returncode == 0 and len(pred.stdout.split()) == len(SAMPLE_TEST.read_text().splitlines())


def test_a_poly_kernel_that_underflows_or_overflows_says_so():
    """`--kernel poly --degree 1000000` was blamed on empty landmark rows."""
    import scipy.sparse as sp

    X = sp.csr_matrix(np.array([[0.5, 0.2], [0.1, 0.9], [0.3, 0.3]]))
    rows = np.arange(3)
    with pytest.raises(UsageError, match=r"underflows to 0; lower the degree"):
        fit_map(X, make_kernel("poly", 2, 0.5, 1_000_000, 0.0), rows)
    with pytest.raises(UsageError, match=r"poly kernel overflows on the landmarks"):
        fit_map(X, make_kernel("poly", 2, 100.0, 1001, 1.0), rows)
    with pytest.raises(UsageError, match=r"every landmark row is empty"):
        fit_map(sp.csr_matrix((3, 2)), make_kernel("poly", 2, 0.5, 3, 0.0), rows)
    fit_map(X, make_kernel("poly", 2, 0.5, 3, 1.0), rows)  # a usual kernel still fits
