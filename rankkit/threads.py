"""How many threads rankkit's parallel kernels use by default, and how idle threads wait.

Results never depend on the number of threads (every parallel kernel splits its work by the shape
of the data, not by thread), so the policy here is about speed only:

- Idle threads sleep instead of spinning. numba's OpenMP layer (GNU libgomp here) spins for a
  while at every barrier by default; with other busy processes (make -j4, a shared host) the
  spinning threads hold cores that the threads they wait for need, and a fit ran 10-20x slower
  than with one thread. `OMP_WAIT_POLICY=PASSIVE` (and `KMP_BLOCKTIME=0` for Intel's OpenMP) must
  be in the environment before numba loads its threading layer: `configure_runtime()` is called
  by `rankkit.objectives._numba` before it imports numba. A value the user set is kept.
- The default thread count is the cores this process may use (CPU affinity, a cgroup CPU quota,
  NUMBA_NUM_THREADS), less the cores other processes are busy on when the run starts (the
  runnable count in /proc/loadavg), and at least one. `--threads N` overrides it.
"""

from __future__ import annotations

import math
import os

_WAIT_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}


def configure_runtime() -> None:
    """Sleep, do not spin, in idle OpenMP threads (unless the user chose otherwise)."""
    for key, value in _WAIT_DEFAULTS.items():
        os.environ.setdefault(key, value)


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


def apply(threads: int | None = None) -> int:
    """Set numba's thread count: `threads` if given (bounded by the pool size), else the default.
    Returns the count set."""
    configure_runtime()
    import numba

    pool = numba.config.NUMBA_NUM_THREADS
    n = min(threads, pool) if threads is not None else default_threads(pool)
    numba.set_num_threads(max(1, n))
    return max(1, n)
