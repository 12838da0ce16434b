"""The kernel cache on a shared machine: nothing another user could have written is ever unpickled
or loaded (issue 35, item 2).

numba's cache holds pickles (its index *.nbi and data *.nbc files) and rankkit's ahead-of-time
build holds extension modules: loading either runs code as whoever loads it. A cache directory, or
a directory above it, that another user can write, and any file in it that is not this user's or
root's (or that others can write), is not used: the run compiles into the private per-user
directory instead, with one line on stderr. Tested for real: as root, with the pickles planted by
user `nobody`.
"""

from __future__ import annotations

import os
import pickle
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from rankkit.compiler import aot
from tests.test_cli import SAMPLE_TEST, SAMPLE_TRAIN, _env
from tests.test_faults import run


def _nobody():
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        return None


as_root_with_nobody = pytest.mark.skipif(os.geteuid() != 0 or _nobody() is None,
                                         reason="needs root and a `nobody` user to plant files as another user")


class _Planted:
    """Unpickling this runs `touch MARKER` (what a planted cache file would do)."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _as_nobody(script: str, *args: str, data: bytes = b"") -> None:
    subprocess.run(["sh", "-c", script, "sh", *args], input=data, user="nobody", check=True, timeout=60,
                   capture_output=True)


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A JIT cache holding what train and predict compile (the suite's own when it has one), and
    the reference scores."""
    d = tmp_path_factory.mktemp("filled")
    cache = os.environ.get("NUMBA_CACHE_DIR") or str(d / "cache")
    env = dict(_env(), NUMBA_CACHE_DIR=cache, RANKKIT_AOT="0")
    assert run(["train", SAMPLE_TRAIN, "m.txt", "-C", "0.01"], d, env).returncode == 0
    assert run(["predict", SAMPLE_TEST, "m.txt", "s.txt"], d, env).returncode == 0
    return {"dir": d, "cache": Path(cache), "model": d / "m.txt", "scores": (d / "s.txt").read_bytes()}


@pytest.fixture
def shared():
    """A sticky world-writable directory that user nobody can reach (pytest's are root's alone)."""
    top = tempfile.mkdtemp(prefix="rankkit-shared-")
    os.chmod(top, 0o755)
    path = Path(top) / "cache"
    path.mkdir()
    os.chmod(path, 0o1777)
    yield path
    shutil.rmtree(top, ignore_errors=True)


def _plant(filled_cache: Path, shared: Path, marker: Path) -> int:
    """As nobody: every index file of the filled cache, at the same place in `shared`, replaced by
    a pickle that touches `marker` (what nobody's own run, then a swap, leaves there). Two shells
    for all of them (one per file took ~130 processes, 4 s of a core): the folders, then the
    files (the pickle on standard input into the first, copied to the others)."""
    evil = pickle.dumps(_Planted(str(marker)))
    files = [str(shared / index.relative_to(filled_cache)) for index in sorted(filled_cache.rglob("*.nbi"))]
    dirs = sorted({os.path.dirname(f) for f in files})
    if files:
        _as_nobody('mkdir -p "$@" && chmod 777 "$@"', *dirs)
        _as_nobody('first=$1; cat > "$first" && for f in "$@"; do [ "$f" = "$first" ] || cp "$first" "$f" || exit 1; done '
                   '&& chmod 666 "$@"', *files, data=evil)
    return len(files)


@as_root_with_nobody
@pytest.mark.parametrize("aot_setting,prefilled", [("0", True), pytest.param("1", True, marks=pytest.mark.slow),
                                                   pytest.param("0", False, marks=pytest.mark.slow)])
def test_pickles_planted_in_a_shared_cache_are_never_loaded(tmp_path, filled, shared, aot_setting, prefilled):
    """Before: root's run executed nobody's pickle (default settings and RANKKIT_AOT=0)."""
    marker = tmp_path / "PLANTED-PICKLE-RAN"
    assert _plant(filled["cache"], shared, marker) > 0
    private_tmp = tmp_path / "tmp"
    private = private_tmp / f"rankkit-numba-cache-{os.getuid()}"
    if prefilled:  # the private cache of an earlier run (else this run compiles into it: slow)
        shutil.copytree(filled["cache"], private, ignore=shutil.ignore_patterns("rankkit-aot"))
        os.chmod(private, 0o700)
    else:
        private_tmp.mkdir()
    env = dict(_env(), NUMBA_CACHE_DIR=str(shared), RANKKIT_AOT=aot_setting, TMPDIR=str(private_tmp))
    proc = run(["predict", SAMPLE_TEST, filled["model"], "s.txt"], tmp_path, env)
    err = proc.stderr.decode()
    assert not marker.exists(), "a pickle planted by another user ran"
    assert proc.returncode == 0, err
    assert err.count("\n") == 1 and str(shared) in err and "another user" in err and str(private) in err, err
    assert (tmp_path / "s.txt").read_bytes() == filled["scores"]
    assert any(private.rglob("*.nbi"))
    again = run(["predict", SAMPLE_TEST, filled["model"], "s2.txt"], tmp_path, env)
    assert again.returncode == 0 and not marker.exists()
    assert again.stderr.decode().count("\n") == 1, again.stderr  # said on every run that uses the JIT
    assert (tmp_path / "s2.txt").read_bytes() == filled["scores"]


