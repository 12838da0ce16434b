"""`python -m rankkit` and the `rankkit` command: the CLI (rankkit.cli.main), with SIGINT, SIGTERM
and SIGHUP handled from the first moment: the package's import (rankkit/__init__.py, which Python
runs before this module) installs handlers when it is the start of the command line. Until
rankkit.cli installs its own (after its imports, a few hundred milliseconds), a signal ends the run
at once with the same one line and status 128 + N (nothing has been opened or written yet): no
KeyboardInterrupt traceback from an import. A signal ignored at start (SIGHUP under nohup) stays
ignored.

Once the CLI has decided the exit status, the process ends without Python's own shutdown when
nothing is left for that shutdown to do (_exit_now): tearing down every module of numpy, click and
rankkit one by one costs 15-20 ms, a tenth of a small `rankkit train` or `predict`."""

import os
import sys


def main() -> None:
    # the first handlers were installed by the package's import (rankkit/__init__.py), which runs
    # before this module when started as `python -m rankkit` or as the `rankkit` command
    from rankkit.cli import _ignore_signals, main as cli_main

    try:
        cli_main()
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    _ignore_signals()  # the outcome is decided: a late SIGINT must not turn it into a traceback
    _exit_now(0 if code is None else code)


# Threads a finished run may leave behind that hold nothing: the kernel pool's idle workers
# (rankkit.threads: kernels over index ranges, no I/O) and daemon threads.
_POOL_PREFIX = "rankkit_"


def _exit_now(code) -> None:
    """Exit with `code` at once (os._exit) after what Python's shutdown would still do that matters:
    stdout and stderr flushed, the atexit functions run (weakref finalizers, multiprocessing's
    clean-up, logging). Python's own exit (sys.exit) instead when the status is not a number, when
    a flush fails (Python then reports it as it always has) or when a thread that may still be
    writing is alive (a job of `experiment` or `path --jobs` on an error path): the normal shutdown
    waits for it."""
    import threading

    if not isinstance(code, int):
        sys.exit(code)
    main_thread = threading.main_thread()
    if threading.current_thread() is not main_thread:
        sys.exit(code)
    for t in threading.enumerate():
        if t is not main_thread and not t.daemon and not t.name.startswith(_POOL_PREFIX):
            sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            sys.exit(code)
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):  # what an atexit function printed
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    os._exit(code & 0xFF)  # what the C exit() makes of any int, as sys.exit does


if __name__ == "__main__":
    main()
