"""Kernels compiled ahead of time (rankkit/compiler/aot.py, build.py).

A run that finds an AOT build for its kernel calls must give the same bits as numba's JIT, import
neither numba nor llvmlite, and never run a build that is damaged, stale or made for other code;
the recorded call table must be exactly what every command calls, and nothing may compile after the
build. The build here is the one `make` makes (python -m rankkit.warmup): make test's, in the
suite's cache, when it was made for these sources; else one made here, once for the module.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rankkit.compiler import aot, build, dispatch
from tests.test_cli import ROOT, SAMPLE_TEST, SAMPLE_TRAIN, _env

DEMO = [("train", str(SAMPLE_TRAIN), "M", "-C", "0.01"),
        ("train", str(SAMPLE_TRAIN), "P", "--solver", "pegasos", "--iterations", "3000", "--seed", "7"),
        ("predict", str(SAMPLE_TEST), "M", "S"),
        ("predict", str(SAMPLE_TEST), "P", "SP"),
        ("eval", str(SAMPLE_TEST), "S", "SP", "--format", "json")]
TIMING_LINES = ("created ", "read_time_seconds", "train_time_seconds", "checksum ")


def _run(args, cwd, cache, aot=True, check=True):
    env = _env()
    env["NUMBA_CACHE_DIR"] = str(cache)
    env["RANKKIT_AOT"] = "1" if aot else "0"
    # -X importtime: what the process imported, on stderr after our own lines
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "rankkit", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


COMPILING = "rankkit: note: compiling kernels on first use"


def _ours(stderr: str) -> str:
    """rankkit's own lines (not -X importtime's, nor the JIT's one-line compile note: the reference
    runs compile into the suite's cache, or load it, depending on what ran before)."""
    return "".join(line + "\n" for line in stderr.splitlines()
                   if not line.startswith(("import time:", COMPILING)))


