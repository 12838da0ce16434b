"""Outputs in directories other users can write (issue 35, items 1, 3, 4, 5, 10).

rankkit runs from cron as root and as service accounts, writing into /tmp and shared project
directories. Another user must never steer what it writes: a symbolic link, FIFO, device or socket
planted in a sticky world-writable directory by a user who is neither the caller nor the directory's
owner is refused in one line (the kernel's protected_symlinks / protected_fifos rules, applied by
rankkit itself: they are off on many machines, and a writer that resolves a link and renames over its
target is not protected by them). A FIFO nobody reads never hangs a run; the stale-temporary
clean-up removes only the caller's own files; a short write to stdout is an error, never exit 0 with
part of the output; `--out-dir ''` is refused; every name the file system accepts can be written.

The planting is done as user nobody (subprocess.run(user=...)), so those tests need root and skip
otherwise; the sticky directory is made directly under /tmp (pytest's tmp_path is private to root).
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.test_cli import ROOT, SAMPLE_TEST, SAMPLE_TRAIN, _env, assert_one_line_error

SAMPLE_VALI = ROOT / "data" / "sample.vali.txt"
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
try:
    NOBODY = pwd.getpwnam("nobody").pw_uid
except KeyError:
    NOBODY = None
needs_root = pytest.mark.skipif(not AS_ROOT or NOBODY is None, reason="planting as another user needs root and 'nobody'")


def rk(*args, cwd, timeout=120, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([sys.executable, "-m", "rankkit", *map(str, args)], cwd=cwd, env=_env(), timeout=timeout,
                          **kw)


def as_nobody(*cmd) -> None:
    subprocess.run(list(map(str, cmd)), user="nobody", check=True, capture_output=True, timeout=30)


@pytest.fixture
def shared():
    """A sticky world-writable directory, as /tmp (install -d -m1777)."""
    d = Path(tempfile.mkdtemp(prefix="rankkit-shared-", dir="/tmp"))
    os.chmod(d, 0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("model")
    assert rk("train", SAMPLE_TRAIN, "m.model", "-C", "0.01", cwd=d).returncode == 0
    assert rk("predict", SAMPLE_TEST, "m.model", "s.txt", cwd=d).returncode == 0
    return d / "m.model"


def _folds(d: Path, n: int = 2) -> Path:
    for k in range(1, n + 1):
        f = d / "folds" / f"Fold{k}"
        f.mkdir(parents=True)
        shutil.copy(SAMPLE_TRAIN, f / "train.txt")
        shutil.copy(SAMPLE_VALI, f / "vali.txt")
        shutil.copy(SAMPLE_TEST, f / "test.txt")
    return d / "folds"


# -- 1. links planted by another user ---------------------------------------------------------------
def _victim(tmp_path: Path) -> Path:
    secret = tmp_path / "notes.txt"
    secret.write_bytes(b"root's notes\n")
    os.chmod(secret, 0o600)
    return secret


# every output a command writes, named by the planted link (OUT)
OUTPUT_CASES = {
    "predict OUT": lambda m, f: ["predict", SAMPLE_TEST, m, "OUT"],
    "predict --format trec OUT": lambda m, f: ["predict", SAMPLE_TEST, m, "OUT", "--format", "trec"],
    "train MODEL": lambda m, f: ["train", SAMPLE_TRAIN, "OUT", "-C", "0.01"],
    "train --save-factors": lambda m, f: ["train", SAMPLE_TRAIN, "x.model", "--solver", "factorized", "-K", "2",
                                          "--iterations", "200", "--save-factors", "OUT"],
    "path --table": lambda m, f: ["path", SAMPLE_TRAIN, SAMPLE_VALI, "--table", "OUT", "--n-points", "3"],
    "path --plot": lambda m, f: ["path", SAMPLE_TRAIN, SAMPLE_VALI, "--plot", "OUT", "--n-points", "3"],
    "path --out-model": lambda m, f: ["path", SAMPLE_TRAIN, SAMPLE_VALI, "--out-model", "OUT", "--n-points", "3"],
    "convert OUT": lambda m, f: ["convert", m, "OUT", "--to", "svm_rank"],
    "path --folds --table": lambda m, f: ["path", "--folds", f, "-C", "0.1", "--out-dir", "mdir", "--table", "OUT"],
}


@needs_root
@pytest.mark.parametrize("case", list(OUTPUT_CASES))
def test_a_link_planted_by_another_user_is_refused_for_every_output(tmp_path, shared, model, case):
    """Before: nobody's /tmp/shr/out.scores -> /root/notes.txt; root's `rankkit predict ... 
    /tmp/shr/out.scores` exited 0 and the root file held scores (train, path, --save-factors too)."""
    secret = _victim(tmp_path)
    before = secret.read_bytes()
    link = shared / "out"
    as_nobody("ln", "-s", secret, link)
    folds = _folds(tmp_path)
    args = [str(link) if a == "OUT" else a for a in OUTPUT_CASES[case](model, folds)]
    proc = rk(*args, cwd=tmp_path)
    assert_one_line_error(proc, str(link), "symbolic link owned by nobody", "shared directory")
    assert secret.read_bytes() == before and os.path.islink(link)
    assert [n for n in os.listdir(shared) if n != "out"] == []


@needs_root
def test_a_link_to_a_directory_planted_as_out_dir_or_a_parent_is_refused(tmp_path, shared, model):
    """`experiment --out-dir /tmp/shr/d` wrote into the linked directory; the same for a link met as
    a parent directory of any output, and for path --folds --out-dir."""
    target = tmp_path / "precious"
    target.mkdir()
    link = shared / "d"
    as_nobody("ln", "-s", target, link)
    folds = _folds(tmp_path)
    for args in (["experiment", folds, "--out-dir", link, "--n-points", "2", "-m", "map"],
                 ["experiment", folds, "--out-dir", link / "sub", "--n-points", "2", "-m", "map"],
                 ["path", "--folds", folds, "-C", "0.1", "--out-dir", link],
                 ["train", SAMPLE_TRAIN, link / "m.model", "-C", "0.01"],
                 ["predict", SAMPLE_TEST, model, link / "s.txt"]):
        proc = rk(*args, cwd=tmp_path)
        assert_one_line_error(proc, f"'{link}'", "symbolic link owned by nobody")
        assert os.listdir(target) == [], args


@needs_root
def test_a_link_to_a_device_or_through_a_chain_is_refused(tmp_path, shared, model):
    as_nobody("ln", "-s", "/dev/null", shared / "dev")
    as_nobody("ln", "-s", shared / "dev", shared / "chain")
    for name in ("dev", "chain"):
        proc = rk("predict", SAMPLE_TEST, model, shared / name, cwd=tmp_path)
        assert_one_line_error(proc, f"'{shared / name}'", "owned by nobody")


@needs_root
def test_the_python_face_refuses_a_planted_link(tmp_path, shared, model):
    secret = _victim(tmp_path)
    as_nobody("ln", "-s", secret, shared / "m.model")
    code = ("import rankkit, sys\n"
            "from rankkit.errors import UsageError\n"
            f"X, y, qid = rankkit.load_svmlight_file({str(SAMPLE_TRAIN)!r}, query_id=True)\n"
            "m = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid)\n"
            "try:\n"
            f"    m.save({str(shared / 'm.model')!r})\n"
            "except UsageError as e:\n"
            "    print(e); sys.exit(2)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=_env(), timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert b"symbolic link owned by nobody" in proc.stdout
    assert secret.read_bytes() == b"root's notes\n"


@needs_root
def test_links_the_rule_allows_are_followed(tmp_path, shared, model):
    """The caller's own link in a shared directory, a link of the directory's owner, and a link of
    another user outside any sticky world-writable directory (the kernel's rule) are followed:
    the file they name is written, the link stays."""
    expected = (model.parent / "s.txt").read_bytes()
    own = shared / "own"
    os.symlink(tmp_path / "a.txt", own)
    assert rk("predict", SAMPLE_TEST, model, own, cwd=tmp_path).returncode == 0
    assert (tmp_path / "a.txt").read_bytes() == expected and os.path.islink(own)
    # a sticky world-writable directory that nobody owns: nobody's link is the owner's
    theirs = shared / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, -1)
    os.chmod(theirs, 0o1777)
    out = shared / "b.txt"
    out.touch()
    os.chmod(out, 0o666)
    as_nobody("ln", "-s", out, theirs / "link")
    assert rk("predict", SAMPLE_TEST, model, theirs / "link", cwd=tmp_path).returncode == 0
    assert out.read_bytes() == expected
    # nobody's own (not sticky, not world-writable) directory
    private = shared / "private"
    private.mkdir(mode=0o755)
    os.chown(private, NOBODY, -1)
    as_nobody("ln", "-s", tmp_path / "c.txt", private / "link")
    assert rk("predict", SAMPLE_TEST, model, private / "link", cwd=tmp_path).returncode == 0
    assert (tmp_path / "c.txt").read_bytes() == expected


# -- 1. FIFOs, devices, sockets ---------------------------------------------------------------------
@needs_root
def test_a_fifo_planted_by_another_user_is_refused_at_once(tmp_path, shared, model):
    """Before: `predict` and Python save() blocked forever on nobody's FIFO in a shared directory."""
    as_nobody("mkfifo", "-m", "666", shared / "out")
    for args in (["predict", SAMPLE_TEST, model, shared / "out"], ["train", SAMPLE_TRAIN, shared / "out", "-C", "0.01"],
                 ["convert", model, shared / "out", "--to", "svm_rank"]):
        t = time.monotonic()
        proc = rk(*args, cwd=tmp_path, timeout=60)
        assert_one_line_error(proc, f"'{shared / 'out'}'", "a FIFO owned by nobody")
        assert time.monotonic() - t < 30


@needs_root
def test_a_socket_planted_by_another_user_is_refused(tmp_path, shared, model):
    python = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), None)
    if python is None:
        pytest.skip("no Python that user nobody may run")
    code = f"import socket; s = socket.socket(socket.AF_UNIX); s.bind({str(shared / 'sock')!r})"
    as_nobody(python, "-c", code)
    proc = rk("predict", SAMPLE_TEST, model, shared / "sock", cwd=tmp_path)
    assert_one_line_error(proc, "a socket owned by nobody")


