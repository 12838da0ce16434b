"""Compiling the common kernel calls ahead of time (numba's AOT compiler, numba.pycc).

    python -m rankkit.warmup --record   # rewrite rankkit/compiler/table.py (developers)

`build()` (run by `python -m rankkit.warmup`, which `make` runs once) compiles every call listed in
rankkit/compiler/table.py into one extension module per process, in `jobs` processes,
for this machine's CPU name and features (as numba's JIT compiles), with rankkit's kernel options
(nogil, numpy's error model, no fastmath), and writes them with a manifest into the first
writable kernel-cache directory (rankkit.compiler.aot). Files are written under temporary names
and renamed; the manifest comes last, so a run started meanwhile sees the old build or the new one,
never half of one. It needs a C compiler (numba's runtime helpers are compiled into each module);
without one, or if numba's AOT compiler is gone, `build` raises and the caller falls back to the JIT.

The table lists the argument types of every kernel call from Python that rankkit's commands and
Python API make (rankkit.warmup.run_exercises: every solver with every loss and sampler, predict
in every format, eval of scores and of TREC runs, both path methods, the Dask worker path; small
files and the streamed reader for large ones). `python -m rankkit.warmup --record` runs those with
numba's JIT and records the calls (start_recording / stop_recording of rankkit.compiler.dispatch).
tests/test_aot.py fails when they make a call the table does not list, when a kernel is neither
in the table nor called only from kernels in it (unbuilt_kernels: a kernel another change added,
named in the failure; re-recording is the one command above), and when anything compiles or
imports numba after the build.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib
import json
import os
import shutil
import sys
import tempfile
import time

from rankkit.compiler import aot

TABLE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "table.py")


# -- the table of calls -------------------------------------------------------------------------

def buildable(calls: set) -> list:
    """The recorded calls of kernels with rankkit's default options (a parfor cannot be compiled
    ahead of time), sorted."""
    from rankkit.compiler import dispatch

    out = []
    for module, name, key in calls:
        kernel = getattr(importlib.import_module(module), name, None)
        if isinstance(kernel, dispatch.Kernel) and kernel.options == dispatch.DEFAULTS:
            out.append((module, name, key))
    return sorted(out, key=repr)


# Kernels deliberately not compiled ahead of time, with the reason.
NOT_BUILT: dict[str, str] = {
    "rankkit.solvers._sgd_kernels.sample_pairs": "the samplers' sequence on its own, for tests "
    "(tests/test_sgd_kernels.py); rankkit samples inside run_spd",
    "rankkit.solvers._sgd_kernels.sample_pairs_with_ties": "the tie sampler's sequence on its own, for tests "
    "(tests/test_sgd_kernels.py); rankkit samples ties inside run_spd",
}


def _callees(kernel) -> set:
    """The kernels `kernel` calls by a global name (f(...)) or through a module (K.f(...))."""
    import types

    from rankkit.compiler import dispatch

    names, codes = set(), [kernel.py_func.__code__]
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    g = kernel.py_func.__globals__
    out = set()
    for n in names:
        v = g.get(n)
        if isinstance(v, dispatch.Kernel):
            out.add(v)
        elif isinstance(v, types.ModuleType):
            out.update(a for a in (getattr(v, m, None) for m in names) if isinstance(a, dispatch.Kernel))
    return out


def all_kernels() -> list:
    """Every kernel in rankkit: all its modules imported by name (those whose optional dependency
    is missing skipped). The package's folder is found from this file's place, not by importing
    the package above the compiler (tests/test_architecture.py: no import goes up)."""
    import pkgutil

    from rankkit.compiler import dispatch

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for info in pkgutil.walk_packages([package], "rankkit."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:
            pass
    return [k for k in dispatch.kernels() if k.__module__.startswith("rankkit.")]


def unbuilt_kernels(in_table: set) -> list:
    """The kernels that are not in `in_table` ((module, name) pairs), not called (at any depth) by
    one that is, and not in NOT_BUILT: a call of one from Python would compile at first use."""
    kernels = all_kernels()
    covered = {k for k in kernels if (k.__module__, k.__qualname__) in in_table}
    todo = list(covered)
    while todo:
        for c in _callees(todo.pop()):
            if c not in covered:
                covered.add(c)
                todo.append(c)
    return [k for k in kernels if k not in covered and f"{k.__module__}.{k.__qualname__}" not in NOT_BUILT]


def write_table(calls: list, path: str = TABLE_PATH, first: list = ()) -> None:
    lines = ['"""Kernel calls compiled ahead of time: (module, kernel, argument key) as',
             "rankkit.compiler.dispatch.arg_key gives it. Written by",
             "`python -m rankkit.warmup --record`; do not edit by hand.", "",
             "FIRST: those of the demo's first commands (train -v, predict, eval), built first by",
             "`python -m rankkit.warmup --first` (make demo).\"\"\"", "", "CALLS = ["]
    lines += [f"    {c!r}," for c in calls]
    lines += ["]", "", "FIRST = ["]
    lines += [f"    {c!r}," for c in first]
    lines += ["]", ""]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


