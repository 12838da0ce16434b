"""Worker processes that die with their parent.

`path --folds --jobs N` (and any other pool of worker processes) calls `die_with_parent()` in each
worker's initializer. A parent that unwinds (an error, SIGINT, SIGTERM) stops its workers itself;
one killed where no handler runs (SIGKILL: `timeout -s KILL`, systemd's final kill, the
out-of-memory killer) cannot, and its workers used to live on, holding the parent's stdout and
stderr (so `$(...)`, a pipe or `communicate()` waiting on them hung) and multiprocessing's resource
tracker with them. Here the kernel kills the worker when its parent dies (Linux's
PR_SET_PDEATHSIG); elsewhere, and as a second guard, a daemon thread notices the parent is gone
within half a second. When the workers are gone the resource tracker sees its pipe close and ends.
Imports nothing from rankkit."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
_POLL_SECONDS = 0.5


def _parent_pid() -> int | None:
    import multiprocessing

    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None else None


def die_with_parent() -> None:
    """In a worker process: end it (SIGKILL, no clean-up: it writes nothing the parent has not
    taken over) as soon as the process that started it is gone."""
    parent = _parent_pid()
    if parent is None:  # not started by multiprocessing: nothing to follow
        return
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the request above took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(_POLL_SECONDS)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="rankkit-parent-watch", daemon=True).start()


def _spawn_in_own_session(path, args, passfds):
    """multiprocessing.util.spawnv_passfds, the child started in a session of its own."""
    import subprocess

    proc = subprocess.Popen(args, executable=path, pass_fds=tuple(sorted(map(int, passfds))), close_fds=True,
                            restore_signals=False, start_new_session=True)
    # multiprocessing waits for this pid itself: a returncode set means Popen never reaps it
    proc.returncode = 0
    return proc.pid


_own_session = False


def workers_in_their_own_session() -> None:
    """For the command line only (it owns the process): every worker process it spawns from here on
    (multiprocessing's spawn: `path --jobs`, a `--dask local` cluster's workers and the workers its
    nannies restart, the resource tracker) starts in a session of its own, so a Ctrl-C or a signal
    sent to the command's process group reaches the command line alone, which stops its workers
    itself and says so in one line.

    A worker that shared the group got the signal too, and one that got it in its first tenth of a
    second (before Python had imported rankkit, whose first step in a spawned worker ignores SIGINT)
    printed a KeyboardInterrupt traceback. A worker still ends with its parent when no handler runs
    (SIGKILL): die_with_parent() for the pools, Dask's own parent-alive pipe for its workers.
    Takes effect at before_spawning() (multiprocessing is not imported for a command that spawns nothing)."""
    global _own_session
    _own_session = True
    if "multiprocessing.util" in sys.modules:
        before_spawning()


def before_spawning() -> None:
    """Called where worker processes are about to be started."""
    if not _own_session or not sys.platform.startswith(("linux", "darwin", "freebsd")):
        return
    import multiprocessing.util as util

    if util.spawnv_passfds is not _spawn_in_own_session:
        util.spawnv_passfds = _spawn_in_own_session
