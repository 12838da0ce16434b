"""What each subcommand does, as plain functions of plain arguments: the use cases of rankkit/app/
(train, predict, evaluate, path, convert, experiment) and, over several files or a Dask cluster,
rankkit.distributed.commands. cli.py parses the options and calls these.

Imported by cli.py when a command runs; each name loads only its own use case's module (a
`rankkit train` does not import the path, eval or Dask code), so a command pays for what it runs.
This table is the CLI's one door to the Dask face (`--dask`, PARTS): by name, so that no module of
the CLI imports rankkit.distributed (the faces import no other face: tests/test_architecture.py).
"""

from __future__ import annotations

import glob
import importlib
import os

# name -> the module that defines it
_HOMES = {"train": "rankkit.app.train", "predict": "rankkit.app.predict", "write_ranked": "rankkit.app.predict",
          "evaluate": "rankkit.app.evaluate", "path": "rankkit.app.path", "convert": "rankkit.app.convert",
          "experiment": "rankkit.app.experiment",
          "train_parts": "rankkit.distributed.commands", "predict_parts": "rankkit.distributed.commands",
          "eval_parts": "rankkit.distributed.commands", "eval_parts_given": "rankkit.distributed.commands",
          "path_one": "rankkit.distributed.path"}

__all__ = [*_HOMES, "is_pattern"]


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'rankkit.commands' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def is_pattern(path: str) -> bool:
    """A glob that names no file itself: PARTS to expand (rankkit.distributed)."""
    return path != "-" and glob.has_magic(path) and not os.path.exists(path)
