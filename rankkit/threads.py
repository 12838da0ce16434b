"""How many threads rankkit's parallel kernels use by default, and how idle threads wait.

Results never depend on the number of threads (every parallel kernel splits its work by the shape
of the data, not by thread), so the policy here is about speed only:

- Idle threads sleep instead of spinning. rankkit's kernels are serial and run on the thread pool
  below (no numba parfor is left), but a program that runs numba parfors beside rankkit gets this
  too: numba's OpenMP layer (GNU libgomp here) spins for a
  while at every barrier by default; with other busy processes (make -j4, a shared host) the
  spinning threads hold cores that the threads they wait for need, and a fit ran 10-20x slower
  than with one thread. `OMP_WAIT_POLICY=PASSIVE` (and `KMP_BLOCKTIME=0` for Intel's OpenMP) must
  be in the environment before numba loads its threading layer: `configure_runtime()` is called
  by `rankkit.compiler.jit` before it imports numba. A value the user set is kept.
- The same for numpy's OpenBLAS threads (OPENBLAS_THREAD_TIMEOUT), set by the command line
  before numpy loads; a Python program that imported numpy first keeps its own.
- The default thread count is the cores this process may use (CPU affinity, a cgroup CPU quota,
  NUMBA_NUM_THREADS), less the cores other processes are busy on (the runnable count in
  /proc/loadavg), and at least one; worked out again every RECHECK_SECONDS of the run, so that
  processes started together (make -j4) go down to one thread each once they all run, and a long
  run takes cores back when they free up (after two readings in a row that say so). `--threads N`
  overrides it.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time

# OPENBLAS_THREAD_TIMEOUT: numpy's OpenBLAS threads spin 2^n cycles (default n = 28, ~0.1 s) for
# work before they sleep, at start-up and after every BLAS call: on a busy machine that is ~0.1 s
# of another process's core per run. 4 is OpenBLAS's smallest value (16 cycles). It is read when
# numpy loads, so the command line sets it first (rankkit.cli).
_WAIT_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0", "OPENBLAS_THREAD_TIMEOUT": "4"}


def configure_runtime() -> None:
    """Sleep, do not spin, in idle OpenMP threads (unless the user chose otherwise)."""
    for key, value in _WAIT_DEFAULTS.items():
        os.environ.setdefault(key, value)


# -- numba's settings in the environment ------------------------------------------------------------
# Every NUMBA_* variable numba parses when it is imported (numba/core/config.py, _readenv), by the
# kind of value it takes; the others are free text. numba warns about a value it cannot parse (a
# RuntimeWarning with a traceback, on every run) and goes on with its default; rankkit refuses it,
# as it refuses NUMBA_NUM_THREADS=abc: one line naming the variable, exit 2. tests/test_threads.py
# checks this table against the numba installed.
_NUMBA_FLOAT = ("NUMBA_CUDA_MAX_PENDING_DEALLOCS_RATIO",)
_NUMBA_CC = ("NUMBA_FORCE_CUDA_CC", "NUMBA_CUDA_DEFAULT_PTX_CC")
_NUMBA_INT = (
    "NUMBA_DEVELOPER_MODE", "NUMBA_DISABLE_PERFORMANCE_WARNINGS", "NUMBA_FULL_TRACEBACKS", "NUMBA_SHOW_HELP",
    "NUMBA_BOUNDSCHECK", "NUMBA_ALWAYS_WARN_UNINIT_VAR", "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS",
    "NUMBA_CUDA_USE_NVIDIA_BINDING", "NUMBA_DEBUG", "NUMBA_HIGHLIGHT_DUMPS", "NUMBA_DEBUG_JIT",
    "NUMBA_DEBUG_FRONTEND", "NUMBA_DEBUG_NRT", "NUMBA_DEBUG_NRT_STACK_LIMIT", "NUMBA_NRT_STATS",
    "NUMBA_FUNCTION_CACHE_SIZE", "NUMBA_PARFOR_MAX_TUPLE_SIZE", "NUMBA_DEBUG_CACHE", "NUMBA_TRACE",
    "NUMBA_DEBUG_TYPEINFER", "NUMBA_DISABLE_TYPEINFER_FAIL_CACHE", "NUMBA_DUMP_BYTECODE", "NUMBA_DUMP_CFG",
    "NUMBA_DUMP_IR", "NUMBA_DUMP_SSA", "NUMBA_DEBUG_ARRAY_OPT", "NUMBA_DEBUG_ARRAY_OPT_RUNTIME",
    "NUMBA_DEBUG_ARRAY_OPT_STATS", "NUMBA_PARALLEL_DIAGNOSTICS", "NUMBA_DEBUG_INLINE_CLOSURE", "NUMBA_DUMP_LLVM",
    "NUMBA_DUMP_FUNC_OPT", "NUMBA_DUMP_OPTIMIZED", "NUMBA_LOOP_VECTORIZE", "NUMBA_SLP_VECTORIZE",
    "NUMBA_DUMP_ASSEMBLY", "NUMBA_DUMP_ANNOTATION", "NUMBA_DIFF_IR", "NUMBA_ENABLE_AVX",
    "NUMBA_DISABLE_INTEL_SVML", "NUMBA_DISABLE_JIT", "NUMBA_CUDA_WARN_ON_IMPLICIT_COPY", "NUMBA_DISABLE_CUDA",
    "NUMBA_ENABLE_CUDASIM", "NUMBA_CUDA_LOG_API_ARGS", "NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT",
    "NUMBA_CUDA_ARRAY_INTERFACE_SYNC", "NUMBA_CUDA_LOG_SIZE", "NUMBA_CUDA_VERBOSE_JIT_LOG",
    "NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM", "NUMBA_CUDA_ENABLE_MINOR_VERSION_COMPATIBILITY",
    "NUMBA_ENABLE_SYS_MONITORING", "NUMBA_ENABLE_PROFILING", "NUMBA_DEBUGINFO", "NUMBA_CUDA_DEBUGINFO",
    "NUMBA_EXTEND_VARIABLE_LIFETIMES", "NUMBA_LLVM_REFPRUNE_PASS", "NUMBA_USE_LLVMLITE_MEMORY_MANAGER",
    "NUMBA_LLVM_PASS_TIMINGS", "NUMBA_JIT_COVERAGE")
_NUMBA_OPT_LEVELS = ("0", "1", "2", "3", "max")


def _numba_value_problem(name: str, value: str) -> str | None:
    """Why numba cannot parse `value` for variable `name` (its own parser's rule), or None."""
    import re

    if name == "NUMBA_NUM_THREADS":
        try:
            ok = int(value.strip()) >= 1
        except ValueError:
            ok = False
        return None if ok else "is not a whole number of threads of at least 1 (unset it, or use --threads N)"
    if name == "NUMBA_OPT":
        return None if value in _NUMBA_OPT_LEVELS else "is not an optimization level (0, 1, 2, 3 or max)"
    try:
        if name in _NUMBA_INT:
            int(value)
        elif name in _NUMBA_FLOAT:
            float(value)
    except ValueError:
        return f"is not a {'whole ' if name in _NUMBA_INT else ''}number"
    if name in _NUMBA_CC and value and not re.match(r"\d+\.\d+", value):
        return "is not a compute capability (major.minor)"
    if name == "NUMBA_CPU_FEATURES" and value and not all(f.startswith(("+", "-")) for f in value.split(",")):
        return "is not a list of CPU features (+name or -name, separated by commas)"
    return None


def _llvm_refuses(cpu: str | None, features: str | None) -> str | None:
    """What LLVM says of a CPU name and feature list numba would hand it (it ignores an unknown one
    with a line on stderr for every module compiled), or None; None too if LLVM cannot be asked."""
    try:
        import llvmlite.binding as ll

        ll.initialize_native_target()
        target = ll.Target.from_default_triple()
    except Exception:
        return None
    r, w = os.pipe()
    saved = os.dup(2)
    try:
        os.dup2(w, 2)
        os.close(w)
        try:
            target.create_target_machine(cpu=cpu or ll.get_host_cpu_name(), features=features or "")
        except Exception:
            pass
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    try:
        said = os.read(r, 1 << 16).decode("utf-8", "replace")
    finally:
        os.close(r)
    return said.splitlines()[0].strip() if said.strip() else None


def check_environment() -> str | None:
    """None, or why a NUMBA_* setting in the environment cannot be used, naming the variable: a
    value numba cannot parse (above), and a CPU name or feature LLVM does not know
    (NUMBA_CPU_NAME=garbage was ignored with a line per compiled module; a feature without its
    +/- sign aborted the run inside LLVM). NUMBA_NUM_THREADS=0 made every run fail inside numba
    with an internal error. The CLI checks this before anything imports numba."""
    for name in sorted(os.environ):
        if name.startswith("NUMBA_"):
            value = os.environ[name]
            problem = _numba_value_problem(name, value)
            if problem is not None:
                return f"{name}={value!r} {problem}"
    cpu, features = os.environ.get("NUMBA_CPU_NAME"), os.environ.get("NUMBA_CPU_FEATURES")
    if cpu or features:
        said = _llvm_refuses(cpu, features)
        if said is not None:
            which = "NUMBA_CPU_NAME" if "processor" in said or not features else "NUMBA_CPU_FEATURES"
            return f"{which}={os.environ.get(which)!r} is not usable on this machine (LLVM: {said})"
    return None


def _cgroup_quota() -> int | None:
    """Whole cores allowed by a cgroup v2 (cpu.max) or v1 (cfs_quota_us) CPU quota, None if none."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as fh:
            quota, period = fh.read().split()[:2]
        if quota != "max":
            return max(1, math.ceil(int(quota) / int(period)))
        return None
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as fh:
            quota = int(fh.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as fh:
            period = int(fh.read())
        return max(1, math.ceil(quota / period)) if quota > 0 else None
    except (OSError, ValueError):
        return None


def usable_cores() -> int:
    """Cores this process may run on: CPU affinity, bounded by a cgroup quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, min(cores, quota) if quota else cores)


