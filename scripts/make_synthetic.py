#!/usr/bin/env python3
"""Generate large synthetic SVMlight/LETOR files for the benchmarks.

Usage:
    python scripts/make_synthetic.py letor  OUT [--queries 2000] [--docs 100] [--features 46]
                                                [--levels 5] [--seed 0] [--docid]
    python scripts/make_synthetic.py binary OUT [--docs 1000000] [--features 17] [--seed 0] [--docid]
    python scripts/make_synthetic.py parse  OUT [--mb 200] [--features 136] [--seed 0]
    python scripts/make_synthetic.py mslr   OUT [--queries 5000] [--docs 100] [--seed 0]

letor   Dense LETOR file: `queries` queries of exactly `docs` documents, every feature written
        as '%.6f' in [0, 1), graded labels 0..levels-1 from a hidden linear model plus noise and
        a per-query offset (label shares halve with each grade: 52/26/13/6/3 % for 5 levels).
        Defaults: 200,000 rows, 110,689,300 bytes.
binary  One query (qid:1 on every line) of `docs` documents, dense '%.6f' features, labels 0/1
        from a hidden linear model plus noise (about one third positives). The defaults give
        exactly 203,000,000 bytes (every row is 203 bytes).
parse   About `mb` * 10^6 bytes (cut at a row boundary) for parse benchmarking: ~1000 queries of
        20-400 rows, labels 0-4, 40% dense rows and 60% sparse rows (2-50% of the features, some
        rows with none), values in mixed notations ('0.123456', trimmed like '%g' '0.25' / '12',
        integers '0' '347', scientific '1.5e-03' '2E+01', a few negatives) and a mix of no
        comment, '# docid = P000000042' and '#docid = GX000000042 inc = 1 prob = 0.086622'.

mslr    MSLR-WEB30K-shaped raw features (issue 27): `queries` queries of exactly `docs` documents,
        136 dense features in four groups of gamma(0.7)-distributed values times a scale, as
        MSLR's raw counts and scores are: features 1-40 floored counts (x 1e3, written as
        integers), 41-80 BM25-like (x 30, 4 decimals), 81-120 fractions (x 1, 6 decimals),
        121-136 large values (x 3e4, integers). Labels 0-4 from a noisy linear score of the raw
        features (each group's weights divided by its scale) plus a per-query offset, with the
        letor shares. Defaults: 500,000 rows, about 700 MB. Values come from numpy's gamma
        sampler (libm inside), so the bytes are those of this numpy and platform; the other
        generators avoid libm and give the same bytes everywhere.

The same functions are importable (write_letor, write_binary, write_parse, write_mslr); each returns a dict
with rows, queries, bytes and seconds.

How it is fast: rows are never formatted one by one. Each chunk (a few thousand to 20,000 rows)
is laid out as a uint8 matrix, one row per line, in which every field has a fixed column range;
digits are filled in with vectorised divmod, unused positions (leading zeros, absent features,
trimmed digits) hold a NUL byte, and the chunk is written after one boolean compaction that
drops the NULs. Memory stays around a few tens of MB whatever the output size.

Determinism: fixed seed, numpy.random.default_rng, and a fixed chunking (output does not depend
on the machine): values are drawn as integers k and written as the exact decimal k/10^6, the
hidden model is an integer dot product, noise comes from sums of uniforms, and thresholds are
rounded, so the same seed gives the same bytes everywhere.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from statistics import NormalDist

import numpy as np

PAD = 0  # placeholder byte, squeezed out before writing
SP, COLON, DOT, MINUS, PLUS, ZERO = 32, 58, 46, 45, 43, 48
SCALE = 10**6  # values are k / SCALE, written with 6 decimals
LETOR_CHUNK_ROWS = 20_000
BINARY_CHUNK_ROWS = 50_000
PARSE_CHUNK_QUERIES = 24

# ---------------------------------------------------------------------------------------------
# byte-matrix helpers


def _ndigits(v: int) -> int:
    return len(str(int(v)))


def _const(s: str | bytes) -> np.ndarray:
    return np.frombuffer(s.encode("ascii") if isinstance(s, str) else s, dtype=np.uint8)


def _put_uint(dst: np.ndarray, v: np.ndarray, zero_fill: bool = False) -> None:
    """Write non-negative ints v right-aligned into dst[..., :w] (leading zeros -> PAD)."""
    width = dst.shape[-1]
    rest = np.array(v, dtype=np.int32 if width <= 9 else np.int64, copy=True)
    for pos in range(width - 1, -1, -1):
        rest, d = np.divmod(rest, 10)
        dst[..., pos] = d
    dst += ZERO
    if not zero_fill:
        for pos in range(width - 1):  # the last digit is always written, so 0 -> "0"
            col = dst[..., pos]
            col[v < 10 ** (width - 1 - pos)] = PAD


def _uint_field(v: np.ndarray, width: int, zero_fill: bool = False) -> np.ndarray:
    out = np.empty(np.shape(v) + (width,), dtype=np.uint8)
    _put_uint(out, v, zero_fill)
    return out


def _strip_trailing_zeros(digits: np.ndarray) -> np.ndarray:
    """PAD trailing '0' digits in place (last axis); return the mask 'all digits were zero'."""
    tz = np.logical_and.accumulate(digits[..., ::-1] == ZERO, axis=-1)[..., ::-1]
    digits[tz] = PAD
    return tz[..., 0]


class _Canvas:
    """A (rows, width) uint8 matrix filled field by field; `write` drops PAD bytes."""

    def __init__(self, n: int, widths: list[int]):
        self.m = np.empty((n, sum(widths)), dtype=np.uint8)
        self.offsets = np.concatenate([[0], np.cumsum(widths)]).tolist()

    def field(self, i: int) -> np.ndarray:
        return self.m[:, self.offsets[i] : self.offsets[i + 1]]

    def set(self, i: int, value) -> None:
        self.field(i)[...] = value

    def blocks(self, i: int, k: int) -> np.ndarray:
        """Field i viewed as (rows, k, width/k), e.g. one slot per feature."""
        f = self.field(i)
        view = f.reshape(f.shape[0], k, f.shape[1] // k)
        assert np.shares_memory(view, self.m)
        return view

    def row_lengths(self) -> np.ndarray:
        return np.count_nonzero(self.m, axis=1)

    def write(self, fh, rows: int | None = None) -> int:
        m = self.m if rows is None else self.m[:rows]
        flat = m.reshape(-1)
        out = flat[flat != PAD]
        fh.write(memoryview(out))
        return int(out.size)


def _feature_template(n_features: int, value_width: int, lead: bytes = b"") -> np.ndarray:
    """(F, T) slots ' <i>:<lead><value>' with the value part left for the caller."""
    wi = _ndigits(n_features)
    t = np.zeros((n_features, 1 + wi + 1 + len(lead) + value_width), dtype=np.uint8)
    t[:, 0] = SP
    _put_uint(t[:, 1 : 1 + wi], np.arange(1, n_features + 1))
    t[:, 1 + wi] = COLON
    if lead:
        t[:, 2 + wi : 2 + wi + len(lead)] = _const(lead)
    return t


# ---------------------------------------------------------------------------------------------
# hidden linear model


def _hidden_weights(rng: np.random.Generator, n_features: int) -> np.ndarray:
    """Integer weights, mostly positive, so scores are exact integer dot products."""
    return rng.integers(-300, 1000, size=n_features, dtype=np.int64)


def _thresholds(levels: int, sd_total: float) -> np.ndarray:
    """Cut points giving label shares proportional to 1, 1/2, 1/4, ... (LETOR-like skew)."""
    p = np.array([0.5**g for g in range(levels)])
    cum = np.cumsum(p / p.sum())[:-1]
    return np.array([round(NormalDist().inv_cdf(float(c)) * sd_total, 6) for c in cum])


def _uniform_noise(rng: np.random.Generator, n: int, sd: float) -> np.ndarray:
    """Approximately normal with standard deviation sd (sum of 4 uniforms), no libm."""
    u = rng.random((n, 4))
    return (u[:, 0] + u[:, 1] + u[:, 2] + u[:, 3] - 2.0) * (sd * math.sqrt(3.0))


def _labels(rng, k, w, levels, thresholds, offsets, noise_sd) -> np.ndarray:
    s = k @ w  # int64, exact
    n_scale = SCALE
    mean = float(w.sum()) * (n_scale - 1) / 2.0
    sd = math.sqrt(float((w * w).sum()) * (n_scale * n_scale - 1) / 12.0)
    z = (s - mean) / sd + _uniform_noise(rng, k.shape[0], noise_sd) + offsets
    return np.searchsorted(thresholds, z, side="right").astype(np.int64)


# ---------------------------------------------------------------------------------------------
# dense writers (letor, binary)


def _dense_chunk(fh, labels, qids, k, comment: list | None = None) -> int:
    """Write rows '<label> qid:<q> 1:0.dddddd ... F:0.dddddd[ comment]\\n'."""
    n, nf = k.shape
    tmpl = _feature_template(nf, 6, lead=b"0.")
    lw, qw = _ndigits(labels.max()), _ndigits(qids.max())
    widths = [lw, 5, qw, nf * tmpl.shape[1]]
    comment = comment or []
    widths += [np.shape(c)[-1] if isinstance(c, np.ndarray) else len(c) for c in comment] + [1]
    cv = _Canvas(n, widths)
    _put_uint(cv.field(0), labels)
    cv.set(1, _const(" qid:"))
    _put_uint(cv.field(2), qids)
    feats = cv.blocks(3, nf)
    feats[...] = tmpl
    _put_uint(feats[:, :, -6:], k, zero_fill=True)
    for i, c in enumerate(comment, start=4):
        if isinstance(c, np.ndarray):
            cv.set(i, c)
        else:
            cv.set(i, _const(c))
    cv.set(len(widths) - 1, 10)
    return cv.write(fh)


def write_letor(path, queries=2000, docs=100, features=46, levels=5, seed=0, docid=False) -> dict:
    """Dense LETOR file, `queries` x `docs` rows, labels 0..levels-1 from a hidden linear model."""
    if queries < 1 or docs < 1 or features < 1 or levels < 2:
        raise ValueError("need queries, docs, features >= 1 and levels >= 2")
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    w = _hidden_weights(rng, features)
    noise_sd, query_sd = 0.6, 0.5
    thresholds = _thresholds(levels, math.sqrt(1.0 + noise_sd**2 + query_sd**2))
    chunk_q = max(1, LETOR_CHUNK_ROWS // docs)
    nbytes = 0
    with open(path, "wb") as fh:
        for q0 in range(0, queries, chunk_q):
            nq = min(chunk_q, queries - q0)
            n = nq * docs
            k = rng.integers(0, SCALE, size=(n, features), dtype=np.int64)
            offsets = np.repeat(_uniform_noise(rng, nq, query_sd), docs)
            y = _labels(rng, k, w, levels, thresholds, offsets, noise_sd)
            qids = np.repeat(np.arange(q0 + 1, q0 + nq + 1, dtype=np.int64), docs)
            comment = None
            if docid:
                pos = np.tile(np.arange(1, docs + 1, dtype=np.int64), nq)
                comment = [
                    " # docid = D",
                    _uint_field(qids, _ndigits(queries)),
                    "-",
                    _uint_field(pos, _ndigits(docs)),
                ]
            nbytes += _dense_chunk(fh, y, qids, k, comment)
    return dict(path=str(path), rows=queries * docs, queries=queries, bytes=nbytes,
                seconds=time.perf_counter() - t0)


def write_binary(path, docs=1_000_000, features=17, seed=0, docid=False) -> dict:
    """One query (qid:1) of `docs` rows, labels 0/1 from a hidden linear model plus noise."""
    if docs < 1 or features < 1:
        raise ValueError("need docs, features >= 1")
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    w = _hidden_weights(rng, features)
    noise_sd = 0.6
    thresholds = _thresholds(2, math.sqrt(1.0 + noise_sd**2))
    nbytes = 0
    with open(path, "wb") as fh:
        for r0 in range(0, docs, BINARY_CHUNK_ROWS):
            n = min(BINARY_CHUNK_ROWS, docs - r0)
            k = rng.integers(0, SCALE, size=(n, features), dtype=np.int64)
            y = _labels(rng, k, w, 2, thresholds, 0.0, noise_sd)
            qids = np.ones(n, dtype=np.int64)
            comment = None
            if docid:
                comment = [" # docid = B", _uint_field(np.arange(r0 + 1, r0 + n + 1), _ndigits(docs))]
            nbytes += _dense_chunk(fh, y, qids, k, comment)
    return dict(path=str(path), rows=docs, queries=1, bytes=nbytes, seconds=time.perf_counter() - t0)


# ---------------------------------------------------------------------------------------------
# MSLR-WEB30K-shaped raw features

# (features, scale, decimals, floor): the four groups of write_mslr
MSLR_GROUPS = ((40, 1e3, 0, True), (40, 30.0, 4, False), (40, 1.0, 6, False), (16, 3e4, 0, False))
MSLR_CHUNK_ROWS = 5_000


def write_mslr(path, queries=5000, docs=100, seed=0) -> dict:
    """MSLR-WEB30K-shaped file: raw, heavy-tailed feature values of very different scales."""
    if queries < 1 or docs < 1:
        raise ValueError("need queries, docs >= 1")
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    nf = sum(g[0] for g in MSLR_GROUPS)
    w = _hidden_weights(rng, nf).astype(np.float64)
    scale_of = np.concatenate([np.full(g[0], g[1]) for g in MSLR_GROUPS])
    mean_g = 0.7  # gamma(0.7): mean 0.7, variance 0.7
    sd_score = math.sqrt(float((w * w).sum()) * 0.7)
    noise_sd, query_sd = 0.6, 0.5
    thresholds = _thresholds(5, math.sqrt(1.0 + noise_sd**2 + query_sd**2))
    wi = _ndigits(nf)
    chunk_q = max(1, MSLR_CHUNK_ROWS // docs)
    nbytes = 0
    with open(path, "wb") as fh:
        for q0 in range(0, queries, chunk_q):
            nq = min(chunk_q, queries - q0)
            n = nq * docs
            g = rng.gamma(0.7, 1.0, size=(n, nf))
            offsets = np.repeat(_uniform_noise(rng, nq, query_sd), docs)
            z = ((g - mean_g) @ w) / sd_score + _uniform_noise(rng, n, noise_sd) + offsets
            y = np.searchsorted(thresholds, z, side="right").astype(np.int64)
            qids = np.repeat(np.arange(q0 + 1, q0 + nq + 1, dtype=np.int64), docs)
            x = g * scale_of
            widths = [1, 5, _ndigits(queries)]
            slots = []
            col = 0
            for k, _, dec, _ in MSLR_GROUPS:
                xi = np.floor(x[:, col:col + k]).astype(np.int64)
                iw = max(1, _ndigits(int(xi.max())))
                sw = 1 + wi + 1 + iw + (1 + dec if dec else 0)
                slots.append((col, k, dec, iw, sw))
                widths.append(k * sw)
                col += k
            widths.append(1)
            cv = _Canvas(n, widths)
            _put_uint(cv.field(0), y)
            cv.set(1, _const(" qid:"))
            _put_uint(cv.field(2), qids)
            for f, (col, k, dec, iw, sw) in enumerate(slots, start=3):
                v = x[:, col:col + k]
                if dec:
                    units = np.round(v * 10**dec).astype(np.int64)
                    ip, fp = np.divmod(units, 10**dec)
                else:
                    ip, fp = np.floor(v).astype(np.int64), None
                b = cv.blocks(f, k)
                b[:, :, 0] = SP
                _put_uint(b[:, :, 1:1 + wi], np.broadcast_to(np.arange(col + 1, col + k + 1), (n, k)))
                b[:, :, 1 + wi] = COLON
                _put_uint(b[:, :, 2 + wi:2 + wi + iw], ip)
                if dec:
                    b[:, :, 2 + wi + iw] = DOT
                    _put_uint(b[:, :, 3 + wi + iw:], fp, zero_fill=True)
            cv.set(len(widths) - 1, 10)
            nbytes += cv.write(fh)
    return dict(path=str(path), rows=queries * docs, queries=queries, bytes=nbytes,
                seconds=time.perf_counter() - t0)


# ---------------------------------------------------------------------------------------------
# parse benchmark writer

VALUE_WIDTH = 10  # [sign][i1][i0][.][f0..f5]  or  [sign][m][.][d0 d1 d2][e][s][x1][x0]


def _varied_values(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """(*shape, VALUE_WIDTH) value texts in mixed notations, PAD where unused."""
    cls = rng.integers(0, 100, size=shape, dtype=np.int8)
    trimmed, integer = (cls >= 40) & (cls < 70), (cls >= 70) & (cls < 85)  # cls < 40: '%.6f'
    sci = cls >= 85

    # '%.6f' and '%g'-like: [sign][ip][.][6 fraction digits]
    a = np.empty(shape + (VALUE_WIDTH,), dtype=np.uint8)
    ip = rng.integers(1, 100, size=shape, dtype=np.int64)
    ip[rng.random(shape) < 0.8] = 0
    k = rng.integers(0, SCALE, size=shape, dtype=np.int64)
    keep = 10 ** rng.integers(0, 6, size=shape, dtype=np.int64)  # trimmed: 1-6 decimals
    k = np.where(trimmed, k // keep * keep, k)
    neg = (rng.random(shape) < 0.05) & ((k > 0) | (ip > 0))
    a[..., 0] = np.where(neg, MINUS, PAD)
    _put_uint(a[..., 1:3], ip)
    a[..., 3] = DOT
    frac = a[..., 4:10]
    _put_uint(frac, k, zero_fill=True)
    trimmed_frac = np.where(trimmed[..., None], frac, ZERO + 1)  # only strip the trimmed class
    all_zero = _strip_trailing_zeros(trimmed_frac)
    frac[trimmed] = trimmed_frac[trimmed]
    a[..., 3][trimmed & all_zero] = PAD

    # integers 0..9999 (skewed to small): digits in the last 4 slots
    mag = rng.integers(1, 5, size=shape, dtype=np.int64)
    iv = rng.integers(0, 10**mag)
    b = np.zeros(shape + (VALUE_WIDTH,), dtype=np.uint8)
    _put_uint(b[..., 6:10], iv)

    # scientific: [sign][m][.][d0 d1 d2][e|E][-|+][x1][x0], e.g. 1.5e-03, 2E+01
    c = np.empty(shape + (VALUE_WIDTH,), dtype=np.uint8)
    c[..., 0] = np.where(rng.random(shape) < 0.05, MINUS, PAD)
    _put_uint(c[..., 1:2], rng.integers(1, 10, size=shape, dtype=np.int64))
    c[..., 2] = DOT
    dec = c[..., 3:6]
    _put_uint(dec, rng.integers(0, 1000, size=shape, dtype=np.int64), zero_fill=True)
    c[..., 2][_strip_trailing_zeros(dec)] = PAD
    c[..., 6] = np.where(rng.random(shape) < 0.15, ord("E"), ord("e"))
    negexp = rng.random(shape) < 0.8
    c[..., 7] = np.where(negexp, MINUS, PLUS)
    exp = np.where(negexp, rng.integers(1, 10, size=shape), rng.integers(0, 3, size=shape))
    _put_uint(c[..., 8:10], exp, zero_fill=True)

    out = np.where(integer[..., None], b, a)
    return np.where(sci[..., None], c, out)


def write_parse(path, mb=200, features=136, seed=0) -> dict:
    """About mb * 10^6 bytes of mixed sparse/dense rows with varied number formatting."""
    if mb <= 0 or features < 1:
        raise ValueError("need mb > 0 and features >= 1")
    t0 = time.perf_counter()
    target = int(mb * 1_000_000)
    rng = np.random.default_rng(seed)
    tmpl = _feature_template(features, VALUE_WIDTH)
    label_cum = np.cumsum([0.45, 0.30, 0.15, 0.07])  # labels 0..4
    com_a = _const(" # docid = P")
    com_b1, com_b2 = _const(" #docid = GX"), _const(" inc = 1 prob = 0.")
    cw = len(com_b1) + 9 + len(com_b2) + 6
    nbytes = rows = queries = 0
    qid = 0
    with open(path, "wb") as fh:
        while nbytes < target:
            sizes = rng.integers(20, 401, size=PARSE_CHUNK_QUERIES)
            n = int(sizes.sum())
            qids = np.repeat(np.arange(qid + 1, qid + 1 + len(sizes), dtype=np.int64), sizes)
            qid += len(sizes)
            y = np.searchsorted(label_cum, rng.random(n), side="right")
            dense = rng.random(n) < 0.4
            keep_p = np.where(dense, 1.0, 0.02 + 0.48 * rng.random(n))
            present = rng.random((n, features)) < keep_p[:, None]

            cv = _Canvas(n, [1, 5, _ndigits(qids.max()), features * tmpl.shape[1], cw, 1])
            _put_uint(cv.field(0), y)
            cv.set(1, _const(" qid:"))
            _put_uint(cv.field(2), qids)
            feats = cv.blocks(3, features)
            feats[...] = tmpl
            feats[:, :, -VALUE_WIDTH:] = _varied_values(rng, (n, features))
            feats[~present] = PAD

            com = cv.field(4)
            com[...] = PAD
            kind = rng.integers(0, 10, size=n)  # 0-4 none, 5-7 '# docid = P..', 8-9 MQ2008-like
            docno = np.arange(rows + 1, rows + n + 1, dtype=np.int64)
            a, b = (kind >= 5) & (kind < 8), kind >= 8
            com[a, : len(com_a)] = com_a
            com[a, len(com_a) : len(com_a) + 9] = _uint_field(docno[a], 9, zero_fill=True)
            o = len(com_b1)
            com[b, :o] = com_b1
            com[b, o : o + 9] = _uint_field(docno[b], 9, zero_fill=True)
            com[b, o + 9 : o + 9 + len(com_b2)] = com_b2
            prob = rng.integers(0, SCALE, size=int(b.sum()), dtype=np.int64)
            com[b, cw - 6 :] = _uint_field(prob, 6, zero_fill=True)
            cv.set(5, 10)

            lengths = cv.row_lengths()
            room = target - nbytes
            if int(lengths.sum()) > room:  # last chunk: stop at the row that crosses the target
                keep_rows = int(np.searchsorted(np.cumsum(lengths), room, side="right"))
                keep_rows = max(keep_rows, 1)
                nbytes += cv.write(fh, keep_rows)
                rows += keep_rows
                queries += len(np.unique(qids[:keep_rows]))
                break
            nbytes += cv.write(fh)
            rows += n
            queries += len(sizes)
    return dict(path=str(path), rows=rows, queries=queries, bytes=nbytes,
                seconds=time.perf_counter() - t0)


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("letor", help="dense LETOR file with graded labels")
    p.add_argument("out")
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--docs", type=int, default=100, help="documents per query")
    p.add_argument("--features", type=int, default=46)
    p.add_argument("--levels", type=int, default=5, help="labels are 0..levels-1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--docid", action="store_true", help="append '# docid = D<qid>-<n>'")
    p = sub.add_parser("binary", help="one query, binary labels, dense")
    p.add_argument("out")
    p.add_argument("--docs", type=int, default=1_000_000)
    p.add_argument("--features", type=int, default=17)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--docid", action="store_true", help="append '# docid = B<n>'")
    p = sub.add_parser("parse", help="~MB of mixed sparse/dense rows with varied number formats")
    p.add_argument("out")
    p.add_argument("--mb", type=float, default=200.0, help="size in 10^6 bytes")
    p.add_argument("--features", type=int, default=136)
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("mslr", help="MSLR-WEB30K-shaped raw features (counts, BM25-like, fractions, large)")
    p.add_argument("out")
    p.add_argument("--queries", type=int, default=5000)
    p.add_argument("--docs", type=int, default=100, help="documents per query")
    p.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if a.cmd == "letor":
        r = write_letor(a.out, a.queries, a.docs, a.features, a.levels, a.seed, a.docid)
    elif a.cmd == "mslr":
        r = write_mslr(a.out, a.queries, a.docs, a.seed)
    elif a.cmd == "binary":
        r = write_binary(a.out, a.docs, a.features, a.seed, a.docid)
    else:
        r = write_parse(a.out, a.mb, a.features, a.seed)
    print(
        f"{r['path']}: {r['rows']} rows, {r['queries']} queries, {r['bytes']} bytes "
        f"({r['bytes'] / 1e6:.1f} MB), {r['seconds']:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
