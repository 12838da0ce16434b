"""Finding and loading the kernels compiled ahead of time (built by rankkit.compiler.build).

`make` (python -m rankkit.warmup) compiles the kernel calls that the common commands make
(rankkit/compiler/table.py) into plain extension modules with numba's AOT compiler, for
this machine's CPU and features. A run that finds them loads them with Python's import machinery:
no numba, no LLVM. A kernel call whose argument types they do not cover goes to numba's JIT as
before (rankkit.compiler.dispatch).

Where they are: `rankkit-aot/` in the kernel cache (rankkit.compiler.jit's rule): under
NUMBA_CACHE_DIR when that is set (and nowhere else), else the first of the package's __pycache__,
the user's numba cache directory and the private per-user temporary directory that holds a build
for this fingerprint. The manifest there lists each module's file, its SHA-256 and its exports.
It is used only if its fingerprint matches this run: the text of every rankkit source file (read
again unless every file still has the size, times and inode the manifest recorded), the
Python, numpy, numba and llvmlite versions, the NUMBA_* settings and this CPU (model and feature
flags), and only from a directory, manifest and modules owned by this user or root and writable
by no one else, so an edit, an upgrade or
another machine never runs stale or illegal code. A module file that fails its SHA-256 (damaged,
cut short) is not loaded: its kernels go to the JIT, with one line on stderr.
RANKKIT_AOT=0 turns the ahead-of-time code off (every kernel through numba's JIT).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading

from rankkit import console

MANIFEST = "manifest.json"
SUBDIR = "rankkit-aot"
FORMAT = 1

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # rankkit/

_state: dict | None = None  # {"dir": ..., "modules": {file: {...}}, "kernels": {(module, name): [(key, file, export)]}}
_loaded: dict = {}  # file -> module object, or None if it failed
_lock = threading.Lock()  # a kernel's first calls can come from several pool threads at once


def enabled() -> bool:
    return os.environ.get("RANKKIT_AOT", "1").strip().lower() not in ("0", "no", "off", "false")


def cache_roots() -> list[str]:
    """The kernel caches a run may use, in order, as they are spelled (rankkit.compiler.jit picks
    the first that is writable and trusted, trust_problem(); the private temporary directory is
    its last resort): NUMBA_CACHE_DIR when that is set (and then nothing else but the private
    directory), else the package's __pycache__ and the user's numba cache directory."""
    configured = os.environ.get("NUMBA_CACHE_DIR")
    if configured:
        return [configured]
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [os.path.join(_PACKAGE, "__pycache__"), os.path.join(xdg, "numba")]


def candidate_dirs() -> list[str]:
    """Where a build may be, in the order they are tried (and written: the first writable): the
    rankkit-aot folder of each cache root no other user can write (trust_problem), then of the
    private per-user temporary directory."""
    dirs = []
    for root in cache_roots():
        real = os.path.realpath(root)
        if trust_problem(real) is None:
            dirs.append(os.path.join(real, SUBDIR))
    private = private_tmp()
    if private is not None and os.path.join(private, SUBDIR) not in dirs:
        dirs.append(os.path.join(private, SUBDIR))
    return dirs


def _owned(st) -> bool:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return st.st_uid in (uid, 0)


def trust_problem(directory: str) -> str | None:
    """None if no other user can have put or can put anything in `directory` (a cache of compiled
    code and pickles, which run as whoever loads them), else why, naming the directory at fault.
    `directory` must be a real directory (a missing one, or a file, is no problem here: the
    caller makes it, then checks again, or finds it unwritable) owned by this user or root and writable by no one else, and every
    directory above it owned by this user or root and writable by no one else unless sticky (as
    /tmp: no other user can rename or replace what is ours in it). A symlink on the way is refused:
    resolve the path first (os.path.realpath) and use what was checked."""
    import stat

    path = os.path.abspath(directory)
    parts = []
    while True:
        parts.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for i, p in enumerate(reversed(parts)):
        last = i == len(parts) - 1
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return None  # made by this process below a checked parent
        except OSError as exc:
            return f"{p} cannot be examined ({exc.strerror})"
        if stat.S_ISLNK(st.st_mode):
            return f"{p} is a symbolic link"
        if not stat.S_ISDIR(st.st_mode):  # nothing can be cached there (the caller finds it unwritable)
            return None
        if not _owned(st):
            return f"{p} is owned by another user (uid {st.st_uid})"
        if st.st_mode & 0o022 and (last or not st.st_mode & stat.S_ISVTX):
            who = "everyone" if st.st_mode & 0o002 else "its group"
            return f"{p} is writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def open_trusted(path: str) -> bytes:
    """The content of cache file `path`, read only if it is a regular file owned by this user or
    root, writable by no one else and linked once (no hard link to it planted elsewhere), judged
    on the file opened (not its name, which could change meanwhile; a symlink is not followed, a
    FIFO does not block). PermissionError otherwise: nothing of it is read."""
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _owned(st) or st.st_mode & 0o022 or st.st_nlink != 1:
            raise PermissionError(f"{path} is not a file of this user or root that only they can write "
                                  f"(owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}, links {st.st_nlink})")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def private_tmp() -> str | None:
    """The per-user directory in the temporary directory, only if it is safely ours (a real
    directory, owned by this user, writable by no one else, as rankkit.compiler.jit makes it):
    machine code found anywhere else there could have been planted by another user."""
    import stat

    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = os.path.join(tempfile.gettempdir(), f"rankkit-numba-cache-{uid}")
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o022:
        return None
    real = os.path.realpath(path)  # the temporary directory itself may be a link (macOS /tmp)
    return real if trust_problem(real) is None else None


def _cpu_identity() -> str:
    """The CPU's model and feature flags (Linux), or what the platform says: code compiled for one
    CPU's features may not run on another."""
    try:
        with open("/proc/cpuinfo") as fh:
            lines = []
            for line in fh:
                if line.startswith(("model name", "flags", "vendor_id", "cpu family", "model\t", "Features", "CPU part")):
                    lines.append(" ".join(line.split()))
                elif not line.strip() and lines:
                    break  # the first processor's block is enough
            if lines:
                return "\n".join(lines)
    except OSError:
        pass
    import platform

    return f"{platform.machine()} {platform.processor()}"


