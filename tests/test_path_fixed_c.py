"""`rankkit path --folds DIR -C c1 -C c2`: every fold trained at every C in one process; each
model is the one `rankkit train TRAIN MODEL -C c` writes (same weights and header, bar the
creation time, timings and checksum), and the table has one row per (fold, C)."""

from __future__ import annotations

import re
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


def _stable(model_path):
    m = read_model(str(model_path))
    return m.weights.tobytes(), {k: v for k, v in m.header.items() if k not in VOLATILE | {"checksum"}}


def test_fixed_c_folds_side_by_side_give_the_same_models_table_and_log(tmp_path):
    """--jobs 2 runs two folds at once on threads (single-threaded kernels each): the models, the
    table and the -v log (each fold's lines together, in fold order) are those of --jobs 1."""
    folds = _folds(tmp_path, k=3)
    shutil.copy(DATA / "sample.vali.txt", folds / "Fold2" / "train.txt")  # folds that differ
    shutil.copy(DATA / "sample.test.txt", folds / "Fold3" / "train.txt")
    out = {}
    for jobs in ("1", "2"):
        run = tmp_path / f"run{jobs}"
        run.mkdir()
        proc = rankkit("path", "--folds", str(folds), "-C", "0.01", "-C", "1", "--out-dir", "m",
                       "--table", "t.tsv", "--jobs", jobs, "-v", cwd=run)
        assert proc.returncode == 0, proc.stderr
        # timings out, and what compiling took (a kernel one run compiles and the other finds cached,
        # as when other processes fill the same cache at once, is not part of the run's log)
        log = [re.sub(r" \(and compiling kernels\)|, of it compiling kernels", "", re.sub(r"\s[0-9.]+s\b", "", ln))
               for ln in proc.stderr.decode().splitlines() if not ln.startswith("rankkit: note: compiling kernels")]
        table = [ln.split("\t")[:8] for ln in (run / "t.tsv").read_text().splitlines()]
        models = {p.name: _stable(p) for p in sorted((run / "m").iterdir())}
        out[jobs] = (proc.stdout, log, table, models)
    assert len(out["1"][3]) == 6
    assert out["1"] == out["2"]
    folds_in_log = [ln.split()[0] for ln in out["2"][1] if ln.startswith("Fold")]
    assert folds_in_log == ["Fold1", "Fold1", "Fold2", "Fold2", "Fold3", "Fold3"]


def test_fixed_c_folds_side_by_side_stop_at_a_bad_fold(tmp_path):
    """A bad file in one fold: one line naming it, exit 2, whichever thread met it; no temporary
    file is left and every model written is complete."""
    folds = _folds(tmp_path, k=3)
    (folds / "Fold2" / "train.txt").write_text("1 qid:1 1:0.5\n0 qid:1 1:x\n")
    proc = rankkit("path", "--folds", str(folds), "-C", "0.1", "--out-dir", "m", "--jobs", "2", cwd=tmp_path)
    assert_one_line_error(proc, "Fold2/train.txt:2: feature value 'x' is not a number")
    assert not (tmp_path / "m").exists()  # every fold's files are read before anything is created (issue 35)


def test_one_fold_with_jobs_keeps_the_log(tmp_path):
    """One fold and --jobs 2: the fold runs as with --jobs 1 (before: its -v lines were lost)."""
    folds = _folds(tmp_path, k=1)
    one = rankkit("path", "--folds", str(folds), "-C", "0.1", "--out-dir", "m", "--jobs", "1", "-v", cwd=tmp_path)
    two = rankkit("path", "--folds", str(folds), "-C", "0.1", "--out-dir", "m", "--jobs", "2", "-v", cwd=tmp_path)
    assert one.returncode == 0 and two.returncode == 0, two.stderr
    strip = [re.sub(r"\s[0-9.]+s\b", "", ln) for ln in two.stderr.decode().splitlines()]
    assert len(strip) > 3 and strip == [re.sub(r"\s[0-9.]+s\b", "", ln) for ln in one.stderr.decode().splitlines()]


def test_fixed_c_folds_report_several_metrics(tmp_path):
    """Several -m with -C (issue 22): every metric reported, in the printed table and the TSV, each
    equal to the same run with that -m alone (the first in the place one -m had)."""
    folds = _folds(tmp_path, k=2)
    tables = {}
    for ms in (("map", "ndcg@10"), ("map",), ("ndcg@10",)):
        name = "_".join(ms)
        args = [a for m in ms for a in ("-m", m)]
        proc = rankkit("path", "--folds", str(folds), "-C", "0.01", "-C", "1", *args, "--out-dir", name,
                       "--table", f"{name}.tsv", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        rows = [ln.split("\t") for ln in (tmp_path / f"{name}.tsv").read_text().splitlines()]
        tables[ms] = [dict(zip(rows[0], r)) for r in rows[1:]]
        if len(ms) == 2:
            head = proc.stdout.decode().splitlines()[2].split()
            assert head == ["fold", "C", "valid", "map", "valid", "ndcg@10", "test", "map", "test", "ndcg@10",
                            "iterations"]
    both = tables[("map", "ndcg@10")]
    assert list(both[0])[6:10] == ["valid_map", "test_map", "valid_ndcg@10", "test_ndcg@10"]
    for row, one_map, one_ndcg in zip(both, tables[("map",)], tables[("ndcg@10",)]):
        for m, one in (("map", one_map), ("ndcg@10", one_ndcg)):
            assert row[f"valid_{m}"] == one[f"valid_{m}"] and row[f"test_{m}"] == one[f"test_{m}"]
