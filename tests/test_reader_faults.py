"""Fault injection for the readers (issue 10): a file that changes while it is read, corrupt and
truncated archives, CR-only line endings, feature indices at the int32 limit, files given in the
wrong place to `rankkit eval`. Bad input is a DataError, exit 2 and one line; never a crash."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os

import numpy as np
import pytest

from rankkit.errors import DataError
from rankkit.io import files as F
from rankkit.io import svmlight as S
from rankkit.io.output import read_scores
from rankkit.io.svmlight import parse_bytes, read_bytes, read_svmlight
from rankkit.io.trec import read_qrels, read_trec_run
from rankkit.io.blocks import line_chunks, stream_queries
from tests.test_cli import SAMPLE_TRAIN, _env, assert_one_line_error, rankkit

SAMPLE = b"".join(SAMPLE_TRAIN.read_bytes().splitlines(keepends=True)[:100])
N_SAMPLE = 100


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A model trained by the CLI (so it has whatever the model format requires)."""
    d = tmp_path_factory.mktemp("model")
    (d / "s.txt").write_bytes(SAMPLE)
    proc = rankkit("train", "s.txt", "s.model", "-C", "0.01", cwd=d)
    assert proc.returncode == 0, proc.stderr
    return d / "s.model"


# -- 1. a file that changes while it is read ----------------------------------------------------------
def test_plain_files_are_read_not_mapped(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(SAMPLE)
    buf = read_bytes(str(path))
    assert buf.base is None or not hasattr(buf.base, "madvise")  # not an mmap.mmap
    assert buf.flags.writeable and buf.tobytes() == SAMPLE


def _changing(monkeypatch, change):
    """Make the reader's file change (`change(path)`) after its size was taken and one block read."""
    original = F._read_regular
    monkeypatch.setattr(F, "BLOCK_BYTES", 64)

    class Changing:
        def __init__(self, fh):
            self.fh, self.calls = fh, 0

        def readinto(self, view):
            n = self.fh.readinto(view)
            self.calls += 1
            if self.calls == 1:
                change(self.fh.name)
            return n

        def read(self, n):
            return self.fh.read(n)

    monkeypatch.setattr(F, "_read_regular", lambda fh, size, name: original(Changing(fh), size, name))


def test_file_truncated_while_read_is_a_data_error(tmp_path, monkeypatch):
    path = tmp_path / "t.txt"
    path.write_bytes(SAMPLE)
    _changing(monkeypatch, lambda p: os.truncate(p, 100))
    with pytest.raises(DataError, match=rf"t\.txt: changed while being read \(it shrank from {len(SAMPLE)} to"):
        read_svmlight(str(path))


def test_file_growing_while_read_is_a_data_error(tmp_path, monkeypatch):
    path = tmp_path / "t.txt"
    path.write_bytes(SAMPLE)

    def grow(p):
        with open(p, "ab") as fh:
            fh.write(b"1 qid:99 1:1\n")

    _changing(monkeypatch, grow)
    with pytest.raises(DataError, match=rf"t\.txt: changed while being read \(it grew beyond {len(SAMPLE)} bytes"):
        read_svmlight(str(path))


def test_cli_file_truncated_during_read_exits_2_not_sigbus(tmp_path, model):
    """The file is cut to half its size right after the reader took its size (the old reader
    mapped the file, and pages beyond the new end raise SIGBUS: exit 135, no message)."""
    import subprocess
    import sys

    path = tmp_path / "victim.txt"
    path.write_bytes(SAMPLE)
    code = (
        "import os, runpy, rankkit.io.files as F\n"
        "orig = F._read_regular\n"
        "def cut(fh, size, name):\n"
        "    os.truncate(fh.name, size // 2)\n"
        "    return orig(fh, size, name)\n"
        "F._read_regular = cut\n"
        "runpy.run_module('rankkit', run_name='__main__', alter_sys=True)\n"
    )
    for args in (["predict", "victim.txt", str(model)], ["train", "victim.txt", "out.model"]):
        path.write_bytes(SAMPLE)
        proc = subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, capture_output=True, env=_env(),
                              timeout=300)
        assert_one_line_error(proc, "victim.txt: changed while being read (it shrank")
        assert not (tmp_path / "out.model").exists()


# -- 2. corrupt and truncated archives ----------------------------------------------------------------
FORMATS = {"gz": (gzip.compress, "gzip"), "bz2": (bz2.compress, "bzip2"), "xz": (lzma.compress, "xz")}


