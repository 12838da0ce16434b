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


def check_environment() -> str | None:
    """None, or why the thread settings in the environment cannot be used: numba takes
    NUMBA_NUM_THREADS only as a whole number of at least 1 (0 made every run fail inside numba with
    an internal error; a word, a warning and numba's traceback on stderr). The CLI checks this
    before anything imports numba."""
    value = os.environ.get("NUMBA_NUM_THREADS")
    if value is None:
        return None
    try:
        ok = int(value.strip()) >= 1
    except ValueError:
        ok = False
    if not ok:
        return (f"NUMBA_NUM_THREADS={value!r} is not a whole number of threads of at least 1 "
                "(unset it, or use --threads N)")
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


def busy_elsewhere() -> int:
    """Threads of other processes that are runnable right now (0 if unknown): /proc/loadavg's
    running count, less this process's one running thread."""
    try:
        with open("/proc/loadavg") as fh:
            running = int(fh.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - 1)


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
    global _pool, _pool_size
    _check_cancel()
    if len(parts) == 1:
        return [kernel(*args, *parts[0])]
    if _pool is None or _pool_size < len(parts) - 1:
        from concurrent.futures import ThreadPoolExecutor

        stop_pool()
        _pool_size = len(parts) - 1
        _pool = ThreadPoolExecutor(max_workers=_pool_size, thread_name_prefix="rankkit")
    futures = [_pool.submit(kernel, *args, lo, hi) for lo, hi in parts[1:]]
    first = kernel(*args, *parts[0])
    return [first] + [f.result() for f in futures]


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
    gc.disable()
    _gc_paused = True
    timer = threading.Timer(seconds, resume_gc)
    timer.daemon = True
    timer.start()


def resume_gc() -> None:
    global _gc_paused
    import gc

    if _gc_paused:
        _gc_paused = False
        gc.enable()
