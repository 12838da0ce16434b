"""`python -m rankkit` and the `rankkit` command: the CLI (rankkit.cli.main), with SIGINT, SIGTERM
and SIGHUP handled from the first moment: the package's import (rankkit/__init__.py, which Python
runs before this module) installs handlers when it is the start of the command line. Until
rankkit.cli installs its own (after its imports, a few hundred milliseconds), a signal ends the run
at once with the same one line and status 128 + N (nothing has been opened or written yet): no
KeyboardInterrupt traceback from an import. A signal ignored at start (SIGHUP under nohup) stays
ignored.

When rankkit is the program (the `rankkit` script, `python -m rankkit`) and the CLI has decided the
exit status, the process ends without Python's own shutdown once nothing is left for that shutdown
to do (_exit_now): tearing down every module of numpy, click and rankkit one by one costs 15-20 ms,
a tenth of a small `rankkit train` or `predict`. Run by another program (a profiler, a debugger,
runpy.run_module in a host that catches SystemExit) it ends with SystemExit, as any module does."""

import os
import sys


def main() -> None:
    # the first handlers were installed by the package's import (rankkit/__init__.py), which runs
    # before this module when started as `python -m rankkit` or as the `rankkit` command
    own = _owns_process(sys._getframe(1))
    from rankkit.cli import main as cli_main

    try:
        cli_main()
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    if not own:
        sys.exit(code)
    _exit_now(0 if code is None else code)


def _owns_process(frame) -> bool:
    """main() was called (`frame`: its caller) by the program itself: by the `rankkit` script's
    top level (pip's console script, or this file run as a script), or by this module's top level
    run by `python -m` (runpy's _run_code from _run_module_as_main), with nothing around them."""
    chain = []
    while frame is not None:
        chain.append((frame.f_code.co_name, frame.f_globals.get("__name__")))
        frame = frame.f_back
    return chain in ([("<module>", "__main__")],
                     [("<module>", "__main__"), ("_run_code", "runpy"), ("_run_module_as_main", "runpy")])


def _exit_now(code) -> None:
    """Exit with `code` at once (os._exit) after what Python's shutdown would still do that matters:
    the kernel pool's running kernels waited for, stdout and stderr flushed, the atexit functions
    run (weakref finalizers, multiprocessing's clean-up, logging). Python's own exit (sys.exit)
    instead when the status is not a number, when a flush fails (Python then reports it as it always
    has) or when another thread is alive that may still be working (a job of `experiment` or `path
    --jobs` on an error path): the normal shutdown waits for it."""
    import threading

    from rankkit import threads

    if not isinstance(code, int) or threading.current_thread() is not threading.main_thread():
        sys.exit(code)
    threads.stop_pool()
    if any(t is not threading.main_thread() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)
    if not _flushed():
        sys.exit(code)
    from rankkit.cli import ignore_signals

    ignore_signals()  # the outcome is decided: a late SIGINT must not turn it into a traceback
    import atexit

    atexit._run_exitfuncs()
    if not _flushed():  # what an atexit function printed
        code = 120  # what Python's exit gives when its final flush fails
    os._exit(code & 0xFF)  # what the C exit() makes of any int, as sys.exit does


def _flushed() -> bool:
    """stdout and stderr flushed (both tried); False if either failed."""
    ok = True
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            ok = False
    return ok


if __name__ == "__main__":
    main()
