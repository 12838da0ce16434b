"""A naive, obviously-correct SVMlight/LETOR reader written from the grammar in
rankkit/io/svmlight.py's docstring: plain Python on bytes, no numpy in the parsing.

    <label> [qid:<int>] <index>:<value> ... [# comment, e.g. docid = X]

A line ends at LF, CR LF or a lone CR; white space is space, tab, CR, VT and FF; the content of a
line ends at its first '#'. Numbers are decimal literals ([+-] digits [. digits] [e [+-] digits]),
converted with Python's correctly rounded float(); nan, inf and overflowing literals are errors.
Feature indices are unsigned decimal integers, strictly increasing along a line, 1-based unless
zero_based; the stored 0-based index must be at most 2^31 - 2 (n_features fits int32). A qid is
[+-] digits with |qid| <= 2^63 - 1, only as the token right after the label. Every line has a qid
or none does; a query's lines are contiguous.

With labels_optional (rankkit predict), a line whose first token has a ':' has no label (0).

`parse(text, zero_based, labels_optional)` returns (rows, docids) with rows = [(label, qid or
None, [(index, value), ...], line, labelled)] or raises NaiveError(line or None, what).
"""

from __future__ import annotations

import re

MAX_QID = 2**63 - 1
MAX_INDEX = 2**31 - 1  # one-based; zero-based files may go to 2^31 - 2
SPACE = b" \t\r\x0b\x0c"
_NUMBER = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_QID = re.compile(rb"[+-]?[0-9]+\Z")
_UINT = re.compile(rb"[0-9]+\Z")


class NaiveError(Exception):
    def __init__(self, line, what):
        super().__init__(f"{line}: {what}")
        self.line, self.what = line, what


def lines_of(text: bytes) -> list[bytes]:
    """Lines split at LF, CR LF and lone CR (what bytes.splitlines does, spelled out)."""
    out, start, i, n = [], 0, 0, len(text)
    while i < n:
        c = text[i : i + 1]
        if c == b"\n" or c == b"\r":
            out.append(text[start:i])
            i += 2 if text[i : i + 2] == b"\r\n" else 1
            start = i
        else:
            i += 1
    if start < n:
        out.append(text[start:])
    return out


def tokens_of(content: bytes) -> list[bytes]:
    toks, cur = [], b""
    for b in content:
        ch = bytes([b])
        if ch in SPACE:
            if cur:
                toks.append(cur)
            cur = b""
        else:
            cur += ch
    if cur:
        toks.append(cur)
    return toks


def number(token: bytes, line: int, what: str) -> float:
    if not _NUMBER.match(token):
        raise NaiveError(line, f"{what} is not a number")
    value = float(token)
    if value != value or value in (float("inf"), float("-inf")):
        raise NaiveError(line, f"{what} is not finite")
    return value


def docid_of(comment: bytes):
    at = comment.lower().find(b"docid")
    if at < 0:
        return None
    rest = comment[at + 5 :].lstrip(SPACE)
    if not rest or rest[:1] not in (b"=", b":"):
        return None
    rest = rest[1:].lstrip(SPACE)
    token = tokens_of(rest)
    return token[0] if token and rest[:1] not in SPACE else None


def parse(text: bytes, zero_based: bool = False, labels_optional: bool = False):
    rows, docids = [], []
    max_index = MAX_INDEX - 1 if zero_based else MAX_INDEX
    for line_no, line in enumerate(lines_of(text), start=1):
        hash_at = line.find(b"#")
        content = line if hash_at < 0 else line[:hash_at]
        toks = tokens_of(content)
        if not toks:
            continue
        labelled = not (labels_optional and b":" in toks[0])  # predict: a line may start at qid:/features
        label = number(toks[0], line_no, "label") if labelled else 0.0
        qid, feats, prev = None, [], -1
        for pos, tok in enumerate(toks[1:] if labelled else toks):
            if b":" not in tok:
                raise NaiveError(line_no, "missing ':'")
            head, value = tok.split(b":", 1)
            if pos == 0 and head.lower() == b"qid":
                if not _QID.match(value) or abs(int(value)) > MAX_QID:
                    raise NaiveError(line_no, "bad qid")
                qid = int(value)
                continue
            if not _UINT.match(head):
                raise NaiveError(line_no, "bad index")
            index = int(head)
            if index > max_index:
                raise NaiveError(line_no, "index too large")
            if not zero_based:
                if index == 0:
                    raise NaiveError(line_no, "index 0")
                index -= 1
            if index <= prev:
                raise NaiveError(line_no, "not increasing")
            prev = index
            feats.append((index, number(value, line_no, "value")))
        rows.append((label, qid, feats, line_no, labelled))
        docids.append(None if hash_at < 0 else docid_of(line[hash_at + 1 :]))
    if not rows:
        raise NaiveError(None, "no data lines")
    with_qid = [r[1] is not None for r in rows]
    if any(with_qid) and not all(with_qid):
        raise NaiveError(None, "some lines have a qid, some not")
    seen, last = set(), object()
    for r in rows:
        if r[1] != last:
            if r[1] in seen:
                raise NaiveError(r[3], "qid comes back")
            seen.add(r[1])
            last = r[1]
    return rows, docids
