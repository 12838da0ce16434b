"""Errors a user can fix. The CLI prints them as one line and exits with `exit_code`; never a traceback.

Everything in rankkit that rejects input raises one of these; kernels return status codes and the
Python wrapper around them raises. Imports nothing from rankkit.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1  # an unexpected internal error (a bug): the CLI still prints one line
EXIT_USAGE = 2  # bad options, bad data, bad model file: the user's input is wrong
EXIT_RESOURCES = 3  # the run could not get the memory, files, threads or processes it needs (rankkit.limits)


class RankkitError(Exception):
    """Base class: a message for the user and the exit status that goes with it."""

    exit_code = EXIT_USAGE


class UsageError(RankkitError, ValueError):
    """Options that cannot work together, or a request the data cannot satisfy. A ValueError, as
    scikit-learn raises for bad parameters, so code written for it catches rankkit's too."""


class DataError(RankkitError, ValueError):
    """A problem in an input file, located as `path:line: message` (line omitted when unknown).

    From the Python API the path may be an array's name (`<X>`) and the line the 1-based row.
    A ValueError, as `sklearn.datasets.load_svmlight_file` raises for bad input."""

    def __init__(self, path: str, message: str, line: int | None = None):
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # picklable, so that an error in a worker process (path --jobs) reaches the CLI intact
        return (type(self), (self.path, self.message, self.line))


class ResourceError(RankkitError, MemoryError):
    """The run could not get the memory it needs (an allocation failed, an address-space limit).
    A MemoryError, so Python code that catches those catches it; the CLI exits 3."""

    exit_code = EXIT_RESOURCES


class ModelError(DataError):
    """A model file that is not a rankkit model, or is damaged, or does not fit the data."""


class Interrupted(BaseException):
    """A signal (SIGINT, SIGTERM, SIGHUP) asked the run to stop. Raised from the signal handler the
    CLI installs, so that every `finally` and atomic write cleans up; the CLI exits 128 + signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
