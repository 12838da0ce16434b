"""`rankkit eval` and `rankkit predict --format` end to end (issue 3), through the real CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankkit import config
from tests.test_cli import SAMPLE_TEST, SAMPLE_TRAIN, rankkit


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two models' scores, TREC runs of both, and qrels made from the sample's labels and docids."""
    d = tmp_path_factory.mktemp("evalcli")
    for name, C in (("a", "0.01"), ("b", "10")):
        assert rankkit("train", SAMPLE_TRAIN, f"{name}.model", "-C", C, cwd=d).returncode == 0
        assert rankkit("predict", SAMPLE_TEST, f"{name}.model", f"{name}.scores", cwd=d).returncode == 0
        proc = rankkit("predict", SAMPLE_TEST, f"{name}.model", f"{name}.run", "--format", "trec", "--tag", name, cwd=d)
        assert proc.returncode == 0, proc.stderr.decode()
    qrels = []
    for line in SAMPLE_TEST.read_text().splitlines():
        label, qid = line.split()[:2]
        docid = line.split("docid = ")[1].split()[0]
        qrels.append(f"{qid.split(':')[1]} 0 {docid} {label}")
    (d / "test.qrels").write_text("\n".join(qrels) + "\n")
    return d


def _json(proc):
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


def test_cli_choices_match_the_registries():
    from rankkit import metrics, stats

    assert set(config.CONVENTION_NAMES) == set(metrics.CONVENTIONS)
    assert set(config.SIGNIFICANCE_TESTS) == set(stats.TESTS)
    assert tuple(config.EMPTY_QUERY_CHOICES) == tuple(metrics.EMPTY_QUERY_CHOICES)


def test_trec_run_format(runs):
    lines = (runs / "a.run").read_text().splitlines()
    n_docs = len(SAMPLE_TEST.read_text().splitlines())
    assert len(lines) == n_docs
    fields = [ln.split() for ln in lines]
    assert all(len(f) == 6 and f[1] == "Q0" and f[5] == "a" for f in fields)
    by_query = {}
    for qid, _, docid, rank, score, _ in fields:
        by_query.setdefault(qid, []).append((int(rank), float(score), docid))
    for rows in by_query.values():
        assert [r for r, _, _ in rows] == list(range(1, len(rows) + 1))
        scores = [s for _, s, _ in rows]
        assert scores == sorted(scores, reverse=True)
    assert all(f[2].startswith("D") for f in fields)  # docids from the `# docid = ...` comments


def test_ranked_format(runs):
    proc = rankkit("predict", SAMPLE_TEST, "a.model", "--format", "ranked", cwd=runs)
    assert proc.returncode == 0
    lines = proc.stdout.decode().splitlines()
    assert lines[0].split("\t") == ["qid", "rank", "docid", "score", "label"]
    rows = [ln.split("\t") for ln in lines[1:]]
    assert len(rows) == len(SAMPLE_TEST.read_text().splitlines())
    assert {r[4] for r in rows} <= {"0", "1", "2"}


def test_trec_run_against_qrels_equals_data_and_scores(runs):
    """The same ranking evaluated from DATA + SCORES and from a TREC run + qrels gives the same numbers."""
    metrics = ["ndcg@10", "map", "p@5", "mrr", "err@10"]
    args = [a for m in metrics for a in ("-m", m)]
    for convention in ("trec", "exp", "letor4"):
        direct = _json(rankkit("eval", SAMPLE_TEST, "a.scores", "--convention", convention, "--format", "json", *args, cwd=runs))
        via_run = _json(rankkit("eval", "--qrels", "test.qrels", "a.run", "--convention", convention, "--format", "json", *args, cwd=runs))
        for m in metrics:
            assert via_run[m] == pytest.approx(direct[m], abs=1e-12), (convention, m)


def test_two_systems_side_by_side_with_p_values(runs):
    out = _json(rankkit("eval", SAMPLE_TEST, "a.scores", "b.scores", "a.scores", "--format", "json", cwd=runs))
    assert out["convention"] == "trec"  # the default: trec_eval's
    first, second, third = out["systems"]
    assert [s["name"] for s in out["systems"]] == ["a.scores", "b.scores", "a.scores"]
    assert "p_value" not in first and set(second["p_value"]) == set(second["mean"])
    assert set(third["p_value"].values()) == {1.0}  # the first file against itself: randomization p = 1
    assert third["mean"] == first["mean"]
    t = _json(rankkit("eval", SAMPLE_TEST, "a.scores", "b.scores", "--test", "t", "--format", "json", cwd=runs))
    assert all(0.0 <= v <= 1.0 for v in t["systems"][1]["p_value"].values())
    table = rankkit("eval", SAMPLE_TEST, "a.scores", "b.scores", cwd=runs).stdout.decode()
    assert "p(b.scores)" in table and "randomization" in table


def test_per_query_json(runs):
    out = _json(rankkit("eval", SAMPLE_TEST, "a.scores", "--per-query", "--format", "json", "-m", "map", cwd=runs))
    (system,) = out["systems"]
    assert len(system["per_query"]["qid"]) == len(system["per_query"]["map"]) == 70
    assert system["mean"]["map"] == pytest.approx(np.mean(system["per_query"]["map"]), abs=1e-12)


