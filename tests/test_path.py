"""`rankkit path --method grid`: warm-started Newton along C with validation-based selection."""

from __future__ import annotations

import numpy as np
import pytest

from rankkit.paths.grid import grid, select_point
from rankkit.selection import grid_path
from rankkit.solvers.newton import NewtonRankSVM
from tests.conftest import make_dataset
from tests.test_cli import SAMPLE_TEST, SAMPLE_TRAIN, rankkit


@pytest.fixture(scope="module")
def data():
    return make_dataset(seed=1, sizes=(30, 20, 1, 25, 40), n_features=6), make_dataset(seed=2, sizes=(20, 25, 15), n_features=6)


def test_last_point_equals_a_standalone_fit(data):
    train, valid = data
    res = grid_path(train, valid, n_points=8, ratio=1e5, tol=1e-12)
    last = res.points[-1]
    alone = NewtonRankSVM(C=last.C, tol=1e-12).fit(train)
    assert last.objective == pytest.approx(alone.objective, rel=1e-10)
    np.testing.assert_allclose(last.w, alone.w, rtol=0, atol=1e-7 * np.abs(alone.w).max())


def test_warm_starts_keep_the_optimum_and_save_iterations(data):
    train, valid = data
    warm = grid_path(train, valid, n_points=12, ratio=1e6, tol=1e-10)
    cold = grid_path(train, valid, n_points=12, ratio=1e6, tol=1e-10, warm_start=False)
    for a, b in zip(warm.points, cold.points):
        assert a.objective == pytest.approx(b.objective, rel=1e-9)
    assert sum(p.iterations for p in warm.points) < sum(p.iterations for p in cold.points)


def test_grid_starts_where_w_is_nearly_zero(data):
    train, valid = data
    Cs = grid(train, 5, 1e4)
    assert Cs[-1] / Cs[0] == pytest.approx(1e4) and np.all(np.diff(Cs) > 0)
    first = NewtonRankSVM(C=Cs[0]).fit(train)
    assert first.n_active == train.n_pairs  # every pair still violated: w ~ 0


def test_one_standard_error_rule(data):
    train, valid = data
    res = grid_path(train, valid, n_points=10, ratio=1e6, select="1se", metric="map")
    best = select_point(res.points, "best")
    chosen = res.points[res.chosen]
    assert res.chosen <= best
    # the paired rule (issue 10): the standard error of the per-query differences to the best point
    from rankkit.paths.grid import paired_se

    def within(p):
        mean, se, _ = paired_se(p.values, res.points[best].values)
        return mean >= -se

    assert within(chosen)
    assert not any(within(p) for p in res.points[: res.chosen])


def test_cli_path_writes_table_plot_and_model(tmp_path):
    proc = rankkit("path", SAMPLE_TRAIN, SAMPLE_TEST, "--method", "grid", "--out-model", "m.txt", "--table", "t.tsv",
                   "--plot", "p.svg", "--n-points", "6", "-m", "map", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    rows = (tmp_path / "t.tsv").read_text().splitlines()
    assert rows[0].split("\t")[:3] == ["C", "lambda", "iterations"] and len(rows) == 7
    assert sum(int(r.split("\t")[-1]) for r in rows[1:]) == 1  # exactly one chosen point
    assert (tmp_path / "p.svg").read_text().startswith("<svg")
    model = (tmp_path / "m.txt").read_text()
    assert "path_method grid" in model and "path_metric map" in model
    assert rankkit("predict", SAMPLE_TEST, "m.txt", cwd=tmp_path).returncode == 0
    bad = rankkit("path", SAMPLE_TRAIN, cwd=tmp_path)
    assert bad.returncode == 2 and "TRAIN and VALID" in bad.stderr.decode()
    png = rankkit("path", SAMPLE_TRAIN, SAMPLE_TEST, "--method", "grid", "--plot", "p.pdf", "--n-points", "3", cwd=tmp_path)
    assert png.returncode == 2 and ".svg or .png" in png.stderr.decode()


def test_cli_path_folds(tmp_path):
    import shutil

    for k in (1, 2):
        d = tmp_path / "letor" / f"Fold{k}"
        d.mkdir(parents=True)
        for name, src in (("train", SAMPLE_TRAIN), ("vali", SAMPLE_TEST), ("test", SAMPLE_TEST)):
            shutil.copy(src, d / f"{name}.txt")
    proc = rankkit("path", "--folds", "letor", "--method", "grid", "--n-points", "5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode().splitlines()
    assert any(ln.startswith("Fold1") for ln in lines) and lines[-1].startswith("mean")


def test_cli_exact_path_chooses_a_breakpoint_and_saves_the_model(tmp_path):
    """A small problem: the exact path by default, a table row per breakpoint, and a saved model that
    predict reads (linear, and rbf as a kernel model). Exactness itself is tested in test_exact_path."""
    lines = SAMPLE_TRAIN.read_text().splitlines()
    qids = []
    for ln in lines:
        q = ln.split()[1]
        if q not in qids:
            qids.append(q)
    small = [ln for ln in lines if ln.split()[1] in qids[:12]]
    (tmp_path / "small.txt").write_text("\n".join(small) + "\n")
    for kernel in ("linear", "rbf"):
        proc = rankkit("path", "small.txt", SAMPLE_TEST, "--kernel", kernel, "--out-model", f"{kernel}.txt",
                       "--table", f"{kernel}.tsv", "-m", "map", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr.decode()
        out = proc.stdout.decode()
        assert "method exact" in out and "<- chosen" in out
        rows = (tmp_path / f"{kernel}.tsv").read_text().splitlines()
        assert rows[0].split("\t")[:5] == ["lambda", "C", "I_alpha", "I_0", "I_1"] and len(rows) > 5
        model = (tmp_path / f"{kernel}.txt").read_text()
        assert "path_method exact" in model and "loss hinge" in model
        assert rankkit("predict", SAMPLE_TEST, f"{kernel}.txt", cwd=tmp_path).returncode == 0
    bad = rankkit("path", "small.txt", SAMPLE_TEST, "--method", "grid", "--kernel", "rbf", cwd=tmp_path)
    assert bad.returncode == 2 and "--method exact" in bad.stderr.decode()
