"""Opening input files: the one place where a path becomes bytes, for every reader and every face.

    read_bytes(path)      the whole (decompressed) content as a writable uint8 array
    iter_blocks(path)     the same bytes in blocks (the streaming readers)
    exists(path)          a regular file there (a local path or a URL)
    display_name(path)    the name messages use (`<stdin>` for `-`)
    open_regular(path)    a regular file opened for reading, never hanging on a FIFO (records, caches)

A path is a local file (plain, or gzip/bz2/xz by its extension), `-` for standard input, or a URL
that fsspec reads (`s3://`, `gs://`, `hdfs://`, `memory://`, ...; compression by extension too).
Every open, read and decompression failure is a one-line DataError naming the file: a corrupt or
truncated archive is bad input, not a bug. A local file that changes while it is read is an error
too (its size or modification time moved), never half of one file and half of another.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import lzma
import os
import re
import stat
import sys
import zlib

import numpy as np

from rankkit import limits
from rankkit.errors import DataError, ResourceError, UsageError

# compressed formats by file extension: (name, opener, magic bytes at the start of such a file)
COMPRESSED = {
    ".gz": ("gzip", gzip.open, b"\x1f\x8b"),
    ".bz2": ("bzip2", bz2.open, b"BZh"),
    ".xz": ("xz", lzma.open, b"\xfd7zXZ\x00"),
}
BLOCK_BYTES = 1 << 24


def display_name(path) -> str:
    return "<stdin>" if path == "-" else str(path)


def is_url(path) -> bool:
    """protocol://...: a path for fsspec (s3://, gs://, hdfs://, file://, memory://, ...)."""
    return re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*://", str(path)) is not None


def compression(path):
    """(name, opener, magic) of the compression `path`'s extension names, None for a plain file."""
    if path == "-":
        return None
    return COMPRESSED.get(os.path.splitext(str(path))[1].lower())


def exists(path) -> bool:
    """A regular file at `path` (a local path, or a URL fsspec can look at); never for `-`."""
    if path == "-":
        return False
    if not is_url(path):
        return os.path.isfile(path)
    try:
        import fsspec
    except ImportError:
        return False
    try:
        fs, inner = fsspec.core.url_to_fs(str(path))
        return bool(fs.isfile(inner))
    except Exception:  # an unreachable store, no credentials: nothing found there
        return False


def input_error(path, exc: BaseException) -> DataError:
    """The one place that turns an exception raised while opening or reading (and decompressing)
    `path` into a one-line DataError: a corrupt or truncated archive is bad input, not a bug."""
    name = display_name(path)
    if isinstance(exc, FileNotFoundError):
        return DataError(name, "no such file")
    if isinstance(exc, IsADirectoryError):
        return DataError(name, "is a directory, not a data file")
    if isinstance(exc, PermissionError):
        return DataError(name, "permission denied")
    fmt = compression(path)
    if fmt is not None and isinstance(exc, (EOFError, OSError, zlib.error, lzma.LZMAError)):
        kind, _, magic = fmt
        if isinstance(exc, EOFError):
            return DataError(name, f"truncated {kind} data (the file ends inside the compressed stream)")
        if not (isinstance(exc, OSError) and exc.errno is not None) and not is_url(path):  # errno: the disk
            try:
                with open(path, "rb") as fh:
                    head = fh.read(len(magic))
            except OSError:
                head = magic
            if head != magic:
                article = "an" if kind == "xz" else "a"
                return DataError(name, f"not {article} {kind} file (its name ends in {os.path.splitext(str(path))[1]})")
            detail = str(exc).strip()
            return DataError(name, f"corrupt {kind} data" + (f" ({detail})" if detail else ""))
    if isinstance(exc, OSError):
        return DataError(name, f"cannot read ({exc.strerror or exc})")
    return DataError(name, f"cannot read ({exc.__class__.__name__}: {exc})")


