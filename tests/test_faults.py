"""Fault injection: what an operator meets under cron, make -j and service accounts.

Each test runs the real command in a subprocess and injects one fault: an unwritable or damaged
kernel cache, a read-only install without a home, closed, broken and full standard streams,
signals at chosen points, outputs that are inputs, path --jobs workers. The promise checked every
time: no traceback, no exit 1, nothing half-written, no model lost, no exit 0 with a wrong result.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import time
import sys
from pathlib import Path

import numpy as np
import pytest

from rankkit.io.model import read_model
from tests.test_cli import ROOT, SAMPLE_TEST, SAMPLE_TRAIN, _env, assert_one_line_error

SHARED = next((p for p in (ROOT.parent / "shared", Path("/work/shared")) if (p / "data").is_dir()), None)


def run(args, cwd, env=None, inject: str | None = None, **kw) -> subprocess.CompletedProcess:
    """`python -m rankkit ARGS`, optionally after running `inject` (Python) in the same process."""
    cmd = [sys.executable, "-m", "rankkit"] if inject is None else [
        sys.executable, "-c", inject + "\nimport runpy\nrunpy.run_module('rankkit', run_name='__main__', alter_sys=True)"]
    kw.setdefault("capture_output", True)
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([*cmd, *map(str, args)], cwd=cwd, env=env or _env(), timeout=300, **kw)


def no_temp_files(directory: Path) -> bool:
    return not [p for p in os.listdir(directory) if p.endswith(".tmp")]


@pytest.fixture(scope="module")
def primed(tmp_path_factory):
    """A kernel cache holding what train, predict and eval compile, and a model trained with it.
    jit_env: the same cache with RANKKIT_AOT=0, for the tests of numba's JIT cache (the build `make
    test` puts in the suite's cache would run instead, and leave nothing in the JIT cache to damage):
    they damage csr_matvec's entries, which train and predict compile (a signature each); eval's
    kernels (about 16 s of a core) are compiled by the JIT where they are tested, tests/test_aot.py."""
    d = tmp_path_factory.mktemp("primed")
    cache = os.environ.get("NUMBA_CACHE_DIR") or str(d / "cache")
    env = dict(_env(), NUMBA_CACHE_DIR=cache)
    jit_env = dict(env, RANKKIT_AOT="0")
    for e in (env, jit_env):
        assert run(["train", SAMPLE_TRAIN, "m.txt", "-C", "0.01"], d, e).returncode == 0
        assert run(["predict", SAMPLE_TEST, "m.txt", "s.txt"], d, e).returncode == 0
    assert run(["eval", SAMPLE_TEST, "s.txt"], d, env).returncode == 0
    return {"dir": d, "cache": cache, "env": env, "jit_env": jit_env, "model": d / "m.txt",
            "scores": (d / "s.txt").read_bytes()}


# -- the kernel cache ---------------------------------------------------------------------------
def test_read_only_install_without_home_compiles_once_into_a_private_dir(tmp_path, primed):
    """A read-only install (no writable __pycache__), HOME unwritable, no NUMBA_CACHE_DIR: before,
    every command died with `RuntimeError: cannot cache function ...: no locator available`."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "rankkit", site / "rankkit", ignore=shutil.ignore_patterns("__pycache__"))
    for d in [site / "rankkit", *[p for p in (site / "rankkit").rglob("*") if p.is_dir()]]:
        (d / "__pycache__").write_text("not a directory: nothing can be cached here")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = dict(_env(), PYTHONPATH=str(site), HOME="/dev/null", TMPDIR=str(tmpdir), XDG_CACHE_HOME="/dev/null/x",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("NUMBA_CACHE_DIR", None)
    first = run(["predict", SAMPLE_TEST, primed["model"], "s.txt"], tmp_path, env)
    err = first.stderr.decode()
    assert first.returncode == 0, err
    assert err.count("\n") == 1 and err.startswith("rankkit: note: compiling kernels (") and "writable" in err, err
    assert (tmp_path / "s.txt").read_bytes() == primed["scores"]
    private = tmpdir / f"rankkit-numba-cache-{os.getuid()}"
    assert private.is_dir() and (private.stat().st_mode & 0o777) == 0o700 and any(private.iterdir())
    second = run(["predict", SAMPLE_TEST, primed["model"], "s2.txt"], tmp_path, env)
    assert second.returncode == 0 and second.stderr == b""  # loaded from the private cache: quiet
    assert (tmp_path / "s2.txt").read_bytes() == primed["scores"]


def test_unwritable_cache_dir_is_not_fatal(tmp_path, primed):
    """NUMBA_CACHE_DIR not writable: run from the private fallback (here pre-filled, so quiet)."""
    tmpdir = tmp_path / "tmp"
    fallback = tmpdir / f"rankkit-numba-cache-{os.getuid()}"
    shutil.copytree(primed["cache"], fallback)
    os.chmod(fallback, 0o700)
    env = dict(primed["jit_env"], NUMBA_CACHE_DIR="/dev/null/cache", TMPDIR=str(tmpdir))
    proc = run(["predict", SAMPLE_TEST, primed["model"], "s.txt"], tmp_path, env)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert (tmp_path / "s.txt").read_bytes() == primed["scores"]


def test_private_fallback_refuses_a_directory_it_does_not_own(tmp_path, monkeypatch):
    """The fallback directory in /tmp is used only if it is ours, a real directory, not group/world
    writable: another user could otherwise plant compiled code there."""
    from rankkit.compiler import jit

    monkeypatch.setattr(jit.tempfile, "gettempdir", lambda: str(tmp_path))
    target = tmp_path / f"rankkit-numba-cache-{os.getuid()}"
    target.mkdir(mode=0o777)
    os.chmod(target, 0o777)
    assert jit.private_tmp_dir() is None
    target.rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    target.symlink_to(tmp_path / "elsewhere")
    assert jit.private_tmp_dir() is None
    target.unlink()
    assert jit.private_tmp_dir() == str(target)


@pytest.mark.parametrize("damage", [pytest.param("truncate", marks=pytest.mark.slow), "junk",
                                    pytest.param("bytes-in-the-middle", marks=pytest.mark.slow)])  # one by default
def test_damaged_cache_is_repaired(tmp_path, primed, damage):
    """A cache file cut in half or overwritten: before, every run exited 1 (UnpicklingError) until
    the cache was deleted by hand. Three changed bytes in the middle unpickled and then aborted
    inside LLVM (SIGABRT, every run). Now the entry fails its checksum, is removed and recompiled,
    and the next run is quiet."""
    cache = tmp_path / "cache"
    shutil.copytree(primed["cache"], cache)
    files = sorted(glob.glob(str(cache / "**" / "*_matvec_rows*.nb[ic]"), recursive=True))
    assert files, "the primed cache should hold csr_matvec's kernel (_matvec_rows)"
    for f in files:
        data = Path(f).read_bytes()
        if damage == "truncate":
            data = data[: len(data) // 2]
        elif damage == "junk":
            data = b"\x80\x04junk" * 50
        else:
            data = data[: len(data) // 2] + b"\x00\x01\x02" + data[len(data) // 2 + 3:]
        Path(f).write_bytes(data)
    env = dict(primed["jit_env"], NUMBA_CACHE_DIR=str(cache))
    first = run(["predict", SAMPLE_TEST, primed["model"], "s.txt"], tmp_path, env)
    err = first.stderr.decode()
    assert first.returncode == 0, err
    assert err.count("\n") == 1 and "damaged kernel cache" in err, err
    assert (tmp_path / "s.txt").read_bytes() == primed["scores"]
    second = run(["predict", SAMPLE_TEST, primed["model"], "s2.txt"], tmp_path, env)
    assert second.returncode == 0 and second.stderr == b""
    assert (tmp_path / "s2.txt").read_bytes() == primed["scores"]


@pytest.mark.parametrize("kind", ["nbc", pytest.param("nbi", marks=pytest.mark.slow)])
def test_swapped_cache_entries_are_repaired(tmp_path, primed, kind):
    """Two kernels' cache files exchanged, each intact: before, every later JIT run failed with
    `internal error: TypeError: _count_fast expected 4 arguments, got 6` until the cache was deleted.
    A seal binds each file to its own name, so a swapped file fails it as damage does."""
    cache = tmp_path / "cache"
    shutil.copytree(primed["cache"], cache)
    files = sorted(glob.glob(str(cache / "**" / f"*.{kind}"), recursive=True))
    ours = [f for f in files if "_matvec_rows" in f]
    others = [f for f in files if "_matvec_rows" not in f and os.path.dirname(f) == os.path.dirname(ours[0])]
    # the data of csr_matvec's signatures rotated (whichever predict loads holds another signature's
    # code, however many signatures a cache used before holds), or its index exchanged with another kernel's
    group = ours if kind == "nbc" else [ours[0], others[0]] if others else []
    assert len(group) >= 2, files
    data = [Path(f).read_bytes() for f in group]
    for f, d in zip(group, data[1:] + data[:1]):
        Path(f).write_bytes(d)
    env = dict(primed["jit_env"], NUMBA_CACHE_DIR=str(cache))
    first = run(["predict", SAMPLE_TEST, primed["model"], "s.txt"], tmp_path, env)
    err = first.stderr.decode()
    assert first.returncode == 0, err
    assert err.count("\n") == 1 and "damaged kernel cache" in err, err
    assert (tmp_path / "s.txt").read_bytes() == primed["scores"]
    second = run(["predict", SAMPLE_TEST, primed["model"], "s2.txt"], tmp_path, env)
    assert second.returncode == 0 and second.stderr == b"", second.stderr
    assert (tmp_path / "s2.txt").read_bytes() == primed["scores"]


# -- standard streams ---------------------------------------------------------------------------
def test_stderr_piped_into_head_keeps_the_model(tmp_path, primed):
    """`rankkit train ... -v 2>&1 | head -1`: before, exit 1 and no model."""
    proc = subprocess.run(
        f"{sys.executable} -m rankkit train {SAMPLE_TRAIN} m.txt -C 0.01 -v 2>&1 | head -1; exit ${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", cwd=tmp_path, env=primed["env"], capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.count(b"\n") == 1
    assert np.array_equal(read_model(str(tmp_path / "m.txt")).weights, read_model(str(primed["model"])).weights)


@pytest.mark.parametrize("redirect", ["2>&-", "2>/dev/full", "2>&- >&-"])
def test_closed_or_full_stderr_keeps_the_model(tmp_path, primed, redirect):
    proc = subprocess.run(f"{sys.executable} -m rankkit train {SAMPLE_TRAIN} m.txt -C 0.01 -v {redirect}",
                          shell=True, cwd=tmp_path, env=primed["env"], timeout=300)
    assert proc.returncode == 0
    assert np.array_equal(read_model(str(tmp_path / "m.txt")).weights, read_model(str(primed["model"])).weights)
    assert no_temp_files(tmp_path)


@pytest.mark.parametrize("command", ["predict", "eval", "--help", "--version", "train --help"])
@pytest.mark.parametrize("redirect", [">/dev/full", ">&-"])
def test_results_that_cannot_reach_stdout_are_an_error(tmp_path, primed, command, redirect):
    """Results on a full or closed stdout: exit 2 and one line, never exit 0 (results lost) or 1.
    Help and version text too (the operator trial: exit 1, an internal error, on a full device; exit
    0 on a closed stdout)."""
    args = {"predict": f"predict {SAMPLE_TEST} {primed['model']}",
            "eval": f"eval {SAMPLE_TEST} {primed['dir'] / 's.txt'}"}.get(command, command)
    proc = subprocess.run(f"{sys.executable} -m rankkit {args} {redirect}", shell=True, cwd=tmp_path,
                          env=primed["env"], stderr=subprocess.PIPE, timeout=300)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and "cannot write standard output" in err, err


def test_train_with_stdout_on_a_full_device_succeeds(tmp_path, primed):
    proc = subprocess.run(f"{sys.executable} -m rankkit train {SAMPLE_TRAIN} m.txt -C 0.01 >/dev/full", shell=True,
                          cwd=tmp_path, env=primed["env"], stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == 0 and proc.stderr == b""
    assert (tmp_path / "m.txt").exists()


def test_predict_into_head_is_quiet_success(tmp_path, primed):
    proc = subprocess.run(f"{sys.executable} -m rankkit predict {SAMPLE_TEST} {primed['model']} | head -1; "
                          "exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", cwd=tmp_path,
                          env=primed["env"], capture_output=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == b"" and proc.stdout.count(b"\n") == 1


# -- signals ------------------------------------------------------------------------------------
# Each injection sends the signal from inside the run at a chosen point, so the point is exact.
AT_FSYNC = """
import os, signal
_real = os.fsync
def _fsync(fd):
    _real(fd)
    os.kill(os.getpid(), signal.{sig})
os.fsync = _fsync
"""
AT_NEWTON = """
import os, signal, threading, time
import rankkit.solvers.newton as newton
_real = newton.cg_steps
_calls = []
def _cg(*a, **k):
    _calls.append(1)
    if len(_calls) == 2:
        if {inside_kernel}:  # from another thread, while the main thread is in the kernels
            threading.Thread(target=lambda: (time.sleep(0.001), os.kill(os.getpid(), signal.{sig}))).start()
        else:
            os.kill(os.getpid(), signal.{sig})
    return _real(*a, **k)
newton.cg_steps = _cg
"""
# For folds side by side: a fit's Newton steps after the signal was sent wait until it has reached
# the process, and half a second more (the main thread acts on it within 0.05 s). On a loaded
# machine (load 4) the folds in flight otherwise ran to their end, and wrote their models, before
# the main thread next ran: a failure of the test's timing, not of rankkit.
AT_NEWTON_HELD = AT_NEWTON + """
from rankkit import interrupts
_cg_sending = newton.cg_steps
def _cg_held(*a, **k):
    if len(_calls) >= 2:
        t = time.monotonic()
        while interrupts.received() is None and time.monotonic() - t < 30:
            time.sleep(0.002)
        time.sleep(0.5)
    return _cg_sending(*a, **k)
newton.cg_steps = _cg_held
"""
AT_READ = """
import os, signal
import rankkit.io.svmlight as sv
_real = sv.parse_bytes
def _parse(*a, **k):
    os.kill(os.getpid(), signal.{sig})
    return _real(*a, **k)
sv.parse_bytes = _parse
"""


@pytest.mark.parametrize("sig,point", [("SIGINT", "newton-kernel"), ("SIGINT", "newton"), ("SIGTERM", "read"),
                                       ("SIGTERM", "model-write"), ("SIGHUP", "model-write"), ("SIGTERM", "newton-kernel")])
def test_signal_mid_train_keeps_the_old_model_and_leaves_no_temp_file(tmp_path, primed, sig, point):
    """Before: SIGINT in Newton gave exit 1 `SystemError: CPUDispatcher(...) returned a result with
    an exception set` about half the time; SIGTERM/SIGHUP while writing left `.m.txt.XXXX.tmp`."""
    old = primed["model"].read_bytes()
    (tmp_path / "m.txt").write_bytes(old)
    inject = {"read": AT_READ, "model-write": AT_FSYNC}.get(point, AT_NEWTON).format(
        sig=sig, inside_kernel=point == "newton-kernel")
    proc = run(["train", SAMPLE_TRAIN, "m.txt", "-C", "3"], tmp_path, primed["env"], inject=inject)
    err = proc.stderr.decode()
    assert proc.returncode == 128 + getattr(signal, sig), err
    assert err == f"rankkit: interrupted by {sig}\n", err
    assert (tmp_path / "m.txt").read_bytes() == old
    assert no_temp_files(tmp_path)


def test_sigterm_while_writing_scores_leaves_no_temp_file(tmp_path, primed):
    proc = run(["predict", SAMPLE_TEST, primed["model"], "s.txt"], tmp_path, primed["env"],
               inject=AT_FSYNC.format(sig="SIGTERM"))
    assert proc.returncode == 143 and proc.stderr == b"rankkit: interrupted by SIGTERM\n"
    assert not (tmp_path / "s.txt").exists() and no_temp_files(tmp_path)


AT_MKSTEMP = """
import os, signal
import rankkit.io.atomic as atomic
_real = atomic._create_temporary
def _made(*a, **k):
    made = _real(*a, **k)
    os.kill(os.getpid(), signal.{sig})  # the file exists; atomic_open does not hold its name yet
    return made
atomic._create_temporary = _made
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_just_after_the_temporary_file_is_made_leaves_nothing(tmp_path, primed, sig):
    """Before: 8 of 64 targeted trials left an empty `.m.txt.XXXX.tmp` that no later run removed."""
    old = primed["model"].read_bytes()
    (tmp_path / "m.txt").write_bytes(old)
    proc = run(["train", SAMPLE_TRAIN, "m.txt", "-C", "3"], tmp_path, primed["env"], inject=AT_MKSTEMP.format(sig=sig))
    assert proc.returncode == 128 + getattr(signal, sig) and proc.stderr == f"rankkit: interrupted by {sig}\n".encode()
    assert (tmp_path / "m.txt").read_bytes() == old
    assert no_temp_files(tmp_path)


def test_a_killed_runs_temporary_file_is_removed_by_the_next_write_of_that_file(tmp_path, primed):
    """SIGKILL (timeout -s KILL, the out-of-memory killer) runs no handler: the next run writing the
    same file removes the temporary files of writers that are gone, on this host; never those of a
    running process, of another host (a shared directory) or of another file."""
    from rankkit.io.atomic import _host_tag

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    names = {"dead": f".m.txt.~{dead}-{_host_tag()}.abc123_x.tmp", "alive": f".m.txt.~{os.getpid()}-{_host_tag()}.abc123_y.tmp",
             "other_host": f".m.txt.~{dead}-000000.abc123_z.tmp", "other_file": f".s.txt.~{dead}-{_host_tag()}.abc123_w.tmp"}
    for name in names.values():
        (tmp_path / name).write_bytes(b"")
    proc = run(["train", SAMPLE_TRAIN, "m.txt", "-C", "0.01"], tmp_path, primed["env"])
    assert proc.returncode == 0, proc.stderr
    left = {n for n in os.listdir(tmp_path) if n.endswith(".tmp")}
    assert left == {names["alive"], names["other_host"], names["other_file"]}


def test_an_output_name_ending_in_a_slash_is_refused(tmp_path):
    """`rankkit train DATA newdir/` wrote a regular file called `newdir`."""
    for out in ("newdir/", "newdir/."):
        proc = run(["train", SAMPLE_TRAIN, out, "-C", "0.01"], tmp_path)
        assert_one_line_error(proc, f"cannot write '{out}'", "names a directory")
        assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("args", [["train", "-", "m.txt", "-C", "0.01"], ["predict", SAMPLE_TEST, "-", "s.txt"],
                                  ["eval", SAMPLE_TEST, "-"]])
def test_dash_with_standard_input_closed(tmp_path, args):
    """`<&-` (a cron line, a daemon): was `internal error: AttributeError: 'NoneType' object has no
    attribute 'buffer'`."""
    proc = run(args, tmp_path, stdin=None, preexec_fn=lambda: os.close(0))
    assert_one_line_error(proc, "cannot read standard input ('-'): it is closed")
    assert os.listdir(tmp_path) == []


def test_working_directory_deleted(tmp_path):
    """Was `internal error: FileNotFoundError`."""
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = run(["train", SAMPLE_TRAIN, "m.txt", "-C", "0.01"], gone, preexec_fn=lambda: os.rmdir(gone))
    assert_one_line_error(proc, "the working directory no longer exists")
    assert os.listdir(tmp_path) == []


def test_ignored_sighup_stays_ignored(tmp_path, primed):
    """Under nohup SIGHUP is ignored: rankkit keeps it so (the run completes)."""
    inject = "import signal; signal.signal(signal.SIGHUP, signal.SIG_IGN)\n" + AT_FSYNC.format(sig="SIGHUP")
    proc = run(["train", SAMPLE_TRAIN, "m.txt", "-C", "0.01"], tmp_path, primed["env"], inject=inject)
    assert proc.returncode == 0 and proc.stderr == b""
    assert np.array_equal(read_model(str(tmp_path / "m.txt")).weights, read_model(str(primed["model"])).weights)


# -- outputs that are inputs --------------------------------------------------------------------
def _data_copies(tmp_path):
    shutil.copy(SAMPLE_TRAIN, tmp_path / "train.txt")
    shutil.copy(SAMPLE_TEST, tmp_path / "vali.txt")
    os.symlink("train.txt", tmp_path / "link.txt")
    os.link(tmp_path / "train.txt", tmp_path / "hard.txt")
    return {p: (tmp_path / p).read_bytes() for p in ("train.txt", "vali.txt")}


@pytest.mark.parametrize("args,fragment", [
    (["train", "train.txt", "train.txt"], "it is the input file 'train.txt'"),
    (["train", "train.txt", "link.txt"], "it is the input file 'train.txt'"),
    (["train", "train.txt", "hard.txt"], "it is the input file 'train.txt'"),
    (["train", "train.txt", "vali.txt"], "it holds LETOR/SVMlight data"),
    (["train", "train.txt", "m.txt", "--solver", "factorized", "--valid", "vali.txt", "--iterations", "10",
      "--save-factors", "vali.txt"], "it is the input file 'vali.txt'"),
    (["predict", "vali.txt", "M", "vali.txt"], "it is the input file 'vali.txt'"),
    (["predict", "vali.txt", "M", "train.txt"], "it holds LETOR/SVMlight data"),
    (["predict", "vali.txt", "M", "M"], "it is the input file"),
    (["path", "train.txt", "vali.txt", "--out-model", "vali.txt"], "it is the input file 'vali.txt'"),
    (["path", "train.txt", "vali.txt", "--table", "link.txt"], "it is the input file 'train.txt'"),
    (["path", "train.txt", "vali.txt", "--plot", "p.pdf"], ".svg or .png"),
    (["path", "train.txt", "vali.txt", "--table", "t.svg", "--plot", "t.svg"], "it is also the output 't.svg'"),
    (["train", "train.txt", "f.model", "--solver", "factorized", "--save-factors", "./f.model"],
     "it is also the output 'f.model'"),
    (["train", "train.txt", "m.txt", "--solver", "factorized", "--save-factors", "M"], "it is a rankkit model"),
    (["predict", "vali.txt", "M", "M2"], "it is a rankkit model, not scores"),
    (["path", "train.txt", "vali.txt", "--table", "M2"], "it is a rankkit model"),
])
def test_an_output_never_replaces_an_input(tmp_path, primed, args, fragment):
    """Before: `train TRAIN TRAIN`, `train train.txt vali.txt`, `predict DATA MODEL DATA` replaced an
    input with the output and exited 0 (a data file was destroyed while the tool was tried)."""
    before = _data_copies(tmp_path)
    shutil.copy(primed["model"], tmp_path / "M2")
    before["M2"] = (tmp_path / "M2").read_bytes()
    args = [str(primed["model"]) if a == "M" else a for a in args]
    proc = run(args, tmp_path, primed["env"])
    assert_one_line_error(proc, fragment)
    assert {p: (tmp_path / p).read_bytes() for p in before} == before
    assert no_temp_files(tmp_path)


def test_writing_into_dev_stdout_through_a_pipe(tmp_path, primed):
    """`predict DATA MODEL /dev/stdout | head -1`: /dev/stdout resolves to 'pipe:[...]', which has
    no directory; before, exit 2 `cannot write '/dev/stdout': directory '/proc/N/fd' does not exist`."""
    big = tmp_path / "big.txt"  # more than a pipe buffer of scores: head closes the pipe mid-write
    big.write_bytes(b"".join(SAMPLE_TEST.read_bytes().replace(b"qid:", f"qid:{k}0".encode()) for k in range(1, 30)))
    proc = subprocess.run(f"{sys.executable} -m rankkit predict {big} {primed['model']} /dev/stdout | head -3; "
                          "exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", cwd=tmp_path,
                          env=primed["env"], capture_output=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert proc.stdout.splitlines() == primed["scores"].splitlines()[:3]


def test_replacing_a_model_keeps_its_mode(tmp_path, primed):
    (tmp_path / "m.txt").write_bytes(primed["model"].read_bytes())
    os.chmod(tmp_path / "m.txt", 0o640)
    assert run(["train", SAMPLE_TRAIN, "m.txt", "-C", "0.02"], tmp_path, primed["env"]).returncode == 0
    assert (os.stat(tmp_path / "m.txt").st_mode & 0o777) == 0o640
    assert read_model(str(tmp_path / "m.txt")).header["C"] == "0.02"


def test_a_non_model_file_is_not_replaced_by_a_model(tmp_path, primed):
    (tmp_path / "notes.txt").write_text("my notes\n")
    assert_one_line_error(run(["train", SAMPLE_TRAIN, "notes.txt"], tmp_path, primed["env"]), "not a rankkit model")
    assert (tmp_path / "notes.txt").read_text() == "my notes\n"


# -- path --jobs --------------------------------------------------------------------------------
def _folds(tmp_path, n=2, break_fold=None):
    for k in range(1, n + 1):
        d = tmp_path / "folds" / f"Fold{k}"
        d.mkdir(parents=True)
        shutil.copy(SAMPLE_TRAIN, d / "train.txt")
        shutil.copy(ROOT / "data" / "sample.vali.txt", d / "vali.txt")
        shutil.copy(SAMPLE_TEST, d / "test.txt")
    if break_fold is not None:
        with open(tmp_path / "folds" / f"Fold{break_fold}" / "vali.txt", "a") as fh:
            fh.write("1 qid:9999 3:oops\n")
    return tmp_path / "folds"


def test_path_jobs_with_one_thread_runs(tmp_path, primed):
    """Before: `fork() called from a process already using GNU OpenMP` then BrokenProcessPool, exit 1."""
    folds = _folds(tmp_path)
    args = ["path", "--folds", folds, "--method", "grid", "--n-points", "3"]
    two = run([*args, "--jobs", "2", "--threads", "1"], tmp_path, primed["env"])
    assert two.returncode == 0, two.stderr
    one = run([*args, "--jobs", "1"], tmp_path, primed["env"])
    assert one.returncode == 0 and one.stdout == two.stdout


def test_path_jobs_reports_a_bad_fold_file_like_one_job(tmp_path, primed):
    """Before: exit 1 BrokenProcessPool (the DataError could not be pickled)."""
    folds = _folds(tmp_path, break_fold=2)
    args = ["path", "--folds", folds, "--method", "grid", "--n-points", "3"]
    one = run([*args, "--jobs", "1"], tmp_path, primed["env"])
    two = run([*args, "--jobs", "2"], tmp_path, primed["env"])
    assert_one_line_error(one, "Fold2/vali.txt:", "'oops'")
    assert two.stderr == one.stderr and two.returncode == 2


# -- several copies at once (make -j) -----------------------------------------------------------
def test_concurrent_writers_of_one_model_leave_one_complete_model(tmp_path, primed):
    """Four trainings with different C racing to write the same MODEL: the survivor is one complete
    model (its checksum holds), no temporary file is left, every run exits 0."""
    procs = [subprocess.Popen([sys.executable, "-m", "rankkit", "train", str(SAMPLE_TRAIN), "m.txt", "-C", str(c)],
                              cwd=tmp_path, env=primed["env"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for c in (0.01, 0.1, 1.0, 10.0)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errs
    model = read_model(str(tmp_path / "m.txt"))
    assert model.header["C"] in ("0.01", "0.1", "1.0", "10.0")
    assert no_temp_files(tmp_path)


def test_a_cache_that_cannot_be_written_is_switched_off_not_fatal(tmp_path, monkeypatch, capsys):
    """A full disk (or a cache directory made read-only under a running process): the kernel still
    compiles and runs, one note says the cache is off."""
    import errno

    from numba.core.caching import FunctionCache

    from rankkit import console
    from rankkit.compiler import dispatch, jit

    def full(self, sig, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(FunctionCache, "save_overload", full)
    monkeypatch.setattr(jit, "_cache_enabled", True)
    monkeypatch.setattr(jit, "_compile_noted", True)  # the compile note is another test's (test_aot)
    monkeypatch.setattr(console, "_stderr_ok", True)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(jit.numba.config, "CACHE_DIR", str(tmp_path))

    @dispatch.njit
    def twice(x):
        return 2.0 * x

    assert twice(21.0) == 42.0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write the kernel cache" in err and "No space left" in err
    assert jit._cache_enabled is False


def test_killed_path_worker_is_not_an_internal_error(tmp_path, primed):
    """A --jobs worker killed (the OOM killer, a stray kill): before, exit 1 `internal error:
    BrokenProcessPool ... please report it`. Now exit 2 with one line saying what happened."""
    folds = _folds(tmp_path)
    inject = """
import os, signal
from concurrent.futures import ProcessPoolExecutor
_real = ProcessPoolExecutor.submit
_killed = []
def _submit(self, *a, **k):
    future = _real(self, *a, **k)
    for proc in list(self._processes.values())[:1]:  # as the OOM killer would, once
        if not _killed:
            _killed.append(proc.pid)
            os.kill(proc.pid, signal.SIGKILL)  # (killing it again on the next submit raced its exit)
    return future
ProcessPoolExecutor.submit = _submit
"""
    proc = run(["path", "--folds", folds, "--method", "grid", "--n-points", "3", "--jobs", "2"], tmp_path,
               primed["env"], inject=inject)
    assert_one_line_error(proc, "worker process ended abruptly")


def test_a_signal_after_the_result_is_complete_does_not_change_the_outcome(tmp_path, primed):
    """Once the model is in place the run has succeeded: a SIGTERM while Python shuts down used to
    kill it (exit -15) although the new model was complete."""
    inject = """
import atexit, os, signal
atexit.register(lambda: os.kill(os.getpid(), signal.SIGTERM))
"""
    proc = run(["train", SAMPLE_TRAIN, "m.txt", "-C", "0.01"], tmp_path, primed["env"], inject=inject)
    assert proc.returncode == 0 and proc.stderr == b""
    assert np.array_equal(read_model(str(tmp_path / "m.txt")).weights, read_model(str(primed["model"])).weights)


@pytest.mark.parametrize("args,fragment", [
    (["train", "D", "m.txt", "-C", "nan"], "nan is not a finite number"),
    (["train", "D", "m.txt", "--tol", "inf"], "inf is not a finite number"),
    (["train", "D", "m.txt", "--delta", "0,1"], "--delta applies only with --rescale"),
    (["train", "D", "m.txt", "--rescale", "margin", "--delta", "0,nan,1"], "--delta '0,nan,1'"),
    (["path", "D", "D", "--ratio", "inf"], "inf is not a finite number"),
    (["train", "D", "m.txt", "-C", "-1"], "-1.0 is not in the range"),
])
def test_bad_option_values_are_one_line_before_any_work(tmp_path, primed, args, fragment):
    """nan and inf passed Click's range checks and failed later with messages blaming the data;
    --delta without --rescale was ignored; Click's usage errors took three lines."""
    proc = run([str(SAMPLE_TRAIN) if a == "D" else a for a in args], tmp_path, primed["env"])
    assert_one_line_error(proc, fragment)


def test_predict_refuses_to_write_scores_that_are_not_finite(tmp_path, primed):
    from tests.test_cli import MODEL2  # weights 0.5, 0.25, -1

    (tmp_path / "m.txt").write_text(MODEL2)
    (tmp_path / "huge.txt").write_text("1 qid:1 1:1\n2 qid:1 1:-1.7e308 3:1.7e308\n")
    proc = run(["predict", "huge.txt", "m.txt", "s.txt"], tmp_path, primed["env"])
    assert_one_line_error(proc, "huge.txt:2:", "score of this document is -inf")
    assert not (tmp_path / "s.txt").exists()


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_signal_while_folds_train_side_by_side(tmp_path, primed, sig):
    """`path --folds -C ... --jobs 2` runs folds on threads: a signal during a fit ends the run with
    the signal's status and one line; no fold starts after it, the fits in flight stop at their
    next kernel call (at most a model being written completes), and no temporary file is left."""
    folds = _folds(tmp_path, n=3)
    inject = AT_NEWTON_HELD.format(sig=sig, inside_kernel=True)
    proc = run(["path", "--folds", folds, "-C", "0.01", "-C", "0.1", "-C", "1", "--out-dir", "m", "--jobs", "2"],
               tmp_path, primed["env"], inject=inject)
    err = proc.stderr.decode()
    assert proc.returncode == 128 + getattr(signal, sig), err
    assert err == f"rankkit: interrupted by {sig}\n", err
    models = sorted(os.listdir(tmp_path / "m"))
    assert len(models) <= 1 and no_temp_files(tmp_path / "m")  # the signal came during the first fits
    for name in models:
        assert name.endswith(".model")
        read_model(str(tmp_path / "m" / name))


def test_bad_fold_stops_the_folds_in_flight(tmp_path, primed):
    """A bad file in one fold while another trains (--jobs 2): one line, exit 2, and no model: the
    other fold stops at its next kernel call (the signal test above is the one that tells this
    apart from a fold finishing its fit)."""
    folds = _folds(tmp_path, n=2)
    sample = (folds / "Fold1" / "train.txt").read_bytes()
    (folds / "Fold1" / "train.txt").write_bytes(sample * 4 + b"0 qid:999999 1:x\n")  # fails once read
    (folds / "Fold2" / "train.txt").write_bytes(sample * 40)  # still training when Fold1 fails
    proc = run(["path", "--folds", folds, *[a for c in ("0.01", "0.1", "1", "10") for a in ("-C", c)],
                "--out-dir", "m", "--jobs", "2"], tmp_path, primed["env"])
    assert_one_line_error(proc, "feature value 'x' is not a number")
    assert not (tmp_path / "m").exists()  # since issue 35: every fold is read before anything is created


def test_path_summary_into_head_still_writes_its_files(tmp_path, primed):
    """`rankkit path ... | head -1`: the summary stops, the command does not: the models and the
    table are written and the status is 0 (before: exit 1, and the table could be missing)."""
    folds = _folds(tmp_path, n=2)
    proc = subprocess.run(
        f"{sys.executable} -m rankkit path --folds {folds} -C 0.01 -C 0.1 --out-dir m --table t.tsv "
        f"| head -1; exit ${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", cwd=tmp_path, env=primed["env"], capture_output=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert proc.stdout.count(b"\n") == 1
    assert len((tmp_path / "t.tsv").read_text().splitlines()) == 1 + 4
    assert sorted(os.listdir(tmp_path / "m")) == sorted(f"Fold{k}.C{c}.model" for k in (1, 2) for c in ("0.01", "0.1"))


# -- memory: exit 3, one line, whichever allocation fails ------------------------------------------
@pytest.mark.parametrize("args", [["train", "/dev/zero", "m.txt"], ["predict", "/dev/zero", "MODEL", "s.txt"],
                                  ["predict", SAMPLE_TEST, "/dev/zero", "s.txt"], ["eval", SAMPLE_TEST, "/dev/zero"]])
def test_dev_zero_as_any_input_is_refused_at_its_first_block(tmp_path, primed, args):
    """`train /dev/zero M` read until memory ran out: every text input is refused at its first NUL."""
    args = [primed["model"] if a == "MODEL" else a for a in args]
    proc = run(args, tmp_path, primed["env"])
    assert_one_line_error(proc, "/dev/zero:1: ", "binary data")
    assert os.listdir(tmp_path) == []


def test_an_address_space_limit_too_small_to_start_is_exit_3(tmp_path):
    import resource

    limit = 100 << 20
    proc = run(["train", SAMPLE_TRAIN, "m.txt"], tmp_path,
               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
    err = proc.stderr.decode()
    assert proc.returncode == 3 and err.count("\n") == 1, err
    assert err.startswith("rankkit: error: out of memory: the address-space limit (ulimit -v) of 100 MB is below the "
                          "512 MB rankkit needs"), err
    assert os.listdir(tmp_path) == []


def test_memory_error_mid_train_is_exit_3_and_keeps_the_old_model(tmp_path, primed):
    old = primed["model"].read_bytes()
    (tmp_path / "m.txt").write_bytes(old)
    inject = ("import rankkit.solvers.newton as newton\n"
              "def _cg(*a, **k):\n    raise MemoryError()\n"
              "newton.cg_steps = _cg\n")
    proc = run(["train", SAMPLE_TRAIN, "m.txt", "-C", "3"], tmp_path, primed["env"], inject=inject)
    err = proc.stderr.decode()
    assert proc.returncode == 3 and err.count("\n") == 1 and err.startswith("rankkit: error: out of memory: "), err
    assert (tmp_path / "m.txt").read_bytes() == old and no_temp_files(tmp_path)


def test_out_of_memory_mapping(monkeypatch):
    import errno

    from rankkit import limits
    from rankkit.errors import EXIT_RESOURCES, ResourceError

    assert limits.out_of_memory(MemoryError()).exit_code == EXIT_RESOURCES
    assert limits.out_of_memory(OSError(errno.ENOMEM, "Cannot allocate memory")) is not None
    llvm = OSError("Could not find/load shared object file 'libllvmlite.so' from resource location")
    monkeypatch.setattr(limits, "address_limit", lambda: 300 << 20)
    assert "llvmlite" in str(limits.out_of_memory(llvm))
    monkeypatch.setattr(limits, "address_limit", lambda: None)  # no limit: a broken install, a bug to report
    assert limits.out_of_memory(llvm) is None
    assert limits.out_of_memory(ValueError("x")) is None
    assert isinstance(ResourceError("x"), MemoryError)


def test_an_endless_stream_is_stopped_before_it_takes_the_machines_memory(monkeypatch):
    """`yes '1 qid:1 1:1' | rankkit train - M` would grow until the out-of-memory killer ended some
    process: reading stops at nine tenths of the memory available at the start."""
    import io

    from rankkit import limits
    from rankkit.errors import ResourceError
    from rankkit.io.files import read_bytes

    monkeypatch.setattr(limits, "available", lambda: 10 << 20)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"1 qid:1 1:1\n" * (2 << 20))))
    with pytest.raises(ResourceError, match=r"out of memory: <stdin> is larger than nine tenths"):
        read_bytes("-")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"1 qid:1 1:1\n" * 1000)))
    assert read_bytes("-").size == 12000


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            if int(stat.rsplit(b")", 1)[1].split()[1]) == pid:
                kids.append(int(entry))
    return kids


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc (Linux)")
def test_sigkill_of_path_jobs_leaves_no_worker_holding_its_pipes(tmp_path, primed):
    """SIGKILL of `path --folds DIR --jobs 2` (timeout -s KILL, systemd, the OOM killer) orphaned both
    workers and the resource tracker for 13 minutes, holding the parent's stdout and stderr, so a
    `communicate()` on them hung. Now every child ends and the pipes close within seconds."""
    folds = _folds(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "rankkit", "path", "--folds", str(folds), "--method", "grid",
                             "--n-points", "60", "--jobs", "2", "--threads", "1"], cwd=tmp_path, env=primed["env"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        kids: set[int] = set()
        while time.monotonic() < deadline and proc.poll() is None:
            kids |= set(_children(proc.pid))
            if len(kids) >= 3:  # two workers and the resource tracker
                break
            time.sleep(0.05)
        assert proc.poll() is None and len(kids) >= 2, (proc.returncode, kids)
        time.sleep(0.3)  # the workers are importing or inside their first fold
        kids |= set(_children(proc.pid))
        proc.kill()
        out, err = proc.communicate(timeout=60)  # hung forever before: the workers held the pipes
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(k) for k in kids):
            time.sleep(0.1)
        assert not [k for k in kids if _alive(k)], "children of the killed run still alive"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
