"""The reader's one-scan line parser (parse._fast_line) against its general path, line for line.

parse_svmlight first tries each line with _fast_line (the usual LETOR line: plain decimal label,
`qid:<digits>`, increasing `<index>:<plain decimal>` entries, a comment) and hands any other line
to the general path. A line that starts with a vertical tab is never taken by the fast path, and
the general path skips that tab as white space, so `\\x0b + line` is the general path's reading of
`line` (byte offsets one further): both must give the same rows, values bit for bit, the same
docid spans and the same errors. Lines are drawn from a grammar of valid tokens and their near
misses (signs, long numbers, exponents, upper-case QID, CR LF and lone CR, comments, no final
newline), and the outcomes are counted so that both paths are known to be exercised.
"""

from __future__ import annotations

import random

import numpy as np

import naive_svmlight as naive  # noqa: F401 - the reference the other reader tests use
from rankkit.io import parse as K


def _parse(buf: bytes, zero_based: bool, labels_optional: bool):
    arr = np.frombuffer(buf, dtype=np.uint8)
    n = buf.count(b"\n") + buf.count(b"\r") + 2
    k = buf.count(b":") + 2
    out = (np.full(k, np.nan), np.full(k, -7, np.int32), np.zeros(n + 1, np.int64), np.full(n, np.nan),
           np.full(n, -7, np.int64), np.zeros(n, np.uint8), np.zeros(n, np.int64), np.zeros((n, 2), np.int64),
           np.zeros((n + k, 4), np.int64), np.zeros(5, np.int64))
    rows, nnz, ns = K.parse_svmlight(arr, zero_based, labels_optional, *out)
    data, indices, indptr, y, qid, flags, line_no, docspan, slow, status = out
    return dict(rows=rows, nnz=nnz, ns=ns, data=data[:nnz].view(np.int64).copy(), indices=indices[:nnz].copy(),
                indptr=indptr[: rows + 1].copy(), y=y[:rows].view(np.int64).copy(), qid=qid[:rows].copy(),
                flags=flags[:rows].copy(), line_no=line_no[:rows].copy(), docspan=docspan[:rows].copy(),
                slow=slow[:ns].copy(), status=status.copy())


def _number(rng: random.Random) -> bytes:
    if rng.random() < 0.85:  # the usual: what LETOR files hold
        return rng.choice([b"", b"", b"", b"-"]) + rng.choice([b"0", b"1", b"3", b"12"]) + rng.choice(
            [b"", b".5", b".000001", b".123456", b".0"])
    sign = rng.choice([b""] * 4 + [b"-", b"+"])
    whole = rng.choice([b"0", b"1", b"", b"007", b"123456789012", b"9007199254740993", b"12345678901234567"])
    frac = rng.choice([b"", b".25", b".", b".1234567890123456789", b".12"])
    tail = rng.choice([b""] * 6 + [b"e3", b"E-2", b"x", b":"])
    return sign + whole + frac + tail


def _line(rng: random.Random) -> bytes:
    lead = rng.choice([b""] * 10 + [b" ", b"\t", b"  "])
    label = rng.choice([_number(rng)] * 30 + [b"2", b"0", b"nan", b"inf", b"", b"1:0.5"])
    toks = [label]
    if rng.random() < 0.9:
        toks.append(rng.choice([b"qid:7", b"qid:123", b"qid:0", b"qid:007"] * 15
                               + [b"QID:7", b"qid:", b"qid:-3", b"qid:+3", b"qid:9223372036854775807",
                                  b"qid:123456789012345678", b"qid:1234567890123456789", b"qid:x", b"qid:5:1"]))
    idx = 0
    for _ in range(rng.randint(0, 6)):
        idx += rng.choice([1, 1, 2, 5]) if rng.random() < 0.98 else rng.choice([0, -1])
        if rng.random() < 0.01:
            idx = rng.choice([999999999, 1000000000, 2147483647, 2147483648])
        width = rng.choice([0] * 30 + [3, 10])
        digits = str(max(idx, 0)).encode()
        toks.append(digits.rjust(max(width, len(digits)), b"0") + b":" + _number(rng))
    if rng.random() < 0.01:
        toks.append(rng.choice([b"x:1", b":", b"5", b"qid:3"]))
    sep = rng.choice([b" "] * 6 + [b"\t", b"  ", b" \t"])
    end = rng.choice([b"\n"] * 6 + [b"\r\n", b"\r", b" \n", b"\t\n", b"#c:1\n", b" # docid = d-1 x\n",
                                    b"#docid:GX0\n", b"# docid =\n", b"#\r\n"])
    return lead + sep.join(toks) + end