def test_a_fifo_nobody_reads_never_hangs(tmp_path, model):
    """The caller's own FIFO with no reader: refused after a bounded wait, exit 2, one line. The
    command's wait (rankkit.io.atomic.FIFO_WAIT, 5 s) is cut to 0.5 s in the process run here: the
    same code, 4.5 s less of the suite spent idle."""
    from rankkit.io import atomic

    assert 0 < atomic.FIFO_WAIT <= 10
    os.mkfifo(tmp_path / "p")
    t = time.monotonic()
    code = ("import runpy, rankkit.io.atomic as a; a.FIFO_WAIT = 0.5; "
            "runpy.run_module('rankkit', run_name='__main__', alter_sys=True)")
    proc = subprocess.run([sys.executable, "-c", code, "predict", str(SAMPLE_TEST), str(model), str(tmp_path / "p")],
                          cwd=tmp_path, env=_env(), timeout=60, capture_output=True, stdin=subprocess.DEVNULL)
    assert_one_line_error(proc, "FIFO that no process reads (waited 0.5 s for a reader)")
    assert 0.5 <= time.monotonic() - t < 30


def test_own_fifos_dev_stdout_and_process_substitution_keep_working(tmp_path, model):
    expected = (model.parent / "s.txt").read_bytes()
    os.mkfifo(tmp_path / "p")
    reader = subprocess.Popen(["cat", str(tmp_path / "p")], stdout=subprocess.PIPE)
    proc = rk("predict", SAMPLE_TEST, model, tmp_path / "p", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert reader.communicate(timeout=30)[0] == expected
    # /dev/stdout on a pipe and on a file, /dev/fd/N, >(...)
    assert rk("predict", SAMPLE_TEST, model, "/dev/stdout", cwd=tmp_path).stdout == expected
    with open(tmp_path / "o.txt", "wb") as fh:
        assert rk("predict", SAMPLE_TEST, model, "/dev/stdout", cwd=tmp_path, stdout=fh, stderr=subprocess.PIPE,
                  capture_output=False).returncode == 0
    assert (tmp_path / "o.txt").read_bytes() == expected
    bash = shutil.which("bash")
    if bash:
        py = f"{sys.executable} -m rankkit predict {SAMPLE_TEST} {model}"
        script = f"{py} >(cat > sub.txt) && {py} /dev/fd/5 5>fd.txt; wait; sleep 0.2"
        proc = subprocess.run([bash, "-c", script], cwd=tmp_path, env=_env(), capture_output=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        for _ in range(50):
            if (tmp_path / "sub.txt").exists() and (tmp_path / "sub.txt").read_bytes() == expected:
                break
            time.sleep(0.1)
        assert (tmp_path / "sub.txt").read_bytes() == expected
        assert (tmp_path / "fd.txt").read_bytes() == expected


def test_a_fifo_as_an_experiment_record_does_not_hang_the_resume_check(tmp_path):
    """A FIFO at OUT/FoldK/SOLVER.done.json hung experiment's resume check (an open for reading)."""
    folds = _folds(tmp_path, n=1)
    (tmp_path / "out" / "Fold1").mkdir(parents=True)
    os.mkfifo(tmp_path / "out" / "Fold1" / "newton.done.json")
    proc = rk("experiment", folds, "--out-dir", "out", "--n-points", "2", "-m", "map", cwd=tmp_path, timeout=120)
    assert_one_line_error(proc, "newton.done.json", "not a regular file")


def test_the_safe_open_helper_refuses_a_fifo_without_blocking(tmp_path):
    from rankkit.io.files import open_regular

    os.mkfifo(tmp_path / "p")
    with pytest.raises(OSError, match="not a regular file"):
        open_regular(tmp_path / "p")
    (tmp_path / "f").write_bytes(b"abc")
    with open_regular(tmp_path / "f") as fh:
        assert fh.read() == b"abc"


# -- 3. stale temporary files of other users --------------------------------------------------------
@needs_root
def test_the_stale_temporary_clean_up_never_removes_another_users_file(tmp_path, shared):
    """Before: nobody's `.NAME.~PID-HOST.XXXXXXXX.tmp` (PID gone) was removed by root's write of NAME."""
    from rankkit.io.atomic import _host_tag

    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    theirs = shared / f".m.model.~{dead}-{_host_tag()}.abcd1234.tmp"
    legacy = shared / ".m.model.abcd1234.tmp"
    for f in (theirs, legacy):
        as_nobody("touch", "-d", "3 days ago", f)
    mine = shared / f".m.model.~{dead}-{_host_tag()}.abcd5678.tmp"
    mine.touch()
    proc = rk("train", SAMPLE_TRAIN, shared / "m.model", "-C", "0.01", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert theirs.exists() and legacy.exists() and not mine.exists()


# -- 4. short writes to stdout ----------------------------------------------------------------------
LIMITED = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_FSIZE, ({n}, {n})); "
           "sys.argv[0] = 'rankkit'; runpy.run_module('rankkit', run_name='__main__', alter_sys=True)")


@pytest.mark.parametrize("args", [
    ["predict", SAMPLE_TEST, "MODEL", "--format", "trec"],
    ["predict", SAMPLE_TEST, "MODEL", "--format", "ranked"],
    ["predict", SAMPLE_TEST, "MODEL"],
    ["eval", SAMPLE_TEST, "SCORES", "--format", "json", "--per-query"],
    ["eval", SAMPLE_TEST, "SCORES", "--per-query"],
    ["convert", "MODEL", "-", "--to", "svm_rank"],
])
@pytest.mark.parametrize("fraction", [0.1, 0.7])
def test_stdout_into_a_file_that_fills_up_is_an_error(tmp_path, model, args, fraction):
    """Before: `predict --format trec ... > file` on a full file system wrote 16 KB of 162 KB and
    exited 0 with nothing on stderr (Python's buffered writer returns a short count, which its text
    layer and rankkit ignored); the same for `eval --format json --per-query`."""
    args = [str(model) if a == "MODEL" else str(model.parent / "s.txt") if a == "SCORES" else str(a) for a in args]
    full = subprocess.run([sys.executable, "-m", "rankkit", *args], capture_output=True, env=_env(), timeout=120)
    assert full.returncode == 0
    limit = int(len(full.stdout) * fraction)  # the file system fills up part way through
    with open(tmp_path / "out", "wb") as fh:
        proc = subprocess.run([sys.executable, "-c", LIMITED.format(n=limit), *args], stdout=fh,
                              stderr=subprocess.PIPE, env=_env(), timeout=120, cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("rankkit: error: cannot write standard output"), err


def test_stdout_on_a_small_full_tmpfs_is_an_error(tmp_path, model):
    """The issue's own case: a real full file system (a 64 KB tmpfs in a private mount namespace)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    opts = [] if AS_ROOT else ["-r"]
    probe = subprocess.run([unshare, *opts, "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {mnt}"],
                           capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.decode().strip()}")
    script = (f"mount -t tmpfs -o size=64k tmpfs {mnt} && "
              f"{sys.executable} -m rankkit predict {SAMPLE_TEST} {model} --format trec > {mnt}/s.txt; "
              "echo rc=$?; ls -l " + str(mnt))
    big = tmp_path / "big.txt"
    big.write_bytes(b"".join(SAMPLE_TEST.read_bytes().replace(b"qid:", f"qid:{k}0".encode()) for k in range(1, 6)))
    script = script.replace(str(SAMPLE_TEST), str(big))
    proc = subprocess.run([unshare, *opts, "-m", "sh", "-c", script], capture_output=True, env=_env(), timeout=120)
    assert b"rc=2" in proc.stdout, (proc.stdout, proc.stderr)
    assert proc.stderr.decode().endswith("rankkit: error: cannot write standard output: No space left on device\n")


def test_whole_writes_raise_on_a_short_write(tmp_path):
    """The root of item 4: a buffered writer over WholeWrites never returns a short count."""
    import resource

    from rankkit.console import WholeWrites

    code = ("import io, resource, sys\n"
            "from rankkit.console import WholeWrites\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
            "fh = io.BufferedWriter(WholeWrites(sys.argv[1], 'w'))\n"
            "try:\n"
            "    fh.write(b'x' * 5000); fh.flush()\n"
            "except OSError as e:\n"
            "    print('raised', e.errno)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "f")], capture_output=True, text=True,
                          env=_env(), timeout=60)
    assert proc.stdout.strip() == "raised 27", proc.stderr
    assert resource and WholeWrites


# -- 5. an empty --out-dir --------------------------------------------------------------------------
def test_an_empty_out_dir_is_refused(tmp_path):
    """Before: `--out-dir ''` wrote into the current directory (it replaced a user's results.txt)."""
    folds = _folds(tmp_path)
    (tmp_path / "results.txt").write_bytes(b"mine\n")
    before = sorted(os.listdir(tmp_path))
    for args in (["experiment", folds, "--out-dir", "", "--n-points", "2", "-m", "map"],
                 ["path", "--folds", folds, "-C", "0.1", "--out-dir", ""]):
        proc = rk(*args, cwd=tmp_path)
        assert_one_line_error(proc, "the output directory ''", "empty name")
        assert sorted(os.listdir(tmp_path)) == before
    code = ("import rankkit, sys\nfrom rankkit.errors import UsageError\n"
            "try:\n    rankkit.experiment('folds', metrics=('map',), n_points=2, out_dir='')\n"
            "except UsageError as e:\n    print(e); sys.exit(2)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=_env(), timeout=120, cwd=tmp_path)
    assert proc.returncode == 2 and b"empty name" in proc.stdout, proc.stderr
    assert sorted(os.listdir(tmp_path)) == before and (tmp_path / "results.txt").read_bytes() == b"mine\n"


def test_an_empty_output_name_is_refused_in_one_line(tmp_path, model):
    for args in (["train", SAMPLE_TRAIN, "", "-C", "0.01"], ["predict", SAMPLE_TEST, model, ""]):
        assert_one_line_error(rk(*args, cwd=tmp_path), "cannot write ''", "empty name")


# -- 10. long names ---------------------------------------------------------------------------------
def _name_max(d: Path) -> int:
    return os.pathconf(d, "PC_NAME_MAX")


@pytest.mark.parametrize("length", [228, 240, 254, 255])
def test_every_name_the_file_system_accepts_can_be_written(tmp_path, model, length):
    """Before: a legal name of 228-255 bytes failed ('File name too long': the temporary name adds ~30)."""
    if length > _name_max(tmp_path):
        pytest.skip("a shorter NAME_MAX here")
    name = "m" * (length - 6) + ".model"
    proc = rk("train", SAMPLE_TRAIN, name, "-C", "0.01", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    scores = "s" * (length - 4) + ".txt"
    proc = rk("predict", SAMPLE_TEST, name, scores, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / scores).read_bytes() == (model.parent / "s.txt").read_bytes()
    assert sorted(os.listdir(tmp_path)) == sorted([name, scores])


def test_a_long_multibyte_name_and_its_stale_temporaries(tmp_path, model):
    """A 255-byte name of two-byte characters: written; the temporary name is cut at a character
    boundary, and a killed writer's temporary file of that name is removed by the next write."""
    from rankkit.io.atomic import _host_tag, _stem

    name = "é" * 127 + "x"  # 255 bytes in UTF-8
    assert len(os.fsencode(name)) == 255 <= _name_max(tmp_path)
    stem = _stem(str(tmp_path), name)
    assert name.startswith(stem) and stem.encode("utf-8")
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    stale = tmp_path / f".{stem}.~{dead}-{_host_tag()}.abcd1234.tmp"
    stale.touch()
    proc = rk("predict", SAMPLE_TEST, model, name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path) == [name]


def test_the_temporary_name_says_whose_it_is(tmp_path):
    from rankkit.io.atomic import _create_temporary, _host_tag

    fd, tmp = _create_temporary(str(tmp_path), "x" * 255)
    os.close(fd)
    base = os.path.basename(tmp)
    assert len(os.fsencode(base)) <= 255 and base.endswith(".tmp")
    assert f".~{os.getpid()}-{_host_tag()}." in base
    st = os.lstat(tmp)
    assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o600
