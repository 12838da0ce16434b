"""The block-streaming reader (large plain files, read once in blocks: each counted, then parsed
into arrays that grow with the file) gives exactly what the whole-buffer reader gives, errors
included, and notices a file that changes while it is read. Thresholds are lowered so that small files take the streaming path with many
blocks and chunks."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import rankkit.io.svmlight as S
from rankkit.errors import DataError
from rankkit.io.svmlight import parse_bytes, read_svmlight
from tests.test_cli import SAMPLE_TRAIN

BASE = b"".join(SAMPLE_TRAIN.read_bytes().splitlines(keepends=True)[:300])
KEYS = ("data", "indices", "indptr", "y", "qid", "qptr", "line")


def _variants():
    lines = BASE.splitlines(keepends=True)
    yield "sample", BASE
    yield "crlf", BASE.replace(b"\n", b"\r\n")
    yield "lone-cr", BASE.replace(b"\n", b"\r")
    mixed = []
    for i, line in enumerate(lines):
        if i % 7 == 0:
            mixed.append(b"# a comment line: 1:2 qid:3\n\n   \n")
        if i % 5 == 0:  # 17-digit values: the slow (Python float) path
            line = re.sub(rb" 1:[^ ]+", b" 1:0.12345678901234567", line, count=1)
        mixed.append(line.rstrip(b"\n") + (b" # docid = D%d x\n" % i if i % 3 == 0 else b"\n"))
    yield "comments-docids-slow", b"".join(mixed)
    yield "no-final-newline", BASE.rstrip(b"\n")


def _stream(monkeypatch, block):
    monkeypatch.setattr(S, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(S, "STREAM_BLOCK_BYTES", block)
    monkeypatch.setattr(S, "PARALLEL_MIN_BYTES", 64)


def _same(a, b):
    for k in KEYS:
        x, z = getattr(a, k), getattr(b, k)
        assert (x is None and z is None) or np.array_equal(x, z), k
    assert a.docids() == b.docids()
    assert (a.n_features, a.has_qid) == (b.n_features, b.has_qid)


@pytest.mark.parametrize("block", [97, 1000, 1 << 20])
def test_streaming_equals_whole_buffer(tmp_path, monkeypatch, block):
    for name, text in _variants():
        path = tmp_path / f"{name}.txt"
        path.write_bytes(text)
        whole = parse_bytes(np.frombuffer(text, dtype=np.uint8), str(path))
        _stream(monkeypatch, block)
        assert S._read_streaming(str(path), str(path), False, False) is not None  # the streaming path is taken
        _same(whole, read_svmlight(str(path)))
        monkeypatch.undo()


def test_streaming_reports_the_same_first_error(tmp_path, monkeypatch):
    lines = BASE.splitlines(keepends=True)
    for bad in (b"1 qid:1 3:0.5 2:1\n", b"x qid:1 1:1\n", b"1 qid:1 1:nan\n", b"1 qid:1 1:2:3\n", b"1 qid:1 4\n"):
        text = b"".join(lines[:200] + [bad] + lines[200:])
        path = tmp_path / "bad.txt"
        path.write_bytes(text)
        with pytest.raises(DataError) as whole:
            parse_bytes(np.frombuffer(text, dtype=np.uint8), str(path))
        _stream(monkeypatch, 500)
        with pytest.raises(DataError) as streamed:
            read_svmlight(str(path))
        monkeypatch.undo()
        assert str(streamed.value) == str(whole.value)
        assert ":201:" in str(streamed.value)


def _change_after_counting(monkeypatch, change):
    original = S._count_block
    calls = []

    def counting(view, labels_optional, *rest):
        calls.append(1)
        out = original(view, labels_optional, *rest)
        if len(calls) == 1:
            change()
        return out

    monkeypatch.setattr(S, "_count_block", counting)


def test_file_truncated_between_passes(tmp_path, monkeypatch):
    path = tmp_path / "t.txt"
    path.write_bytes(BASE)
    _stream(monkeypatch, 1000)
    _change_after_counting(monkeypatch, lambda: path.write_bytes(BASE[:500]))
    with pytest.raises(DataError, match=r"t\.txt: changed while being read"):
        read_svmlight(str(path))


def test_more_values_than_counted_is_caught_not_written(tmp_path, monkeypatch):
    """Same size, more tokens in the second pass: the parser stops at its counted capacity."""
    text = b"1 qid:1 1:0.5 #abcdefgh\n" * 40
    path = tmp_path / "t.txt"
    path.write_bytes(text)
    _stream(monkeypatch, 1 << 20)
    _change_after_counting(monkeypatch, lambda: path.write_bytes(text.replace(b"#abcdefgh", b"2:1 3:1.0")))
    with pytest.raises(DataError, match=r"t\.txt: changed while being read"):
        read_svmlight(str(path))


def test_each_byte_is_read_once(tmp_path, monkeypatch):
    """One pass (issue 39): no counting pass over the whole file before the parse reads it again."""
    path = tmp_path / "t.txt"
    path.write_bytes(BASE)
    _stream(monkeypatch, 1000)
    original, read = S._read_at, []

    def reading(fd, buf, offset, length, size, name):
        read.append((offset, length))
        return original(fd, buf, offset, length, size, name)

    monkeypatch.setattr(S, "_read_at", reading)
    ds = read_svmlight(str(path), narrow_indices=True, narrow_values=True)
    offsets = [offset for offset, _ in read]
    assert len(read) > 10 and offsets == sorted(set(offsets))  # forwards only (a block's cut tail is its next one's head)
    assert max(o + n for o, n in read) == len(BASE) and ds.n_rows == 300


def _denser_towards_the_end() -> bytes:
    """Lines with long comments, then short ones (rows per byte grow ~20x), docids only in the
    middle: the arrays outgrow the room the first blocks predicted, and docid spans start late."""
    lines = BASE.splitlines(keepends=True)
    out = []
    for i, line in enumerate(lines):
        head = line.split(b"#")[0].rstrip()
        if i < 100:
            out.append(head + b" # " + b"x" * 400 + b"\n")
        elif i < 150:
            out.append(head + b" # docid = D%d\n" % i)
        else:
            out.append(b" ".join(head.split()[:4]) + b"\n")  # label, qid, two features
    return b"".join(out) + b"".join(b"%d qid:%d 1:0.5 2:%d\n" % (i % 3, 900 + i // 10, i) for i in range(3000))


@pytest.mark.parametrize("block", [97, 1000, 4096])
def test_streaming_a_file_denser_towards_its_end(tmp_path, monkeypatch, block):
    text = _denser_towards_the_end()
    path = tmp_path / "t.txt"
    path.write_bytes(text)
    whole = parse_bytes(np.frombuffer(text, dtype=np.uint8), str(path))
    _stream(monkeypatch, block)
    for narrow in (False, True):
        ds = read_svmlight(str(path), narrow_indices=narrow, narrow_values=narrow)
        _same(ds.with_float_values(), whole)
        assert ds.docids()[120] == "D120" and ds.docids()[0] is None and ds.docids()[-1] is None
        for a in (ds.data, ds.indices, ds.indptr, ds.y, ds.qid, ds.line):  # exactly their size, memory of their own
            assert a.base is None or a.base.nbytes == a.nbytes


# -- uint16 column indices (read_svmlight(narrow_indices=True): `rankkit train` with an exact solver) --

def _wide_column(text: bytes, at_line: int, column: int) -> bytes:
    lines = text.splitlines(keepends=True)
    head, sep, comment = lines[at_line].partition(b"#")  # the feature before any comment
    lines[at_line] = head.rstrip() + b" %d:0.25 " % column + sep + comment
    return b"".join(lines)


def _narrow_variants():
    yield "sample", BASE, np.uint16
    yield "comments-docids-slow", dict((n, t) for n, t in _variants())["comments-docids-slow"], np.uint16
    yield "column 65535", _wide_column(BASE, 250, 65536), np.uint16  # 1-based 65536 is column 65535
    yield "column 65536 late", _wide_column(BASE, 250, 65537), np.int32  # widened after narrow blocks
    yield "column 65536 first", _wide_column(BASE, 0, 100000), np.int32


@pytest.mark.parametrize("block", [None, 97, 1000, 1 << 20])
def test_narrow_indices_hold_the_same_columns(tmp_path, monkeypatch, block):
    """Whole-buffer (block None) and streamed reads, in many blocks: uint16 indices while every
    column fits, int32 from the first that does not (before or after narrow blocks), and the same
    dataset as the int32 read in every case."""
    for name, text, dtype in _narrow_variants():
        path = tmp_path / "f.txt"
        path.write_bytes(text)
        if block is not None:
            _stream(monkeypatch, block)
        plain = read_svmlight(str(path))
        narrow = read_svmlight(str(path), narrow_indices=True)
        monkeypatch.undo()
        assert plain.indices.dtype == np.int32 and narrow.indices.dtype == dtype, name
        assert plain.n_features == (100000 if "first" in name else 65537 if "late" in name else 65536 if "65535" in name else 20), name
        _same(plain, narrow)
        assert np.array_equal(plain.csr().toarray(), narrow.csr().toarray()), name


def test_narrow_indices_with_grouped_queries_and_the_same_errors(tmp_path, monkeypatch):
    lines = BASE.splitlines(keepends=True)
    scattered = b"".join(lines[150:] + lines[:150])  # qids seen again: --group-queries gathers them
    path = tmp_path / "g.txt"
    path.write_bytes(scattered)
    for block in (None, 500):
        if block is not None:
            _stream(monkeypatch, block)
        _same(read_svmlight(str(path), group_queries=True),
              read_svmlight(str(path), group_queries=True, narrow_indices=True))
        monkeypatch.undo()
    text = b"".join(lines[:200] + [b"1 qid:1 1:nan\n"] + lines[200:])
    path.write_bytes(text)
    with pytest.raises(DataError) as plain:
        read_svmlight(str(path))
    _stream(monkeypatch, 500)
    with pytest.raises(DataError) as narrow:
        read_svmlight(str(path), narrow_indices=True)
    assert str(plain.value) == str(narrow.value) and ":201:" in str(narrow.value)


@pytest.mark.parametrize("nnz", [0, 1, 7, (1 << 20) - 1, (1 << 20) + 3, 3 * (1 << 20)])
def test_narrow_in_place_gives_back_half_the_memory(nnz):
    rng = np.random.default_rng(nnz)
    values = rng.integers(0, 1 << 16, nnz).astype(np.int32)
    if nnz:
        values[-1] = 65535
    indices = values.copy()
    narrow = S._narrow_in_place(indices)
    assert narrow.dtype == np.uint16 and np.array_equal(narrow, values)
    if nnz:
        assert narrow.base.nbytes == 4 * ((nnz + 1) // 2)  # the int32 array was cut to half its bytes


# -- FileDigest(later=True): the file hashed after its parse (`rankkit train` with a stochastic solver) --

def test_later_digest_is_the_files_sha256_and_waits_for_it(tmp_path, monkeypatch):
    import hashlib

    path = tmp_path / "t.txt"
    path.write_bytes(BASE)
    _stream(monkeypatch, 1000)
    monkeypatch.setattr(S, "HASH_BLOCK_BYTES", 777)  # many reads, one short at the end
    now, later = S.FileDigest(), S.FileDigest(later=True)
    _same(read_svmlight(str(path), digest=now), read_svmlight(str(path), digest=later))
    assert later.hexdigest() == now.hexdigest() == hashlib.sha256(BASE).hexdigest()
    assert later.nbytes == now.nbytes == len(BASE)
    monkeypatch.setattr(S, "_background", lambda target, *args: None)  # no thread can be started: hashed at once
    on_this_thread = S.FileDigest(later=True)
    read_svmlight(str(path), digest=on_this_thread)
    assert on_this_thread._pending is None and on_this_thread.hexdigest() == now.hexdigest()


def _hash_held_back(monkeypatch):
    """FileDigest(later=True)'s thread made to start only when the test says so."""
    held = []

    class Held:
        def __init__(self, target, args):
            self.join = lambda: target(*args)

    monkeypatch.setattr(S, "_background", lambda target, *args: held.append(Held(target, args)) or held[-1])
    return held