def _imported(stderr: str) -> set:
    return {line.split("|")[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def _model_body(path) -> list:
    return [line for line in open(path) if not line.startswith(TIMING_LINES)]


def _suite_build() -> Path | None:
    """The suite's own cache if `make test` built the kernels ahead of time into it (for these
    very sources: the fingerprint), so that the build is made once per run, not again here."""
    own = os.environ.get("NUMBA_CACHE_DIR")
    if not own:
        return None
    m = aot.read_manifest(os.path.join(own, aot.SUBDIR))
    return Path(own) if m is not None and m.get("fingerprint") == aot.fingerprint() else None


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A cache holding the build `make` makes (python -m rankkit.warmup): the suite's (make test
    builds it first), else one made here."""
    suite = _suite_build()
    if suite is not None:
        return suite
    cache = tmp_path_factory.mktemp("aot-cache")
    env = _env()
    env["NUMBA_CACHE_DIR"] = str(cache)
    proc = subprocess.run([sys.executable, "-m", "rankkit.warmup", "--jobs", "2"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "kernel calls compiled" in proc.stderr, proc.stderr  # built ahead of time, not the JIT fallback
    return cache


@pytest.fixture(scope="module")
def jit_cache(tmp_path_factory):
    """One JIT cache for the reference runs (RANKKIT_AOT=0), so each kernel compiles once: the
    suite's own (make test gives it a fresh one) if set, so that later tests load what these
    compiled."""
    own = os.environ.get("NUMBA_CACHE_DIR")
    return Path(own) if own else tmp_path_factory.mktemp("jit-cache")


def _copy_cache(built, dest, jit_cache=None):
    """A cache holding a copy of the build (and of the warm JIT cache, so fallbacks load, not compile)."""
    if jit_cache is not None:
        shutil.copytree(jit_cache, dest, ignore=shutil.ignore_patterns(aot.SUBDIR))
    shutil.copytree(built / aot.SUBDIR, dest / aot.SUBDIR)
    return dest


def test_aot_runs_give_the_jit_bits_without_numba(built, jit_cache, tmp_path):
    (tmp_path / "aot").mkdir()
    (tmp_path / "jit").mkdir()
    for args in DEMO:
        a = _run(args, tmp_path / "aot", built)
        j = _run(args, tmp_path / "jit", jit_cache, aot=False)
        assert _ours(a.stderr) == _ours(j.stderr)
        imported = _imported(a.stderr)
        assert not any(m == "numba" or m.startswith(("numba.", "llvmlite")) for m in imported), args
        assert a.stdout == j.stdout
    for f in ("M", "P"):
        assert _model_body(tmp_path / "aot" / f) == _model_body(tmp_path / "jit" / f)
    for f in ("S", "SP"):
        assert (tmp_path / "aot" / f).read_bytes() == (tmp_path / "jit" / f).read_bytes()


def test_streamed_reader_and_threads_match_the_jit(built, jit_cache, tmp_path):
    """The block reader, the threaded reader and the chunked products (4096 rows and more)."""
    rng = np.random.default_rng(5)
    with open(tmp_path / "big.txt", "w") as fh:
        for q in range(80):
            for _ in range(60):
                x = np.round(rng.random(6), 4)
                fh.write(f"{rng.integers(0, 3)} qid:{q} " + " ".join(f"{j + 1}:{v:g}" for j, v in enumerate(x) if v) + "\n")
    out = {}
    for mode, cache in (("aot", built), ("jit", jit_cache)):
        d = tmp_path / mode
        d.mkdir()
        for t in ("1", "2"):
            p = _run(("train", str(tmp_path / "big.txt"), f"m{t}", "-C", "1", "--threads", t), d, cache, aot=mode == "aot")
            if mode == "aot":
                assert "numba" not in _imported(p.stderr)
            out[mode, t] = _model_body(d / f"m{t}")
    assert out["aot", "1"] == out["jit", "1"] == out["aot", "2"] == out["jit", "2"]


API_SCRIPT = r"""
import json, sys
import numpy as np
import rankkit
X, y, q = rankkit.load_svmlight_file(sys.argv[1], query_id=True)
Xt, yt, qt = rankkit.load_svmlight_file(sys.argv[2], query_id=True, n_features=X.shape[1])
if sys.argv[3] == "readonly":  # as pandas 3 hands out a Series' values, or a memmap
    for a in (y, q, yt, qt):
        a.setflags(write=False)
r = rankkit.RankSVM(C=0.01).fit(X, y, qid=q)
s = r.predict(Xt)
print(json.dumps({"w": r.coef_.tolist(), "eval": rankkit.evaluate(yt, s, qid=qt, metrics=("ndcg@5", "map")),
                  "numba": "numba" in sys.modules}))
"""


@pytest.mark.parametrize("arrays", ["writeable", "readonly"])
def test_python_api_fits_on_the_build_without_numba(built, jit_cache, tmp_path, arrays):
    """The Python API's fit, predict and evaluate (scipy's int32 column indices; labels and qids
    writeable or read-only) run on the build, never importing numba, with the JIT's results."""
    out = {}
    for mode, cache in (("aot", built), ("jit", jit_cache)):
        env = _env()
        env["NUMBA_CACHE_DIR"] = str(cache)
        env["RANKKIT_AOT"] = "1" if mode == "aot" else "0"
        proc = subprocess.run([sys.executable, "-c", API_SCRIPT, str(SAMPLE_TRAIN), str(SAMPLE_TEST), arrays],
                              env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out[mode] = json.loads(proc.stdout)
    assert out["aot"]["numba"] is False and out["jit"]["numba"] is True
    assert out["aot"]["w"] == out["jit"]["w"] and out["aot"]["eval"] == out["jit"]["eval"]


EVERY_SOLVER = r"""
import json, sys, tempfile
from rankkit import warmup
from rankkit.compiler import build, dispatch
with tempfile.TemporaryDirectory() as tmp:
    calls = warmup.record_calls(tmp)  # run_exercises, its kernel calls recorded
numba = sorted(m for m in sys.modules if m == "numba" or m.startswith(("numba.", "llvmlite")))
jitted = sorted(f"{k.__module__}.{k.__qualname__}" for k in dispatch.kernels() if k._dispatcher is not None)
print(json.dumps({"numba": numba, "jitted": jitted, "calls": [repr(c) for c in build.buildable(calls)]}))
"""


def test_every_solver_runs_on_the_build_without_numba(built):
    """Every solver with every loss and sampler, the path methods, predict, eval (TREC runs, two
    systems), the Python API and the Dask worker path (rankkit.warmup.run_exercises): after the
    build, none compiles a kernel or imports numba; and the kernel calls they make are exactly the
    recorded table (regenerate it with `python -m rankkit.warmup --record` after changing a
    kernel's arguments)."""
    env = _env()
    env["NUMBA_CACHE_DIR"] = str(built)
    proc = subprocess.run([sys.executable, "-c", EVERY_SOLVER], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["jitted"] == [], f"kernels compiled after the build (not in rankkit/compiler/table.py): {out['jitted']}"
    assert out["numba"] == [], out["numba"][:10]
    assert COMPILING not in proc.stderr
    assert out["calls"] == [repr(c) for c in sorted(build.table(), key=repr)], \
        "the kernel calls differ from rankkit/compiler/table.py: run `python -m rankkit.warmup --record`"


FIRST_SCRIPT = r"""
import json, sys, tempfile
from rankkit import warmup
from rankkit.compiler import dispatch
train, test, out = sys.argv[1:4]
dispatch.start_recording()
warmup._rankkit("train", train, out + "/M", "-C", "0.01", "-v")
warmup._rankkit("predict", test, out + "/M", out + "/S")
warmup._rankkit("eval", test, out + "/S")
calls = dispatch.stop_recording()
numba = sorted(m for m in sys.modules if m == "numba" or m.startswith(("numba.", "llvmlite")))
print(json.dumps({"numba": numba, "calls": sorted(repr(c) for c in calls)}))
"""


def test_the_demos_first_commands_need_only_the_first_calls(built, tmp_path):
    """Issue 39: `make demo` builds table.FIRST (python -m rankkit.warmup --first), runs its train
    -v, predict and eval, and only then builds the rest: those three must make no kernel call
    outside FIRST (one would compile on the spot, or not be covered), and FIRST is part of the table."""
    assert set(build.first_table()) <= set(build.table())
    env = _env()
    env["NUMBA_CACHE_DIR"] = str(built)
    proc = subprocess.run([sys.executable, "-c", FIRST_SCRIPT, str(SAMPLE_TRAIN), str(SAMPLE_TEST), str(tmp_path)],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["numba"] == [], out["numba"][:10]
    first = {repr(c) for c in build.first_table()}
    assert out["calls"] and set(out["calls"]) <= first, \
        f"calls of the demo's first commands not in FIRST: {sorted(set(out['calls']) - first)}; run `python -m rankkit.warmup --record`"


def test_a_build_adds_only_the_calls_it_lacks(tmp_path):
    """Issue 39: a build with add=True keeps the modules already there for these sources and
    compiles only what they lack, in modules named after theirs (rankkit_aot_1 beside rankkit_aot_0);
    nothing lacking: nothing compiled. Runs then find every call of both."""
    one = ("rankkit.stats", "_sequential_sum", (("<f8", 1, 1, True, True),))
    two = ("rankkit.sorting", "longest", (("<i8", 1, 1, True, True), "<i8", "<i8"))
    d = tmp_path / aot.SUBDIR
    m1 = build.build(1, calls=[one], directory=str(d), add=True)
    assert m1["added"] == 1 and [r["name"] for r in m1["modules"].values()] == ["rankkit_aot_0"]
    m2 = build.build(2, calls=[one, two], directory=str(d), add=True)
    assert m2["added"] == 1
    assert sorted(r["name"] for r in m2["modules"].values()) == ["rankkit_aot_0", "rankkit_aot_1"]
    assert set(m1["modules"]) < set(m2["modules"]) and all((d / f).is_file() for f in m2["modules"])
    before = sorted(os.listdir(d))
    m3 = build.build(2, calls=[two, one], directory=str(d), add=True)
    assert m3["added"] == 0 and sorted(os.listdir(d)) == before
    script = ("import json, sys; from rankkit.compiler import aot, build; import rankkit.stats, rankkit.sorting, numpy as np\n"
              "calls = [(m, n, tuple(tuple(a) if isinstance(a, list) else a for a in k)) for m, n, k in json.loads(sys.argv[1])]\n"
              "print(aot.covers(calls), rankkit.stats._sequential_sum(np.ones(3)), "
              "rankkit.sorting.longest(np.array([0, 2, 5]), 0, 2), 'numba' in sys.modules)")
    env = _env()
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-c", script, json.dumps([one, two])], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "3.0", "3", "False"], proc.stdout
    m4 = build.build(1, calls=[one], directory=str(d))  # not adding: a build of its own
    assert m4["added"] == 1 and [r["name"] for r in m4["modules"].values()] == ["rankkit_aot_0"]
    for r in m4["modules"].values():  # a manifest of these sources that no build wrote: built afresh
        r["name"] = "bogus"
    (d / aot.MANIFEST).write_text(json.dumps(m4))
    seen = []  # and this build's progress reports (_assert_progress)
    m5 = build.build(1, calls=[one, two], directory=str(d), add=True, progress=lambda *a: seen.append(a))
    assert m5["added"] == 2 and [r["name"] for r in m5["modules"].values()] == ["rankkit_aot_0"]
    assert sum(len(r["kernels"]) for r in m5["modules"].values()) == 2
    _assert_progress(seen, d)


def test_every_kernel_called_from_python_is_in_the_table():
    """Each kernel (rankkit.compiler.dispatch.kernels: every @njit in rankkit) is in the table of
    calls compiled ahead of time, or is only called by kernels that are (then it is compiled into
    them). A kernel added without re-recording fails here by name: re-record with
    `python -m rankkit.warmup --record` (rankkit/compiler/table.py)."""
    in_table = {(m, n) for m, n, _ in build.table()}
    missing = [f"{k.__module__}.{k.__qualname__}" for k in build.unbuilt_kernels(in_table)]
    assert missing == [], (f"kernels neither in the ahead-of-time table nor called only from kernels in it: {missing}; "
                           "run `python -m rankkit.warmup --record` (and add a run of the command that calls them "
                           "to rankkit.warmup.run_exercises if it is not there)")


def test_damaged_module_is_not_loaded(built, jit_cache, tmp_path):
    cache = _copy_cache(built, tmp_path / "cache", jit_cache)
    for so in glob.glob(str(cache / aot.SUBDIR / "*.so")):
        with open(so, "r+b") as fh:
            fh.seek(os.path.getsize(so) // 2)
            fh.write(b"\x00junk\xff")
    p = _run(("train", str(SAMPLE_TRAIN), "M", "-C", "0.01"), tmp_path, cache)
    notes = [line for line in _ours(p.stderr).splitlines() if line]
    assert len(notes) >= 1 and all("damaged ahead-of-time kernels" in n for n in notes[:1]), notes
    ref = _run(("train", str(SAMPLE_TRAIN), "R", "-C", "0.01"), tmp_path, jit_cache, aot=False)
    assert _ours(ref.stderr) == ""
    assert _model_body(tmp_path / "M") == _model_body(tmp_path / "R")


def test_build_for_other_code_is_ignored(built, jit_cache, tmp_path):
    """A manifest whose fingerprint is not this run's (an edited source, another CPU or Python) is
    never used: the JIT runs, silently."""
    cache = _copy_cache(built, tmp_path / "cache", jit_cache)
    path = cache / aot.SUBDIR / aot.MANIFEST
    m = json.loads(path.read_text())
    m["fingerprint"] = "0" * 64
    path.write_text(json.dumps(m))
    p = _run(("train", str(SAMPLE_TRAIN), "M", "-C", "0.01"), tmp_path, cache)
    assert _ours(p.stderr) == "" and "numba" in _imported(p.stderr)


def test_rankkit_aot_0_uses_the_jit(built, jit_cache, tmp_path):
    cache = _copy_cache(built, tmp_path / "cache", jit_cache)
    p = _run(("train", str(SAMPLE_TRAIN), "M", "-C", "0.01"), tmp_path, cache, aot=False)
    assert "numba" in _imported(p.stderr)


def test_fingerprint_follows_the_sources(tmp_path, monkeypatch):
    before = aot.fingerprint()
    assert before == aot.fingerprint()
    files = aot.source_files()
    assert any(f.endswith(os.path.join("objectives", "squared_hinge.py")) for f in files)
    copy = tmp_path / "rankkit"
    shutil.copytree(ROOT / "rankkit", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(aot, "_PACKAGE", str(copy))
    assert aot.fingerprint() == before  # the text, not where it is
    with open(copy / "metrics.py", "a") as fh:
        fh.write("\n# an edit\n")
    assert aot.fingerprint() != before


def _fake_build(cache: Path, sources: dict | None) -> None:
    """A manifest (no modules) for these sources in cache/rankkit-aot, with `sources` as recorded."""
    d = cache / aot.SUBDIR
    d.mkdir(parents=True, mode=0o755)
    m = {"format": aot.FORMAT, "fingerprint": aot.fingerprint(), "modules": {}}
    if sources is not None:
        m["sources"] = sources
    (d / aot.MANIFEST).write_text(json.dumps(m))
    os.chmod(d / aot.MANIFEST, 0o644)


def test_unchanged_sources_are_not_read_again(tmp_path, monkeypatch):
    """A manifest records the sources' sizes and modification times with their digest: while every
    file still has them, a run takes the digest without reading the files; a touched file (same
    text) is read again and the build still used; an edited one makes the build another code's."""
    copy = tmp_path / "rankkit"
    shutil.copytree(ROOT / "rankkit", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(aot, "_PACKAGE", str(copy))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    _fake_build(tmp_path / "cache", {"digest": aot.sources_digest(), "stats": aot.source_stats()})
    reads = []
    digest = aot.sources_digest

    def counted():
        reads.append(1)
        return digest()

    monkeypatch.setattr(aot, "sources_digest", counted)
    assert aot._find()["dir"] == str(tmp_path / "cache" / aot.SUBDIR) and reads == []
    st = os.stat(copy / "metrics" / "kernels.py")
    os.utime(copy / "metrics" / "kernels.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    assert aot._find()["dir"] is not None and reads == [1]  # read again: the same text
    with open(copy / "metrics" / "kernels.py", "a") as fh:
        fh.write("\n# an edit\n")
    assert aot._find()["dir"] is None


def test_an_edit_that_keeps_size_and_mtime_is_read(tmp_path, monkeypatch):
    """The same size and modification time after an edit (restored by hand, `cp -p`, tar), or
    another copy of the package sharing the cache: the files are read, the build is another code's."""
    copy = tmp_path / "rankkit"
    shutil.copytree(ROOT / "rankkit", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(aot, "_PACKAGE", str(copy))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    _fake_build(tmp_path / "cache", {"digest": aot.sources_digest(), "stats": aot.source_stats()})
    f = copy / "paths" / "_path_kernels.py"
    st = os.stat(f)
    text = f.read_text()
    assert "-= a[p]" in text
    f.write_text(text.replace("-= a[p]", "+= a[p]", 1))  # the same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(f).st_size == st.st_size and os.stat(f).st_mtime_ns == st.st_mtime_ns
    assert aot._find()["dir"] is None
    other = tmp_path / "other" / "rankkit"  # a copy with the same times, elsewhere
    shutil.copytree(ROOT / "rankkit", other, ignore=shutil.ignore_patterns("__pycache__"), copy_function=shutil.copy2)
    monkeypatch.setattr(aot, "_PACKAGE", str(other))
    assert aot._known_sources(aot.read_manifest(str(tmp_path / "cache" / aot.SUBDIR)), aot.source_stats()) is None


def test_the_build_records_the_sources_it_read(built):
    """The manifest names the sources' digest and each file's size, times and inode; a build made
    from these very files knows them without reading them again. make test's suite cache is shared
    by every checkout of the same sources (it is named by their text), so the build may be another
    checkout's: the same files and sizes, other times and inodes, and then the files are read."""
    m = aot.read_manifest(str(built / aot.SUBDIR))
    now = aot.source_stats()
    rec = m["sources"]["stats"]
    assert m["sources"]["digest"] == aot.sources_digest()
    assert [tuple(f[:2]) for f in rec[1:]] == [tuple(f[:2]) for f in now[1:]]
    assert aot._known_sources(m, now) == (aot.sources_digest() if rec == now else None)


def test_a_manifest_without_source_stats_reads_the_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    _fake_build(tmp_path / "cache", None)
    reads = []
    digest = aot.sources_digest
    monkeypatch.setattr(aot, "sources_digest", lambda: reads.append(1) or digest())
    assert aot._find()["dir"] is not None and reads == [1]


def test_arg_key_gives_numba_types():
    """The key of a call decides its AOT signature (build._numba_type): it must be what
    numba's typeof gives each argument, for every kind of argument the key accepts."""
    numba = pytest.importorskip("numba")
    a = np.arange(12.0)
    m = np.arange(12.0).reshape(3, 4)
    ro = np.arange(5, dtype=np.int32)
    ro.setflags(write=False)
    buf = np.frombuffer(b"abcdef", dtype=np.uint8)
    cases = [a, a[::2], m, m.T, m[:1], np.asfortranarray(m), m[:, 1:], ro, buf, np.zeros(0, np.int64),
             np.zeros((1, 3)), np.zeros((3, 1)), 3, -(2**63), 2.5, True, False, np.int32(4), np.uint8(2),
             np.float32(1.5), np.float64(2.0), np.bool_(True), np.int64(7)]
    for arg in cases:
        key = dispatch.arg_key((arg,))
        assert key is not None, arg
        assert build._numba_type(key[0]) == numba.typeof(arg), (arg, key)
    for arg in (None, (1, 2), "s", 2**63, [1.0], np.zeros(3, dtype=">f8")):
        key = dispatch.arg_key((arg,))
        if key is not None:  # a non-native byte order keys differently from every native array
            assert key[0] not in {k for c in build.table() for k in c[2]}


def test_kernel_proxy_copies_and_forwards_to_numba():
    import copy

    from rankkit.sparse import rmatvec_chunks

    assert copy.copy(rmatvec_chunks)(10, 3) == rmatvec_chunks(10, 3) == 1
    assert rmatvec_chunks.py_func(10, 3) == 1
    assert len(rmatvec_chunks.signatures) >= 0  # numba's dispatcher attribute, through the proxy


def test_malformed_manifest_means_the_jit(built, jit_cache, tmp_path):
    """A manifest of the right fingerprint but the wrong shape: the JIT, silently (was: internal error)."""
    cache = _copy_cache(built, tmp_path / "cache", jit_cache)
    path = cache / aot.SUBDIR / aot.MANIFEST
    m = json.loads(path.read_text())
    first = next(iter(m["modules"].values()))
    first["kernels"][0] = first["kernels"][0][:2]
    path.write_text(json.dumps(m))
    p = _run(("train", str(SAMPLE_TRAIN), "M", "-C", "0.01"), tmp_path, cache)
    assert _ours(p.stderr) == ""


def test_only_trusted_directories_and_files(tmp_path):
    d = tmp_path / "d"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    assert aot._trusted(str(d))
    os.chmod(d, 0o775)  # group-writable: someone else could have put code there
    assert not aot._trusted(str(d))
    os.chmod(d, 0o755)
    (tmp_path / "link").symlink_to(d)
    assert not aot._trusted(str(tmp_path / "link"))
    if os.getuid() == 0:
        os.chown(d, 12345, 12345)
        assert not aot._trusted(str(d))


def test_fingerprint_skips_editor_lock_files(tmp_path, monkeypatch):
    copy = tmp_path / "rankkit"
    shutil.copytree(ROOT / "rankkit", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(aot, "_PACKAGE", str(copy))
    before = aot.fingerprint()
    (copy / ".#metrics.py").symlink_to("user@host.123:456")  # Emacs' lock file: a dangling link
    assert aot.fingerprint() == before


def test_fingerprint_follows_numba_settings(monkeypatch):
    before = aot.fingerprint()
    monkeypatch.setenv("NUMBA_BOUNDSCHECK", "1")
    assert aot.fingerprint() != before
    monkeypatch.delenv("NUMBA_BOUNDSCHECK")
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")  # no effect on the code
    assert aot.fingerprint() == before


def test_a_build_whose_sources_changed_meanwhile_is_not_installed(tmp_path, monkeypatch):
    """Sources edited (and perhaps undone) while the build ran: what was compiled may not be what
    the fingerprint names, so nothing is installed."""
    def fake_compile(index, groups, out_dir):
        (Path(out_dir) / "rankkit_aot_0-x.so").write_bytes(b"")
        return {"file": "rankkit_aot_0-x.so", "name": "rankkit_aot_0", "sha256": "0", "kernels": [],
                "compiled_from": "an edited source"}

    monkeypatch.setattr(build, "_compile_in_processes",
                        lambda buckets, staging, progress=None, first=0: [fake_compile(i, b, staging) for i, b in enumerate(buckets)])
    with pytest.raises(RuntimeError, match="changed during the build"):
        build.build(1, calls=[("rankkit.stats", "_sequential_sum", (("<f8", 1, 1, True, True),))],
                         directory=str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == []


def _assert_progress(seen, directory):
    """Issue 37 item 5: the build's processes report each compiled call (progress files read by the
    parent), so that warmup can show "31 of 83 kernel calls"; the last report is the whole build.
    Checked on the last build of test_a_build_adds_only_the_calls_it_lacks (two calls, one process;
    a build of its own here took 2.6 s of a core: the build process's numba import, pycc and gcc)."""
    assert seen[0] == (0, 0, 2, 1, 0.0) and seen[-1] == (2, 1, 2, 1, 1.0), seen
    assert all(a[0] <= b[0] and a[1] <= b[1] and a[4] <= b[4] for a, b in zip(seen, seen[1:]))  # never backwards
    assert not [f for f in os.listdir(directory) if f.startswith((".build-", build.PROGRESS_PREFIX))]


def test_the_progress_line_counts_calls_and_estimates_the_rest():
    from rankkit import warmup

    p = warmup._Progress("compiling kernels ahead of time (2 processes)", 30.0, show=False)
    assert p.line(5.0) == "rankkit: compiling kernels ahead of time (2 processes): 5 s of about 30 s"
    p.update(0, 0, 83, 2)  # the processes are starting: the estimate of the table's costs
    assert p.line(5.0) == "rankkit: compiling kernels ahead of time (2 processes): 0 of 83 kernel calls, 5 s, about 25 s left"
    p.update(40, 0, 83, 2)  # about half the calls: (1 - 0.25) * 40/83 of the work in 12 s
    f = 0.75 * 40 / 83
    assert p.line(12.0).endswith(f": 40 of 83 kernel calls, 12 s, about {12 * (1 - f) / f:.0f} s left")
    p.update(40, 0, 83, 2, 0.8)  # ... the dearest calls first: by their costs, 80 % of the compile work
    assert p.line(12.0).endswith(f": 40 of 83 kernel calls, 12 s, about {12 * (1 - 0.6) / 0.6:.0f} s left")
    p.update(83, 1, 83, 2)
    assert p.line(20.0).endswith(": machine code, 1 of 2 modules, 20 s, about 3 s left")
    p.update(83, 2, 83, 2)
    assert p.line(22.0).endswith(": machine code, 2 of 2 modules, 22 s")


def test_the_compiled_share_weighs_calls_by_their_module_cost():
    bucket = [("rankkit.solvers._sgd_kernels", [("a", ()), ("b", ())]), ("rankkit.stats", [("c", ())])]
    total = build._COMPILE_SECONDS["rankkit.solvers._sgd_kernels"] + build._COMPILE_SECONDS["rankkit.stats"]
    assert build.compiled_share(bucket, 0) == 0.0 and build.compiled_share(bucket, 3) == 1.0
    assert build.compiled_share(bucket, 1) == pytest.approx(build._COMPILE_SECONDS["rankkit.solvers._sgd_kernels"] / 2 / total)


def test_the_suite_cache_is_private_named_by_the_sources_and_reused(tmp_path):
    """Issue 37 item 5: `make test` keeps its kernel cache in a folder named by the fingerprint (every
    source file's text, the toolchain, the CPU): the same sources find it again (a second run starts
    at once), an edit names another one (a stale cache never hides it); only a folder no other user
    can write is used, made 0700."""
    import stat

    roots = [str(tmp_path / "home-cache" / "rankkit-suite"), str(tmp_path / "tmp" / "rankkit-suite-0")]
    a = aot.suite_cache_dir("a" * 64, roots)
    assert a == os.path.realpath(os.path.join(roots[0], "a" * 32))
    assert stat.S_IMODE(os.stat(a).st_mode) == 0o700 and stat.S_IMODE(os.stat(roots[0]).st_mode) == 0o700
    (Path(a) / "kept").write_text("a build")
    assert aot.suite_cache_dir("a" * 64, roots) == a and (Path(a) / "kept").exists()
    b = aot.suite_cache_dir("b" * 64, roots)
    assert b != a and os.listdir(b) == []
    os.chmod(roots[0], 0o770)  # its group could plant code: the next root instead
    c = aot.suite_cache_dir("a" * 64, roots)
    assert c == os.path.realpath(os.path.join(roots[1], "a" * 32))
    os.chmod(roots[1], 0o777)
    with pytest.raises(OSError, match="no private writable directory"):
        aot.suite_cache_dir("a" * 64, roots)


def test_the_suite_cache_forgets_old_sources_and_a_run_whose_sources_changed(tmp_path):
    root = tmp_path / "rankkit-suite"
    old = [aot.suite_cache_dir(c * 64, [str(root)]) for c in "cdefghij"]
    os.utime(old[0], (0, 0))  # unused for years: removed by the next run
    for i, d in enumerate(old[1:]):  # two hours old: all but the most recent few removed
        t = os.path.getmtime(d) - 7200 + i
        os.utime(d, (t, t))
    now = aot.suite_cache_dir("k" * 64, [str(root)])
    left = sorted(os.listdir(root))
    assert left == sorted([os.path.basename(now)] + [os.path.basename(d) for d in old[-(aot.SUITE_KEEP_RECENT - 1):]])
    mine = aot.suite_cache_dir(aot.fingerprint(), [str(root)])
    assert aot.suite_cache_check(mine) is True and os.path.isdir(mine)  # the sources of this run: kept
    assert aot.suite_cache_check(now) is False and not os.path.exists(now)  # named for other sources: removed


def test_make_test_gets_the_suite_cache_and_removes_it_after_an_edit(tmp_path, monkeypatch, capsys):
    """The two calls of `make test` (python -m rankkit.compiler.build): --suite-cache prints the
    folder; --suite-cache-done DIR removes it when the sources are no longer those it is named for."""
    monkeypatch.setattr(aot, "suite_cache_roots", lambda: [str(tmp_path / "suite")])
    assert build.main(["--suite-cache"]) == 0
    out = capsys.readouterr().out.strip()
    assert out == os.path.realpath(tmp_path / "suite" / aot.fingerprint()[:32]) and os.path.isdir(out)
    assert build.main(["--suite-cache-done", out]) == 0 and os.path.isdir(out)
    monkeypatch.setattr(aot, "fingerprint", lambda sources=None: "edited" * 8)
    assert build.main(["--suite-cache-done", out]) == 0 and not os.path.exists(out)


def test_kernels_pickle_by_name():
    import pickle

    from rankkit.sparse import rmatvec_chunks

    assert pickle.loads(pickle.dumps(rmatvec_chunks)) is rmatvec_chunks


NEW_KERNEL = r"""
import sys
from rankkit.compiler import dispatch
from rankkit.compiler.dispatch import njit

@njit(cache=False)
def plus_one(x):
    return x + 1.0

assert plus_one(1.0) == 2.0 and plus_one(2.0) == 3.0
print(dispatch.compile_seconds() > 0.0)
"""


def test_a_compile_says_so_once_on_stderr_without_a_terminal_and_is_timed(tmp_path):
    """A kernel compiled by the JIT: one line on stderr even though stderr is no terminal (a cron
    job's log explains the slow run), and its seconds counted (what -v names as compiling)."""
    env = _env()
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-c", NEW_KERNEL], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "True"
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(COMPILING), proc.stderr


# -- warmup on a full disk: one line, exit 2, nothing claimed ---------------------------------------
def test_compiler_messages_are_kept_off_the_terminal_and_a_full_disk_is_named(tmp_path, capfd):
    """The C compiler's and assembler's lines (8 of them on a full disk) went to the terminal before
    `warmup` went on to say "compiled and cached"; now they are kept, and a disk problem they name
    becomes an OSError with its errno (which warmup reports in one line)."""
    import errno

    with pytest.raises(OSError) as info:
        with build._compiler_output(str(tmp_path)):
            subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('as: x.o: No space left on device\\n'*8)"])
            raise RuntimeError("command 'gcc' failed with exit code 1")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(tmp_path)
    with pytest.raises(RuntimeError, match="RuntimeError: ld: cannot find -lfoo"):
        with build._compiler_output(str(tmp_path)):
            subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('ld: cannot find -lfoo\\n')"])
            raise RuntimeError("link failed")
    with build._compiler_output(str(tmp_path)):  # a compile that succeeds: its chatter is not shown either
        subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('warning: unused\\n')"])
    assert capfd.readouterr().err == ""
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("where", ["ahead-of-time", "jit"])
def test_warmup_that_cannot_cache_exits_2_in_one_line(monkeypatch, capsys, where):
    """Before: on a full disk, `python -m rankkit.warmup` fell back to the JIT cache, whose writes
    failed too, and said "kernels compiled and cached", exit 0; `make` stamped the step done."""
    import errno

    from rankkit import warmup

    def full_build(jobs, progress=None, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/cache/rankkit-aot/.build-abc")

    def warm_fails(jobs, exercises):
        return 1.0, "cannot write the kernel cache in /cache/io_x ([Errno 27] File too large)"

    monkeypatch.setattr(warmup, "build_ahead", full_build)
    monkeypatch.setattr(warmup, "warm", warm_fails)
    import signal

    monkeypatch.setattr(signal, "signal", lambda *a: None)  # main's SIGTERM handler: not in the test process
    # --force: a complete build already in this run's cache would make warmup a no-op (exit 0, rightly)
    argv = ["-q", "--force"] if where == "ahead-of-time" else ["-q", "--jit"]
    assert warmup.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rankkit: error: cannot write the kernel cache in /cache/"), err
    assert ("No space left" if where == "ahead-of-time" else "File too large") in err
    assert "cached in" not in err and "compiled" not in err.split(":")[2]


def test_a_failed_cache_write_is_reported_to_warmup(tmp_path, monkeypatch):
    """jit.cache_problem: what warmup's processes report back when a save failed (quietly: warmup
    says it once)."""
    import errno

    from numba.core.caching import FunctionCache

    from rankkit.compiler import jit

    def full(self, sig, data):
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(FunctionCache, "save_overload", full)
    monkeypatch.setattr(jit, "_cache_enabled", True)
    monkeypatch.setattr(jit, "_cache_failure", None)
    monkeypatch.setattr(jit, "_quiet", True)
    monkeypatch.setattr(jit.numba.config, "CACHE_DIR", str(tmp_path))

    @dispatch.njit
    def thrice(x):
        return 3.0 * x

    assert thrice(2.0) == 6.0
    assert "File too large" in jit.cache_problem()


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs resource.setrlimit")
def test_warmup_on_a_full_cache_disk_end_to_end(tmp_path):
    """The real thing, with a file size limit standing for the full disk (EFBIG; a tmpfs needs root):
    exit 2, one line, no compiler output, no build installed."""
    cache = tmp_path / "cache"
    code = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (200000, 200000)); "
            "sys.argv = ['rankkit.warmup']; runpy.run_module('rankkit.warmup', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], env=dict(_env(), NUMBA_CACHE_DIR=str(cache)),
                          capture_output=True, timeout=900)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    lines = err.splitlines()
    assert lines[0].startswith("rankkit: compiling kernels ahead of time") and len(lines) == 2, err
    assert lines[1].startswith("rankkit: error: cannot write the kernel cache") and "File too large" in lines[1]
    assert not (cache / aot.SUBDIR / aot.MANIFEST).exists()
