"""`--convention trec` against trec_eval's own code: the pytrec_eval binding (PyPI
pytrec-eval-terrier, a test dependency), which compiles trec_eval's measure files (m_ndcg_cut.c,
m_ndcg.c, m_map.c, m_map_cut.c, m_P.c, m_recip_rank.c) and its run/qrels handling (form_res_rels.c:
ties by docid descending, unjudged documents non-relevant, ideal DCG from every judged document).

Per query, to 1e-12, on
- random data: ties in scores and labels, labels 0-2, 0-4 and negative, queries without relevant
  documents, one-document queries (in-process: rankkit.metrics with the docid tiebreak);
- TREC run + qrels files through `rankkit eval --qrels` (unjudged retrieved documents, judged
  documents not retrieved, queries only in the run or only in the qrels);
- MQ2008 Fold1 test (../shared/data, skipped when absent) with random tie-free scores and with the
  scores of a least-squares model fitted on Fold1 train, in-process and through `rankkit eval`.

One exact difference, tested below: pytrec_eval-terrier 0.5.11 stores run scores as 32-bit floats
(two scores equal in float32 tie and are ordered by docid); rankkit ranks by the double, as
current trec_eval does. The comparisons therefore use scores that are exact in float32.

The other tools the README's table names, each against its own code or output:
- ir_measures (a test dependency; its default provider is pytrec_eval): the trec convention;
- ranx (optional, the `bench` extra; skipped when absent): the trec convention without score ties;
- LightGBM, RankLib, the LETOR 4.0 script: fixtures of their own output (tests/fixtures/*/README.md
  says how each was made) against exp, exp --empty-query 0, and letor4.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from rankkit import metrics as M
from rankkit.metrics.ties import lexicographic_rank
from tests.test_cli import rankkit

TOL = 1e-12
CUTS = (1, 3, 5, 10, 20)
# trec_eval measure -> rankkit metric
MEASURES = {
    **{f"ndcg_cut_{k}": f"ndcg@{k}" for k in CUTS},
    "ndcg": "ndcg",
    "map": "map",
    **{f"map_cut_{k}": f"map@{k}" for k in CUTS},
    **{f"P_{k}": f"p@{k}" for k in CUTS},
    "recip_rank": "mrr",
}
TREC_EVAL_MEASURES = {
    "ndcg_cut." + ",".join(map(str, CUTS)),
    "ndcg",
    "map",
    "map_cut." + ",".join(map(str, CUTS)),
    "P." + ",".join(map(str, CUTS)),
    "recip_rank",
}
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MQ2008 = SHARED_DATA / "MQ2008" / "Fold1"
# trec_eval 9.0a3's discount (rank r divided by log2 r, rank 1 undiscounted): what rankkit's trec
# convention used to compute. The tests check that pytrec_eval tells it apart.
OLD_TREC = dataclasses.replace(M.CONVENTIONS["trec"], name="trec-9.0a3", discount_mode=M.DISCOUNT_LETOR4)


def pytrec(qids, docids, labels, scores, qptr):
    """{qid: {measure: value}} from pytrec_eval; every document judged with its (integer) label."""
    qrels, run = {}, {}
    for q, qid in enumerate(qids):
        rows = range(qptr[q], qptr[q + 1])
        qrels[qid] = {docids[r]: int(labels[r]) for r in rows}
        run[qid] = {docids[r]: float(scores[r]) for r in rows}
        assert len(run[qid]) == len(rows), "docids must be unique within a query"
    return evaluate_with_pytrec(qrels, run)


_calls = [0]


def evaluate_with_pytrec(qrels, run):
    """pytrec_eval's per-query measures. Query ids get a prefix new to each call: the binding keeps
    trec_eval's per-query cache (form_res_rels.c) keyed by query id across evaluators, and a query
    id seen by an earlier evaluator crashed it (segmentation fault) in this suite."""
    _calls[0] += 1
    tag = f"{_calls[0]}:"
    got = pytrec_eval.RelevanceEvaluator({tag + q: v for q, v in qrels.items()}, TREC_EVAL_MEASURES).evaluate(
        {tag + q: v for q, v in run.items()})
    return {q[len(tag):]: v for q, v in got.items()}


def rankkit_trec(docids, labels, scores, qptr, convention="trec"):
    """{rankkit metric: float64[Q]} under the trec convention, ties by docid descending."""
    return M.per_query_table(list(MEASURES.values()), labels, scores, qptr, convention,
                             tiebreak=lexicographic_rank(docids))


def differing_queries(qids, expected, got, measure) -> list[str]:
    metric = MEASURES[measure]
    return [qid for q, qid in enumerate(qids) if not abs(expected[qid][measure] - got[metric][q]) <= TOL]


def assert_agree(qids, docids, labels, scores, qptr):
    """Every measure of every query equal to 1e-12; returns pytrec_eval's result."""
    expected = pytrec(qids, docids, labels, scores, qptr)
    assert sorted(expected) == sorted(qids)  # every judged query evaluated, none skipped
    got = rankkit_trec(docids, labels, scores, qptr)
    for measure in MEASURES:
        bad = differing_queries(qids, expected, got, measure)
        assert not bad, (measure, len(bad), [(q, expected[q][measure]) for q in bad[:3]])
    return expected


