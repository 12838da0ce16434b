"""Memory bounds of size parameters: refuse a parameter whose arrays cannot fit, before allocating.

A size parameter (-K, --batch-size, --landmarks, --n-points, ...) sets the size of arrays a solver
or a path allocates. Given absurdly (K = 10**9), numpy raises MemoryError deep inside a kernel,
or the process grows until the machine swaps. `check_memory` compares the bytes the parameter
will allocate with the memory this process may use (the smallest of MemAvailable, the cgroup's
limit and RLIMIT_AS) and raises a UsageError naming the parameter as the caller knows it (`-K` on
the command line, `K` in Python) before anything is allocated. The estimates are lower bounds of
what the code allocates (the arrays the parameter multiplies), so a refusal is never wrong.

The memory figures are rankkit.limits' (what a run that runs out of memory reports, exit 3): this
module refuses a parameter before that can happen (a UsageError, exit 2). Imports nothing from
rankkit but errors, limits and the option names.
"""

from __future__ import annotations

import os

from rankkit.errors import UsageError
from rankkit.limits import address_limit, available
from rankkit.solvers.options import WORDS, Words

__all__ = ["available_memory", "check_memory", "fit_bytes", "check_fit", "format_bytes"]



def _cgroup_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, "rb") as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text and text != b"max":
            try:
                value = int(text)
            except ValueError:
                continue
            if value < 1 << 60:  # cgroup v1 writes a huge number for "no limit"
                return value
    return None


def available_memory() -> int | None:
    """Bytes this process may still allocate, as far as the system says (None: unknown).
    RANKKIT_MEMORY_LIMIT (bytes) lowers it (tests, shared machines)."""
    candidates = [v for v in (available(), _cgroup_limit(), address_limit()) if v is not None]
    if not candidates:
        try:
            candidates.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            pass
    setting = memory_limit_setting()
    if setting is not None:
        candidates.append(setting)
    return min(candidates) if candidates else None


def memory_limit_setting() -> int | None:
    """RANKKIT_MEMORY_LIMIT in bytes (a whole or decimal number, 1e9 too), None when unset or
    empty. A UsageError naming it for anything else: a word or nan (ignored before), inf or 1e400
    (an OverflowError), 0 or a negative number (accepted, then every fit refused as too large).
    The CLI checks it at its start."""
    env = os.environ.get("RANKKIT_MEMORY_LIMIT")
    if env is None or not env.strip():
        return None
    try:
        value = float(env)
    except ValueError:
        value = float("nan")
    if not 1 <= value < float("inf"):
        raise UsageError(f"RANKKIT_MEMORY_LIMIT={env!r} is not a number of bytes of at least 1 (unset it to use the "
                         "memory the system reports)")
    return int(value)


def format_bytes(n: float) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


# beyond any machine: refused even when the available memory is unknown
ABSOLUTE_LIMIT = 1 << 50


def check_memory(key: str, value, nbytes: float, what: str, words: Words | None = None,
                 fix: str | None = None) -> None:
    """Raise a UsageError naming parameter `key` (through `words`, rankkit.solvers.options.Words;
    the command line's names by default) when `nbytes` (what it makes the code allocate: `what`)
    exceed the memory available."""
    limit = available_memory()
    if nbytes <= (limit if limit is not None else ABSOLUTE_LIMIT) and nbytes <= ABSOLUTE_LIMIT:
        return
    words = words or WORDS
    name = words.names.get(key, key)
    shown = words.given(key, value)
    have = (f"more than the {format_bytes(limit)} of memory available" if limit is not None
            else "more than any machine has")
    raise UsageError(f"{shown} is too large: {what} would need {format_bytes(nbytes)}, {have}"
                     f"; {fix or f'lower {name}'}")


def fit_bytes(spec, kwargs: dict, n_rows: int, n_features: int) -> list[tuple[str, object, float, str]]:
    """(key, value, bytes, what) of each size parameter of a fit: what it allocates beyond the data."""
    out = []
    if spec.factorized:
        K = int(kwargs.get("K") or 10)
        # V, the gradient, the trial point and its gradient, and the four level sums: 8 arrays n x K
        out.append(("K", K, 8.0 * 8.0 * n_rows * K, f"the latent factors ({n_rows} documents x K, 8 arrays)"))
    elif spec.stochastic:
        b = int(kwargs.get("batch_size") or 1)
        # this step's and the next step's pairs (2 x 2 int64 arrays of 2b) and the coefficients (b floats)
        out.append(("batch_size", b, 40.0 * b, "the pairs of a step (40 bytes per pair)"))
    return out


def check_fit(spec, kwargs: dict, n_rows: int, n_features: int, kernel: dict | None,
              words: Words | None = None) -> None:
    """Refuse the size parameters of a fit that cannot fit in memory (rankkit.training.fit_dataset
    calls it before the solver allocates anything)."""
    for key, value, nbytes, what in fit_bytes(spec, kwargs, n_rows, n_features):
        check_memory(key, value, nbytes, what, words)
    if kernel is not None:
        m = kernel.get("landmarks")
        m = n_rows if m is None else min(int(m), n_rows)
        # the landmark kernel matrix (m x m, and its eigenvectors) and the mapped data (n x m)
        check_memory("landmarks", kernel.get("landmarks", m), 8.0 * (2.0 * m * m + float(n_rows) * m),
                     f"the kernel map ({m} landmarks, {n_rows} documents)", words)