def test_fast_line_equals_the_general_path():
    rng = random.Random(2026)
    taken = {"fast": 0, "general": 0, "error": 0}
    for case in range(3000):
        lines = [_line(rng) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.2:
            lines.append(rng.choice([b" \n", b"# only a comment\n", b"\t\n"]))  # (not "\n": after a lone CR it would join it)
            rng.shuffle(lines)
        if rng.random() < 0.2:
            lines[-1] = lines[-1].rstrip(b"\r\n")
        zero_based, labels_optional = rng.random() < 0.3, rng.random() < 0.2
        text = b"".join(lines)
        forced = b"".join(b"\x0b" + ln for ln in lines)
        a = _parse(text, zero_based, labels_optional)
        b = _parse(forced, zero_based, labels_optional)
        where = (case, text, zero_based, labels_optional)
        assert a["status"][0] == b["status"][0], (where, a["status"], b["status"])
        if a["status"][0] != K.OK:  # (status[1:] is scratch on success)
            assert a["status"][1] == b["status"][1] and a["status"][4] == b["status"][4], (where, a["status"], b["status"])
        for key in ("rows", "nnz", "ns", "data", "indices", "indptr", "y", "qid", "flags", "line_no"):
            assert np.array_equal(a[key], b[key]), (where, key, a[key], b[key])
        # byte offsets: the forced copy has one more byte before each line
        line_starts = np.cumsum([0] + [len(ln) for ln in lines])
        for r in range(a["rows"]):
            ln = int(a["line_no"][r]) - 1
            if a["docspan"][r, 0] < 0:
                assert (b["docspan"][r] == -1).all(), where
            else:
                assert np.array_equal(b["docspan"][r] - (ln + 1), a["docspan"][r]), (where, r)
            assert 0 <= ln < len(lines)
        if a["status"][0] != K.OK:
            taken["error"] += 1
            ln = int(a["status"][1]) - 1
            assert a["status"][2] + ln + 1 == b["status"][2] and a["status"][3] + ln + 1 == b["status"][3], where
            assert line_starts[ln] <= a["status"][2] <= line_starts[ln + 1], where
        fast = sum(1 for ln in lines if _fast_ok(ln, zero_based))
        taken["fast"] += fast
        taken["general"] += len(lines) - fast
    assert taken["fast"] > 2000 and taken["general"] > 2000 and taken["error"] > 600, taken


def _fast_ok(line: bytes, zero_based: bool) -> bool:
    arr = np.frombuffer(line, dtype=np.uint8)
    k = line.count(b":") + 1
    ok, *_ = K._fast_line(arr, 0, arr.shape[0], zero_based, np.empty(k), np.empty(k, np.int32), 0, K.POW10)
    return bool(ok)


def test_fast_line_takes_the_usual_letor_line():
    """The lines of LETOR files (MQ2008's and svm_rank's shapes) are the fast path's: if they were
    not, the speed-up would silently be gone."""
    for line in (b"2 qid:10032 1:0.056537 2:0.000000 46:0.076923 #docid = GX029-35-5894638 inc = 1 prob = 0.0246\n",
                 b"0 qid:1 1:1 3:0.5 7:-0.25\n", b"1 qid:3 1:0.1 2:0.2", b"3 qid:9 5:1.5 # d\r\n",
                 b"0\tqid:1\t1:0.5\n", b"-1 1:0.5 2:1\n"):
        assert _fast_ok(line, False), line
    for line in (b"2 QID:1 1:0.5\n", b"1e0 qid:1 1:0.5\n", b"1 qid:1 1:5e-3\n", b"1 qid:1 2:0.5 1:0.5\n",
                 b"\n", b"# c\n", b"1 qid:1 0:0.5\n", b"1 qid:1 1:0.12345678901234567890\n", b"1 qid:1 1:nan\n"):
        assert not _fast_ok(line, False), line


def _count_reference(buf: bytes, s: int, e: int, labels_optional: bool):
    """parse._count_fast's rule, byte by byte in Python: rows are lines with content before any
    '#'; non-zeros the ':' in that content, less one for a `qid:` token right after the label (the
    first token, on an unlabelled line); newlines LF, CR LF or a lone CR."""
    rows = nnz = newlines = 0
    pos = s
    space = b" \t\x0b\x0c"
    while pos < e:
        i = pos
        while i < e and buf[i] in space:
            i += 1
        if i < e and buf[i] not in b"\n\r#":
            rows += 1
            j, label_colons = i, 0
            while j < e and buf[j] not in space + b"\n\r#":
                label_colons += buf[j] == 58
                j += 1
            k = i if (labels_optional and label_colons) else j
            while k < e and buf[k] in space:
                k += 1
            if k + 3 < e and buf[k + 3] == 58 and buf[k:k + 3].lower() == b"qid":
                nnz -= 1
            while k < e and buf[k] not in b"\n\r#":
                nnz += buf[k] == 58
                k += 1
            i = k
        while i < e and buf[i] not in b"\n\r":
            i += 1
        if i < e:
            newlines += 1
            if buf[i] == 13 and i + 1 < e and buf[i + 1] == 10:
                i += 1
        pos = i + 1
    return rows, nnz, newlines


def test_the_counting_pass_equals_a_byte_by_byte_count():
    """The counting pass reads eight bytes at a time between line ends: on random bytes of the
    characters that matter (':', '#', CR, LF, spaces, 'qid'), at any start and end (any alignment
    of its words), in read-only and writable buffers, its counts are those of the rule byte by byte."""
    rng = random.Random(5)
    alphabet = b"::::::0123456789 .\t\n\r#qidQ\x0b;\"\x0c"  # with the neighbours of the bytes looked for
    for case in range(400):
        n = rng.choice([0, 1, 7, 8, 9, 15, 16, 17, 40, 200])
        text = bytes(rng.choice(alphabet) for _ in range(n))
        if rng.random() < 0.5:  # long runs of content: the word loop
            text = text + b"1 qid:3 " + b" ".join(b"%d:0.5" % j for j in range(1, rng.randint(2, 30))) + text
        s = rng.randint(0, min(9, len(text)))
        e = rng.randint(s, len(text))
        labels_optional = rng.random() < 0.3
        arr = np.frombuffer(text, dtype=np.uint8)
        for buf in (arr, arr.copy()):
            assert K._count_fast(buf, s, e, labels_optional) == _count_reference(text, s, e, labels_optional), (
                case, text, s, e, labels_optional)
