"""Fuzz the SVMlight/LETOR reader: random mutations of real files (byte flips, tricky insertions,
deletions, truncations, duplicated and swapped lines). parse_bytes must either raise DataError or
return exactly what the naive reference reader (tests/naive_svmlight.py) reads, values bit for bit;
never another exception, never a crash. Part of the cases go through the parallel chunked path.

RANKKIT_FUZZ_CASES sets the number of cases (seeded, reproducible; `make fuzz` sets ~50000).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest

import naive_svmlight as naive
from rankkit.errors import DataError
from rankkit.io import svmlight as S
from tests.test_cli import SAMPLE_TRAIN

CASES = int(os.environ.get("RANKKIT_FUZZ_CASES", "1000"))
SHARED = [Path("/work/shared/data"), Path(__file__).resolve().parents[2] / "shared" / "data"]
REAL_FILES = ["MQ2008/Fold1/train.txt", "LightGBM-lambdarank/rank.train", "LightGBM-lambdarank/rank.train.qid.txt",
              "MSLR-WEB-sample/search_tiny_train.txt"]

TRICKY = [b":", b"#", b"\r", b"\n", b"\r\n", b"\0", b" ", b"\t", b"\x0b", b"nan", b"-inf", b"Infinity", b"1e400",
          b"1e-400", b"1e308", b"99999999999999999999", b"2147483647", b"2147483648", b"2147483646", b"0", b"-0",
          b"-", b"+", b".", b"e", b"E5", b"qid:", b"QID:7", b"qid:-3", b"qid:9223372036854775808", b"NULL",
          b"# docid = x", b"docid:", b"\xff", b"\xc3\xa9", b"0.1234567890123456789", b"1_0", b"0x1F", b"1:1", b"3:"]


def _sample_lines(path: Path, limit: int) -> list[bytes]:
    with open(path, "rb") as fh:
        return [fh.readline() for _ in range(limit)]


def corpora() -> dict[str, list[bytes]]:
    out = {"sample": _sample_lines(SAMPLE_TRAIN, 100)}
    for root in SHARED:
        if root.is_dir():
            for rel in REAL_FILES:
                if (root / rel).is_file():
                    out[rel] = [ln for ln in _sample_lines(root / rel, 300) if ln]
            break
    return out


def mutate(text: bytes, lines: list[bytes], rng: random.Random) -> bytes:
    b = bytearray(text)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(8)
        at = rng.randint(0, len(b))
        if kind == 0 and b:  # flip a byte
            b[min(at, len(b) - 1)] = rng.randrange(256)
        elif kind in (1, 2):  # insert a tricky token
            b[at:at] = rng.choice(TRICKY)
        elif kind == 3 and b:  # delete a span
            del b[at : at + rng.randint(1, 12)]
        elif kind == 4:  # truncate
            del b[at:]
        elif kind == 5 and lines:  # duplicate a line (its qid may now come back)
            b[at:at] = rng.choice(lines)
        elif kind == 6:  # replace a digit run by a huge or tiny one
            b[at:at] = rng.choice([b"1e308", b"4.9e-324", b"123456789012345678901234567890", b"0." + b"0" * 30 + b"1"])
        else:  # change the line endings
            b = bytearray(bytes(b).replace(b"\n", rng.choice([b"\r", b"\r\n", b"\n\n", b" \r"])))
    return bytes(b)


def check_against_reference(text: bytes, zero_based: bool, labels_optional: bool = False) -> str:
    buf = np.frombuffer(text, dtype=np.uint8).copy()
    try:
        ds = S.parse_bytes(buf, "f", zero_based=zero_based, labels_optional=labels_optional)
    except DataError as exc:
        assert "\n" not in str(exc)
        try:
            naive.parse(text, zero_based, labels_optional)
        except naive.NaiveError:
            return "error"
        raise AssertionError(f"rankkit refused what the reference reads: {exc}") from None
    try:
        rows, docids = naive.parse(text, zero_based, labels_optional)
    except naive.NaiveError as exc:
        raise AssertionError(f"rankkit read what the reference refuses ({exc})") from None
    # structural invariants
    n = len(rows)
    assert ds.n_rows == n and ds.indptr[0] == 0 and ds.indptr[-1] == ds.nnz
    assert np.all(np.diff(ds.indptr) >= 0) and ds.qptr[0] == 0 and ds.qptr[-1] == n
    assert np.all(np.diff(ds.qptr) > 0) and np.isfinite(ds.data).all() and np.isfinite(ds.y).all()
    for r in range(n):
        cols = ds.indices[ds.indptr[r] : ds.indptr[r + 1]]
        assert np.all(np.diff(cols) > 0)
    if ds.nnz:
        assert 0 <= ds.indices.min() and ds.indices.max() < ds.n_features <= 2**31 - 1
    # the same numbers, bit for bit
    assert ds.y.tobytes() == np.array([r[0] for r in rows], dtype=np.float64).tobytes()
    assert ds.line.tolist() == [r[3] for r in rows]
    labelled = [r[4] for r in rows]
    assert (ds.labelled is None and all(labelled)) or ds.labelled.tolist() == labelled
    qids = [0 if r[1] is None else r[1] for r in rows]
    assert ds.qid.tolist() == qids and ds.has_qid == (rows[0][1] is not None)
    feats = [f for r in rows for f in r[2]]
    assert ds.indices.tolist() == [i for i, _ in feats]
    assert ds.data.tobytes() == np.array([v for _, v in feats], dtype=np.float64).tobytes()
    assert np.diff(ds.indptr).tolist() == [len(r[2]) for r in rows]
    got = [None if d is None else d.encode("utf-8", "surrogateescape") for d in _raw_docids(ds)]
    assert got == docids
    return "ok"


def _raw_docids(ds):
    if ds.docid_spans is None:
        return [None] * ds.n_rows
    return [ds.docid_buf[s:e].decode("utf-8", "surrogateescape") if s >= 0 else None
            for s, e in ds.docid_spans.tolist()]


def test_reference_reader_agrees_on_the_bundled_sample():
    text = b"".join(_sample_lines(SAMPLE_TRAIN, 100))
    assert check_against_reference(text, False) == "ok"


@pytest.mark.fuzz
def test_fuzz_reader_against_reference(monkeypatch):
    from rankkit import threads as T

    threads = T.count()
    rng = random.Random(20261123)
    sources = corpora()
    names = sorted(sources)
    outcomes = {"ok": 0, "error": 0}
    chunked = 0
    for case in range(CASES):
        lines = sources[names[case % len(names)]]
        start = rng.randrange(len(lines))
        piece = lines[start : start + rng.randint(1, 12)]
        text = mutate(b"".join(piece), lines, rng)
        zero_based = rng.random() < 0.2
        labels_optional = rng.random() < 0.2  # as rankkit predict reads
        if labels_optional and rng.random() < 0.5:  # drop some labels
            text = b"\n".join(ln.split(b" ", 1)[-1] if rng.random() < 0.5 else ln for ln in text.split(b"\n"))
        # a quarter of the cases through the chunked path: many small chunks, boundaries at every
        # kind of line end; most on one thread (the chunk logic; starting a parallel region on a
        # loaded 2-core machine costs ~40 ms), every tenth of them on all threads
        parallel = case % 4 == 3
        monkeypatch.setattr(S, "PARALLEL_MIN_BYTES", rng.randint(16, 256) if parallel else 4 << 20)
        chunked += parallel and S._n_chunks(len(text)) > 1
        try:
            with T.limited(threads if not parallel or case % 40 == 39 else 1):
                outcomes[check_against_reference(text, zero_based, labels_optional)] += 1
        except AssertionError as exc:
            raise AssertionError(f"case {case} (zero_based={zero_based}, labels_optional={labels_optional}, "
                                 f"parallel={parallel}): {text!r}\n{exc}") from None
    # the mutations must leave both kinds of outcome well represented, and the chunked path used
    assert outcomes["ok"] > CASES // 10 and outcomes["error"] > CASES // 10, outcomes
    assert chunked > CASES // 8


def _random_value(rng: random.Random) -> bytes:
    """Decimal literals around the one-scan path's limits (18 significant digits, 22 decimals,
    2^53, leading zeros, signs, empty parts), and a few it leaves to the general parser."""
    sign = rng.choice([b"", b"", b"", b"", b"-", b"+"])
    lead = b"0" * rng.choice([0, 0, 1, 3, 25])
    intpart = b"".join(rng.choice(b"0123456789").to_bytes(1, "big") for _ in range(rng.choice([0, 1, 1, 2, 9, 16, 17, 18, 19, 20])))
    frac = b""
    if rng.random() < 0.8:
        frac = b"." + b"0" * rng.choice([0, 0, 5, 21, 22, 23]) + b"".join(
            rng.choice(b"0123456789").to_bytes(1, "big") for _ in range(rng.choice([1, 1, 6, 12, 17, 18, 19, 0])))
    tail = rng.choice([b""] * 60 + [b"e3", b"E-2", b"x", b":", b"."])
    return sign + lead + intpart + frac + tail


def test_one_scan_feature_tokens_agree_with_the_reference():
    """Feature tokens that the reader's one-scan path parses, and their neighbours it must hand to
    the general parser, read bit for bit as the reference reads them (or refused by both)."""
    rng = random.Random(11)
    outcomes = {"ok": 0, "error": 0}
    for case in range(300):
        lines = []
        for _ in range(rng.randint(1, 3)):
            toks, idx = [b"1", b"qid:3"], 0
            for _ in range(rng.randint(0, 8)):
                idx += rng.choice([1, 1, 2, 7]) if rng.random() < 0.99 else rng.choice([0, -1])
                if rng.random() < 0.01:  # the largest indices, and beyond
                    idx = rng.choice([999999999, 2147483646, 2147483647, 2147483648, 99999999999])
                digits = str(max(idx, 0)).encode()
                width = rng.choice([0, 0, 0, 2, 10])
                toks.append(digits.rjust(max(width, len(digits)), b"0") + b":" + _random_value(rng))
            sep = rng.choice([b" ", b" ", b"\t", b" \x0b "])
            lines.append(sep.join(toks) + rng.choice([b"\n", b"\r\n", b" \n", b"#c:1\n", b" # docid = d\n"]))
        text = b"".join(lines)
        if rng.random() < 0.3:
            text = text.rstrip(b"\r\n")
        outcomes[check_against_reference(text, zero_based=rng.random() < 0.3)] += 1
    assert outcomes["ok"] > 100 and outcomes["error"] > 30, outcomes