def _damaged(ext: str, how: str) -> bytes:
    packed = bytearray(FORMATS[ext][0](SAMPLE))
    if how == "truncated":
        return bytes(packed[: len(packed) * 2 // 3])
    if how == "header":
        packed[0] ^= 0xFF
        return bytes(packed)
    middle = len(packed) // 2  # "middle"
    packed[middle : middle + 16] = bytes(16)
    return bytes(packed)


EXPECTED = {"truncated": "truncated {kind} data", "header": "not {a} {kind} file", "middle": "corrupt {kind} data"}
CASES = [(ext, how) for ext in FORMATS for how in EXPECTED]


@pytest.mark.parametrize("ext,how", CASES, ids=[f"{e}-{h}" for e, h in CASES])
def test_damaged_archive_is_a_data_error_naming_file_and_reason(tmp_path, ext, how):
    path = tmp_path / f"t.txt.{ext}"
    path.write_bytes(_damaged(ext, how))
    expected = EXPECTED[how].format(kind=FORMATS[ext][1], a="an" if ext == "xz" else "a")
    with pytest.raises(DataError) as info:
        read_svmlight(str(path))
    assert str(info.value).startswith(f"{path}: {expected}") and "\n" not in str(info.value)
    with pytest.raises(DataError, match=expected):  # the streaming reader says the same
        list(line_chunks(str(path), 256))
    with pytest.raises(DataError, match=expected):  # and the score and TREC readers
        read_scores(str(path))
    with pytest.raises(DataError, match=expected):
        read_trec_run(str(path))


def test_intact_archives_still_read(tmp_path):
    plain = parse_bytes(np.frombuffer(SAMPLE, dtype=np.uint8))
    for ext, (pack, _) in FORMATS.items():
        path = tmp_path / f"t.txt.{ext}"
        path.write_bytes(pack(SAMPLE))
        ds = read_svmlight(str(path))
        assert np.array_equal(ds.data, plain.data) and np.array_equal(ds.y, plain.y)
        assert b"".join(t for t, _ in line_chunks(str(path), 300)) == SAMPLE


@pytest.mark.parametrize(
    "args",
    [
        ["train", "{f}", "out.model"],
        ["train", "s.txt", "out.model", "--solver", "pegasos", "--valid", "{f}"],
        ["train", "{f}", "out.model", "--solver", "pegasos", "--sampler", "stream"],
        ["predict", "{f}", "{model}"],
        ["eval", "{f}", "s.scores"],
    ],
    ids=["train", "valid", "stream", "predict", "eval"],
)
def test_cli_damaged_archive_exits_2(tmp_path, model, args):
    (tmp_path / "s.txt").write_bytes(SAMPLE)
    (tmp_path / "s.scores").write_bytes(b"0.5\n" * N_SAMPLE)
    damages = [("gz", "middle"), ("gz", "truncated"), ("bz2", "middle"), ("xz", "header"), ("xz", "truncated")]
    first = len(args[0]) + len(args)  # two damages per command, different ones for different commands
    for ext, how in [damages[first % 5], damages[(first + 2) % 5]]:
        f = f"bad.txt.{ext}"
        (tmp_path / f).write_bytes(_damaged(ext, how))
        proc = rankkit(*[a.format(f=f, model=model) for a in args], cwd=tmp_path)
        assert_one_line_error(proc, f"{f}: " + EXPECTED[how].format(kind=FORMATS[ext][1], a="an" if ext == "xz" else "a"))
        assert not (tmp_path / "out.model").exists()


# -- 3. CR-only line endings (classic Mac) ----------------------------------------------------------
def _same(a, b):
    for field in ("data", "indices", "indptr", "y", "qid", "qptr", "line"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.docids() == b.docids()


def _with_endings(text: bytes, rng) -> bytes:
    """Every line end replaced by LF, CR LF or CR at random."""
    lines = text.split(b"\n")
    ends = [rng.choice([b"\n", b"\r\n", b"\r"]) for _ in lines[:-1]]
    return b"".join(line + end for line, end in zip(lines, ends)) + lines[-1]


def test_cr_lf_and_crlf_line_ends_read_the_same(monkeypatch):
    lf = parse_bytes(np.frombuffer(SAMPLE, dtype=np.uint8), "f")
    rng = np.random.default_rng(3)
    cr_only = SAMPLE.replace(b"\n", b"\r")
    _same(lf, parse_bytes(np.frombuffer(cr_only, dtype=np.uint8), "f"))
    mixed = [_with_endings(SAMPLE, rng) for _ in range(3)]
    for text in mixed:
        _same(lf, parse_bytes(np.frombuffer(text, dtype=np.uint8), "f"))
    monkeypatch.setattr(S, "PARALLEL_MIN_BYTES", 97)  # many chunks: no boundary inside a CR LF
    for text in [cr_only, *mixed]:
        assert S._n_chunks(len(text)) > 2
        _same(lf, parse_bytes(np.frombuffer(text, dtype=np.uint8), "f"))


def test_cr_only_errors_keep_their_line_number():
    text = b"1 qid:1 1:1\r# comment\r\r0 qid:1 1:x\r"
    with pytest.raises(DataError, match=r"^f:4: feature value 'x'"):
        parse_bytes(np.frombuffer(text, dtype=np.uint8), "f")


def test_stream_reader_cuts_at_cr_and_counts_lines(tmp_path):
    rng = np.random.default_rng(5)
    text = _with_endings(SAMPLE, rng)
    path = tmp_path / "t.txt"
    path.write_bytes(text)
    for size in (7, 100, 1000):
        pieces = list(line_chunks(str(path), size))
        assert b"".join(p for p, _ in pieces) == text
        lines = 0
        for piece, before in pieces:
            assert before == lines
            lines += S.count_line_ends(piece)
    bad = text.replace(b"qid:3 ", b"qid:3 5:oops ", 1)
    first_line = SAMPLE.split(b"\n").index(next(ln for ln in SAMPLE.split(b"\n") if b"qid:3 " in ln)) + 1
    path.write_bytes(bad)
    with pytest.raises(DataError, match=rf"t\.txt:{first_line}: "):
        list(stream_queries(str(path), False, 500))


def test_scores_and_trec_readers_take_cr_line_ends(tmp_path):
    (tmp_path / "s").write_bytes(b"1.5\r2\r\n-3\r")
    assert read_scores(str(tmp_path / "s")).tolist() == [1.5, 2.0, -3.0]
    (tmp_path / "r").write_bytes(b"1 Q0 a 1 2.5 t\r1 Q0 b 2 1 t\r2 Q0 c 1 0 t")
    qids, docids, scores = read_trec_run(str(tmp_path / "r"))
    assert list(qids) == ["1", "1", "2"] and list(docids) == ["a", "b", "c"]
    (tmp_path / "q").write_bytes(b"1 0 a 1\r1 0 b 0\r1 0 c x\r")
    with pytest.raises(DataError, match=r"q:3: "):
        read_qrels(str(tmp_path / "q"))


def test_cli_predicts_one_score_per_cr_line(tmp_path, model):
    (tmp_path / "cr.txt").write_bytes(SAMPLE.replace(b"\n", b"\r"))
    (tmp_path / "lf.txt").write_bytes(SAMPLE)
    cr = rankkit("predict", "cr.txt", model, cwd=tmp_path)
    lf = rankkit("predict", "lf.txt", model, cwd=tmp_path)
    assert cr.returncode == 0 and cr.stdout == lf.stdout and cr.stdout.count(b"\n") == N_SAMPLE


# -- 4. feature indices at the int32 limit ----------------------------------------------------------
def test_largest_representable_feature_index():
    ds = parse_bytes(np.frombuffer(b"1 qid:1 2147483647:1\n0 qid:1 1:1\n", dtype=np.uint8), "f")
    assert ds.n_features == 2**31 - 1 and int(ds.indices.max()) == 2**31 - 2
    ds = parse_bytes(np.frombuffer(b"1 qid:1 2147483646:1\n", dtype=np.uint8), "f", zero_based=True)
    assert ds.n_features == 2**31 - 1


@pytest.mark.parametrize(
    "text,zero_based,limit",
    [(b"1 qid:1 2147483648:1\n", False, 2147483647), (b"1 qid:1 2147483647:1\n", True, 2147483646),
     (b"1 qid:1 99999999999999999999:1\n", False, 2147483647)],
)
def test_feature_index_beyond_int32_is_a_data_error(tmp_path, text, zero_based, limit):
    token = text.split()[2].split(b":")[0].decode()
    body = b"0 qid:1 1:1\n" + text
    with pytest.raises(DataError, match=rf"^f:2: feature index '{token}' is too large \(at most {limit}"):
        parse_bytes(np.frombuffer(body, dtype=np.uint8), "f", zero_based=zero_based)
    path = tmp_path / "t.txt"  # the streaming reader: the same check, the same line
    path.write_bytes(body)
    with pytest.raises(DataError, match=rf"t\.txt:2: feature index '{token}' is too large \(at most {limit}"):
        list(stream_queries(str(path), zero_based, 1 << 20))


# -- 6. `rankkit eval` given the wrong files ---------------------------------------------------------
@pytest.fixture(scope="module")
def eval_files(tmp_path_factory, model):
    d = tmp_path_factory.mktemp("eval")
    (d / "test.txt").write_bytes(SAMPLE)
    scores = rankkit("predict", "test.txt", model, cwd=d)
    run = rankkit("predict", "test.txt", model, "--format", "trec", cwd=d)
    assert scores.returncode == 0 and run.returncode == 0
    (d / "a.scores").write_bytes(scores.stdout)
    (d / "run.trec").write_bytes(run.stdout)
    return d


@pytest.mark.parametrize(
    "args,fragments",
    [
        (["test.txt", "run.trec"], ["run.trec:1: this is a TREC run line", "--qrels"]),
        (["test.txt", "test.txt"], ["test.txt:1: this is a LETOR data line", "DATA SCORES"]),
        (["a.scores", "test.txt"], ["a.scores:1: looks like a scores file", "DATA is the LETOR file"]),
        (["a.scores", "a.scores"], ["a.scores:1: looks like a scores file"]),
    ],
    ids=["run-as-scores", "data-as-scores", "scores-as-data", "scores-twice"],
)
def test_cli_eval_mixed_up_files(eval_files, args, fragments):
    assert_one_line_error(rankkit("eval", *args, cwd=eval_files), *fragments)


def test_cli_eval_right_order_still_works(eval_files):
    proc = rankkit("eval", "test.txt", "a.scores", cwd=eval_files)
    assert proc.returncode == 0 and b"ndcg@10" in proc.stdout


@pytest.mark.parametrize(
    "text,line,fragment",
    [
        (b"1\n2 3\n", 2, "2 fields where a score file has one number per line: '2 3'"),
        (b"1\nqid:4\n", 2, "LETOR data line"),
        (b"1\n0 qid:1 1:0.5\n", 2, "LETOR data line"),
        (b"1\n1 1:0.5 2:1\n", 2, "LETOR data line"),
        (b"1\n7 Q0 doc 1 0.5 tag\n", 2, "TREC run line"),
        (b"1\n\n2\n", 2, "empty line"),
        (b"1\n1_000\n", 2, "score '1_000' is not a number"),
        (b"1\nnan\n", 2, "score 'nan' is not finite"),
    ],
)
def test_scores_file_is_one_number_per_line(tmp_path, text, line, fragment):
    path = tmp_path / "s"
    path.write_bytes(text)
    with pytest.raises(DataError) as info:
        read_scores(str(path))
    assert info.value.line == line and fragment in info.value.message


# -- 7. docids are bytes: written unchanged whatever the locale --------------------------------------
def test_cli_non_ascii_docids_written_byte_for_byte_in_any_locale(tmp_path, model):
    import subprocess
    import sys

    ids = [b"caf\xc3\xa9", b"na\xefve", b"\xe6\x97\xa5\xe6\x9c\xac", b"plain"]  # UTF-8, latin-1, UTF-8, ASCII
    (tmp_path / "u.txt").write_bytes(b"".join(b"%d qid:7 1:%d 2:1 # docid = %s\n" % (i % 3, i, d)
                                              for i, d in enumerate(ids)))
    locales = {"ascii": {"PYTHONIOENCODING": "ascii", "LC_ALL": "C"},
               "latin-1": {"PYTHONIOENCODING": "latin-1", "LC_ALL": "C"},
               "utf-8": {"PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8"}}

    def predict(fmt, locale, *out):
        proc = subprocess.run([sys.executable, "-m", "rankkit", "predict", "--format", fmt, "u.txt", str(model), *out],
                              cwd=tmp_path, capture_output=True, env=dict(_env(), **locales[locale]), timeout=300)
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
        return proc.stdout

    for fmt, others in (("trec", ["utf-8", "latin-1"]), ("ranked", [])):
        ascii_out = predict(fmt, "ascii")
        assert all(predict(fmt, locale) == ascii_out for locale in others)
        lines = ascii_out.splitlines()[(0 if fmt == "trec" else 1):]  # ranked has a header line
        sep = b" " if fmt == "trec" else b"\t"
        assert sorted(line.split(sep)[2] for line in lines) == sorted(ids)  # the docid column


def test_streamed_file_changed_while_read_is_a_data_error(tmp_path):
    """The --sampler stream reader and the compressed readers go block by block: a file whose size
    changes between the first block and the end is refused too."""
    for name, content, more in (("t.txt", SAMPLE, b"\n"), ("t.txt.gz", gzip.compress(SAMPLE), gzip.compress(b"\n"))):
        path = tmp_path / name
        path.write_bytes(content)
        blocks = line_chunks(str(path), 64)
        next(blocks)
        with open(path, "ab") as fh:
            fh.write(more)
        with pytest.raises(DataError, match=rf"{name}: changed while being read"):
            list(blocks)
