"""Fuzzing the model reader with random mutations of real model files (issue 10).

Models are trained here on the bundled sample through the Python API (commands.train): a linear
one and a kernel one, plus a sparse linear one written from the linear weights. Each case applies
one to three random mutations (byte changes, bit flips, deletions, insertions, truncation, lines
duplicated, dropped or swapped) and reads the result:

- format 2 (checksummed): read_model raises ModelError, or the bytes are exactly the original's
  and the model read is identical to the original. Nothing else, never another exception;
- format 1 (the same models without the checksum, as older rankkit wrote them): ModelError, or a
  model that passes the structural guarantees (finite numbers, indices in range). A format-1 file
  cannot be verified, so a changed digit may be read; never another exception.

RANKKIT_FUZZ_CASES sets the number of cases per file (default: a few seconds in the suite);
`make fuzz` raises it. Seeded: a failure prints the seed and case to reproduce it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from rankkit.errors import ModelError
from rankkit.io.model import Model, read_model, write_model
from tests.test_cli import SAMPLE_TRAIN
from tests.test_model_integrity import _same, as_format_1

CASES = int(os.environ.get("RANKKIT_FUZZ_CASES", "1500"))
SEED = int(os.environ.get("RANKKIT_FUZZ_SEED", "20261123"))
ALPHABET = b"0123456789.-+eE:\n \r\tnaifNAIF#x\x00\xff\xc3"


@pytest.fixture(scope="module")
def originals(tmp_path_factory) -> dict:
    from rankkit import commands

    d = tmp_path_factory.mktemp("fuzz")
    params = {"C": 0.1, "tol": None, "max_iter": None, "loss": None, "query_norm": False}
    commands.train(str(SAMPLE_TRAIN), str(d / "linear.model"), None, params, warn=lambda msg: None)
    commands.train(str(SAMPLE_TRAIN), str(d / "kernel.model"), None, params, warn=lambda msg: None,
                   kernel={"name": "rbf", "gamma": None, "degree": 3, "coef0": 0.0, "landmarks": 12, "seed": 0})
    linear = read_model(str(d / "linear.model"))
    n = linear.n_features
    write_model(str(d / "sparse.model"), Model(weights=linear.weights, header=dict(linear.header, n_features=1000 * n),
                                               feature_index=np.arange(n, dtype=np.int64) * 997, n_total=1000 * n))
    out = {}
    for kind in ("linear", "kernel", "sparse"):
        data = (d / f"{kind}.model").read_bytes()
        out[kind] = (data, read_model(str(d / f"{kind}.model")))
    assert out["kernel"][1].landmarks is not None and out["sparse"][1].sparse
    return out


def mutate(data: bytes, rng: np.random.Generator) -> bytes:
    b = bytearray(data)
    for _ in range(int(rng.integers(1, 4))):
        op = int(rng.integers(0, 8))
        n = len(b)
        at = int(rng.integers(0, n + 1))
        if op == 0 and n:  # one byte replaced, mostly by a plausible one
            b[min(at, n - 1)] = int(rng.choice(list(ALPHABET))) if rng.random() < 0.8 else int(rng.integers(0, 256))
        elif op == 1 and n:  # one bit flipped
            b[min(at, n - 1)] ^= 1 << int(rng.integers(0, 8))
        elif op == 2:  # a few bytes deleted
            del b[at : at + int(rng.integers(1, 6))]
        elif op == 3:  # a few bytes inserted
            b[at:at] = bytes(int(rng.choice(list(ALPHABET))) for _ in range(int(rng.integers(1, 4))))
        elif op == 4:  # truncated
            del b[at:]
        else:  # whole lines: duplicated, dropped, swapped, or a line's tail cut
            lines = bytes(b).split(b"\n")
            i, j = (int(v) for v in rng.integers(0, len(lines), 2))
            if op == 5:
                lines.insert(j, lines[i])
            elif op == 6:
                del lines[i]
            elif op == 7 and rng.random() < 0.5:
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines[i] = lines[i][: int(rng.integers(0, len(lines[i]) + 1))]
            b = bytearray(b"\n".join(lines))
    return bytes(b)


def _put(path, data: bytes) -> None:
    """Replace the file's content: unlink and create (truncating a just-written file in place makes
    ext4 flush it first, ten times slower)."""
    if path.exists():
        os.unlink(path)
    path.write_bytes(data)


def _check_structure(model: Model) -> None:
    assert np.all(np.isfinite(model.weights))
    if model.landmarks is not None:
        L = model.landmarks
        assert np.all(np.isfinite(L.data)) and L.shape == (model.weights.shape[0], model.n_features)
        assert L.has_sorted_indices and all(np.all(np.diff(L.indices[L.indptr[r]:L.indptr[r + 1]]) > 0)
                                            for r in range(L.shape[0]))
    if model.feature_index is not None:
        idx = model.feature_index
        assert np.all(np.diff(idx) > 0) and (idx.size == 0 or (idx[0] >= 0 and idx[-1] < model.n_features))


@pytest.mark.fuzz
@pytest.mark.parametrize("kind", ["linear", "kernel", "sparse"])
def test_mutated_checksummed_models(tmp_path, originals, kind):
    data, original = originals[kind]
    rng = np.random.default_rng([SEED, ["linear", "kernel", "sparse"].index(kind)])
    path = tmp_path / "m.model"
    refused = 0
    for case in range(CASES):
        mutated = mutate(data, rng)
        _put(path, mutated)
        try:
            model = read_model(str(path))
        except ModelError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(str(path)), (case, str(exc))
            refused += 1
            continue
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"seed {SEED} {kind} case {case}: {type(exc).__name__}: {exc} (mutated {mutated[:200]!r})")
        assert mutated == data and _same(model, original), f"seed {SEED} {kind} case {case}: damage accepted"
    assert refused >= CASES * 0.9  # most mutations change something


@pytest.mark.fuzz
@pytest.mark.parametrize("kind", ["linear", "kernel"])
def test_mutated_format_1_models(tmp_path, originals, kind):
    data = as_format_1(originals[kind][0].decode()).encode()
    rng = np.random.default_rng([SEED, 10 + ["linear", "kernel"].index(kind)])
    path = tmp_path / "m.model"
    for case in range(CASES):
        mutated = mutate(data, rng)
        _put(path, mutated)
        try:
            model = read_model(str(path))
        except ModelError as exc:
            assert "\n" not in str(exc), (case, str(exc))
            continue
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"seed {SEED} {kind} format 1 case {case}: {type(exc).__name__}: {exc} ({mutated[:200]!r})")
        assert not model.verified
        _check_structure(model)


FOREIGN_FIXTURES = {"liblinear-ranksvm.model": "liblinear", "liblinear-svr-bias.model": "liblinear",
                    "svm_rank.model": "svm_rank", "svmlight-rank.model": "svm_rank", "sofia-ml.model": "sofia-ml"}


@pytest.mark.fuzz
@pytest.mark.parametrize("name", sorted(FOREIGN_FIXTURES))
def test_mutated_foreign_models(tmp_path, name):
    """The models of svm_rank, SVMlight, liblinear and sofia-ml, made by the tools themselves, with
    the same mutations: read with the format named and with the format detected, each is a one-line
    ModelError naming the file, or a model whose weights and constant are finite (these formats carry
    no checksum, so a changed digit can be read as another weight); a mutation that cuts the file
    short is always refused. Never another exception."""
    from rankkit.io.foreign_models import ForeignModel, load_model

    data = (Path(__file__).parent / "data" / "foreign" / name).read_bytes()
    rng = np.random.default_rng([SEED, 100 + sorted(FOREIGN_FIXTURES).index(name)])
    path = tmp_path / "m.model"
    cases = max(50, CASES // 3)
    for case in range(cases):
        mutated = mutate(data, rng)
        _put(path, mutated)
        for fmt in (FOREIGN_FIXTURES[name], None):
            try:
                model = load_model(str(path), fmt)
            except ModelError as exc:
                assert "\n" not in str(exc) and str(exc).startswith(str(path)), (case, str(exc))
                continue
            except Exception as exc:  # noqa: BLE001 - the point of the test
                pytest.fail(f"seed {SEED} {name} case {case} ({fmt}): {type(exc).__name__}: {exc} "
                            f"(mutated {mutated[:200]!r})")
            assert not (len(mutated) < len(data) and data.startswith(mutated)), f"case {case}: a cut file was read"
            assert np.all(np.isfinite(model.weights)), (case, fmt)
            if isinstance(model, ForeignModel):
                assert np.isfinite(model.constant), (case, fmt)
