"""`rankkit experiment` and `rankkit path --folds` (issue 35, items 6, 7 and 8): every input read
and checked before anything is created; resume records that name the data actually read (a pipe
resumed with other data is fitted again) and carry a checksum (an edited record is not trusted, and
the run says so in one line); one line and exit 2, never an internal error, for an output
directory that cannot be written (a dangling link, a regular file where a directory goes, a
read-only or full file system) and for odd fold names and standard input given twice."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import rankkit
from rankkit.errors import DataError, UsageError
from tests.test_cli import _env, assert_one_line_error, rankkit as run_cli

ROOT = Path(__file__).resolve().parents[1]
TRAIN, VALI, TEST = (str(ROOT / "data" / f"sample.{p}.txt") for p in ("train", "vali", "test"))
FAST = ("--n-points", "2")


def _bad(tmp_path) -> tuple[str, int]:
    bad = tmp_path / "bad.txt"
    bad.write_text(Path(TEST).read_text() + "1 qid:9 1:x\n")
    return str(bad), len(Path(TEST).read_text().splitlines()) + 1


def _letor(tmp_path, names=("Fold1", "Fold2"), name="L") -> Path:
    for fold in names:
        d = tmp_path / name / fold
        d.mkdir(parents=True)
        for part, src in (("train", TRAIN), ("vali", VALI), ("test", TEST)):
            shutil.copy(src, d / f"{part}.txt")
    return tmp_path / name


# -- item 7: nothing created before every input is read -------------------------------------------
def test_a_bad_line_in_the_second_fold_creates_nothing(tmp_path):
    """Before: OUT/Fold1 and OUT/Fold2 were created (empty) before Fold2's bad line was found."""
    bad, n = _bad(tmp_path)
    with pytest.raises(DataError, match=f"bad.txt:{n}"):
        rankkit.experiment([(TRAIN, VALI, TEST), (TRAIN, VALI, bad)], out_dir=str(tmp_path / "o"), n_points=2)
    assert not (tmp_path / "o").exists()
    proc = run_cli("experiment", "--fold", TRAIN, VALI, TEST, "--fold", TRAIN, VALI, bad, "--out-dir", "o2/deeper",
                   *FAST, cwd=tmp_path)
    assert_one_line_error(proc, f"bad.txt:{n}: feature value 'x'")
    assert not (tmp_path / "o2").exists()


def test_path_folds_fixed_c_reads_every_fold_before_writing(tmp_path):
    """Before: Fold1's models (and the --out-dir) were written before Fold2's bad test.txt was read."""
    folds = _letor(tmp_path)
    with open(folds / "Fold2" / "test.txt", "a") as fh:
        fh.write("1 qid:9 zz\n")
    proc = run_cli("path", "--folds", folds, "-C", "1", "--out-dir", "m", cwd=tmp_path)
    assert_one_line_error(proc, "Fold2/test.txt:", "'zz'")
    assert not (tmp_path / "m").exists()


# -- item 8: the output directory and the fold names ----------------------------------------------
@pytest.mark.parametrize("case", ["dangling", "fold-is-a-file", "out-is-a-file", "parent-is-a-file",
                                  "dangling-parent"])