def test_per_query_rows_average_to_the_summary(runs):
    proc = rankkit("eval", SAMPLE_TEST, "a.scores", "--per-query", "--format", "tsv", "-m", "ndcg@5", "-m", "map", cwd=runs)
    assert proc.returncode == 0
    rows = [ln.split("\t") for ln in proc.stdout.decode().splitlines() if not ln.startswith("#")]
    assert rows[0] == ["qid", "metric", "a.scores"]
    for m in ("ndcg@5", "map"):
        per_q = [float(r[2]) for r in rows[1:] if r[1] == m and r[0] != "all"]
        (summary,) = [float(r[2]) for r in rows[1:] if r[1] == m and r[0] == "all"]
        assert len(per_q) == 70 and summary == pytest.approx(np.mean(per_q), abs=1e-12)


def test_empty_query_skip_changes_the_mean(runs):
    zero = _json(rankkit("eval", SAMPLE_TEST, "a.scores", "--format", "json", "-m", "map", cwd=runs))
    skip = _json(rankkit("eval", SAMPLE_TEST, "a.scores", "--format", "json", "-m", "map", "--empty-query", "skip", cwd=runs))
    assert skip["map"] > zero["map"]  # the sample's test file has queries without relevant documents


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["eval", str(SAMPLE_TEST)], "at least one SCORES"),
        (["eval", str(SAMPLE_TEST), "a.scores", "-m", "ndcg@x"], "unknown metric"),
        (["eval", str(SAMPLE_TEST), "a.scores", "--convention", "nope"], "nope"),
        (["eval", "--qrels", "missing.qrels", "a.run"], "missing.qrels"),
    ],
)
def test_eval_usage_errors(runs, args, fragment):
    proc = rankkit(*args, cwd=runs)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and fragment in err and "Traceback" not in err


def _write_runs(d):
    """qrels for queries q1..q3; run r1 lists them 1, 2, 3 and r2 lists the same rankings 3, 2, 1;
    r3 covers only q1 and q2. Per query AP: q1 = 1, q2 = 1/2, q3 = 1/3."""
    (d / "qrels").write_text(
        "q1 0 a 1\nq1 0 b 0\nq2 0 c 0\nq2 0 d 1\nq3 0 e 0\nq3 0 f 0\nq3 0 g 1\nq9 0 z 1\n"
    )
    blocks = {
        "q1": "q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\n",
        "q2": "q2 Q0 c 1 3 t\nq2 Q0 d 2 2 t\n",
        "q3": "q3 Q0 e 1 3 t\nq3 Q0 f 2 2 t\nq3 Q0 g 3 1 t\n",
    }
    (d / "r1").write_text(blocks["q1"] + blocks["q2"] + blocks["q3"])
    (d / "r2").write_text(blocks["q3"] + blocks["q2"] + blocks["q1"])
    (d / "r3").write_text(blocks["q1"] + blocks["q2"])
    (d / "other").write_text("x1 Q0 a 1 3 t\n")


