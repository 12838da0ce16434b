"""Numba kernels that turn the raw bytes of an SVMlight/LETOR file into CSR arrays.

The file is cut at line boundaries into chunks (one for small files); a first pass counts each
chunk's rows and non-zeros (one scan per line: exact for a valid file, never below what the parser
writes), and the second pass parses every chunk straight into its final place in the output
arrays. A large file is read once, in blocks (each counted, then parsed), so that only one block of
its bytes is in memory at a time (rankkit.io.svmlight). The parser takes each line first in one scan
(`_fast_line`: the usual LETOR line, about 2.5x faster than the general path) and hands any other
line, and every error, to the general path, which gives the same result for the lines both take
(tests/test_reader_fast_line.py compares them line for line). Kernels never raise: they stop at the first bad token and return a
status code with the line number and the token's byte span, and the Python wrapper
(`rankkit.io.svmlight`) turns that into a `file:line: message` error.

Numbers: a decimal literal whose significand has at most 18 digits and fits in 2^53, with a
decimal exponent in [-22, 22], is converted exactly (one correctly rounded multiply or divide of
two exact doubles, Clinger's fast path), which covers LETOR's `%.6f` values and integers. Any
other valid literal (e.g. 17-digit `%.17g` output) is flagged "slow": its span is recorded and the
wrapper converts it with Python's correctly rounded float(). Every value is therefore bit-exact.
"""

from __future__ import annotations

import math

import numpy as np

from rankkit import threads
from rankkit.compiler.dispatch import njit

# status codes (index 0 of the status array); keep in sync with svmlight._MESSAGES
OK = 0
BAD_LABEL = 1
NONFINITE_LABEL = 2
BAD_QID = 3
MISSING_COLON = 4
BAD_INDEX = 5
INDEX_ZERO = 6
INDEX_TOO_LARGE = 7
NOT_INCREASING = 8
BAD_VALUE = 9
NULL_VALUE = 10
NONFINITE_VALUE = 11
QID_TOO_LARGE = 12
OVER_CAPACITY = 13  # more rows or non-zeros than counted: the input changed between the passes

# bits of the per-row flags array (called has_qid in the kernels)
FLAG_QID = 1
FLAG_LABEL = 2

# results of parse_number (public: io/trec.py reads them too)
NUM_OK = 0
NUM_BAD = 1
NUM_NONFINITE = 2

_SPACE, _TAB, _CR, _LF, _HASH, _COLON = 32, 9, 13, 10, 35, 58
_MAX_EXACT = 2**53
_MAX_INDEX = 2**31 - 1
_MAX_QID = 2**63 - 1

POW10 = np.array([10.0**i for i in range(23)], dtype=np.float64)


@njit
def is_space(c):
    return c == _SPACE or c == _TAB or c == _CR or c == 11 or c == 12


@njit
def _lower(c):
    return c | 0x20


@njit
def _match_word(buf, s, e, word):
    """Case-insensitive: does buf[s:e] equal the ASCII letters in `word` (a uint8 array)?"""
    if e - s != word.shape[0]:
        return False
    for i in range(word.shape[0]):
        if _lower(buf[s + i]) != word[i]:
            return False
    return True


_NAN = np.frombuffer(b"nan", dtype=np.uint8).copy()
_INF = np.frombuffer(b"inf", dtype=np.uint8).copy()
_INFINITY = np.frombuffer(b"infinity", dtype=np.uint8).copy()
_NULL = np.frombuffer(b"null", dtype=np.uint8).copy()
_DOCID = np.frombuffer(b"docid", dtype=np.uint8).copy()


@njit(inline="always")
def plain_decimal(buf, i, n, pow10):
    """The one decimal kernel's fast stage: a plain decimal at buf[i:n], optional sign, digits,
    optional '.' and digits, at most 18 digits in all (leading zeros included) and a significand
    of at most 2^53, whose double is one correctly rounded division m / 10^d. Returns (ok, end,
    value); ok False for anything else, which parse_number's general stage takes (exponents, long
    numbers, nan/inf; errors). Every reader turns decimal text into doubles here: parse_number
    (svmlight's general path, trec runs and qrels) begins with it, and the svmlight reader's fast
    paths take labels (_fast_line) and entries (_fast_entry) through it, inlined (inline="always":
    numba copies it in, no call per token). One loop keeps a copy of its digits: the feature values
    of _fast_line, the reader's hottest loop, where the inlined kernel cost 17% of the reading CPU
    (see there); tests/test_reader.py feeds the same tokens through every path."""
    neg = False
    c = buf[i] if i < n else np.uint8(_LF)
    if c == 45 or c == 43:  # - +
        neg = c == 45
        i += 1
    m = np.int64(0)
    s0 = i
    c = buf[i] if i < n else np.uint8(_LF)
    while 48 <= c <= 57:
        m = m * 10 + (np.int64(c) - 48)
        i += 1
        c = buf[i] if i < n else np.uint8(_LF)
    n_digits = i - s0
    n_frac = 0
    if c == 46:  # '.'
        i += 1
        s1 = i
        c = buf[i] if i < n else np.uint8(_LF)
        while 48 <= c <= 57:
            m = m * 10 + (np.int64(c) - 48)
            i += 1
            c = buf[i] if i < n else np.uint8(_LF)
        n_frac = i - s1
        n_digits += n_frac
    if n_digits == 0 or n_digits > 18 or m > _MAX_EXACT:
        return False, i, 0.0
    v = 0.0 if m == 0 else m / pow10[n_frac]
    return True, i, -v if neg else v