def test_an_output_directory_that_cannot_be_made_is_one_line(tmp_path, case):
    """Before: FileNotFoundError / FileExistsError, exit 1 (internal error)."""
    out = tmp_path / "o"
    if case == "dangling":
        out.symlink_to(tmp_path / "nowhere")
        want = "symbolic link"
    elif case == "fold-is-a-file":
        out.mkdir()
        (out / "Fold1").write_text("")
        want = "Fold1': it is not a directory"
    elif case == "out-is-a-file":
        out.write_text("keep me\n")
        want = "not a directory"
    elif case == "parent-is-a-file":
        (tmp_path / "p").write_text("keep me\n")
        out = tmp_path / "p" / "o"
        want = "is not a directory"
    else:
        (tmp_path / "p").symlink_to(tmp_path / "nowhere")
        out = tmp_path / "p" / "o"
        want = "symbolic link"
    with pytest.raises(UsageError, match=want):
        rankkit.experiment([(TRAIN, VALI, TEST)], out_dir=str(out), n_points=2)
    if case != "out-is-a-file":  # click refuses a file given as --out-dir itself (its own one line)
        proc = run_cli("experiment", "--fold", TRAIN, VALI, TEST, "--out-dir", out, *FAST, cwd=tmp_path)
        assert_one_line_error(proc, want)
        proc = run_cli("path", "--folds", _letor(tmp_path, name=f"L{case}"), "-C", "1",
                       "--out-dir", out if case != "fold-is-a-file" else out / "Fold1", cwd=tmp_path)
        assert_one_line_error(proc)
    assert not (tmp_path / "nowhere").exists()
    if case in ("out-is-a-file", "parent-is-a-file"):
        assert (out if case == "out-is-a-file" else tmp_path / "p").read_text() == "keep me\n"


@pytest.mark.parametrize("out", ["/dev/null", "/dev/null/o", "/proc/self/o"])
def test_an_output_directory_in_a_device_or_proc_is_one_line(tmp_path, out):
    proc = run_cli("experiment", "--fold", TRAIN, VALI, TEST, "--out-dir", out, *FAST, cwd=tmp_path)
    assert_one_line_error(proc, f"'{out}'")


def test_dot_dot_after_a_link_is_resolved_as_the_kernel_does(tmp_path):
    """`lk/../o` with lk -> real/sub is real/o (the kernel follows lk first), not ./o."""
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "lk").symlink_to("real/sub")
    rankkit.experiment([(TRAIN, VALI, TEST)], out_dir=str(tmp_path / "lk" / ".." / "o"), n_points=2)
    assert (tmp_path / "real" / "o" / "results.json").is_file() and not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", ["Fold²", "Fold١", "Fold𝟚"])
def test_a_fold_named_with_a_non_ascii_digit_is_refused(tmp_path, name):
    """Before: 'Fold²' passed str.isdigit() and int('²') raised ValueError (exit 1); 'Fold١' was read as
    fold 1. Refused, naming the directory; ASCII FoldK only."""
    folds = _letor(tmp_path, names=("Fold1", name))
    for cmd in (("experiment", folds, *FAST), ("path", "--folds", folds), ("path", "--folds", folds, "-C", "1")):
        proc = run_cli(*cmd, cwd=tmp_path)
        assert_one_line_error(proc, name, "digits 0-9")


def test_fold_directories_sort_the_same_whatever_the_listing_order(tmp_path):
    from rankkit.paths.grid import fold_dirs

    folds = _letor(tmp_path, names=("Fold01", "Fold1", "Fold10", "Fold2"))
    assert fold_dirs(str(folds)) == ["Fold01", "Fold1", "Fold2", "Fold10"]


def test_standard_input_once_is_read_twice_is_refused(tmp_path):
    """Before: `--fold - VALI TEST` was an internal error (FileNotFoundError: '-', exit 1)."""
    train = Path(TRAIN).read_bytes()
    proc = run_cli("experiment", "--fold", "-", VALI, TEST, "--out-dir", "o", *FAST, cwd=tmp_path, stdin=train)
    assert proc.returncode == 0, proc.stderr
    ref = run_cli("experiment", "--fold", TRAIN, VALI, TEST, "--out-dir", "r", *FAST, cwd=tmp_path)
    assert proc.stdout.replace(b"o/", b"r/") == ref.stdout
    proc = run_cli("experiment", "--fold", "-", "-", TEST, *FAST, cwd=tmp_path, stdin=train)
    assert_one_line_error(proc, "standard input ('-')", "once")
    assert not (tmp_path / "Fold1").exists()


