"""Models of svm_rank/SVMlight, liblinear(-ranksvm) and sofia-ml: read, scored as their own predict
programs score, converted both ways.

The expected scores are the tools' own outputs, made by the real programs (tests/data/foreign/
README.md says how). Each tool prints its scores rounded (liblinear and sofia-ml `%g`, 6
significant digits; svm_classify `%.8g`; svm_rank_classify `%.8f`): rankkit's score, printed with
the same format, must give the same characters, on every document. Negative controls show that
the tools' float roundings matter at that precision, so these tests can fail.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest

from rankkit import commands
from rankkit.errors import ModelError, UsageError
from rankkit.io.foreign_models import detect_format, load_model
from rankkit.io.model import Model, read_model, write_model
from tests.test_cli import assert_one_line_error, rankkit

FOREIGN = Path(__file__).resolve().parent / "data" / "foreign"
TEST, EXTRA = FOREIGN / "test.txt", FOREIGN / "extra.txt"

# (model file, format it must be detected as, scores file stem, the tool's printf format, data files)
FIXTURES = [
    ("liblinear-ranksvm.model", "liblinear", "liblinear-ranksvm", "%g", ("test", "extra")),
    ("liblinear-svr-bias.model", "liblinear", "liblinear-svr-bias", "%g", ("test", "extra")),
    ("svm_rank.model", "svm_rank", "svm_rank", "%.8f", ("test", "extra")),
    ("svmlight-rank.model", "svm_rank", "svmlight-rank", "%.8g", ("test", "extra")),
    ("svmlight-classify.model", "svm_rank", "svmlight-classify", "%.8g", ("test", "extra")),
    ("sofia-ml.model", "sofia-ml", "sofia-ml", "%g", ("test",)),
    # rankkit.model converted by `rankkit convert`, then scored by the tools (README.md)
    ("converted.liblinear.model", "liblinear", "converted.liblinear", "%g", ("test", "extra")),
    ("converted.svm_rank.model", "svm_rank", "converted.svm_rank", "%.8f", ("test", "extra")),
    ("converted.svm_rank.model", "svm_rank", "converted.svm_classify", "%.8g", ("test",)),
    ("converted.sofia-ml.model", "sofia-ml", "converted.sofia-ml", "%g", ("test",)),
]


def _tool_scores(stem: str, data: str) -> list[str]:
    return [line.split("\t")[0].strip() for line in (FOREIGN / f"{stem}.{data}.scores").read_text().splitlines()]


def _predict(tmp_path, data, model, **kw) -> np.ndarray:
    out = tmp_path / "scores.txt"
    commands.predict(str(data), str(model), str(out), **kw)
    return np.array([float(x) for x in out.read_text().split()])


@pytest.mark.parametrize("model, fmt, stem, printf, datas", FIXTURES, ids=[f[2] for f in FIXTURES])
def test_scores_equal_the_tools_own_predict(tmp_path, model, fmt, stem, printf, datas):
    assert detect_format((FOREIGN / model).read_bytes()) == fmt
    for data in datas:
        theirs = _tool_scores(stem, data)
        ours = [printf % s for s in _predict(tmp_path, FOREIGN / f"{data}.txt", FOREIGN / model)]
        assert ours == theirs, (data, [(a, b) for a, b in zip(ours, theirs) if a != b][:5])
        # the format named explicitly gives the same
        assert [printf % s for s in _predict(tmp_path, FOREIGN / f"{data}.txt", FOREIGN / model, model_format=fmt)] \
            == theirs


@pytest.mark.parametrize("stem, printf, tool_format", [
    ("converted.svm_rank", "%.8f", "svm_rank"),  # svm_rank stores feature values as C floats
    ("converted.sofia-ml", "%g", "sofia-ml"),  # sofia-ml computes in C floats
])
def test_negative_control_float_roundings_matter(tmp_path, stem, printf, tool_format):
    """rankkit's own double arithmetic with the same weights misses the tool's printed scores:
    without the tool's roundings, test_scores_equal_the_tools_own_predict would fail."""
    naive = [printf % s for s in _predict(tmp_path, TEST, FOREIGN / "rankkit.model")]
    theirs = _tool_scores(stem, "test")
    assert sum(a != b for a, b in zip(naive, theirs)) >= 1
    exact = [printf % s for s in _predict(tmp_path, TEST, FOREIGN / f"{stem.replace('_classify', '_rank')}.model")]
    assert exact == theirs