def table() -> list:
    from rankkit.compiler import table as aot_table

    return list(aot_table.CALLS)


def first_table() -> list:
    """The table's calls that the demo's first commands make (train -v, predict and eval of a
    small file): `make demo` builds these, runs them, then builds the rest."""
    from rankkit.compiler import table as aot_table

    return list(getattr(aot_table, "FIRST", ()))


# -- compiling -----------------------------------------------------------------------------------------

def _numba_type(k):
    import numba
    import numpy as np
    from numba.core import types

    if isinstance(k, tuple):
        dtype, ndim, layout, writeable, aligned = k
        return types.Array(numba.from_dtype(np.dtype(dtype)), ndim, {1: "C", 2: "F", 0: "A"}[layout],
                           readonly=not writeable, aligned=aligned)
    if k == "|b1":
        return types.boolean
    return numba.from_dtype(np.dtype(k))


def _setup_compiler():
    """numba.pycc compiling as rankkit's JIT does: the kernels' options, this CPU's name and
    features (pycc's defaults: a generic CPU, numba's Python error model, the GIL held)."""
    from numba.core import codegen
    from numba.core.compiler import Flags
    from numba.pycc import CC
    from numba.pycc import compiler as pycc_compiler

    from rankkit.compiler import dispatch, jit

    jit.register_types(dispatch.Kernel, dispatch.NumbaGlobal)
    jit.disable_disk_cache()  # callees compiled afresh into each module, never a cached library
    jit.quiet_compiles()

    class _Flags(Flags):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = dispatch.DEFAULTS["nogil"]
            self.error_model = dispatch.DEFAULTS["error_model"]
            self.fastmath = dispatch.DEFAULTS["fastmath"]

    pycc_compiler.Flags = _Flags
    codegen.AOTCPUCodegen._customize_tm_features = lambda self: self._get_host_cpu_features()
    _callees_as_ir_only()

    return CC


def _callees_as_ir_only() -> None:
    """The kernels an exported kernel calls are compiled by numba's dispatcher, as for the JIT,
    and linked into the module as LLVM IR. Made for running, each would also get a CPython wrapper,
    a C wrapper and its own machine code from LLVM's JIT (about a third of a build's CPU time),
    none of which the module uses: in this (build) process they are not made. The callee's code
    itself is the same (the module's code is compared with the JIT's in tests/test_aot.py)."""
    from numba.core import codegen, cpu
    from numba.core.registry import cpu_target
    from numba.core.runtime import rtsys

    from rankkit.compiler import jit

    rtsys.initialize(cpu_target.target_context)  # numba's runtime, made for running, before the changes below
    jit.build_options = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}
    # a callee's library: its functions optimized as the JIT does, then linked into the module, whose
    # whole-module optimization (the same pass pipeline) is done once there, not first per callee
    codegen.JITCodeLibrary._optimize_final_module = lambda self: None
    codegen.JITCodeLibrary._finalize_specific = lambda self: None  # no machine code for running

    def no_executable(self, library, fndesc, env):
        # stands for the callee's machine code: a distinct builtin method per callee (numba keys its
        # user functions by it and its dispatcher takes only builtins); never called in a build
        return _Placeholder().__sizeof__

    cpu.CPUContext.get_executable = no_executable


class _Placeholder:
    __slots__ = ()


_DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM)