@as_root_with_nobody
@pytest.mark.slow  # recompiles every kernel of predict
def test_a_planted_file_in_a_directory_of_ours_is_not_unpickled(tmp_path, filled):
    """The cache directory is root's and closed, but one index file in it belongs to nobody (or can
    be written by others): it is not read, and is replaced by a fresh one."""
    cache = tmp_path / "cache"
    shutil.copytree(filled["cache"], cache, ignore=shutil.ignore_patterns("rankkit-aot"))
    marker = tmp_path / "PLANTED-PICKLE-RAN"
    nobody = _nobody()
    indexes = sorted(cache.rglob("*.nbi"))
    for k, index in enumerate(indexes):
        index.write_bytes(pickle.dumps(_Planted(str(marker))))
        if k % 2:
            os.chown(index, nobody.pw_uid, nobody.pw_gid)
        else:
            os.chmod(index, 0o666)
    env = dict(_env(), NUMBA_CACHE_DIR=str(cache), RANKKIT_AOT="0", TMPDIR=str(tmp_path))
    proc = run(["predict", SAMPLE_TEST, filled["model"], "s.txt"], tmp_path, env)
    assert not marker.exists(), "a planted pickle ran"
    assert proc.returncode == 0 and proc.stderr.decode().count("\n") == 1, proc.stderr
    assert (tmp_path / "s.txt").read_bytes() == filled["scores"]


def test_trust_rule(tmp_path):
    d = tmp_path / "c"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    assert aot.trust_problem(str(d)) is None
    assert aot.trust_problem(str(d / "not-yet")) is None  # made by this process, then checked
    for mode, word in ((0o775, "group"), (0o777, "everyone"), (0o1777, "everyone")):
        os.chmod(d, mode)
        assert word in aot.trust_problem(str(d))
        assert aot.trust_problem(str(d / "sub")) is not None or mode & 0o1000  # sticky above: fine
    os.chmod(d, 0o1777)
    (d / "sub").mkdir(mode=0o755)
    assert aot.trust_problem(str(d / "sub")) is None  # as /tmp/x: no one else can rename it
    os.chmod(d, 0o777)
    assert aot.trust_problem(str(d / "sub")) is not None  # no sticky bit: anyone can swap it
    (tmp_path / "link").symlink_to(d / "sub")
    assert "symbolic link" in aot.trust_problem(str(tmp_path / "link"))


def test_open_trusted_reads_only_files_no_one_else_could_have_written(tmp_path):
    f = tmp_path / "x.nbi"
    f.write_bytes(b"ok")
    os.chmod(f, 0o644)
    assert aot.open_trusted(str(f)) == b"ok"
    os.chmod(f, 0o664)
    with pytest.raises(PermissionError):
        aot.open_trusted(str(f))
    os.chmod(f, 0o644)
    os.link(f, tmp_path / "hard")  # a hard link planted elsewhere
    with pytest.raises(PermissionError):
        aot.open_trusted(str(f))
    (tmp_path / "hard").unlink()
    (tmp_path / "l.nbi").symlink_to(f)
    with pytest.raises(OSError):
        aot.open_trusted(str(tmp_path / "l.nbi"))
    os.mkfifo(tmp_path / "p.nbi")
    with pytest.raises(PermissionError):  # refused, and no hang waiting for a writer
        aot.open_trusted(str(tmp_path / "p.nbi"))


def test_numba_config_file_in_the_working_directory_is_not_read(tmp_path, filled):
    """numba reads .numba_config.yaml from the current directory: in a shared one another user's
    file chose where root's run wrote (chrome_trace: any path) and which cache it used. Before: the
    trace file was written."""
    pytest.importorskip("yaml")  # numba reads the file only with PyYAML installed
    (tmp_path / ".numba_config.yaml").write_text(f"chrome_trace: {tmp_path / 'TRACE.json'}\ncache_dir: {tmp_path / 'c'}\n")
    env = dict(_env(), NUMBA_CACHE_DIR=str(filled["cache"]), RANKKIT_AOT="0")
    proc = run(["predict", SAMPLE_TEST, filled["model"], "s.txt"], tmp_path, env)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert not (tmp_path / "TRACE.json").exists() and not (tmp_path / "c").exists()
    assert (tmp_path / "s.txt").read_bytes() == filled["scores"]
