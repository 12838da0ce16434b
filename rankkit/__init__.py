"""rankkit: learning to rank on SVMlight/LETOR data, from the command line and from Python.

    import rankkit
    X, y, qid = rankkit.load_svmlight_file("train.txt", query_id=True)
    ranker = rankkit.RankSVM(C=0.01).fit(X, y, qid=qid)
    rankkit.evaluate(y_test, ranker.predict(X_test), qid=qid_test)

The names below are imported on first use (PEP 562), so `import rankkit` loads nothing heavy:
numpy and scipy come with the first function or estimator used, numba with the first kernel run,
and `rankkit --help` stays instant.
"""

from __future__ import annotations

import os as _os
import _signal  # the builtin module: no file to import while a signal may land
import sys as _sys


def _interrupted_before_the_cli(signum, frame):
    try:
        name = {getattr(_signal, n, None): n for n in ("SIGINT", "SIGTERM", "SIGHUP")}.get(signum, f"signal {signum}")
        _os.write(2, f"rankkit: interrupted by {name}\n".encode())
    except OSError:  # stderr closed: the status still says it
        pass
    _os._exit(128 + signum)


def _hold_signals_until_the_cli() -> None:
    """The command line's first handlers for SIGINT, SIGTERM and SIGHUP (a signal ignored at start,
    SIGHUP under nohup, stays ignored): until rankkit.cli installs its own, a signal ends the run at
    once with one line and status 128 + N. Nothing has been opened or written yet."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(_signal, name, None)
        try:
            if sig is not None and _signal.getsignal(sig) is not _signal.SIG_IGN:
                _signal.signal(sig, _interrupted_before_the_cli)
        except (ValueError, OSError):  # not the main thread
            break


def _started_as_the_cli() -> bool:
    """This import is the start of `python -m rankkit` or of the `rankkit` console script (whose
    first step imports this package), not a Python program using rankkit as a library."""
    argv = getattr(_sys, "orig_argv", None) or []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            return argv[i + 1:i + 2] == ["rankkit"]
        if arg.startswith("-m"):
            return arg == "-mrankkit"
        if not arg.startswith("-") or arg.startswith("-c"):
            break
        i += 2 if arg in ("-X", "-W") else 1
    return _is_the_console_script(_sys.argv[0] if _sys.argv else "")


def _is_the_console_script(script: str) -> bool:
    if not script or script.startswith("-") or script.endswith(".py"):
        return False
    try:  # the console script pip writes: `from rankkit.__main__ import main`
        with open(script, "rb") as fh:
            return b"from rankkit.__main__ import" in fh.read(4096)
    except OSError:
        return False


def _spawned_by_the_cli() -> bool:
    """This process is a worker the command line spawned (path --jobs, a --dask local cluster's
    workers): multiprocessing's spawn gives it the parent's sys.argv and imports the parent's main
    module, which imports this package."""
    if "--multiprocessing-fork" not in (getattr(_sys, "orig_argv", None) or []):
        return False
    script = _sys.argv[0] if _sys.argv else ""
    return _is_the_console_script(script) or script.replace("\\", "/").endswith("rankkit/__main__.py")


if _spawned_by_the_cli():
    # A Ctrl-C reaches the whole process group: the command line stops its workers itself and says
    # so in one line; each worker saying it too (or printing a KeyboardInterrupt) was noise.
    try:
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    except (ValueError, OSError):
        pass
elif _started_as_the_cli():  # `python -m rankkit` imports this package before rankkit/__main__.py runs
    _hold_signals_until_the_cli()

from typing import TYPE_CHECKING  # noqa: E402 - after the handlers: an import is where a signal lands

from rankkit.config import __version__

_EXPORTS = {
    "RankSVM": "rankkit.estimators",
    "SGDRanker": "rankkit.estimators",
    "FactorizedRankSVM": "rankkit.estimators",
    "Ranker": "rankkit.estimators",
    "load_model": "rankkit.estimators",
    "make_scorer": "rankkit.scoring",
    "get_scorer": "rankkit.scoring",
    "ConvergenceWarning": "rankkit.estimators",
    "load_svmlight_file": "rankkit.datasets",
    "load_svmlight_files": "rankkit.datasets",
    "dump_svmlight_file": "rankkit.datasets",
    "load_letor": "rankkit.datasets",
    "LetorData": "rankkit.datasets",
    "evaluate": "rankkit.evaluation",
    "compare": "rankkit.evaluation",
    "regularization_path": "rankkit.regularization",
    "RegularizationPath": "rankkit.regularization",
    "experiment": "rankkit.estimators",
    "RankkitError": "rankkit.errors",
    "DataError": "rankkit.errors",
    "ModelError": "rankkit.errors",
    "UsageError": "rankkit.errors",
    "ClusterError": "rankkit.parts.cluster",
    "predict_parts": "rankkit.distributed",
    "evaluate_parts": "rankkit.distributed",
    "DaskRankSVM": "rankkit.dask",  # imports dask: only when asked for
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names come from __getattr__
    from rankkit.dask import DaskRankSVM
    from rankkit.distributed import evaluate_parts, predict_parts
    from rankkit.parts.cluster import ClusterError
    from rankkit.datasets import LetorData, dump_svmlight_file, load_letor, load_svmlight_file, load_svmlight_files
    from rankkit.errors import DataError, ModelError, RankkitError, UsageError
    from rankkit.estimators import ConvergenceWarning, FactorizedRankSVM, Ranker, RankSVM, SGDRanker, load_model
    from rankkit.evaluation import compare, evaluate
    from rankkit.scoring import get_scorer, make_scorer
    from rankkit.estimators import experiment
    from rankkit.regularization import RegularizationPath, regularization_path


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rankkit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
