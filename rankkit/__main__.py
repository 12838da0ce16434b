"""`python -m rankkit` and the `rankkit` command: the CLI (rankkit.cli.main), with SIGINT, SIGTERM
and SIGHUP handled from the first moment: the package's import (rankkit/__init__.py, which Python
runs before this module) installs handlers when it is the start of the command line. Until
rankkit.cli installs its own (after its imports, a few hundred milliseconds), a signal ends the run
at once with the same one line and status 128 + N (nothing has been opened or written yet): no
KeyboardInterrupt traceback from an import. A signal ignored at start (SIGHUP under nohup) stays
ignored."""


def main() -> None:
    # the first handlers were installed by the package's import (rankkit/__init__.py), which runs
    # before this module when started as `python -m rankkit` or as the `rankkit` command
    from rankkit.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