def _sources() -> list:
    """(path relative to the package, path, os.stat result) of every rankkit source file, sorted by
    path: regular .py files only (an editor's lock file, .#x.py, a dangling symlink, is no source)."""
    out = []

    def walk(directory: str, rel: str) -> None:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if e.name == "__pycache__" or e.name.startswith("."):
                continue
            if e.is_dir(follow_symlinks=False):  # as os.walk: a linked directory is not walked into
                walk(e.path, rel + e.name + "/")
            elif e.name.endswith(".py") and e.is_file():
                out.append((rel + e.name, e.path, e.stat()))

    walk(_PACKAGE, "")
    return out


def source_files() -> list[str]:
    """Every rankkit source file, sorted: a kernel can call kernels and read constants anywhere."""
    return [path for _, path, _ in _sources()]


def _toolchain_identity() -> str:
    """numba's and llvmlite's versions (read from their files: importing numba is what a run on
    ahead-of-time code avoids) and the NUMBA_* settings that change generated code."""
    import importlib.util

    parts = []
    for name in ("numba", "llvmlite"):
        try:
            spec = importlib.util.find_spec(name)
            with open(os.path.join(os.path.dirname(spec.origin), "_version.py"), "rb") as fh:
                parts.append(f"{name} {hashlib.sha256(fh.read()).hexdigest()}")
        except (ImportError, AttributeError, TypeError, OSError):
            parts.append(f"{name} ?")
    ignored = ("NUMBA_CACHE_DIR", "NUMBA_NUM_THREADS")
    parts += sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("NUMBA_") and k not in ignored)
    return "\n".join(parts)


