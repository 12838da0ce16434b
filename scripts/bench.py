#!/usr/bin/env python3
"""rankkit benchmarks (`make bench`). Prints a Markdown report and writes it to out/bench.md.

Sections:
  1. parse     rankkit's reader vs scikit-learn's load_svmlight_file on the same files, same run
  2. cli       wall time of `rankkit` commands as a user runs them (subprocess): --help, cold
               (fresh numba cache: compiling) and warm train on the bundled sample, MQ2008 Fold1,
               and the liblinear-ranksvm-sized files (reading included)
  3. eval      `rankkit eval` wall time on a 10-million-line file and its scores
  4. scaling   Newton training time vs n on one query with binary labels (n^2/4-ish implicit
               pairs), with the least-squares exponent of time ~ n^a

Timings are the best of `--repeat` runs. Inputs are generated under bench-data/ (git-ignored)
by scripts/make_synthetic.py; ../shared/data is used when present.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
BENCH = ROOT / "bench-data"
sys.path.insert(0, str(ROOT / "scripts"))

import make_synthetic  # noqa: E402


def best_of(fn, repeat):
    times = []
    result = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def machine() -> str:
    cpu = platform.processor() or "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(open("/proc/meminfo").readline().split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    import numba
    import scipy

    return (
        f"{cpu}, {os.cpu_count()} cores{mem}; Python {platform.python_version()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, numba {numba.__version__}; {platform.system()} {platform.release()}"
    )


def ensure(path: Path, make) -> Path:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".part")
        make(str(tmp))
        tmp.rename(path)
    return path


def run(cmd, env=None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def rankkit_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "rankkit", *args]


# -- 1. parse ----------------------------------------------------------------------------------
def bench_parse(report, repeat):
    from rankkit.io.svmlight import read_svmlight

    try:
        from sklearn.datasets import load_svmlight_file
    except ImportError:
        load_svmlight_file = None
    files = []
    if (SHARED / "MQ2008" / "Fold1" / "train.txt").exists():
        files.append(("MQ2008 Fold1 train.txt", SHARED / "MQ2008" / "Fold1" / "train.txt"))
    files.append(
        ("synthetic mixed-format (parse)", ensure(BENCH / "parse200.txt", lambda p: make_synthetic.write_parse(p, mb=200)))
    )
    files.append(("synthetic LETOR 200k x 46 (letor)", ensure(BENCH / "letor.txt", make_synthetic.write_letor)))
    read_svmlight(str(files[0][1]))  # load the kernels once
    report.append("## Parse: rankkit vs scikit-learn `load_svmlight_file` (same run)\n")
    report.append("| file | MB | rankkit s | rankkit MB/s | scikit-learn s | speed-up |")
    report.append("|---|---:|---:|---:|---:|---:|")
    for name, path in files:
        mb = path.stat().st_size / 1e6
        t_rk, ds = best_of(lambda: read_svmlight(str(path)), repeat)
        if load_svmlight_file is not None:
            t_sk, (X, y, q) = best_of(lambda: load_svmlight_file(str(path), query_id=True), repeat)
            assert X.shape[0] == ds.n_rows and np.array_equal(y, ds.y)
            sk = f"{t_sk:.3f} | {t_sk / t_rk:.2f}x"
        else:
            sk = "(scikit-learn not installed) | -"
        report.append(f"| {name} | {mb:.1f} | {t_rk:.3f} | {mb / t_rk:.0f} | {sk} |")
    report.append("")


# -- 2. CLI ------------------------------------------------------------------------------------
def bench_cli(report, repeat):
    out = Path(tempfile.mkdtemp(prefix="rankkit-bench-"))
    sample = ROOT / "data" / "sample.train.txt"
    report.append("## Command-line wall times (subprocess, reading and writing included)\n")
    report.append("| command | seconds |")
    report.append("|---|---:|")
    t_help, _ = best_of(lambda: run(rankkit_cmd("--help")), repeat)
    report.append(f"| `rankkit --help` | {t_help:.3f} |")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        cold = run(rankkit_cmd("train", str(sample), str(out / "m"), "-C", "0.01"), env=env)
        warm, _ = best_of(lambda: run(rankkit_cmd("train", str(sample), str(out / "m"), "-C", "0.01"), env=env), repeat)
    report.append(f"| `rankkit train` bundled sample, cold (fresh numba cache: compiles) | {cold:.2f} |")
    report.append(f"| `rankkit train` bundled sample, warm (cached kernels) | {warm:.3f} |")
    mq = SHARED / "MQ2008" / "Fold1" / "train.txt"
    if mq.exists():
        t, _ = best_of(lambda: run(rankkit_cmd("train", str(mq), str(out / "m"), "-C", "0.001")), repeat)
        report.append(f"| `rankkit train` MQ2008 Fold1 (9,630 docs), C=1e-3, warm | {t:.3f} |")
    letor = ensure(BENCH / "letor.txt", make_synthetic.write_letor)
    binary = ensure(BENCH / "binary.txt", make_synthetic.write_binary)
    for path, what, ref in [
        (letor, "200,000 docs, 2,000 queries x 100, 46 dense features, 5 levels", "1.7 s on a 91 MB file"),
        (binary, "1,000,000 docs, one query, binary labels, 17 features", "4.4 s on a 197 MB file"),
    ]:
        mb = path.stat().st_size / 1e6
        for C in ("1", "0.001"):
            t, _ = best_of(lambda: run(rankkit_cmd("train", str(path), str(out / "m"), "-C", C)), repeat)
            report.append(
                f"| `rankkit train` {path.name} ({mb:.0f} MB: {what}), C={C} (liblinear-ranksvm, published: {ref}) | {t:.2f} |"
            )
    report.append("")


# -- eval on a 10-million-line file -----------------------------------------------------------
def bench_eval(report, repeat):
    data = ensure(BENCH / "eval10m.txt", lambda p: make_synthetic.write_letor(p, queries=100_000, docs=100, features=1, levels=3))
    scores = BENCH / "eval10m.scores"
    if not scores.exists():
        from rankkit.io.output import write_scores

        rng = np.random.default_rng(0)
        write_scores(str(scores), rng.standard_normal(10_000_000))
    metrics = ["-m", "ndcg@10", "-m", "map", "-m", "err@10", "-m", "auc"]
    t, _ = best_of(lambda: run(rankkit_cmd("eval", str(data), str(scores), *metrics)), repeat)
    report.append("## `rankkit eval` on 10 million lines\n")
    report.append(
        f"`rankkit eval` of a {data.stat().st_size / 1e6:.0f} MB LETOR file (100,000 queries x 100 documents) "
        f"and a {scores.stat().st_size / 1e6:.0f} MB score file, metrics ndcg@10 map err@10 auc: **{t:.2f} s** "
        "wall (reading both files included).\n"
    )


# -- 3. scaling --------------------------------------------------------------------------------
def single_query(n: int, d: int, seed: int):
    from rankkit.data import Dataset

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = rng.standard_normal(d)
    y = (X @ w + rng.standard_normal(n) * 2.0 > 0.8).astype(np.float64)
    return Dataset(
        data=X.ravel(),
        indices=np.tile(np.arange(d, dtype=np.int32), n),
        indptr=np.arange(0, n * d + 1, d, dtype=np.int64),
        y=y,
        qid=np.ones(n, dtype=np.int64),
        qptr=np.array([0, n], dtype=np.int64),
        n_features=d,
        source=f"single-query n={n}",
    ).validate()


def bench_scaling(report, repeat, max_n):
    from rankkit.solvers.newton import NewtonRankSVM

    d = 10
    sizes = [n for n in (10**4, 10**5, 10**6, 10**7) if n <= max_n]
    NewtonRankSVM(C=1e-3).fit(single_query(1000, d, 0))  # load kernels
    report.append("## Scaling: Newton training time vs n, one query, binary labels, 10 dense features\n")
    report.append("C = 10^4 / (number of pairs), so the optimum w is comparable across n.\n")
    report.append("| n | pairs | Newton iter. | CG iter. | fit s | s / iteration |")
    report.append("|---:|---:|---:|---:|---:|---:|")
    ns, ts = [], []
    for n in sizes:
        ds = single_query(n, d, 1)
        C = 1e4 / ds.n_pairs
        t, res = best_of(lambda ds=ds, C=C: NewtonRankSVM(C=C).fit(ds), repeat if n < 10**7 else 1)
        ns.append(n)
        ts.append(t)
        report.append(
            f"| {n:,} | {ds.n_pairs:.3g} | {res.iterations} | {res.extra['cg_iterations']} | {t:.3f} | {t / res.iterations:.4f} |"
        )
        del ds  # free the largest inputs before the next size
    if len(ns) >= 2:
        a, _ = np.polyfit(np.log(ns), np.log(ts), 1)
        report.append(f"\nFitted exponent of fit time vs n (least squares on log-log): **{a:.2f}**.\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-n", type=float, default=1e7, help="largest n in the scaling run")
    ap.add_argument("--only", choices=["parse", "cli", "eval", "scaling"], action="append")
    args = ap.parse_args()
    report = [f"# rankkit benchmark, {dt.datetime.now().strftime('%Y-%m-%d %H:%M')}\n", f"Machine: {machine()}\n"]
    sections = args.only or ["parse", "cli", "eval", "scaling"]
    if "parse" in sections:
        bench_parse(report, args.repeat)
    if "cli" in sections:
        bench_cli(report, args.repeat)
    if "eval" in sections:
        bench_eval(report, args.repeat)
    if "scaling" in sections:
        bench_scaling(report, args.repeat, int(args.max_n))
    text = "\n".join(report)
    print(text)
    (ROOT / "out").mkdir(exist_ok=True)
    (ROOT / "out" / "bench.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
