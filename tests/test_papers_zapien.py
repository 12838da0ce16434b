"""scripts/reproduce_zapien.py (issue 26): without the shared data it exits 2 with one line naming
the missing directory; with it, --quick writes zapien.md and its figures (slow: a minute of CPU)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def script():
    spec = importlib.util.spec_from_file_location("reproduce_zapien", ROOT / "scripts" / "reproduce_zapien.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_missing_data_exits_2_with_one_line(tmp_path, capsys):
    assert script().main(["--out", str(tmp_path / "out"), "--data", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path / "nowhere" / "MQ2008" / "Fold1") in err
    assert not (tmp_path / "out").exists()


def test_mixture_counts_match_table_1():
    mod = script()
    from rankkit.paths.exact import full_pairs, reduced_pairs

    ds = mod.as_dataset(*mod.mixture(100, 0))
    assert (full_pairs(ds)[0].shape[0], reduced_pairs(ds)[0].shape[0]) == mod.PAPER_TABLE1["Mixtures"]


@pytest.mark.slow
@pytest.mark.skipif(not (DATA / "MQ2008" / "Fold1").is_dir(), reason="../shared/data is not here")
def test_quick_run_writes_the_report_and_figures(tmp_path):
    assert script().main(["--out", str(tmp_path), "--quick"]) == 0
    text = (tmp_path / "zapien.md").read_text()
    for part in ("## Table 1", "## Fig. 4", "## Table 3", "## The exact path on MQ2008 Fold1", "## Model selection"):
        assert part in text
    for f in ("zapien_fig4_plane_reduced.svg", "zapien_fig4_plane_full.svg", "zapien_mq2008_decision.svg",
              "zapien_mq2008_coef.svg", "zapien_mq2008_metric.svg"):
        assert (tmp_path / f).read_text().startswith("<svg")
