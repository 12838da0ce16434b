"""Decimal codes (rankkit.data.Dataset.value_scale): a file whose values are all exactly k / 10**d
(int32 k, d <= 9) can be read as int32 codes for the stochastic pairwise learners. The codes must
stand for the very doubles the text denotes (checked against a brute-force reference, value by
value, -0.0 and values past int32 included), the streaming reader must give the same doubles
whatever its blocks (d growing from block to block, a later block that cannot be coded), and every
learner must give the same weights bit for bit on either storage: ties, one-document queries,
one-label queries and empty rows included."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rankkit.io.svmlight as S
from rankkit.data import DECIMAL_SCALES
from rankkit.io import parse as K
from rankkit.io.svmlight import decimal_values, parse_bytes, read_svmlight
from rankkit.solvers import sgd


# -- brute force ---------------------------------------------------------------------------------
def naive_digits(values) -> int:
    """The smallest d in 0..9 with every value exactly k / 10**d for an int32 k (-1 if none), by
    exact rational arithmetic: value == k / 10**d as rationals is not what is asked; the double
    float(k) / 10**d (one correctly rounded division) must be the value, bit for bit."""
    for d in range(10):
        ok = True
        for v in values:
            k = round(v * 10**d)
            if abs(k) > 2**31 - 1 or math.copysign(1.0, v) < 0 and v == 0:
                ok = False
                break
            back = float(k) / float(10**d)
            if np.float64(back).view(np.int64) != np.float64(v).view(np.int64):
                ok = False
                break
        if ok:
            return d
    return -1


def _bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


CASES = [
    [0.525617, 0.000001, 0.999999, 1.0, 0.0],
    [1.0, 2.0, 1e9, -5.0],  # integers: d = 0
    [0.5, 0.25, 0.125],  # d = 3
    [0.1 + 0.2],  # not a short decimal: no d
    [-0.0],  # -0.0: a code would give +0.0
    [2147483647.0, -2147483647.0],  # the int32 limits
    [2147483648.0],  # past them
    [214748.3647],  # 2147483647 / 10**4
    [214748.3648],  # one past: no d with an int32 k
    [1e-9, 3e-9],  # d = 9
    [1e-10],  # would need d = 10
    [123456.789012],  # 12 significant digits: past int32 at d = 6
    [0.3, 0.7, 12.5, 1e-3, 7e-7],
    [5.0, 0.5, 0.05, 0.005],  # d grows value by value: the codes so far multiplied up
    [1e6, 0.001, 0.0001],  # d = 4 would put 1e6's code past int32: no d
    [0.5] * 3000 + [1e6, 0.001] + [0.25] * 3000,  # long enough to run on the threads
]


@pytest.mark.parametrize("values", CASES)
def test_digits_and_codes_against_brute_force(values):
    v = np.array(values, dtype=np.float64)
    d = int(K.min_decimal_digits(v, 0))
    assert d == naive_digits(values)
    codes, scale = decimal_values(v)
    if d < 0:
        assert codes is v and scale == 1.0
    else:
        assert codes.dtype == np.int32 and scale == DECIMAL_SCALES[d] == 10.0**d
        assert np.array_equal(_bits(codes / scale), _bits(v))


def test_random_decimals_round_trip():
    rng = np.random.default_rng(0)
    for d in range(10):
        k = rng.integers(-(2**31) + 1, 2**31 - 1, 2000)
        v = k / 10.0**d  # the doubles a parser gives for these d-decimal texts
        codes, scale = decimal_values(v)
        assert scale <= 10.0**d
        assert np.array_equal(_bits(codes / scale), _bits(v))
        assert naive_digits(v[:200].tolist()) <= d


# -- the reader ----------------------------------------------------------------------------------
def _lines(rng, n_rows, digits, big_row=None, full_row=None):
    out = []
    for r in range(n_rows):
        q = r // 7 + 1
        feats = []
        if r % 11 != 5:  # every eleventh row empty
            for j in sorted(rng.choice(30, size=int(rng.integers(1, 9)), replace=False)):
                d = digits(r)
                feats.append(f"{j + 1}:{rng.integers(0, 10**6) / 10**6:.{d}f}")  # in [0, 1), d decimals
        if r == big_row:
            feats = ["1:2147483.648"]  # needs d = 3 and k = 2147483648: past int32
        if r == full_row:
            feats = ["1:0.1234567890123456789"]  # a full-precision double
        out.append(f"{int(rng.integers(0, 3))} qid:{q} " + " ".join(feats))
    return ("\n".join(out) + "\n").encode()


def _stream(monkeypatch, block):
    monkeypatch.setattr(S, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(S, "STREAM_BLOCK_BYTES", block)
    monkeypatch.setattr(S, "PARALLEL_MIN_BYTES", 64)


@pytest.mark.parametrize("kind", ["fixed", "growing", "big-late", "full-late"])
@pytest.mark.parametrize("block", [300, 4096, 1 << 20])
def test_reader_codes_are_the_parsed_doubles(tmp_path, monkeypatch, kind, block):
    rng = np.random.default_rng(1)
    n = 400
    digits = {"fixed": lambda r: 6, "growing": lambda r: 1 + 5 * r // n}.get(kind, lambda r: 4)
    text = _lines(rng, n, digits, big_row=300 if kind == "big-late" else None,
                  full_row=300 if kind == "full-late" else None)
    path = tmp_path / "f.txt"
    path.write_bytes(text)
    whole = parse_bytes(np.frombuffer(text, dtype=np.uint8), str(path))
    assert whole.data.dtype == np.float64
    expected = naive_digits(whole.data.tolist())
    assert (expected >= 0) == (kind in ("fixed", "growing"))
    for streamed in (False, True):
        if streamed:
            _stream(monkeypatch, block)
        ds = read_svmlight(str(path), narrow_values=True, narrow_indices=True)
        monkeypatch.undo()
        assert np.array_equal(_bits(ds.values()), _bits(whole.data))
        assert np.array_equal(ds.indptr, whole.indptr) and np.array_equal(ds.indices, whole.indices)
        assert ds.decimal_codes == (kind in ("fixed", "growing"))
        assert ds.value_scale == (10.0 ** expected if ds.decimal_codes else 1.0)
        assert ds.with_float_values().data.dtype == np.float64
        assert np.array_equal(_bits(ds.with_float_values().data), _bits(whole.data))
        assert ds.max_abs_value() == float(np.abs(whole.data).max())
    plain = read_svmlight(str(path))  # not asked: float64 as always
    assert plain.data.dtype == np.float64 and plain.value_scale == 1.0


def test_reader_codes_with_group_queries_and_no_values(tmp_path):
    path = tmp_path / "g.txt"
    path.write_bytes(b"1 qid:2 1:0.5 3:2\n0 qid:1 2:0.25\n2 qid:2 1:1\n1 qid:1\n")
    ds = read_svmlight(str(path), group_queries=True, narrow_values=True)
    ref = read_svmlight(str(path), group_queries=True)
    assert ds.decimal_codes and ds.value_scale == 100.0
    assert np.array_equal(_bits(ds.values()), _bits(ref.data)) and np.array_equal(ds.order, ref.order)
    path.write_bytes(b"1 qid:1\n0 qid:1\n")  # no values at all
    ds = read_svmlight(str(path), narrow_values=True)
    assert ds.nnz == 0 and ds.data.dtype == np.float64


# -- the learners: the same weights bit for bit ----------------------------------------------------
def _toy(tmp_path):
    """Queries with ties, a one-document query, a one-label query and empty rows."""
    rng = np.random.default_rng(3)
    rows = []
    q = 0
    for size, labels in ((6, 3), (1, 1), (5, 1), (8, 4), (4, 2), (9, 3)):
        q += 1
        for i in range(size):
            feats = " ".join(f"{j + 1}:{rng.integers(0, 1000) / 1000:.3f}" for j in range(5) if rng.random() < 0.8)
            if i == 2:
                feats = ""  # an empty row
            rows.append(f"{int(rng.integers(0, labels))} qid:{q} {feats}")
    path = tmp_path / "toy.txt"
    path.write_text("\n".join(rows) + "\n")
    return path


LEARNERS = [("pegasos", {}), ("sgd", {}), ("pa", {}), ("romma", {}), ("logreg", {}), ("margin-perceptron", {}),
            ("perceptron", {}), ("pegasos", {"ties": True}), ("sgd", {"batch_size": 3}),
            ("pegasos", {"sampler": "query-norm"}), ("sgd", {"sampler": "sofia"}), ("pair-sgd", {}), ("query-sgd", {})]


@pytest.mark.parametrize("learner,extra", LEARNERS)
def test_learners_same_bits_on_codes(tmp_path, learner, extra):
    path = _toy(tmp_path)
    coded = read_svmlight(str(path), narrow_values=True, narrow_indices=True)
    plain = read_svmlight(str(path))
    assert coded.decimal_codes and coded.value_scale == 1000.0
    cls = {s.learner: s for s in vars(sgd).values() if isinstance(s, type) and issubclass(s, sgd.StochasticRankSVM)
           }[learner]
    kw = dict(lam=0.05, iterations=3000, seed=7, exact_objective=True, **extra)
    a, b = cls(**kw).fit(plain), cls(**kw).fit(coded)
    assert np.array_equal(_bits(a.w), _bits(b.w))
    assert _bits([a.objective])[0] == _bits([b.objective])[0] and a.n_active == b.n_active


def test_cli_pegasos_model_same_weights(tmp_path, monkeypatch):
    """`rankkit train --solver pegasos` reads decimal codes; the model's weights are those of the
    float64 run (the read forced to float64)."""
    from rankkit.cli import cli

    path = _toy(tmp_path)
    seen = []
    real = S.read_svmlight

    def spy(*a, **k):
        ds = real(*a, **k)
        seen.append(ds.decimal_codes)
        return ds

    def weights(model):
        return [line for line in model.read_text().splitlines() if not line.startswith(("#", "created", "checksum"))
                and "time" not in line]

    import rankkit.app.train as T

    monkeypatch.setattr(T, "read_svmlight", spy)
    args = ["train", str(path), str(tmp_path / "a.model"), "--solver", "pegasos", "--iterations", "2000"]
    cli.main(args=args, prog_name="rankkit", standalone_mode=False)
    monkeypatch.setattr(T, "read_svmlight", lambda *a, **k: real(*a, **dict(k, narrow_values=False)))
    cli.main(args=args[:2] + [str(tmp_path / "b.model")] + args[3:], prog_name="rankkit", standalone_mode=False)
    assert seen == [True]
    assert weights(tmp_path / "a.model") == weights(tmp_path / "b.model")


# -- the Newton solver and its objective's kernels -------------------------------------------------
def _raw(tmp_path):
    """Raw-feature-like values of different scales (counts, 2-decimal scores, 6-decimal fractions),
    ties, a one-document query, a one-label query and empty rows."""
    rng = np.random.default_rng(5)
    rows = []
    q = 0
    for size, labels in ((7, 3), (1, 1), (5, 1), (9, 4), (4, 2), (12, 3), (6, 2)):
        q += 1
        for i in range(size):
            feats = [f"1:{int(rng.integers(0, 2000))}", f"2:{rng.integers(0, 10**5) / 100:.2f}",
                     f"4:{rng.integers(0, 10**6) / 10**6:.6f}", f"5:{int(rng.integers(0, 2))}"]
            if i == 1:
                feats = []  # an empty row
            rows.append(f"{int(rng.integers(0, labels))} qid:{q} " + " ".join(feats))
    path = tmp_path / "raw.txt"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_sparse_kernels_same_bits_on_codes(tmp_path):
    from rankkit.sparse import column_sumsq, csr_matvec, csr_rmatvec

    coded = read_svmlight(str(_raw(tmp_path)), narrow_values=True, narrow_indices=True)
    plain = read_svmlight(str(tmp_path / "raw.txt"))
    assert coded.decimal_codes and coded.value_scale == 1e6
    rng = np.random.default_rng(0)
    w, z = rng.standard_normal(coded.n_features), rng.standard_normal(coded.n_rows)
    ref = coded.with_float_values()
    for ds in (plain, ref):
        assert np.array_equal(_bits(ds.data), _bits(coded.values()))
    pairs = [(csr_matvec(plain.data, plain.indices, plain.indptr, w, np.empty(plain.n_rows)),
              csr_matvec(coded.data, coded.indices, coded.indptr, w, np.empty(coded.n_rows), coded.value_scale)),
             (csr_rmatvec(plain.data, plain.indices, plain.indptr, z, np.empty(plain.n_features)),
              csr_rmatvec(coded.data, coded.indices, coded.indptr, z, np.empty(coded.n_features), coded.value_scale)),
             (column_sumsq(plain.data, plain.indices, np.empty(plain.n_features)),
              column_sumsq(coded.data, coded.indices, np.empty(coded.n_features), coded.value_scale))]
    # the brute-force reference: scipy's product of the float64 matrix (sums in another order: close)
    X = plain.csr()
    for (a, b), r in zip(pairs, (X @ w, X.T @ z, np.asarray(X.multiply(X).sum(axis=0)).ravel())):
        assert np.array_equal(_bits(a), _bits(b))
        np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-9)


def _edge_codes(rng, d):
    """int32 codes where a quotient by 10**d is most likely to round wrong: the int32 limits,
    around the powers of two and of ten, multiples of 10**d and their neighbours, and random ones."""
    lim = 2**31 - 1
    parts = [np.arange(-4096, 4097), np.arange(lim - 4096, lim + 1), np.arange(-lim, -lim + 4097),
             rng.integers(-lim, lim + 1, 200_000)]
    for e in range(1, 31):
        parts.append(np.arange(2**e - 64, 2**e + 65))
        parts.append(-np.arange(2**e - 64, 2**e + 65))
    for e in range(1, 10):
        parts.append(np.arange(10**e - 64, 10**e + 65))
    parts.append(rng.integers(-(lim // 10**d), lim // 10**d + 1, 20_000) * 10**d + rng.integers(-2, 3, 20_000))
    c = np.concatenate(parts)
    return c[(c >= -lim) & (c <= lim)].astype(np.int32)


@pytest.mark.parametrize("d", range(10))
def test_value_at_is_the_correctly_rounded_quotient(d):
    """rankkit.sparse.value_at reads a code k as RN(k / 10**d) by a multiply and two FMAs
    (Markstein), not a division: every kernel that reads values through it must give the very
    doubles of the division (a plain k * RN(1 / 10**d) misses about one in six). Read back as
    X e_1 (one entry a row: 0.0 + v * 1.0 == v), X' z with z = 1 (one entry a column) and the
    columns' sums of squares."""
    from rankkit.sparse import column_sumsq, csr_matvec, csr_rmatvec

    scale = DECIMAL_SCALES[d]
    codes = _edge_codes(np.random.default_rng(d), d)
    want = codes / scale  # numpy's division: correctly rounded
    n = codes.shape[0]
    got = csr_matvec(codes, np.zeros(n, dtype=np.uint16), np.arange(n + 1, dtype=np.int64), np.ones(1), np.empty(n), scale)
    assert np.array_equal(_bits(got), _bits(want))
    m = 2048  # n one-entry rows, column r % m: X' 1 and the sums of squares add each column's few values in row order
    cols = (np.arange(n) % m).astype(np.uint16)
    ref_sum, ref_sq = np.zeros(m), np.zeros(m)
    np.add.at(ref_sum, cols, want)  # the brute-force sums: unbuffered, row by row in order
    np.add.at(ref_sq, cols, want * want)
    ref_abs = np.zeros(m)
    np.add.at(ref_abs, cols, np.abs(want))
    indptr = np.arange(n + 1, dtype=np.int64)
    got_sum = csr_rmatvec(codes, cols, indptr, np.ones(n), np.empty(m), scale)
    got_sq = column_sumsq(codes, cols, np.empty(m), scale)
    assert np.array_equal(_bits(got_sq), _bits(ref_sq))
    assert np.all(np.abs(got_sum - ref_sum) <= 1e-13 * ref_abs)  # X' z adds chunk by chunk (rankkit.sparse)
    assert np.array_equal(_bits(got_sum), _bits(csr_rmatvec(want, cols, indptr, np.ones(n), np.empty(m))))


