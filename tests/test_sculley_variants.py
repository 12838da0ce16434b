"""Sculley (2009) to the letter (issue 26): sofia-ml's rank-loop sampler, PA's default C, basic's
c, the paper's "did not help" variants (plain perceptron, pairs with ties, cross-product
features) and Chapelle & Keerthi's pair-sgd step 1/t (--t0 0), from the library and the CLI.
The kernels themselves are checked against NumPy references in tests/test_sgd_kernels.py."""

from __future__ import annotations

import numpy as np
import pytest

import rankkit
from rankkit.errors import UsageError
from rankkit.solvers import _sgd_kernels as K
from rankkit.solvers.sgd import PairSgdRankSVM, PerceptronRankSVM, QuerySgdRankSVM
from tests.conftest import make_dataset
from tests.reference_sgd import RTOL_SGD, dense_rows, reference_spd


def _header(path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and not line[0].isdigit():
            out.setdefault(parts[0], parts[1])
    return out


def _same(text: str, value: str) -> bool:
    try:
        return float(text) == float(value)
    except ValueError:
        return text == value


def _train(*args):
    """`rankkit train ARGS` in this process through Click: (exit code, the exception or None)."""
    from click.testing import CliRunner

    from rankkit.cli import cli

    res = CliRunner().invoke(cli, ["train", *map(str, args)])
    return res.exit_code, res.exception


def test_cli_options(tmp_path):
    from tests.test_cli import SAMPLE_TRAIN, rankkit as run

    model = tmp_path / "m.txt"
    ok = [
        (["--solver", "pegasos", "--sampler", "sofia"], {"sampler": "sofia"}),
        (["--solver", "pa"], {"C": "10000000"}),  # sofia-ml's --passive_aggressive_c
        (["--solver", "sgd", "--eta", "basic", "--eta-c", "3"], {"eta": "basic", "eta_c": "3"}),
        (["--solver", "pegasos", "--ties"], {"ties": "true"}),
        (["--solver", "perceptron", "--eta", "constant"], {"solver": "perceptron"}),
        (["--solver", "pair-sgd", "--t0", "0"], {"t0": "0"}),
        (["--solver", "query-sgd", "--t0", "5"], {"t0": "5"}),
    ]
    for args, want in ok:
        code, exc = _train(SAMPLE_TRAIN, model, *args, "--iterations", "500")
        assert code == 0, (args, exc)
        head = _header(model)
        for key, value in want.items():
            assert key in head and _same(head[key].split()[0], value), (args, key, head.get(key))
    head = _header(model)
    assert "eta_c" not in head and "ties" not in head
    for args, fragment in [
        (["--solver", "sgd", "--eta", "constant", "--eta-c", "3"], "--eta-c applies only with --eta basic"),
        (["--solver", "pa", "--ties"], "--ties is not an option of --solver pa"),
        (["--solver", "romma", "--ties"], "--ties is not an option of --solver romma"),
        (["--solver", "pegasos", "--t0", "0"], "--t0 is not an option of --solver pegasos"),
        (["--solver", "pegasos", "--ties", "--sampler", "stream"], "--ties does not work with --sampler stream"),
    ]:
        code, exc = _train(SAMPLE_TRAIN, tmp_path / "b.txt", *args, "--iterations", "100")
        assert code != 0 and isinstance(exc, UsageError) and fragment in str(exc), (args, exc)
    # the command line words it: one line, exit 2
    bad = run("train", SAMPLE_TRAIN, "b.txt", "--solver", "sgd", "--eta-c", "3", cwd=tmp_path)
    err = bad.stderr.decode()
    assert bad.returncode == 2 and "--eta-c applies only with --eta basic" in err and "Traceback" not in err, err


@pytest.mark.filterwarnings("ignore::rankkit.ConvergenceWarning")  # 300 steps: some diverge, it does not matter here
def test_python_options_and_model_round_trip(tmp_path):
    ds = make_dataset(seed=3, integer_features=True, n_labels=4)
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    with pytest.raises(UsageError, match="eta_c applies only with eta='basic'"):
        rankkit.SGDRanker(eta_c=3.0, iterations=100).fit(X, ds.y, qid=ds.qid)
    with pytest.raises(UsageError, match="ties"):
        rankkit.SGDRanker(learner="romma", ties=True, iterations=100).fit(X, ds.y, qid=ds.qid)
    with pytest.raises(UsageError, match="t0"):
        rankkit.SGDRanker(learner="pair-sgd", t0=-1, iterations=100).fit(X, ds.y, qid=ds.qid)
    pa = rankkit.SGDRanker(learner="pa", iterations=200).fit(X, ds.y, qid=ds.qid)
    assert float(pa.model_.header["C"]) == 1e7  # sofia-ml's default
    for params in ({"learner": "sgd", "eta": "basic", "eta_c": 3.0, "ties": True, "sampler": "sofia"},
                   {"learner": "pair-sgd", "t0": 0}, {"learner": "perceptron", "eta": "constant"}):
        est = rankkit.SGDRanker(iterations=300, **params).fit(X, ds.y, qid=ds.qid)
        est.save(tmp_path / "m.model")
        again = rankkit.load_model(tmp_path / "m.model")
        for k, v in params.items():
            assert getattr(again, k) == v, (k, getattr(again, k), v)
        refit = again.fit(X, ds.y, qid=ds.qid)
        assert np.array_equal(refit.predict(X), est.predict(X))


def test_pair_sgd_step_one_over_t_matches_reference():
    """--t0 0: Chapelle & Keerthi's Algorithm 2 with the paper's step 1/t, w <- w - (1/t)(w/|P| +
    C l'(p) x): the reference fed the same uniform pairs (one segment: 100 steps)."""
    ds = make_dataset(seed=1, sizes=(20, 15, 1, 25, 30, 12), n_features=6)
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    C = 0.05
    res = PairSgdRankSVM(C=C, t0=0, iterations=100).fit(ds)
    assert res.extra["step_offset"] == 0
    index = K.build_index(ds.y, ds.qptr)
    pa, pb = np.empty(100, np.int64), np.empty(100, np.int64)
    assert K.sample_pairs(*index, K.SAMPLERS["uniform"], 0, 100, pa, pb) == K.OK
    w_ref, _ = reference_spd(X, pa, pb, "pair-sgd", "inverse-t", 1.0, 1.0 / ds.n_pairs, C, 100, 1)
    np.testing.assert_allclose(res.w, w_ref, rtol=0, atol=RTOL_SGD * max(1.0, np.abs(w_ref).max()))
    default = PairSgdRankSVM(C=C, iterations=100).fit(ds)
    assert default.extra["step_offset"] > 1 and not np.allclose(default.w, res.w)
    q = QuerySgdRankSVM(C=C, t0=0, iterations=50).fit(ds)
    assert q.extra["step_offset"] == 0 and np.all(np.isfinite(q.w))


def test_cross_product_features_are_the_degree_2_kernel():
    """The paper's cross-product features x' = (x_i x_j), i, j = 1..n (R^{n x n}) have inner
    products x'.z' = (x.z)^2: the poly kernel with degree 2, gamma 1, coef0 0. Its exact kernel
    map (every training document a landmark) is an isometry of their span, and the learners'
    steps are linear in x, so SGD on the map scores as SGD on the explicit products."""
    ds = make_dataset(seed=2, sizes=(6, 1, 9, 4), n_features=4, n_labels=3)
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    cross = np.einsum("ri,rj->rij", X, X).reshape(len(X), -1)  # every ordered product
    for learner in ("pegasos", "sgd"):
        on_map = rankkit.SGDRanker(learner=learner, kernel="poly", degree=2, gamma=1.0, coef0=0.0, iterations=2000,
                                   alpha=0.05).fit(X, ds.y, qid=ds.qid)
        explicit = rankkit.SGDRanker(learner=learner, iterations=2000, alpha=0.05).fit(cross, ds.y, qid=ds.qid)
        a, b = on_map.predict(X), explicit.predict(cross)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-8 * max(1.0, np.abs(b).max()))


def test_perceptron_is_scale_free_and_stops_when_pairs_are_ordered():
    """The plain perceptron steps only on pairs w ranks wrong (or ties): with a constant eta the
    weights scale with eta; on separable pairs it ends ordering every pair, and from there never
    moves again."""
    from tests.reference import explicit_pairs
    from tests.test_sgd_kernels import separable_dataset

    ds = separable_dataset()
    a = PerceptronRankSVM(eta="constant", eta0=1.0, iterations=20000).fit(ds).w
    b = PerceptronRankSVM(eta="constant", eta0=0.25, iterations=20000).fit(ds).w
    np.testing.assert_allclose(b, 0.25 * a, rtol=1e-12, atol=1e-15)
    X = dense_rows(ds.data, ds.indices, ds.indptr, ds.n_features)
    pairs = explicit_pairs(ds.y, ds.qptr)
    assert np.all((X[pairs[:, 0]] - X[pairs[:, 1]]) @ a > 0), "the perceptron separates separable pairs"
    again = PerceptronRankSVM(eta="constant", eta0=1.0, iterations=300).fit(ds, w0=a).w
    assert np.array_equal(again, a)
