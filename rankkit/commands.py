"""What each subcommand does, as plain functions of plain arguments: the use cases of rankkit/app/
(train, predict, evaluate, path, convert) and, over several files or a Dask cluster,
rankkit.distributed.commands. cli.py parses the options and calls these.

Imported lazily by cli.py, so numpy and numba load only when a command runs.
"""

from __future__ import annotations

import glob
import os

from rankkit.app.convert import convert
from rankkit.app.evaluate import evaluate
from rankkit.app.path import path
from rankkit.app.predict import predict, write_ranked
from rankkit.app.train import train
from rankkit.distributed.commands import eval_parts, predict_parts, train_parts

__all__ = ["train", "predict", "write_ranked", "evaluate", "path", "convert", "is_pattern", "train_parts",
           "predict_parts", "eval_parts"]



def is_pattern(path: str) -> bool:
    """A glob that names no file itself: PARTS to expand (rankkit.distributed)."""
    return path != "-" and glob.has_magic(path) and not os.path.exists(path)