@pytest.mark.fuzz
def test_value_at_every_int32_code():
    """Under `make fuzz` (RANKKIT_FUZZ_CASES >= 50000): every int32 code under every scale 10**d,
    d = 1..9 (d = 0 is data[t] itself), value_at equal to the division (about 20 s). In the suite:
    a seeded window of 2**20 codes a scale."""
    import os

    from rankkit.compiler.dispatch import njit
    from rankkit.sparse import value_at

    @njit(cache=False)
    def mismatches(lo, hi, scale):
        cell = np.empty(1, dtype=np.int32)
        bad = 0
        for c in range(lo, hi):
            cell[0] = c
            if value_at(cell, 0, scale) != np.float64(c) / scale:
                bad += 1
        return bad

    every = int(os.environ.get("RANKKIT_FUZZ_CASES", "0")) >= 50000
    rng = np.random.default_rng(7)
    for d in range(1, 10):
        lo = -(2**31) if every else int(rng.integers(-(2**31), 2**31 - 2**20))
        hi = 2**31 if every else lo + 2**20
        assert mismatches(lo, hi, DECIMAL_SCALES[d]) == 0, (d, lo, hi)


@pytest.mark.parametrize("loss", ["squared-hinge", "huber", "logistic"])
@pytest.mark.parametrize("precondition", ["none", "diag", "dense"])
def test_newton_same_bits_on_codes(tmp_path, loss, precondition):
    from rankkit.objectives.pairwise import PairwiseObjective
    from rankkit.solvers.newton import LocalObjective, truncated_newton

    path = _raw(tmp_path)
    coded = read_svmlight(str(path), narrow_values=True, narrow_indices=True)
    plain = read_svmlight(str(path))
    runs = []
    for ds in (plain, coded):
        obj = PairwiseObjective(ds, 1e-4, loss)
        runs.append(truncated_newton(LocalObjective(obj, ds), tol=1e-10, precondition=precondition))
        runs[-1].diag = obj.hess_diag() if loss != "hinge" else None
        runs[-1].H = obj.hess_matrix()
    a, b = runs
    assert np.array_equal(_bits(a.w), _bits(b.w)) and a.iterations == b.iterations
    assert _bits([a.objective])[0] == _bits([b.objective])[0]
    assert np.array_equal(_bits(a.diag), _bits(b.diag)) and np.array_equal(_bits(a.H), _bits(b.H))


