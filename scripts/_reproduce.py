"""What every scripts/reproduce_<paper>.py starts with: the same three options and the same refusal
when the shared data is absent (one line on stderr naming the missing directory; the caller exits 2).

    args = paper_args("chapelle", __doc__, argv)   # None: the MQ2008 folds are not there
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"


def paper_args(paper: str, doc: str, argv=None, quick_help: str | None = None, raw_doc: bool = False):
    """--out DIR (created), --quick, --data DIR (default ../shared/data). Returns the parsed
    arguments with `out` (a Path, created) and `mq` (the MQ2008 directory), or None after one line
    on stderr when MQ2008/Fold1 is missing (then nothing is created)."""
    ap = argparse.ArgumentParser(description=doc if raw_doc else doc.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter if raw_doc
                                 else argparse.HelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    args = ap.parse_args(argv)
    args.mq = Path(args.data) / "MQ2008"
    if not (args.mq / "Fold1").is_dir():
        print(f"reproduce_{paper}: {args.mq / 'Fold1'}: no such directory, data not found (the MQ2008 folds of "
              "../shared/data; see its README)", file=sys.stderr)
        return None
    args.out_arg, args.out = args.out, Path(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    return args
