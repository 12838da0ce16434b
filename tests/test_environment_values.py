"""Settings and limits of the environment the CLI starts in: one line and the right exit status,
never numba's warning with a traceback or an internal error (issue 35, items 8 and 9).

- Every NUMBA_* value numba cannot parse (its config warns with a traceback on every run and goes
  on with its default), and a CPU name or feature LLVM does not know, is refused: exit 2, one line
  naming the variable, before numba is imported.
- RANKKIT_MEMORY_LIMIT must be a number of bytes of at least 1 (inf, 1e400: an OverflowError; 0,
  -1: every fit refused as too large).
- Too few file descriptors (ulimit -n), threads or processes (ulimit -u): exit 3 in one line, or the
  run goes on with the threads it has (kernels give the same result on one thread).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rankkit import threads
from tests.test_cli import ROOT, SAMPLE_TEST, SAMPLE_TRAIN, _env, assert_one_line_error
from tests.test_faults import _folds, run


def _rankkit(args, cwd, **env):
    return subprocess.run([sys.executable, "-m", "rankkit", *map(str, args)], cwd=cwd, env=dict(_env(), **env),
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.parametrize("name,value", [
    ("NUMBA_OPT", "garbage"), ("NUMBA_OPT", "4"), ("NUMBA_DEBUG", "x"), ("NUMBA_LOOP_VECTORIZE", "x"),
    ("NUMBA_SLP_VECTORIZE", "1.5"), ("NUMBA_DISABLE_JIT", ""), ("NUMBA_BOUNDSCHECK", "yes"),
    ("NUMBA_CUDA_MAX_PENDING_DEALLOCS_RATIO", "half"), ("NUMBA_FORCE_CUDA_CC", "x"),
    ("NUMBA_CPU_FEATURES", "garbage"),  # aborted the run inside LLVM (status 134)
    ("NUMBA_CPU_NAME", "garbage"), ("NUMBA_CPU_FEATURES", "+nosuchfeature"), ("NUMBA_NUM_THREADS", "abc")])
def test_a_numba_setting_numba_cannot_use_is_one_line(tmp_path, name, value):
    proc = _rankkit(["eval", SAMPLE_TEST, SAMPLE_TEST], tmp_path, **{name: value})
    assert_one_line_error(proc, f"{name}={value!r}")


def test_numba_settings_that_parse_are_taken(tmp_path):
    for name, value in [("NUMBA_OPT", "max"), ("NUMBA_DEBUG", "0"), ("NUMBA_CUDA_DEFAULT_PTX_CC", "7.5"),
                        ("NUMBA_THREADING_LAYER", "anything"), ("NUMBA_CPU_FEATURES", "")]:
        assert threads._numba_value_problem(name, value) is None, name


def test_the_table_of_numba_settings_follows_the_numba_installed():
    """Every variable numba's config parses as a number (or an optimization level, a compute
    capability) is in rankkit's table with the same kind: a new numba adding one fails here."""
    import numba.core.config

    text = Path(numba.core.config.__file__).read_text()
    parsed = dict(re.findall(r'_readenv\(\s*"(NUMBA_\w+)",\s*([^,]+),', text))
    assert parsed, "numba's config is no longer read with _readenv: look again at rankkit.threads"
    kinds = {"int": set(threads._NUMBA_INT) | {"NUMBA_NUM_THREADS"}, "float": set(threads._NUMBA_FLOAT),
             "_parse_cc": set(threads._NUMBA_CC), "_process_opt_level": {"NUMBA_OPT"}}
    for kind, names in kinds.items():
        assert {n for n, c in parsed.items() if c.strip() == kind} == names, kind
    free_text = ("str", "optional_str", "fmt_html_path", "which_gdb", "lambda string: string.split()")
    assert all(c.strip() in free_text or c.strip() in kinds for c in parsed.values()), parsed


@pytest.mark.parametrize("value", ["inf", "1e400", "-1", "0", "abc", "nan", "0.5"])
def test_a_memory_limit_that_is_no_number_of_bytes_is_one_line(tmp_path, value):
    proc = _rankkit(["train", SAMPLE_TRAIN, "m.txt"], tmp_path, RANKKIT_MEMORY_LIMIT=value)
    assert_one_line_error(proc, f"RANKKIT_MEMORY_LIMIT={value!r}")
    assert not (tmp_path / "m.txt").exists()


def test_a_memory_limit_in_bytes_is_taken(monkeypatch):
    from rankkit import resources

    for text, value in [("1e9", 10**9), ("123456", 123456), ("", None), (" ", None)]:
        monkeypatch.setenv("RANKKIT_MEMORY_LIMIT", text)
        assert resources.memory_limit_setting() == value
    monkeypatch.setenv("RANKKIT_MEMORY_LIMIT", "1e9")
    assert resources.available_memory() <= 10**9


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for ulimit")
def test_too_few_file_descriptors_for_path_jobs_is_exit_3_in_one_line(tmp_path):
    """ulimit -n 16 with path --folds --jobs 2: an internal error (OSError EMFILE, exit 1) before."""
    _folds(tmp_path)
    cmd = f"ulimit -n 16; exec {sys.executable} -m rankkit path --folds folds --method grid --n-points 3 --jobs 2"
    proc = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=_env(), capture_output=True, timeout=300)
    err = proc.stderr.decode()
    assert proc.returncode == 3 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "too many open files" in err and "ulimit -n" in err, err


_NO_THREADS = ("import threading\n"
               "def _refused(self, *a, **k):\n"
               "    raise RuntimeError(\"can't start new thread\")\n"
               "threading.Thread.start = _refused")


def test_no_thread_can_start_train_runs_on_one_and_gives_the_same_model(tmp_path):
    """What Python raises when the system refuses a thread (ulimit -u as a user, a cgroup's pids
    limit): a traceback from the garbage-collector timer at start before."""
    ok = run(["train", SAMPLE_TRAIN, "a.txt", "-C", "0.01"], tmp_path)
    assert ok.returncode == 0
    proc = run(["train", SAMPLE_TRAIN, "b.txt", "-C", "0.01"], tmp_path, inject=_NO_THREADS)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    from rankkit.io.model import read_model

    assert (read_model(str(tmp_path / "a.txt")).weights == read_model(str(tmp_path / "b.txt")).weights).all()


def test_no_thread_can_start_path_jobs_is_exit_3_in_one_line(tmp_path):
    _folds(tmp_path)
    proc = run(["path", "--folds", "folds", "--method", "grid", "--n-points", "3", "--jobs", "2"], tmp_path,
               inject=_NO_THREADS)
    err = proc.stderr.decode()
    assert proc.returncode == 3 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "cannot start a thread or process" in err, err


def test_resource_mapping():
    import errno

    from rankkit import limits

    assert limits.out_of_resources(OSError(errno.EMFILE, "Too many open files")).exit_code == 3
    assert limits.out_of_resources(RuntimeError("can't start new thread")) is not None
    assert limits.out_of_resources(BlockingIOError(errno.EAGAIN, "busy")) is None  # a non-blocking read: not this
    wrapped = RuntimeError("a fold failed")
    wrapped.__cause__ = OSError(errno.EMFILE, "Too many open files")
    assert limits.out_of_resources(wrapped) is not None
    assert limits.out_of_resources(ValueError("x")) is None
