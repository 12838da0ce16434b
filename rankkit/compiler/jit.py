"""numba's side of rankkit's kernels: compiling them just in time, and numba's on-disk cache.

Imported by rankkit.compiler.dispatch the first time a kernel has no ahead-of-time code for its
arguments (rankkit.compiler.aot), so a run that finds all its kernels compiled ahead of time
never imports numba. The options (nogil, no fastmath, numpy's error model) are decided in
rankkit.compiler.dispatch.

The on-disk cache must never stop a run (a read-only install, a service account without a home, a
full or unwritable NUMBA_CACHE_DIR, several processes at once, a cache file cut in half):

- Where the cache goes: NUMBA_CACHE_DIR if set and writable; else numba's own choice (the
  package's __pycache__, then the user's cache directory) if one is writable; else a private
  per-user directory in the system temporary directory (created 0700, used only if it is ours and
  not a symlink); else no disk cache at all (every run compiles).
- Every index and data file is sealed with a SHA-256 of its name and content (numba keeps none): an
  entry that fails it (truncated, overwritten, a changed byte, from a crashed writer, from an older
  rankkit, two entries' files swapped or copied over each other) is
  removed and the kernel recompiled, before numba's loader sees it (some damage unpickles and then
  aborts inside LLVM). A cache that cannot be written is switched off for the rest of the run.
- When a kernel has to be compiled, one line on stderr says so, terminal or not (once a run; with
  the reason when it is a cache problem), so that a cron job's log explains why it was slow; the
  seconds spent compiling are counted (compile_seconds) so that -v timings can name them.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import io
import os
import pickle
import sys
import tempfile
import time
import uuid

from rankkit import threads as _threads

_threads.configure_runtime()  # idle OpenMP threads sleep: must precede numba loading its threading layer


def _import_numba_without_the_working_directorys_config() -> None:
    """numba reads `.numba_config.yaml` from the current directory when it is imported and again at
    every compile (with PyYAML installed, as the Dask extra does): in a shared directory another
    user's file would choose what root's run writes (NUMBA_CHROME_TRACE, NUMBA_DUMP_HTML: any
    path), which cache it loads and which code it compiles. rankkit takes numba's settings from the
    environment only: during numba's import `import yaml` fails (its config then never parses the
    file; the warning it gives for a file it cannot parse is dropped), and later reloads look for a
    file that is never one."""
    if "numba" not in sys.modules:
        import warnings

        saved = sys.modules.get("yaml")
        sys.modules["yaml"] = None  # an ImportError for numba.core.config's `import yaml`
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="A Numba config file is found")
                import numba.core.config  # noqa: F401
        finally:
            if saved is not None:
                sys.modules["yaml"] = saved
            elif sys.modules.get("yaml", 0) is None:
                del sys.modules["yaml"]
    sys.modules["numba.core.config"]._config_fname = os.devnull  # exists, and is never a regular file


_import_numba_without_the_working_directorys_config()

import numba  # noqa: E402
import numba.core.event  # noqa: E402
from numba.core.caching import FunctionCache, IndexDataCacheFile, UserProvidedCacheLocator  # noqa: E402

from rankkit import console  # noqa: E402
from rankkit.compiler import aot  # noqa: E402

# Why the preferred cache location could not be used (None: it can); shown when compiling.
_cache_problem: str | None = None
_cache_enabled = True
_on_private = False  # numba.config.CACHE_DIR is the private temporary directory (or there is none)
_compile_noted = False


def writable_dir(path: str) -> str | None:
    """None if `path` exists (or can be created: writable by no one else) and a file can be made
    in it, else the reason."""
    try:
        os.makedirs(path, mode=0o755, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def private_tmp_dir() -> str | None:
    """A per-user cache directory in the temporary directory (made 0700 if need be), if it is
    safely ours: the check rankkit.compiler.aot makes before loading a build from it."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    try:
        os.mkdir(os.path.join(tempfile.gettempdir(), f"rankkit-numba-cache-{uid}"), 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    path = aot.private_tmp()  # None for a symlink, or someone else's: never write compiled code there
    return path if path is not None and writable_dir(path) is None else None


def _usable_root(root: str) -> tuple[str | None, str | None, bool]:
    """(the real path of cache root `root`, None, False) if it can be written and no other user
    can write it (rankkit.compiler.aot.trust_problem), else (None, why not, whether it is unsafe)."""
    real = os.path.realpath(root)
    problem = aot.trust_problem(real)  # before making anything in it
    if problem is None:
        reason = writable_dir(real)
        if reason is not None:
            return None, f"{root} is not writable ({reason})", False
        problem = aot.trust_problem(real)
    if problem is not None:
        return None, f"{root} could hold another user's code: {problem}", True
    return real, None, False


def _choose_cache_dir() -> None:
    """numba's cache directory for this process (numba.config.CACHE_DIR, so that numba's first
    locator, a directory the user provides, is the one it uses for every kernel): NUMBA_CACHE_DIR
    when set, else the package's __pycache__ or the user's numba cache directory, the first that
    is writable and that no other user can write; else the private temporary directory."""
    configured = numba.config.CACHE_DIR
    problems = []
    unsafe = False
    for root in [configured] if configured else aot.cache_roots():
        real, problem, bad = _usable_root(root)
        if real is not None:
            numba.config.CACHE_DIR = real
            return
        problems.append(f"NUMBA_CACHE_DIR {problem}" if configured else problem)
        unsafe = unsafe or bad
    _use_private("; ".join(problems), unsafe)


def _use_private(problem: str, unsafe: bool = False) -> None:
    """Cache in the private temporary directory from now on (or nowhere): `problem` says why. A
    cache refused because another user could have written it (`unsafe`) is said at once, in one
    line that stands for the compile note too: every run that goes to numba's JIT says it."""
    global _cache_problem, _cache_enabled, _on_private, _compile_noted
    _on_private = True
    fallback = private_tmp_dir()
    if fallback is not None:
        numba.config.CACHE_DIR = fallback
        _cache_problem = f"{problem}; caching compiled kernels in {fallback}"
    else:
        _cache_enabled = False
        _cache_problem = f"{problem} and no private temporary directory could be made: kernels are compiled on every run"
    if unsafe and not _compile_noted:
        _compile_noted = True
        console.note(f"kernel cache not used ({_cache_problem})")


def _note_compiling() -> None:
    global _compile_noted
    _threads.resume_gc()  # if the command line paused it: compiling makes cyclic garbage
    if _compile_noted:
        return
    _compile_noted = True
    if _cache_problem is not None:
        console.note(f"compiling kernels ({_cache_problem})")
    else:  # terminal or not: a cron job's log must say why this run was slow
        console.note("compiling kernels on first use, once (up to about 30 s; later runs load them from the cache; "
                     "`rankkit warmup` compiles them all ahead of time)")


class _CompileTimer(numba.core.event.Listener):
    """Adds up the wall seconds of numba's compiles (the outermost ones: a kernel's callees compile
    inside it), whether or not a disk cache is in use."""

    def __init__(self):
        self.depth = 0
        self.start = 0.0
        self.seconds = 0.0
        self.count = 0

    def on_start(self, event):
        if self.depth == 0:
            self.start = time.perf_counter()
            _note_compiling()  # also when no disk cache is in use (its loader is what notes it otherwise)
        self.depth += 1

    def on_end(self, event):
        self.depth -= 1
        if self.depth == 0:
            self.seconds += time.perf_counter() - self.start
            self.count += 1


_timer = _CompileTimer()
numba.core.event.register("numba:compile", _timer)


_quiet = False
_cache_failure: str | None = None  # why a save to the disk cache failed in this process, if one did


def quiet_compiles() -> None:
    """No compile note in this process, nor the note of a cache that cannot be written (the
    ahead-of-time build and warmup: compiling is what they were asked for, and warmup reports a
    cache it could not fill itself, from cache_problem())."""
    global _compile_noted, _quiet
    _compile_noted = _quiet = True


def cache_problem() -> str | None:
    """None if this process's kernels compiled so far are in the disk cache; else why they are not
    (no writable cache directory, or a write that failed: a full disk, a quota, a file size limit)."""
    if _cache_failure is not None:
        return _cache_failure
    return None if _cache_enabled else (_cache_problem or "the disk cache is off")


def compile_seconds() -> float:
    """Wall seconds this process has spent compiling kernels (numba's JIT) so far."""
    return _timer.seconds


_SEAL = b"rankkit-sha256:"


def _digest(name: str, payload: bytes) -> bytes:
    return hashlib.sha256(name.encode("utf-8", "surrogateescape") + b"\0" + payload).digest()


def _seal(payload: bytes, name: str) -> bytes:
    """`payload` sealed with a SHA-256 of the file's own name and its content: a file moved or
    copied under another entry's name (two entries swapped) fails it as damage does."""
    return _SEAL + _digest(name, payload) + payload


def _unseal(blob: bytes, name: str) -> bytes:
    """The payload of a sealed cache file; ValueError if it is not sealed, does not match, or was
    sealed under another name. A damaged or misplaced entry must never reach numba's loader: some
    damage unpickles and then aborts LLVM, and another kernel's code fails its first call."""
    n = len(_SEAL)
    if not blob.startswith(_SEAL) or _digest(name, blob[n + 32:]) != blob[n:n + 32]:
        raise ValueError("cache file fails its checksum")
    return blob[n + 32:]


class _NoGlobals(pickle.Unpickler):
    """An unpickler of plain values only (the version string heading an index): a pickle that
    names any class or function (how a planted pickle runs code) is refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"a cache index names {module}.{name}")


class _CheckedCacheFile(IndexDataCacheFile):
    """numba's index and data files, each sealed with a SHA-256 of its name and content, read only
    when this user or root wrote them and no one else can have changed them
    (rankkit.compiler.aot.open_trusted), and written so (0644 whatever the umask)."""

    def _save_index(self, overloads):
        data = _seal(self._dump((self._source_stamp, overloads)), self._index_name)
        with self._open_for_write(self._index_path) as f:
            pickle.dump(self._version, f, protocol=-1)
            f.write(data)

    def _load_index(self):
        try:
            blob = aot.open_trusted(self._index_path)
        except FileNotFoundError:
            return {}
        f = io.BytesIO(blob)
        if _NoGlobals(f).load() != self._version:
            return {}
        stamp, overloads = pickle.loads(_unseal(f.read(), self._index_name))
        return overloads if stamp == self._source_stamp else {}

    def _save_data(self, name, data):
        with self._open_for_write(self._data_path(name)) as f:
            f.write(_seal(self._dump(data), name))

    def _load_data(self, name):
        return pickle.loads(_unseal(aot.open_trusted(self._data_path(name)), name))

    @contextlib.contextmanager
    def _open_for_write(self, filepath):
        """numba's: a new temporary file renamed over `filepath`; made here 0644 whatever the
        umask (a group-writable file would not be loaded again), never through a planted link."""
        tmpname = f"{filepath}.tmp.{uuid.uuid4().hex[:16]}"
        fd = os.open(tmpname, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
            os.replace(tmpname, filepath)
        except BaseException:
            try:
                os.unlink(tmpname)
            except OSError:
                pass
            raise


class _RobustCache(FunctionCache):
    """numba's per-function disk cache, made unable to fail a run."""

    def __init__(self, py_func):
        sub = os.path.join(numba.config.CACHE_DIR, UserProvidedCacheLocator.get_suitable_cache_subpath(inspect.getfile(py_func)))
        try:
            os.mkdir(sub, 0o755)  # numba's own makedirs would follow the umask (a group-writable 0775)
        except OSError:
            pass
        problem = aot.trust_problem(sub)
        if problem is not None:
            if _on_private:
                raise RuntimeError(problem)  # no disk cache for this kernel
            _use_private(f"{sub} could hold another user's code: {problem}", unsafe=True)
            if not _cache_enabled:
                raise RuntimeError(problem)
            self.__init__(py_func)
            return
        super().__init__(py_func)
        if not isinstance(self._impl.locator, UserProvidedCacheLocator):  # numba could not use it: no other place
            raise RuntimeError(f"cannot cache in {sub}")
        self._cache_file = _CheckedCacheFile(cache_path=self._cache_path, filename_base=self._impl.filename_base,
                                             source_stamp=self._impl.locator.get_source_stamp())

    def load_overload(self, sig, target_context):
        global _compile_noted
        try:
            try:
                cres = self._load_light(sig, target_context)
            except Exception:  # anything the light load did not foresee: numba's own, full load
                cres = super().load_overload(sig, target_context)
        except Exception as exc:  # unpickling junk, a truncated file, a bad index: repair and recompile
            self._remove_entry()
            if not _compile_noted:
                _compile_noted = True
                if isinstance(exc, PermissionError):  # another user's file, or one others could have changed
                    console.note(f"kernel cache file not loaded ({exc}), removed; recompiling")
                else:
                    console.note(f"damaged kernel cache in {self.cache_path} ({exc.__class__.__name__}) removed; recompiling")
            return None
        if cres is None:
            _note_compiling()
        return cres

    def _load_light(self, sig, target_context):
        """numba's load_overload without its first step, target_context.refresh(): that imports and
        installs every typing and lowering registry (~0.1 s, numba's first dispatch in a process),
        which compiling needs and loading machine code does not. Loading needs the symbols the code
        links to: the runtime's (NRT), set up here as refresh() would; numba's C helpers and math
        functions, defined when the context is made; the hash secrets of numba.cpython.hashing
        (rankkit's kernels hash nothing; one that did loaded correctly in a trial); the thread
        pool's, by the reload hook numba stores with parallel code. A compile refreshes the context
        itself (numba's compiler does, before typing), so a cache miss later is unaffected; any
        failure here falls back to numba's full load."""
        from numba.core.runtime import rtsys

        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
        return None  # the guard swallowed an I/O error: as numba's own load_overload, a miss

    def save_overload(self, sig, data):
        global _cache_enabled, _cache_failure
        if not _cache_enabled:
            return
        try:
            super().save_overload(sig, data)
        except Exception as exc:  # full disk, permissions changed under us, a race: run on uncached
            _cache_enabled = False
            _cache_failure = f"cannot write the kernel cache in {self.cache_path} ({exc})"
            if not _quiet:
                console.note(f"{_cache_failure}; continuing without it")

    def _remove_entry(self) -> None:
        try:
            os.unlink(self._cache_file._index_path)
        except OSError:
            pass


def _enable_cache(dispatcher) -> None:
    if not _cache_enabled:
        return
    try:
        dispatcher._cache = _RobustCache(dispatcher.py_func)
    except Exception:  # no locator available: compile without a disk cache
        pass


def disable_disk_cache() -> None:
    """No disk cache for the rest of this process (the ahead-of-time build compiles every callee
    afresh into its module)."""
    global _cache_enabled
    _cache_enabled = False


build_options: dict = {}  # set by rankkit.compiler.build in its own processes only


def dispatcher(kernel):
    """The numba dispatcher of a rankkit kernel (rankkit.compiler.dispatch.Kernel): its Python
    function jitted with the kernel's options, with the robust disk cache unless it asked for none."""
    d = numba.njit(**kernel.options, **build_options)(kernel.py_func)
    if kernel.cache:
        _enable_cache(d)
    return d


_registered: set = set()


def register_types(kernel_class, global_class) -> None:
    """Kernels (rankkit.compiler.dispatch.Kernel) and lazy numba objects (NumbaGlobal) are module
    globals that other kernels call: numba types a global by its value, so each types as the numba
    object it stands for. The classes are given by the caller (rankkit.compiler.dispatch), which
    this module does not import; once per pair."""
    if (kernel_class, global_class) in _registered:
        return
    _registered.add((kernel_class, global_class))
    from numba.extending import typeof_impl

    @typeof_impl.register(kernel_class)
    def _typeof_kernel(val, c):
        return typeof_impl(val.dispatcher, c)

    @typeof_impl.register(global_class)
    def _typeof_numba_global(val, c):
        from numba.core.registry import cpu_target

        obj = val.get()
        ctx = cpu_target.typing_context
        ctx.refresh()  # installs what the object registered when it was made (an @intrinsic's typing)
        ty = ctx._lookup_global(obj)
        return ty if ty is not None else ctx.resolve_value_type(obj)


def _load_numba_registries_without_scipy_linalg() -> None:
    """numba's first dispatch imports numba.np.arraymath, whose import-time BLAS check imports
    scipy.linalg (~0.2 s of a small run's start; rankkit's kernels use no BLAS: no np.dot or @
    inside a kernel, a test checks it). During that import only, the check asks whether scipy is
    installed without importing it; numba's real check runs as before when a kernel using BLAS
    compiles, and cached BLAS code imports scipy's BLAS on its first call. Any surprise: numba's
    own path."""
    if "numba.np.arraymath" in sys.modules:
        return
    try:
        import importlib.util

        from numba.np import linalg
    except Exception:
        return
    real = linalg.ensure_blas

    def scipy_installed():
        if importlib.util.find_spec("scipy") is None:
            raise ImportError("scipy 0.16+ is required for linear algebra")

    linalg.ensure_blas = scipy_installed
    try:
        import numba.np.arraymath  # noqa: F401
    except Exception:
        pass
    finally:
        linalg.ensure_blas = real


_choose_cache_dir()
_load_numba_registries_without_scipy_linalg()
