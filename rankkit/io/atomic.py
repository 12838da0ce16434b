"""Write files atomically: a temporary file in the same directory, fsync, then rename over the
target. A reader (say a cron job loading the model) sees either the old file or the new one,
never half of one, and a failed or interrupted run (an exception, SIGINT, SIGTERM, SIGHUP: the
CLI turns those signals into an exception) removes its temporary file and leaves the old file in
place. A replaced file keeps its permission bits (and, where we may set them, owner and group).
`-` means standard output; a write error there (a full device, a closed stream) is a UsageError.

`check_output` is the output guard of every writer and every face (the command line's outputs,
`RankSVM.save`, `dump_svmlight_file`, Dask outputs), run before any work: an output must be
writable, must not be one of the command's inputs (compared by device and inode, so links and other
spellings of the path count), never replaces LETOR/SVMlight data unless it is data itself, and only
a model replaces a model (a compressed file is judged by its decompressed start).

Every output path is resolved here, link by link, with the kernel's protected_symlinks rule
(resolve_output): in a sticky world-writable directory a link, FIFO, device or socket planted by a
user who is neither the caller nor the directory's owner is refused. FIFOs are opened without
blocking (FIFO_WAIT seconds for a reader); every write is whole or raises (console.WholeWrites);
`output_directory` checks and creates an `--out-dir`."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import re
import secrets
import stat
import sys
import time

from rankkit import console, interrupts
from rankkit.errors import UsageError
from rankkit.io.files import COMPRESSED


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _resolved(path: str, real: bool = True) -> str:
    """The absolute (real) path; a UsageError when a relative path cannot be resolved because the
    working directory was deleted under the run."""
    try:
        return os.path.realpath(path) if real else os.path.abspath(path)
    except FileNotFoundError:
        raise UsageError(f"cannot write '{path}': the working directory no longer exists") from None


def _check_names_a_file(path: str) -> None:
    """`model/` or `out/.` names a directory, never a file: refused, rather than writing a file
    called `model` (or into an existing directory, which is already refused as a directory)."""
    if os.path.isdir(path):
        raise UsageError(f"cannot write '{path}': it is a directory")
    seps = (os.sep, os.altsep) if os.altsep else (os.sep,)
    if path.endswith(seps) or os.path.basename(path) in (".", ".."):
        raise UsageError(f"cannot write '{path}': the name ends with '{path[-1]}', so it names a directory "
                         "(which does not exist), not a file")


# -- shared directories ------------------------------------------------------------------------
# rankkit runs as root and as service accounts in directories other users can write (/tmp, shared
# project directories). The kernel's protected_symlinks rule is off on many machines, and a writer
# that resolves a link and renames over its target is not protected by it anyway, so rankkit applies
# it itself to every output path, every component of it: in a sticky world-writable directory a
# symbolic link is followed only when it belongs to the caller or to the directory's owner. A FIFO,
# device or socket there is written into only under the same condition (protected_fifos).
def _shared(st: os.stat_result) -> bool:
    """A sticky directory anyone can write (/tmp)."""
    return bool(st.st_mode & stat.S_ISVTX) and bool(st.st_mode & stat.S_IWOTH)


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _trusted(st: os.stat_result, directory: str) -> bool:
    """`st`, found in `directory`, may be followed or written into by this process."""
    if not hasattr(os, "geteuid"):
        return True  # no owners to compare (not a POSIX system)
    try:
        dst = os.stat(directory)
    except OSError:
        return True  # nothing to judge by: the open that follows reports the problem
    return not _shared(dst) or st.st_uid in (os.geteuid(), dst.st_uid)


def resolve_output(path: str) -> tuple[str, os.stat_result | None]:
    """Resolve `path` as the kernel would, component by component, and refuse (UsageError naming it
    and its owner) a symbolic link met on the way that another user planted in a sticky
    world-writable directory, and a FIFO, device or socket at the end of the path planted there the
    same way. Returns the resolved path and the lstat of what it names (None: it does not exist, or
    it is reached through a link into /proc that names no file, as /dev/stdout on a pipe)."""
    path = os.fspath(path)
    try:
        current = os.sep if os.path.isabs(path) else os.getcwd()
    except FileNotFoundError:
        raise UsageError(f"cannot write '{path}': the working directory no longer exists") from None
    todo = [c for c in path.split(os.sep)][::-1]
    links = 0
    st = None
    while todo:
        name = todo.pop()
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)
            st = None
            continue
        candidate = os.path.join(current, name)
        try:
            st = os.lstat(candidate)
        except OSError:  # does not exist (a new output), or cannot be reached: the open will say
            return os.path.join(candidate, *todo[::-1]), None
        if stat.S_ISLNK(st.st_mode):
            if not _trusted(st, current):
                what = "it" if candidate == os.path.abspath(path) else f"'{candidate}'"
                raise UsageError(f"refusing to write '{path}': {what} is a symbolic link owned by {_owner(st.st_uid)} "
                                 f"in the shared directory '{current}' (sticky, world-writable), neither yours nor "
                                 "the directory owner's: rankkit follows such a link only then")
            links += 1
            try:
                target = os.readlink(candidate)
            except OSError:
                return os.path.join(candidate, *todo[::-1]), None
            if links > 40:  # a loop: the open reports it
                return os.path.join(candidate, *todo[::-1]), None
            if os.path.isabs(target):
                current = os.sep
            todo.extend(target.split(os.sep)[::-1])
            st = None
            continue
        current = candidate
    if st is not None and (stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                           or stat.S_ISSOCK(st.st_mode)):
        directory = os.path.dirname(current)
        if not _trusted(st, directory):
            what = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                    else "a device")
            raise UsageError(f"refusing to write '{path}': it is {what} owned by {_owner(st.st_uid)} in the shared "
                             f"directory '{directory}' (sticky, world-writable), neither yours nor the directory "
                             "owner's: rankkit writes into one only then")
    return current, st


def _check_name(path: str, what: str = "write") -> None:
    if path == "":
        raise UsageError(f"cannot {what} '': an empty name names no file (give a path)")


def check_output_directory(path) -> str:
    """The checks of output_directory without creating anything: no empty name, no link planted in
    a shared directory, not something other than a directory."""
    path = os.fspath(path)
    if path == "":
        raise UsageError("the output directory '' (an empty name) names no directory: give '.' for the current one")
    _, st = resolve_output(path)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"cannot use '{path}' as the output directory: it exists and is not a directory")
    return path


def output_directory(path) -> str:
    """The directory an option names for outputs (`--out-dir`, Python `out_dir`), checked by the
    rules of every output (no empty name, no link planted in a shared directory) and created."""
    path = check_output_directory(path)
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        if os.path.islink(path):
            raise UsageError(f"cannot use '{path}' as the output directory: a symbolic link to "
                             f"'{os.readlink(path)}', which does not exist") from None
        raise UsageError(f"cannot use '{path}' as the output directory: it exists and is not a directory") from None
    except OSError as exc:
        raise UsageError(f"cannot use '{path}' as the output directory: cannot create it: "
                         f"{exc.strerror or exc}") from None
    return path


def check_writable(path: str) -> None:
    """Raise the UsageError atomic_open(path) would raise for a missing or unwritable directory,
    or a link, FIFO or device planted by another user (resolve_output), before a long computation
    whose result would then be lost."""
    if path == "-":
        return
    _check_name(path)
    resolve_output(path)
    if _is_stream(path):
        return
    _check_names_a_file(path)
    target = _resolved(path, real=False)
    if os.path.isdir(target):
        raise UsageError(f"cannot write '{path}': it is a directory")
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise UsageError(f"cannot write '{path}': directory '{directory}' does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write '{path}': permission denied")


def _is_stream(path: str) -> bool:
    """A pipe, socket or device (`/dev/stdout`, a FIFO): written into directly, never replaced."""
    try:
        return not os.path.isdir(path) and not os.path.isfile(path) and os.path.exists(path)
    except OSError:
        return False


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist yet: the same path, spelled two ways?
        return _resolved(a) == _resolved(b)


_DATA_LINE = re.compile(rb"^\s*\S+\s+(qid:\S+\s+)?[0-9]+:\S")


def _head(path: str, size: int = 4096) -> bytes:
    """The first `size` bytes of a file, decompressed when it starts with a gzip/bz2/xz magic."""
    with open(path, "rb") as fh:
        head = fh.read(size)
    for _, opener, magic in COMPRESSED.values():
        if head.startswith(magic):
            try:
                with opener(path, "rb") as fh:
                    return fh.read(size)
            except Exception:  # a damaged archive: judged by its raw bytes (it holds neither)
                return head
    return head


def _holds(path: str) -> str | None:
    """What an existing regular file holds, judged from its first line (for data, the first line
    that is not blank nor a comment, as dump_svmlight_file writes a header): 'model', 'data', or
    None."""
    try:
        head = _head(path)
    except OSError:
        return None
    if head.startswith(b"rankkit-model"):
        return "model"
    lines = [ln for ln in head.splitlines() if ln.strip() and not ln.lstrip().startswith(b"#")]
    first = lines[0] if lines else b""
    if b"qid:" in first or _DATA_LINE.match(first):
        return "data"
    return None


OUTPUT_KINDS = ("file", "scores", "model", "data")


def check_output(path, inputs=(), kind: str = "file", outputs=()) -> None:
    """The output guard every writer calls before any work.

    `path` (str or path-like; None and `-` pass) must be writable (not a directory, in an existing
    writable directory), none of `inputs` nor of the command's other `outputs`, and must not
    replace a non-empty file holding something else. `kind` is what will be written:

    - "model": a rankkit model; replaces only a rankkit model (never data, never any other file);
    - "data": LETOR/SVMlight data; replaces data or another file, never a rankkit model;
    - "scores", "file": scores, tables, runs; never replace data nor a rankkit model.

    Raises UsageError naming the path."""
    if kind not in OUTPUT_KINDS:
        raise ValueError(f"check_output: kind must be one of {OUTPUT_KINDS}, not {kind!r}")
    if path is None or path == "-":
        return
    path = os.fspath(path)
    _check_name(path)
    for other in inputs:
        if other is not None and other != "-" and _same_file(path, other):
            raise UsageError(f"refusing to write '{path}': it is the input file '{other}' (an output never replaces an input)")
    for other in outputs:
        if other is not None and other != "-" and _same_file(path, other):
            raise UsageError(f"refusing to write '{path}': it is also the output '{other}' (each output needs its own file)")
    check_writable(path)
    target = _resolved(path)
    if os.path.isfile(target) and os.path.getsize(target) > 0:
        holds = _holds(target)
        what = {"model": "a model", "scores": "scores"}.get(kind, "this output")
        if holds == "data" and kind != "data":
            raise UsageError(f"refusing to replace '{path}': it holds LETOR/SVMlight data, not {what}")
        if holds == "model" and kind != "model":
            raise UsageError(f"refusing to replace '{path}': it is a rankkit model, not {what} (remove it first to reuse the name)")
        if kind == "model" and holds != "model":
            raise UsageError(f"refusing to replace '{path}': it is not a rankkit model file (remove it first to reuse the name)")


@contextlib.contextmanager
def _stdout(binary: bool):
    console.check_stdout()
    stream = sys.stdout.buffer if binary else sys.stdout
    try:
        yield stream
        stream.flush()
    except BrokenPipeError:
        raise  # `| head`: the reader has all it wants; the CLI ends quietly with status 0
    except OSError as exc:  # a full device, a bad descriptor
        raise console.stdout_error(exc) from None


def _keep_mode_and_owner(tmp: str, target: str) -> None:
    """The replacement keeps the replaced file's permission bits, and its owner and group where we
    are allowed to set them; a new file gets the usual 0666 & ~umask."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        os.chmod(tmp, 0o666 & ~_umask())
        return
    os.chmod(tmp, st.st_mode & 0o7777)
    if hasattr(os, "chown"):
        try:
            os.chown(tmp, st.st_uid, st.st_gid)
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EACCES):
                raise


