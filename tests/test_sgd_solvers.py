"""The stochastic solvers from the library and the CLI (issue 5)."""

from __future__ import annotations

import numpy as np
import pytest

from rankkit.errors import UsageError
from rankkit.solvers.bundle import BundleRankSVM
from rankkit.solvers.sgd import PegasosRankSVM, SgdRankSVM, checkpoints, hinge_objective
from tests.conftest import make_dataset

SGD_TOLERANCE = 5e-4  # relative gap to the exact hinge optimum after 10^6 uniform-sampler steps


@pytest.mark.parametrize("cls", [PegasosRankSVM, SgdRankSVM])
def test_sgd_and_pegasos_reach_the_exact_hinge_optimum(cls):
    """lambda/2||w||^2 + mean hinge over pairs = lambda * (0.5||w||^2 + C sum hinge) with
    C = 1/(lambda |P|): the bundle method gives its exact optimum."""
    ds = make_dataset(seed=1, sizes=(20, 15, 1, 25, 30, 12), n_features=6)
    lam = 0.01
    ref = BundleRankSVM(C=1.0 / (lam * ds.n_pairs), tol=1e-10).fit(ds)
    f_star = lam * ref.objective
    assert hinge_objective(ds, ref.w, lam) == pytest.approx(f_star, rel=1e-12)
    gaps = [(cls(lam=lam, iterations=it).fit(ds).objective - f_star) / f_star for it in (10**4, 10**6)]
    assert 0 <= gaps[1] <= SGD_TOLERANCE and gaps[1] < gaps[0]


def test_results_do_not_depend_on_verbosity_and_follow_the_seed():
    ds = make_dataset(seed=2, sizes=(20, 15, 25), n_features=5)
    lines = []
    a = PegasosRankSVM(iterations=5000, seed=3).fit(ds, log=lines.append)
    b = PegasosRankSVM(iterations=5000, seed=3).fit(ds)
    c = PegasosRankSVM(iterations=5000, seed=4).fit(ds)
    assert np.array_equal(a.w, b.w) and not np.array_equal(a.w, c.w)
    assert [ln.split()[1] for ln in lines] == [str(cp) for cp in checkpoints(5000)]


def test_checkpoints_grow():
    assert checkpoints(100_000) == [100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000]
    assert checkpoints(50) == [50] and checkpoints(150) == [100, 150]


def test_roc_sampler_needs_one_query():
    with pytest.raises(UsageError, match="roc"):
        PegasosRankSVM(sampler="roc", iterations=10).fit(make_dataset(seed=3))


def test_cli_stochastic_solvers(tmp_path):
    from tests.test_cli import SAMPLE_TEST, SAMPLE_TRAIN, rankkit

    for solver in ("sgd", "pegasos", "pa", "romma", "logreg", "margin-perceptron", "pair-sgd", "query-sgd"):
        with_c = ["-C", "0.01"] if solver in ("pa", "pair-sgd", "query-sgd") else []
        proc = rankkit("train", SAMPLE_TRAIN, f"{solver}.txt", "--solver", solver, "--iterations", "20000",
                       *with_c, cwd=tmp_path)
        assert proc.returncode == 0, (solver, proc.stderr.decode())
        text = (tmp_path / f"{solver}.txt").read_text()
        assert f"solver {solver}" in text and "iterations 20000" in text and "seed 0" in text
        assert rankkit("predict", SAMPLE_TEST, f"{solver}.txt", cwd=tmp_path).returncode == 0
    header = (tmp_path / "pegasos.txt").read_text()
    assert "sampler uniform" in header and "lambda 0.1" in header
    verbose = rankkit("train", SAMPLE_TRAIN, "v.txt", "--solver", "pegasos", "--iterations", "2000",
                      "--valid", SAMPLE_TEST, "-v", "--sampler", "indexed", cwd=tmp_path)
    assert verbose.returncode == 0 and "valid map" in verbose.stderr.decode()
    for args, fragment in [
        (["--solver", "pegasos", "--tol", "1e-3"], "--tol is not an option of --solver pegasos"),
        (["--lambda", "0.1"], "--lambda is not an option of --solver newton"),
        (["--solver", "pegasos", "--query-norm"], "--sampler query-norm"),
        (["--solver", "pegasos", "--sampler", "roc"], "roc"),
        (["--solver", "pa", "--batch-size", "4"], "batch"),
    ]:
        bad = rankkit("train", SAMPLE_TRAIN, "b.txt", *args, cwd=tmp_path)
        err = bad.stderr.decode()
        assert bad.returncode == 2 and fragment in err and "Traceback" not in err, (args, err)


def test_exact_figures_only_when_asked_or_not_dearer_than_the_steps():
    """The exact objective (an O(nnz + n log n) pass) at the end of a short run on many documents
    is not computed unless asked (exact_objective=True, or -v: a log): NaN and no violated-pair
    count, never a made-up figure; the weights are the same either way."""
    import math

    from rankkit.solvers.sgd import PairSgdRankSVM, QuerySgdRankSVM

    ds = make_dataset(seed=2, sizes=(200, 150, 250), n_features=5)
    few = PegasosRankSVM(iterations=10, seed=1)
    assert not few.wants_exact_objective(ds)
    r = few.fit(ds)
    assert math.isnan(r.objective) and r.n_active is None and r.stop == "budget"
    asked = PegasosRankSVM(iterations=10, seed=1, exact_objective=True).fit(ds)
    assert np.array_equal(asked.w, r.w) and asked.objective == hinge_objective(ds, r.w, 0.1)
    logged = PegasosRankSVM(iterations=10, seed=1).fit(ds, log=lambda line: None)
    assert logged.objective == asked.objective and logged.n_active == asked.n_active
    assert PegasosRankSVM(iterations=10**5).wants_exact_objective(ds)
    # query-sgd: a step is one query's sweep, so the figures (twice: objective and AUC) cost two
    # epochs of steps
    assert not QuerySgdRankSVM(iterations=5).wants_exact_objective(ds)
    assert QuerySgdRankSVM(iterations=6).wants_exact_objective(ds)
    for solver in (PegasosRankSVM(lam=0.3), PairSgdRankSVM(C=0.3)):  # the start, without a pass
        assert solver._objective_at_zero(ds) == pytest.approx(solver._objective(ds, np.zeros(ds.n_features))[0],
                                                               rel=1e-15)


def test_cli_records_no_figure_it_did_not_compute(tmp_path):
    from tests.test_cli import SAMPLE_TRAIN, rankkit

    proc = rankkit("train", SAMPLE_TRAIN, "m.txt", "--solver", "pegasos", "--iterations", "10", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    header = (tmp_path / "m.txt").read_text()
    assert "objective nan" in header and "violated_pairs" not in header
    proc = rankkit("train", SAMPLE_TRAIN, "v.txt", "--solver", "pegasos", "--iterations", "10", "-v", cwd=tmp_path)
    header = (tmp_path / "v.txt").read_text()
    assert "objective nan" not in header and "violated_pairs" in header
