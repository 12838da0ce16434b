"""Feature names in model files (issue 34, item 4): a model fitted on a data frame records its column
names; a loaded model refuses reordered, missing or extra columns with the message of the fitted
estimator; names with odd characters round-trip; the checksum covers them; a model file without
names (every file written before them) reads as before; `convert` keeps them where it can and says
so where it cannot."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

import rankkit
from rankkit.errors import ModelError, UsageError
from rankkit.io.model import FORMAT_VERSION, MAGIC, Model, read_model, write_model
from tests.test_cli import SAMPLE_TEST, SAMPLE_TRAIN, assert_one_line_error, rankkit as run
from tests.test_model_integrity import MODELS, resign
from tests.test_sklearn_user import Frame

ODD = ["plain", "with space", "tab\there", "new\nline", "#hash", "caf\u00e9 \u03bb\u6f22", "back\\slash", 'quote"',
       "", "\r", "sur\udcffrogate", "x" * 300]


def _named(kind: str) -> Model:
    m = MODELS[kind]()
    m.feature_names = [ODD[j % len(ODD)] + str(j) for j in range(m.n_features)]
    return m


@pytest.mark.parametrize("kind", ["linear", "kernel", "sparse"])
def test_names_round_trip_and_the_checksum_covers_them(tmp_path, kind):
    path = tmp_path / "m.model"
    model = _named(kind)
    write_model(str(path), model)
    raw = path.read_bytes()
    assert raw.isascii()  # every odd character is a JSON escape: one header line
    back = read_model(str(path))
    assert back.verified and back.feature_names == model.feature_names
    assert "feature_names" not in back.header
    line = next(ln for ln in raw.decode().split("\n") if ln.startswith("feature_names "))
    changed = raw.replace(line.encode(), line.replace("plain", "plaiN").encode())
    assert changed != raw
    path.write_bytes(changed)
    with pytest.raises(ModelError, match="checksum mismatch"):
        read_model(str(path))


def test_every_odd_name_round_trips(tmp_path):
    path = tmp_path / "m.model"
    write_model(str(path), Model(weights=np.arange(len(ODD), dtype=float), feature_names=list(ODD),
                                 header={"solver": "newton", "n_features": len(ODD)}))
    assert read_model(str(path)).feature_names == ODD


def test_a_model_without_names_reads_as_before(tmp_path):
    path = tmp_path / "m.model"
    write_model(str(path), MODELS["linear"]())
    assert "feature_names" not in path.read_text()
    assert read_model(str(path)).feature_names is None


def _signed_with(tmp_path, names_value: str, version: int = FORMAT_VERSION) -> str:
    body = (f"{MAGIC} {version}\nsolver newton\nn_features 2\n{names_value}weights 2\n0.5\n-1\n")
    return body if version == 1 else resign(body)


@pytest.mark.parametrize("value,phrase", [
    ('feature_names ["a", "b", "c"]\n', "3 feature names for a model of 2 features"),
    ('feature_names ["a", 2]\n', "is not a JSON list of strings"),
    ('feature_names {"a": 1}\n', "is not a JSON list of strings"),
    ('feature_names ["a", "b"\n', "is not a JSON list of strings"),
])
def test_a_bad_names_line_is_refused_naming_its_line(tmp_path, value, phrase):
    path = tmp_path / "m.model"
    path.write_text(_signed_with(tmp_path, value))
    with pytest.raises(ModelError, match=phrase) as info:
        read_model(str(path))
    assert info.value.line == 4 and "\n" not in str(info.value)


def test_names_are_not_part_of_format_1(tmp_path):
    path = tmp_path / "m.model"
    path.write_text(_signed_with(tmp_path, 'feature_names ["a", "b"]\n', version=1))
    with pytest.raises(ModelError, match="not part of format 1") as info:
        read_model(str(path))
    assert info.value.line == 4


def test_the_writer_refuses_names_that_cannot_be_recorded(tmp_path):
    m = MODELS["linear"]()
    for names, phrase in ((["a", "b"], "2 feature names for a model of 3"), (["a", "b", 3], "must be strings")):
        m.feature_names = names
        with pytest.raises(ValueError, match=phrase):
            write_model(str(tmp_path / "m.model"), m)
        assert not (tmp_path / "m.model").exists()
    m.header = dict(m.header, feature_names="[]")
    m.feature_names = None
    with pytest.raises(ValueError, match="bad model header key"):
        write_model(str(tmp_path / "m.model"), m)


# -- the estimators -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def frame():
    X, y, q = rankkit.load_svmlight_file(str(SAMPLE_TRAIN), query_id=True)
    names = [ODD[j % len(ODD)] + str(j) for j in range(X.shape[1])]
    return X.toarray(), y, q, names


def _message(est, X) -> str:
    with pytest.raises(UsageError) as info:
        est.predict(X)
    return str(info.value)


@pytest.mark.parametrize("make", [lambda: rankkit.RankSVM(C=0.1), lambda: rankkit.SGDRanker(iterations=200),
                                  lambda: rankkit.RankSVM(C=0.1, kernel="rbf", landmarks=30)])
def test_a_loaded_model_checks_the_columns_as_the_fitted_one(tmp_path, frame, make):
    dense, y, q, names = frame
    est = make().fit(Frame(dense, names), y, qid=q)
    est.save(tmp_path / "m.model")
    loaded = rankkit.load_model(tmp_path / "m.model")
    assert list(loaded.feature_names_in_) == names
    np.testing.assert_array_equal(loaded.predict(Frame(dense, names)), est.predict(Frame(dense, names)))
    order = list(range(len(names)))[::-1]
    for X in (Frame(dense[:, order], [names[j] for j in order]),  # reordered
              Frame(dense[:, 1:], names[1:]),  # missing
              Frame(np.c_[dense, dense[:, :1]], [*names, "extra"])):  # extra
        said = _message(est, X)
        assert _message(loaded, X) == said and "\n" not in said
    with pytest.warns(UserWarning, match="no feature names"):
        loaded.predict(dense)
    loaded.save(tmp_path / "again.model")  # names survive a second save
    assert read_model(str(tmp_path / "again.model")).feature_names == names


def test_a_model_fitted_without_names_has_none(tmp_path, frame):
    dense, y, q, names = frame
    rankkit.RankSVM(C=0.1).fit(dense, y, qid=q).save(tmp_path / "m.model")
    loaded = rankkit.load_model(tmp_path / "m.model")
    assert not hasattr(loaded, "feature_names_in_")
    with pytest.warns(UserWarning, match="fitted without them"):
        loaded.predict(Frame(dense, names))


def test_pandas_data_frame_round_trip(tmp_path, frame):
    pd = pytest.importorskip("pandas")
    dense, y, q, names = frame
    # object column names: with pyarrow installed (dask[dataframe] in the test extra) pandas would store
    # them as arrow strings, which cannot hold the lone surrogates of ODD
    df = pd.DataFrame(dense, columns=pd.Index(names, dtype=object))
    est = rankkit.RankSVM(C=0.1).fit(df, y, qid=q)
    est.save(tmp_path / "m.model")
    loaded = rankkit.load_model(tmp_path / "m.model")
    np.testing.assert_array_equal(loaded.predict(df), est.predict(df))
    with pytest.raises(UsageError, match="another order"):
        loaded.predict(df[df.columns[::-1]])


# -- the command line: predict reads them, convert keeps them where it can --------------------------------
def test_cli_reads_named_models_and_convert_keeps_or_says(tmp_path, frame):
    dense, y, q, names = frame
    rankkit.RankSVM(C=0.1).fit(Frame(dense, names), y, qid=q).save(tmp_path / "m.model")
    proc = run("predict", str(SAMPLE_TEST), "m.model", "s.txt", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run("convert", "m.model", "copy.model", "--to", "rankkit", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == b""
    assert read_model(str(tmp_path / "copy.model")).feature_names == names
    proc = run("convert", "m.model", "m.liblinear", "--to", "liblinear", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr.decode() == ("rankkit: note: m.model: the model's 20 feature names are not kept: a liblinear "
                                    "model file has no place for them (its features are numbers, as in the data "
                                    "files it scores)\n")
    text = (tmp_path / "m.model").read_text()
    bad = text.replace('"plain0"', '"plain9"')
    (tmp_path / "bad.model").write_text(bad)
    assert_one_line_error(run("predict", str(SAMPLE_TEST), "bad.model", cwd=tmp_path),
                          "bad.model:", "checksum mismatch")
    body = bad[: bad.rindex("checksum sha256 ")].replace('"plain9", ', "")
    (tmp_path / "bad.model").write_text(body + f"checksum sha256 {hashlib.sha256(body.encode()).hexdigest()}\n")
    assert_one_line_error(run("predict", str(SAMPLE_TEST), "bad.model", cwd=tmp_path),
                          "bad.model:", "19 feature names for a model of 20 features")


# -- held out: LightGBM's lambdarank example and the MSLR-WEB sample as pandas data frames ----------------
SHARED = next((p / "data" for p in (Path(__file__).resolve().parents[2] / "shared", Path("/work/shared"))
               if (p / "data").is_dir()), None)


@pytest.mark.filterwarnings("ignore:diverged")  # SGD's default step on MSLR's raw features (issue 34, item 3)
@pytest.mark.parametrize("train,test", [("LightGBM-lambdarank/rank.train.qid.txt", "LightGBM-lambdarank/rank.test.qid.txt"),
                                        ("MSLR-WEB-sample/search_tiny_train.txt", "MSLR-WEB-sample/search_tiny_test.txt")])
def test_held_out_data_frames(tmp_path, train, test):
    pd = pytest.importorskip("pandas")
    if SHARED is None or not (SHARED / train).is_file():
        pytest.skip("../shared/data is not here")
    Xt, yt, qt = rankkit.load_svmlight_file(str(SHARED / train), query_id=True)
    Xs, ys, qs = rankkit.load_svmlight_file(str(SHARED / test), query_id=True, n_features=Xt.shape[1])
    names = [f"feature {j + 1}" if j % 3 else f"f\u00e9at#{j + 1}\t" for j in range(Xt.shape[1])]
    train_df, test_df = pd.DataFrame(Xt.toarray(), columns=names), pd.DataFrame(Xs.toarray(), columns=names)
    for est in (rankkit.RankSVM(C=0.01), rankkit.SGDRanker(iterations=2000)):
        est.fit(train_df, yt, qid=qt)
        est.save(tmp_path / "m.model")
        loaded = rankkit.load_model(tmp_path / "m.model")
        expected = est.predict(test_df)
        np.testing.assert_array_equal(loaded.predict(test_df), expected)
        shuffled = test_df[list(np.random.default_rng(0).permutation(names))]
        assert _message(loaded, shuffled) == _message(est, shuffled)
        assert _message(loaded, test_df.drop(columns=names[5])) == _message(est, test_df.drop(columns=names[5]))
        # the command line scores the LETOR file with the same model: the same scores
        proc = run("predict", str(SHARED / test), "m.model", "s.txt", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_array_equal(np.loadtxt(tmp_path / "s.txt"), expected)
