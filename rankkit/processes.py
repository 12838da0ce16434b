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

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
_POLL_SECONDS = 0.5


def _parent_pid() -> int | None:
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
