"""scripts/reproduce_chapelle.py: its contract (COMMON.md) on a tiny case, and the missing-data exit."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "reproduce_chapelle.py"


def _module():
    spec = importlib.util.spec_from_file_location("reproduce_chapelle", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_quick_run_on_the_bundled_sample(tmp_path):
    """The bundled sample (data/sample.*.txt, 3 labels) laid out as MQ2008/Fold1: every section is
    written, the rescaled loss at w = 0 is the sum of delta over the pairs, the kernel check passes."""
    fold = tmp_path / "data" / "MQ2008" / "Fold1"
    fold.mkdir(parents=True)
    for split in ("train", "vali", "test"):
        shutil.copy(ROOT / "data" / f"sample.{split}.txt", fold / f"{split}.txt")
    out = tmp_path / "out"
    assert _module().main(["--out", str(out), "--quick", "--data", str(tmp_path / "data")]) == 0
    text = (out / "chapelle.md").read_text()
    for k in range(1, 9):
        assert f"## {k}. " in text
    sgd = text.split("## 8. ")[1]
    assert sum(ln.startswith("| 0.1 | ") for ln in sgd.splitlines()) == 1 and "--t0 0" in sgd
    assert "(within 1e-5" in text
    row = [ln for ln in text.splitlines() if ln.startswith("| sum of delta_ij")][0]
    total = row.split("|")[2].strip()
    assert [ln for ln in text.splitlines() if "`--rescale margin` (the paper's" in ln][0].split("|")[2].strip() == total
    assert (out / "chapelle-fig3.svg").read_text().startswith("<svg")


def test_missing_data_is_one_line_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "o"), "--data", str(tmp_path / "none")],
                          capture_output=True, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and str(tmp_path / "none" / "MQ2008") in err