@njit
def parse_number(buf, s, e, pow10):
    """Parse buf[s:e] as a decimal float, the one decimal kernel of every reader. Returns (status,
    value, slow): a plain decimal by plain_decimal; otherwise (exponents, more than 18 digits,
    nan/inf, errors) the general stage below, which gives the same double for a plain decimal;
    slow: the value is left to Python's correctly rounded float() (the wrapper converts it)."""
    ok, end, v = plain_decimal(buf, s, e, pow10)
    if ok and end == e:
        return NUM_OK, v, False
    i = s
    neg = False
    if i < e and (buf[i] == 43 or buf[i] == 45):  # + -
        neg = buf[i] == 45
        i += 1
    if i >= e:
        return NUM_BAD, 0.0, False
    c = _lower(buf[i])
    if c == 110 or c == 105:  # 'n' or 'i'
        if _match_word(buf, i, e, _NAN):
            return NUM_NONFINITE, np.nan, False
        if _match_word(buf, i, e, _INF) or _match_word(buf, i, e, _INFINITY):
            return NUM_NONFINITE, -np.inf if neg else np.inf, False
        return NUM_BAD, 0.0, False
    m = 0
    nd = 0
    exp = 0
    any_digit = False
    slow = False
    while i < e and 48 <= buf[i] <= 57:
        d = buf[i] - 48
        any_digit = True
        if m == 0 and d == 0:
            pass
        elif nd < 18:
            m = m * 10 + d
            nd += 1
        else:
            exp += 1
            slow = True
        i += 1
    if i < e and buf[i] == 46:  # '.'
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            d = buf[i] - 48
            any_digit = True
            if m == 0 and d == 0:
                exp -= 1
            elif nd < 18:
                m = m * 10 + d
                nd += 1
                exp -= 1
            else:
                slow = True
            i += 1
    if not any_digit:
        return NUM_BAD, 0.0, False
    if i < e and (buf[i] == 101 or buf[i] == 69):  # e E
        i += 1
        eneg = False
        if i < e and (buf[i] == 43 or buf[i] == 45):
            eneg = buf[i] == 45
            i += 1
        if i >= e or not (48 <= buf[i] <= 57):
            return NUM_BAD, 0.0, False
        ev = 0
        while i < e and 48 <= buf[i] <= 57:
            if ev < 100000:
                ev = ev * 10 + (buf[i] - 48)
            i += 1
        exp += -ev if eneg else ev
    if i != e:
        return NUM_BAD, 0.0, False
    if m == 0:
        v = 0.0
    elif not slow and m <= _MAX_EXACT and -22 <= exp <= 22:
        if exp >= 0:
            v = m * pow10[exp]
        else:
            v = m / pow10[-exp]
    else:
        slow = True
        v = 0.0  # placeholder: the wrapper converts this token with Python's float()
    return NUM_OK, -v if neg else v, slow


@njit
def token_matrix(buf, starts, ends, width):
    """Tokens buf[starts[i]:ends[i]] as rows of a zero-padded uint8 matrix (a NumPy `S` array)."""
    out = np.zeros((starts.shape[0], width), dtype=np.uint8)
    for i in range(starts.shape[0]):
        for k in range(ends[i] - starts[i]):
            out[i, k] = buf[starts[i] + k]
    return out


SLOW_CHUNK = 1 << 20  # slow literals converted per NumPy cast


def slow_values(buf, starts, ends) -> np.ndarray:
    """The literals parse_number left to the wrapper (slow: long significands, large exponents),
    buf[starts[i]:ends[i]], as doubles: NumPy's correctly rounded string-to-double cast (the double
    of Python's float()), SLOW_CHUNK tokens per cast. The tokens are valid: parse_number took them.
    An overflow is inf: the caller says which token (the trec and score-file readers)."""
    out = np.empty(starts.shape[0], dtype=np.float64)
    for a in range(0, starts.shape[0], SLOW_CHUNK):
        s, e = starts[a : a + SLOW_CHUNK], ends[a : a + SLOW_CHUNK]
        width = int((e - s).max())
        out[a : a + SLOW_CHUNK] = token_matrix(buf, s, e, width).view(f"S{width}")[:, 0].astype(np.float64)
    return out


