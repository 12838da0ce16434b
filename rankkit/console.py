"""Standard streams that can never cost a result.

A cron job may close stderr (`2>&-`), pipe it into `head -1`, or point it at a full device. A
message that cannot be written is dropped, and after the first failure stderr is not tried again:
the model is still written and the exit status still tells the truth. Results on stdout are
different: a stdout that cannot take them (closed, full) is an error (UsageError, exit 2), and a
reader that stopped early (`| head`) ends the command quietly (BrokenPipeError, exit 0).
Imports only rankkit.errors.
"""

from __future__ import annotations

import errno
import io
import os
import sys

from rankkit.errors import UsageError

_stderr_ok = True
_stdout_closed = False


def guard_standard_fds() -> None:
    """Give closed descriptors 0-2 a /dev/null, so that a file opened later never lands on fd 1 or 2
    (a model file written into by a stray message), and remember that stdout was closed."""
    global _stdout_closed, _stderr_ok
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
        except OSError:
            continue
        if fd == 1:
            _stdout_closed = True
            sys.stdout = _ClosedStdout()
        elif fd == 2:
            _stderr_ok = False
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115


class _ClosedStdout(io.TextIOBase):
    """sys.stdout when the command was started with it closed (`>&-`): writing results (or click's
    help and version text) there raises the one-line error; a command that writes nothing to
    stdout (train) is unaffected."""

    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        if not text:
            return 0
        raise stdout_error()

    def fileno(self) -> int:
        return 1

    def isatty(self) -> bool:
        return False


class WholeWrites(io.FileIO):
    """A file descriptor whose write() writes everything or raises. Python's buffered writer returns
    a short count when the device fills up in the middle of a write (a full disk, RLIMIT_FSIZE: 16 KB
    of a 162 KB run, the rest dropped), and its text layer ignores the count: every result stream
    (stdout, and each file atomic_open writes) goes through this, so that the error surfaces."""

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        total = view.nbytes
        done = 0
        while done < total:
            n = super().write(view[done:])
            if n is None:  # non-blocking and would block: the caller asked for it
                return done
            if n == 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            done += n
        return total


def whole_writes_stdout() -> None:
    """Replace sys.stdout (a text layer over a buffered writer over fd 1) by the same layers over
    WholeWrites(1): a write to stdout that the device takes only in part raises, never drops the
    rest. A stdout that is not fd 1 (a test's capture) is left as it is."""
    stream = sys.stdout
    try:
        if stream is None or isinstance(stream, _ClosedStdout) or stream.fileno() != 1:
            return
        if isinstance(getattr(getattr(stream, "buffer", None), "raw", None), WholeWrites):
            return
        stream.flush()
        raw = WholeWrites(1, "w", closefd=False)
        buffered = io.BufferedWriter(raw)
        sys.stdout = io.TextIOWrapper(buffered, encoding=stream.encoding, errors=stream.errors,
                                      line_buffering=stream.line_buffering,
                                      write_through=getattr(stream, "write_through", False))  # python -u
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return


def stdout_error(exc: OSError | None = None) -> UsageError:
    """The error for results that cannot reach stdout; what is still buffered is discarded."""
    reason = "it is closed" if exc is None else (exc.strerror or str(exc))
    silence_stdout()
    return UsageError(f"cannot write standard output: {reason}")


def check_stdout() -> None:
    if _stdout_closed:
        raise stdout_error()


def out(text: str) -> None:
    """One line of results on stdout."""
    check_stdout()
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        raise stdout_error(exc if isinstance(exc, OSError) else None) from None


def say(msg: str) -> None:
    """Write one line to stderr; drop it (and every later one) if stderr is closed, broken or full."""
    global _stderr_ok
    if not _stderr_ok:
        return
    stream = sys.stderr
    try:
        if stream is None:
            raise OSError("no stderr")
        stream.write(msg + "\n")
        stream.flush()
    except (OSError, ValueError):  # EPIPE, EBADF, ENOSPC, or a closed file object
        _stderr_ok = False
        _silence(2)


def note(msg: str) -> None:
    say(f"rankkit: note: {msg}")


def warn(msg: str) -> None:
    say(f"rankkit: warning: {msg}")


def _silence(fd: int) -> None:
    """Point a dead stream at /dev/null so that nothing later (numba, Python's final flush) trips on it."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass
    stream = sys.stderr if fd == 2 else sys.stdout
    try:
        if stream is not None:
            stream.flush()
    except (OSError, ValueError):
        pass
    replacement = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    if fd == 2:
        sys.stderr = replacement
    else:
        sys.stdout = replacement


def silence_stdout() -> None:
    """After a broken pipe on stdout (`rankkit predict ... | head`): discard whatever is still buffered."""
    _silence(1)
