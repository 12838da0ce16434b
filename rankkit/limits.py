"""What a run that cannot get memory does: exit status 3 (errors.EXIT_RESOURCES) and one line on
stderr saying so, whichever allocation failed: a MemoryError from numpy or Python, numba's compiler
library that cannot be mapped under an address-space limit (`ulimit -v`), or a limit too small for
Python and numpy to start at all. The CLI calls `prepare()` first and maps failures with
`out_of_resources(exc)` (memory, and file descriptors, threads and processes: exit 3 too).
Imports nothing above errors; numpy is not imported here."""

from __future__ import annotations

import errno
import os
import sys

from rankkit.errors import ResourceError

MB = 1 << 20
# The address space a small run needs: Python, numpy with one OpenBLAS thread, numba's compiler
# library and its threads (a `train` of the bundled sample peaks at ~480 MB of virtual memory).
# Below it, the failures are other programs' exits that rankkit cannot catch (OpenBLAS's "Memory
# allocation still failed" and status 1, LLVM's "Unable to allocate section memory" and an abort),
# so a smaller `ulimit -v` is refused at once.
START_BYTES = 512 * MB


def address_limit() -> int | None:
    """The soft address-space limit (`ulimit -v`) in bytes, None when there is none."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError):
        return None
    return None if soft in (resource.RLIM_INFINITY, -1) or soft < 0 else int(soft)


def available() -> int | None:
    """Memory the machine can still give (MemAvailable), None when unknown."""
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _mb(n: int) -> str:
    return f"{n / MB:,.0f} MB"


def limits_text() -> str:
    parts = []
    limit = address_limit()
    if limit is not None:
        parts.append(f"address-space limit (ulimit -v) {_mb(limit)}")
    free = available()
    if free is not None:
        parts.append(f"{_mb(free)} available on this machine")
    return "; ".join(parts)


def prepare() -> None:
    """Before numpy is imported: under an address-space limit, OpenBLAS gets one thread unless the
    user chose a count (each OpenBLAS thread reserves buffers; under `ulimit -v` a second one can
    make numpy's import fail with OpenBLAS's own message and exit status 1, which rankkit could not
    catch), and a limit below what Python and numpy need to start is refused at once (exit 3)."""
    limit = address_limit()
    if limit is None:
        return
    if "numpy" not in sys.modules and not any(os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
    if limit < START_BYTES:
        raise ResourceError(f"out of memory: the address-space limit (ulimit -v) of {_mb(limit)} is below the "
                            f"{_mb(START_BYTES)} rankkit needs (numpy, OpenBLAS and numba's compiler map it)")


def out_of_memory(exc: BaseException) -> ResourceError | None:
    """The ResourceError for an exception that means memory could not be had, else None."""
    if isinstance(exc, MemoryError):
        what = "an allocation failed"
    elif isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        what = "the system could not allocate memory"
    elif isinstance(exc, OSError) and "llvmlite" in str(exc) and address_limit() is not None:
        # numba's compiler library cannot be mapped under the limit (numba words it as a missing file)
        what = "numba's compiler (llvmlite) could not be loaded into the address space left"
    elif isinstance(exc, ImportError) and address_limit() is not None and any(
            t in str(exc) for t in ("failed to map segment", "cannot allocate memory", "Cannot allocate memory")):
        what = f"a compiled module could not be loaded into the address space left ({exc.name or 'a library'})"
    else:
        return None
    detail = limits_text()
    return ResourceError(f"out of memory: {what}" + (f" ({detail})" if detail else ""))


def _rlimit_text(name: str, what: str, shell: str) -> str:
    try:
        import resource

        soft, _ = resource.getrlimit(getattr(resource, name))
    except (ImportError, AttributeError, OSError, ValueError):
        return ""
    return "" if soft in (getattr(resource, "RLIM_INFINITY", -1), -1) else f" (the limit, {shell}, is {soft} {what})"


def _starting_a_process(exc: BaseException) -> bool:
    """The error was raised while starting a process (fork, spawn: EAGAIN under `ulimit -u`), not
    by a non-blocking read or write."""
    tb = exc.__traceback__
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        if module.startswith(("subprocess", "multiprocessing", "concurrent.futures.process")):
            return True
        tb = tb.tb_next
    return False


def out_of_resources(exc: BaseException) -> ResourceError | None:
    """The ResourceError for an exception that means the run could not get memory, a file
    descriptor, a thread or a process (EMFILE under `ulimit -n`, Python's "can't start new thread"
    and EAGAIN from fork under `ulimit -u`), looked for along the exception's causes (a pool
    reports a worker's failure as its own); else None. Exit status 3: the machine's or the
    account's limits, not the input, stopped the run."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        short = out_of_memory(exc)
        if short is not None:
            return short
        if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
            limit = _rlimit_text("RLIMIT_NOFILE", "files", "ulimit -n") if exc.errno == errno.EMFILE else ""
            return ResourceError(f"out of file descriptors: too many open files{limit}")
        if (isinstance(exc, RuntimeError) and "can't start new thread" in str(exc)) or (
                isinstance(exc, OSError) and exc.errno == errno.EAGAIN and _starting_a_process(exc)):
            limit = _rlimit_text("RLIMIT_NPROC", "processes and threads", "ulimit -u")
            return ResourceError(f"cannot start a thread or process: the system refused it{limit}")
        exc = exc.__cause__ or exc.__context__
    return None

