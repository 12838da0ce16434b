"""Model files (rankkit/io/model.py): exact round trip, clear errors, atomic replacement."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from rankkit.errors import ModelError, RankkitError
from rankkit.io import atomic
from rankkit.io.model import FORMAT_VERSION, MAGIC, Model, read_model, write_model

HEADER = {
    "rankkit_version": "0.2.0",
    "solver": "newton",
    "C": 0.1,
    "tol": 1e-06,
    "max_iter": 100,
    "index_base": 1,
    "group_queries": False,
    "converged": True,
    "objective": 2101.558201150425,
    "train_file": "dir with space/tr\\ain\nfi\rle.txt\\",  # backslashes, newline, CR survive the round trip
    "stop_reason": "Newton decrement / objective = 1.9e-09 < tol 1e-06",
}


def _weights(seed=0, n=50) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)
    special = [0.0, -0.0, 1e-300, -1e300, 5e-324, 0.1, 1 / 3, 2**53 + 2.0]
    w[: min(n, 8)] = special[: min(n, 8)]
    return w


def _bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _write(path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _valid_text(n=3) -> str:
    """A format-1 model (no checksum: what rankkit wrote before format 2), checked structurally."""
    weights = "".join(f"{i + 0.5}\n" for i in range(n))
    return f"{MAGIC} 1\nsolver newton\nindex_base 1\nweights {n}\n{weights}"


def signed(text: str) -> str:
    """`text` as format 2: version 2 on line 1 and a correct checksum line after it."""
    text = text.replace(f"{MAGIC} 1\n", f"{MAGIC} {FORMAT_VERSION}\n", 1)
    return text + f"checksum sha256 {hashlib.sha256(text.encode()).hexdigest()}\n"


def _model_error(path) -> ModelError:
    with pytest.raises(ModelError) as info:
        read_model(path)
    assert "\n" not in str(info.value) and info.value.exit_code == 2
    return info.value


def test_round_trip_is_bit_exact(tmp_path):
    w = _weights()
    path = str(tmp_path / "m.txt")
    write_model(path, Model(weights=w, header=dict(HEADER)))
    back = read_model(path)
    np.testing.assert_array_equal(_bits(back.weights), _bits(w))
    assert back.n_features == w.shape[0]
    expected = {
        k: ("true" if v else "false") if isinstance(v, bool) else repr(v) if isinstance(v, float) else str(v)
        for k, v in HEADER.items()
    }
    assert back.header == expected
    assert not back.zero_based
    assert read_model(path).header == expected  # reading twice is the same


def test_file_layout(tmp_path):
    path = tmp_path / "m.txt"
    write_model(str(path), Model(weights=np.array([0.1, -2.0, 1 / 3]), header={"solver": "newton", "index_base": 0}))
    assert path.read_text() == (
        signed(f"{MAGIC} {FORMAT_VERSION}\nsolver newton\nindex_base 0\nweights 3\n"
               "0.10000000000000001\n-2\n0.33333333333333331\n")
    )
    assert path.read_text().endswith("\nchecksum sha256 15e16b066ef7286ea6ca053880f2e50ef88b8d10c4d37382c5067628fc8e00ff\n")
    assert read_model(str(path)).zero_based and read_model(str(path)).verified


def test_crlf_and_comments_are_accepted(tmp_path):
    text = _valid_text().replace("solver newton\n", "# a note\nsolver newton\n\n").replace("\n", "\r\n")
    model = read_model(_write(tmp_path / "m.txt", text))
    np.testing.assert_array_equal(model.weights, [0.5, 1.5, 2.5])
    assert model.header == {"solver": "newton", "index_base": "1"}


def test_newer_version_names_line_1(tmp_path):
    newer = signed(_valid_text()).replace(f"{MAGIC} {FORMAT_VERSION}", f"{MAGIC} {FORMAT_VERSION + 1}")
    path = _write(tmp_path / "m.txt", newer)
    err = _model_error(path)
    assert err.line == 1 and str(err).startswith(f"{path}:1: ")
    assert "newer" in err.message and "upgrade" in err.message


@pytest.mark.parametrize("version", ["x", "1.0", "\u00b2", "-1"])
def test_bad_version(tmp_path, version):
    path = _write(tmp_path / "m.txt", _valid_text().replace(f"{MAGIC} 1", f"{MAGIC} {version}"))
    err = _model_error(path)
    assert err.line == 1 and "is not an integer" in err.message


@pytest.mark.parametrize(
    "content",
    [
        "2 qid:1 1:0.5 2:0.25 # docid = a\n1 qid:1 1:1\n",  # a data file passed as MODEL
        "weights 1\n0.5\n",
        "rankkit-model\n",
        "{\"weights\": [1, 2]}\n",
        "\x00\x01binary\x02 \x1b[31m\n",
    ],
)
def test_not_a_model(tmp_path, content):
    path = _write(tmp_path / "m.txt", content)
    err = _model_error(path)
    assert err.line == 1 and "not a rankkit model file" in err.message


def test_binary_and_empty_files(tmp_path):
    path = tmp_path / "m.bin"
    path.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe")  # gzip magic, invalid UTF-8
    assert "not a rankkit model file" in _model_error(str(path)).message
    for content in ["", "\n\n  \n"]:
        err = _model_error(_write(tmp_path / "empty.txt", content))
        assert "is empty" in err.message


def test_missing_and_directory(tmp_path):
    assert "no such model file" in _model_error(str(tmp_path / "nope.txt")).message
    assert "is a directory" in _model_error(str(tmp_path)).message


def test_non_numeric_weight_names_its_line(tmp_path):
    path = _write(tmp_path / "m.txt", _valid_text().replace("1.5\n", "abc\n"))
    err = _model_error(path)
    assert err.line == 6 and "weight 'abc' is not a number" in err.message
    path = _write(tmp_path / "m.txt", _valid_text().replace("2.5\n", "nan\n"))
    err = _model_error(path)
    assert err.line == 7 and "weight 'nan' is not finite" in err.message


@pytest.mark.parametrize(
    "edit,phrase",
    [
        (lambda t: t.replace("2.5\n", ""), "expected 3 weights"),  # truncated
        (lambda t: t + "3.5\n", "expected 3 weights"),  # too many
        (lambda t: t.split("weights")[0], "no 'weights' line"),  # cut inside the header
        (lambda t: t.replace("weights 3", "weights three"), "weights count 'three' is not an integer"),
        (lambda t: t.replace("weights 3", "weights \u00b3"), "is not an integer"),
    ],
)
def test_wrong_weight_count(tmp_path, edit, phrase):
    err = _model_error(_write(tmp_path / "m.txt", edit(_valid_text())))
    assert phrase in err.message


# -- atomic writing -------------------------------------------------------------------------------
def _only(tmp_path, *names):
    assert sorted(os.listdir(tmp_path)) == sorted(names), "temporary files left behind"


def test_written_through_temp_file_and_rename(tmp_path, monkeypatch):
    calls = []
    real_replace = os.replace

    def spy(src, dst):
        calls.append((src, dst))
        assert open(src).read().startswith(MAGIC)  # complete before it becomes visible
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", spy)
    path = tmp_path / "m.txt"
    path.write_text("old\n")
    write_model(str(path), Model(weights=_weights(1, 5)))
    assert len(calls) == 1
    src, dst = calls[0]
    assert os.path.dirname(src) == str(tmp_path) and dst == str(path) and src != dst
    assert path.read_text().startswith(MAGIC)
    _only(tmp_path, "m.txt")
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("fail", ["replace", "fsync"])
def test_failed_write_keeps_old_model(tmp_path, monkeypatch, fail):
    path = tmp_path / "m.txt"
    path.write_bytes(b"rankkit-model 1\nweights 1\n0.25\n")
    before = path.read_bytes()

    def broken(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, fail, broken)
    with pytest.raises(RankkitError) as info:
        write_model(str(path), Model(weights=_weights(2, 1000)))
    assert "No space left on device" in str(info.value) and "\n" not in str(info.value)
    assert path.read_bytes() == before
    _only(tmp_path, "m.txt")


def test_interrupted_write_keeps_old_model(tmp_path, monkeypatch):
    path = tmp_path / "m.txt"
    path.write_bytes(b"old model\n")

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_model(str(path), Model(weights=_weights(3, 10)))
    assert path.read_bytes() == b"old model\n"
    _only(tmp_path, "m.txt")


def test_unwritable_destinations(tmp_path):
    for path, phrase in [(tmp_path / "no" / "m.txt", "does not exist"), (tmp_path, "is a directory")]:
        with pytest.raises(RankkitError, match=phrase):
            atomic.check_writable(str(path))  # the same answer before any work is done
        with pytest.raises(RankkitError, match=phrase):
            write_model(str(path), Model(weights=np.ones(2)))
    atomic.check_writable(str(tmp_path / "new.txt"))
    atomic.check_writable("-")
    _only(tmp_path)


def test_atomic_write_goes_through_symlinks_and_into_pipes(tmp_path):
    """A symlinked output keeps its link (the target is replaced); a FIFO is written, not replaced."""
    import os
    import threading

    from rankkit.io.atomic import atomic_open

    real = tmp_path / "real.txt"
    real.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    with atomic_open(str(link)) as fh:
        fh.write("new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    with atomic_open(str(fifo)) as fh:
        fh.write("through the pipe\n")
    reader.join(timeout=10)
    assert got == ["through the pipe\n"] and fifo.exists() and not fifo.is_file()


# -- sparse models for huge index spaces ----------------------------------------------------------
from rankkit.data import COMPACT_MIN_FEATURES, Dataset  # noqa: E402
from tests.conftest import make_dataset  # noqa: E402

TYPO_BASE = [(d % 3, q + 1, [(d * 7 + q) % 5 / 4, (d + q) % 3 / 2, d / 3]) for q in range(3) for d in range(4)]
SAMPLE_TRAIN = os.path.join(os.path.dirname(__file__), "..", "data", "sample.train.txt")
PARAMS = {"C": 0.1, "tol": None, "max_iter": None, "loss": None, "query_norm": False}


def _typo_file(tmp_path, index: int, name="typo.txt") -> str:
    """The issue's case: a 12-document file, three features, and one mistyped index `index:1`."""
    lines = []
    for k, (label, qid, x) in enumerate(TYPO_BASE):
        extra = f" {index}:1" if k == 6 else ""
        lines.append(f"{label} qid:{qid} 1:{x[0]} 2:{x[1]} 3:{x[2]}{extra}\n")
    path = tmp_path / name
    path.write_text("".join(lines))
    return str(path)