def _in_namespace(tmp_path, mount_options: str, *args) -> subprocess.CompletedProcess | None:
    """python -m rankkit ARGS with tmp_path/mnt a tmpfs (mount_options) in a private mount namespace
    (unshare -rm); None when this machine cannot make one."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    script = (f"mount -t tmpfs -o {mount_options} tmpfs {mnt} || exit 97; "
              f"exec {sys.executable} -m rankkit \"$@\"")
    proc = subprocess.run([unshare, "-rm", "sh", "-c", script, "sh", *map(str, args)], cwd=tmp_path,
                          capture_output=True, env=_env(), timeout=300, input=b"")
    if proc.returncode == 97 or b"unshare:" in proc.stderr[:200]:
        return None
    return proc


def test_an_output_directory_on_a_read_only_file_system_is_one_line(tmp_path):
    """Before: OSError EROFS from os.makedirs, exit 1."""
    for cmd in (("experiment", "--fold", TRAIN, VALI, TEST, "--out-dir", tmp_path / "mnt" / "o", *FAST),
                ("path", "--folds", _letor(tmp_path), "-C", "1", "--out-dir", tmp_path / "mnt" / "o")):
        proc = _in_namespace(tmp_path, "ro,size=1m", *cmd)
        if proc is None:
            pytest.skip("no private mount namespace (unshare -rm) on this machine")
        assert_one_line_error(proc, "mnt/o", "read-only file system")


@pytest.mark.parametrize("size", ["4k", "12k", "24k", "36k"])  # the outputs take ~11 pages
def test_an_output_directory_on_a_full_file_system_is_one_line(tmp_path, size):
    """A tmpfs that fills up somewhere in the run (the directories, a model, the scores, results):
    one line naming the file, exit 2, never an internal error nor a temporary file left."""
    proc = _in_namespace(tmp_path, f"size={size}", "experiment", "--fold", TRAIN, VALI, TEST,
                         "--out-dir", tmp_path / "mnt" / "o", *FAST)
    if proc is None:
        pytest.skip("no private mount namespace (unshare -rm) on this machine")
    assert_one_line_error(proc, "mnt/o")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permission bits")
def test_permission_denied_inside_the_output_directory(tmp_path):
    out = tmp_path / "o"
    (out / "Fold1").mkdir(parents=True)
    (out / "Fold1").chmod(0o500)
    try:
        proc = run_cli("experiment", "--fold", TRAIN, VALI, TEST, "--out-dir", out, *FAST, cwd=tmp_path)
        assert_one_line_error(proc, "Fold1", "permission denied")
    finally:
        (out / "Fold1").chmod(0o700)


# -- item 6: resume records -----------------------------------------------------------------------
def _figures(stdout: bytes) -> list[str]:
    return [ln for ln in stdout.decode().splitlines() if ln.startswith(("Fold1", "mean"))]


def test_a_pipe_resumed_with_other_data_is_fitted_again(tmp_path):
    """Before: `cat a | experiment --fold /dev/stdin ...` then `head -300 a | ...` said "reusing" and
    printed the first run's C and MAP (the record named the stream, whose second read was empty)."""
    full = Path(TRAIN).read_bytes()
    head = b"".join(full.splitlines(keepends=True)[:300])
    args = ("experiment", "--fold", "/dev/stdin", VALI, TEST, "--out-dir", "o", "-v", "--n-points", "3")
    first = run_cli(*args, cwd=tmp_path, stdin=full)
    second = run_cli(*args, cwd=tmp_path, stdin=head)
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert b"reusing" not in second.stderr
    (tmp_path / "h.txt").write_bytes(head)
    fresh = run_cli("experiment", "--fold", tmp_path / "h.txt", VALI, TEST, "--n-points", "3", cwd=tmp_path)
    assert _figures(second.stdout) == _figures(fresh.stdout) != _figures(first.stdout)
    third = run_cli(*args, cwd=tmp_path, stdin=head)  # the same data again: reused
    assert b"reusing" in third.stderr and _figures(third.stdout) == _figures(second.stdout)


@pytest.fixture()
def finished(tmp_path):
    args = ("experiment", "--fold", TRAIN, VALI, TEST, "--out-dir", "o", "-m", "map", *FAST)
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return tmp_path, args, proc.stdout