def test_runs_are_paired_by_query_id_not_position(tmp_path):
    _write_runs(tmp_path)
    out = _json(rankkit("eval", "--qrels", "qrels", "r1", "r2", "--format", "json", "-m", "map", cwd=tmp_path))
    r1, r2 = out["systems"]
    assert r1["mean"]["map"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert r2["mean"]["map"] == r1["mean"]["map"]
    assert r2["p_value"]["map"] == 1.0  # identical per query once matched by id (by position they differ)
    t = _json(rankkit("eval", "--qrels", "qrels", "r1", "r2", "--test", "t", "--format", "json", "-m", "map", cwd=tmp_path))
    assert t["systems"][1]["p_value"]["map"] == 1.0


def test_runs_over_different_queries_are_reported(tmp_path):
    _write_runs(tmp_path)
    table = rankkit("eval", "--qrels", "qrels", "r1", "r3", "-m", "map", "--per-query", cwd=tmp_path)
    assert table.returncode == 0, table.stderr.decode()
    text = table.stdout.decode()
    assert "cover different queries" in text and "2 in common" in text
    rows = [ln.split() for ln in text.splitlines() if not ln.startswith("#")]
    assert {r[0] for r in rows[1:]} == {"q1", "q2", "q3", "all"}  # the union of the runs' queries
    (q3,) = [r for r in rows if r[0] == "q3"]
    assert q3[2:] == ["0.333333", "nan"]  # r3 has no q3
    out = _json(rankkit("eval", "--qrels", "qrels", "r1", "r3", "--format", "json", "-m", "map", cwd=tmp_path))
    assert out["systems"][1]["mean"]["map"] == pytest.approx(0.75)  # over r3's own queries


def test_json_is_strict_without_nan(tmp_path):
    _write_runs(tmp_path)
    (tmp_path / "none").write_text("q3 Q0 e 1 3 t\n")  # q3 retrieved without its relevant document
    proc = rankkit("eval", "--qrels", "qrels", "none", "none", "--format", "json", "-m", "auc",
                   "--test", "t", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()

    def reject(token):
        raise AssertionError(f"non-standard JSON token {token}")

    out = json.loads(proc.stdout, parse_constant=reject)
    assert out["systems"][0]["mean"]["auc"] is None and out["systems"][1]["p_value"]["auc"] is None


def test_qrels_judging_none_of_the_run_is_an_error(tmp_path):
    _write_runs(tmp_path)
    proc = rankkit("eval", "--qrels", "qrels", "other", cwd=tmp_path)
    assert proc.returncode == 2 and "judges none of the queries of other" in proc.stderr.decode()


def test_tsv_is_plain_and_seed_must_be_non_negative(runs):
    tsv = rankkit("eval", SAMPLE_TEST, "a.scores", "b.scores", "--format", "tsv", cwd=runs).stdout.decode()
    lines = tsv.splitlines()
    assert lines[0].split("\t") == ["qid", "metric", "a.scores", "b.scores", "p(b.scores)"]
    assert not any(ln.startswith("#") for ln in lines)
    bad = rankkit("eval", SAMPLE_TEST, "a.scores", "--seed", "-1", cwd=runs)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr.decode()


def test_labels_of_1024_and_more(tmp_path):
    """2^label - 1 overflows a double from label 1024: exp refuses with file, line and label;
    trec (gain = label) computes, ERR included (it used 2^label and 2^g_max: OverflowError, exit 1)."""
    (tmp_path / "d.txt").write_text("0 qid:1 1:1\n1024 qid:1 1:2\n3 qid:1 1:3\n")
    (tmp_path / "s").write_text("3\n1\n2\n")  # ranked: labels 0, 3, 1024
    from tests.test_cli import assert_one_line_error

    proc = rankkit("eval", "--convention", "exp", "d.txt", "s", cwd=tmp_path)
    assert_one_line_error(proc, "d.txt:2: label '1024' is too large for the gain 2^label - 1")
    proc = rankkit("eval", "--convention", "trec", "-m", "ndcg@3", "-m", "map", "-m", "err@3", "--format", "json",
                   "d.txt", "s", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = _json(proc)
    assert got["ndcg@3"] == pytest.approx((3 / np.log2(3) + 1024 / 2) / (1024 + 3 / np.log2(3)), abs=1e-12)
    assert got["map"] == pytest.approx((1 / 2 + 2 / 3) / 2, abs=1e-12)
    assert got["err@3"] == pytest.approx(1 / 3, abs=1e-12)  # R = 1 - 2^-1024 for label 1024 = g_max
    (tmp_path / "q").write_text("1 0 a 2000\n1 0 b 0\n")
    (tmp_path / "r").write_text("1 Q0 a 1 2 t\n1 Q0 b 2 1 t\n")
    proc = rankkit("eval", "--convention", "exp", "--qrels", "q", "r", cwd=tmp_path)
    assert_one_line_error(proc, "q: label '2000' is too large")


def test_verbose_reports_on_stderr_and_leaves_stdout_alone(runs):
    """-v (issue 13): files read, queries, documents and times on stderr; stdout byte for byte the same."""
    for args in ([SAMPLE_TEST, "a.scores", "b.scores", "--permutations", "200"],
                 ["--qrels", "test.qrels", "a.run", "--convention", "trec", "-m", "ndcg", "-m", "map"]):
        quiet = rankkit("eval", *args, cwd=runs)
        loud = rankkit("eval", "-v", *args, cwd=runs)
        assert quiet.returncode == loud.returncode == 0, loud.stderr.decode()
        assert loud.stdout == quiet.stdout and quiet.stderr == b""
        err = loud.stderr.decode()
        n_docs = len(SAMPLE_TEST.read_text().splitlines())
        assert f"{n_docs} " in err and " queries" in err and " s)" in err and "eval done in " in err
        if "--qrels" in args:
            assert "read qrels test.qrels" in err and f"read run a.run: {n_docs} lines" in err
        else:
            assert "read b.scores" in err and "randomization tests of 1 system(s)" in err


def test_a_label_the_convention_cannot_grade(tmp_path):
    """letor4 grades labels 0, 1, 2: a label 4 is an error naming file, line and label when the
    convention was not asked for by name, and one warning (naming the line) when it was. The
    default, trec, grades every label."""
    from rankkit.app.evaluate import evaluate
    from rankkit.errors import DataError

    (tmp_path / "d.txt").write_text("2 qid:1 1:1\n0 qid:1 1:0.5\n4 qid:2 1:1\n1 qid:2 1:0\n")
    (tmp_path / "s").write_text("1\n2\n3\n4\n")
    proc = rankkit("eval", "d.txt", "s", "--convention", "letor4", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 0 and err.count("\n") == 1, err
    assert "d.txt:3: label '4' cannot be graded by --convention letor4" in err
    proc = rankkit("eval", "d.txt", "s", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == b"" and b"convention trec" in proc.stdout
    with pytest.raises(DataError, match=r"d.txt:3: label '4' cannot be graded by --convention letor4"):
        evaluate([str(tmp_path / "d.txt"), str(tmp_path / "s")], convention="letor4", convention_named=False,
                 echo=lambda _: None)
