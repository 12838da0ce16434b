"""TREC runs and qrels (rankkit/io/trec.py): exact format, trec_eval's tie order, errors with
line numbers, and every fast path against a plain-Python reference."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from rankkit.errors import DataError, UsageError
from rankkit.metrics.ties import _RADIX_MIN, _radix_argsort, lexicographic_rank
from rankkit.io.trec import (
    read_qrels,
    read_trec_run,
    run_against_qrels,
    skipped_queries,
    write_trec_run,
)


# -- helpers ------------------------------------------------------------------------------------
def write_text(tmp_path, text, name="f.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


def read_error(tmp_path, text, reader=read_trec_run) -> DataError:
    path = write_text(tmp_path, text)
    with pytest.raises(DataError) as info:
        reader(path)
    err = info.value
    assert "\n" not in str(err)
    assert err.path == path
    return err


def naive_run_lines(qids, docids, scores, qptr, tag="rankkit"):
    """Reference writer: sort each query by (score, docid) descending, as trec_eval does."""
    lines = []
    for q in range(len(qptr) - 1):
        rows = range(qptr[q], qptr[q + 1])
        ranked = sorted(rows, key=lambda r: (scores[r], docids[r]), reverse=True)
        for k, r in enumerate(ranked, start=1):
            lines.append(f"{qids[q]} Q0 {docids[r]} {k} {'%.17g' % scores[r]} {tag}")
    return lines


def naive_rank(strings):
    rank = {s: i for i, s in enumerate(sorted(set(strings)))}
    return [rank[s] for s in strings]


# -- writing ------------------------------------------------------------------------------------
def test_exact_line_format(tmp_path):
    path = str(tmp_path / "run.txt")
    write_trec_run(path, [301, "q2"], ["d1", "d2", "d3", "x"], np.array([0.5, 2.0, -1 / 3, 0.1]), np.array([0, 3, 4]))
    assert (tmp_path / "run.txt").read_text() == (
        "301 Q0 d2 1 2 rankkit\n"
        "301 Q0 d1 2 0.5 rankkit\n"
        "301 Q0 d3 3 -0.33333333333333331 rankkit\n"
        "q2 Q0 x 1 0.10000000000000001 rankkit\n"
    )


def test_ties_by_docid_descending(tmp_path):
    path = str(tmp_path / "run.txt")
    docids = ["b", "a", "ab", "c", "é", "aa", "abcdefghij", "abcdefghi"]
    scores = np.array([1.0, 1.0, 1.0, 0.0, 1.0, 2.0, 1.0, 1.0])
    write_trec_run(path, ["7"], docids, scores, np.array([0, 8]), tag="sys")
    lines = (tmp_path / "run.txt").read_text().splitlines()
    assert [ln.split()[2] for ln in lines] == ["aa", "é", "b", "abcdefghij", "abcdefghi", "ab", "a", "c"]
    assert [int(ln.split()[3]) for ln in lines] == list(range(1, 9))
    assert lines == naive_run_lines(["7"], docids, scores, [0, 8], "sys")


def test_write_matches_reference_on_random_ties(tmp_path):
    rng = np.random.default_rng(0)
    sizes = [1, 2, 7, 30, 12, 5, 1, 25, 9]
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    docids = [f"doc{rng.integers(0, 10**6)}-{i}" for i in range(n)]
    scores = rng.integers(0, 4, n) / 4.0  # many exact ties
    qids = [f"q{q}" for q in range(len(sizes))]
    path = str(tmp_path / "run.txt")
    write_trec_run(path, qids, docids, scores, qptr)
    assert (tmp_path / "run.txt").read_text().splitlines() == naive_run_lines(qids, docids, scores, qptr)


def test_qids_per_row_or_per_query(tmp_path):
    qptr = np.array([0, 2, 3])
    docids, scores = ["a", "b", "c"], np.array([1.0, 2.0, 3.0])
    write_trec_run(str(tmp_path / "per_query"), np.array([11, 12]), docids, scores, qptr)
    write_trec_run(str(tmp_path / "per_row"), np.array([11, 11, 12]), docids, scores, qptr)
    assert (tmp_path / "per_query").read_text() == (tmp_path / "per_row").read_text()
    assert (tmp_path / "per_row").read_text().splitlines()[2].startswith("12 Q0 c 1 ")
    with pytest.raises(UsageError):
        write_trec_run(str(tmp_path / "bad"), [1, 2, 3, 4], docids, scores, qptr)


def test_write_to_stdout(capsys):
    write_trec_run("-", [1], ["d"], np.array([0.25]), np.array([0, 1]))
    assert capsys.readouterr().out == "1 Q0 d 1 0.25 rankkit\n"


@pytest.mark.parametrize("docid", ["a b", "", "x\ty", "x\ny"])
def test_write_rejects_docids_that_are_not_one_word(tmp_path, docid):
    with pytest.raises(UsageError):
        write_trec_run(str(tmp_path / "r"), [1], ["ok", docid], np.array([1.0, 2.0]), np.array([0, 2]))
    assert not (tmp_path / "r").exists()


def test_write_rejects_nonfinite_scores_and_bad_tags(tmp_path):
    with pytest.raises(UsageError):
        write_trec_run(str(tmp_path / "r"), [1], ["a", "b"], np.array([1.0, np.nan]), np.array([0, 2]))
    with pytest.raises(UsageError):
        write_trec_run(str(tmp_path / "r"), [1], ["a"], np.array([1.0]), np.array([0, 1]), tag="my run")


# -- reading runs -------------------------------------------------------------------------------
def test_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    sizes = [3, 1, 50, 8]
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    docids = [f"D{i:05d}" for i in rng.permutation(n)]
    scores = rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, n)  # 17-digit literals, any exponent
    scores[:5] = [0.0, -0.0, 1.0, 0.5, 5e-324]
    path = str(tmp_path / "run.txt")
    write_trec_run(path, ["a", "b", "c", "d"], docids, scores, qptr)
    qids, got_docids, got_scores = read_trec_run(path)
    assert got_scores.dtype == np.float64
    expected = [ln.split() for ln in naive_run_lines(["a", "b", "c", "d"], docids, scores, qptr)]
    assert qids == [f[0] for f in expected]
    assert got_docids == [f[2] for f in expected]
    by_doc = dict(zip(docids, scores.tolist()))
    assert [v.hex() for v in got_scores.tolist()] == [by_doc[d].hex() for d in got_docids]  # bit exact


def test_read_keeps_file_order_and_ignores_rank_and_tag(tmp_path):
    text = "q1 Q0 b 5 1.0 x\nq1 Q0 a 9 2.5 y\nq2 Q0 b 1 3 z\n"
    qids, docids, scores = read_trec_run(write_text(tmp_path, text))
    assert qids == ["q1", "q1", "q2"]
    assert docids == ["b", "a", "b"]  # the same docid in two queries is fine
    assert scores.tolist() == [1.0, 2.5, 3.0]


def test_read_tolerates_blank_lines_crlf_tabs_and_no_final_newline(tmp_path):
    text = "\n  \nq1\tQ0  a 1 1.5 t\r\n\r\nq1 Q0 b 2 -2 t"
    qids, docids, scores = read_trec_run(write_text(tmp_path, text))
    assert (qids, docids, scores.tolist()) == (["q1", "q1"], ["a", "b"], [1.5, -2.0])


def test_scattered_queries_are_gathered_stably(tmp_path):
    text = "2 Q0 a 1 1 t\n1 Q0 b 1 1 t\n2 Q0 c 2 0 t\n1 Q0 d 2 0 t\n3 Q0 e 1 1 t\n2 Q0 f 3 0 t\n"
    qids, docids, _ = read_trec_run(write_text(tmp_path, text))
    assert qids == ["2", "2", "2", "1", "1", "3"]
    assert docids == ["a", "c", "f", "b", "d", "e"]


def test_read_gzip(tmp_path):
    path = tmp_path / "run.txt.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"q Q0 d 1 0.125 t\n")
    assert read_trec_run(str(path)) == (["q"], ["d"], pytest.approx(np.array([0.125])))


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("q Q0 a 1 1 t\nq Q0 b 2 1\n", 2, "expected 6 fields (qid Q0 docid rank score tag), found 5: 'q Q0 b 2 1'"),
        ("q Q0 a 1 1 t\n\nq Q0 b 2 1 t extra\n", 3, "expected 6 fields (qid Q0 docid rank score tag), found 7"),
        ("q Q0 a 1 1 t\nq Q0 b 2 high t\n", 2, "score 'high' is not a number"),
        ("q Q0 a 1 1.5.2 t\n", 1, "score '1.5.2' is not a number"),
        ("q Q0 a 1 nan t\n", 1, "score 'nan' is not finite"),
        ("q Q0 a 1 -inf t\n", 1, "score '-inf' is not finite"),
        ("q Q0 a 1 1 t\nq Q0 b 2 1e999 t\n", 2, "score '1e999' is not finite (overflows a double)"),
        ("q Q0 a 1 1 t\nr Q0 a 1 1 t\nq Q0 b 2 1 t\nq Q0 a 3 0.5 t\n", 4, "document 'a' appears twice for query 'q' (first at line 1)"),
    ],
)
def test_bad_run_lines(tmp_path, text, line, message):
    err = read_error(tmp_path, text)
    assert err.line == line
    assert err.message.startswith(message)


def test_first_duplicate_in_file_order(tmp_path):
    text = "q Q0 x 1 1 t\nr Q0 y 1 1 t\nr Q0 y 2 1 t\nq Q0 x 2 1 t\n"
    err = read_error(tmp_path, text)
    assert (err.line, err.message) == (3, "document 'y' appears twice for query 'r' (first at line 2)")


@pytest.mark.parametrize("text, message", [("", "is empty"), ("\n \n", "has no data lines (only blank lines)")])
def test_empty_run(tmp_path, text, message):
    err = read_error(tmp_path, text)
    assert (err.line, err.message) == (None, message)


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_trec_run(str(tmp_path / "nope"))


# -- qrels --------------------------------------------------------------------------------------
def test_read_qrels(tmp_path):
    text = "301 0 d1 1\n301 0 d2 0\n302 Q0 d1 2\n301 0 d3 -2\n302 0 d9 0.5\n"
    assert read_qrels(write_text(tmp_path, text)) == {
        "301": {"d1": 1.0, "d2": 0.0, "d3": -2.0},
        "302": {"d1": 2.0, "d9": 0.5},
    }


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("1 0 a 1\n1 0 b\n", 2, "expected 4 fields (qid iter docid rel), found 3"),
        ("1 0 a 1\n1 0 b 1 extra\n", 2, "expected 4 fields (qid iter docid rel), found 5"),
        ("1 0 a yes\n", 1, "relevance 'yes' is not a number"),
        ("1 0 a inf\n", 1, "relevance 'inf' is not finite"),
        ("1 0 a 1\n2 0 a 1\n1 0 a 0\n", 3, "document 'a' appears twice for query '1' (first at line 1)"),
    ],
)
def test_bad_qrels_lines(tmp_path, text, line, message):
    err = read_error(tmp_path, text, read_qrels)
    assert err.line == line
    assert err.message.startswith(message)


# -- runs against qrels -------------------------------------------------------------------------
def test_run_against_qrels_small_example():
    run = (
        ["q2", "q2", "q2", "q9", "q1", "q1"],
        ["b", "a", "zz", "a", "c", "d"],
        np.array([3.0, 1.0, 1.0, 5.0, 0.5, 0.25]),
    )
    qrels = {"q1": {"d": 1.0, "e": 2.0, "c": 0.0}, "q2": {"a": 2.0, "x": 1.0}, "q3": {"a": 1.0}}
    res = run_against_qrels(run, qrels)
    labels, scores, qptr, tiebreak, (jptr, jlabels), query_ids = res
    assert query_ids == ["q2", "q1"]  # run order; q9 has no judgements, q3 was not run
    assert qptr.tolist() == [0, 3, 5]
    assert labels.tolist() == [0.0, 2.0, 0.0, 0.0, 1.0]  # unjudged b and zz get 0
    assert scores.tolist() == [3.0, 1.0, 1.0, 0.5, 0.25]
    assert tiebreak.tolist() == naive_rank(["b", "a", "zz", "c", "d"])
    assert tiebreak[2] > tiebreak[1]  # tied at 1.0: zz ranks before a, as in trec_eval
    assert jptr.tolist() == [0, 2, 5]
    assert jlabels.tolist() == [2.0, 1.0, 2.0, 1.0, 0.0]  # the unretrieved x and e are included
    assert (labels.dtype, scores.dtype, qptr.dtype, tiebreak.dtype, jptr.dtype, jlabels.dtype) == (
        np.float64, np.float64, np.int64, np.int64, np.int64, np.float64,
    )
    assert skipped_queries(run, qrels) == ["q9"]


def test_run_against_qrels_gathers_scattered_queries():
    run = (["a", "b", "a"], ["x", "y", "z"], np.array([1.0, 2.0, 3.0]))
    qrels = {"a": {"z": 1.0}, "b": {"y": 3.0}}
    res = run_against_qrels(run, qrels)
    assert res.query_ids == ["a", "b"]
    assert res.qptr.tolist() == [0, 2, 3]
    assert res.labels.tolist() == [0.0, 1.0, 3.0]
    assert res.scores.tolist() == [1.0, 3.0, 2.0]


def test_run_against_qrels_from_files(tmp_path):
    run = read_trec_run(write_text(tmp_path, "1 Q0 a 1 2 t\n1 Q0 b 2 1 t\n2 Q0 a 1 1 t\n", "run"))
    qrels = read_qrels(write_text(tmp_path, "1 0 b 1\n1 0 c 1\n", "qrels"))
    res = run_against_qrels(run, qrels)
    assert res.query_ids == ["1"]
    assert res.labels.tolist() == [0.0, 1.0]
    assert res.judged[0].tolist() == [0, 2]
    assert skipped_queries(run, qrels) == ["2"]


def test_run_against_qrels_rejects_duplicates_and_bad_lengths():
    with pytest.raises(UsageError, match="'a' twice for query 'q'"):
        run_against_qrels((["q", "q"], ["a", "a"], np.array([1.0, 2.0])), {"q": {}})
    with pytest.raises(UsageError):
        run_against_qrels((["q"], ["a", "b"], np.array([1.0])), {"q": {}})


def test_run_against_qrels_empty():
    res = run_against_qrels((["q"], ["a"], np.array([1.0])), {})
    assert res.labels.shape == (0,) and res.qptr.tolist() == [0] and res.query_ids == []
    assert res.judged[0].tolist() == [0] and res.judged[1].shape == (0,)


# -- lexicographic ranks ------------------------------------------------------------------------
def test_lexicographic_rank_awkward_strings():
    strings = ["b", "a", "ab", "a\x00", "a\x00\x00", "abcdefghij", "abcdefghi", "abcdefghij", "é", "z",
               "abcdefgh", "abcdefgh\x00", "ÿ", "\U0001f600", "b"]
    assert lexicographic_rank(strings).tolist() == naive_rank(strings)
    assert lexicographic_rank([]).shape == (0,)


def test_lexicographic_rank_large_uses_radix_and_matches_reference():
    rng = np.random.default_rng(2)
    n = _RADIX_MIN * 3
    # shared prefixes longer than one word, mixed lengths, many repeats
    strings = [f"clueweb09-en{rng.integers(0, 3000):04d}-{rng.integers(0, 30):02d}" + "x" * int(rng.integers(0, 3)) for _ in range(n)]
    assert lexicographic_rank(strings).tolist() == naive_rank(strings)


def test_radix_argsort_is_a_stable_argsort():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**64 - 1, 5000, dtype=np.uint64, endpoint=True)
    keys[::3] = keys[0]  # repeats
    keys[1::7] &= np.uint64(0xFFFF)  # digits shared by many keys
    assert np.array_equal(_radix_argsort(keys), np.argsort(keys, kind="stable"))