@njit
def _parse_uint(buf, s, e, limit):
    """Parse buf[s:e] as a non-negative integer <= limit. Returns (ok, value, too_large)."""
    if s >= e:
        return False, 0, False
    if e - s <= 9:  # cannot exceed any limit used (>= 2^31 - 2): no overflow test per digit
        v = 0
        for i in range(s, e):
            c = buf[i]
            if c < 48 or c > 57:
                return False, 0, False
            v = v * 10 + (np.int64(c) - 48)
        return True, v, v > limit
    v = 0
    for i in range(s, e):
        c = buf[i]
        if c < 48 or c > 57:
            return False, 0, False
        d = np.int64(c) - 48
        if v > (limit - d) // 10:  # v * 10 + d > limit, tested before it can overflow int64
            # keep scanning so that a non-digit later still reports "not an integer"
            for j in range(i + 1, e):
                if buf[j] < 48 or buf[j] > 57:
                    return False, 0, False
            return True, 0, True
        v = v * 10 + d
    return True, v, False


@njit
def line_end(buf, pos, n):
    """(end, next) of the line starting at pos: it ends at LF, CR LF or a lone CR (classic Mac),
    and the next one starts after that (a comment's end in the svmlight parser; the score-file and
    trec readers' line cut)."""
    end = pos
    while end < n and buf[end] != _LF and buf[end] != _CR:
        end += 1
    nxt = end + 1
    if nxt < n and buf[end] == _CR and buf[nxt] == _LF:
        nxt += 1
    return end, nxt


@njit
def _line_bounds(buf, pos, n):
    """For the line starting at pos: (end of line, start of the next line, end of content before
    '#', first non-space). A line ends at LF, CR LF or a lone CR (classic Mac). One scan."""
    end = pos
    cend = -1
    while end < n:
        c = buf[end]
        if c <= _HASH:  # one comparison for digits, letters, '.', ':' and '-'
            if c == _LF or c == _CR:
                break
            if c == _HASH and cend < 0:
                cend = end
        end += 1
    if cend < 0:
        cend = end
    nxt = end + 1
    if nxt < n and buf[end] == _CR and buf[nxt] == _LF:
        nxt += 1
    i = pos
    while i < cend and is_space(buf[i]):
        i += 1
    return end, nxt, cend, i


@njit
def _is_line_start(buf, p):
    """Does a line start at p (0 < p <= n): right after LF, or after a CR that no LF follows?"""
    prev = buf[p - 1]
    if prev == _LF:
        return True
    return prev == _CR and (p == buf.shape[0] or buf[p] != _LF)


@njit
def _token_end(buf, i, cend):
    """(end of the token starting at i, position of its first ':' or -1)."""
    j = i
    colon = -1
    while j < cend and not is_space(buf[j]):
        if buf[j] == _COLON and colon < 0:
            colon = j
        j += 1
    return j, colon


@njit
def _is_qid(buf, i, colon):
    return (
        colon - i == 3
        and _lower(buf[i]) == 113
        and _lower(buf[i + 1]) == 105
        and _lower(buf[i + 2]) == 100
    )


@njit
def _fast_entry(buf, i, cend, pow10):
    """The usual feature token, `<index>:<value>` with an index of at most 9 digits and a plain
    decimal value (optional sign, digits, optional '.' and digits; no exponent, at most 18 digits
    in all) ending at white space or `cend`, in one scan.
    Returns (ok, end, index as written, value); the value is plain_decimal's (inlined), the one
    parse_number gives. ok False: anything else, which the general path parses (and reports, if
    it is an error)."""
    p = i
    idx = 0
    while p < cend and p - i < 9:
        c = buf[p]
        if c < 48 or c > 57:
            break
        idx = idx * 10 + (np.int64(c) - 48)
        p += 1
    if p == i or p >= cend or buf[p] != _COLON:
        return False, p, 0, 0.0
    ok, p, v = plain_decimal(buf, p + 1, cend, pow10)
    if not ok or (p < cend and not is_space(buf[p])):
        return False, p, 0, 0.0
    return True, p, idx, v


@njit
def _docid_span(buf, cend, end):
    """(start, end) of the docid in a line's comment buf[cend + 1:end] (cend: the '#'; cend == end:
    no comment): "docid" [spaces] ('=' | ':') [spaces] TOKEN, the first "docid" deciding; (-1, -1)
    if there is none."""
    if cend < end:
        c = cend + 1
        while c + 5 <= end:
            if _match_word(buf, c, c + 5, _DOCID):
                d = c + 5
                while d < end and is_space(buf[d]):
                    d += 1
                if d < end and (buf[d] == 61 or buf[d] == _COLON):
                    d += 1
                    while d < end and is_space(buf[d]):
                        d += 1
                    t = d
                    while t < end and not is_space(buf[t]):
                        t += 1
                    if t > d:
                        return d, t
                return -1, -1
            c += 1
    return -1, -1


