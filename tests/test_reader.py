"""The SVMlight/LETOR reader (Numba kernel in rankkit/io/parse.py, wrapper in rankkit/io/svmlight.py).

Every number must equal Python's correctly rounded float() bit for bit; every rejected input must
give one `file:line: message` naming the offending token.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from rankkit.data import Dataset
from rankkit.errors import DataError
from rankkit.io import parse as K
from rankkit.io.svmlight import _MESSAGES, parse_bytes, read_svmlight, write_svmlight

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


# -- helpers ------------------------------------------------------------------------------------
def parse(text, **kw) -> Dataset:
    """Parse `text` (str or bytes) as the file `f.txt`, through the same wrapper the CLI uses."""
    raw = text.encode() if isinstance(text, str) else text
    return parse_bytes(np.frombuffer(bytearray(raw), dtype=np.uint8), "f.txt", **kw)


def parse_error(text, **kw) -> DataError:
    with pytest.raises(DataError) as info:
        parse(text, **kw)
    err = info.value
    assert "\n" not in str(err)
    return err


def bits(a) -> np.ndarray:
    """The IEEE bit patterns of a float64 array: equality of these is bit-for-bit equality."""
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def assert_same(a: Dataset, b: Dataset) -> None:
    """Bit-for-bit equal arrays with the documented dtypes."""
    for x in (a, b):
        assert x.data.dtype == np.float64 and x.indices.dtype == np.int32 and x.indptr.dtype == np.int64
        assert x.y.dtype == np.float64 and x.qid.dtype == np.int64 and x.qptr.dtype == np.int64
    np.testing.assert_array_equal(bits(a.data), bits(b.data))
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(bits(a.y), bits(b.y))
    np.testing.assert_array_equal(a.qid, b.qid)
    np.testing.assert_array_equal(a.qptr, b.qptr)
    assert a.n_features == b.n_features
    assert a.docids() == b.docids()


def random_doubles(rng, n) -> np.ndarray:
    """Uniformly random finite bit patterns: every exponent, 17 significant digits, subnormals."""
    out = rng.integers(-(2**63), 2**63 - 1, size=4 * n, dtype=np.int64, endpoint=True).view(np.float64)
    return out[np.isfinite(out)][:n]


def make_random_dataset(seed: int, n_rows: int = 300, n_features: int = 40, with_qid: bool = True) -> Dataset:
    rng = np.random.default_rng(seed)
    special = np.array(
        [1e-300, -1e-300, 1e300, -1e300, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
         0.1, -0.1, 1 / 3, 2**53 + 2.0, 1e15, 1e16, 123456789.12345679, -0.0, 0.0, 1.0, -7.0]
    )
    rows_data, rows_idx = [], []
    for r in range(n_rows):
        k = 0 if r % 9 == 0 else int(rng.integers(1, 12))  # every 9th row is empty
        idx = np.sort(rng.choice(n_features, size=k, replace=False)).astype(np.int32)
        kind = rng.integers(0, 4, size=k)  # normal, special, any bit pattern, small integer
        choices = [rng.standard_normal(k), rng.choice(special, size=k), random_doubles(rng, k), rng.integers(-5, 6, k)]
        vals = np.choose(kind, choices).astype(np.float64)
        rows_idx.append(idx)
        rows_data.append(vals)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum([len(i) for i in rows_idx], out=indptr[1:])
    indices = np.concatenate(rows_idx).astype(np.int32)
    data = np.concatenate(rows_data).astype(np.float64)
    y = rng.integers(0, 5, n_rows).astype(np.float64)
    y[::17] = rng.choice([0.5, -1.0, 1e-300, 123.456, -0.0], size=y[::17].shape[0])
    # contiguous queries, in no particular qid order, with large and negative qids
    sizes = []
    while sum(sizes) < n_rows:
        sizes.append(int(rng.integers(1, 25)))
    sizes[-1] -= sum(sizes) - n_rows
    pool = np.array([-3, 0, 7, 2**62, 10**17 + 3, -(2**40)] + list(range(100, 200)))
    qids = rng.choice(pool, size=len(sizes), replace=False)
    qid = np.repeat(qids, sizes).astype(np.int64) if with_qid else np.zeros(n_rows, dtype=np.int64)
    # docids on some rows only
    docids = [None if r % 4 == 3 else f"D{r}-{int(rng.integers(0, 10**9))}" for r in range(n_rows)]
    spans, buf, pos = np.full((n_rows, 2), -1, dtype=np.int64), b"", 0
    for r, d in enumerate(docids):
        if d is not None:
            spans[r] = (pos, pos + len(d))
            buf += d.encode()
            pos += len(d)
    return Dataset(
        data=data, indices=indices, indptr=indptr, y=y, qid=qid, qptr=K.query_blocks(qid),
        n_features=int(indices.max()) + 1, has_qid=with_qid, docid_spans=spans, docid_buf=buf,
    ).validate()


# -- round trip ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seed,with_qid,zero_based", [(0, True, False), (1, True, True), (2, False, False)])
def test_write_then_read_is_bit_exact(tmp_path, seed, with_qid, zero_based):
    ds = make_random_dataset(seed, with_qid=with_qid)
    path = tmp_path / "rt.txt"
    with open(path, "wb") as fh:
        write_svmlight(fh, ds, zero_based=zero_based)
    back = read_svmlight(str(path), zero_based=zero_based)
    assert_same(ds, back)
    assert back.has_qid == with_qid
    if not with_qid:
        assert back.n_queries == 1
    assert (np.diff(back.indptr) == 0).any()  # empty rows survived
    assert (bits(ds.data) == bits(np.array([-0.0]))[0]).any()  # the sign of -0.0 was exercised


# -- numbers --------------------------------------------------------------------------------------
def _number_literals(rng, n) -> list[str]:
    """Decimal literals in the formats found in the wild (LETOR %.6f, %g, %.17g, ...) and beyond."""
    xs = np.concatenate([rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9, n), random_doubles(rng, n)])
    lits = []
    for x in xs.tolist():
        lits += ["%.6f" % x, "%g" % x, "%.17g" % x, "%e" % x, "%.3E" % x, repr(x), "%.25f" % x]
    for _ in range(n):
        m = "".join(rng.choice(list("0123456789"), size=int(rng.integers(1, 45))))  # up to 44 digits
        p = int(rng.integers(0, len(m) + 1))
        mant = m[:p] + "." + m[p:] if rng.random() < 0.7 else m
        if mant == ".":
            mant = "0."
        e = int(rng.integers(-360, 330))
        sign = str(rng.choice(["", "-", "+"]))
        lits.append(f"{sign}{mant}" + ("" if rng.random() < 0.3 else f"{rng.choice(['e', 'E'])}{e:+d}"))
    ints = rng.integers(-(2**62), 2**62, n)
    lits += [str(i) for i in ints.tolist()] + ["+" + str(abs(i)) for i in ints[:50].tolist()]
    lits += [
        ".5", "5.", "-.5", "+.5", "5.e3", "1E5", "1e22", "1e23", "1e-22", "1e-23", "9007199254740992",
        "9007199254740993", "9007199254740995", "18014398509481985", "123456789012345678", "1234567890123456789",
        "12345678901234567890123", "0.1", "0.000001", "4.9e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
        "2.2250738585072011e-308", "2.2250738585072012e-308", "1.7976931348623157e308", "1.7976931348623158e308",
        "1.00000000000000011102230246251565404236316680908203125",  # halfway 1 and 1 + 2^-52: rounds to even
        "1.00000000000000011102230246251565404236316680908203126",
        "0", "-0", "+0", "0.0", "-0.0", "00000", "000123", "0e0", "0e999999", "-0e-999999", "1e-99999999999",
        "3.14159265358979323846264338327950288419716939937510582097494459", "0.000000000000000000000000001234",
        "100000000000000000000000000000000000000000000", "7e22", "7e-22", "123456789e-22", "8.98846567431158e307",
    ]
    return [s for s in lits if abs(float(s)) != float("inf")]


def test_numbers_equal_python_float_bit_for_bit():
    rng = np.random.default_rng(12345)
    lits = _number_literals(rng, 400)
    # as feature values (many per line: exercises the slow-number positions) and as labels
    per_line = 7
    lines = []
    for s in range(0, len(lits), per_line):
        chunk = lits[s : s + per_line]
        lines.append(f"{chunk[0]} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(chunk)))
    ds = parse("\n".join(lines) + "\n")
    expected = np.array([float(s) for s in lits])
    bad = np.flatnonzero(bits(ds.data) != bits(expected))
    assert bad.size == 0, [(lits[i], ds.data[i], expected[i]) for i in bad[:5]]
    labels = np.array([float(lits[s]) for s in range(0, len(lits), per_line)])
    np.testing.assert_array_equal(bits(ds.y), bits(labels))


# -- file formats and sources ---------------------------------------------------------------------
SAMPLE = (
    "2 qid:7 1:0.5 3:-1.25 # docid = a\n"
    "0 qid:7 2:1e-300\n"
    "1 qid:3 1:3 2:4.000000 3:1e300 # docid = c\n"
)


def test_compressed_inputs(tmp_path):
    plain = parse(SAMPLE)
    for ext, opener in [(".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open), (".GZ", gzip.open)]:
        path = tmp_path / f"train.txt{ext}"
        with opener(path, "wb") as fh:
            fh.write(SAMPLE.encode())
        ds = read_svmlight(str(path))
        assert_same(plain, ds)
        assert ds.source == str(path)


def test_corrupt_compressed_input_is_a_data_error(tmp_path):
    path = tmp_path / "train.txt.gz"
    path.write_bytes(SAMPLE.encode())  # not gzip at all
    with pytest.raises(DataError, match=r"train\.txt\.gz: not a gzip file"):
        read_svmlight(str(path))
    path.write_bytes(gzip.compress(SAMPLE.encode())[:-12])  # truncated
    with pytest.raises(DataError, match=r"train\.txt\.gz: truncated gzip data"):
        read_svmlight(str(path))


def test_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SAMPLE.encode())))
    ds = read_svmlight("-")
    assert_same(parse(SAMPLE), ds)
    assert ds.source == "<stdin>"


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="needs /dev/fd")
def test_pipe_path():
    """`rankkit train <(zcat train.txt.gz) m` hands the reader a pipe, which cannot seek."""
    r, w = os.pipe()
    os.write(w, SAMPLE.encode())
    os.close(w)
    try:
        ds = read_svmlight(f"/dev/fd/{r}")
    finally:
        os.close(r)
    assert_same(parse(SAMPLE), ds)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_svmlight(str(tmp_path / "nope.txt"))
    with pytest.raises(DataError, match="is a directory"):
        read_svmlight(str(tmp_path))


def test_comments_blank_lines_crlf_tabs_trailing_space_no_final_newline():
    text = (
        "# a header comment\r\n"
        "\r\n"
        "2\tqid:1\t1:0.5   3:2\t \r\n"
        "   \n"
        "  # indented comment-only line\n"
        "1 qid:1 2:7 # trailing comment with 9:9 and qid:5 and # more\r\n"
        "\t0  qid:2  1:1.5 \t\n"
        "#\n"
        "3 qid:2 3:-4"  # no final newline
    )
    ds = parse(text)
    assert ds.n_rows == 4
    np.testing.assert_array_equal(ds.y, [2, 1, 0, 3])
    np.testing.assert_array_equal(ds.qid, [1, 1, 2, 2])
    np.testing.assert_array_equal(ds.qptr, [0, 2, 4])
    np.testing.assert_array_equal(ds.indptr, [0, 2, 3, 4, 5])
    np.testing.assert_array_equal(ds.indices, [0, 2, 1, 0, 2])
    np.testing.assert_array_equal(ds.data, [0.5, 2, 7, 1.5, -4])
    np.testing.assert_array_equal(ds.line, [3, 6, 7, 9])
    assert ds.n_features == 3


def test_only_comments_or_empty_is_an_error():
    assert str(parse_error("")) == "f.txt: is empty"
    assert "no data lines" in str(parse_error("# nothing\n\n   \n"))


def test_zero_based():
    ds = parse("1 qid:1 0:1.5 4:2\n", zero_based=True)
    np.testing.assert_array_equal(ds.indices, [0, 4])
    assert ds.n_features == 5
    assert parse_error("1 qid:1 0:1.5 4:2\n").line == 1  # index 0 is an error when 1-based
    err = parse_error("1 qid:1 0:1 3:1 3:2\n", zero_based=True)
    assert "'3'" in err.message and "previous index 3" in err.message


def test_file_without_qid_is_one_query():
    ds = parse("1 1:1\n0 2:1\n2 1:1 2:1\n")
    assert not ds.has_qid
    assert ds.n_queries == 1
    np.testing.assert_array_equal(ds.qptr, [0, 3])


def test_mixed_qid_and_no_qid_is_an_error():
    err = parse_error("1 qid:1 1:1\n\n0 1:1\n")
    assert err.line == 3 and "has no qid but other lines do" in err.message
    err = parse_error("1 1:1\n0 2:1\n0 qid:4 1:1\n")
    assert err.line == 3 and "has a qid but earlier lines do not" in err.message


def test_docids():
    ds = parse(
        "1 qid:1 1:1 # docid = GX008-86-4444840\n"
        "1 qid:1 1:1 #docid = GX1 inc = 1 prob = 0.086622\n"
        "1 qid:1 1:1 # docid=X3\n"
        "1 qid:1 1:1 # docid:X4\r\n"
        "1 qid:1 1:1\n"
        "1 qid:1 1:1 # no id here\n"
    )
    assert ds.docids() == ["GX008-86-4444840", "GX1", "X3", "X4", None, None]
    assert parse("1 qid:1 1:1\n").docids() == [None]


def test_unsorted_contiguous_qids_are_accepted():
    ds = parse("1 qid:50 1:1\n0 qid:50 1:2\n1 qid:3 1:1\n2 qid:900 1:1\n0 qid:900 1:1\n1 qid:-2 1:1\n")
    np.testing.assert_array_equal(ds.qid, [50, 50, 3, 900, 900, -2])
    np.testing.assert_array_equal(ds.qptr, [0, 2, 3, 5, 6])
    assert ds.order is None


SCATTERED = (
    "2 qid:5 1:1\n"      # line 1
    "1 qid:5 1:2\n"      # line 2
    "0 qid:2 1:3\n"      # line 3
    "# comment\n"        # line 4
    "1 qid:5 1:4\n"      # line 5: qid 5 again
    "2 qid:9 1:5\n"      # line 6
    "0 qid:2 1:6 2:6\n"  # line 7
)


def test_reappearing_qid_is_an_error_with_its_line():
    err = parse_error(SCATTERED)
    assert err.line == 5
    assert "qid 5 appears again" in err.message and "first seen at line 1" in err.message
    assert "--group-queries" in err.message


def test_group_queries_gathers_stably_and_order_maps_back():
    ds = parse(SCATTERED, group_queries=True)
    np.testing.assert_array_equal(ds.qid, [5, 5, 5, 2, 2, 9])  # order of first appearance, stable
    np.testing.assert_array_equal(ds.qptr, [0, 3, 5, 6])
    np.testing.assert_array_equal(ds.line, [1, 2, 5, 3, 7, 6])
    np.testing.assert_array_equal(ds.order, [0, 1, 3, 2, 5, 4])
    np.testing.assert_array_equal(ds.data, [1, 2, 4, 3, 6, 6, 5])
    np.testing.assert_array_equal(ds.indptr, [0, 1, 2, 3, 4, 6, 7])
    # scores computed on grouped rows, put back in file order (what predict does)
    scores = ds.data[ds.indptr[:-1]]
    in_file_order = np.empty_like(scores)
    in_file_order[ds.order] = scores
    np.testing.assert_array_equal(in_file_order, [1, 2, 3, 4, 5, 6])


def test_group_queries_large_random_is_stable():
    rng = np.random.default_rng(7)
    n = 2000
    qids = rng.choice([40, -1, 7, 123456789012, 3], size=n)
    ds = parse("".join(f"{r % 3} qid:{q} 1:{r}\n" for r, q in enumerate(qids.tolist())), group_queries=True)
    first_seen = list(dict.fromkeys(qids.tolist()))
    np.testing.assert_array_equal(ds.qid[ds.qptr[:-1]], first_seen)
    np.testing.assert_array_equal(ds.qid, qids[ds.order])
    np.testing.assert_array_equal(ds.data, ds.order.astype(float))  # row r has value r
    np.testing.assert_array_equal(ds.line, ds.order + 1)
    for q in range(ds.n_queries):  # stable: file order inside every query
        assert np.all(np.diff(ds.order[ds.qptr[q] : ds.qptr[q + 1]]) > 0)


def test_labels_optional():
    ds = parse("qid:1 1:0.5 2:1\nqid:1 2:3\n", labels_optional=True)
    np.testing.assert_array_equal(ds.y, [0, 0])
    np.testing.assert_array_equal(ds.data, [0.5, 1, 3])
    ds = parse("1:0.5\n2 2:3\n", labels_optional=True)  # without qid; labels may still be present
    np.testing.assert_array_equal(ds.y, [0, 2])
    np.testing.assert_array_equal(ds.indices, [0, 1])
    assert parse_error("qid:1 1:0.5\n").message.startswith("label 'qid:1'")  # required by default


# -- every error code: message, line, token -----------------------------------------------------
PRE = "1 qid:1 1:1\n# comment\n\r\n"  # two good-looking lines before the bad one on line 4

ERROR_CASES = [
    # (kernel code, bad line, expected token, phrase in the message)
    (K.BAD_LABEL, "abc qid:1 1:1", "abc", "label 'abc' is not a number"),
    (K.BAD_LABEL, "1,5 qid:1 1:1", "1,5", "is not a number"),
    (K.NONFINITE_LABEL, "NaN qid:1 1:1", "NaN", "label 'NaN' is not finite"),
    (K.NONFINITE_LABEL, "-inf qid:1 1:1", "-inf", "is not finite"),
    (K.BAD_QID, "1 qid:abc 1:1", "abc", "qid 'abc' is not an integer"),
    (K.BAD_QID, "1 qid:1.5 1:1", "1.5", "is not an integer"),
    (K.BAD_QID, "1 qid: 1:1", "", "qid '' is not an integer"),
    (K.QID_TOO_LARGE, "1 qid:9500000000000000000 1:1", "9500000000000000000", "too large"),
    (K.MISSING_COLON, "1 qid:1 1:1 0.25", "0.25", "missing ':'"),
    (K.BAD_INDEX, "1 qid:1 abc:1", "abc", "feature index 'abc' is not an integer"),
    (K.BAD_INDEX, "1 qid:1 -3:1", "-3", "is not an integer"),
    (K.BAD_INDEX, "1 qid:1 1:1 qid:2", "qid", "is not an integer"),
    (K.INDEX_ZERO, "1 qid:1 0:1", "0", "1-based"),
    (K.INDEX_TOO_LARGE, "1 qid:1 2147483648:1", "2147483648", "too large"),
    (K.NOT_INCREASING, "1 qid:1 2:1 5:1 3:1", "3", "not greater than the previous index 5"),
    (K.NOT_INCREASING, "1 qid:1 2:1 2:1", "2", "not greater than the previous index 2"),
    (K.BAD_VALUE, "1 qid:1 1:abc", "abc", "feature value 'abc' is not a number"),
    (K.BAD_VALUE, "1 qid:1 1:", "", "feature value '' is not a number"),
    (K.BAD_VALUE, "1 qid:1 1:0x1F", "0x1F", "is not a number"),
    (K.BAD_VALUE, "1 qid:1 1:1e", "1e", "is not a number"),
    (K.BAD_VALUE, "1 qid:1 1:1\x00", "1\\x00", "is not a number"),  # control bytes escaped: one line
    (K.NULL_VALUE, "1 qid:1 1:1 2:NULL", "NULL", "missing value"),
    (K.NONFINITE_VALUE, "1 qid:1 1:nan", "nan", "feature value 'nan' is not finite"),
    (K.NONFINITE_VALUE, "1 qid:1 1:Infinity", "Infinity", "is not finite"),
    (None, "1 qid:1 1:1e400", "1e400", "feature value '1e400' is not finite"),  # overflow: slow path
    (None, "1e999 qid:1 1:1", "1e999", "label '1e999' is not finite"),
]


@pytest.mark.parametrize("code,bad,token,phrase", ERROR_CASES, ids=[c[1] for c in ERROR_CASES])
def test_error_message_names_line_and_token(code, bad, token, phrase):
    err = parse_error(PRE + bad + "\n0 qid:1 1:1\n")
    assert err.line == 4
    assert str(err).startswith("f.txt:4: ")
    assert f"'{token}'" in err.message
    assert phrase in err.message
    if code is not None:  # the kernel reported this code (5 is the previous index where it matters)
        extra = 5 if "index 5" in phrase else 2147483647 if code == K.INDEX_TOO_LARGE else 2
        assert err.message == _MESSAGES[code].format(tok=token, extra=extra)


def test_every_kernel_error_code_is_covered():
    assert {c for c, *_ in ERROR_CASES if c is not None} == set(_MESSAGES)


def test_overflow_line_number_after_empty_rows():
    err = parse_error("1 qid:1 1:1\n2 qid:1\n0 qid:1 1:2 2:1e400\n")
    assert err.line == 3
    err = parse_error("1 qid:1 1:1\n2 qid:1\n3e400 qid:1 1:2\n")
    assert err.line == 3


def test_the_issue_example():
    good = "".join(f"{i % 3} qid:{i // 10} 1:0.5 2:1\n" for i in range(1833))
    err = parse_error(good + "1 qid:999 abc:1\n")
    assert str(err) == "f.txt:1834: feature index 'abc' is not an integer"


# -- real data (../shared/data, when present) -------------------------------------------------
def _shared(rel: str) -> str:
    path = SHARED_DATA / rel
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return str(path)


def test_mq2008_fold1_train():
    ds = read_svmlight(_shared("MQ2008/Fold1/train.txt"))
    assert (ds.n_rows, ds.n_queries, ds.n_features) == (9630, 471, 46)
    assert ds.nnz == 9630 * 46
    assert set(np.unique(ds.y).tolist()) == {0.0, 1.0, 2.0}
    assert ds.n_pairs == 52325
    assert ds.docids()[0].startswith("GX")


def test_lightgbm_rank_train_without_qid():
    ds = read_svmlight(_shared("LightGBM-lambdarank/rank.train"), groups=None)  # rank.train.query ignored
    assert not ds.has_qid
    assert (ds.n_rows, ds.n_queries, ds.n_features) == (3005, 1, 300)
    ds = read_svmlight(_shared("LightGBM-lambdarank/rank.train"))  # found next to it: tests/test_groups.py
    assert (ds.n_rows, ds.n_queries, ds.n_features) == (3005, 201, 300)


def test_mslr_sample_with_trailing_spaces():
    ds = read_svmlight(_shared("MSLR-WEB-sample/search_tiny_train.txt"))
    assert (ds.n_rows, ds.n_queries, ds.n_features) == (582, 7, 136)
    assert ds.data.max() == 11089534.0


# -- the parallel reader (files above PARALLEL_MIN_BYTES) must give exactly the serial result -----
def _parse_both(text: bytes, monkeypatch, **kw):
    import rankkit.io.svmlight as S

    buf = np.frombuffer(text, dtype=np.uint8)
    monkeypatch.setattr(S, "PARALLEL_MIN_BYTES", 1 << 40)
    try:
        serial = parse_bytes(buf, "f.txt", **kw)
    except DataError as exc:
        serial = exc
    monkeypatch.setattr(S, "PARALLEL_MIN_BYTES", 64)  # many small chunks
    assert S._n_chunks(len(text)) > 2
    try:
        parallel = parse_bytes(buf, "f.txt", **kw)
    except DataError as exc:
        parallel = exc
    return serial, parallel


def _assert_same(a, b):
    if isinstance(a, DataError) or isinstance(b, DataError):
        assert str(a) == str(b)
        return
    for k in ("data", "indices", "indptr", "y", "qid", "qptr", "line"):
        x, z = getattr(a, k), getattr(b, k)
        assert x.dtype == z.dtype and np.array_equal(x.view(np.uint8), z.view(np.uint8)), k
    assert a.docids() == b.docids()
    assert a.n_features == b.n_features and a.has_qid == b.has_qid


def _messy_file(seed: int, n_lines: int = 400) -> bytes:
    rng = np.random.default_rng(seed)
    lines = []
    q = 0
    for i in range(n_lines):
        if rng.random() < 0.2:
            q += 1
        kind = rng.random()
        if kind < 0.05:
            lines.append("")  # blank
            continue
        if kind < 0.08:
            lines.append("# a comment line: with colons 1:2")
            continue
        feats = sorted(rng.choice(30, size=rng.integers(0, 8), replace=False) + 1)
        vals = [rng.choice(["0.5", "%.6f" % rng.random(), "%.17g" % rng.standard_normal(), "1e-30", "-7", "3.25E+02"]) for _ in feats]
        body = " ".join(f"{f}:{v}" for f, v in zip(feats, vals))
        comment = rng.choice(["", f" # docid = D{i}", f" #docid = G{i} inc = 1 prob = 0.5"])
        end = rng.choice(["", " ", "\r", "\t "])
        lines.append(f"{rng.integers(0, 3)} qid:{q} {body}{comment}{end}")
    return ("\n".join(lines)).encode()  # no final newline


@pytest.mark.parametrize("seed", range(4))
def test_parallel_reader_equals_serial(seed, monkeypatch):
    text = _messy_file(seed)
    _assert_same(*_parse_both(text, monkeypatch))
    _assert_same(*_parse_both(text, monkeypatch, zero_based=True))


def test_parallel_reader_labels_optional_and_no_qid(monkeypatch):
    text = b"".join(b"qid:%d %d:0.25 %d:1\n" % (i // 7, 1 + i % 5, 6 + i % 3) for i in range(300))
    _assert_same(*_parse_both(text, monkeypatch, labels_optional=True))
    text = b"".join(b"%d %d:0.123456789012345678 7:1e300\n" % (i % 2, 1 + i % 5) for i in range(300))
    _assert_same(*_parse_both(text, monkeypatch))


@pytest.mark.parametrize(
    "bad", ["1 qid:3 4:abc", "1 qid:3 0:1", "x qid:3 1:1", "1 qid:3 5:1 5:2", "1 qid:3 2:NULL", "1 qid:x 1:1", "1 qid:3 1:1e999"]
)
def test_parallel_reader_reports_the_same_first_error(bad, monkeypatch):
    good = [f"{i % 3} qid:{i // 10} 1:0.5 2:{i}" for i in range(300)]
    for where in (5, 150, 299):
        lines = good[:where] + [bad.replace("qid:3", f"qid:{where // 10}")] + good[where:] + [bad]
        serial, parallel = _parse_both("\n".join(lines).encode(), monkeypatch)
        assert isinstance(serial, DataError) and f"f.txt:{where + 1}:" in str(serial)
        _assert_same(serial, parallel)


# -- one decimal kernel (issue 36): the same tokens through every reader path ---------------------------
TOKENS = ["0", "-0", "+0.5", "3.", ".25", "-.75", "0.000001", "6.931275", "0.1", "0.7", "4.35", "1.00000000000000001",
          "123456789012345678", "1234567890123456789", "9007199254740993", "0.000000000000000000123",
          "00000000000000000001.5", "1e5", "1E-5", "-2.5e+3", "-0.0", "22.076928", "0.011976", "1e-320"]


def _bits_of(values):
    return np.asarray(values, dtype=np.float64).view(np.int64).tolist()


def test_every_reader_path_gives_the_double_of_each_decimal(tmp_path):
    """plain_decimal (the fast stage), parse_number (the general stage), the svmlight reader's fast
    line (values and labels), its general path (an upper-case QID sends a line there), trec runs and
    qrels, and score files: each token read by each gives float(token), bit for bit (-0.0 too)."""
    from rankkit.io.output import read_scores
    from rankkit.io.trec import read_qrels, read_trec_run

    want = _bits_of([float(t) for t in TOKENS])
    got = {}
    kernel = []
    for t in TOKENS:
        buf = np.frombuffer(t.encode(), dtype=np.uint8)
        status, v, slow = K.parse_number(buf, 0, buf.shape[0], K.POW10)
        assert status == K.NUM_OK, t
        kernel.append(float(t) if slow else v)  # slow: the reader converts the token with float()
        ok, end, plain = K.plain_decimal(buf, 0, buf.shape[0], K.POW10)
        if ok and end == buf.shape[0]:
            assert _bits_of([plain]) == _bits_of([float(t)]), t
    got["parse_number"] = kernel
    fast = "".join(f"1 qid:1 1:{t}\n" for t in TOKENS)
    general = "".join(f"1 QID:1 1:{t}\n" for t in TOKENS)
    for name, text in (("fast line", fast), ("general path", general)):
        ds = parse(text)
        got[name] = ds.data.tolist()
    labels = "".join(f"{t} qid:{i + 1} 1:1\n" for i, t in enumerate(TOKENS))
    got["labels, fast line"] = parse(labels).y.tolist()
    got["labels, general path"] = parse(labels.replace("qid:", "QID:")).y.tolist()
    run = tmp_path / "run"
    run.write_text("".join(f"1 Q0 d{i} {i + 1} {t} tag\n" for i, t in enumerate(TOKENS)))
    got["trec run"] = read_trec_run(str(run))[2].tolist()
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"1 0 d{i} {t}\n" for i, t in enumerate(TOKENS)))
    got["qrels"] = [rel for docs in read_qrels(str(qrels)).values() for rel in docs.values()]
    scores = tmp_path / "scores"
    scores.write_text("".join(f"{t}\n" for t in TOKENS))
    got["scores"] = read_scores(str(scores)).tolist()
    for name, values in got.items():
        assert _bits_of(values) == want, name
