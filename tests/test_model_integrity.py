"""A damaged model file is refused, never scored (issue 10): the checksum of format 2, and the
structural checks every format gets (format 1, written before the checksum, cannot be verified,
only checked). Each damage is tried through the Python reader; a few through `rankkit predict`."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest
import scipy.sparse as sp

from rankkit.errors import ModelError
from rankkit.io.model import FORMAT_VERSION, MAGIC, Model, read_model, write_model
from tests.test_cli import SAMPLE_TEST, assert_one_line_error, rankkit


def _linear() -> Model:
    return Model(weights=np.array([0.5, -1.25, 3e-7]),
                 header={"solver": "newton", "C": 0.1, "index_base": 1, "n_features": 3})


def _kernel() -> Model:
    L = sp.csr_matrix(np.array([[0.5, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, -1.5], [0.0, 0.0, 0.0, 0.0]]))
    return Model(weights=np.array([0.5, -2.0, 0.125]), landmarks=L,
                 header={"solver": "newton", "kernel": "poly", "gamma": 0.5, "degree": 2, "coef0": 1.0,
                         "index_base": 1, "n_features": 4})


def _sparse() -> Model:
    return Model(weights=np.array([0.25, -0.5, 7.0]), feature_index=np.array([2, 40, 99_999]), n_total=100_000,
                 header={"solver": "newton", "index_base": 1, "n_features": 100_000})


MODELS = {"linear": _linear, "kernel": _kernel, "sparse": _sparse}


def _text(tmp_path, kind: str) -> str:
    path = tmp_path / f"{kind}.model"
    write_model(str(path), MODELS[kind]())
    return path.read_text()


def resign(text: str) -> str:
    """`text` (a format-2 model, edited) with its checksum line recomputed: the damage then has to be
    caught by the structural checks, not by the checksum."""
    body = text[: text.rindex("checksum sha256 ")] if "\nchecksum sha256 " in text else text
    return body + f"checksum sha256 {hashlib.sha256(body.encode()).hexdigest()}\n"


def as_format_1(text: str) -> str:
    """`text` as an older rankkit wrote it: version 1, no checksum line."""
    body = text[: text.rindex("checksum sha256 ")]
    return body.replace(f"{MAGIC} {FORMAT_VERSION}\n", f"{MAGIC} 1\n", 1)


def _error(tmp_path, content, name="m.model") -> ModelError:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ModelError) as info:
        read_model(str(path))
    err = info.value
    assert "\n" not in str(err) and err.exit_code == 2 and str(err).startswith(f"{path}")
    return err


def _same(a: Model, b: Model) -> bool:
    def bits(x):
        return np.ascontiguousarray(x, dtype=np.float64).view(np.int64)

    if a.header != b.header or not np.array_equal(bits(a.weights), bits(b.weights)):
        return False
    if (a.feature_index is None) != (b.feature_index is None) or (a.landmarks is None) != (b.landmarks is None):
        return False
    if a.feature_index is not None and not (np.array_equal(a.feature_index, b.feature_index) and a.n_total == b.n_total):
        return False
    if a.landmarks is not None:
        x, y = a.landmarks.tocsr(), b.landmarks.tocsr()
        return x.shape == y.shape and all(np.array_equal(getattr(x, f), getattr(y, f)) for f in ("indptr", "indices")) \
            and np.array_equal(bits(x.data), bits(y.data))
    return True


# -- the good files ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(MODELS))
def test_round_trip_is_verified_and_exact(tmp_path, kind):
    text = _text(tmp_path, kind)
    assert text.startswith(f"{MAGIC} 2\n") and re.search(r"\nchecksum sha256 [0-9a-f]{64}\n\Z", text)
    back = read_model(str(tmp_path / f"{kind}.model"))
    assert back.verified and _same(back, read_model(str(tmp_path / f"{kind}.model")))
    original = MODELS[kind]()
    assert back.n_features == original.n_features
    np.testing.assert_array_equal(back.weights, original.weights)
    if kind != "sparse":  # the same model as format 1: read, every check applied, not verified
        old = tmp_path / "old.model"
        old.write_text(as_format_1(text))
        old_back = read_model(str(old))
        assert not old_back.verified and _same(old_back, back)


# -- truncation ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(MODELS))
def test_every_truncation_is_refused(tmp_path, kind):
    """Cut at every byte offset: format 2 always refuses (no or wrong checksum); format 1 has no
    checksum but still refuses every cut (incomplete last line, missing lines, no weights line)."""
    texts = [_text(tmp_path, kind).encode()]
    if kind != "sparse":
        texts.append(as_format_1(texts[0].decode()).encode())
    path = tmp_path / "cut.model"
    for data in texts:
        for n in range(len(data)):
            path.write_bytes(data[:n])
            with pytest.raises(ModelError):
                read_model(str(path))
        path.write_bytes(data)
        read_model(str(path))


def test_cut_in_the_last_number_names_the_line(tmp_path):
    text = as_format_1(_text(tmp_path, "linear"))
    err = _error(tmp_path, text[:-3])
    assert err.line == text.count("\n") and "incomplete last line" in err.message
    err = _error(tmp_path, _text(tmp_path, "linear")[:-1])
    assert "incomplete last line" in err.message


# -- changed content ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(MODELS))
def test_every_changed_digit_is_refused(tmp_path, kind):
    """Any digit of the file changed (header, counts, weights, indices, checksum): refused."""
    data = _text(tmp_path, kind).encode()
    path = tmp_path / "digit.model"
    digits = [i for i, c in enumerate(data) if chr(c).isdigit()]
    assert len(digits) > 20
    for i in digits:
        changed = bytearray(data)
        changed[i] = ord("0") + (changed[i] - ord("0") + 1) % 10
        path.write_bytes(bytes(changed))
        with pytest.raises(ModelError):
            read_model(str(path))


def test_changed_weight_is_a_checksum_mismatch_naming_the_checksum_line(tmp_path):
    text = _text(tmp_path, "linear")
    err = _error(tmp_path, text.replace("\n-1.25\n", "\n-1.35\n"))
    assert err.line == text.count("\n") and "checksum mismatch" in err.message


@pytest.mark.parametrize(
    "edit,phrase",
    [
        (lambda t: t[: t.rindex("checksum")], "no checksum line"),  # cut exactly before the checksum
        (lambda t: t.replace("checksum sha256", "checksum md5"), "no checksum line"),
        (lambda t: re.sub(r"sha256 ([0-9a-f]{64})", lambda m: "sha256 " + m.group(1).upper(), t), "no checksum line"),
        (lambda t: re.sub(r"sha256 ([0-9a-f]{64})", lambda m: "sha256 " + m.group(1)[:-1], t), "no checksum line"),
        (lambda t: t + "\n", "no checksum line"),  # something after the checksum line
        (lambda t: t + "0.5\n", "no checksum line"),
        (lambda t: t + t[t.rindex("checksum"):], "checksum mismatch"),  # checksum line doubled
        (lambda t: t.replace("\n", "\r\n"), "line endings were changed"),
        (lambda t: t.replace("solver newton\n", "solver newton\nsolver newton\n"), "checksum mismatch"),
        (lambda t: t.replace("\n0.5\n", "\n"), "checksum mismatch"),  # a weight line lost
    ],
)
def test_checksum_damage(tmp_path, edit, phrase):
    err = _error(tmp_path, edit(_text(tmp_path, "linear")))
    assert phrase in err.message


def test_format_2_without_checksum_is_refused(tmp_path):
    text = _text(tmp_path, "linear")
    err = _error(tmp_path, text[: text.rindex("checksum")])
    assert "no checksum line" in err.message and err.line == text.count("\n") - 1


# -- structural checks (correct checksum, or format 1): each names the model file and line ------------
def _line_of(text: str, fragment: str) -> int:
    return text[: text.index(fragment)].count("\n") + 1


STRUCTURAL = [
    # (kind, old, new, phrase, line of `new` or None)
    ("linear", "\n-1.25\n", "\nnan\n", "weight 'nan' is not finite", True),
    ("linear", "\n-1.25\n", "\n-inf\n", "weight '-inf' is not finite", True),
    ("linear", "\n-1.25\n", "\n1e999\n", "weight '1e999' is not finite", True),
    ("linear", "\n-1.25\n", "\n1_25\n", "weight '1_25' is not a number", True),
    ("linear", "\n-1.25\n", "\n-1.25 0\n", "is not a number", True),
    ("linear", "weights 3\n", "weights 4\n", "expected 4 weights", False),
    ("linear", "weights 3\n", "weights 2\n", "expected 2 weights", False),
    ("linear", "n_features 3\n", "n_features 4\n", "n_features 4 does not match 'weights 3'", True),
    ("linear", "n_features 3\n", "n_features three\n", "n_features 'three' is not an integer", True),
    ("linear", "weights 3\n", "weights 99999999999999999999\n", "is too large", True),
    ("linear", "solver newton\n", "solver newton\nsolver bundle\n", "header key 'solver' appears twice", None),
    ("linear", "index_base 1\n", "index_base 2\n", "index_base '2' is not 0 or 1", True),
    ("kernel", " 3:2.0\n", " 3:nan\n", "landmark value 'nan' is not finite", None),
    ("kernel", " 3:2.0\n", " 3:inf\n", "landmark value 'inf' is not finite", None),
    ("kernel", " 3:2.0\n", " 1:2.0\n", "landmark feature index '1' is not above the previous index", None),
    ("kernel", " 3:2.0\n", " 3:2.0 3:1.0\n", "landmark feature index '3' is not above the previous index", None),
    ("kernel", " 3:2.0\n", " 5:2.0\n", "landmark feature index '5' is outside 1..4", None),
    ("kernel", "0.5 1:0.5", "0.5 0:0.5", "landmark feature index '0' is outside 1..4", None),
    ("kernel", "0.5 1:0.5", "0.5 -1:0.5", "landmark feature index '-1' is not an integer", None),
    ("kernel", " 3:2.0\n", " 3=2.0\n", "landmark feature '3=2.0' is not index:value", None),
    ("kernel", "0.5 1:0.5", "nan 1:0.5", "weight 'nan' is not finite", None),
    ("kernel", "gamma 0.5\n", "gamma abc\n", "kernel gamma 'abc' is not a finite number > 0", True),
    ("kernel", "gamma 0.5\n", "gamma 0.0\n", "kernel gamma '0.0' is not a finite number > 0", True),
    ("kernel", "gamma 0.5\n", "gamma -1\n", "kernel gamma '-1' is not a finite number > 0", True),
    ("kernel", "gamma 0.5\n", "gamma nan\n", "kernel gamma 'nan' is not a finite number > 0", True),
    ("kernel", "gamma 0.5\n", "gamma inf\n", "kernel gamma 'inf' is not a finite number > 0", True),
    ("kernel", "degree 2\n", "degree 2.5\n", "kernel degree '2.5' is not an integer >= 1", True),
    ("kernel", "degree 2\n", "degree 0\n", "kernel degree '0' is not an integer >= 1", True),
    ("kernel", "coef0 1.0\n", "coef0 nan\n", "kernel coef0 'nan' is not a finite number", True),
    ("kernel", "kernel poly\n", "kernel sigmoid\n", "unknown kernel 'sigmoid'", True),
    ("kernel", "n_features 4\n", "", "kernel model without an 'n_features' line", None),
    ("kernel", "weights 3\n", "weights sparse 3 4\n", "sparse weights are not part of a kernel model", True),
    ("sparse", "\n3 0.25\n", "\n3 nan\n", "weight 'nan' is not finite", True),
    ("sparse", "\n41 -0.5\n", "\n3 -0.5\n", "feature index '3' is not above the previous index", True),
    ("sparse", "\n41 -0.5\n", "\n2 -0.5\n", "feature index '2' is not above the previous index", True),
    ("sparse", "\n100000 7\n", "\n100001 7\n", "feature index '100001' is outside 1..100000", True),
    ("sparse", "\n3 0.25\n", "\n0 0.25\n", "feature index '0' is outside 1..100000", True),
    ("sparse", "\n3 0.25\n", "\n3 0.25 1\n", "is not 'index value'", True),
    ("sparse", "weights sparse 3 100000\n", "weights sparse 3 100001\n", "does not match n_features 100000", True),
    ("sparse", "weights sparse 3 100000\n", "weights sparse 4 100000\n", "expected 4 weights", False),
    ("sparse", "n_features 100000\nweights sparse 3 100000\n", "n_features 2\nweights sparse 3 2\n",
     "3 sparse weights but only 2 features", None),
]


@pytest.mark.parametrize("kind,old,new,phrase,names_line", STRUCTURAL)
def test_structural_damage_with_a_correct_checksum(tmp_path, kind, old, new, phrase, names_line):
    text = _text(tmp_path, kind)
    assert old in text
    damaged = resign(text.replace(old, new, 1))
    err = _error(tmp_path, damaged)
    assert phrase in err.message, err.message
    if names_line:
        assert err.line == _line_of(damaged, new.strip("\n").split("\n")[-1] + "\n")
    if kind != "sparse":  # the same damage in a format-1 file (no checksum to catch it first)
        err1 = _error(tmp_path, as_format_1(damaged))
        assert phrase in err1.message


def test_sparse_weights_need_format_2(tmp_path):
    text = _text(tmp_path, "sparse")
    err = _error(tmp_path, as_format_1(text))
    assert "sparse weights are not part of format 1" in err.message


@pytest.mark.parametrize("version,phrase", [(FORMAT_VERSION + 1, "newer than this rankkit reads"),
                                            (0, "does not exist"), (99999999999999999999, "is too large")])
def test_versions(tmp_path, version, phrase):
    text = resign(_text(tmp_path, "linear").replace(f"{MAGIC} 2\n", f"{MAGIC} {version}\n"))
    err = _error(tmp_path, text)
    assert err.line == 1 and phrase in err.message


def test_not_utf8_inside_a_model(tmp_path):
    data = _text(tmp_path, "linear").encode().replace(b"newton", b"new\xfftn")
    assert "damaged model file" in _error(tmp_path, data).message


def test_writer_refuses_what_the_reader_would_refuse(tmp_path):
    path = str(tmp_path / "m.model")
    for bad in (Model(weights=np.array([1.0, np.nan])), Model(weights=np.array([np.inf])),
                Model(weights=np.ones(2), feature_index=np.array([3, 3]), n_total=5),
                Model(weights=np.ones(2), feature_index=np.array([3, 5]), n_total=5),
                Model(weights=np.ones(1), header={"checksum": "x"})):
        with pytest.raises(ValueError):
            write_model(path, bad)
    assert not (tmp_path / "m.model").exists()


# -- through the CLI: exit 2, one line naming the MODEL file ------------------------------------------
@pytest.fixture(scope="module")
def cli_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    write_model(str(d / "kernel.model"), _kernel())
    write_model(str(d / "linear.model"), _linear())
    for kind in ("kernel", "linear"):  # the undamaged models are scored
        good = rankkit("predict", SAMPLE_TEST, f"{kind}.model", cwd=d)
        assert good.returncode == 0 and len(good.stdout.split()) > 100, good.stderr.decode()
    return d


@pytest.mark.parametrize(
    "kind,edit,fragment",
    [
        ("linear", lambda t: t[: t.rindex("checksum")], "bad.model:{last}: no checksum line"),
        ("linear", lambda t: t.replace("\n-1.25\n", "\n-1.35\n"), "bad.model:{last}: checksum mismatch"),
        ("linear", lambda t: as_format_1(t)[:-2], "bad.model:{last}: incomplete last line"),
        ("kernel", lambda t: resign(t.replace(" 3:2.0\n", " 3:nan\n")), "bad.model:{at}: landmark value 'nan' is not"),
        ("kernel", lambda t: resign(t.replace(" 3:2.0\n", " 1:2.0\n")), "bad.model:{at}: landmark feature index '1'"),
        ("kernel", lambda t: resign(t.replace("gamma 0.5\n", "gamma abc\n")), "bad.model:{at}: kernel gamma 'abc'"),
    ],
)
def test_predict_refuses_damaged_models(cli_dir, tmp_path, kind, edit, fragment):
    damaged = edit((cli_dir / f"{kind}.model").read_text())
    (tmp_path / "bad.model").write_text(damaged)
    marker = next((s for s in ("gamma abc", ":nan", " 1:2.0") if s in damaged), None)
    at = _line_of(damaged, marker) if marker else None
    fragment = fragment.format(last=damaged.count("\n") + (not damaged.endswith("\n")), at=at)
    err = assert_one_line_error(rankkit("predict", SAMPLE_TEST, "bad.model", cwd=tmp_path), fragment)
    assert "sample" not in err  # names the model, not the training or data file