def _dense_csr(ds):
    return ds.csr().toarray()


def test_compact_columns_only_when_worthwhile():
    small = make_dataset()
    assert small.compact_columns() == (small, None)
    n = COMPACT_MIN_FEATURES + 10  # 6 of n columns used: compacted
    wide = small.with_changes(indices=(small.indices * (n // small.n_features)).astype(np.int32), n_features=n)
    assert wide.compact_columns()[1] is not None
    # many columns, more than half of them used: nothing to gain
    X = np.zeros((2, n))
    X[0, : n // 2 + 1] = 1.0
    X[1, -1] = 2.0
    import scipy.sparse as sp

    A = sp.csr_matrix(X)
    busy = Dataset(data=A.data, indices=A.indices.astype(np.int32), indptr=A.indptr.astype(np.int64),
                   y=np.array([1.0, 0.0]), qid=np.zeros(2, np.int64), qptr=np.array([0, 2], np.int64),
                   n_features=n).validate()
    assert busy.compact_columns() == (busy, None)
    assert busy.compact_columns(always=True)[0].n_features == n // 2 + 2
    forced, used = small.compact_columns(always=True)
    np.testing.assert_array_equal(used, np.unique(small.indices))


def test_csr_with_fewer_columns_and_trailing_empty_rows():
    """Dataset.csr(n) (kernel scoring, exact path validation) once failed with IndexError when the
    last rows had no features (`path --method exact --kernel rbf` with such a validation file)."""
    ds = make_dataset(seed=2, sizes=(3, 4), n_features=5, one_label_queries=())
    X = ds.csr().toarray()
    X[-2:] = 0.0
    import scipy.sparse as sp

    A = sp.csr_matrix(X)
    ds = ds.with_changes(data=A.data, indices=A.indices.astype(np.int32), indptr=A.indptr.astype(np.int64))
    for n in range(6):
        np.testing.assert_array_equal(ds.csr(n).toarray(), X[:, :n])


def test_compact_and_take_columns_against_dense():
    base = make_dataset(seed=3, n_features=8)
    spread = np.array([5, 17, 40_000, 70_000, 70_001, 99_990, 123_456, 200_000], dtype=np.int32)
    ds = base.with_changes(indices=spread[base.indices], n_features=200_001)
    comp, used = ds.compact_columns()
    assert used is not None and used.dtype == np.int64 and comp.n_features == used.shape[0]
    np.testing.assert_array_equal(used, np.unique(spread[np.unique(base.indices)]))
    full = ds.csr()
    np.testing.assert_array_equal(comp.csr().toarray(), full[:, used].toarray())
    np.testing.assert_array_equal(comp.y, ds.y)
    np.testing.assert_array_equal(comp.qptr, ds.qptr)
    other = make_dataset(seed=4, n_features=8)  # a validation set: some of its columns are not in `used`
    other = other.with_changes(indices=np.array([5, 6, 40_000, 7, 70_001, 8, 123_456, 9], np.int32)[other.indices],
                               n_features=200_001)
    taken = other.take_columns(used)
    assert taken.n_features == used.shape[0]
    np.testing.assert_array_equal(taken.csr().toarray(), other.csr()[:, used].toarray())


def test_sparse_model_round_trip_and_scores_equal_the_dense_model(tmp_path):
    from rankkit.scoring import model_scores as _linear_scores

    n = 50_000
    rng = np.random.default_rng(5)
    index = np.sort(rng.choice(n, 40, replace=False)).astype(np.int64)
    values = rng.standard_normal(40)
    values[3] = 0.0
    path = str(tmp_path / "m.txt")
    write_model(path, Model(weights=values, feature_index=index, n_total=n, header={"index_base": 1, "n_features": n}))
    assert f"weights sparse 40 {n}\n" in open(path).read()
    back = read_model(path)
    assert back.sparse and back.n_features == n and back.verified
    np.testing.assert_array_equal(back.feature_index, index)
    np.testing.assert_array_equal(_bits(back.weights), _bits(values))
    # data: some entries on model features, some not, some beyond the model's n_features
    base = make_dataset(seed=6, n_features=10)
    cols = np.array([index[0], index[7], 3, index[39], 49_999, n + 5, index[20], 0, 12_345, index[3]], np.int32)
    ds = base.with_changes(indices=cols[base.indices], n_features=n + 6)
    dense = np.zeros(n)
    dense[index] = values
    expected = ds.csr(n) @ dense
    got, ignored = _linear_scores(back, ds)
    np.testing.assert_array_equal(got, expected)
    assert (got, ignored)[1] == _linear_scores(Model(weights=dense), ds)[1] > 0
    np.testing.assert_array_equal(got, _linear_scores(Model(weights=dense), ds)[0])


@pytest.mark.parametrize("solver", ["newton", "sgd"])
def test_compact_training_equals_training_on_all_columns(solver):
    """The same fit on 50,000 columns and on the 20 that occur. Stochastic solvers give the same
    weights bit for bit. Newton's are equal to rounding only: its dot products and norms over w
    (numpy/BLAS reductions) group the terms by position in the vector, and the zeros of the unused
    columns shift that grouping, so the last bit can differ; the objective is then equal to 1e-12."""
    from rankkit.solvers.options import solver_kwargs as _solver_params
    from rankkit.io.svmlight import read_svmlight
    from rankkit.solvers import SOLVERS

    ds = read_svmlight(SAMPLE_TRAIN)
    spread = np.sort(np.random.default_rng(0).choice(50_000, ds.n_features, replace=False)).astype(np.int32)
    wide = ds.with_changes(indices=spread[ds.indices], n_features=50_000)
    comp, used = wide.compact_columns(always=True)
    np.testing.assert_array_equal(used, spread)
    spec = SOLVERS[solver]
    params = _solver_params(spec, {"C": None if spec.stochastic else 0.1, "loss": spec.losses[0]},
                            {"iterations": 3000} if spec.stochastic else None,
                            False)
    a = spec.load()(**params).fit(wide)
    b = spec.load()(**params).fit(comp)
    assert np.all(np.delete(a.w, used) == 0.0)  # a column that never occurs gets weight exactly 0
    if spec.stochastic:
        np.testing.assert_array_equal(_bits(a.w[used]), _bits(b.w))
    else:
        assert a.iterations == b.iterations and a.converged and b.converged
        assert b.objective == pytest.approx(a.objective, rel=1e-12)
        np.testing.assert_allclose(b.w, a.w[used], rtol=1e-10, atol=1e-14)


def _train(train_file, model_file, **kw):
    from rankkit import commands

    return commands.train(train_file, model_file, None, dict(PARAMS), warn=lambda msg: None, **kw)


def test_a_mistyped_index_gives_a_small_sparse_model(tmp_path):
    """The issue's 12-document file with `100000000:1` (before: 110 s, 7.2 GB, a 200 MB model):
    a sparse model of 4 weights, the true n_features, and no allocation of the index space. Its
    weights and scores are those of the dense model of the same file with the index at 50,000."""
    import tracemalloc

    from rankkit.commands import predict
    from rankkit.scoring import model_scores as _linear_scores
    from rankkit.io.svmlight import read_svmlight

    _train(_typo_file(tmp_path, 4, "warm.txt"), str(tmp_path / "warm.txt.model"))  # compile outside the trace
    typo = _typo_file(tmp_path, 100_000_000)
    tracemalloc.start()
    try:
        result = _train(typo, str(tmp_path / "sparse.model"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20e6, peak  # a dense vector of 1e8 weights alone would be 800 MB
    assert os.path.getsize(tmp_path / "sparse.model") < 2000
    model = read_model(str(tmp_path / "sparse.model"))
    assert model.sparse and model.n_features == 100_000_000 and model.header["n_features"] == "100000000"
    np.testing.assert_array_equal(model.feature_index, [0, 1, 2, 99_999_999])

    moved = _typo_file(tmp_path, 50_000, "moved.txt")  # the brute-force reference: a dense model
    dense_result = _train(moved, str(tmp_path / "dense.model"))
    dense = read_model(str(tmp_path / "dense.model"))
    assert not dense.sparse and dense.n_features == 50_000
    assert np.all(np.delete(dense.weights, [0, 1, 2, 49_999]) == 0.0)
    np.testing.assert_allclose(model.weights, dense.weights[[0, 1, 2, 49_999]], rtol=1e-12, atol=1e-15)
    assert result.objective == pytest.approx(dense_result.objective, rel=1e-12)
    sparse_scores = predict(typo, str(tmp_path / "sparse.model"), str(tmp_path / "s1.txt"))
    dense_scores = predict(moved, str(tmp_path / "dense.model"), str(tmp_path / "s2.txt"))
    np.testing.assert_allclose(sparse_scores, dense_scores, rtol=1e-12, atol=1e-15)
    # scoring the typo file with the sparse model = X w with the model's 4 weights, column by column
    ds = read_svmlight(typo)
    X = ds.csr()
    expected = (X[:, [0, 1, 2, 99_999_999]] @ model.weights)
    np.testing.assert_allclose(_linear_scores(model, ds)[0], expected, rtol=1e-15, atol=0)


def test_largest_index_trains_and_predicts(tmp_path):
    """Index 2^31-1 (the reader's limit is another matter): training and the model stay small."""
    import tracemalloc

    from rankkit.commands import predict

    _train(_typo_file(tmp_path, 4, "warm.txt"), str(tmp_path / "warm.txt.model"))
    typo = _typo_file(tmp_path, 2**31 - 1)
    tracemalloc.start()
    try:
        _train(typo, str(tmp_path / "m.model"))
        scores = predict(typo, str(tmp_path / "m.model"), str(tmp_path / "s.txt"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20e6, peak
    model = read_model(str(tmp_path / "m.model"))
    assert model.n_features == 2**31 - 1 and model.feature_index[-1] == 2**31 - 2
    assert np.all(np.isfinite(scores)) and scores.shape == (12,)


def test_stochastic_training_with_validation_on_compacted_columns(tmp_path):
    """--valid with a compacted training set: the validation file's columns are mapped the same way."""
    from rankkit import commands

    typo = _typo_file(tmp_path, 100_000_000)
    valid = _typo_file(tmp_path, 7, "valid.txt")  # a column the training file does not have
    commands.train(typo, str(tmp_path / "m.model"), "sgd", {"C": None, "loss": None}, warn=lambda msg: None,
                   stochastic={"iterations": 200, "valid_file": valid, "seed": 0})
    model = read_model(str(tmp_path / "m.model"))
    assert model.sparse and model.n_features == 100_000_000
