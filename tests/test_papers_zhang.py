"""scripts/reproduce_zhang.py: --quick on a tiny LETOR-shaped directory; exit 2 without the data."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "reproduce_zhang.py"


def _script():
    spec = importlib.util.spec_from_file_location("reproduce_zhang", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(SCRIPT.parent))
    spec.loader.exec_module(mod)
    return mod


def _write(path: Path, rng, n_queries: int) -> None:
    lines = []
    for q in range(n_queries):
        n = int(rng.integers(1, 12))  # one-document queries too
        y = rng.integers(0, 3, n)
        if q % 4 == 1:
            y[:] = 0  # a query without relevant documents
        X = np.round(rng.random((n, 5)) * (1 + y[:, None] * 0.3), 3)
        for r in range(n):
            lines.append(f"{y[r]} qid:{q + 1} " + " ".join(f"{j + 1}:{X[r, j]:g}" for j in range(5)))
    path.write_text("\n".join(lines) + "\n")


def test_quick_run_on_tiny_folds(tmp_path):
    rng = np.random.default_rng(0)
    fold = tmp_path / "data" / "MQ2008" / "Fold1"
    fold.mkdir(parents=True)
    for name, nq in (("train", 30), ("vali", 10), ("test", 10)):
        _write(fold / f"{name}.txt", rng, nq)
    assert _script().main(["--out", str(tmp_path / "out"), "--quick", "--data", str(tmp_path / "data")]) == 0
    text = (tmp_path / "out" / "zhang.md").read_text()
    for needle in ("## Fig. 1", "## Table 4", "paper: Fac-RSVM | 0.4714", "Fac-RSVM `paper`", "randomization"):
        assert needle in text, needle
    assert (tmp_path / "out" / "zhang_fig1.svg").read_text().startswith("<svg")


def test_missing_data_is_one_line_and_exit_2(tmp_path, capsys):
    assert _script().main(["--out", str(tmp_path / "o"), "--data", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nowhere" in err[0] and "not found" in err[0]