def stdin_buffer():
    """Standard input as a binary stream, for `-`; a UsageError when it is closed (a cron line with
    `<&-`, a daemon), rather than an internal error."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise UsageError("cannot read standard input ('-'): it is closed")
    return stream


def _open_url(path: str):
    """A binary file object for a URL (decompressed by extension), through fsspec."""
    try:
        import fsspec
    except ImportError:
        raise UsageError(f"{path}: reading a URL needs fsspec (pip install 'rankkit[dask]')") from None
    return fsspec.open(str(path), "rb", compression="infer").open()


def iter_blocks(path, block_bytes: int = BLOCK_BYTES):
    """The (decompressed) bytes of `path` in blocks of up to `block_bytes`; `-` reads standard
    input. Every open, read and decompression error becomes a DataError naming the file."""
    before = None
    try:
        if path == "-":
            fh = stdin_buffer()
            opened = False
        elif is_url(path):
            fh = _open_url(path)
            opened = True
        else:
            fmt = compression(path)
            fh = fmt[1](path, "rb") if fmt is not None else open(path, "rb")
            opened = True
            before = _identity(path)
        # A stream without an end known in advance (stdin, a pipe, a device, a decompressed or remote
        # file) is checked block by block for NUL bytes, which no text input holds: `/dev/zero` or a
        # binary file is refused at its first block instead of read until memory runs out.
        scan = before is None or compression(path) is not None
        lines = 1
        try:
            while True:
                block = fh.read(block_bytes)
                if not block:
                    break
                if scan:
                    nul = block.find(b"\0")
                    if nul >= 0:
                        raise DataError(display_name(path), "binary data, not text (a NUL byte)",
                                        lines + block.count(b"\n", 0, nul))
                    lines += block.count(b"\n")
                yield block
        finally:
            if opened:
                fh.close()
        if before is not None and _identity(path) != before:
            raise DataError(display_name(path), "changed while being read (its size or modification time "
                                                "changed); read it again once it is complete")
    except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as exc:
        if isinstance(exc, ValueError) and not is_url(path):
            raise
        raise input_error(path, exc) from None


def open_regular(path):
    """`path` opened for binary reading when it is a regular file; OSError (ENXIO, "not a regular
    file") for a FIFO, device or socket, found without blocking: a FIFO planted where a record is
    looked for (OUT/FoldK/SOLVER.done.json) must not hang the run that checks it."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.ENXIO, "not a regular file", path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _identity(path):
    """(size, modification time) of a regular file, None for a pipe or device (they stream)."""
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def read_bytes(path) -> np.ndarray:
    """The whole (decompressed) content of `path` as a writable uint8 array; `-` reads standard
    input, a URL is read through fsspec.

    A plain regular file is read with readinto into one buffer of its size (not memory-mapped: a
    mapped file that another process truncates kills the reader with SIGBUS); a file whose size
    changes while it is read is an error, as is any unreadable or corrupt (compressed) input."""
    if path == "-" or is_url(path) or compression(path) is not None:
        return _join_blocks(iter_blocks(path), display_name(path))
    try:
        with open(path, "rb", buffering=0) as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):  # a pipe, e.g. `<(zcat train.txt.gz)`
                return _join_blocks(iter_blocks(path), display_name(path))
            return _read_regular(fh, st.st_size, display_name(path))
    except (OSError, EOFError) as exc:
        raise input_error(path, exc) from None


def _read_regular(fh, size: int, name: str) -> np.ndarray:
    buf = np.empty(size, dtype=np.uint8)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = fh.readinto(view[got : got + min(size - got, BLOCK_BYTES)])
        if not n:
            raise DataError(name, f"changed while being read (it shrank from {size} to {got} bytes); "
                                  "read it again once it is complete")
        got += n
    if fh.read(1):
        raise DataError(name, f"changed while being read (it grew beyond {size} bytes); "
                              "read it again once it is complete")
    return buf


def _join_blocks(blocks, name: str = "<input>") -> np.ndarray:
    """All blocks as one writable uint8 array (the same array type as a read buffer, so the
    kernel is compiled once). A stream of unknown length (`yes | rankkit train - M`) is stopped
    with a ResourceError before it holds nine tenths of the memory the machine had available at
    the start, rather than left to grow until the out-of-memory killer ends some process."""
    budget = limits.available()
    if budget is not None:
        budget = int(budget * 0.9)
    limit = limits.address_limit()
    if limit is not None:
        budget = limit if budget is None else min(budget, limit)
    out = bytearray()
    for block in blocks:
        out += block
        if budget is not None and len(out) > budget:
            raise ResourceError(f"out of memory: {name} is larger than nine tenths of the memory this machine had "
                                f"available ({limits.limits_text()}; {len(out) >> 20:,} MB read): is it endless?")
    return np.frombuffer(out, dtype=np.uint8)


def looks_like(path) -> str | None:
    """What the first non-blank line of `path` looks like, to word an error when files were given
    in another tool's order: "qrels" (qid iter docid rel), "run" (qid Q0 docid rank score tag),
    "scores" (one number), "model" (a model file's header), "svmlight" (label qid:... index:value) or
    None (unreadable, not a regular file, or none of these). Reads at most the first block."""
    if path == "-" or is_url(path) or not os.path.isfile(path):  # never wait on a pipe or a terminal
        return None
    blocks = iter_blocks(path, 1 << 16)
    try:
        head = next(blocks, b"")
    except (DataError, UsageError, OSError, ValueError):
        return None
    finally:
        blocks.close()
    for raw in head.splitlines()[:-1] or head.splitlines():
        fields = raw.split()
        if not fields or fields[0].startswith(b"#"):
            continue
        if fields[0] in (b"rankkit-model", b"SVM-light", b"solver_type") or raw.startswith(b"SVM-light Version"):
            return "model"
        if any(b":" in f for f in fields[1:]) and b"#" not in fields[0]:
            return "svmlight"

        def number(f):
            try:
                float(f)
            except ValueError:
                return False
            return True

        if len(fields) == 1 and number(fields[0]):
            return "scores"
        if len(fields) == 4 and number(fields[3]):
            return "qrels"
        if len(fields) == 6 and number(fields[3]) and number(fields[4]):
            return "run"
        return None
    return None
