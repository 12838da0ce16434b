"""What a user who installs with pip meets (issue 38): `rankkit --version`, `rankkit warmup` (the
same build as `python -m rankkit.warmup`, one line and exit 2 where nothing can be cached, nothing
on a non-terminal but the summary), and the package's files. The wheel itself, installed alone in a
fresh environment, is checked by scripts/check_wheel.py (`make wheel-check`, run by .ci/run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rankkit.config import MODEL_FORMAT_VERSION, OLDEST_MODEL_FORMAT, __version__
from rankkit.io import model as model_io

ROOT = Path(__file__).resolve().parent.parent


def _run(*args, env=None, cwd=None):
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), e.get("PYTHONPATH", "")] if p)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "rankkit", *args], capture_output=True, env=e,
                          cwd=cwd, stdin=subprocess.DEVNULL, timeout=600)


def test_version_names_the_model_formats():
    proc = _run("--version")
    assert proc.returncode == 0 and proc.stderr == b""
    lines = proc.stdout.decode().splitlines()
    assert lines[0].startswith(f"rankkit {__version__} (Python ")
    assert f"reads rankkit-model format {OLDEST_MODEL_FORMAT} to {MODEL_FORMAT_VERSION}" in lines[1]
    assert f"writes format {MODEL_FORMAT_VERSION}" in lines[1]
    # the numbers are the model module's own
    assert (model_io.FORMAT_VERSION, model_io.OLDEST_VERSION) == (MODEL_FORMAT_VERSION, OLDEST_MODEL_FORMAT)


def test_help_names_warmup():
    proc = _run("--help")
    assert proc.returncode == 0
    assert b"warmup" in proc.stdout and b"rankkit warmup" in proc.stdout


def test_warmup_help_is_the_builds():
    proc = _run("warmup", "--help")
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert out.startswith("usage: rankkit warmup ") and "--jobs" in out and "--force" in out


def test_warmup_bad_option_is_one_line_exit_2():
    proc = _run("warmup", "--no-such-option")
    assert proc.returncode == 2
    assert b"Traceback" not in proc.stderr


def test_warmup_already_built_is_quick_and_quiet(tmp_path):
    """The suite's kernel cache (make test builds it first): nothing to do, one line, exit 0; with -q
    nothing at all. Without a terminal there is no progress line."""
    cache = os.environ.get("NUMBA_CACHE_DIR")
    if not cache:
        pytest.skip("NUMBA_CACHE_DIR is not set (make test sets it to the run's fresh cache)")
    from rankkit.compiler import aot, build

    st = aot.status()
    if st["dir"] is None or st["calls"] < len(build.table()):
        pytest.skip("no complete ahead-of-time build in this run's cache")
    proc = _run("warmup")
    assert proc.returncode == 0
    assert proc.stderr.count(b"\n") == 1 and b"already compiled ahead of time" in proc.stderr
    assert b"\r" not in proc.stderr
    proc = _run("warmup", "-q")
    assert proc.returncode == 0 and proc.stderr == b""


def _can_mount_tmpfs() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                          capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs a private mount namespace (unshare -m) to mount a small tmpfs")
def test_warmup_on_a_full_cache_is_one_line_exit_2_at_once(tmp_path):
    """A kernel cache on a full file system: one line naming it, exit 2 (so `make` or a provisioning
    script does not mark the step done), before a minute of compiling rather than after."""
    cache = tmp_path / "cache"
    cache.mkdir()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    env["NUMBA_CACHE_DIR"] = str(cache)
    script = f"mount -t tmpfs -o size=64k,mode=0755 tmpfs {cache} && exec {sys.executable} -m rankkit warmup --force --jobs 1"
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, env=env, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"rankkit: error: cannot write the kernel cache in {cache}")
    assert "No space left on device" in lines[0] and "run `rankkit warmup` again" in lines[0]


def _check_wheel_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_wheel", ROOT / "scripts" / "check_wheel.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_wheel_check_hands_its_build_to_make_test_only_for_the_same_fingerprint(tmp_path, monkeypatch):
    """Issue 39 (CI time): .ci/run's wheel-check builds every kernel from the installed wheel, then
    make test built them again into its own cache. The wheel's build is handed over only when it
    was made for exactly the checkout's fingerprint (sources, toolchain, NUMBA_* settings, CPU) and
    the suite's cache has none; whole (the manifest last, no temporary file left), and once."""
    import json

    from rankkit.compiler import aot

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    check_wheel = _check_wheel_script()
    wheel_cache = tmp_path / "kernel-cache"
    built = wheel_cache / aot.SUBDIR
    built.mkdir(parents=True)
    (built / "rankkit_aot_0-abc.so").write_bytes(b"machine code")
    m = {"format": aot.FORMAT, "fingerprint": "0" * 64,
         "modules": {"rankkit_aot_0-abc.so": {"name": "rankkit_aot_0", "sha256": "x", "kernels": []}}}
    (built / aot.MANIFEST).write_text(json.dumps(m))
    assert "not handed to make test" in check_wheel.share_build(wheel_cache)
    assert not (tmp_path / "xdg").exists()
    m["fingerprint"] = aot.fingerprint()
    (built / aot.MANIFEST).write_text(json.dumps(m))
    said = check_wheel.share_build(wheel_cache)
    dest = Path(aot.suite_cache_dir()) / aot.SUBDIR
    assert said.startswith("its build (1 module) handed to make test's kernel cache ") and str(dest.parent) in said
    assert sorted(os.listdir(dest)) == [aot.MANIFEST, "rankkit_aot_0-abc.so"]
    assert (dest / "rankkit_aot_0-abc.so").read_bytes() == b"machine code" and aot.read_manifest(str(dest)) == m
    assert "already holds a build" in check_wheel.share_build(wheel_cache)
