"""`rankkit path --folds DIR -C c1 -C c2`: every fold trained at every C in one process; each
model is the one `rankkit train TRAIN MODEL -C c` writes (same weights and header, bar the
creation time, timings and checksum), and the table has one row per (fold, C)."""

from __future__ import annotations

import shutil

import numpy as np

from rankkit.io.model import read_model
from tests.test_cli import ROOT, assert_one_line_error, rankkit

DATA = ROOT / "data"
VOLATILE = {"created", "read_time_seconds", "train_time_seconds"}


def _folds(tmp_path, k=1):
    for i in range(1, k + 1):
        d = tmp_path / "folds" / f"Fold{i}"
        d.mkdir(parents=True)
        for part in ("train", "vali", "test"):
            shutil.copy(DATA / f"sample.{part}.txt", d / f"{part}.txt")
    return tmp_path / "folds"


def test_fixed_c_models_equal_rankkit_train(tmp_path):
    folds = _folds(tmp_path)
    proc = rankkit("path", "--folds", str(folds), "-C", "0.01", "-C", "0.1", "--out-dir", "models", "--table", "t.tsv",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out.startswith("# rankkit path, fixed C") and out.count("\nFold1") == 2 and out.count("\nmean") == 2
    rows = (tmp_path / "t.tsv").read_text().splitlines()
    assert len(rows) == 1 + 2 and rows[0].startswith("fold\tC\tmodel")
    proc = rankkit("train", str(folds / "Fold1" / "train.txt"), "ref.model", "-C", "0.1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ref, got = read_model(str(tmp_path / "ref.model")), read_model(str(tmp_path / "models" / "Fold1.C0.1.model"))
    assert np.array_equal(ref.weights, got.weights)
    assert {k: v for k, v in ref.header.items() if k not in VOLATILE} == \
        {k: v for k, v in got.header.items() if k not in VOLATILE}


def test_fixed_c_needs_folds(tmp_path):
    proc = rankkit("path", str(DATA / "sample.train.txt"), str(DATA / "sample.vali.txt"), "-C", "0.1", cwd=tmp_path)
    assert_one_line_error(proc, "-C values go with --folds DIR only")