def test_cli_newton_model_same_weights_and_auc(tmp_path, monkeypatch):
    """`rankkit train` (newton) reads decimal codes; the model (weights, objective, training AUC of
    --auc) is the float64 run's."""
    from rankkit.cli import cli
    import rankkit.app.train as T

    path = _raw(tmp_path)
    binary = tmp_path / "binary.txt"
    binary.write_text("".join(f"{min(int(line.split()[0]), 1)} " + line.split(" ", 2)[2] + "\n"
                              for line in path.read_text().splitlines()))
    real = S.read_svmlight

    def body(model):
        return [line for line in model.read_text().splitlines()
                if not line.startswith(("created", "checksum")) and "time" not in line]

    for src, extra in ((path, []), (binary, ["--auc"])):
        models = []
        for narrow in (True, False):
            monkeypatch.setattr(T, "read_svmlight", lambda *a, **k: real(*a, **dict(k, narrow_values=narrow and
                                                                                     k.get("narrow_values"))))
            out = tmp_path / f"m{narrow}.model"
            cli.main(args=["train", str(src), str(out), "-C", "0.001", *extra], prog_name="rankkit",
                     standalone_mode=False)
            models.append(body(out))
        assert models[0] == models[1]
        assert not extra or any(line.startswith("train_auc") for line in models[0])


@pytest.mark.parametrize("where", ["none", "late", "early", "all"])
def test_streaming_docid_spans_only_where_docids_are(tmp_path, monkeypatch, where):
    """The streaming reader keeps one block's docid spans at a time and the whole file's only from
    the first docid on: the same docids as the whole-buffer reader, wherever they are."""
    lines = [f"{i % 3} qid:{i // 10 + 1} 1:{i / 8:g} 2:1" for i in range(300)]
    pick = {"none": (), "late": range(280, 300, 3), "early": range(0, 5), "all": range(300)}[where]
    for i in pick:
        lines[i] += f" # docid = D{i} x"
    text = ("\n".join(lines) + "\n").encode()
    path = tmp_path / "d.txt"
    path.write_bytes(text)
    whole = parse_bytes(np.frombuffer(text, dtype=np.uint8), str(path))
    _stream(monkeypatch, 400)
    streamed = read_svmlight(str(path), narrow_values=True)
    monkeypatch.undo()
    assert streamed.docids() == whole.docids()
    assert (streamed.docid_spans is None) == (where == "none")
    assert np.array_equal(_bits(streamed.values()), _bits(whole.data))
