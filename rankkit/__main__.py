"""`python -m rankkit` and the `rankkit` command: the CLI (rankkit.cli.main), with SIGINT, SIGTERM
and SIGHUP handled from the first moment. Until rankkit.cli installs its own handlers (after its
imports, which take a few hundred milliseconds), a signal ends the run at once with the same one
line and status 128 + N (nothing has been opened or written yet): no KeyboardInterrupt traceback
from an import. A signal ignored at start (SIGHUP under nohup) stays ignored."""

import os
import signal


def _before_the_cli(signum, frame):
    try:
        os.write(2, f"rankkit: interrupted by {signal.Signals(signum).name}\n".encode())
    except OSError:  # stderr closed: the status still says it
        pass
    os._exit(128 + signum)


def main() -> None:
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        try:
            if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, _before_the_cli)
        except (ValueError, OSError):  # not the main thread
            break
    from rankkit.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
