"""Issue 10, numerics: every figure a solver reports is true (extreme feature values, divergence,
violated pairs, converged, option handling, model selection on uninformative validation sets)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from rankkit.data import Dataset
from rankkit.errors import DataError, UsageError
from rankkit.io.svmlight import parse_bytes
from rankkit.objectives.pairwise import PairwiseObjective
from tests.conftest import make_dataset
from tests.test_cli import SAMPLE_TEST, SAMPLE_TRAIN, rankkit

MQ2008 = Path(os.environ.get("RANKKIT_SHARED", "/work/shared")) / "data" / "MQ2008" / "Fold1"


def _scaled(ds: Dataset, factor: float) -> Dataset:
    return ds.with_changes(data=ds.data * factor)


def _header(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        if " " in line and not line.startswith("#"):
            k, v = line.split(" ", 1)
            out.setdefault(k, v)
    return out


def _scaled_file(tmp_path: Path, exponent: str) -> Path:
    rows = []
    for line in SAMPLE_TRAIN.read_text().splitlines()[:60]:
        head, _, comment = line.partition("#")
        toks = head.split()
        toks = toks[:2] + [f"{t.split(':')[0]}:{float(t.split(':')[1]) * float(exponent)!r}" for t in toks[2:]]
        rows.append(" ".join(toks))
    path = tmp_path / f"big{exponent}.txt"
    path.write_text("\n".join(rows) + "\n")
    return path


# -- 1. extreme feature values -----------------------------------------------------------------
@pytest.mark.parametrize("exponent", ["1e150", "1e200", "1e300"])
def test_cli_refuses_unrepresentable_feature_values(tmp_path, exponent):
    data = _scaled_file(tmp_path, exponent)
    proc = rankkit("train", data.name, "m.txt", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith(f"rankkit: error: {data.name}:1: feature value")
    assert "too large" in err and "rescale the features" in err and "Warning" not in err
    assert not (tmp_path / "m.txt").exists()


def _solvers():
    from rankkit.solvers.bundle import BundleRankSVM
    from rankkit.solvers.factorized import FactorizedRankSVM
    from rankkit.solvers.newton import NewtonPairsRankSVM, NewtonRankSVM
    from rankkit.solvers.sgd import PaRankSVM, PairSgdRankSVM, PegasosRankSVM, QuerySgdRankSVM, RommaRankSVM

    return [
        lambda: NewtonRankSVM(), lambda: NewtonPairsRankSVM(), lambda: BundleRankSVM(),
        lambda: PegasosRankSVM(iterations=200), lambda: PaRankSVM(iterations=200), lambda: RommaRankSVM(iterations=200),
        lambda: PairSgdRankSVM(iterations=200), lambda: QuerySgdRankSVM(iterations=200),
        lambda: FactorizedRankSVM(K=2, iterations=3),
    ]


@pytest.mark.parametrize("factor", [1e150, 1e200, 1e300])
def test_every_solver_family_refuses_huge_features(factor):
    import warnings

    ds = _scaled(make_dataset(seed=1, sizes=(6, 8, 5), n_features=4), factor)
    for make in _solvers():
        solver = make()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no raw numpy RuntimeWarning on the way
            with pytest.raises(DataError, match="too large to train on"):
                solver.fit(ds)


def test_power_of_two_scaling_is_exact_where_representable():
    """Features times 2^k with C times 4^-k is the same problem: w scales by 2^-k, the objective by
    4^-k (exactly), and Newton solves it the same way (no refusal for 2^100 ~ 1.3e30)."""
    from rankkit.solvers.newton import NewtonRankSVM

    ds = make_dataset(seed=4, sizes=(10, 12, 9), n_features=5)
    a = NewtonRankSVM(C=0.1, tol=1e-10).fit(ds)
    b = NewtonRankSVM(C=0.1 * 4.0**-100, tol=1e-10).fit(_scaled(ds, 2.0**100))
    assert a.converged and b.converged
    assert b.objective * 4.0**100 == pytest.approx(a.objective, rel=1e-9)
    assert np.allclose(b.w * 2.0**100, a.w, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("which", ["newton", "bundle"])
def test_non_finite_objective_is_an_error_not_convergence(monkeypatch, which):
    from rankkit.solvers.bundle import BundleRankSVM, HingeOracle
    from rankkit.solvers.newton import NewtonRankSVM

    ds = make_dataset(seed=1, sizes=(6, 8, 5), n_features=4)
    monkeypatch.setattr(PairwiseObjective, "loss_y", lambda self, y: float("inf"))
    # the bundle's plain hinge loss comes from its own kernel (HingeOracle), not from loss_y
    monkeypatch.setattr(HingeOracle, "__call__", lambda self, y: (float("inf"), np.zeros_like(y), 0))
    solver = NewtonRankSVM() if which == "newton" else BundleRankSVM()
    with pytest.raises(DataError, match="overflowed"):
        solver.fit(ds)


def test_factorized_non_finite_start_is_an_error(monkeypatch):
    from rankkit.solvers.factorized import FactorizedRankSVM

    ds = make_dataset(seed=1, sizes=(6, 8, 5), n_features=4)
    monkeypatch.setattr(PairwiseObjective, "evaluate", lambda self, w, y: float("nan"))
    with pytest.raises(DataError, match="overflowed"):
        FactorizedRankSVM(K=2, iterations=3).fit(ds)


# -- 2. query-sgd's step, divergence -----------------------------------------------------------
def test_step_offset_is_the_trace_over_pairs():
    from rankkit.solvers._query_sgd import step_offset

    ds = make_dataset(seed=2, sizes=(7, 1, 9, 6), n_features=4, one_label_queries=(3,))
    X = ds.csr().toarray()
    traces = []
    for q in range(ds.n_queries):
        s, e = ds.qptr[q], ds.qptr[q + 1]
        t = sum(float(np.sum((X[i] - X[j]) ** 2)) for i in range(s, e) for j in range(s, e) if ds.y[i] > ds.y[j])
        traces.append(t)
    n_elig = int(np.count_nonzero(ds.levels_per_query >= 2))
    assert step_offset(ds, 0.3) == pytest.approx(1.0 / n_elig + 2 * 0.3 * max(traces), rel=1e-12)


def test_query_sgd_default_does_not_diverge_on_the_sample():
    from rankkit.solvers.newton import NewtonRankSVM
    from rankkit.solvers.sgd import QuerySgdRankSVM

    ds = parse_bytes(np.frombuffer(SAMPLE_TRAIN.read_bytes(), dtype=np.uint8), "sample")
    f_star = NewtonRankSVM().fit(ds).objective
    res = QuerySgdRankSVM(iterations=20_000).fit(ds)  # before: 15370 at 10^5 steps, above f(0) = 6851
    assert res.objective < 1.01 * f_star and not res.converged and res.fixed_budget
    assert "fixed budget" in res.message


@pytest.mark.skipif(not MQ2008.is_dir(), reason="MQ2008 not available")
def test_cli_query_sgd_default_on_mq2008(tmp_path):
    proc = rankkit("train", str(MQ2008 / "train.txt"), "q.txt", "--solver", "query-sgd", "--iterations", "20000",
                   cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    h = _header(tmp_path / "q.txt")
    # before: objective 2.1e61 "converged true"; Newton's optimum is 29566.5 (n_pairs 52325 at w = 0)
    assert float(h["objective"]) < 1.05 * 29566.52 and h["converged"] == "false"
    assert int(h["violated_pairs"]) > 0


def test_cli_divergence_is_reported(tmp_path):
    """margin-perceptron with its default 1/(lambda t) steps ends far above the objective at w = 0."""
    proc = rankkit("train", SAMPLE_TRAIN, "m.txt", "--solver", "margin-perceptron", "--iterations", "20000",
                   cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 0 and err.startswith("rankkit: warning: diverged:") and err.count("\n") == 1, err
    h = _header(tmp_path / "m.txt")
    assert h["converged"] == "false" and h["stop_reason"].startswith("diverged:")


# -- 3. violated pairs of the stochastic solvers ---------------------------------------------
def _violated(ds, w):
    y = ds.csr() @ w
    n = 0
    for q in range(ds.n_queries):
        s, e = ds.qptr[q], ds.qptr[q + 1]
        n += sum(1 for i in range(s, e) for j in range(s, e) if ds.y[i] > ds.y[j] and y[i] - y[j] < 1)
    return n


@pytest.mark.parametrize("name", ["sgd", "pa", "romma", "pair-sgd", "query-sgd"])
def test_stochastic_violated_pairs_are_counted(name):
    from rankkit.solvers import SOLVERS

    ds = make_dataset(seed=5, sizes=(9, 14, 7, 11), n_features=5)
    res = SOLVERS[name].load()(iterations=3000, C=0.1).fit(ds)
    assert res.n_active == _violated(ds, res.w) > 0


# -- 4. converged only on a stopping rule ------------------------------------------------------
def test_factorized_out_of_iterations_is_not_converged(tmp_path):
    from rankkit.solvers.factorized import FactorizedRankSVM

    ds = make_dataset(seed=1, sizes=(6, 8, 5), n_features=4)
    res = FactorizedRankSVM(K=2, iterations=4).fit(ds)
    assert not res.converged and "ran out of iterations" in res.message
    proc = rankkit("train", SAMPLE_TRAIN, "f.txt", "--solver", "factorized", "--iterations", "3", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 0 and "warning: stopped at --iterations 3: ran out of iterations" in err, err
    assert _header(tmp_path / "f.txt")["converged"] == "false"


def test_factorized_early_stopping_is_a_stopping_rule():
    from rankkit.solvers.factorized import FactorizedRankSVM

    ds = make_dataset(seed=1, sizes=(6, 8, 5, 9), n_features=4)
    res = FactorizedRankSVM(C=0.1, K=2, iterations=400, eta0=5e-3, valid=ds, patience=2).fit(ds)
    if res.iterations < 400:
        assert res.converged and "early stopping" in res.message


# -- 5. query weights ------------------------------------------------------------------------
def test_cli_all_zero_query_weights_are_refused(tmp_path):
    qids = sorted({ln.split()[1][4:] for ln in SAMPLE_TRAIN.read_text().splitlines() if ln and not ln.startswith("#")})
    (tmp_path / "w.txt").write_text("".join(f"{q} 0\n" for q in qids))
    proc = rankkit("train", SAMPLE_TRAIN, "m.txt", "--query-weights", "w.txt", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.startswith("rankkit: error: w.txt: gives weight 0 to every query"), err
    assert err.count("\n") == 1 and not (tmp_path / "m.txt").exists()


def test_weights_zero_on_every_query_with_pairs():
    from rankkit.io.query_weights import weights_for

    ds = make_dataset(seed=1, sizes=(6, 3, 7), n_features=4, one_label_queries=(1,))
    qids = ds.qid[ds.qptr[:-1]].tolist()
    with pytest.raises(DataError, match="weight 0 to every query"):
        weights_for(ds, {qids[0]: 0.0, qids[1]: 5.0, qids[2]: 0.0}, "w.txt")
    assert weights_for(ds, {qids[0]: 0.0, qids[1]: 5.0, qids[2]: 1.0}, "w.txt").tolist() == [0.0, 5.0, 1.0]


# -- 6. options that do not apply ------------------------------------------------------------
def _train_in_process(tmp_path, solver, C=None, stochastic=None, warn=None):
    """commands.train with the parameters the CLI passes (no subprocess: fast)."""
    from rankkit import commands

    out = tmp_path / f"{solver}.txt"
    st = {"lam": None, "iterations": None, "eta": None, "eta0": None, "batch_size": None, "sampler": None,
          "seed": 0, "valid_file": None, "K": None, "init_scale": None, "patience": None, "save_factors": None}
    st.update(stochastic or {})
    commands.train(str(SAMPLE_TRAIN), str(out), solver=solver,
                   params={"C": C, "tol": None, "max_iter": None, "loss": None, "query_norm": False},
                   stochastic=st, warn=warn or (lambda m: None))
    return _header(out)


@pytest.mark.parametrize("solver, stochastic, C, flag", [
    ("pegasos", {}, 5.0, "-C"),
    ("romma", {}, 0.5, "-C"),
    ("pa", {"lam": 0.5}, None, "--lambda"),
    ("pa", {"eta": "basic"}, None, "--eta"),
    ("query-sgd", {"sampler": "indexed"}, None, "--sampler"),
    ("query-sgd", {"valid_file": str(SAMPLE_TEST)}, None, "--valid"),
    ("newton", {"iterations": 5}, None, "--iterations"),
    ("factorized", {"batch_size": 2}, None, "--batch-size"),
    ("pegasos", {"eta0": 0.5}, None, "--eta0"),
])
def test_options_that_do_not_apply_are_rejected_alike(tmp_path, solver, stochastic, C, flag):
    with pytest.raises(UsageError, match=f"^{flag} is "):
        _train_in_process(tmp_path, solver, C=C, stochastic=stochastic)
    assert not (tmp_path / f"{solver}.txt").exists()


def test_cli_options_that_do_not_apply_are_rejected(tmp_path):
    """Before: `pegasos -C 5`, `romma -C 0.5` and `pa --lambda 0.5` exited 0 (the last wrote lambda 0.5)."""
    proc = rankkit("train", SAMPLE_TRAIN, "m.txt", "--solver", "pa", "--lambda", "0.5", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.startswith("rankkit: error: --lambda is not an option of --solver pa "), err
    assert err.count("\n") == 1 and not (tmp_path / "m.txt").exists()
    proc = rankkit("train", SAMPLE_TRAIN, "m.txt", "--solver", "pa", "-C", "0.5", "--iterations", "500", cwd=tmp_path)
    h = _header(tmp_path / "m.txt")
    assert proc.returncode == 0 and h["C"] == "0.5" and not {"lambda", "eta", "eta0", "batch_size"} & set(h)


def test_model_header_records_only_what_the_solver_used(tmp_path):
    for solver, stochastic, present, absent in [
        ("romma", {"iterations": 500}, {}, ("C", "lambda", "eta", "eta0", "batch_size")),
        ("pegasos", {"iterations": 500}, {"lambda": "0.1", "eta": "pegasos"}, ("C", "eta0")),
        ("margin-perceptron", {"iterations": 500, "eta": "constant", "eta0": 0.01}, {"eta0": "0.01"}, ("lambda", "C")),
        ("newton", {}, {"C": "1.0"}, ("lambda",)),  # -C not given: the default, resolved in one place
    ]:
        h = _train_in_process(tmp_path, solver, stochastic=stochastic)
        for k, v in present.items():
            assert h[k] == v, (solver, k)
        for k in absent:
            assert k not in h, (solver, k)


# -- 7. model selection on the path ----------------------------------------------------------
def _points(values: list[np.ndarray]):
    from rankkit.paths.grid import PathPoint, mean_se

    pts = []
    for k, v in enumerate(values):
        m, se = mean_se(v)
        pts.append(PathPoint(10.0**k, 1, 0.0, 0.0, 0, 1.0, m, se, 0.0, np.zeros(1), v))
    return pts


def test_1se_uses_the_paired_standard_error():
    """Queries differ a lot (0.1 ... 0.9) and the models differ a little but consistently: point 2 beats
    point 0 on every query by 0.04. The unpaired rule (the best point's own spread, se 0.044) picked
    point 0; the paired difference has no spread, so only point 1 (within noise of the best) qualifies."""
    from rankkit.paths.grid import select_point

    rng = np.random.default_rng(0)
    base = np.linspace(0.1, 0.9, 30)
    v0 = base
    v1 = base + 0.04 + rng.normal(0, 0.02, 30)
    v2 = base + 0.04
    pts = _points([v0, v1, v2])
    best = select_point(pts, "best")
    assert best in (1, 2)
    chosen = select_point(pts, "1se")
    assert chosen == 1 and pts[0].metric >= pts[best].metric - pts[best].metric_se  # the old rule said 0


def test_selection_warns_when_the_validation_set_cannot_tell_models_apart():
    from rankkit.paths.grid import select_point

    notes: list = []
    pts = _points([np.zeros(5), np.zeros(5), np.zeros(5)])
    assert select_point(pts, "best", notes=notes, metric="map") == 0
    assert len(notes) == 1 and "cannot tell the models apart" in notes[0] and "smallest C" in notes[0]
    notes = []
    one = _points([np.array([0.2]), np.array([0.5])])
    assert select_point(one, "1se", notes=notes) == 1 and "at least two validation queries" in notes[0]


@pytest.mark.parametrize("method", ["grid", "exact"])
def test_path_warns_on_a_validation_set_with_one_label(method):
    from rankkit.paths.grid import exact_path_points
    from rankkit.selection import grid_path

    train = make_dataset(seed=1, sizes=(6, 8, 5), n_features=4)
    valid = make_dataset(seed=2, sizes=(5, 4), n_features=4, one_label_queries=(0, 1))
    if method == "grid":
        said: list = []
        res = grid_path(train, valid, Cs=[0.01, 0.1, 1.0], warn=said.append)
        notes = said
    else:
        res, _, notes = exact_path_points(train, valid)
    assert res.chosen == 0 and any("cannot tell the models apart" in n for n in notes)
    assert res.notes and "no validation query has two different labels" in res.notes[0]


@pytest.mark.skipif(not MQ2008.is_dir(), reason="MQ2008 not available")
def test_1se_on_mq2008_is_not_the_nearly_zero_model():
    from rankkit.io.svmlight import read_svmlight
    from rankkit.selection import grid_path

    train = read_svmlight(str(MQ2008 / "train.txt"))
    valid = read_svmlight(str(MQ2008 / "vali.txt"))
    Cs = [3.237e-8, 7.753e-5, 0.1857]  # three points of the default grid
    res = grid_path(train, valid, Cs=Cs, metric="map", select="1se", warn=None)
    assert res.chosen > 0  # before: C = 3.2e-8, w nearly 0


def test_path_table_keeps_columns_apart():
    """Before: fixed widths ({p.iterations:12d}) ran 12-digit counts into the next column."""
    from rankkit.report import aligned

    lines = aligned([["C", "iterations", "violated", "valid map", ""],
                      ["0.001", "123456789012", "987654321098", "0.5000", ""],
                      ["0.01", "3", "5", "0.2500", "<- chosen"]])
    assert lines[0].split() == ["C", "iterations", "violated", "valid", "map"]
    assert lines[1].split() == ["0.001", "123456789012", "987654321098", "0.5000"]
    assert lines[2].split() == ["0.01", "3", "5", "0.2500", "<-", "chosen"]
    assert len({len(ln) for ln in lines[:2]}) == 1


def test_bundle_does_not_certify_what_rounding_hides():
    """Before: features x 1e20 gave a zero model with 'relative duality gap -6e+23 <= tol', converged."""
    from rankkit.solvers.bundle import BundleRankSVM

    ds = _scaled(make_dataset(seed=1, sizes=(6, 8, 5, 9), n_features=4), 1e20)
    res = BundleRankSVM().fit(ds)
    assert not res.converged and "cannot certify" in res.message
    ok = BundleRankSVM().fit(make_dataset(seed=1, sizes=(6, 8, 5, 9), n_features=4))
    assert ok.converged


def test_conjugate_gradient_overflow_gives_no_direction():
    """Before: |g|^2 = inf made CG return d = 0, a decrement of -0 and 'converged' (1e200, 1e300)."""
    from rankkit.solvers.newton import conjugate_gradient

    with np.errstate(over="ignore"):
        x, it, res = conjugate_gradient(lambda v: v, np.array([1e200, 1e200]), 1e-3, 10)
    assert np.all(np.isnan(x)) and it == 0


LGBM = MQ2008.parent.parent / "LightGBM-lambdarank" / "rank.train.qid.txt"


@pytest.mark.skipif(not LGBM.is_file(), reason="LightGBM example not available")
def test_pair_sgd_default_does_not_diverge_on_lightgbm_example():
    """Before: plain 1/t steps ended at 3.4e6, 250 times the objective 13543 at w = 0."""
    from rankkit.io.svmlight import read_svmlight
    from rankkit.solvers.sgd import PairSgdRankSVM

    ds = read_svmlight(str(LGBM))
    res = PairSgdRankSVM().fit(ds)
    assert res.fixed_budget and res.objective < 0.8 * ds.n_pairs and res.extra["step_offset"] > 1