@njit
def _ends_token(buf, i, n):
    """Does a token end at i: the end of the buffer, a space or tab, a line end or a comment?
    (Vertical tab and form feed, which the general path also takes for spaces, are left to it.)"""
    if i >= n:
        return True
    c = buf[i]
    return c == _SPACE or c == _TAB or c == _LF or c == _CR or c == _HASH


@njit
def _fast_line(buf, pos, n, zero_based, data, indices, k, pow10):
    """The usual LETOR line starting at pos, parsed in one scan without first finding its end:
    a plain decimal label, an optional lower-case `qid:<digits>`, `<index>:<plain decimal>` entries
    in increasing order, an optional comment, separated by spaces or tabs. Writes the entries to
    data[k:], indices[k:] and returns (True, k after them, start of the next line, label, qid,
    row flags, docid span) exactly as parse_svmlight's general path would; (False, ...) for any
    other line (blank, comment-only, upper-case QID, exponents, long numbers, vertical tabs, an
    unlabelled line, any error, no room left), which the general path then parses from pos."""
    fail = (False, k, pos, 0.0, np.int64(0), np.uint8(0), np.int64(-1), np.int64(-1))
    i = pos
    while i < n and (buf[i] == _SPACE or buf[i] == _TAB):
        i += 1
    if i >= n or not (48 <= buf[i] <= 57 or buf[i] == 45 or buf[i] == 43 or buf[i] == 46):
        return fail
    ok, i, label = plain_decimal(buf, i, n, pow10)
    if not ok or i >= n or not (buf[i] == _SPACE or buf[i] == _TAB):  # a label is followed by a space
        return fail
    while i < n and (buf[i] == _SPACE or buf[i] == _TAB):
        i += 1
    flags = np.uint8(FLAG_LABEL)
    q = np.int64(0)
    if i + 3 < n and buf[i] == 113 and buf[i + 1] == 105 and buf[i + 2] == 100 and buf[i + 3] == _COLON:
        i += 4
        s = i
        while i < n and 48 <= buf[i] <= 57 and i - s < 18:  # at most 18 digits: below _MAX_QID
            q = q * 10 + (np.int64(buf[i]) - 48)
            i += 1
        if i == s or not _ends_token(buf, i, n):
            return fail
        flags |= np.uint8(FLAG_QID)
    prev = np.int64(-1)
    cap = data.shape[0]
    while True:
        c = buf[i] if i < n else np.uint8(_LF)
        while c == _SPACE or c == _TAB:
            i += 1
            c = buf[i] if i < n else np.uint8(_LF)
        if c < 48 or c > 57:
            break
        s = i
        idx = np.int64(0)
        while True:
            d = np.int64(c) - 48
            if d < 0 or d > 9:
                break
            idx = idx * 10 + d
            i += 1
            if i >= n:
                return fail
            c = buf[i]
        if c != _COLON or i - s > 9:
            return fail
        # the value: plain_decimal's digits, written out here: a call per entry would cost this
        # loop more than half its speed, and even plain_decimal inlined (inline="always") cost
        # 17% of the reading CPU (35 MB of MSLR lines, 1 thread: 0.085 s -> 0.100 s, min of 15
        # reads, 3 alternations; 2026-11-28); tests/test_reader.py checks it against parse_number
        i += 1
        neg = False
        c = buf[i] if i < n else np.uint8(_LF)
        if c == 45 or c == 43:
            neg = c == 45
            i += 1
        m = np.int64(0)
        s0 = i
        c = buf[i] if i < n else np.uint8(_LF)
        while 48 <= c <= 57:
            m = m * 10 + (np.int64(c) - 48)
            i += 1
            c = buf[i] if i < n else np.uint8(_LF)
        n_digits = i - s0
        n_frac = 0
        if c == 46:
            i += 1
            s1 = i
            c = buf[i] if i < n else np.uint8(_LF)
            while 48 <= c <= 57:
                m = m * 10 + (np.int64(c) - 48)
                i += 1
                c = buf[i] if i < n else np.uint8(_LF)
            n_frac = i - s1
            n_digits += n_frac
        if n_digits == 0 or n_digits > 18 or m > _MAX_EXACT:
            return fail
        if not (c == _SPACE or c == _TAB or c == _LF or c == _CR or c == _HASH):
            return fail
        if not zero_based:
            if idx == 0:
                return fail
            idx -= 1
        if idx <= prev or k >= cap:
            return fail
        v = 0.0 if m == 0 else m / pow10[n_frac]
        data[k] = -v if neg else v
        indices[k] = idx
        k += 1
        prev = idx
    if i >= n:
        return True, k, n, label, q, flags, np.int64(-1), np.int64(-1)
    if c == _LF:
        return True, k, i + 1, label, q, flags, np.int64(-1), np.int64(-1)
    if c == _CR:
        nxt = i + 1
        if nxt < n and buf[nxt] == _LF:
            nxt += 1
        return True, k, nxt, label, q, flags, np.int64(-1), np.int64(-1)
    if c == _HASH:
        end, nxt = line_end(buf, i, n)
        d0, d1 = _docid_span(buf, i, end)
        return True, k, min(nxt, n), label, q, flags, np.int64(d0), np.int64(d1)
    return fail