def source_stats() -> list:
    """The package's real path, then [path in the package, size, modification and change times in
    ns, inode] of every source file (no reading). The change time moves with every write and cannot
    be set back (an edit whose size and modification time were restored still changes it), and the
    path and inodes are this installation's: another copy sharing the cache is read."""
    return [os.path.realpath(_PACKAGE)] + [[rel, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
                                           for rel, _, st in _sources()]


def sources_digest() -> str:
    """The SHA-256 of every source file's text, with its path in the package."""
    h = hashlib.sha256()
    for rel, path, _ in _sources():
        h.update(rel.encode() + b"\0")
        with open(path, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


def fingerprint(sources: str | None = None) -> str:
    """What a build is for: the sources (their digest, read now unless given), Python, numpy,
    numba, llvmlite, the NUMBA_* settings and this CPU."""
    import numpy

    h = hashlib.sha256()
    h.update(f"{FORMAT}\n{sys.version}\n{sys.implementation.cache_tag}\nnumpy {numpy.__version__}\n".encode())
    h.update(_cpu_identity().encode())
    h.update(_toolchain_identity().encode())
    h.update((sources_digest() if sources is None else sources).encode())
    return h.hexdigest()


def _known_sources(m: dict, stats: list) -> str | None:
    """The sources' digest the manifest recorded, if this installation's source files all have the
    sizes, modification and change times and inodes recorded with it (`stats`, source_stats() now): then they are
    the files the build read, and reading them all again (a few ms of every run) is not needed.
    Python trusts its bytecode on less (the modification time in seconds and the size). Anything
    else (an edit, a touch, a file added or removed, another copy of the package, an old
    manifest): None, and the files are read."""
    rec = m.get("sources")
    if not isinstance(rec, dict) or not isinstance(rec.get("digest"), str):
        return None
    return rec["digest"] if rec.get("stats") == stats else None


def as_key(k) -> tuple:
    """An argument key as the table spells it (tuples), from the manifest's JSON (lists)."""
    return tuple(tuple(a) if isinstance(a, list) else a for a in k)


def read_manifest(directory: str) -> dict | None:
    try:
        with open(os.path.join(directory, MANIFEST), encoding="utf-8") as fh:
            m = json.load(fh)
        if m.get("format") != FORMAT or not isinstance(m.get("modules"), dict):
            return None
        return m
    except (OSError, ValueError):
        return None


def _trusted(path: str) -> bool:
    """Owned by this user or root, writable by no one else, not a symlink: machine code is loaded
    only from where no other user could have put it (a fingerprint can be computed by anyone)."""
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return False
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return not stat.S_ISLNK(st.st_mode) and st.st_uid in (uid, 0) and not st.st_mode & 0o022


def _find() -> dict:
    empty = {"dir": None, "kernels": {}, "modules": {}}
    if not enabled():
        return empty
    try:
        found = [(d, m) for d in candidate_dirs() if _trusted(d) and _trusted(os.path.join(d, MANIFEST))
                 for m in [read_manifest(d)] if m is not None]
        if not found:
            return empty
        stats = source_stats()
        fps: dict = {}  # the fingerprint for each sources' digest a manifest vouches for (None: read the files)
        for directory, m in found:
            known = _known_sources(m, stats)
            if known not in fps:
                fps[known] = fingerprint(known)
            if m.get("fingerprint") != fps[known]:
                continue
            state = {"dir": directory, "kernels": {}, "modules": {}}
            for file, mod in m["modules"].items():
                state["modules"][file] = {"name": str(mod["name"]), "sha256": str(mod["sha256"])}
                for module, name, key, export in mod["kernels"]:
                    state["kernels"].setdefault((module, name), []).append((as_key(key), file, str(export)))
            return state
    except Exception:  # an unreadable source, a manifest of the wrong shape: no ahead-of-time code
        pass
    return empty


def _load_module(file: str):
    if file in _loaded:
        return _loaded[file]
    mod = None
    info = _state["modules"][file]
    path = os.path.join(_state["dir"], file)
    try:
        if not _trusted(path) or os.path.basename(file) != file:
            raise PermissionError("not owned by this user or root, or writable by others")
        with open(path, "rb") as fh:
            ok = hashlib.sha256(fh.read()).hexdigest() == info["sha256"]
        if ok:
            import importlib.util

            spec = importlib.util.spec_from_file_location(info["name"], path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        else:
            _note(f"damaged ahead-of-time kernels {path} (checksum) not loaded; using numba's JIT")
    except Exception as exc:  # unreadable, or not loadable here: the JIT has the same code
        _note(f"ahead-of-time kernels {path} not loaded ({exc.__class__.__name__}); using numba's JIT")
        mod = None
    _loaded[file] = mod
    return mod


def _note(message: str) -> None:
    console.note(message)


def exports(kernel) -> dict:
    """{argument key: compiled function} of a kernel (empty if nothing was built for it)."""
    global _state
    with _lock:
        if _state is None:
            _state = _find()
        entries = _state["kernels"].get((kernel.__module__, kernel.__qualname__))
        if not entries:
            return {}
        out = {}
        for key, file, export in entries:
            mod = _load_module(file)
            fn = getattr(mod, export, None) if mod is not None else None
            if fn is not None:
                out[key] = fn
        return out


def covers(calls) -> bool:
    """The build in use holds every one of `calls` ((module, kernel, argument key) as the table lists them)."""
    status()
    return all(any(k == as_key(key) for k, _, _ in _state["kernels"].get((module, name), ()))
               for module, name, key in calls)


def status() -> dict:
    """Where the build in use is and how many kernel calls it covers (for tests and benchmarks)."""
    global _state
    with _lock:
        if _state is None:
            _state = _find()
    return {"dir": _state["dir"], "kernels": len(_state["kernels"]),
            "calls": sum(len(v) for v in _state["kernels"].values()),
            "loaded": sorted(f for f, m in _loaded.items() if m is not None)}


# -- the test suite's kernel cache ----------------------------------------------------------------

SUITE_PREFIX = "rankkit-suite"
# a suite cache of other sources is removed by the next run when it has not been used for a day,
# or for an hour when it is not among the SUITE_KEEP_RECENT most recently used (each edit makes one)
SUITE_KEEP_SECONDS = 86400
SUITE_KEEP_RECENT = 6


def suite_cache_roots() -> list[str]:
    """Where `make test` keeps its kernel caches, in order: the user's cache directory
    ($XDG_CACHE_HOME or ~/.cache), then the temporary directory (per user)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [os.path.join(xdg, SUITE_PREFIX), os.path.join(tempfile.gettempdir(), f"{SUITE_PREFIX}-{uid}")]


def _private_dir(path: str) -> str | None:
    """`path` made (0700) if missing and returned by its real path if it is ours alone
    (trust_problem: owned by this user or root, no one else can write it or a directory above it
    that is not sticky) and writable; else None."""
    import stat

    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        real = os.path.realpath(path)
        st = os.lstat(real)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or trust_problem(real) is not None or not os.access(real, os.W_OK | os.X_OK):
        return None
    return real


def suite_cache_dir(fp: str | None = None, roots: list[str] | None = None) -> str:
    """The kernel cache of the test suite for these sources: <root>/<fingerprint> (fingerprint():
    the text of every source file, the toolchain, NUMBA_* settings, the CPU), in the first root of
    suite_cache_roots() that is private to this user (made 0700), the folder itself made 0700.
    A second `make test` on exactly the same sources finds the first one's build and JIT cache
    there and starts testing at once; any edit names another folder (numba's own cache would
    not see an edit in another module). Folders of other sources are removed when unused for a day
    (SUITE_KEEP_SECONDS), or for an hour beyond the SUITE_KEEP_RECENT most recent. OSError if no
    root is private and writable."""
    import shutil
    import time

    fp = fingerprint() if fp is None else fp
    for root in suite_cache_roots() if roots is None else roots:
        real_root = _private_dir(root)
        if real_root is None:
            continue
        path = _private_dir(os.path.join(real_root, fp[:32]))
        if path is None:
            continue
        now = time.time()
        try:
            os.utime(path)  # in use: kept by other runs' clean-up
            others = sorted(((os.lstat(p).st_mtime, p) for p in (os.path.join(real_root, n) for n in os.listdir(real_root))
                             if p != path), reverse=True)
            for rank, (used, other) in enumerate(others):
                age = now - used
                if age > SUITE_KEEP_SECONDS or (rank >= SUITE_KEEP_RECENT - 1 and age > 3600):
                    shutil.rmtree(other, ignore_errors=True)
        except OSError:
            pass
        return path
    raise OSError(f"no private writable directory for the test suite's kernel cache in {', '.join(suite_cache_roots())}")


def suite_cache_check(path: str) -> bool:
    """After a run in suite_cache_dir(): True if the sources are still those it is named for;
    else (edited during the run: what was compiled may come from either text) the folder is
    removed and False."""
    import shutil

    if os.path.basename(os.path.normpath(path)) == fingerprint()[:32]:
        return True
    shutil.rmtree(path, ignore_errors=True)
    return False