def disk_error(exc: BaseException) -> bool:
    """`exc` says the kernel cache's directory cannot take the files (full disk, quota, file size
    limit, read-only, permissions): falling back to numba's JIT cache in the same place would fail
    the same way."""
    return isinstance(exc, OSError) and exc.errno in _DISK_ERRORS


_SYSTEM_TMP = tempfile.gettempdir()  # before compile_module points tempfile at its build folder


def _nearly_full(path: str, margin: int = 16 << 20) -> bool:
    """Less than `margin` bytes (or inodes: 16) left to this user on the file system of `path`."""
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < margin or (st.f_files > 0 and st.f_favail < 16)


@contextlib.contextmanager
def _compiler_output(out_dir: str):
    """The C compiler's and assembler's messages (written to file descriptor 2 by their processes)
    kept in a file instead of the terminal; a failed compile raises an error carrying them: an
    OSError with the errno of a disk problem they name (a full disk: "No space left on device"),
    else a RuntimeError with their last line."""
    try:  # not in out_dir: on a full disk the messages saying so could not be written there
        fd, log = tempfile.mkstemp(prefix="rankkit-cc-", suffix=".log", dir=_SYSTEM_TMP)
    except OSError:
        fd, log = tempfile.mkstemp(prefix="cc-", suffix=".log", dir=out_dir)
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(fd, 2)
    try:
        yield
    except BaseException as exc:
        os.dup2(saved, 2)
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 1 << 16).decode("utf-8", "replace")
        for code in _DISK_ERRORS:
            if os.strerror(code) in text or disk_error(exc):
                code = exc.errno if disk_error(exc) else code
                raise OSError(code, os.strerror(code), out_dir) from exc
        if not isinstance(exc, KeyboardInterrupt) and _nearly_full(out_dir):  # messages lost with the space
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), out_dir) from exc
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if lines and not isinstance(exc, KeyboardInterrupt):
            raise RuntimeError(f"{exc.__class__.__name__}: {lines[-1]}") from exc
        raise
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
        os.unlink(log)


def compile_module(index: int, groups: list, out_dir: str, first: int = 0) -> dict:
    """Compile the calls of (module, [(name, key), ...]) groups into one extension module in out_dir
    (numba's runtime helpers are compiled into every module: a few seconds each, so one module per
    process); returns its manifest record. Run in a process of its own (build does): it changes
    how this process's numba compiles, for good. The module is named rankkit_aot_<first + index>
    (a build that adds to another's numbers its modules after the other's)."""
    from numba.core.typing import signature

    # every temporary file of the compile (pycc's build folder, the compiler probes of setuptools,
    # which leave theirs behind) inside out_dir, which the caller removes
    tempfile.tempdir = tempfile.mkdtemp(prefix=f"tmp{index}-", dir=out_dir)
    CC = _setup_compiler()
    ext = f"rankkit_aot_{first + index}"
    # numba's C runtime helpers (allocation, error handling; no arithmetic of the kernels' own) are
    # compiled with Python's CFLAGS, -g -O3 here: without debug information and at -O1 they compile
    # in 1.3 s instead of 2.3 s per module. The compiler reads CFLAGS when it is made (in CC()).
    saved = os.environ.get("CFLAGS")
    os.environ["CFLAGS"] = f"{saved or ''} -g0 -O1".strip()
    try:
        cc = CC(ext)
    finally:
        if saved is None:
            os.environ.pop("CFLAGS", None)
        else:
            os.environ["CFLAGS"] = saved
    cc.output_dir = out_dir
    cc.target_cpu = "host"
    cc.verbose = False
    _count_exports(os.path.join(out_dir, f"{PROGRESS_PREFIX}{index}"))
    kernels = []
    mods = {module: importlib.import_module(module) for module, _ in groups}
    compiled_from = aot.fingerprint()  # what this process imported: the caller checks it is the build's
    for module, entries in groups:
        mod = mods[module]
        for name, key in entries:
            export = f"k{len(kernels)}"
            sig = signature(None, *[_numba_type(k) for k in key])  # return type inferred
            cc.export(export, sig)(getattr(mod, name).py_func)
            kernels.append([module, name, [list(k) if isinstance(k, tuple) else k for k in key], export])
    with _compiler_output(out_dir):
        cc.compile()
    path = os.path.join(out_dir, cc.output_file)
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    final = f"{ext}-{digest[:16]}.so"
    os.replace(path, os.path.join(out_dir, final))
    return {"file": final, "name": ext, "sha256": digest, "kernels": kernels, "compiled_from": compiled_from}


