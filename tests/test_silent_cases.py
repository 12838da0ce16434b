"""Smaller silent cases (issue 34, item 5): a dense validation matrix of another width is refused as
predict refuses it (never padded with zeros); evaluate_parts and evaluate break score ties the
same way by default; a group or query side file picked up by a glob of part files is named as
what it is."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import rankkit
from rankkit.errors import UsageError
from tests.test_sklearn_user import Frame


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X @ [1.0, 0.5, 0.0] + rng.normal(0, 0.3, 60) > 0).astype(float)
    return X, y, np.repeat(np.arange(12), 5)


# -- (a) the width of a validation set ---------------------------------------------------------------------
def _predict_says(est, X) -> str:
    with pytest.raises(UsageError) as info:
        est.predict(X)
    return str(info.value)


@pytest.mark.parametrize("narrow", [True, False])
def test_path_refuses_a_dense_validation_matrix_of_another_width(small, narrow):
    X, y, q = small
    Xv = X[40:, :2] if narrow else np.c_[X[40:], X[40:, :1]]
    with pytest.raises(UsageError) as info:
        rankkit.regularization_path(X[:40], y[:40], Xv, y[40:], qid=q[:40], qid_valid=q[40:], method="grid",
                                    n_points=3)
    said = str(info.value)
    est = rankkit.RankSVM(C=0.1).fit(X[:40], y[:40], qid=q[:40])
    assert said == _predict_says(est, Xv).replace("X has", "X_valid has").replace(
        "but RankSVM is", "but the model fitted on X is").replace("a sparse X may", "a sparse X_valid may").replace(
        "rankkit predict does", "rankkit path does")
    # sparse: a narrower matrix is the features it holds (the rest 0), as a data file is
    sparse = sp.csr_matrix(X[40:, :2])
    path = rankkit.regularization_path(X[:40], y[:40], sparse, y[40:], qid=q[:40], qid_valid=q[40:], method="grid",
                                       n_points=3)
    assert len(path) == 3


def test_path_refuses_reordered_validation_columns_and_keeps_the_names(small, tmp_path):
    X, y, q = small
    names = ["a", "b", "c"]
    with pytest.raises(UsageError, match="feature names of X_valid differ from those seen by fit .the same names in "
                                         "another order"):
        rankkit.regularization_path(Frame(X[:40], names), y[:40], Frame(X[40:, ::-1], names[::-1]), y[40:],
                                    qid=q[:40], qid_valid=q[40:], method="grid", n_points=3)
    path = rankkit.regularization_path(Frame(X[:40], names), y[:40], Frame(X[40:], names), y[40:], qid=q[:40],
                                       qid_valid=q[40:], method="grid", n_points=3)
    best = path.best_estimator_
    assert list(best.feature_names_in_) == names
    with pytest.raises(UsageError, match="another order"):
        best.predict(Frame(X[40:, ::-1], names[::-1]))
    best.save(tmp_path / "m.model")
    assert list(rankkit.load_model(tmp_path / "m.model").feature_names_in_) == names


@pytest.mark.parametrize("narrow", [True, False])
def test_eval_set_refuses_a_dense_matrix_of_another_width(small, narrow):
    X, y, q = small
    Xv = X[40:, :2] if narrow else np.c_[X[40:], X[40:, :1]]
    est = rankkit.SGDRanker(iterations=100)
    with pytest.raises(UsageError) as info:
        est.fit(X[:40], y[:40], qid=q[:40], eval_set=[(X[40:], y[40:]), (Xv, y[40:])], eval_qid=[q[40:], q[40:]])
    fitted = rankkit.SGDRanker(iterations=100).fit(X[:40], y[:40], qid=q[:40])
    assert str(info.value) == _predict_says(fitted, Xv).replace("X has", "eval_set[1] X has").replace(
        "a sparse X may", "a sparse eval_set[1] X may").replace("rankkit predict does", "rankkit train --valid does")
    with pytest.raises(UsageError, match="eval_set.0. X has"):
        fitted.partial_fit(X[:40], y[:40], qid=q[:40], eval_set=[(Xv, y[40:])], eval_qid=[q[40:]])
    rankkit.SGDRanker(iterations=100).fit(X[:40], y[:40], qid=q[:40], eval_set=[(sp.csr_matrix(Xv), y[40:])],
                                          eval_qid=[q[40:]])


# -- (b) evaluate and evaluate_parts break ties the same way ---------------------------------------------
def test_row_number_rank_is_the_lexicographic_rank_of_the_row_numbers():
    from rankkit.evaluation import row_number_rank
    from rankkit.metrics.ties import lexicographic_rank

    for n in (0, 1, 9, 10, 11, 99, 100, 101, 1234):
        assert np.array_equal(row_number_rank(n), lexicographic_rank([str(i) for i in range(1, n + 1)])), n


@pytest.fixture(scope="module")
def tied_parts(tmp_path_factory):
    """The sample's test file without its `# docid` comments, in two parts of whole queries, and
    scores with heavy ties (whole numbers: 7 values for 527 documents)."""
    from tests.test_cli import SAMPLE_TEST

    d = tmp_path_factory.mktemp("parts")
    lines = [ln.split("#")[0].rstrip() + "\n" for ln in SAMPLE_TEST.read_text().splitlines()]
    qids = [ln.split()[1] for ln in lines]
    cut = qids.index(qids[len(qids) // 2])
    (d / "part-1.txt").write_text("".join(lines[:cut]))
    (d / "part-2.txt").write_text("".join(lines[cut:]))
    X, y, q = rankkit.load_svmlight_file(str(SAMPLE_TEST), query_id=True)
    scores = np.round(X @ np.linspace(-1, 1, X.shape[1]))
    assert np.unique(scores).size < 10 and len(scores) == 527
    return [str(d / "part-1.txt"), str(d / "part-2.txt")], y, q, scores


@pytest.mark.parametrize("convention", ["trec", "letor4", "exp"])
def test_evaluate_parts_and_evaluate_break_ties_the_same_way(tied_parts, convention):
    parts, y, q, scores = tied_parts
    metrics = ("ndcg@10", "map", "p@5", "err@10")
    one = rankkit.evaluate(y, scores, qid=q, metrics=metrics, convention=convention)
    assert rankkit.evaluate_parts(parts, scores, metrics=metrics, convention=convention) == one
    (first,) = rankkit.compare(y, [scores], qid=q, metrics=metrics, convention=convention)
    assert first["mean"] == one
    if convention == "trec":  # not file order: trec_eval's docid order, the docid of a row its number
        assert rankkit.evaluate(y, scores, qid=q, metrics=metrics, docids=[str(i + 1) for i in range(len(y))]) == one
        file_order = [f"{len(y) - i:06d}" for i in range(len(y))]  # the old default: the ties matter here
        assert rankkit.evaluate(y, scores, qid=q, metrics=metrics, docids=file_order) != one


def test_evaluate_with_the_files_docids_is_evaluate_parts_on_it():
    from tests.test_cli import SAMPLE_TEST

    X, y, q = rankkit.load_svmlight_file(str(SAMPLE_TEST), query_id=True)
    scores = np.round(X @ np.linspace(-1, 1, X.shape[1]), 1)
    docids = [ln.split("docid = ")[1].strip() for ln in SAMPLE_TEST.read_text().splitlines()]
    assert rankkit.evaluate(y, scores, qid=q, docids=docids) == rankkit.evaluate_parts([str(SAMPLE_TEST)], scores)


# -- (c) a group file among the data files ------------------------------------------------------------------
@pytest.fixture()
def grouped(tmp_path):
    """Two LightGBM-style parts without qids, each with its group file beside it."""
    (tmp_path / "part-1.txt").write_text("1 1:0.5 2:1\n0 1:0.1\n2 2:0.3\n0 1:1\n")
    (tmp_path / "part-1.txt.query").write_text("3\n1\n")
    (tmp_path / "part-11.txt").write_text("1 1:0.2\n0 2:0.7\n")
    (tmp_path / "part-11.txt.query").write_text("2\n")
    return tmp_path


def test_a_glob_that_picks_up_a_group_file_names_it(grouped, monkeypatch):
    from rankkit.io.parts import expand_parts
    from rankkit.errors import DataError

    monkeypatch.chdir(grouped)
    with pytest.raises(DataError) as info:
        expand_parts(["part-*"])
    assert str(info.value) == (f"{grouped / 'part-1.txt.query'}: this is the group file of {grouped / 'part-1.txt'} "
                               "(the sizes of its queries, read with it), not a part: leave it out of the parts (a "
                               "pattern such as part-*.txt rather than part-* does)")
    assert len(expand_parts(["part-*.txt"])) == 2
    with pytest.raises(DataError, match="part-11.txt.query: this is the group file of .*part-11.txt "):
        rankkit.evaluate_parts(["part-11.txt", "part-11.txt.query"], np.zeros(2))
    model = rankkit.RankSVM(C=0.1).fit_parts(["part-*.txt"])
    with pytest.raises(DataError, match="group file of"):
        rankkit.predict_parts(model, "part-*")


def test_a_group_file_given_as_data_is_named(grouped):
    from rankkit.errors import DataError
    from rankkit.io.groups import data_file_of
    from tests.test_cli import assert_one_line_error, rankkit as run

    with pytest.raises(DataError, match="this is the group file of .*part-1.txt .*not a data file: give the data file"):
        rankkit.load_svmlight_file(str(grouped / "part-1.txt.query"))
    assert data_file_of(str(grouped / "part-1.txt")) is None
    (grouped / "lone.query").write_text("1 1:1\n")  # a data file named .query with no data file beside it: data
    assert data_file_of(str(grouped / "lone.query")) is None
    assert rankkit.load_svmlight_file(str(grouped / "lone.query"))[0].shape == (1, 1)
    import gzip

    (grouped / "z.txt.gz").write_bytes(gzip.compress(b"1 1:1\n0 1:0\n"))
    (grouped / "z.txt.query").write_text("2\n")  # beside the compressed data file it belongs to
    assert data_file_of(str(grouped / "z.txt.query")) == str(grouped / "z.txt.gz")
    rankkit.RankSVM(C=0.1).fit_parts([str(grouped / "part-1.txt")]).save(grouped / "m.model")
    assert_one_line_error(run("predict", "part-11.txt.query", "m.model", cwd=grouped),
                          "part-11.txt.query: this is the group file of part-11.txt")
    assert_one_line_error(run("train", "part-*", "m2.model", cwd=grouped), "part-1.txt.query: this is the group file of")