def test_liblinear_bias_and_svmlight_threshold_are_used(tmp_path):
    svr = load_model(str(FOREIGN / "liblinear-svr-bias.model"))
    assert svr.bias == 1.0 and svr.bias_weight != 0.0 and svr.n_features == 20
    clf = load_model(str(FOREIGN / "svmlight-classify.model"))
    assert clf.info["threshold_b"] != 0.0 and clf.constant == -clf.info["threshold_b"]
    # svmlight-rank.model keeps every support vector (26): the weights are their alpha-weighted sum
    rank = load_model(str(FOREIGN / "svmlight-rank.model"))
    assert rank.info["support_vectors"] == 26
    # sofia-ml: weight 0 is the bias feature x_0 = 1
    sofia = load_model(str(FOREIGN / "sofia-ml.model"))
    assert sofia.n_features == 20 and sofia.constant == pytest.approx(6.19316e-10)


def test_detection():
    assert detect_format((FOREIGN / "rankkit.model").read_bytes()) == "rankkit"
    assert detect_format(b"1 qid:1 1:0.5\n") is None  # data, not a model
    assert detect_format(b"0.5\n0.25\n") is None  # a column of numbers is not a sofia-ml model
    assert detect_format(b"0 0.5 -1e-3\n") == "sofia-ml"
    assert isinstance(load_model(str(FOREIGN / "rankkit.model")), Model)
    with pytest.raises(ModelError, match=r"not a rankkit model file"):  # unknown: the rankkit reader's message
        load_model(str(TEST))


def _damaged(tmp_path, name, edit) -> Path:
    lines = (FOREIGN / name).read_text().split("\n")
    edit(lines)
    path = tmp_path / f"bad-{name}"
    path.write_text("\n".join(lines))
    return path


def _set(k, text):
    def edit(lines):
        lines[k] = text
    return edit


def _cut(n):
    """Whole lines missing at the end (the file still ends with a newline; `n` counts the empty
    string after the last newline)."""
    def edit(lines):
        del lines[-n:]
        lines.append("")
    return edit


DAMAGED = [
    ("liblinear-ranksvm.model", _set(7, "0.1 x"), "liblinear", r":8: weight line '0.1 x' does not hold one number"),
    ("liblinear-ranksvm.model", _set(7, "nan"), "liblinear", r":8: weight 'nan' is not a finite number"),
    ("liblinear-ranksvm.model", _cut(3), "liblinear", r": expected 20 weights after line 5 \('w'\), found 18 lines"),
    ("liblinear-svr-bias.model", _cut(2), "liblinear", r"expected 20 weights and the bias weight after line 5"),
    ("liblinear-ranksvm.model", _set(0, "solver_type L9"), "liblinear", r":1: unknown liblinear solver_type 'L9'"),
    ("liblinear-ranksvm.model", _set(1, "nr_class 3"), "liblinear", r":2: a multi-class model \(3 classes"),
    ("liblinear-ranksvm.model", _set(3, "bias"), "liblinear", r":4: 'bias' line 'bias' is not 'bias VALUE'"),
    ("liblinear-ranksvm.model", _set(2, "nr_features 20"), "liblinear", r":3: unknown text in liblinear model"),
    ("svm_rank.model", _set(1, "2 # kernel type"), "svm_rank", r":2: kernel type 2 \(rbf\): only linear"),
    ("svm_rank.model", _set(10, "x # threshold b"), "svm_rank", r":11: threshold b 'x' is not a finite number"),
    ("svm_rank.model", _set(11, "1 1:0.5 3:0.1 2:0.2 #"), "svm_rank", r":12: feature index '2' is not above"),
    ("svm_rank.model", _set(11, "1 1:0.5 22:0.1 #"), "svm_rank", r":12: feature index '22' is above the model's"),
    ("svm_rank.model", _set(11, "1 1:abc #"), "svm_rank", r":12: support vector value 'abc' is not a finite"),
    ("svmlight-rank.model", _cut(3), "svm_rank", r": 26 support vectors announced on line 10, found 24 lines"),
    ("svm_rank.model", _cut(6), "svm_rank", r"truncated svm_rank/SVMlight model: no 'highest feature index' line \(line 8\)"),
    ("sofia-ml.model", _set(0, "0 0.5 abc"), "sofia-ml", r":1: weight 2 'abc' is not a finite number"),
    ("sofia-ml.model", _set(0, "0 0.5 1e39"), "sofia-ml", r":1: a weight overflows a C float"),
    ("svm_rank.model", _set(11, "1 1:0.5 3:0.1"), "svm_rank", r":12: support vector line without its closing '#'"),
]