def random_queries(seed, n_queries, labels_from, max_size=40, tied_scores=True):
    """Random queries: sizes 1..max_size, labels drawn from labels_from (a quarter of the queries
    without a label >= 1), docids whose byte order differs from their numeric order (d10 < d9)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, n_queries)
    sizes[:3] = 1  # one-document queries
    qptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(qptr[-1])
    labels = rng.choice(np.asarray(labels_from, dtype=np.float64), n)
    for q in range(n_queries):
        if q % 4 == 1:  # nothing relevant: only labels <= 0
            s = slice(qptr[q], qptr[q + 1])
            labels[s] = np.minimum(labels[s], 0.0)
    for q in range(n_queries):
        # A query whose judgements are all negative is undefined in trec_eval: form_res_rels.c then
        # leaves num_rel_levels as the previous query set it and m_ndcg*.c read rel_levels past
        # its end (pytrec_eval crashed or returned garbage). rankkit scores such a query 0, as
        # any query without relevant documents; it is not compared here.
        if labels[qptr[q]:qptr[q + 1]].max() < 0:
            labels[qptr[q]] = 0.0
    if tied_scores:
        scores = rng.integers(-4, 5, n) / 4.0  # nine values: many exact ties, exact in float32
    else:
        scores = np.empty(n)
        for q in range(n_queries):
            m = qptr[q + 1] - qptr[q]
            scores[qptr[q]:qptr[q + 1]] = (rng.permutation(m) - m / 2) / 64.0
    docids = []
    for q in range(n_queries):
        m = int(qptr[q + 1] - qptr[q])
        docids += [f"d{i}" for i in rng.choice(10 * m + 10, m, replace=False)]
    qids = [f"q{q}" for q in range(n_queries)]
    return qids, docids, labels, scores, qptr


# -- random data ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "labels_from",
    [(0, 1, 2), (0, 0, 0, 1, 2, 3, 4), (-2, -1, 0, 1, 2), (0, 1)],
    ids=["0-2", "0-4", "negative", "binary"],
)
@pytest.mark.parametrize("tied_scores", [True, False], ids=["ties", "no-ties"])
def test_random_queries_agree_with_trec_eval(labels_from, tied_scores):
    qids, docids, labels, scores, qptr = random_queries(len(labels_from) * 7 + tied_scores, 150, labels_from,
                                                         tied_scores=tied_scores)
    expected = assert_agree(qids, docids, labels, scores, qptr)
    # the data exercise what they claim to: queries without relevant documents (trec_eval: 0,
    # averaged in), score ties decided by docid, and cutoffs beyond a query's length
    assert any(expected[q]["map"] == 0.0 and expected[q]["ndcg"] == 0.0 for q in qids)
    if tied_scores:
        in_file_order = M.per_query_table(["ndcg@5", "map"], labels, scores, qptr, "trec")
        assert not np.allclose(in_file_order["ndcg@5"], [expected[q]["ndcg_cut_5"] for q in qids], atol=TOL, rtol=0)


def test_the_old_discount_is_told_apart():
    """trec_eval 9.0a3's discount differs from pytrec_eval's on most queries with two or more
    relevant grades (and so must fail this file's tests)."""
    qids, docids, labels, scores, qptr = random_queries(3, 150, (0, 1, 2), tied_scores=False)
    expected = pytrec(qids, docids, labels, scores, qptr)
    old = rankkit_trec(docids, labels, scores, qptr, OLD_TREC)
    assert len(differing_queries(qids, expected, old, "ndcg_cut_10")) > 50
    assert len(differing_queries(qids, expected, old, "ndcg")) > 50
    assert not differing_queries(qids, expected, old, "map")  # the discount touches only NDCG


def test_pytrec_eval_keeps_32_bit_scores_and_rankkit_ranks_by_the_double():
    """pytrec-eval-terrier 0.5.11 ties scores that are equal in float32 (then docid descending
    decides); rankkit keeps doubles, as trec_eval 10.0 does. Rounding rankkit's scores to float32
    reproduces pytrec_eval exactly: the difference is that rounding and nothing else."""
    docids = ["a", "b"]
    labels = np.array([1.0, 0.0])
    scores = np.array([1.0 + 2.0**-40, 1.0])  # a above b as doubles; equal in float32 -> "b" first
    qptr = np.array([0, 2])
    expected = pytrec(["q"], docids, labels, scores, qptr)
    got = rankkit_trec(docids, labels, scores, qptr)
    assert got["mrr"][0] == 1.0 and expected["q"]["recip_rank"] == 0.5
    rounded = rankkit_trec(docids, labels, scores.astype(np.float32).astype(np.float64), qptr)
    assert rounded["mrr"][0] == expected["q"]["recip_rank"]


# -- TREC files through the CLI ---------------------------------------------------------------------
def test_runs_and_qrels_through_the_cli(tmp_path):
    """`rankkit eval --qrels`: unjudged retrieved documents count as non-relevant, judged documents
    that were not retrieved enter the ideal DCG and R, queries absent from the qrels are left out
    (as trec_eval does), queries absent from the run are not evaluated."""
    rng = np.random.default_rng(11)
    qids, docids, labels, scores, qptr = random_queries(5, 60, (0, 0, 1, 2, 3, -1))
    run_lines, qrels = [], {}
    run = {}
    for q, qid in enumerate(qids):
        rows = range(qptr[q], qptr[q + 1])
        if q == 7:  # a query the qrels do not know
            for r in rows:
                run_lines.append(f"{qid} Q0 {docids[r]} 0 {float(scores[r])!r} t")
            continue
        run[qid] = {}
        qrels[qid] = {}
        for r in rows:
            run_lines.append(f"{qid} Q0 {docids[r]} 0 {float(scores[r])!r} t")
            run[qid][docids[r]] = float(scores[r])
            if rng.random() < 0.8:  # the rest are retrieved but unjudged
                qrels[qid][docids[r]] = int(labels[r])
        for j in range(int(rng.integers(0, 4))):  # judged, not retrieved
            qrels[qid][f"x{j}"] = int(rng.integers(-1, 4))
        if not qrels[qid] or max(qrels[qid].values()) < 0:  # all negative: undefined in trec_eval
            qrels[qid]["x9"] = 0
    qrels["only-in-qrels"] = {"a": 1}
    rng.shuffle(run_lines)  # trec_eval ignores the rank column and the file order
    (tmp_path / "run").write_text("\n".join(run_lines) + "\n")
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {v}\n" for q in qrels for d, v in qrels[q].items()))
    metrics = list(MEASURES.values())
    proc = rankkit("eval", "--qrels", "qrels", "run", "--convention", "trec", "--per-query", "--format", "json",
                   *[a for m in metrics for a in ("-m", m)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    system = json.loads(proc.stdout)["systems"][0]
    expected = evaluate_with_pytrec(qrels, run)
    got_qids = system["per_query"]["qid"]
    assert sorted(got_qids) == sorted(expected)
    for measure, metric in MEASURES.items():
        values = dict(zip(got_qids, system["per_query"][metric]))
        bad = [q for q in expected if not abs(values[q] - expected[q][measure]) <= TOL]
        assert not bad, (measure, bad[:3])
        mean = sum(expected[q][measure] for q in expected) / len(expected)
        assert abs(system["mean"][metric] - mean) <= TOL


# -- MQ2008 ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mq2008():
    if not (MQ2008 / "test.txt").exists():
        pytest.skip(f"{MQ2008} is absent")
    from rankkit.report import docids
    from rankkit.io.svmlight import read_svmlight

    test = read_svmlight(str(MQ2008 / "test.txt"))
    train = read_svmlight(str(MQ2008 / "train.txt"))
    assert test.order is None  # the file is grouped by query: scores in file order are row order
    qids = [str(q) for q in test.qid[test.qptr[:-1]].tolist()]
    return test, train, qids, docids(test)


def lstsq_scores(train, test):
    """A pointwise least-squares model fitted on Fold1 train, rounded to float32: trained-looking
    scores, with the exact ties of documents whose features are equal."""
    from scipy.sparse import csr_matrix

    d = max(train.n_features, test.n_features)
    xtr = csr_matrix((train.data, train.indices, train.indptr), shape=(train.n_rows, d)).toarray()
    xte = csr_matrix((test.data, test.indices, test.indptr), shape=(test.n_rows, d)).toarray()
    a = np.hstack([xtr, np.ones((xtr.shape[0], 1))])
    w = np.linalg.lstsq(a, train.y, rcond=None)[0]
    return (np.hstack([xte, np.ones((xte.shape[0], 1))]) @ w).astype(np.float32).astype(np.float64)


def random_tie_free_scores(test):
    rng = np.random.default_rng(2008)
    return (rng.permutation(test.n_rows) + 1) / 4096.0  # distinct, exact in float32


@pytest.mark.parametrize("scores_of", ["random", "lstsq"])
def test_mq2008_fold1_test_agrees_with_trec_eval(mq2008, scores_of):
    test, train, qids, docids = mq2008
    scores = random_tie_free_scores(test) if scores_of == "random" else lstsq_scores(train, test)
    expected = assert_agree(qids, docids, test.y, scores, test.qptr)
    old = rankkit_trec(docids, test.y, scores, test.qptr, OLD_TREC)
    n_old = len(differing_queries(qids, expected, old, "ndcg_cut_10"))
    assert n_old > 50, n_old  # 156 queries: the old discount is far from trec_eval's
    if scores_of == "lstsq":
        sizes = np.diff(test.qptr)
        tied = sum(np.unique(scores[s:e]).shape[0] < e - s for s, e in zip(test.qptr[:-1], test.qptr[1:]))
        assert tied > 0 and sizes.min() < 10  # ties broken by docid, and queries shorter than the cutoffs


@pytest.mark.parametrize("convention", [["--convention", "trec"], []], ids=["named", "default"])
def test_mq2008_through_the_cli(mq2008, tmp_path, convention):
    """`rankkit eval [--convention trec] DATA SCORES`, trec being the default: docids from the
    `#docid = ...` comments break ties; per query and mean equal pytrec_eval's to 1e-12."""
    test, train, qids, docids = mq2008
    scores = lstsq_scores(train, test)
    (tmp_path / "s").write_text("".join(f"{v!r}\n" for v in scores.tolist()))
    proc = rankkit("eval", *convention, "--per-query", "--format", "json", "-m", "ndcg@10", "-m", "ndcg",
                   "-m", "map", "-m", "p@5", "-m", "mrr", str(MQ2008 / "test.txt"), "s", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    system = json.loads(proc.stdout)["systems"][0]
    assert system["per_query"]["qid"] == qids
    expected = pytrec(qids, docids, test.y, scores, test.qptr)
    for measure, metric in [("ndcg_cut_10", "ndcg@10"), ("ndcg", "ndcg"), ("map", "map"), ("P_5", "p@5"),
                            ("recip_rank", "mrr")]:
        got = system["per_query"][metric]
        assert all(abs(got[i] - expected[q][measure]) <= TOL for i, q in enumerate(qids)), measure
        assert abs(system["mean"][metric] - np.mean([expected[q][measure] for q in qids])) <= TOL, measure
    assert json.loads(proc.stdout)["convention"] == "trec"


# -- ir_measures ------------------------------------------------------------------------------------
def test_ir_measures_equals_the_trec_convention():
    """ir_measures (a test dependency: it needs only pytrec-eval-terrier) computes nDCG@k, nDCG, AP,
    AP@k, P@k and RR with its pytrec_eval provider by default: the trec convention, per query."""
    import ir_measures
    from ir_measures import AP, RR, P, nDCG

    qids, docids, labels, scores, qptr = random_queries(13, 120, (-1, 0, 0, 1, 2, 3))
    qrels, run = {}, {}
    for q, qid in enumerate(qids):
        rows = range(qptr[q], qptr[q + 1])
        qrels["m" + qid] = {docids[r]: int(labels[r]) for r in rows}
        run["m" + qid] = {docids[r]: float(scores[r]) for r in rows}
    measures = {nDCG @ 5: "ndcg@5", nDCG @ 10: "ndcg@10", nDCG: "ndcg", AP: "map", AP @ 5: "map@5",
                P @ 5: "p@5", P @ 20: "p@20", RR: "mrr"}  # fmt: skip
    got = rankkit_trec(docids, labels, scores, qptr)
    seen = 0
    for m in ir_measures.iter_calc(list(measures), qrels, run):
        q = qids.index(m.query_id[1:])
        assert abs(m.value - got[measures[m.measure]][q]) <= TOL, (m, got[measures[m.measure]][q])
        seen += 1
    assert seen == len(measures) * len(qids)


# -- ranx (optional: the `bench` extra; skipped when it is not installed) -----------------------------
def test_ranx_equals_the_trec_convention_without_score_ties():
    """ranx's ndcg@k, ndcg, map, precision@k, mrr equal the trec convention per query when no two
    documents of a query have the same score. On an exact tie ranx keeps the run's insertion order
    (checked below) where trec_eval, and rankkit's trec convention, put the larger docid first."""
    ranx = pytest.importorskip("ranx")
    qids, docids, labels, scores, qptr = random_queries(17, 120, (-1, 0, 0, 1, 2, 3), tied_scores=False)
    qrels, run = {}, {}
    for q, qid in enumerate(qids):
        rows = range(qptr[q], qptr[q + 1])
        qrels[qid] = {docids[r]: int(labels[r]) for r in rows}
        run[qid] = {docids[r]: float(scores[r]) for r in rows}
    names = {"ndcg@5": "ndcg@5", "ndcg@10": "ndcg@10", "ndcg": "ndcg", "map": "map", "precision@5": "p@5",
             "precision@20": "p@20", "mrr": "mrr"}  # fmt: skip
    got = rankkit_trec(docids, labels, scores, qptr)
    ranx_qrels = ranx.Qrels(qrels)
    values = ranx.evaluate(ranx_qrels, ranx.Run(run), list(names), return_mean=False)
    order = [qids.index(q) for q in ranx_qrels.keys()]  # ranx sorts the query ids
    assert len(order) == len(qids)
    for name, metric in names.items():
        assert np.allclose(values[name], got[metric][order], rtol=0, atol=TOL), name
    tie = ranx.evaluate(ranx.Qrels({"q": {"a": 1, "b": 0}}), ranx.Run({"q": {"a": 0.5, "b": 0.5}}), "mrr")
    assert tie == 1.0  # "a" first as inserted; trec_eval and rankkit's trec: "b" first, RR 1/2
    assert rankkit_trec(["a", "b"], np.array([1.0, 0.0]), np.array([0.5, 0.5]), np.array([0, 2]))["mrr"][0] == 0.5


# -- LightGBM (fixture: LightGBM's own output, see tests/fixtures/lightgbm/README.md) ---------------
def test_lightgbm_metrics_equal_the_exp_convention():
    """LightGBM 4.7.0's validation ndcg@k and map@k equal `--convention exp` on its predictions:
    gain 2^label - 1, discount log2(p + 1), short queries over their own length, a query without
    a positive label scores 1, map@k divided by min(R, k), score ties in file order."""
    from rankkit.io.svmlight import read_svmlight

    root = Path(__file__).resolve().parent
    fixture = json.loads((root / "fixtures" / "lightgbm" / "expected.json").read_text())["metrics"]
    ds = read_svmlight(str(root.parent / "data" / "sample.test.txt"))
    scores = np.loadtxt(root / "fixtures" / "lightgbm" / "test.scores")
    got = M.evaluate(ds.y, scores, ds.qptr, list(fixture), "exp")
    for name, value in fixture.items():
        assert abs(got[name] - value) <= 1e-12, (name, got[name], value)
    # the fixture tells the rules apart: ties in reverse file order, or empty queries scored 0, differ
    reverse = M.evaluate(ds.y, scores, ds.qptr, list(fixture), "exp", tiebreak=np.arange(ds.n_rows))  # later rows first
    assert max(abs(reverse[n] - v) for n, v in fixture.items()) > 1e-6  # 2 mixed-label tie groups: 1.4e-5
    zero = M.evaluate(ds.y, scores, ds.qptr, list(fixture), "exp", empty_query="0")
    assert max(abs(zero[n] - v) for n, v in fixture.items()) > 1e-3


# -- the LETOR 4.0 script (fixture: its output on MQ2008 Fold1 test, see tests/fixtures/letor4) ------
def _letor_script_tables(path: Path) -> dict:
    """{(qid or "Average", column): value} of both tables of Eval-Score-4.0.pl's per-query output."""
    out = {}
    header = None
    for line in path.read_text().splitlines():
        fields = line.split("\t")
        if not line.strip():
            header = None
        elif header is None:
            header = fields
        else:
            for name, value in zip(header[1:], fields[1:]):
                out[(fields[0], name)] = float(value)
    return out


@pytest.mark.parametrize("kind", ["random", "tied"])
def test_letor4_equals_the_letor_4_script(mq2008, kind):
    """`--convention letor4` per query against Eval-Score-4.0.pl's own output (4 decimals): P@1-10,
    MAP, NDCG@1-10, and the Average row; with ties, the script's file order is rankkit's."""
    test, _, qids, _ = mq2008
    n = test.n_rows
    if kind == "random":
        scores = (np.random.default_rng(2008).permutation(n) + 1) / 4096.0
    else:
        scores = np.random.default_rng(4).integers(0, 4, n).astype(float)
    table = _letor_script_tables(Path(__file__).resolve().parent / "fixtures" / "letor4" /
                                 f"mq2008-fold1-test-{kind}.out")
    columns = {**{f"P@{k}": f"p@{k}" for k in range(1, 11)}, "MAP": "map",
               **{f"NDCG@{k}": f"ndcg@{k}" for k in range(1, 11)}}
    got = M.per_query_table(list(columns.values()), test.y, scores, test.qptr, "letor4")
    for column, metric in columns.items():
        for q, qid in enumerate(qids):
            assert abs(got[metric][q] - table[(qid, column)]) <= 5e-5 + 1e-12, (kind, qid, column)
        assert abs(got[metric].mean() - table[("Average", column)]) <= 5e-5 + 1e-12, (kind, column)
    if kind == "tied":  # ties decide: the reverse of file order misses the script's numbers
        rev = M.per_query_table(["ndcg@10", "map"], test.y, scores, test.qptr, "letor4", tiebreak=np.arange(n))
        assert max(abs(rev["map"][q] - table[(qid, "MAP")]) for q, qid in enumerate(qids)) > 1e-3


# -- RankLib (fixture: RankLib's own per-query output, see tests/fixtures/ranklib/README.md) -----------
def test_ranklib_metrics_and_where_they_differ():
    """RankLib's NDCG@k, MAP and P@k (k <= the shortest query) equal `--convention exp
    --empty-query 0` per query to 1e-12, ties in file order (18 distinct scores for 527 documents).
    Two documented differences, pinned here: RankLib's P@k divides by min(k, query length), not
    by k; its ERR uses g_max = 4 whatever the labels (exp: the largest label, at least 2), which
    is the mslr convention's ERR."""
    from rankkit.io.svmlight import read_svmlight

    root = Path(__file__).resolve().parent
    fixture = json.loads((root / "fixtures" / "ranklib" / "expected.json").read_text())["per_query"]
    ds = read_svmlight(str(root.parent / "data" / "sample.test.txt"))
    scores = np.loadtxt(root / "fixtures" / "ranklib" / "test.scores")
    qids = [str(q) for q in ds.qid[ds.qptr[:-1]].tolist()]
    lengths = np.diff(ds.qptr)
    same = {"NDCG@1": "ndcg@1", "NDCG@3": "ndcg@3", "NDCG@5": "ndcg@5", "NDCG@10": "ndcg@10", "NDCG@20": "ndcg@20",
            "MAP": "map", "P@1": "p@1", "P@5": "p@5"}
    assert lengths.min() >= 5
    got = M.per_query_table(list(same.values()), ds.y, scores, ds.qptr, "exp", empty_query="0")
    for name, metric in same.items():
        ref = np.array([fixture[name][q] for q in qids])
        assert np.abs(got[metric] - ref).max() <= 1e-12, name
        assert abs(got[metric].mean() - fixture[name]["all"]) <= 1e-12, name
    p10 = M.per_query("p@10", ds.y, scores, ds.qptr, "exp")
    ref = np.array([fixture["P@10"][q] for q in qids])
    assert np.abs(p10 * 10 / np.minimum(lengths, 10) - ref).max() <= 1e-12  # RankLib: hits / min(k, n)
    assert np.abs(p10 - ref).max() > 0.1
    err = M.per_query("err@10", ds.y, scores, ds.qptr, "mslr")  # (2^g - 1) / 16
    assert np.abs(err - np.array([fixture["ERR@10"][q] for q in qids])).max() <= 1e-12
    reverse = M.per_query("ndcg@10", ds.y, scores, ds.qptr, "exp", tiebreak=np.arange(ds.n_rows), empty_query="0")
    assert np.abs(reverse - np.array([fixture["NDCG@10"][q] for q in qids])).max() > 1e-3  # ties matter