@pytest.mark.parametrize("change", ["truncate", "rewrite"])
def test_later_digest_of_a_file_changed_after_its_parse_is_an_error(tmp_path, monkeypatch, change):
    """The checksum a model records is of the bytes it was trained on: a file changed between the
    parse and the hash fails it (one line naming the file), it is not hashed as it is now."""
    path = tmp_path / "t.txt"
    path.write_bytes(BASE)
    _stream(monkeypatch, 1000)
    held = _hash_held_back(monkeypatch)
    digest = S.FileDigest(later=True)
    read_svmlight(str(path), digest=digest)
    assert len(held) == 1
    if change == "truncate":
        path.write_bytes(BASE[:500])
    else:  # same size, another modification time
        path.write_bytes(BASE.replace(b"qid:1 ", b"qid:9 ", 1))
        os.utime(path, ns=(0, 10**9))
    with pytest.raises(DataError, match=r"t\.txt: changed while being read"):
        digest.hexdigest()


def test_later_digest_of_an_input_not_read_in_blocks_is_hashed_as_it_is_read(tmp_path, monkeypatch):
    import gzip
    import hashlib

    path = tmp_path / "t.txt.gz"
    path.write_bytes(gzip.compress(BASE))
    _stream(monkeypatch, 1000)
    held = _hash_held_back(monkeypatch)
    digest = S.FileDigest(later=True)
    read_svmlight(str(path), digest=digest)
    assert held == [] and digest.hexdigest() == hashlib.sha256(BASE).hexdigest()


