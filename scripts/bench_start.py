#!/usr/bin/env python3
"""Where a small rankkit run's time goes, against a floor process (issue 11, item 4).

    python scripts/bench_start.py [--repeat N] TRAIN TEST        # prints a Markdown table

For each of `rankkit train`, `predict` and `eval` on TRAIN/TEST (an MQ2008 fold):

- wall: the command as a user runs it (`python -m rankkit ...`, a subprocess), best of N;
- floor: a process that only imports numpy and numba and calls one cached njit function (the
  least any numba program pays), best of N, and the ratio wall / floor;
- the breakdown, measured inside one fresh process (`--stages`): interpreter start (wall of
  `python -c pass`), imports (numpy, rankkit's command modules and kernel modules), the first run
  of the command in the process (loading the kernels: the ahead-of-time modules that `make
  warmup` built, or else numba's import, first dispatch and cache loads; plus the work) and a
  second run in the same process (the work alone: parse, fit/score, write, with parse timed on
  its own). "kernel loads" is first run - second run; the last row says whether the command
  imported numba at all.

Both processes use the same NUMBA_CACHE_DIR, warmed before timing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FLOOR = """
import numpy, numba
@numba.njit(cache=True)
def one(x):
    return x + 1
one(1)
"""


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    return env


def _wall(cmd, repeat: int, env=None) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env or _env())
        best = min(best, time.perf_counter() - t)
    return best


def floor_cmd(workdir: str) -> list[str]:
    path = os.path.join(workdir, "rankkit_bench_floor.py")
    with open(path, "w") as fh:
        fh.write(FLOOR)
    return [sys.executable, path]


def commands(train: str, test: str, out: str) -> dict[str, list[str]]:
    model, scores = os.path.join(out, "m.model"), os.path.join(out, "test.scores")
    return {
        "train": ["train", train, model, "-C", "1e-3"],
        "predict": ["predict", test, model, scores],
        "eval": ["eval", test, scores],
    }


def stages(name: str, args: list[str], data_file: str) -> dict:
    """Run inside a fresh interpreter: imports, first and second run of `rankkit ARGS`."""
    t0 = time.perf_counter()
    import numpy  # noqa: F401

    t1 = t2 = time.perf_counter()
    from rankkit import cli  # noqa: F401
    from rankkit import commands as _commands  # noqa: F401
    from rankkit.io import svmlight  # the kernel modules the commands import

    t3 = time.perf_counter()
    devnull = open(os.devnull, "w")
    real_stdout = sys.stdout

    def once() -> float:
        sys.stdout = devnull
        t = time.perf_counter()
        try:
            cli.cli.main(args=args, prog_name="rankkit", standalone_mode=False)
        finally:
            sys.stdout = real_stdout
        return time.perf_counter() - t

    first = once()
    second = once()
    t = time.perf_counter()
    svmlight.read_svmlight(data_file)
    parse = time.perf_counter() - t
    return {"import numpy": t1 - t0, "import rankkit": t3 - t2,
            "kernel loads (ahead-of-time modules, or numba and its cache)": max(0.0, first - second), "parse": parse,
            "work (parse, fit or score, write)": second, "numba imported": float("numba" in sys.modules)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("train")
    ap.add_argument("test")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--stages", metavar="NAME", help=argparse.SUPPRESS)  # internal: run inside a fresh process
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON instead of Markdown")
    a = ap.parse_args()
    if a.stages:
        cmds = commands(a.train, a.test, a.out)
        print(json.dumps(stages(a.stages, cmds[a.stages], a.train if a.stages == "train" else a.test)))
        return 0
    print(json.dumps(run(a.train, a.test, a.repeat)) if a.json else "\n".join(table(run(a.train, a.test, a.repeat))))
    return 0


def run(train: str, test: str, repeat: int) -> dict:
    out = tempfile.mkdtemp(prefix="rankkit-bench-start-")
    cmds = commands(train, test, out)
    rk = [sys.executable, "-m", "rankkit"]
    floor = floor_cmd(out)
    for name in cmds:  # warm the cache (and write the model and scores the later steps read)
        subprocess.run(rk + cmds[name], check=True, stdout=subprocess.DEVNULL, env=_env())
    subprocess.run(floor, check=True, env=_env())
    res = {"interpreter": _wall([sys.executable, "-c", "pass"], repeat), "floor": _wall(floor, repeat), "commands": {}}
    for name, args in cmds.items():
        wall = _wall(rk + args, repeat)
        best = None
        for _ in range(max(1, repeat // 2)):
            proc = subprocess.run([sys.executable, __file__, train, test, "--stages", name, "--out", out],
                                  check=True, stdout=subprocess.PIPE, env=_env())
            st = json.loads(proc.stdout)
            if best is None or sum(st.values()) < sum(best.values()):
                best = st
        res["commands"][name] = {"wall": wall, "stages": best}
    return res


def table(res: dict) -> list[str]:
    names = list(res["commands"])
    rows = ["| stage | " + " | ".join(f"`rankkit {n}`" for n in names) + " |", "|---|" + "---:|" * len(names)]
    rows.append("| interpreter start (`python -c pass`) | " + " | ".join(f"{res['interpreter']:.3f}" for _ in names) + " |")
    for stage in next(iter(res["commands"].values()))["stages"]:
        if stage == "numba imported":
            continue
        rows.append(f"| {stage} | " + " | ".join(f"{res['commands'][n]['stages'][stage]:.3f}" for n in names) + " |")
    rows.append("| **wall, `python -m rankkit ...`** | " + " | ".join(f"**{res['commands'][n]['wall']:.3f}**" for n in names) + " |")
    rows.append(f"| floor (numpy + numba + one cached function) | " + " | ".join(f"{res['floor']:.3f}" for _ in names) + " |")
    rows.append("| **wall / floor** (goal <= 1.15x) | " + " | ".join(f"**{res['commands'][n]['wall'] / res['floor']:.2f}x**" for n in names) + " |")
    rows.append("| numba imported by the command | " + " | ".join(
        "yes" if res["commands"][n]["stages"].get("numba imported") else "no" for n in names) + " |")
    return rows


if __name__ == "__main__":
    sys.exit(main())
