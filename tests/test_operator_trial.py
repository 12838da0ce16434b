"""scripts/operator_trial.py (issue 25): its checker catches each kind of failure it tallies (a bash
case per kind, no rankkit run: fast), and its --quick trial runs clean (slow: real rankkit runs)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.test_cli import ROOT, _env

sys.path.insert(0, str(ROOT / "scripts"))
import operator_trial as T  # noqa: E402


@pytest.fixture(autouse=True)
def short_linger(monkeypatch):
    monkeypatch.setattr(T, "LINGER", 0.5)


def _outcome(tmp_path, **kw):
    kw.setdefault("family", "test")
    kw.setdefault("name", "case")
    return T.run_case(T.Case(**kw), tmp_path / "case", _env())


def test_a_clean_error_and_a_clean_success_pass(tmp_path):
    ok = _outcome(tmp_path, script="echo 'rankkit: error: bad: x' >&2; exit 2", files={"in.txt": b"data"})
    assert ok.code == 2 and ok.problems == []
    ok = T.run_case(T.Case("test", "ok", "echo new > out.txt", {"out.txt": b"old"}, ("out.txt",),
                           check_ok=lambda d, out: None), tmp_path / "ok", _env())
    assert ok.code == 0 and ok.problems == []


@pytest.mark.parametrize("script,files,kw,word", [
    ("echo 'internal error: boom' >&2; exit 1", {}, {}, "internal error"),
    ("echo Traceback >&2; exit 2", {}, {}, "internal error"),
    ("echo 'rankkit: error: x' >&2; exit 5", {}, {}, "exit 5"),
    ("echo changed > in.txt; echo 'rankkit: error: x' >&2; exit 2", {"in.txt": b"data"}, {}, "damaged: in.txt"),
    ("echo changed > in.txt", {"in.txt": b"data"}, {}, "damaged: in.txt"),  # an input changed by a success
    ("rm in.txt; echo 'rankkit: error: x' >&2; exit 2", {"in.txt": b"data"}, {}, "damaged: in.txt removed"),
    ("touch .m.model.~1-h.abcd.tmp; echo 'rankkit: error: x' >&2; exit 2", {}, {}, "temporary files left"),
    ("exit 0", {}, {"must_fail": True}, "wrong exit 0"),
    ("exit 0", {}, {"check_ok": lambda d, out: "not the same"}, "wrong exit 0: not the same"),
    ("echo a >&2; echo 'rankkit: error: x' >&2; exit 2", {}, {}, "stderr not one line"),
    ("sleep 30 >/dev/null 2>&1 & exit 0", {}, {}, "processes left"),
    ("kill -SEGV $$", {}, {}, "killed by signal 11"),
])
def test_each_kind_of_failure_is_caught(tmp_path, script, files, kw, word):
    out = _outcome(tmp_path, script=script, files=files, **kw)
    assert any(p.startswith(word) for p in out.problems), out.problems


def test_an_allowed_note_before_the_error_line_is_not_a_failure(tmp_path):
    out = _outcome(tmp_path, script="echo 'rankkit: note: compiling kernels' >&2; echo 'rankkit: error: x' >&2; exit 2")
    assert out.problems == []


@pytest.mark.slow
def test_the_quick_trial_runs_clean(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "operator_trial.py"), "--quick", "--family", "cli",
                           "--family", "streams", "--family", "mutated data"], cwd=tmp_path, env=_env(),
                          capture_output=True, timeout=600)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out[-3000:]
    assert "files damaged: 0" in out and "internal errors: 0" in out and "processes left: 0" in out