def test_each_block_is_hashed_beside_its_count_and_parse(tmp_path, monkeypatch):
    """`rankkit train` (Newton) hashes each block of a large file on a thread while the block is
    counted and parsed, and waits for it only before the next block is read into the buffer
    (waiting after the count left a core idle while the hash finished). The hash here is taken
    only when it is waited for: the buffer must still hold the block then, or the digest is not
    the file's."""
    import hashlib

    path = tmp_path / "t.txt"
    path.write_bytes(BASE)
    _stream(monkeypatch, 1000)
    events = []
    read_at, parse_chunks = S._read_at, S.K.parse_chunks

    class Deferred:
        def __init__(self, digest, view):
            self.digest, self.view = digest, view
            events.append("hash")

        def join(self):
            events.append("join")
            self.digest.update(memoryview(self.view))

    monkeypatch.setattr(S, "_hash_beside", Deferred)
    monkeypatch.setattr(S, "_read_at", lambda *a: events.append("read") or read_at(*a))
    monkeypatch.setattr(S.K, "parse_chunks", lambda *a: events.append("parse") or parse_chunks(*a))
    digest = S.FileDigest()
    read_svmlight(str(path), digest=digest)
    assert digest.hexdigest() == hashlib.sha256(BASE).hexdigest() and digest.nbytes == len(BASE)
    blocks = events.count("hash")
    assert blocks > 3 and events.count("join") == blocks
    assert events == ["read", "hash", "parse", "join"] * blocks, events