# -- temporary files ---------------------------------------------------------------------------
# A temporary file is named `.NAME.~PID-HOST.XXXXXXXX.tmp`: the writing process and (a short hash of)
# its host; NAME is cut (at a character boundary) when the whole would not fit the file system's
# limit on a name (255 bytes), so that every name the file system accepts can be written. A run
# killed where no handler runs (SIGKILL: `timeout -s KILL`, the out-of-memory killer, a power cut)
# leaves its temporary file; the next write of the same NAME removes those whose writer is gone (same
# host, pid no longer running) and that belong to the caller. Temporary files of other users, of
# other hosts (a shared NFS directory) and of running processes are never touched.
def _host_tag() -> str:
    # the host name as socket.gethostname() gives it (uname's node name), without importing socket
    # (a few milliseconds of every run's start)
    if hasattr(os, "uname"):
        host = os.uname().nodename
    else:
        import socket

        host = socket.gethostname()
    return hashlib.sha1(host.encode("utf-8", "surrogateescape")).hexdigest()[:6]


_RANDOM = 8  # hex digits of a temporary name's random part


def _name_max(directory: str) -> int:
    try:
        return os.pathconf(directory or ".", "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 255


_TAIL = len("..~9999999-abcdef.") + _RANDOM + len(".tmp")  # all but NAME, for a pid of up to 7 digits


def _stem(directory: str, base: str) -> str:
    """`base`, cut (the same way for every writer, whatever its pid) so that a temporary name
    `.{stem}.~PID-HOST.XXXXXXXX.tmp` fits the file system's limit on a name."""
    raw = os.fsencode(base)
    room = max(_name_max(directory) - _TAIL, 1)
    if len(raw) <= room:
        return base
    cut = room
    while cut > 1 and 0x80 <= raw[cut] < 0xC0:  # not inside a UTF-8 character
        cut -= 1
    return os.fsdecode(raw[:cut])


def _temp_prefix(base: str, directory: str = ".") -> str:
    return f".{_stem(directory, base)}.~{os.getpid()}-{_host_tag()}."


_TEMP = re.compile(r"~([0-9]+)-([0-9a-f]{6})\.[^.]+\.tmp\Z")
_LEGACY_TEMP = re.compile(r"[A-Za-z0-9_]{8}\.tmp\Z")  # `.NAME.XXXXXXXX.tmp` of earlier versions (no pid)
_LEGACY_AGE = 24 * 3600  # seconds: such a file untouched for a day belongs to no running write


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process (or cannot tell): keep its file
    return True


def remove_stale_temporaries(directory: str, base: str) -> list[str]:
    """Remove the caller's own temporary files of earlier writes of `directory/base` whose writer is
    gone; returns their names. Never raises: a directory that cannot be listed simply keeps its files."""
    prefix = f".{_stem(directory, base)}."
    removed = []
    try:
        names = [n for n in os.listdir(directory or ".") if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return removed
    host = _host_tag()
    now = time.time()
    me = os.geteuid() if hasattr(os, "geteuid") else None
    for name in names:
        rest = name[len(prefix):]
        full = os.path.join(directory, name)
        m = _TEMP.match(rest)
        try:
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode) or (me is not None and st.st_uid != me):
                continue  # another user's file (or not a file): never ours to remove
            if m is not None:
                if m.group(2) != host or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
                    continue
            elif not (_LEGACY_TEMP.match(rest) and now - st.st_mtime > _LEGACY_AGE):
                continue
            os.unlink(full)
            removed.append(name)
        except OSError:
            continue
    return removed


def _create_temporary(directory: str, base: str) -> tuple[int, str]:
    """A new temporary file for `directory/base`, created (never opened through a link) by this
    process: its descriptor and path."""
    prefix = _temp_prefix(base, directory)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(directory, f"{prefix}{secrets.token_hex(_RANDOM // 2)}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name")


def _writer(fd: int, binary: bool, newline: str | None):
    """A file object over `fd` whose every write is whole or raises (console.WholeWrites)."""
    buffered = io.BufferedWriter(console.WholeWrites(fd, "w", closefd=True))
    return buffered if binary else io.TextIOWrapper(buffered, encoding="utf-8", newline=newline)


FIFO_WAIT = 5.0  # seconds a FIFO output is given to find a reader


def _open_stream(path: str, target: str, binary: bool, named_fifo: bool):
    """Open a FIFO, device or pipe for writing without ever hanging: a FIFO nobody reads is given
    FIFO_WAIT seconds to find a reader, then refused; a pipe whose reader is gone is a broken pipe."""
    deadline = time.monotonic() + FIFO_WAIT
    flags = os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        try:
            fd = os.open(target, flags)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO or not named_fifo and not _is_fifo(target):
                raise UsageError(f"cannot write '{path}': {exc.strerror or exc}") from None
            if not named_fifo:  # a pipe (/dev/stdout, /dev/fd/N) whose reader has gone: as `| head`
                raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE)) from None
            if time.monotonic() >= deadline:
                raise UsageError(f"cannot write '{path}': it is a FIFO that no process reads (waited "
                                 f"{FIFO_WAIT:g} s for a reader)") from None
            time.sleep(0.05)
    try:
        os.set_blocking(fd, True)
        return _writer(fd, binary, None)
    except BaseException:
        os.close(fd)
        raise