@njit
def parse_svmlight(
    buf, zero_based, labels_optional, data, indices, indptr, y, qid, has_qid, line_no, docspan, slow, status
):
    """Parse every data line of `buf` into the preallocated output arrays.

    Returns (n_rows, nnz, n_slow). `slow[k] = (kind, position, start, end)` marks numbers the
    wrapper must convert (kind 0: data[position], kind 1: y[position]). On error `status` holds
    (code, line, token_start, token_end, extra) and the counts parsed so far are returned.
    """
    n = buf.shape[0]
    pos = np.int64(0)  # not the literal 0: _line_bounds would be compiled for both types
    line = 0
    row = 0
    k = 0
    ns = 0
    pow10 = POW10
    # the stored (0-based) column index is int32 and n_features = largest index + 1 must be too
    max_index = _MAX_INDEX - 1 if zero_based else _MAX_INDEX
    indptr[0] = 0
    # a line the one-scan parser gives up on is parsed again by the general path: after each such
    # line (but a blank or comment line) the next `skip` lines go straight to the general path, `skip` doubling up to 64 while the
    # parser keeps giving up (files of other formats: exponents, long numbers) and back to 0 when it
    # takes a line. Either path gives the same result, so this only decides the speed.
    skip = 0
    backoff = 1
    while pos < n:
        line += 1
        if skip > 0:
            skip -= 1
        elif row < y.shape[0]:  # the usual line in one scan; anything else (and every error) below
            ok, k1, nxt, label, q, flags, d0, d1 = _fast_line(buf, pos, n, zero_based, data, indices, k, pow10)
            if not ok:
                b = pos
                while b < n and (buf[b] == _SPACE or buf[b] == _TAB):
                    b += 1
                if b < n and buf[b] != _LF and buf[b] != _CR and buf[b] != _HASH:  # (not a blank or comment line)
                    skip = backoff
                    backoff = min(2 * backoff, 64)
            else:
                backoff = 1
                y[row] = label
                line_no[row] = line
                has_qid[row] = flags
                qid[row] = q
                docspan[row, 0] = d0
                docspan[row, 1] = d1
                k = k1
                row += 1
                indptr[row] = k
                pos = nxt
                continue
        end, nxt, cend, i = _line_bounds(buf, pos, n)  # content ends at the first '#'
        if i >= cend:
            pos = nxt
            continue  # blank or comment-only line
        # ---- label (optional for prediction: a first token with ':' is a feature or qid)
        j, first_colon = _token_end(buf, i, cend)
        labelled = not (labels_optional and first_colon >= 0)
        if labelled:
            st, v, sl = parse_number(buf, i, j, pow10)
        else:
            st, v, sl = NUM_OK, 0.0, False
            j = i
        if st == NUM_BAD:
            status[0] = BAD_LABEL
        elif st == NUM_NONFINITE:
            status[0] = NONFINITE_LABEL
        if st != NUM_OK:
            status[1] = line
            status[2] = i
            status[3] = j
            return row, k, ns
        if row >= y.shape[0]:
            status[0] = OVER_CAPACITY
            status[1] = line
            status[2] = i
            status[3] = j
            return row, k, ns
        y[row] = v
        if sl:
            slow[ns, 0] = 1
            slow[ns, 1] = row
            slow[ns, 2] = i
            slow[ns, 3] = j
            ns += 1
        line_no[row] = line
        has_qid[row] = FLAG_LABEL if labelled else 0
        qid[row] = 0
        prev = -1
        first = True
        i = j
        while True:
            while i < cend and is_space(buf[i]):
                i += 1
            if i >= cend:
                break
            if 48 <= buf[i] <= 57:  # the usual `<index>:<value>`, in one scan; anything else below
                ok, j, idx, v = _fast_entry(buf, i, cend, pow10)
                if ok and not zero_based:
                    ok = idx != 0
                    idx -= 1
                if ok and idx > prev and k < data.shape[0]:
                    data[k] = v
                    indices[k] = idx
                    k += 1
                    prev = idx
                    first = False
                    i = j
                    continue
            j, colon = _token_end(buf, i, cend)
            status[1] = line
            status[2] = i
            status[3] = j
            if colon < 0:
                status[0] = MISSING_COLON
                return row, k, ns
            # qid:<int> right after the label
            if first and _is_qid(buf, i, colon):
                s = colon + 1
                qneg = False
                if s < j and (buf[s] == 45 or buf[s] == 43):
                    qneg = buf[s] == 45
                    s += 1
                ok, qv, big = _parse_uint(buf, s, j, np.int64(_MAX_QID))  # int64, not a literal type
                if not ok or big:
                    status[0] = BAD_QID if not ok else QID_TOO_LARGE
                    status[2] = colon + 1
                    return row, k, ns
                qid[row] = -qv if qneg else qv
                has_qid[row] |= FLAG_QID
                first = False
                i = j
                continue
            first = False
            ok, idx, big = _parse_uint(buf, i, colon, max_index)
            if not ok:
                status[0] = BAD_INDEX
                status[3] = colon
                return row, k, ns
            if big:
                status[0] = INDEX_TOO_LARGE
                status[3] = colon
                status[4] = max_index
                return row, k, ns
            if not zero_based:
                if idx == 0:
                    status[0] = INDEX_ZERO
                    status[3] = colon
                    return row, k, ns
                idx -= 1
            if idx <= prev:
                status[0] = NOT_INCREASING
                status[3] = colon
                status[4] = prev if zero_based else prev + 1
                return row, k, ns
            prev = idx
            st, v, sl = parse_number(buf, colon + 1, j, pow10)
            if st != NUM_OK:
                if st == NUM_NONFINITE:
                    status[0] = NONFINITE_VALUE
                elif _match_word(buf, colon + 1, j, _NULL):
                    status[0] = NULL_VALUE
                else:
                    status[0] = BAD_VALUE
                status[2] = colon + 1
                return row, k, ns
            if k >= data.shape[0]:
                status[0] = OVER_CAPACITY
                return row, k, ns
            data[k] = v
            indices[k] = idx
            if sl:
                slow[ns, 0] = 0
                slow[ns, 1] = k
                slow[ns, 2] = colon + 1
                slow[ns, 3] = j
                ns += 1
            k += 1
            i = j
        d0, d1 = _docid_span(buf, cend, end)
        docspan[row, 0] = d0
        docspan[row, 1] = d1
        row += 1
        indptr[row] = k
        pos = nxt
    status[0] = OK
    return row, k, ns