PROGRESS_PREFIX = ".progress-"  # compile_module's count of compiled calls, in the staging folder


def _count_exports(path: str) -> None:
    """Have this (build) process's numba.pycc write how many of its module's calls it has compiled
    to `path` after each one (the parent reads it for its progress line). The module's machine code
    is made after its last call is compiled (about a quarter of its time)."""
    from numba.pycc import compiler as pycc_compiler

    real = pycc_compiler.compile_extra
    done = [0]

    def counted(*args, **kwargs):
        result = real(*args, **kwargs)
        done[0] += 1
        try:
            with open(path, "w") as fh:
                fh.write(str(done[0]))
        except OSError:  # only the progress line is lost
            pass
        return result

    pycc_compiler.compile_extra = counted


def _read_counts(staging: str, n: int, last: list) -> list:
    """The calls compiled so far by each of the n build processes (their progress files; a file
    being rewritten keeps its last value)."""
    for i in range(n):
        try:
            with open(os.path.join(staging, f"{PROGRESS_PREFIX}{i}")) as fh:
                last[i] = max(last[i], int(fh.read()))
        except (OSError, ValueError):
            pass
    return last


def _compile_in_processes(buckets: list, staging: str, progress=None, first: int = 0) -> list:
    """compile_module for each bucket in its own spawned process; on any error or signal the
    workers are terminated at once (not waited for: a build takes tens of seconds). progress(calls
    compiled by each process, modules finished), if given, is called from this thread about 4 times
    a second."""
    import multiprocessing
    from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait

    from rankkit.processes import die_with_parent  # a killed `make` leaves no compiling workers

    pool = ProcessPoolExecutor(max_workers=len(buckets), mp_context=multiprocessing.get_context("spawn"),
                               initializer=die_with_parent)
    try:
        futures = [pool.submit(compile_module, i, b, staging, first) for i, b in enumerate(buckets)]
        counts = [0] * len(buckets)
        while True:
            finished, pending = wait(futures, timeout=0.25, return_when=FIRST_EXCEPTION)
            if progress is not None:
                _read_counts(staging, len(buckets), counts)
                for i, f in enumerate(futures):  # a finished module: all its calls
                    if f in finished and f.exception() is None:
                        counts[i] = sum(len(entries) for _, entries in buckets[i])
                progress(list(counts), sum(1 for f in finished if f.exception() is None))
            if not pending or any(f.exception() is not None for f in finished):
                break
        records = [f.result() for f in futures]
    except BaseException:
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            try:
                proc.terminate()
            except Exception:
                pass
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return records


# CPU seconds each module's calls take to compile on their own (numba.pycc, this project's 2-core
# machine, 2026-11-27: compile_module on the module's calls alone, in a fresh process, less the ~0.6 s
# that any process's first compile costs), only to share the modules out between the build's
# processes, the longest first; a module not listed counts one second a call. Shared out this way
# the two processes of a 2-core build took 25 and 26 s, against 38 and 21 s with the costs measured
# before the reader, the Dask worker path and the dtype variants were added.
_COMPILE_SECONDS = {"rankkit.solvers._sgd_kernels": 9.9, "rankkit.objectives.squared_hinge": 9.0,
                    "rankkit.io.trec": 8.5, "rankkit.io.parse": 6.8, "rankkit.metrics.kernels": 3.3,
                    "rankkit.sparse": 2.6, "rankkit.solvers.stream": 2.4, "rankkit.solvers._query_sgd": 2.3,
                    "rankkit.solvers._hinge_kernels": 1.8, "rankkit.sorting": 1.1, "rankkit.paths._path_kernels": 1.1,
                    "rankkit.solvers.factorized": 0.9, "rankkit.objectives.pairs": 0.5, "rankkit.stats": 0.2}


def estimated_seconds(jobs: int, calls: list | None = None) -> float:
    """About how long the build of `calls` (default: the table) takes in `jobs` processes on this
    project's machine (for a progress line; a slower machine takes longer)."""
    groups = _groups(table() if calls is None else calls)
    jobs = max(1, min(jobs, len(groups)))
    costs = [_share_cost(g) for g in groups] or [0.0]
    return max(max(costs), sum(costs) / jobs) + 3.0  # + each process's start and C helpers


