"""Write files atomically: a temporary file in the same directory, fsync, then rename over the
target. A reader (say a cron job loading the model) sees either the old file or the new one,
never half of one, and a failed run leaves the old file in place. `-` means standard output."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

from rankkit.errors import UsageError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_writable(path: str) -> None:
    """Raise the UsageError atomic_open(path) would raise for a missing or unwritable directory,
    before a long computation whose result would then be lost."""
    if path == "-":
        return
    target = os.path.abspath(path)
    if os.path.isdir(target):
        raise UsageError(f"cannot write '{path}': it is a directory")
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise UsageError(f"cannot write '{path}': directory '{directory}' does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write '{path}': permission denied")


@contextlib.contextmanager
def atomic_open(path: str, binary: bool = False):
    if path == "-":
        yield sys.stdout.buffer if binary else sys.stdout
        (sys.stdout.buffer if binary else sys.stdout).flush()
        return
    target = os.path.realpath(path)  # write through symlinks: replace the file, not the link
    if os.path.isdir(target):
        raise UsageError(f"cannot write '{path}': it is a directory")
    if os.path.exists(target) and not os.path.isfile(target):
        # a device or a pipe (/dev/stdout, a FIFO): it cannot be replaced, so write to it directly
        try:
            with open(target, "wb" if binary else "w", encoding=None if binary else "utf-8") as fh:
                yield fh
        except OSError as exc:
            raise UsageError(f"cannot write '{path}': {exc.strerror or exc}") from None
        return
    directory = os.path.dirname(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    except FileNotFoundError:
        raise UsageError(f"cannot write '{path}': directory '{directory}' does not exist") from None
    except PermissionError:
        raise UsageError(f"cannot write '{path}': permission denied") from None
    except OSError as exc:
        raise UsageError(f"cannot write '{path}': {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8", newline=None if binary else "\n") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):  # disk full, quota, read-only file system: one line, old file kept
            raise UsageError(f"cannot write '{path}': {exc.strerror or exc} (any previous file is unchanged)") from None
        raise
