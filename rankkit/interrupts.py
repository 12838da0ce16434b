"""How SIGINT, SIGTERM and SIGHUP stop a run: the CLI installs `on_signal`, which raises
errors.Interrupted in the main thread, so that every `finally` and atomic write cleans up and the
CLI exits 128 + signal. Later signals wait for that clean-up to finish.

`hold()` / `release()` bracket the few steps where an exception would leave something behind that
nothing could clean (a temporary file created but not yet named in the `try` that removes it): a
signal arriving meanwhile is recorded, and `release()` raises it. Imports nothing above errors."""

from __future__ import annotations

import sys
import threading

from rankkit.errors import Interrupted

_received: list[int] = []  # the first signal, once one arrived
_deferred: list[int] = []  # a signal that arrived while held, raised by release()
_holding = 0


def on_signal(signum, frame) -> None:
    """The handler the CLI installs for SIGINT, SIGTERM and SIGHUP (runs in the main thread)."""
    if _received:
        return
    _received.append(signum)
    if _holding:
        _deferred.append(signum)
        return
    raise Interrupted(signum)


_decided_by_commit = False


def decided_by_commit() -> None:
    """For a command whose outputs are all written at its end (train, predict, convert): once an
    output has replaced its file the outcome is decided, so a signal after that waits for the end
    of the run (which then exits 0 with every output new), never 128 + N with a file already replaced."""
    global _decided_by_commit
    _decided_by_commit = True


def commit_decides() -> bool:
    return _decided_by_commit


def received() -> int | None:
    """The signal that asked the run to stop, or None."""
    return _received[0] if _received else None


def _main_thread() -> bool:  # the handler runs there only: a hold elsewhere would delay it for nothing
    return threading.current_thread() is threading.main_thread()


def hold() -> None:
    global _holding
    if _main_thread():
        _holding += 1


def release() -> None:
    """End one hold(); with no hold left, raise the signal that arrived meanwhile, if any."""
    global _holding
    if not _main_thread():
        return
    _holding = max(0, _holding - 1)
    if _holding == 0 and _deferred:
        raise Interrupted(_deferred.pop())


def _unraisable(hook_args, previous=sys.unraisablehook) -> None:
    """sys.unraisablehook while the CLI's handlers are installed: the signal's exception raised
    where Python cannot propagate it (a weakref callback of the import system, a __del__) is not
    printed ("Exception ignored in ...", a traceback); the signal is kept for the next release()
    and for the CLI's check when the command returns."""
    if isinstance(hook_args.exc_value, Interrupted):
        if not _deferred:
            _deferred.append(hook_args.exc_value.signum)
        return
    previous(hook_args)


def install_unraisable_hook() -> None:
    sys.unraisablehook = _unraisable
