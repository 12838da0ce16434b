"""Query groups from side files (LightGBM FILE.query, XGBoost FILE.group): rankkit.io.groups.

The reference for every group-file result is the same data with `qid:N` written into the lines
(N = 1-based group number), which rankkit already reads: a group file must give exactly what those
qids give (datasets, models, scores, runs, metrics), and nothing when there is no group file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from rankkit import commands
from rankkit.errors import DataError, UsageError
from rankkit.io import groups as G
from rankkit.io.model import read_model
from rankkit.io.svmlight import parse_bytes, read_svmlight
from tests.test_cli import assert_one_line_error, rankkit

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "LightGBM-lambdarank"


def _synthetic(seed=0, sizes=(4, 1, 6, 3, 5)):
    """(lines without qid, lines with qid:1..G, sizes) of a small random ranking problem."""
    rng = np.random.default_rng(seed)
    plain, with_qid = [], []
    for q, size in enumerate(sizes, start=1):
        for _ in range(size):
            label = int(rng.integers(0, 3))
            feats = " ".join(f"{j}:{rng.integers(1, 100) / 100}" for j in sorted(rng.choice(np.arange(1, 7), 4, replace=False)))
            plain.append(f"{label} {feats}")
            with_qid.append(f"{label} qid:{q} {feats}")
    return "\n".join(plain) + "\n", "\n".join(with_qid) + "\n", list(sizes)


def _query_text(sizes) -> str:
    return "".join(f"{s}\n" for s in sizes)


def _same_dataset(a, b):
    for f in ("data", "indices", "indptr", "y", "qid", "qptr"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert a.has_qid and b.has_qid and a.n_features == b.n_features


@pytest.fixture
def files(tmp_path):
    plain, with_qid, sizes = _synthetic()
    (tmp_path / "d.txt").write_text(plain)
    (tmp_path / "d.txt.query").write_text(_query_text(sizes))
    (tmp_path / "d.qid.txt").write_text(with_qid)
    return tmp_path, sizes


# -- the group file itself ------------------------------------------------------------------------
def test_group_sizes_read(tmp_path):
    p = tmp_path / "g"
    p.write_text("27\n 18 \r\n\n67")  # white space, CR LF, a blank line, no final newline
    assert G.read_group_sizes(str(p)).tolist() == [27, 18, 67]


@pytest.mark.parametrize("text,line,message", [
    ("3\n0\n2\n", 2, "group size '0' is zero"),
    ("3\n-2\n", 2, "group size '-2' is not a positive integer"),
    ("3\n2.5\n", 2, "group size '2.5' is not a positive integer"),
    ("x\n", 1, "group size 'x' is not a positive integer"),
    ("3\n4 5\n", 2, "line '4 5' holds more than one number"),
])
def test_group_file_bad_token(tmp_path, text, line, message):
    p = tmp_path / "g.query"
    p.write_text(text)
    with pytest.raises(DataError) as e:
        G.read_group_sizes(str(p))
    assert str(e.value).startswith(f"{p}:{line}: {message}")


def test_candidates_of_a_compressed_file():
    assert G.candidates("a/rank.train") == ["a/rank.train.query", "a/rank.train.group"]
    assert G.candidates("a/rank.train.gz") == ["a/rank.train.gz.query", "a/rank.train.gz.group",
                                               "a/rank.train.query", "a/rank.train.group"]


# -- the reader ---------------------------------------------------------------------------------
def test_detected_group_file_equals_qids(files):
    d, sizes = files
    ds = read_svmlight(str(d / "d.txt"))
    _same_dataset(ds, read_svmlight(str(d / "d.qid.txt")))
    assert ds.qid[ds.qptr[:-1]].tolist() == list(range(1, len(sizes) + 1))
    (d / "d.txt.query").unlink()
    (d / "d.txt.group").write_text(_query_text(sizes))  # XGBoost's name
    _same_dataset(read_svmlight(str(d / "d.txt")), read_svmlight(str(d / "d.qid.txt")))


def test_dataset_records_the_group_file_that_numbered_its_queries(files):
    """Dataset.group_file: the group file that gave a qid-less file its queries (what the split
    check of several parts needs: those queries are the part's own); None when the qids are the
    file's own, even if a group file agreed with them, and without a group file."""
    d, sizes = files
    assert read_svmlight(str(d / "d.txt")).group_file == str(d / "d.txt.query")
    assert G.existing(str(d / "d.txt")) == [str(d / "d.txt.query")] and G.existing("-") == []
    (d / "d.qid.txt.query").write_text(_query_text(sizes))
    assert read_svmlight(str(d / "d.qid.txt")).group_file is None
    assert read_svmlight(str(d / "d.txt"), groups=None).group_file is None


def test_without_a_group_file_nothing_changes(files):
    d, _ = files
    (d / "d.txt.query").unlink()
    ds = read_svmlight(str(d / "d.txt"))
    assert not ds.has_qid and ds.n_queries == 1
    (d / "d.txt.query").write_text("1\n")  # present but ignored on request
    ds = read_svmlight(str(d / "d.txt"), groups=None)
    assert not ds.has_qid and ds.n_queries == 1


def test_compressed_data_finds_both_names(files):
    d, sizes = files
    raw = (d / "d.txt").read_bytes()
    (d / "d.txt.gz").write_bytes(gzip.compress(raw))  # d.txt.query is next to it: STEM.query
    _same_dataset(read_svmlight(str(d / "d.txt.gz")), read_svmlight(str(d / "d.qid.txt")))
    (d / "d.txt.gz.query").write_text(_query_text(sizes))  # LightGBM's literal rule, same content: fine
    _same_dataset(read_svmlight(str(d / "d.txt.gz")), read_svmlight(str(d / "d.qid.txt")))
    (d / "d.txt.gz.query").write_text(_query_text([sum(sizes)]))  # two that disagree: an error
    with pytest.raises(DataError, match="has two group files that disagree"):
        read_svmlight(str(d / "d.txt.gz"))


def test_qids_and_group_file_must_agree(files):
    d, sizes = files
    (d / "d.qid.txt.query").write_text(_query_text(sizes))
    ds = read_svmlight(str(d / "d.qid.txt"))  # agree: the file's qids stay
    _same_dataset(ds, read_svmlight(str(d / "d.qid.txt"), groups=None))
    (d / "d.qid.txt.query").write_text(_query_text([sizes[0] + sizes[1]] + sizes[2:]))
    with pytest.raises(DataError) as e:
        read_svmlight(str(d / "d.qid.txt"))
    assert str(e.value).startswith(f"{d / 'd.qid.txt'}:{sizes[0] + 1}: qid 2 starts inside group 1 of ")
    (d / "d.qid.txt.query").write_text(_query_text([1, sizes[0] - 1] + sizes[1:]))
    with pytest.raises(DataError) as e:
        read_svmlight(str(d / "d.qid.txt"))
    assert str(e.value).startswith(f"{d / 'd.qid.txt'}:2: group 2 of {d / 'd.qid.txt.query'} starts here, but qid 1")


def test_parallel_reader_with_groups(monkeypatch):
    import rankkit.io.svmlight as S

    plain, with_qid, sizes = _synthetic(1, sizes=tuple(range(1, 60)))
    groups = G.Groups(np.array(sizes, dtype=np.int64), "g", True)
    monkeypatch.setattr(S, "PARALLEL_MIN_BYTES", 64)  # many chunks
    a = parse_bytes(np.frombuffer(plain.encode(), dtype=np.uint8), "d", groups=groups)
    b = parse_bytes(np.frombuffer(with_qid.encode(), dtype=np.uint8), "d")
    _same_dataset(a, b)


# -- commands (in process: the CLI's code path after option parsing) --------------------------------
def test_train_valid_predict_eval_path_equal_qids(files, capsys):
    d, sizes = files
    plain2, qid2, sizes2 = _synthetic(2, sizes=(3, 5, 2, 4))
    (d / "v.txt").write_text(plain2)
    (d / "v.txt.query").write_text(_query_text(sizes2))
    (d / "v.qid.txt").write_text(qid2)
    for solver, extra in (("newton", {}), ("pegasos", {"valid": True})):
        models = []
        for data, valid in (("d.txt", "v.txt"), ("d.qid.txt", "v.qid.txt")):
            m = str(d / f"{data}.{solver}.model")
            stochastic = {"iterations": 500, "seed": 3, **({"valid_file": str(d / valid)} if extra else {})}
            commands.train(str(d / data), m, solver, {}, stochastic=stochastic if solver != "newton" else None,
                           warn=lambda _: None)
            models.append(read_model(m))
        assert np.array_equal(models[0].weights, models[1].weights), solver
        assert models[0].header["n_queries"] == str(len(sizes)) and "train_auc" not in models[0].header
        assert models[0].header["group_file"] == str(d / "d.txt.query") and "group_file" not in models[1].header
    model = str(d / "d.txt.newton.model")
    runs = []
    for data in ("v.txt", "v.qid.txt"):
        out = str(d / f"{data}.run")
        commands.predict(str(d / data), model, out, fmt="trec")
        runs.append(Path(out).read_text())
        commands.predict(str(d / data), model, out + ".scores")
    assert runs[0] == runs[1] and runs[0].split("\n")[-2].split()[0] == str(len(sizes2))
    tables = []
    for data in ("v.txt", "v.qid.txt"):
        commands.evaluate([str(d / data), str(d / "v.txt.run.scores")], fmt="json", per_query=True,
                          echo=lambda s: tables.append(json.loads(s)))
    assert tables[0] == tables[1]
    capsys.readouterr()
    outs = []
    for train, valid in (("d.txt", "v.txt"), ("d.qid.txt", "v.qid.txt")):
        lines = []
        commands.path(str(d / train), str(d / valid), method="grid", n_points=3, echo=lines.append)
        outs.append(lines)
    assert outs[0] == outs[1]


def test_path_group_option_rules(files, tmp_path):
    with pytest.raises(UsageError, match="--group names TRAIN's group file"):
        commands.path(folds=str(tmp_path), group_file="x.query")
    with pytest.raises(UsageError, match="with --qrels"):
        commands.evaluate(["run"], qrels="q", group_file="x.query")


def test_stream_sampler_honours_groups(files):
    from rankkit.solvers import SOLVERS
    from rankkit.solvers.stream import train_stream

    d, sizes = files
    results = []
    for data, groups in (("d.txt", G.resolve(str(d / "d.txt"))), ("d.qid.txt", None), ("d.qid.txt", G.Groups(
            np.array(sizes, dtype=np.int64), "g", False))):
        solver = SOLVERS["pegasos"].load()(iterations=300, seed=1)
        w, facts = train_stream(str(d / data), solver, groups=groups, chunk_bytes=37)  # queries across chunks
        results.append((w, facts["n_queries"], facts["n_pairs"]))
    for w, nq, npairs in results[1:]:
        assert np.array_equal(w, results[0][0]) and (nq, npairs) == results[0][1:]
    assert results[0][1] == len(sizes)
    for data, bad, match in (
        ("d.qid.txt", [sum(sizes) - 1, 1], f"d.qid.txt:{sizes[0] + 1}: qid 2 starts inside group 1 of g"),
        ("d.qid.txt", [1, sum(sizes) - 1], "d.qid.txt:2: group 2 of g starts here, but qid 1 goes on"),
        ("d.txt", [sum(sizes) + 1], f"^g: group sizes add up to {sum(sizes) + 1} documents, but .*d.txt has {sum(sizes)}"),
        ("d.txt", [2, sum(sizes) - 3], f"^g: group sizes add up to {sum(sizes) - 1} documents, but .*d.txt has {sum(sizes)}"),
    ):
        solver = SOLVERS["pegasos"].load()(iterations=300, seed=1)
        with pytest.raises(DataError, match=match):
            train_stream(str(d / data), solver, groups=G.Groups(np.array(bad, dtype=np.int64), "g", False),
                         chunk_bytes=37)


# -- the CLI ------------------------------------------------------------------------------------
def test_cli_detects_says_so_and_group_option_wins(files):
    d, sizes = files
    proc = rankkit("train", "d.txt", "m.model", "-v", cwd=d)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert f"d.txt: {len(sizes)} queries from the group file d.txt.query (found next to it)" in err
    (d / "other.txt").write_text(_query_text([sum(sizes)]))  # one query: --group wins over d.txt.query
    proc = rankkit("predict", "d.txt", "m.model", "--format", "trec", "--group", "other.txt", "-v", cwd=d)
    assert proc.returncode == 0, proc.stderr
    assert "d.txt: 1 queries from the group file other.txt (--group)" in proc.stderr.decode()
    assert {line.split()[0] for line in proc.stdout.decode().splitlines()} == {"1"}
    before = (d / "d.txt.query").read_bytes()  # a detected group file is an input: never overwritten
    for call in (lambda: commands.predict(str(d / "d.txt"), str(d / "m.model"), str(d / "d.txt.query")),
                 lambda: commands.train(str(d / "d.txt"), str(d / "d.txt.query"), None, {})):
        with pytest.raises(UsageError, match="refusing to write .*d.txt.query.: it is the input file"):
            call()
    assert (d / "d.txt.query").read_bytes() == before


def test_cli_without_group_file_unchanged(files):
    d, _ = files
    (d / "d.txt.query").unlink()
    proc = rankkit("train", "d.txt", "m.model", "-v", cwd=d)
    assert proc.returncode == 0 and "group file" not in proc.stderr.decode()
    header = read_model(str(d / "m.model")).header
    assert header["n_queries"] == "1" and "train_auc" in header and "group_file" not in header


@pytest.mark.parametrize("query,expected", [  # the bad tokens, zero and negative sizes: test_group_file_bad_token
    ("4\n1\n6\n3\n4\n", "rankkit: error: d.txt.query: group sizes add up to 18 documents, but d.txt has 19 data lines\n"),
    ("4\n1\nsix\n", "rankkit: error: d.txt.query:3: group size 'six' is not a positive integer"),
])
def test_cli_bad_group_file(files, query, expected):
    d, _ = files
    (d / "d.txt.query").write_text(query)
    assert assert_one_line_error(rankkit("eval", "d.txt", "d.txt", cwd=d)).startswith(expected)


def test_cli_gz_data_eval(files):
    d, sizes = files
    (d / "d.txt.gz").write_bytes(gzip.compress((d / "d.txt").read_bytes()))
    (d / "s.txt").write_text("".join(f"{v}\n" for v in range(sum(sizes))))
    proc = rankkit("eval", "d.txt.gz", "s.txt", "--per-query", "--format", "tsv", cwd=d)
    assert proc.returncode == 0, proc.stderr
    names = [line.split("\t")[0] for line in proc.stdout.decode().splitlines()[1:]]
    assert sorted({int(n) for n in names if n.isdigit()}) == list(range(1, len(sizes) + 1))


# -- LightGBM's own example (../shared/data/LightGBM-lambdarank, when present) ----------------------
def _lightgbm(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return path


def test_lightgbm_example_equals_its_qid_conversion(tmp_path):
    train, train_qid = _lightgbm("rank.train"), _lightgbm("rank.train.qid.txt")
    test, test_qid = _lightgbm("rank.test"), _lightgbm("rank.test.qid.txt")
    a = read_svmlight(str(train))
    _same_dataset(a, read_svmlight(str(train_qid)))
    assert (a.n_queries, a.n_pairs) == (201, 13543)  # not one query of 3.18M pairs
    proc = rankkit("train", train, "a.model", "-C", "0.001", "-v", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"{train}: 201 queries from the group file {train}.query (found next to it)" in proc.stderr.decode()
    commands.train(str(train_qid), str(tmp_path / "b.model"), None, {"C": 0.001}, warn=lambda _: None)
    ma, mb = read_model(str(tmp_path / "a.model")), read_model(str(tmp_path / "b.model"))
    assert np.array_equal(ma.weights, mb.weights)
    assert ma.header["n_pairs"] == mb.header["n_pairs"] == "13543"
    runs = []
    for data in (test, test_qid):
        out = tmp_path / f"{data.name}.run"
        commands.predict(str(data), str(tmp_path / "a.model"), str(out), fmt="trec")
        runs.append(out.read_text())
    assert runs[0] == runs[1] and len({line.split()[0] for line in runs[0].splitlines()}) == 50
    scores = tmp_path / "s.txt"
    commands.predict(str(test), str(tmp_path / "a.model"), str(scores))
    tables = []
    for data in (test, test_qid):
        commands.evaluate([str(data), str(scores)], fmt="json", per_query=True, echo=lambda s: tables.append(json.loads(s)))
    assert tables[0] == tables[1]