@pytest.mark.parametrize("name, edit, fmt, message", DAMAGED, ids=[f"{d[2]}-{i}" for i, d in enumerate(DAMAGED)])
def test_damaged_models_name_file_and_line(tmp_path, name, edit, fmt, message):
    path = _damaged(tmp_path, name, edit)
    with pytest.raises(ModelError, match=message) as info:
        load_model(str(path), fmt)
    assert str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name, fmt", [("liblinear-ranksvm.model", "liblinear"), ("liblinear-svr-bias.model", "liblinear"),
                                       ("svm_rank.model", "svm_rank"), ("svmlight-rank.model", "svm_rank"),
                                       ("svmlight-classify.model", "svm_rank"), ("sofia-ml.model", "sofia-ml"),
                                       ("rankkit.model", "rankkit")])
def test_every_truncation_of_a_model_is_refused(tmp_path, name, fmt):
    """A model cut anywhere (a full disk, an interrupted copy) is refused by every reader, never
    scored with the weights that happen to be left: each strict prefix of the file, byte by byte
    (the two large files: every 11th byte, and every byte of the end)."""
    raw = (FOREIGN / name).read_bytes()
    path = tmp_path / "cut.model"
    scored = []
    cuts = range(1, len(raw)) if len(raw) <= 1200 else [*range(1, len(raw) - 300, 11), *range(len(raw) - 300, len(raw))]
    for k in cuts:
        path.write_bytes(raw[:k])
        try:
            load_model(str(path), fmt)
        except ModelError as exc:
            assert str(exc).startswith(str(path)) and "\n" not in str(exc)
        else:
            scored.append(k)
    assert scored == [], f"{name}: prefixes of {scored[:5]}... bytes (of {len(raw)}) were read as models"


def test_wrong_model_format_named(tmp_path):
    with pytest.raises(ModelError, match=r":1: not an svm_rank/SVMlight model \(first line 'solver_type"):
        load_model(str(FOREIGN / "liblinear-ranksvm.model"), "svm_rank")
    with pytest.raises(ModelError, match=r":1: not a liblinear model \(first line 'SVM-light"):
        load_model(str(FOREIGN / "svm_rank.model"), "liblinear")
    with pytest.raises(ModelError, match=r"not a rankkit model file"):
        load_model(str(FOREIGN / "sofia-ml.model"), "rankkit")


# -- round trips --------------------------------------------------------------------------------------
def _models(tmp_path) -> dict[str, Path]:
    rng = np.random.default_rng(3)
    dense = tmp_path / "dense.model"
    write_model(str(dense), Model(weights=rng.normal(size=25) / 3.0, header={"solver": "newton", "n_features": 25}))
    sparse = tmp_path / "sparse.model"
    write_model(str(sparse), Model(weights=rng.normal(size=4) * 1e3, header={"solver": "newton", "n_features": 40},
                                   feature_index=np.array([0, 2, 19, 39]), n_total=40))
    return {"dense": dense, "sparse": sparse, "trained": FOREIGN / "rankkit.model"}


def _dense(model: Model) -> np.ndarray:
    if model.feature_index is None:
        return model.weights
    w = np.zeros(model.n_features)
    w[model.feature_index] = model.weights
    return w