def _cost(group) -> float:
    module, entries = group
    return _COMPILE_SECONDS.get(module, float(len(entries)))


def _share_cost(group) -> float:
    """_cost of a group that may hold only some of its module's calls in the table (a build of the
    demo's first calls, or of the calls another build left): that share of the module's cost."""
    module, entries = group
    if module not in _COMPILE_SECONDS:
        return float(len(entries))
    in_table = sum(1 for m, _, _ in table() if m == module)
    return _COMPILE_SECONDS[module] * min(1.0, len(entries) / max(in_table, 1))


def compiled_share(bucket: list, done: int) -> float:
    """The share of a process's compile work (the table's costs: _COMPILE_SECONDS) that its first
    `done` calls make: the process compiles its module's groups in order, each group's calls alike."""
    total = sum(_cost(g) for g in bucket)
    if total <= 0:
        return 1.0
    work = 0.0
    for g in bucket:
        n = len(g[1])
        if done >= n:
            work += _cost(g)
            done -= n
        else:
            work += _cost(g) * done / n
            break
    return work / total


def _groups(calls: list) -> list:
    by_module: dict = {}
    for module, name, key in calls:
        by_module.setdefault(module, []).append((name, key))
    return sorted(by_module.items())


def output_dir() -> str:
    """The first kernel-cache directory a build can be written to (rankkit.compiler.aot's order;
    the private temporary directory made 0700 if need be, as the JIT cache makes it)."""
    from rankkit.compiler import jit

    dirs = aot.candidate_dirs()
    if not os.environ.get("NUMBA_CACHE_DIR"):
        private = jit.private_tmp_dir()
        if private is not None and os.path.join(private, aot.SUBDIR) not in dirs:
            dirs.append(os.path.join(private, aot.SUBDIR))
    for d in dirs:
        if jit.writable_dir(d) is None:
            return d
    raise OSError("no writable kernel cache directory for the ahead-of-time kernels")


def _remove_stale_staging(directory: str, age: float = 3600.0) -> None:
    """Staging folders of builds killed outright (SIGKILL) more than `age` seconds ago; a build
    running now has a younger one."""
    now = time.time()
    for f in os.listdir(directory):
        path = os.path.join(directory, f)
        try:
            if f.startswith(".build-") and now - os.lstat(path).st_mtime > age:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def built_calls(directory: str, fp: str) -> tuple[dict, set]:
    """The modules (manifest records) of the build in `directory` if it was made for fingerprint
    `fp` and every module file is still there, and the calls they hold; else ({}, set())."""
    m = aot.read_manifest(directory)
    if m is None or m.get("fingerprint") != fp:
        return {}, set()
    modules = m["modules"]
    try:
        if not all(os.path.isfile(os.path.join(directory, os.path.basename(f))) for f in modules):
            return {}, set()
        for r in modules.values():
            int(str(r["name"]).rsplit("_", 1)[1])  # rankkit_aot_<n>: the added modules are numbered after these
        return modules, {(module, name, aot.as_key(key)) for r in modules.values()
                         for module, name, key, _ in r["kernels"]}
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):  # not a manifest this build wrote: start afresh
        return {}, set()