@pytest.mark.parametrize("edit", ["test-map", "chosen", "scores", "not-json", "directory"])
def test_an_edited_record_is_not_trusted_and_the_run_says_so(finished, edit):
    """Before: a test.map edited in done.json was printed as the result (exit 0, nothing said)."""
    tmp_path, args, stdout = finished
    record = tmp_path / "o" / "Fold1" / "newton.done.json"
    if edit in ("test-map", "chosen"):
        rec = json.loads(record.read_text())
        if edit == "test-map":
            rec["test"]["map"] = 0.999
        else:
            rec["chosen"] = {"C": 123.0}
        record.write_text(json.dumps(rec, indent=1) + "\n")
        why = "does not match its checksum"
    elif edit == "scores":
        scores = tmp_path / "o" / "Fold1" / "newton.test.scores"
        scores.write_text(scores.read_text().replace("\n", "1\n", 1))
        why = "newton.test.scores"
    elif edit == "not-json":
        record.write_text("{\n")
        why = "damaged"
    else:
        record.unlink()
        record.mkdir()
        why = "not a regular file"
    proc = run_cli(*args, cwd=tmp_path)
    if edit == "directory":  # the record cannot be replaced: one line, exit 2
        assert_one_line_error(proc, "newton.done.json")
        return
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == stdout
    warnings = [ln for ln in proc.stderr.decode().splitlines() if "done.json" in ln]
    assert len(warnings) == 1 and why in warnings[0] and "fitted again" in warnings[0], proc.stderr
    again = run_cli(*args, cwd=tmp_path)  # the record written again is trusted
    assert again.stdout == stdout and b"done.json" not in again.stderr


def test_a_record_carries_its_checksum(finished):
    from rankkit.experiments import _record_checksum

    tmp_path, _, _ = finished
    rec = json.loads((tmp_path / "o" / "Fold1" / "newton.done.json").read_text())
    assert rec["checksum"] == _record_checksum(rec) and len(rec["checksum"]) == 64


def test_the_resume_check_does_not_wait_on_a_fifo(finished):
    """A FIFO nobody writes at OUT/Fold1/SOLVER.done.json: before, the resume check's open() waited
    for a writer forever. Now it is not a record (not a regular file), said at once."""
    from rankkit.experiments import _read_record

    tmp_path, _, _ = finished
    record = tmp_path / "o" / "Fold1" / "newton.done.json"
    record.unlink()
    os.mkfifo(record)
    got = []
    t = threading.Thread(target=lambda: got.append(_read_record(str(record), "x", str(record.parent))), daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():  # free the waiting open() before failing
        os.close(os.open(record, os.O_WRONLY | os.O_NONBLOCK))
    assert got == [(None, "is not a regular file")]


def test_each_face_words_the_experiments_advice_with_its_own_words(monkeypatch):
    """rankkit.experiment (the Python face) passes its Words to the use case, whose default words are
    the command line's; style= (before issue 36) still works, with a FutureWarning."""
    import warnings

    from rankkit import experiments
    from rankkit.estimators import PYTHON_WORDS
    from rankkit.solvers.options import WORDS

    assert experiments._option_names("pegasos", WORDS)["lam"] == "lambda (--grid pegasos:lambda=...)"
    assert experiments._option_names("pegasos", PYTHON_WORDS)["lam"] == "lambda (grids={'pegasos': {'lambda': [...]}})"
    seen = {}

    def spy(folds, *args, words=None, **kwargs):
        seen["words"] = words
        return "ran"

    monkeypatch.setattr(experiments, "experiment", spy)
    assert rankkit.experiment([("t", "v", "s")]) == "ran" and seen["words"] is PYTHON_WORDS
    with pytest.warns(FutureWarning, match="style"):
        rankkit.experiment([("t", "v", "s")], style="cli")
    assert type(seen["words"]).grid is type(WORDS).grid
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(UsageError, match="style must be"):
            rankkit.experiment([("t", "v", "s")], style="gui")