@pytest.mark.parametrize("to", ["liblinear", "svm_rank", "sofia-ml", "rankkit"])
def test_round_trip_rankkit_to_foreign_to_rankkit(tmp_path, to):
    for kind, src in _models(tmp_path).items():
        mid, back = tmp_path / f"{kind}.{to}", tmp_path / f"{kind}.back.model"
        commands.convert(str(src), str(mid), to)
        assert detect_format(mid.read_bytes()) == to
        commands.convert(str(mid), str(back), "rankkit")
        a, b = read_model(str(src)), read_model(str(back))
        assert np.array_equal(_dense(a), _dense(b)), kind  # bit for bit
        assert b.n_features == a.n_features
        if to != "rankkit":
            assert b.header["source_format"] == to and b.header["source_file"] == str(mid)
        for data in (TEST, EXTRA):
            assert np.array_equal(_predict(tmp_path, data, src), _predict(tmp_path, data, back))


def test_converted_files_are_the_ones_the_tools_scored(tmp_path):
    """The converted.* fixtures, scored by the tools (test_scores_equal_the_tools_own_predict), are
    what `rankkit convert` writes today from rankkit.model."""
    for to in ("liblinear", "svm_rank", "sofia-ml"):
        out = tmp_path / f"c.{to}"
        commands.convert(str(FOREIGN / "rankkit.model"), str(out), to)
        assert out.read_bytes() == (FOREIGN / f"converted.{to}.model").read_bytes(), to


def test_foreign_to_rankkit_keeps_the_scores(tmp_path):
    # liblinear-ranksvm (no bias): the rankkit model gives liblinear's scores (double arithmetic both)
    out = tmp_path / "ll.model"
    commands.convert(str(FOREIGN / "liblinear-ranksvm.model"), str(out), "rankkit")
    m = read_model(str(out))
    assert m.verified and m.header["source_format"] == "liblinear"
    assert m.header["source_solver_type"] == "L2R_L2LOSS_RANKSVM"
    assert [("%g" % s) for s in _predict(tmp_path, TEST, out)] == _tool_scores("liblinear-ranksvm", "test")
    # a constant term (here liblinear's bias) cannot be kept: said, recorded, scores shifted by it
    out2 = tmp_path / "svr.model"
    commands.convert(str(FOREIGN / "liblinear-svr-bias.model"), str(out2), "rankkit")
    src = load_model(str(FOREIGN / "liblinear-svr-bias.model"))
    m2 = read_model(str(out2))
    assert float(m2.header["source_constant"]) == src.constant != 0.0
    shifted = _predict(tmp_path, TEST, out2) + src.constant
    np.testing.assert_allclose(shifted, _predict(tmp_path, TEST, FOREIGN / "liblinear-svr-bias.model"), rtol=1e-14)
    # and to another tool: the constant becomes liblinear's bias feature / sofia's weight 0 / -b
    for to in ("liblinear", "sofia-ml", "svm_rank"):
        mid = tmp_path / f"svr.{to}"
        commands.convert(str(FOREIGN / "liblinear-svr-bias.model"), str(mid), to)
        assert load_model(str(mid)).constant == src.constant


def test_convert_refuses_kernel_and_zero_based_models(tmp_path):
    import scipy.sparse as sp

    kernel = tmp_path / "k.model"
    write_model(str(kernel), Model(weights=np.array([0.5, -0.25]),
                                   header={"kernel": "rbf", "gamma": 0.5, "n_features": 3},
                                   landmarks=sp.csr_matrix(np.array([[1.0, 0, 2], [0, 1, 0]]))))
    zero = tmp_path / "z.model"
    write_model(str(zero), Model(weights=np.array([1.0, 2.0]), header={"index_base": 0, "n_features": 2}))
    for to in ("liblinear", "svm_rank", "sofia-ml"):
        with pytest.raises(UsageError, match=r"a kernel model \(kernel rbf\) cannot be converted"):
            commands.convert(str(kernel), str(tmp_path / "out"), to)
        with pytest.raises(UsageError, match=r"0-based data .* numbers features from 1"):
            commands.convert(str(zero), str(tmp_path / "out"), to)
    assert not (tmp_path / "out").exists()
    commands.convert(str(kernel), str(tmp_path / "k2.model"), "rankkit")  # rankkit to rankkit: as it is
    assert read_model(str(tmp_path / "k2.model")).landmarks is not None


