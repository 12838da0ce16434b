"""scripts/reproduce_sculley.py (issue 26): --quick on a tiny MQ2008-shaped fold writes its report
and figure; a missing data directory is one line and exit 2."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "reproduce_sculley.py"


def _script():
    spec = importlib.util.spec_from_file_location("reproduce_sculley", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write_fold(path: Path, seed: int, n_queries: int = 12) -> None:
    rng = np.random.default_rng(seed)
    w = np.array([1.0, -0.5, 0.3, 0.0, 0.8])
    lines = []
    for q in range(n_queries):
        m = 1 if q == 0 else 8  # a one-document query
        X = rng.random((m, 5))
        y = np.digitize(X @ w + 0.3 * rng.standard_normal(m), [0.6, 1.1])
        if q == 1:
            y[:] = 1  # a one-label query
        for i in range(m):
            feats = " ".join(f"{j + 1}:{X[i, j]:.4f}" for j in range(5))
            lines.append(f"{y[i]} qid:{seed * 100 + q} {feats}")
    path.write_text("\n".join(lines) + "\n")


def test_quick_on_a_tiny_fold(tmp_path):
    fold = tmp_path / "data" / "MQ2008" / "Fold1"
    fold.mkdir(parents=True)
    for k, name in enumerate(("train", "vali", "test")):
        _write_fold(fold / f"{name}.txt", k + 1)
    out = tmp_path / "out"
    assert _script().main(["--out", str(out), "--quick", "--data", str(tmp_path / "data")]) == 0
    text = (out / "sculley.md").read_text()
    for row in ("RankSVM (exact hinge optimum, bundle)", "SPD Pegasos", "SPD ROMMA", "sofia-ml's rank-loop sampler",
                "did not help: Perceptron", "pairs with ties", "1/t (the paper's, --t0 0)"):
        assert row in text, row
    assert "nan |" not in text.split("## Chapelle")[0].replace("|  |", "")  # every MAP a number
    assert (out / "sculley-fig1.svg").read_text().startswith("<svg")


def test_missing_data_is_one_line_and_exit_2(tmp_path, capsys):
    assert _script().main(["--out", str(tmp_path / "o"), "--data", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MQ2008" in err and "no such directory" in err
