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
    "rankkit_version": "0.1.0",
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