def _is_fifo(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def atomic_open(path: str, binary: bool = False):
    if path == "-":
        with _stdout(binary) as stream:
            yield stream
        return
    path = os.fspath(path)
    _check_name(path)
    # write through symlinks (replace the file, not the link), the links and special files of
    # shared directories judged as the kernel's protected_symlinks/protected_fifos would
    target, st = resolve_output(path)
    stream = None
    if st is None and _is_stream(path):
        stream, named = path, False  # /dev/stdout -> /proc/self/fd/1 -> 'pipe:[...]': open it as given
    elif st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        stream, named = target, stat.S_ISFIFO(st.st_mode)
    if stream is not None:
        # a device or a pipe (/dev/stdout, a FIFO): it cannot be replaced, so write to it directly
        try:
            with _open_stream(path, stream, binary, named) as fh:
                yield fh
        except BrokenPipeError:
            raise  # `| head` on /dev/stdout: the reader has all it wants; the CLI ends quietly with status 0
        except OSError as exc:
            raise UsageError(f"cannot write '{path}': {exc.strerror or exc}") from None
        return
    _check_names_a_file(path)
    if os.path.isdir(target):
        raise UsageError(f"cannot write '{path}': it is a directory")
    directory = os.path.dirname(target)
    base = os.path.basename(target)
    remove_stale_temporaries(directory, base)
    # A signal (the CLI's handler raises) waits while the temporary file is created, until the `try`
    # that removes it holds its name: landing in between, it would leave the file behind.
    interrupts.hold()
    held = True
    fd = tmp = None
    try:
        try:
            fd, tmp = _create_temporary(directory, base)
        except FileNotFoundError:
            raise UsageError(f"cannot write '{path}': directory '{directory}' does not exist") from None
        except PermissionError:
            raise UsageError(f"cannot write '{path}': permission denied") from None
        except OSError as exc:
            raise UsageError(f"cannot write '{path}': {exc.strerror or exc}") from None
        held = False
        interrupts.release()  # a signal that arrived meanwhile is raised here, inside the `try`
        fh = _writer(fd, binary, None if binary else "\n")
        fd = None
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        _keep_mode_and_owner(tmp, target)
        # a signal during the replace waits for it; for a command whose outcome the replace decides
        # (interrupts.decided_by_commit) it waits for the end of the run
        interrupts.hold()
        held = True
        os.replace(tmp, target)
        tmp = None
        if not interrupts.commit_decides():
            held = False
            interrupts.release()
    except BaseException as exc:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if held:
            held = False
            interrupts.release()  # a held signal is raised now: the files are already cleaned up
        if isinstance(exc, OSError):  # disk full, quota, read-only file system: one line, old file kept
            raise UsageError(f"cannot write '{path}': {exc.strerror or exc} (any previous file is unchanged)") from None
        raise
