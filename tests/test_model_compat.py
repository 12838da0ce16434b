"""The model file compatibility promise (CHANGELOG.md, "Model files: what reads what"): every rankkit
reads every model format version any earlier rankkit wrote, and scores it as the rankkit that
wrote it did.

tests/fixtures/models/ holds models written by the rankkit of each format version (see the README
there for the commit and command of each) and the scores that rankkit's own `predict` gave on the
bundled sample. A new format version adds its fixtures here; the first test fails until it does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rankkit
from rankkit.io.model import FORMAT_VERSION, OLDEST_VERSION, read_model

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "models"
SAMPLE_TEST = ROOT / "data" / "sample.test.txt"
MODELS = sorted(FIXTURES.glob("format*.model"))


def _version(path: Path) -> int:
    return int(path.read_text(encoding="ascii").split("\n", 1)[0].split()[1])


def _test_file(model: Path, tmp_path: Path) -> Path:
    """The data the fixture's scores were made on: the sample's test file, or for the sparse model
    the same file with feature j renamed 5000 j (few of many indices: a sparse model body)."""
    if "sparse" not in model.name:
        return SAMPLE_TEST
    out = tmp_path / "sparse.test.txt"
    lines = []
    for line in SAMPLE_TEST.read_text(encoding="ascii").splitlines():
        toks = line.partition("#")[0].split()
        feats = [f"{int(t.split(':')[0]) * 5000}:{t.split(':')[1]}" for t in toks[2:]]
        lines.append(" ".join(toks[:2] + feats) + "\n")
    out.write_text("".join(lines), encoding="ascii")
    return out


def test_a_fixture_for_every_format_version():
    versions = {_version(p) for p in MODELS}
    assert versions == set(range(OLDEST_VERSION, FORMAT_VERSION + 1)), (
        f"tests/fixtures/models has models of format versions {sorted(versions)}; "
        f"this rankkit reads {OLDEST_VERSION} to {FORMAT_VERSION}: add a model of each"
    )
    # each body the format has: dense and kernel models of every version, sparse ones since 2
    names = {p.stem for p in MODELS}
    for v in range(OLDEST_VERSION, FORMAT_VERSION + 1):
        assert {f"format{v}-dense", f"format{v}-rbf"} <= names
        if v >= 2:
            assert f"format{v}-sparse" in names


@pytest.mark.parametrize("model", MODELS, ids=[p.stem for p in MODELS])
def test_python_scores_as_the_writer_did(model, tmp_path):
    expected = np.loadtxt(model.with_suffix(".scores"))
    scores = rankkit.load_model(model).predict(_X(model, tmp_path))
    # the writer printed `%.17g`-exact scores: the same model must give the same doubles
    np.testing.assert_array_equal(scores, expected)
    assert read_model(str(model)).verified == (_version(model) >= 2)


@pytest.mark.parametrize("model", MODELS, ids=[p.stem for p in MODELS])
def test_cli_scores_as_the_writer_did(model, tmp_path):
    data = _test_file(model, tmp_path)
    out = tmp_path / "scores"
    proc = subprocess.run(
        [sys.executable, "-m", "rankkit", "predict", str(data), str(model), str(out)],
        capture_output=True, cwd=tmp_path, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == model.with_suffix(".scores").read_bytes()
    if _version(model) < 2:  # read, and said to be unverifiable, in one line
        assert b"format-1 model" in proc.stderr and proc.stderr.count(b"\n") <= 2


@pytest.mark.parametrize("model", [p for p in MODELS if _version(p) < FORMAT_VERSION],
                         ids=[p.stem for p in MODELS if _version(p) < FORMAT_VERSION])
def test_convert_upgrades_to_the_newest_format(model, tmp_path):
    out = tmp_path / "new.model"
    proc = subprocess.run(
        [sys.executable, "-m", "rankkit", "convert", str(model), str(out), "--to", "rankkit"],
        capture_output=True, cwd=tmp_path, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert _version(out) == FORMAT_VERSION and read_model(str(out)).verified
    np.testing.assert_array_equal(rankkit.load_model(out).predict(_X(model, tmp_path)),
                                  rankkit.load_model(model).predict(_X(model, tmp_path)))


def _X(model, tmp_path):
    X, _, _ = rankkit.load_svmlight_file(_test_file(model, tmp_path), query_id=True)
    return X


def test_a_newer_format_is_refused_in_one_line(tmp_path):
    newer = tmp_path / "newer.model"
    text = (FIXTURES / f"format{FORMAT_VERSION}-dense.model").read_text(encoding="ascii")
    newer.write_text(text.replace(f"rankkit-model {FORMAT_VERSION}", f"rankkit-model {FORMAT_VERSION + 1}", 1))
    proc = subprocess.run(
        [sys.executable, "-m", "rankkit", "predict", str(SAMPLE_TEST), str(newer), str(tmp_path / "s")],
        capture_output=True, cwd=tmp_path, timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.count(b"\n") == 1 and b"newer than this rankkit reads" in proc.stderr
    assert not (tmp_path / "s").exists()