def build(jobs: int = 1, calls: list | None = None, directory: str | None = None, progress=None,
          add: bool = False) -> dict:
    """Compile `calls` (default: the table) in `jobs` processes and install them with their
    manifest; returns the manifest. Raises if anything fails (nothing is installed then).
    progress(calls compiled, modules finished, calls, modules, share), if given, is called a few times
    a second while the processes compile (rankkit.warmup's progress line); share is the part of the
    calls' compile work done, by the costs of the calls compiled (compiled_share), in [0, 1].
    add: keep the modules of a build already in `directory` for the same fingerprint and compile
    only the calls it lacks (none: nothing is compiled); the manifest then lists both. The
    manifest's key "added" holds the number of calls this build compiled."""
    calls = table() if calls is None else calls
    directory = directory or output_dir()
    os.makedirs(directory, exist_ok=True)
    if _nearly_full(directory):  # a build needs a few MB there (1.6 MB installed, more while linking):
        # say so now, not after a minute of compiling
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), directory)
    stats = aot.source_stats()
    sources = aot.sources_digest()
    if aot.source_stats() != stats:  # a file changed while being read: runs read the files (stats not kept)
        stats = None
    fp = aot.fingerprint(sources)
    kept: dict = {}
    if add:
        kept, have = built_calls(directory, fp)
        lacking = [c for c in calls if (c[0], c[1], aot.as_key(c[2])) not in have]
        if not lacking:
            manifest = aot.read_manifest(directory)
            if manifest is not None and manifest.get("fingerprint") == fp:
                manifest["added"] = 0
                return manifest
            kept = {}  # replaced meanwhile by another build: all of `calls`, on their own
        else:
            calls = lacking
    first = 1 + max((int(r["name"].rsplit("_", 1)[1]) for r in kept.values()), default=-1)
    groups = _groups(calls)
    _remove_stale_staging(directory)
    staging = tempfile.mkdtemp(prefix=".build-", dir=directory)
    try:
        jobs = max(1, min(jobs, len(groups)))
        # one module per process (each module compiles numba's C helpers, ~2 s), the kernel groups
        # spread over them by their compile time, the longest first
        buckets = [[] for _ in range(jobs)]
        for g in sorted(groups, key=lambda g: (-_share_cost(g), g[0])):
            min(buckets, key=lambda b: sum(_share_cost(x) for x in b)).append(g)
        # always in spawned processes, even one: compile_module changes how this process's numba
        # compiles (_callees_as_ir_only), which must never reach a process that goes on to run kernels
        report = None
        if progress is not None:
            n_calls, n_modules = len(calls), len(buckets)
            progress(0, 0, n_calls, n_modules, 0.0)
            weights = [sum(_cost(g) for g in b) for b in buckets]

            def report(counts, modules):
                share = sum(w * compiled_share(b, c) for w, b, c in zip(weights, buckets, counts)) / max(sum(weights), 1e-9)
                progress(sum(counts), modules, n_calls, n_modules, share)
        records = _compile_in_processes(buckets, staging, report, first)
        # a source edited (and perhaps undone) while the build ran: the code may not be what the
        # fingerprint names, so nothing is installed
        if any(r.pop("compiled_from") != fp for r in records) or aot.fingerprint() != fp:
            raise RuntimeError("rankkit's sources changed during the build; run it again")
        for r in records:
            os.replace(os.path.join(staging, r["file"]), os.path.join(directory, r["file"]))
        manifest = {"format": aot.FORMAT, "fingerprint": fp, "built": time.strftime("%Y-%m-%d %H:%M:%S"),
                    "sources": {"digest": sources, "stats": stats},
                    "modules": {**kept, **{r["file"]: r for r in records}}}
        fd, tmp = tempfile.mkstemp(prefix=".manifest-", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # readable as the modules are (mkstemp makes it 0600)
        os.replace(tmp, os.path.join(directory, aot.MANIFEST))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    manifest["added"] = len(calls)
    keep = set(manifest["modules"]) | {aot.MANIFEST}
    now = time.time()
    for f in os.listdir(directory):  # older builds' modules (a running process keeps its mapping);
        path = os.path.join(directory, f)  # not a concurrent build's, just installed
        try:
            if f not in keep and f.startswith("rankkit_aot_") and f.endswith(".so") and now - os.lstat(path).st_mtime > 3600:
                os.unlink(path)
        except OSError:
            pass
    return manifest


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m rankkit.compiler.build", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--suite-cache", action="store_true",
                    help="`make test`: make the test suite's private kernel cache for exactly these sources "
                    "(aot.suite_cache_dir: a second run reuses it), print its path and exit")
    ap.add_argument("--suite-cache-done", metavar="DIR",
                    help="`make test`, after the suite: remove DIR if the sources changed during the run")
    a = ap.parse_args(argv)
    if a.suite_cache_done:
        aot.suite_cache_check(a.suite_cache_done)
        return 0
    if a.suite_cache:
        try:
            print(aot.suite_cache_dir())
        except OSError as exc:
            print(f"rankkit: error: {exc}", file=sys.stderr)
            return 2
        return 0
    t = time.perf_counter()
    m = build(a.jobs)
    print(f"{sum(len(r['kernels']) for r in m['modules'].values())} kernel calls in {len(m['modules'])} modules "
          f"compiled in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
