"""`rankkit path --plot --plot-kind coef|decision` and RegularizationPath.plot (issue 26, the paper's
Fig. 4 along the path): the curves are the path's own numbers (NumPy reference from the path's
w / beta), the SVG is written without dependency, the options are checked by the one rule."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import make_dataset
from rankkit.errors import UsageError
from rankkit.estimators import PYTHON_WORDS
from rankkit.paths.exact import PathWarning
from rankkit.selection import check_plot_options, path_curves, path_on_datasets, plot_path
from rankkit.plot import plane_svg
from reference import dense


def exact_and_grid():
    train, valid = make_dataset(seed=3, integer_features=True), make_dataset(seed=8, sizes=(1, 9, 6, 11))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PathWarning)
        ex = path_on_datasets(train, valid, "exact", "ndcg@10")
        kr = path_on_datasets(train, valid, "exact", "ndcg@10", exact={"kernel": "rbf", "max_events": 200})
    gr = path_on_datasets(train, valid, "grid", "ndcg@10", n_points=6)
    return train, valid, ex, kr, gr


@pytest.fixture(scope="module")
def paths():
    return exact_and_grid()


def test_coef_curves_are_the_paths_weights(paths):
    train, valid, (res, raw, _, _), _, (gres, _, _, _) = paths
    c = path_curves(res, raw, valid, "coef", train=train)
    assert len(c.series) <= 10 and c.chosen_C == res.best.C
    Cs = np.array(c.C)
    assert np.all(np.diff(Cs) > 0) and Cs[0] == res.points[0].C and Cs[-1] == res.points[-1].C
    order = np.argsort(-np.abs(res.best.w), kind="stable")[:10]
    assert [lab for lab, _, _ in c.series] == [f"feature {j + 1}" for j in order[:len(c.series)]]
    for C, row in zip(Cs[::5], np.array([v for _, v, _ in c.series]).T[::5]):  # densified: w(lambda) between breakpoints
        np.testing.assert_allclose(row, raw.w_at(1.0 / C)[order[:len(row)]], rtol=1e-10, atol=1e-12)
    g = path_curves(gres, None, valid, "coef")
    assert g.C == [p.C for p in gres.points]
    j = int(g.series[0][0].split()[1]) - 1
    assert g.series[0][1] == [p.w[j] for p in gres.points]


def test_decision_curves_are_the_scores_of_one_query(paths):
    train, valid, (res, raw, _, _), (kres, kraw, _, _), _ = paths
    qid = int(valid.qid[valid.qptr[2]])
    c = path_curves(res, raw, valid, "decision", query=qid)
    s, e = int(valid.qptr[2]), int(valid.qptr[3])
    assert len(c.series) == e - s and c.grouped
    F = np.array([v for _, v, _ in c.series])  # documents x points
    Xv = dense(valid)[s:e]
    for k in range(0, len(c.C), 7):
        np.testing.assert_allclose(F[:, k], Xv @ raw.w_at(1.0 / c.C[k])[:Xv.shape[1]], rtol=1e-9, atol=1e-12)
    top = max(valid.y[s:e])
    assert {g for lab, _, g in c.series if lab.endswith(f"label {top:g}")} == {0}  # the highest label: group 0 (red)
    kc = path_curves(kres, kraw, valid, "decision", query=qid)  # an rbf path: f = K(x, train) beta
    KF = np.array([v for _, v, _ in kc.series])
    np.testing.assert_allclose(KF[:, -1], kraw.scores_at(1.0 / kc.C[-1], valid)[s:e], rtol=1e-9, atol=1e-12)
    with pytest.raises(UsageError, match="plot query 424242: no validation query has this qid"):
        path_curves(res, raw, valid, "decision", query=424242)


def test_svg_written_without_dependency(paths, tmp_path):
    train, valid, (res, raw, _, _), (kres, kraw, _, _), _ = paths
    for kind in ("metric", "coef", "decision"):
        f = tmp_path / f"{kind}.svg"
        plot_path(str(f), res, raw, valid, kind, None, train)
        text = f.read_text()
        assert text.startswith("<svg") and text.rstrip().endswith("</svg>") and "chosen" in text
    plot_path(str(tmp_path / "k.svg"), kres, kraw, valid, "coef", None, train)
    assert "beta of the" in (tmp_path / "k.svg").read_text()
    svg = plane_svg("t", [("a", [[-1.0, 1.0], [2.0, -2.0]])], [(0.5, 0.5)], [1.0], (0.0, 1.0, 0.0, 1.0))
    assert svg.count("<rect") == 1 + 4 + 1 and "<path" in svg  # background, 4 cells, frame; the f = 0 line


def test_plot_options_follow_the_one_rule():
    check_plot_options("p.svg", "decision", 3)
    with pytest.raises(UsageError, match="--plot-kind applies only with --plot"):
        check_plot_options(None, "coef", None)
    with pytest.raises(UsageError, match="--plot-query applies only with --plot-kind decision, not --plot-kind coef"):
        check_plot_options("p.svg", "coef", 3)
    with pytest.raises(UsageError, match="plot_query applies only with plot_kind='decision'"):
        check_plot_options("p.svg", "metric", 3, words=PYTHON_WORDS)
    with pytest.raises(UsageError, match=r"\.svg or \.png"):
        check_plot_options("p.pdf", "coef", None)


def test_cli_and_python_faces(tmp_path):
    from click.testing import CliRunner

    from rankkit.cli import cli
    import rankkit

    train, valid = make_dataset(seed=3), make_dataset(seed=8, sizes=(1, 9, 6, 11))
    ft, fv = tmp_path / "t.txt", tmp_path / "v.txt"
    for ds, f in ((train, ft), (valid, fv)):
        X = dense(ds)
        f.write_text("".join(f"{int(y)} qid:{q} " + " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(x) if v) + "\n"
                             for y, q, x in zip(ds.y, ds.qid, X)))
    r = CliRunner().invoke(cli, ["path", str(ft), str(fv), "--method", "exact", "--plot", str(tmp_path / "d.svg"),
                                 "--plot-kind", "decision", "--plot-query", str(int(valid.qid[valid.qptr[2]]))])
    assert r.exit_code == 0, r.output
    assert "decision values f(x) of validation query" in (tmp_path / "d.svg").read_text()
    r = CliRunner().invoke(cli, ["path", str(ft), str(fv), "--plot-kind", "coef"])
    assert isinstance(r.exception, UsageError) and str(r.exception) == "--plot-kind applies only with --plot"
    X, Xv = dense(train), dense(valid)
    path = rankkit.regularization_path(X, train.y, Xv, valid.y, qid=train.qid, qid_valid=valid.qid, method="grid",
                                       n_points=4, plot=str(tmp_path / "c.svg"), plot_kind="coef")
    assert "feature 0" in (tmp_path / "c.svg").read_text() or "feature 1" in (tmp_path / "c.svg").read_text()
    path.plot(str(tmp_path / "m.svg"))
    assert (tmp_path / "m.svg").read_text().startswith("<svg")
    with pytest.raises(UsageError, match="plot_kind applies only with plot"):
        rankkit.regularization_path(X, train.y, Xv, valid.y, qid=train.qid, qid_valid=valid.qid, method="grid",
                                    n_points=4, plot_kind="coef")