LOADAVG = "/proc/loadavg"


def busy_elsewhere() -> int:
    """Threads of other processes that are runnable right now (0 if unknown): /proc/loadavg's
    running count, less this process's own running threads (at least the one asking). Its own
    are not "elsewhere": a reader's hashing thread, or a pool worker still finishing, counted as
    another process's would cut the run to one thread for the next half second or more (a rise
    needs two readings in a row), seen in a `rankkit train` whose read went on at one thread."""
    try:
        with open(LOADAVG) as fh:
            running = int(fh.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - own_running())


def own_running() -> int:
    """Threads of this process that are runnable right now (state R in /proc/self/task/*/stat),
    at least 1 (the caller); 1 if unknown."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return 1
    n = 0
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:  # the thread ended meanwhile
            continue
        end = stat.rfind(b")")  # the state follows "pid (comm) "
        n += stat[end + 2 : end + 3] == b"R"
    return max(1, n)


def default_threads(limit: int | None = None) -> int:
    """Threads for a run that did not ask for a number: usable cores not busy elsewhere, at least
    one, at most `limit` (numba's pool size)."""
    cores = usable_cores()
    free = max(1, cores - busy_elsewhere())
    return max(1, min(free, cores, limit or cores))


def pool_size() -> int:
    """The most threads a kernel may use: numba's pool size (NUMBA_NUM_THREADS, else the cores this
    process may run on), read without importing numba (a run on ahead-of-time kernels never does)."""
    import sys

    if "numba" in sys.modules:
        return sys.modules["numba"].config.NUMBA_NUM_THREADS
    try:
        return max(1, int(os.environ["NUMBA_NUM_THREADS"]))
    except (KeyError, ValueError):
        pass
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def apply(threads: int | None = None) -> int:
    """Set the kernels' thread count: `threads` if given (bounded by the pool size), else the
    default (looked at again during the run: see count()). Returns the count set."""
    configure_runtime()
    global _count, _fixed, _checked
    pool = pool_size()
    n = max(1, min(threads, pool) if threads is not None else default_threads(pool))
    _count = n
    _fixed = n if threads is not None else None
    _checked = time.monotonic()
    return n


# -- running serial kernels on several threads -------------------------------------------------------
# The per-query sweeps and CSR products are serial numba kernels over a range of items (compiled
# with nogil), run on contiguous ranges from a pool of Python threads. Compared with numba's
# parallel=True (prange) this compiles several times faster (no parfor passes, no gufunc), waits
# without spinning (an idle worker blocks on a queue) and never loads the OpenMP runtime for a
# small input. Each item's result is written on its own and any reduction is done afterwards in
# item order, so results are identical for any number of threads.
_count: int | None = None
_fixed: int | None = None  # a count asked for (--threads, threads=): kept; None: the default
_checked = 0.0  # when the default was last worked out (time.monotonic)
# The default is worked out again when older than this: processes that start together (make -j4)
# each see the others only once they run, and a long run outlives the load it started under.
RECHECK_SECONDS = 0.25
_raise_seen = False  # the last reading allowed more threads (a rise needs two readings in a row:
# processes started together see each other only in turns, and a wrong rise costs more than a late one)
_pool = None
_pool_size = 0
_no_new_threads = False  # a thread could not be started (ulimit -u): every kernel runs on its caller
_local = threading.local()  # .n: this thread's own count (`limited`), e.g. folds run side by side

# Below this much work (rows, non-zeros: the caller's unit) a kernel runs on the calling thread.
MIN_WORK_PER_THREAD = 20_000


def count() -> int:
    """Threads the kernels use now: the value `apply` chose (--threads), else the default; within
    `limited(n)` on this thread, n."""
    global _count, _checked, _raise_seen
    own = getattr(_local, "n", None)
    if own is not None:
        return own
    if _count is None or (_fixed is None and time.monotonic() - _checked > RECHECK_SECONDS):
        n = default_threads(pool_size())
        if _count is not None and n > _count:  # more threads only when two readings in a row say so
            n, _raise_seen = (n, False) if _raise_seen else (_count, True)
        else:
            _raise_seen = False
        _count = n
        _checked = time.monotonic()
    return _count


def explicit() -> int | None:
    """The count asked for with apply(n), or None when the default is in use."""
    return _fixed


@contextlib.contextmanager
def limited(n: int, cancel=None):
    """Kernels called from this thread use n threads (1: run on it alone) until the block ends;
    other threads keep their count. For independent jobs run side by side on a few threads.
    `cancel` (a threading.Event): once set, the next kernel this thread starts raises Cancelled,
    so a job whose run has failed or been interrupted stops within one kernel call, before it
    writes anything."""
    before = getattr(_local, "n", None), getattr(_local, "cancel", None)
    _local.n = max(1, int(n))
    _local.cancel = cancel
    try:
        yield
    finally:
        _local.n, _local.cancel = before


class Cancelled(Exception):
    """Raised in a job run under limited(n, cancel) once `cancel` is set."""


def _check_cancel() -> None:
    cancel = getattr(_local, "cancel", None)
    if cancel is not None and cancel.is_set():
        raise Cancelled()


def split(weights_end: "object", n: int, work: int) -> list[tuple[int, int]]:
    """Contiguous ranges [lo, hi) of n items for the threads, balanced by a cumulative work array
    (weights_end[i] = work of items < i, length n + 1; None: one unit per item). One range when
    the work is small or one thread is used."""
    import numpy as np

    _check_cancel()
    t = min(count(), max(1, work // MIN_WORK_PER_THREAD), n) if n > 0 else 1
    if t <= 1:
        return [(0, n)]
    if weights_end is None:
        cuts = [n * k // t for k in range(t + 1)]
    else:
        total = int(weights_end[-1])
        cuts = [0] + [int(np.searchsorted(weights_end, total * k // t)) for k in range(1, t)] + [n]
        cuts = [min(max(c, 0), n) for c in cuts]
        for k in range(1, len(cuts)):
            cuts[k] = max(cuts[k], cuts[k - 1])
    return [(cuts[k], cuts[k + 1]) for k in range(t) if cuts[k + 1] > cuts[k]] or [(0, n)]


def run(kernel, parts: list[tuple[int, int]], *args) -> list:
    """kernel(*args, lo, hi) for every part, the first on this thread and the others on the pool;
    returns their results in part order."""
    _check_cancel()
    futures = _on_pool(kernel, [(*args, lo, hi) for lo, hi in parts[1:]]) if len(parts) > 1 else None
    if futures is None:
        return [kernel(*args, lo, hi) for lo, hi in parts]
    first = kernel(*args, *parts[0])
    return [first] + [f.result() for f in futures]


def run_each(kernel, n: int, *args) -> None:
    """kernel(*args, c, c + 1) for every item c < n, the items taken one at a time, in turn, by this
    thread and count() - 1 pool threads: a thread whose core is shared (with another process, or
    with this process's own thread hashing the file being read) takes fewer items, where the fixed
    ranges of run() would leave the other threads waiting for its last one. For kernels whose items
    write only their own outputs: which thread takes which item changes no result."""
    _check_cancel()
    t = min(count(), n)
    items = iter(range(n))  # next() on it is atomic (the GIL): each item is taken once

    def take() -> None:
        for c in items:
            kernel(*args, c, c + 1)

    futures = _on_pool(take, [()] * (t - 1)) if t > 1 else None
    take()
    for f in futures or ():
        f.result()


def _on_pool(fn, calls: list[tuple]):
    """fn(*call) for each call submitted to the pool (grown to len(calls) threads): their futures;
    None when no thread can be started (the caller then runs every call on its own thread)."""
    global _pool, _pool_size, _no_new_threads
    if _no_new_threads:
        return None
    try:
        if _pool is None or _pool_size < len(calls):
            from concurrent.futures import ThreadPoolExecutor

            stop_pool()
            _pool_size = len(calls)
            _pool = ThreadPoolExecutor(max_workers=_pool_size, thread_name_prefix="rankkit")
        return [_pool.submit(fn, *call) for call in calls]
    except RuntimeError as exc:  # "can't start new thread" (ulimit -u, a process or memory limit)
        if "can't start new thread" not in str(exc):
            raise
        # the parts are independent and give the same result on any number of threads: all on this
        # one, for the rest of the run, once what the pool had started is done
        _no_new_threads = True
        _pool.shutdown(wait=True, cancel_futures=True)
        _pool, _pool_size = None, 0
        return None


def stop_pool() -> None:
    """Wait for the kernels still running on the pool (after an error or a signal, the calling
    thread stops waiting for them), then end its idle workers."""
    global _pool, _pool_size
    if _pool is not None:
        _pool.shutdown(wait=True)
        _pool, _pool_size = None, 0


# -- Python's garbage collector during a command's start ------------------------------------------
# The cyclic collector runs dozens of full passes over numpy's and numba's objects while they are
# imported (~5% of a small run's CPU), and a run makes next to no cyclic garbage once started. The
# command line (rankkit.cli.main) pauses it for GC_PAUSE_SECONDS, or until kernels are compiled
# (numba's compiler makes cycles). Only a pause rankkit made is ever undone: a Python program that
# turned the collector off itself keeps it off.
GC_PAUSE_SECONDS = 1.0
_gc_paused = False


def pause_gc(seconds: float = GC_PAUSE_SECONDS) -> None:
    global _gc_paused
    import gc

    if not gc.isenabled():
        return
    timer = threading.Timer(seconds, resume_gc)
    timer.daemon = True
    try:
        timer.start()
    except RuntimeError:  # no thread can be started (ulimit -u): no pause, and the run goes on to say so
        return
    gc.disable()
    _gc_paused = True


def resume_gc() -> None:
    global _gc_paused
    import gc

    if _gc_paused:
        _gc_paused = False
        gc.enable()