@njit
def query_blocks(qid):
    """Start offsets of runs of equal qid (plus n at the end)."""
    n = qid.shape[0]
    count = 1 if n > 0 else 0
    for i in range(1, n):
        if qid[i] != qid[i - 1]:
            count += 1
    out = np.empty(count + 1, dtype=np.int64)
    out[0] = 0
    b = 1
    for i in range(1, n):
        if qid[i] != qid[i - 1]:
            out[b] = i
            b += 1
    out[count] = n
    return out


# -- parallel parsing: the file is cut at line boundaries into chunks, each chunk is parsed by
# parse_svmlight into its own region of the output arrays (sized by the chunk's counts), and the
# regions are gathered into compact arrays. The result is identical for any number of chunks.


@njit
def chunk_bounds(buf, n_chunks):
    """Start offsets of n_chunks pieces of buf, each starting where a line starts (plus len); a
    chunk may be empty, and no chunk boundary falls between the CR and LF of a CR LF."""
    n = buf.shape[0]
    bounds = np.empty(n_chunks + 1, dtype=np.int64)
    bounds[0] = 0
    for c in range(1, n_chunks):
        p = max(c * n // n_chunks, bounds[c - 1])
        while 0 < p < n and not _is_line_start(buf, p):
            p += 1
        bounds[c] = p
    bounds[n_chunks] = n
    return bounds


# the counting pass reads eight bytes at a time (a uint64 word) where a line's content goes on
_ONES = np.uint64(0x0101010101010101)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_LF8, _CR8, _HASH8, _COLON8 = (_ONES * np.uint64(c) for c in (_LF, _CR, _HASH, _COLON))


@njit
def _zero_bytes(x):
    """The high bit of each byte of x that is zero, exactly (no borrow between bytes)."""
    return ~(((x & _LOW7) + _LOW7) | x | _LOW7)


@njit
def _has_byte(w, pattern):
    """Does any byte of w equal the byte repeated in `pattern`?"""
    return _zero_bytes(w ^ pattern) != 0


@njit
def _count_byte(w, pattern):
    """How many bytes of w equal the byte repeated in `pattern`?"""
    return np.int64(((_zero_bytes(w ^ pattern) >> np.uint64(7)) * _ONES) >> np.uint64(56))


@njit
def _count_fast(buf, s, e, labels_optional):
    """Rows, an upper bound of the non-zeros (exact for a file without errors), and newlines of
    buf[s:e], in one scan per line.

    A row is a line with content before any '#', as in parse_svmlight. Its non-zeros are counted as
    the ':' in that content, less one when the first token after the label (the first token, when
    an unlabelled line starts with a feature) is `qid:`. Every entry the parser writes is a token
    with a ':' other than the qid token, so the parser never writes past these counts; in a valid
    file every such token has exactly one ':' and a label has none, so the counts are exact (a
    token with a second ':' or a label with one is a parse error, reported before counts matter)."""
    rows = 0
    nnz = 0
    newlines = 0
    pos = s
    words = buf[s : s + ((e - s) & ~7)].view(np.uint64)  # word j: bytes s + 8j .. s + 8j + 7
    while pos < e:
        i = pos
        while i < e:
            c = buf[i]
            if c == _SPACE or c == _TAB or c == 11 or c == 12:
                i += 1
            else:
                break
        if i < e and buf[i] != _LF and buf[i] != _CR and buf[i] != _HASH:
            rows += 1
            j = i
            label_colons = 0
            while j < e:
                c = buf[j]
                if c == _SPACE or c == _TAB or c == 11 or c == 12 or c == _LF or c == _CR or c == _HASH:
                    break
                if c == _COLON:
                    label_colons += 1
                j += 1
            k = i if (labels_optional and label_colons > 0) else j
            while k < e:
                c = buf[k]
                if c == _SPACE or c == _TAB or c == 11 or c == 12:
                    k += 1
                else:
                    break
            if (k + 3 < e and buf[k + 3] == _COLON and _lower(buf[k]) == 113 and _lower(buf[k + 1]) == 105
                    and _lower(buf[k + 2]) == 100):
                nnz -= 1
            while k < e and (k - s) & 7:
                c = buf[k]
                if c <= _HASH and (c == _LF or c == _CR or c == _HASH):
                    break
                if c == _COLON:
                    nnz += 1
                k += 1
            while k + 8 <= e and (k - s) & 7 == 0:  # eight bytes at a time while none ends the content
                w = words[(k - s) >> 3]
                if _has_byte(w, _LF8) | _has_byte(w, _CR8) | _has_byte(w, _HASH8):
                    break
                nnz += _count_byte(w, _COLON8)
                k += 8
            while k < e:
                c = buf[k]
                if c <= _HASH and (c == _LF or c == _CR or c == _HASH):
                    break
                if c == _COLON:
                    nnz += 1
                k += 1
            i = k
        while i < e:
            c = buf[i]
            if c <= _CR and (c == _LF or c == _CR):
                break
            i += 1
        if i < e:
            newlines += 1
            if buf[i] == _CR and i + 1 < e and buf[i + 1] == _LF:
                i += 1
        pos = i + 1
    return rows, nnz, newlines


@njit
def _count_range(buf, bounds, labels_optional, counts, c0, c1):
    for c in range(c0, c1):
        r, k, nl = _count_fast(buf, bounds[c], bounds[c + 1], labels_optional)
        counts[c, 0] = r
        counts[c, 1] = k
        counts[c, 2] = nl


def count_chunks(buf, bounds, labels_optional, counts):
    """counts[c] = (rows, non-zeros (an upper bound, exact without errors), newlines) of chunk c;
    the chunks taken in turn by the threads (rankkit.threads.run_each)."""
    threads.run_each(_count_range, bounds.shape[0] - 1, buf, bounds, labels_optional, counts)


@njit
def _parse_range(
    buf, bounds, zero_based, labels_optional, counts, rows_at, nnz_at, line_before, slow_at,
    data, indices, indptr, y, qid, has_qid, line_no, docspan, slow, status, parsed, c0, c1,
):
    for c in range(c0, c1):
        r0 = rows_at[c]
        k0 = nnz_at[c]
        r1 = r0 + counts[c, 0]  # each chunk writes within its counted capacity, never beyond
        k1 = k0 + counts[c, 1]
        n, k, ns = parse_svmlight(
            buf[bounds[c] : bounds[c + 1]], zero_based, labels_optional,
            data[k0:k1], indices[k0:k1], indptr[r0 : r1 + 1], y[r0:r1], qid[r0:r1], has_qid[r0:r1],
            line_no[r0:r1], docspan[r0:r1], slow[slow_at[c] : slow_at[c] + counts[c, 0] + counts[c, 1]], status[c],
        )
        parsed[c, 0] = n
        parsed[c, 1] = k
        parsed[c, 2] = ns
        # what parse_svmlight wrote relative to the chunk: row pointers (but the first, shared
        # with the previous chunk's last), line numbers, byte offsets
        off = bounds[c]
        for i in range(n):
            if i > 0:
                indptr[r0 + i] += k0
            line_no[r0 + i] += line_before[c]
            if docspan[r0 + i, 0] >= 0:
                docspan[r0 + i, 0] += off
                docspan[r0 + i, 1] += off


@njit
def _fix_chunk_starts(rows_at, nnz_at, indptr, nnz):
    for c in range(rows_at.shape[0]):
        indptr[rows_at[c]] = nnz_at[c]
    indptr[indptr.shape[0] - 1] = nnz


def parse_chunks(
    buf, bounds, zero_based, labels_optional, counts, rows_at, nnz_at, line_before, slow_at,
    data, indices, indptr, y, qid, has_qid, line_no, docspan, slow, status, parsed,
):
    """Parse chunk c straight into its final rows rows_at[c].. and non-zeros nnz_at[c].., then fix
    up what parse_svmlight wrote relative to the chunk (row pointers, line numbers, byte offsets
    relative to buf). Slow-number entries of chunk c start at slow_at[c]. Chunk c writes at most
    counts[c] rows and non-zeros (more: status OVER_CAPACITY). parsed[c] = (rows, nnz, slow).
    The chunks are taken in turn by the threads (rankkit.threads.run_each). The chunks may be one
    block of a larger file: indptr's last entry is set to len(data)."""
    threads.run_each(_parse_range, bounds.shape[0] - 1, buf, bounds, zero_based, labels_optional, counts, rows_at,
                     nnz_at, line_before, slow_at, data, indices, indptr, y, qid, has_qid, line_no, docspan, slow,
                     status, parsed)
    # chunk c wrote indptr[r0 + n] relative to k0, and it is entry r0 of chunk c + 1: set each
    # chunk's first entry once every chunk is done
    _fix_chunk_starts(rows_at, nnz_at, indptr, data.shape[0])


# -- decimal codes: values stored as int32 k standing for the double k / 10**d -----------------------

DECIMAL_MAX_DIGITS = 9  # 10**9 and every int32 are exact doubles
INT32_MAX = 2147483647.0


@njit
def _decimal_code(v, scale):
    """(k, True) when the double v is exactly k / scale for an int32 k (k and scale exact doubles,
    so k / scale is the correctly rounded quotient: the very double a parse of the decimal text
    k * 10**-d gives); (0, False) otherwise, and for -0.0 (0 / scale is +0.0)."""
    k = np.rint(v * scale)
    if not (k >= -INT32_MAX and k <= INT32_MAX):  # also nan
        return 0, False
    if k / scale != v or (v == 0.0 and math.copysign(1.0, v) < 0.0):
        return 0, False
    return np.int64(k), True


@njit
def _power_of_ten(d):
    p = 1.0
    for _ in range(d):
        p *= 10.0  # exact: every product is an integer below 2**53
    return p


@njit
def min_decimal_digits(values, d0):
    """The smallest d >= d0 (at most DECIMAL_MAX_DIGITS) such that every value is exactly k / 10**d
    for an int32 k; -1 if there is none."""
    d = d0
    scale = _power_of_ten(d)
    i = 0
    while i < values.shape[0]:
        _, ok = _decimal_code(values[i], scale)
        if ok:
            i += 1
            continue
        d += 1  # and every value again: a larger d may put an earlier value's code past int32
        if d > DECIMAL_MAX_DIGITS:
            return -1
        scale = _power_of_ten(d)
        i = 0
    return d


_CODE_STEP = 2048  # _code_range: values coded without a branch, then checked, this many at a time


@njit
def _code_range(values, scale, out, lo, hi):
    """Code values[lo:hi] into out (decimal_codes); the first value that cannot be coded, or hi.
    Each step of _CODE_STEP values is coded and checked with no early exit (a loop the compiler
    vectorises: the check is that the stored int32 decodes to the very double, sign of zero
    included); only a step that fails is scanned again for its first bad value."""
    for a in range(lo, hi, _CODE_STEP):
        b = min(a + _CODE_STEP, hi)
        bad = 0
        for i in range(a, b):
            v = values[i]
            k = np.rint(v * scale)
            k = k if k >= -INT32_MAX else -INT32_MAX  # (a nan: -INT32_MAX, and it fails below)
            k = k if k <= INT32_MAX else INT32_MAX
            c = np.int32(k)
            out[i] = c
            back = c / scale
            bad |= (back != v) | ((v == 0.0) & (math.copysign(1.0, v) < 0.0))
        if bad:
            for i in range(a, b):
                _, ok = _decimal_code(values[i], scale)
                if not ok:
                    return i
    return hi


def decimal_codes(values, scale, out) -> int:
    """out[i] = k with values[i] exactly k / scale, for i below the returned index: the first value
    that is not such a double (len(values) when every one is). On the threads (rankkit.threads)."""
    n = values.shape[0]
    parts = threads.split(None, n, n)
    for (lo, hi), stop in zip(parts, threads.run(_code_range, parts, values, float(scale), out)):
        if stop < hi:
            return int(stop)
    return n