def test_convert_output_checks(tmp_path):
    data = tmp_path / "data.txt"
    shutil.copy(TEST, data)
    for to in ("liblinear", "svm_rank", "sofia-ml", "rankkit"):
        with pytest.raises(UsageError, match="refusing to replace"):
            commands.convert(str(FOREIGN / "rankkit.model"), str(data), to)
    assert data.read_bytes() == TEST.read_bytes()
    other = tmp_path / "x.model"
    shutil.copy(FOREIGN / "sofia-ml.model", other)
    with pytest.raises(UsageError, match="it is not a liblinear model file"):
        commands.convert(str(FOREIGN / "rankkit.model"), str(other), "liblinear")
    commands.convert(str(FOREIGN / "rankkit.model"), str(other), "sofia-ml")  # same format: replaced
    assert other.read_bytes() == (FOREIGN / "converted.sofia-ml.model").read_bytes()
    with pytest.raises(UsageError, match="it is the input file"):
        commands.convert(str(other), str(other), "sofia-ml")


# -- the command line -------------------------------------------------------------------------------
def test_cli_stdin_gzip_and_errors(tmp_path):
    expected = _tool_scores("svmlight-rank", "test")
    model = (FOREIGN / "svmlight-rank.model").read_bytes()
    proc = rankkit("predict", str(TEST), "-", cwd=tmp_path, stdin=model)
    assert proc.returncode == 0, proc.stderr
    assert ["%.8g" % float(x) for x in proc.stdout.split()] == expected
    gz = tmp_path / "m.model.gz"
    gz.write_bytes(gzip.compress((FOREIGN / "sofia-ml.model").read_bytes()))
    proc = rankkit("predict", str(TEST), str(gz), "--model-format", "sofia-ml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ["%g" % float(x) for x in proc.stdout.split()] == _tool_scores("sofia-ml", "test")
    assert_one_line_error(rankkit("predict", "-", "-", cwd=tmp_path, stdin=b""), "DATA and MODEL cannot both be '-'")
    bad = _damaged(tmp_path, "liblinear-ranksvm.model", _set(9, "1.5e"))
    assert_one_line_error(rankkit("predict", str(TEST), str(bad), cwd=tmp_path),
                          f"rankkit: error: {bad}:10: weight '1.5e' is not a finite number")
    assert_one_line_error(rankkit("predict", str(TEST), "-", cwd=tmp_path, stdin=b"SVM-light Version V6.20\n1 #\n"),
                          "<stdin>:2: kernel type 1 (polynomial): only linear")
    broken = tmp_path / "b.model.gz"
    broken.write_bytes(gzip.compress(model)[:-9])
    assert_one_line_error(rankkit("predict", str(TEST), str(broken), cwd=tmp_path), f"{broken}: damaged gzip file")


def test_cli_convert(tmp_path):
    out = tmp_path / "m.liblinear"
    proc = rankkit("convert", str(FOREIGN / "rankkit.model"), str(out), "--to", "liblinear", "-v", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == (FOREIGN / "converted.liblinear.model").read_bytes()
    proc = rankkit("convert", str(FOREIGN / "svm_rank.model"), "-", "--to", "sofia-ml", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.count(b"\n") == 1
    assert_one_line_error(rankkit("convert", str(TEST), str(tmp_path / "o"), "--to", "svm_rank", cwd=tmp_path),
                          f"{TEST}:1: not a rankkit model file")
    proc = rankkit("convert", str(FOREIGN / "liblinear-svr-bias.model"), str(tmp_path / "r.model"), "--to", "rankkit",
                   cwd=tmp_path)
    assert proc.returncode == 0 and b"differ from its scores by that constant" in proc.stderr


def test_cli_choices_are_the_readers_formats():
    from rankkit import cli
    from rankkit.io.foreign_models import FORMATS

    assert cli.MODEL_FORMATS == FORMATS
